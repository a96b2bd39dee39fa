//! The PVC and PV protection controllers (upstream `pkg/controller/volume/pvcprotection` and
//! `pvprotection`, which run in kube-controller-manager; there is none here): they remove the
//! `kubernetes.io/pvc-protection` finalizer of a deleted claim once no running pod uses it, and
//! the `kubernetes.io/pv-protection` finalizer of a deleted volume once it is not bound, so
//! the StorageObjectInUseProtection plugin's finalizers do not keep objects (and their
//! namespaces) forever.

use std::sync::Arc;

use apiserver::registry::informer::{Informer, InformerEvent};
use apiserver::registry::rest::{RequestContext, RestStorage, UpdateOptions};
use apiserver::registry::store::Store;
use apiserver::server::hooks::PostStartHookFn;
use apiserver::status::reason;
use serde_json::Value;
use tokio::sync::mpsc;

/// The hook's name.
pub const HOOK_NAME: &str = "start-storage-protection-controllers";
const PVC_PROTECTION: &str = "kubernetes.io/pvc-protection";
const PV_PROTECTION: &str = "kubernetes.io/pv-protection";

/// The informers and stores the controllers use.
#[derive(Clone)]
pub struct Resources {
    /// Claims.
    pub claims: Informer,
    /// Volumes.
    pub volumes: Informer,
    /// Pods (which claims are in use).
    pub pods: Informer,
    /// The claims store.
    pub claim_store: Store,
    /// The volumes store.
    pub volume_store: Store,
}

fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn has_finalizer(obj: &Value, finalizer: &str) -> bool {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| f.iter().any(|v| v.as_str() == Some(finalizer)))
}

fn is_deleting(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

/// The claims a pod that has not finished mounts (upstream also counts pods not yet
/// terminated).
fn claims_of(pod: &Value) -> Vec<String> {
    let phase = str_at(pod, "/status/phase");
    if phase == "Succeeded" || phase == "Failed" {
        return Vec::new();
    }
    let pod_name = str_at(pod, "/metadata/name");
    pod.pointer("/spec/volumes")
        .and_then(Value::as_array)
        .map(|volumes| {
            volumes
                .iter()
                .filter_map(|v| {
                    if let Some(claim) = v.pointer("/persistentVolumeClaim/claimName") {
                        return claim.as_str().map(str::to_string);
                    }
                    // A generic ephemeral volume's claim is named `<pod>-<volume>`.
                    v.get("ephemeral")
                        .filter(|e| !e.is_null())
                        .map(|_| format!("{pod_name}-{}", str_at(v, "/name")))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What to look at again.
enum Work {
    Claim { namespace: String, name: String },
    Volume(String),
}

async fn remove_finalizer(store: &Store, namespace: &str, name: &str, finalizer: &'static str) {
    let ctx = RequestContext {
        namespace: namespace.to_string(),
        ..Default::default()
    };
    let update = Box::new(move |current: Option<&Value>| {
        let mut obj = current.cloned().unwrap_or(Value::Null);
        if let Some(list) = obj
            .pointer_mut("/metadata/finalizers")
            .and_then(Value::as_array_mut)
        {
            list.retain(|f| f.as_str() != Some(finalizer));
        }
        Ok(obj)
    });
    match store
        .update(&ctx, name, update, &UpdateOptions::default(), false)
        .await
    {
        Ok(_) => {}
        Err(e) if e.reason() == reason::NOT_FOUND => {}
        Err(e) => tracing::warn!(namespace, name, error = %e, "storage protection controller"),
    }
}

async fn sync(resources: &Resources, work: Work) {
    match work {
        Work::Claim { namespace, name } => {
            let Some(claim) = resources.claims.get(&namespace, &name) else {
                return;
            };
            if !is_deleting(&claim) || !has_finalizer(&claim, PVC_PROTECTION) {
                return;
            }
            let in_use = resources.pods.list().iter().any(|pod| {
                str_at(pod, "/metadata/namespace") == namespace && claims_of(pod).contains(&name)
            });
            if !in_use {
                remove_finalizer(&resources.claim_store, &namespace, &name, PVC_PROTECTION).await;
            }
        }
        Work::Volume(name) => {
            let Some(volume) = resources.volumes.get("", &name) else {
                return;
            };
            if is_deleting(&volume)
                && has_finalizer(&volume, PV_PROTECTION)
                && str_at(&volume, "/status/phase") != "Bound"
            {
                remove_finalizer(&resources.volume_store, "", &name, PV_PROTECTION).await;
            }
        }
    }
}

/// Both controllers as one post-start hook, driven by the shared informers.
pub fn storage_protection_hook(resources: Resources) -> PostStartHookFn {
    Arc::new(move |ctx| {
        let resources = resources.clone();
        Box::pin(async move {
            let (queue, mut pending) = mpsc::unbounded_channel::<Work>();
            let claims_queue = queue.clone();
            resources.claims.add_handler(Arc::new(move |event| {
                if let InformerEvent::Added(c) | InformerEvent::Modified { new: c, .. } = event {
                    let _ = claims_queue.send(Work::Claim {
                        namespace: str_at(c, "/metadata/namespace").to_string(),
                        name: str_at(c, "/metadata/name").to_string(),
                    });
                }
            }));
            let volumes_queue = queue.clone();
            resources.volumes.add_handler(Arc::new(move |event| {
                if let InformerEvent::Added(v) | InformerEvent::Modified { new: v, .. } = event {
                    let _ =
                        volumes_queue.send(Work::Volume(str_at(v, "/metadata/name").to_string()));
                }
            }));
            // A pod that goes away, or finishes, may free its claims.
            resources.pods.add_handler(Arc::new(move |event| {
                let pod = match event {
                    InformerEvent::Deleted(pod) => pod,
                    InformerEvent::Modified { old, .. } => old,
                    InformerEvent::Added(_) => return,
                };
                for name in claims_of(pod) {
                    let _ = queue.send(Work::Claim {
                        namespace: str_at(pod, "/metadata/namespace").to_string(),
                        name,
                    });
                }
            }));
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        _ = ctx.stop.cancelled() => return,
                        next = pending.recv() => match next {
                            Some(work) => sync(&resources, work).await,
                            None => return,
                        },
                    }
                }
            });
            Ok(())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn running_pods_use_their_claims_and_ephemeral_ones() {
        let pod = json!({"metadata": {"name": "web", "namespace": "ns"},
        "spec": {"volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
            {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}},
            {"name": "tmp", "emptyDir": {}}
        ]}});
        assert_eq!(claims_of(&pod), ["data", "web-scratch"]);
        let mut done = pod.clone();
        done["status"] = json!({"phase": "Succeeded"});
        assert!(claims_of(&done).is_empty());
    }
}
