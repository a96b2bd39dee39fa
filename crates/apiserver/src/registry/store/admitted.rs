//! Updates that pass through admission (upstream's `GuaranteedUpdate` callback in
//! `Store.Update` with the mutating transformers of the update handler and the update
//! validation): the admission plugins are asynchronous (webhooks), so the object is read,
//! computed and admitted outside the storage's compare-and-swap, which then writes it only if
//! the object is still the one admitted, and the whole round runs again otherwise.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;

use super::{Store, UpdateState, is_stop, stop_update};
use crate::admission::{Operation as AdmissionOp, RequestAdmission};
use crate::registry::rest::{RequestContext, UpdateFunc, UpdateOptions};
use crate::status::ApiError;
use crate::storage::{self, Object, Operation, StorageError};

impl Store {
    /// UPDATE with admission: mutating admission after the update function, validating
    /// admission after the strategy, then a write conditional on the admitted revision.
    pub(super) async fn update_admitted(
        &self,
        ctx: &RequestContext,
        adm: &Arc<RequestAdmission>,
        name: &str,
        mut update: UpdateFunc,
        opts: &UpdateOptions,
        force_allow_create: bool,
    ) -> Result<(Value, bool), ApiError> {
        let key = self.key(&ctx.namespace, name)?;
        loop {
            let current = self
                .storage
                .get(
                    &key,
                    storage::GetOptions {
                        ignore_not_found: true,
                        ..Default::default()
                    },
                )
                .await
                .map_err(|e| self.api_err(e, Operation::Get, name))?;
            let existing = current.as_ref().map(|o| self.decode(o)).transpose()?;
            let mut obj =
                self.run_update_func(name, existing.as_ref(), &mut update, force_allow_create)?;
            let op = if existing.is_some() {
                AdmissionOp::Update
            } else {
                AdmissionOp::Create
            };
            adm.admit(op, &ctx.namespace, name, &mut obj, existing.as_ref())
                .await?;
            let mut state = UpdateState::default();
            let mut obj = self.finish_update(
                ctx,
                name,
                obj,
                existing.clone(),
                current.as_ref(),
                &mut state,
            )?;
            adm.validate(op, &ctx.namespace, name, Some(&mut obj), existing.as_ref())
                .await?;
            if opts.is_dry_run() {
                if state.unchanged
                    && let Some(cur) = &current
                {
                    return Ok((self.decode(cur)?, false));
                }
                return Ok((obj, state.creating));
            }
            let Some(cur) = current else {
                match self.storage.create(&key, Self::encode(&obj)?).await {
                    Ok(created) => return Ok((self.decode(&created)?, true)),
                    // Created meanwhile: admit again as an update.
                    Err(StorageError::KeyExists { .. }) => continue,
                    Err(e) => return Err(self.api_err(e, Operation::Create, name)),
                }
            };
            if let Some(deleted) = state.delete.take() {
                let admitted_revision = storage::Preconditions {
                    uid: None,
                    resource_version: Some(cur.resource_version.to_string()),
                };
                match self
                    .storage
                    .delete(&key, Some(admitted_revision), None)
                    .await
                {
                    Ok(_) | Err(StorageError::KeyNotFound { .. }) => return Ok((deleted, false)),
                    // Changed since it was admitted.
                    Err(StorageError::InvalidObj { .. }) => continue,
                    Err(e) => return Err(self.api_err(e, Operation::Delete, name)),
                }
            }
            // Unchanged: the stored bytes again, so the storage writes only what it must (a
            // value encrypted with a key that is no longer the first).
            let bytes = if state.unchanged {
                cur.value.clone()
            } else {
                Self::encode(&obj)?
            };
            let admitted = cur.resource_version;
            let mut raced = false;
            let result = {
                let mut run = |now: Option<&Object>| -> storage::Result<Bytes> {
                    match now {
                        Some(now) if now.resource_version == admitted => Ok(bytes.clone()),
                        _ => {
                            raced = true;
                            Err(stop_update())
                        }
                    }
                };
                self.storage
                    .guaranteed_update(&key, true, None, &mut run)
                    .await
            };
            match result {
                Ok(stored) => return Ok((self.decode(&stored)?, false)),
                Err(e) if raced && is_stop(&e) => continue,
                Err(e) => return Err(self.api_err(e, Operation::Update, name)),
            }
        }
    }
}
