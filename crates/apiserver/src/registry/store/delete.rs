//! DELETE of one object (upstream `Store.Delete`, `updateForGracefulDeletionAndFinalizers`,
//! `finalizeDelete` and `rest.BeforeDelete`): preconditions, graceful deletion for strategies
//! that support it (a deletion timestamp in the future and a grace period, which a second
//! delete may only shorten), finalizers, and what the response carries.

use bytes::Bytes;
use serde_json::{Value, json};

use super::meta::{finalizers, generation, is_deleting, meta, meta_mut, meta_str};
use super::{Store, is_stop, stop_update, validate_delete_options};
use crate::registry::rest::{DeleteOptions, RequestContext};
use crate::status::{ApiError, StatusDetails};
use crate::storage::{self, Object, Operation, StorageError};

/// What `rest.BeforeDelete` decided for one object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Graceful {
    /// The object was given (or had shortened) a deletion timestamp and grace period: write it.
    pub graceful: bool,
    /// A graceful deletion is already under way and this request does not shorten it.
    pub pending: bool,
}

/// How the update phase of a delete ended.
enum UpdateOutcome {
    /// The object was written with its deletion mark; `delete_now` when it must still be
    /// removed (grace period 0 and no finalizers), tolerating that it is gone already.
    Updated { stored: Value, delete_now: bool },
    /// Nothing to mark: remove the object.
    DeleteNow,
    /// Another request started a graceful deletion that this one does not shorten.
    AlreadyDeleting,
}

/// `deletionTimestamp` as an instant, if set and well-formed.
fn deletion_timestamp(obj: &Value) -> Option<jiff::Timestamp> {
    meta_str(obj, "deletionTimestamp").parse().ok()
}

