//! What kube-apiserver creates on start: the system namespaces (upstream's
//! `start-system-namespaces-controller`) and the system PriorityClasses (upstream's
//! `scheduling/bootstrap-system-priority-classes`), as post-start hooks that write through the
//! generic stores. The `default` namespace and the `kubernetes` service come with their
//! endpoints from [`crate::controllers::kubernetesservice`] (`bootstrap-controller`).

use std::sync::Arc;

use apiserver::registry::rest::{CreateOptions, RequestContext, RestStorage};
use apiserver::registry::store::Store;
use apiserver::server::hooks::PostStartHookFn;
use apiserver::status::reason;
use serde_json::{Value, json};

use crate::install::Stores;

/// Namespaces upstream creates besides `default`.
pub const SYSTEM_NAMESPACES: [&str; 3] = ["kube-system", "kube-public", "kube-node-lease"];

async fn ensure(store: &Store, namespace: &str, obj: Value) -> Result<(), String> {
    let ctx = RequestContext {
        namespace: namespace.to_string(),
        ..Default::default()
    };
    match store.create(&ctx, obj, &CreateOptions::default()).await {
        Ok(_) => Ok(()),
        Err(err) if err.reason() == reason::ALREADY_EXISTS => Ok(()),
        Err(err) => Err(err.to_string()),
    }
}

fn store(stores: &Stores, resource: &str) -> Result<Store, String> {
    stores
        .get(&(String::new(), resource.to_string()))
        .cloned()
        .ok_or_else(|| format!("no {resource} store installed"))
}

/// `start-system-namespaces-controller`: creates kube-system, kube-public and kube-node-lease.
pub fn system_namespaces_hook(stores: &Stores) -> Result<PostStartHookFn, String> {
    let namespaces = store(stores, "namespaces")?;
    Ok(Arc::new(move |_ctx| {
        let namespaces = namespaces.clone();
        Box::pin(async move {
            for name in SYSTEM_NAMESPACES {
                ensure(
                    &namespaces,
                    "",
                    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
                )
                .await?;
            }
            Ok(())
        })
    }))
}

/// The name of the hook creating the system PriorityClasses.
pub const SYSTEM_PRIORITY_CLASSES_HOOK: &str = "scheduling/bootstrap-system-priority-classes";

/// The PriorityClasses upstream creates for critical pods (which the Priority admission
/// plugin resolves like any other).
const SYSTEM_PRIORITY_CLASSES: [(&str, i64, &str); 2] = [
    (
        "system-node-critical",
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
];

/// `scheduling/bootstrap-system-priority-classes`: creates `system-node-critical` and
/// `system-cluster-critical` when missing.
pub fn system_priority_classes_hook(stores: &Stores) -> Result<PostStartHookFn, String> {
    let classes = stores
        .get(&(
            "scheduling.k8s.io".to_string(),
            "priorityclasses".to_string(),
        ))
        .cloned()
        .ok_or("no priorityclasses store installed")?;
    Ok(Arc::new(move |_ctx| {
        let classes = classes.clone();
        Box::pin(async move {
            for (name, value, description) in SYSTEM_PRIORITY_CLASSES {
                let class = json!({
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": name},
                    "value": value,
                    "description": description,
                });
                ensure(&classes, "", class).await?;
            }
            Ok(())
        })
    }))
}
