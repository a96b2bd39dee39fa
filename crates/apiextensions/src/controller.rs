//! The CRD controllers in one loop: list every CRD, then for each run the naming controller
//! (accepted names, `NamesAccepted`), the establishing controller (`Established`), the
//! finalizer controller (deleting a CRD deletes its custom resources, then drops the
//! `customresourcecleanup` finalizer) and serve the established ones; then watch and repeat on
//! the next change. The first full pass fires the "CRDs are served" signal.

use std::sync::Arc;
use std::time::Duration;

use apiserver::registry::rest::{
    DeleteOptions, ListOptions, ObjectEvent, RequestContext, RestStorage, UpdateOptions,
};
use apiserver::registry::store::meta::now_rfc3339;
use apiserver::registry::store::{StatusStore, Store};
use apiserver::server::lifecycle::Signal;
use apiserver::status::{ApiError, reason};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::crd::{CLEANUP_FINALIZER, Condition, set_condition};
use crate::names::{calculate_names, established_condition};
use crate::serving::CrdServing;

/// Pause after a failed list or watch.
const RETRY: Duration = Duration::from_secs(1);
/// Full passes happen at least this often.
const RESYNC: Duration = Duration::from_secs(10);

/// The controllers' state.
pub struct CrdController {
    crds: Store,
    status: StatusStore,
    serving: Arc<CrdServing>,
    synced: Signal,
}

fn ctx() -> RequestContext {
    RequestContext::default()
}