fn rfc3339(ts: jiff::Timestamp) -> String {
    ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn deletion_grace_period(obj: &Value) -> Option<i64> {
    meta(obj)
        .and_then(|m| m.get("deletionGracePeriodSeconds"))
        .and_then(Value::as_i64)
}

/// Upstream `markAsDeleting`: a deletionTimestamp of now (kept when already set), a grace
/// period of 0, and a generation bump for objects that track one.
pub(super) fn mark_as_deleting(obj: &mut Value) -> Result<(), ApiError> {
    let deleting = is_deleting(obj);
    let gen_now = generation(obj);
    let m = meta_mut(obj)?;
    if !deleting {
        if gen_now > 0 {
            m.insert("generation".into(), json!(gen_now + 1));
        }
        m.insert(
            "deletionTimestamp".into(),
            Value::String(super::meta::now_rfc3339()),
        );
    }
    m.insert("deletionGracePeriodSeconds".into(), json!(0));
    Ok(())
}

impl Store {
    /// Upstream `BeforeDelete`'s early precondition checks, with its messages (the resource is
    /// named by its kind there).
    pub(super) fn check_delete_preconditions(
        &self,
        obj: &Value,
        opts: &DeleteOptions,
    ) -> Result<(), ApiError> {
        let Some(p) = &opts.preconditions else {
            return Ok(());
        };
        let name = meta_str(obj, "name");
        let conflict =
            |why: String| ApiError::conflict(&self.res().group, &self.res().kind, name, &why);
        if let Some(uid) = &p.uid {
            let have = meta_str(obj, "uid");
            if uid != have {
                return Err(conflict(format!(
                    "the UID in the precondition ({uid}) does not match the UID in record ({have}). The object might have been deleted and then recreated"
                )));
            }
        }
        if let Some(rv) = &p.resource_version {
            let have = meta_str(obj, "resourceVersion");
            if rv != have {
                return Err(conflict(format!(
                    "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({have}). The object might have been modified"
                )));
            }
        }
        Ok(())
    }

    /// Upstream `rest.BeforeDelete`: checks, then for strategies with graceful deletion sets
    /// (or shortens) `deletionTimestamp` and `deletionGracePeriodSeconds` on `obj`, and the
    /// grace period actually used in `opts`.
    pub(super) fn before_delete(
        &self,
        obj: &mut Value,
        opts: &mut DeleteOptions,
    ) -> Result<Graceful, ApiError> {
        self.check_delete_preconditions(obj, opts)?;
        self.strategy.before_delete(obj)?;
        // Negative periods mean "as soon as possible", which is one second on this path.
        if opts.grace_period_seconds.is_some_and(|g| g < 0) {
            opts.grace_period_seconds = Some(1);
        }
        if deletion_grace_period(obj).is_some_and(|g| g < 0) {
            meta_mut(obj)?.insert("deletionGracePeriodSeconds".into(), json!(1));
        }
        if !self.strategy.supports_graceful_delete() {
            return Ok(Graceful::default());
        }
        if is_deleting(obj) {
            // Deleted before without a grace period (or the delete after the update failed):
            // delete it now.
            let Some(current) = deletion_grace_period(obj).filter(|g| *g != 0) else {
                return Ok(Graceful::default());
            };
            let Some(period) = opts.grace_period_seconds else {
                opts.grace_period_seconds = Some(current);
                return Ok(Graceful {
                    graceful: false,
                    pending: true,
                });
            };
            // Only a shorter grace period may be asked for.
            if period >= current {
                return Ok(Graceful {
                    graceful: false,
                    pending: true,
                });
            }
            let started = deletion_timestamp(obj)
                .unwrap_or_else(jiff::Timestamp::now)
                .checked_sub(jiff::SignedDuration::from_secs(current))
                .map_err(ApiError::internal)?;
            let deadline = started
                .checked_add(jiff::SignedDuration::from_secs(period))
                .map_err(ApiError::internal)?;
            let m = meta_mut(obj)?;
            m.insert("deletionTimestamp".into(), json!(rfc3339(deadline)));
            m.insert("deletionGracePeriodSeconds".into(), json!(period));
            return Ok(Graceful {
                graceful: true,
                pending: false,
            });
        }
        if !self.strategy.check_graceful_delete(obj, opts) {
            return Ok(Graceful::default());
        }
        let period = opts
            .grace_period_seconds
            .ok_or_else(|| ApiError::internal("options.GracePeriodSeconds should not be nil"))?;
        let deadline = jiff::Timestamp::now()
            .checked_add(jiff::SignedDuration::from_secs(period))
            .map_err(ApiError::internal)?;
        let gen_now = generation(obj);
        let m = meta_mut(obj)?;
        m.insert("deletionTimestamp".into(), json!(rfc3339(deadline)));
        m.insert("deletionGracePeriodSeconds".into(), json!(period));
        // Controllers watching the object see the deletion through a new generation.
        if gen_now > 0 {
            m.insert("generation".into(), json!(gen_now + 1));
        }
        Ok(Graceful {
            graceful: true,
            pending: false,
        })
    }

    /// The body of upstream's `updateForGracefulDeletionAndFinalizers` update function, run on
    /// the current object: the object to write, or the outcome that stops the update.
    fn graceful_update(
        &self,
        current: &Value,
        opts: &DeleteOptions,
    ) -> Result<Result<(Value, bool), UpdateOutcome>, ApiError> {
        let mut obj = current.clone();
        let mut opts = opts.clone();
        let decided = self.before_delete(&mut obj, &mut opts)?;
        if decided.pending {
            return Ok(Err(UpdateOutcome::AlreadyDeleting));
        }
        let pending_finalizers = !finalizers(&obj).is_empty();
        if !decided.graceful {
            if pending_finalizers {
                mark_as_deleting(&mut obj)?;
                return Ok(Ok((obj, false)));
            }
            return Ok(Err(UpdateOutcome::DeleteNow));
        }
        let last_graceful = opts.grace_period_seconds.unwrap_or(0);
        // Finalizers keep the object; so does a grace period still running.
        let delete_now = !pending_finalizers && last_graceful <= 0;
        Ok(Ok((obj, delete_now)))
    }

    /// Writes the deletion mark of a graceful deletion or of an object with finalizers.
    async fn update_for_graceful_deletion(
        &self,
        key: &str,
        name: &str,
        opts: &DeleteOptions,
        preconditions: Option<storage::Preconditions>,
        original: &Value,
    ) -> Result<UpdateOutcome, ApiError> {
        if opts.is_dry_run() {
            return Ok(match self.graceful_update(original, opts)? {
                Ok((stored, delete_now)) => UpdateOutcome::Updated { stored, delete_now },
                Err(outcome) => outcome,
            });
        }
        let mut stopped: Option<UpdateOutcome> = None;
        let mut delete_now = false;
        let result = {
            let mut run = |cur: Option<&Object>| -> storage::Result<Bytes> {
                let cur = cur.ok_or_else(|| {
                    StorageError::Api(ApiError::not_found(
                        &self.res().group,
                        &self.res().resource,
                        name,
                    ))
                })?;
                let current = self.decode(cur).map_err(StorageError::Api)?;
                match self
                    .graceful_update(&current, opts)
                    .map_err(StorageError::Api)?
                {
                    Ok((obj, now)) => {
                        delete_now = now;
                        Self::encode(&obj).map_err(StorageError::Api)
                    }
                    Err(outcome) => {
                        stopped = Some(outcome);
                        Err(stop_update())
                    }
                }
            };
            self.storage
                .guaranteed_update(key, false, preconditions, &mut run)
                .await
        };
        match result {
            Ok(stored) => Ok(UpdateOutcome::Updated {
                stored: self.decode(&stored)?,
                delete_now,
            }),
            Err(e) if is_stop(&e) => stopped.ok_or_else(|| ApiError::internal("update stopped")),
            Err(e) => Err(self.api_err(e, Operation::Delete, name)),
        }
    }

    /// What DELETE answers once an object is gone (upstream `finalizeDelete`).
    pub(super) fn finalize_delete(&self, obj: Value) -> Result<Value, ApiError> {
        if self.return_deleted_object {
            return Ok(obj);
        }
        let status = crate::status::Status {
            kind: "Status".into(),
            api_version: "v1".into(),
            status: "Success".into(),
            details: Some(StatusDetails {
                name: meta_str(&obj, "name").to_string(),
                group: self.res().group.clone(),
                // Upstream puts the resource in `kind` here.
                kind: self.res().resource.clone(),
                uid: meta_str(&obj, "uid").to_string(),
                ..Default::default()
            }),
            ..Default::default()
        };
        serde_json::to_value(status).map_err(ApiError::internal)
    }

    /// DELETE: the answer and whether the object is gone (false while finalizers or a grace
    /// period keep it).
    pub(super) async fn delete_inner(
        &self,
        ctx: &RequestContext,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<(Value, bool), ApiError> {
        validate_delete_options(opts)?;
        let key = self.key(&ctx.namespace, name)?;
        let current = self
            .storage
            .get(&key, storage::GetOptions::default())
            .await
            .map_err(|e| self.api_err(e, Operation::Delete, name))?
            .ok_or_else(|| self.not_found(name))?;
        let original = self.decode(&current)?;
        let mut preconditions = opts.preconditions.as_ref().map(|p| storage::Preconditions {
            uid: p.uid.clone(),
            resource_version: p.resource_version.clone(),
        });
        let mut checked = original.clone();
        let mut checked_opts = opts.clone();
        let decided = self.before_delete(&mut checked, &mut checked_opts)?;
        // Finalizers cannot be changed by a delete once a deletion is pending.
        if decided.pending {
            return Ok((self.finalize_delete(original)?, false));
        }
        if let Some(adm) = &ctx.admission {
            adm.validate(
                crate::admission::Operation::Delete,
                &ctx.namespace,
                name,
                None,
                Some(&original),
            )
            .await?;
        }
        // The `orphan` and `foregroundDeletion` finalizers of propagationPolicy are not added:
        // there is no garbage collector to remove them.
        let mut ignore_not_found = false;
        let mut last_existing = None;
        if decided.graceful || !finalizers(&original).is_empty() {
            match self
                .update_for_graceful_deletion(&key, name, opts, preconditions.clone(), &original)
                .await?
            {
                UpdateOutcome::Updated {
                    stored,
                    delete_now: false,
                } => return Ok((stored, false)),
                UpdateOutcome::Updated {
                    stored,
                    delete_now: true,
                } => {
                    // Deleting gracelessly races with whoever else deletes it; a missing
                    // object is then what was wanted.
                    ignore_not_found = true;
                    if let Some(p) = preconditions.as_mut()
                        && p.resource_version.is_some()
                    {
                        p.resource_version = Some(meta_str(&stored, "resourceVersion").into());
                    }
                    if opts.is_dry_run() {
                        return Ok((stored, true));
                    }
                    last_existing = Some(stored);
                }
                UpdateOutcome::DeleteNow => {}
                UpdateOutcome::AlreadyDeleting => {
                    return Ok((self.finalize_delete(original)?, false));
                }
            }
        }
        if opts.is_dry_run() {
            return Ok((self.finalize_delete(original)?, true));
        }
        match self.storage.delete(&key, preconditions, None).await {
            Ok(deleted) => Ok((self.finalize_delete(self.decode(&deleted)?)?, true)),
            Err(StorageError::KeyNotFound { .. }) if ignore_not_found => match last_existing {
                Some(last) => Ok((self.finalize_delete(last)?, true)),
                None => Err(self.not_found(name)),
            },
            Err(e) => Err(self.api_err(e, Operation::Delete, name)),
        }
    }
}
