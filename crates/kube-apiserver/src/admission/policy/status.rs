//! The validatingadmissionpolicy-status-controller (upstream
//! `pkg/controller/validatingadmissionpolicystatus`, run by kube-controller-manager there, as a
//! post-start hook here): for every ValidatingAdmissionPolicy whose `status.observedGeneration`
//! is behind `metadata.generation`, writes the type-checking warnings and the generation seen.

use std::sync::Arc;

use apiserver::endpoints::apply::OpenApiSchema;
use apiserver::registry::informer::{Informer, InformerEvent};
use apiserver::registry::rest::{RequestContext, RestStorage, UpdateOptions};
use apiserver::registry::store::{StatusStore, Store};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::compiled::CompiledPolicy;
use super::typecheck::{KindSchema, MAX_TYPES_TO_CHECK, check, resources_to_check};
use crate::apis::json::{i64_at, str_at};
use crate::install::Stores;

/// The `status` the controller writes for `policy`.
pub fn policy_status(policy: &Arc<Value>, stores: &Stores) -> Value {
    let compiled = CompiledPolicy::compile(policy.clone());
    // The schemas of the kinds the rules name (documents kept alive for the check).
    let mut documents = Vec::new();
    for (group, version, resource) in resources_to_check(policy) {
        let Some(store) = stores.get(&(group.clone(), resource.clone())) else {
            continue;
        };
        let info = store.info();
        if info.version != version {
            continue;
        }
        let Some((document, definition)) = store.strategy().and_then(|s| s.patch_schema()) else {
            continue;
        };
        documents.push((
            format!("{}, Kind={}", info.api_version(), info.kind),
            document,
            definition,
        ));
        if documents.len() == MAX_TYPES_TO_CHECK {
            break;
        }
    }
    let kinds: Vec<KindSchema<'_>> = documents
        .iter()
        .filter_map(|(gvk, document, definition)| {
            let gvk = if gvk.contains('/') {
                gvk.clone()
            } else {
                format!("/{gvk}")
            };
            OpenApiSchema::for_definition(document, definition).map(|schema| KindSchema {
                gvk,
                schema: Box::new(schema),
            })
        })
        .collect();
    let warnings: Vec<Value> = check(&compiled, &kinds)
        .into_iter()
        .map(|(field_ref, warning)| json!({"fieldRef": field_ref, "warning": warning}))
        .collect();
    let mut status = policy
        .get("status")
        .cloned()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    status["observedGeneration"] = json!(i64_at(policy, "metadata.generation").unwrap_or(0));
    status["typeChecking"] = if warnings.is_empty() {
        json!({})
    } else {
        json!({"expressionWarnings": warnings})
    };
    status
}

fn needs_sync(policy: &Value) -> bool {
    i64_at(policy, "metadata.generation").unwrap_or(0)
        > i64_at(policy, "status.observedGeneration").unwrap_or(0)
}

async fn sync(policy: &Arc<Value>, status_store: &StatusStore, stores: &Stores) {
    let name = str_at(policy, "metadata.name")
        .unwrap_or_default()
        .to_string();
    let status = policy_status(policy, stores);
    let generation = i64_at(policy, "metadata.generation").unwrap_or(0);
    let update = Box::new(move |current: Option<&Value>| {
        let mut current = current.cloned().ok_or_else(|| {
            apiserver::status::ApiError::not_found(
                "admissionregistration.k8s.io",
                "validatingadmissionpolicies",
                "",
            )
        })?;
        // Only the generation the status was computed for.
        if i64_at(&current, "metadata.generation").unwrap_or(0) == generation {
            current["status"] = status.clone();
        }
        Ok(current)
    });
    if let Err(err) = status_store
        .update(
            &RequestContext::default(),
            &name,
            update,
            &UpdateOptions::default(),
            false,
        )
        .await
    {
        tracing::warn!("unable to update the status of validatingadmissionpolicy {name}: {err}");
    }
}

/// Starts the controller over `informer` (ValidatingAdmissionPolicies), writing through
/// `store`'s status subresource, until `stop`.
pub fn start(informer: Informer, store: &Store, stores: Stores, stop: CancellationToken) {
    let status_store = StatusStore::new(store);
    let changed = Arc::new(Notify::new());
    let notify = changed.clone();
    informer.add_handler(Arc::new(move |event: &InformerEvent| {
        if needs_sync(event.object()) {
            notify.notify_one();
        }
    }));
    tokio::spawn(async move {
        informer.wait_synced().await;
        loop {
            for policy in informer.list() {
                if needs_sync(&policy) {
                    sync(&policy, &status_store, &stores).await;
                }
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = changed.notified() => {}
            }
        }
    });
}

/// The post-start hook's name.
pub const HOOK_NAME: &str = "validatingadmissionpolicy-status-controller";

/// The post-start hook starting the controller on the shared policy informer.
pub fn hook(
    informers: &crate::informers::SharedInformers,
) -> Option<apiserver::server::hooks::PostStartHookFn> {
    let stores = informers.stores().clone();
    let key = (
        "admissionregistration.k8s.io".to_string(),
        "validatingadmissionpolicies".to_string(),
    );
    let store = stores.get(&key)?.clone();
    let informers = informers.clone();
    Some(Arc::new(move |ctx| {
        if let Some(informer) = informers.informer(&key.0, &key.1) {
            start(informer, &store, stores.clone(), ctx.stop.clone());
        }
        Box::pin(async { Ok(()) })
    }))
}