fn name_of(crd: &Value) -> String {
    crd.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// A status without transition times, to tell whether anything changed.
fn comparable(status: &Value) -> Value {
    let mut s = status.clone();
    if let Some(conds) = s.get_mut("conditions").and_then(Value::as_array_mut) {
        for c in conds {
            if let Some(m) = c.as_object_mut() {
                m.remove("lastTransitionTime");
            }
        }
    }
    s
}

impl CrdController {
    /// Controllers over the CRD store, serving through `serving`; `synced` fires after the
    /// first full pass.
    pub fn new(crds: Store, serving: Arc<CrdServing>, synced: Signal) -> Self {
        let status = StatusStore::new(&crds);
        CrdController {
            crds,
            status,
            serving,
            synced,
        }
    }

    /// Runs until `stop`.
    pub async fn run(self, stop: CancellationToken) {
        loop {
            let rv = match self.pass().await {
                Ok(rv) => rv,
                Err(err) => {
                    tracing::warn!(error = %err, "CRD controllers");
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = tokio::time::sleep(RETRY) => continue,
                    }
                }
            };
            let opts = ListOptions {
                watch: true,
                resource_version: rv,
                ..ListOptions::default()
            };
            match self.crds.watch(&ctx(), &opts).await {
                Ok(mut events) => {
                    let ended = tokio::select! {
                        _ = stop.cancelled() => return,
                        event = events.next() => {
                            matches!(event, None | Some(ObjectEvent::Error(_)))
                        }
                        // Resync: instances with finalizers of their own hold a deletion.
                        _ = tokio::time::sleep(RESYNC) => false,
                    };
                    if ended {
                        // A watch that ends at once (e.g. an expired resourceVersion) must
                        // not turn into a busy loop of passes.
                        tokio::select! {
                            _ = stop.cancelled() => return,
                            _ = tokio::time::sleep(RETRY) => {}
                        }
                    }
                }
                Err(err) => {
                    tracing::warn!(error = %err, "watching CRDs");
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = tokio::time::sleep(RETRY) => {}
                    }
                }
            }
        }
    }

    /// One pass over every CRD; returns the list's resourceVersion.
    pub async fn pass(&self) -> Result<String, ApiError> {
        let list = self.crds.list(&ctx(), &ListOptions::default()).await?;
        let rv = list
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let mut items: Vec<Value> = list
            .get("items")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for i in 0..items.len() {
            let crd = items[i].clone();
            if crd.pointer("/metadata/deletionTimestamp").is_some() {
                continue;
            }
            let naming = calculate_names(&crd, &items);
            let mut status = crd.get("status").cloned().unwrap_or_else(|| json!({}));
            if !status.is_object() {
                status = json!({});
            }
            status["acceptedNames"] = naming.accepted_names.clone();
            let now = now_rfc3339();
            set_condition(&mut status, &naming.names_accepted, &now);
            let established = if naming.names_accepted.status == "True" {
                established_condition()
            } else {
                naming.established.clone()
            };
            set_condition(&mut status, &established, &now);
            let before = crd.get("status").map(comparable);
            if before.as_ref() != Some(&comparable(&status)) {
                match self.write_status(&name_of(&crd), status).await {
                    Ok(updated) => items[i] = updated,
                    Err(err) => tracing::warn!(crd = name_of(&crd), error = %err, "CRD status"),
                }
            }
        }
        self.serving.sync(&items);
        if !self.synced.signaled() {
            self.synced.fire();
        }
        for crd in items
            .iter()
            .filter(|c| c.pointer("/metadata/deletionTimestamp").is_some())
        {
            if let Err(err) = self.finalize(crd).await {
                tracing::warn!(crd = name_of(crd), error = %err, "deleting custom resources");
            }
        }
        Ok(rv)
    }

    async fn write_status(&self, name: &str, status: Value) -> Result<Value, ApiError> {
        let update = Box::new(move |current: Option<&Value>| {
            let mut obj = current.cloned().ok_or_else(|| {
                ApiError::new(http::StatusCode::NOT_FOUND, reason::NOT_FOUND, "gone")
            })?;
            obj["status"] = status.clone();
            Ok(obj)
        });
        let (obj, _) = self
            .status
            .update(&ctx(), name, update, &UpdateOptions::default(), false)
            .await?;
        Ok(obj)
    }

    async fn set_terminating(&self, crd: &Value, reason: &str, message: &str) {
        let mut status = crd.get("status").cloned().unwrap_or_else(|| json!({}));
        set_condition(
            &mut status,
            &Condition::new("Terminating", "True", reason, message),
            &now_rfc3339(),
        );
        if crd.get("status").map(comparable) != Some(comparable(&status))
            && let Err(err) = self.write_status(&name_of(crd), status).await
        {
            tracing::warn!(crd = name_of(crd), error = %err, "CRD status");
        }
    }

    /// The finalizer controller: deletes every custom resource of `crd`, then removes the
    /// cleanup finalizer (the store then deletes the CRD).
    async fn finalize(&self, crd: &Value) -> Result<(), ApiError> {
        let has_finalizer = crd
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| f.iter().any(|f| f == CLEANUP_FINALIZER));
        if !has_finalizer {
            return Ok(());
        }
        self.set_terminating(
            crd,
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
        )
        .await;
        if let Some(store) = self.serving.cleanup_store(crd) {
            let remaining = store
                .delete_collection(&ctx(), &DeleteOptions::default(), &ListOptions::default())
                .await?;
            let left = store.list(&ctx(), &ListOptions::default()).await?;
            let count = left
                .get("items")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            if count > 0 {
                // Instances with finalizers of their own: wait for the next pass.
                drop(remaining);
                return Err(ApiError::new(
                    http::StatusCode::CONFLICT,
                    reason::CONFLICT,
                    format!("{count} custom resources remain"),
                ));
            }
        }
        let name = name_of(crd);
        let update = Box::new(move |current: Option<&Value>| {
            let mut obj = current.cloned().ok_or_else(|| {
                ApiError::new(http::StatusCode::NOT_FOUND, reason::NOT_FOUND, "gone")
            })?;
            if let Some(list) = obj
                .pointer_mut("/metadata/finalizers")
                .and_then(Value::as_array_mut)
            {
                list.retain(|f| f != CLEANUP_FINALIZER);
            }
            Ok(obj)
        });
        match self
            .crds
            .update(&ctx(), &name, update, &UpdateOptions::default(), false)
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.reason() == reason::NOT_FOUND => Ok(()),
            Err(e) => Err(e),
        }
    }
}
