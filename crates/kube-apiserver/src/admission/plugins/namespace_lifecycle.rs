//! NamespaceLifecycle (upstream `k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle`):
//! no new content in a namespace that does not exist (404) or is terminating (403), and the
//! immortal namespaces `default`, `kube-system` and `kube-public` are never deleted.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use apiserver::admission::{Attributes, Operation, Plugin, forbidden};
use apiserver::registry::informer::Informer;
use apiserver::registry::rest::{GetOptions, RequestContext, RestStorage};
use apiserver::registry::store::Store;
use apiserver::status::{ApiError, StatusCause};
use async_trait::async_trait;
use serde_json::Value;

use crate::admission::PluginContext;
use crate::apis::json::str_at;

/// The plugin's name.
pub const NAME: &str = "NamespaceLifecycle";

/// Namespaces that may not be deleted.
const IMMORTAL: [&str; 3] = ["default", "kube-system", "kube-public"];
/// How long a namespace whose deletion passed through here is read from storage rather than
/// the informer, which may not have seen it terminate yet.
const FORCE_LIVE_LOOKUP_TTL: Duration = Duration::from_secs(30);
/// How long to give the informer to see a namespace created just before a create into it.
const MISSING_NAMESPACE_WAIT: Duration = Duration::from_millis(50);
/// How long to wait for the namespace informer's first list.
const READY_WAIT: Duration = Duration::from_secs(10);
/// At most this many namespaces are remembered for live lookups (upstream's LRU size).
const FORCE_LIVE_LOOKUP_ENTRIES: usize = 100;

/// The NamespaceLifecycle plugin.
pub struct NamespaceLifecycle {
    informer: Informer,
    namespaces: Store,
    force_live_lookup: Mutex<HashMap<String, Instant>>,
}

/// Builds the plugin from the namespace informer and store.
pub fn new(ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    let informer = ctx
        .informers
        .informer("", "namespaces")
        .ok_or("NamespaceLifecycle needs the namespaces resource")?;
    let namespaces = ctx
        .informers
        .stores()
        .get(&(String::new(), "namespaces".to_string()))
        .cloned()
        .ok_or("NamespaceLifecycle needs the namespaces resource")?;
    Ok(Arc::new(NamespaceLifecycle {
        informer,
        namespaces,
        force_live_lookup: Mutex::new(HashMap::new()),
    }))
}

fn is_namespace_kind(attrs: &Attributes) -> bool {
    attrs.kind.group.is_empty() && attrs.kind.kind == "Namespace"
}

/// Access reviews answer in any namespace: a 404 would tell the asker which namespaces exist.
fn is_access_review(attrs: &Attributes) -> bool {
    attrs.resource.group == "authorization.k8s.io"
        && attrs.resource.resource == "localsubjectaccessreviews"
}

fn is_terminating(namespace: &Value) -> bool {
    str_at(namespace, "status.phase") == Some("Terminating")
}

impl NamespaceLifecycle {
    fn remember_deletion(&self, name: &str) {
        let mut cache = self
            .force_live_lookup
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        cache.retain(|_, expires| *expires > now);
        if cache.len() >= FORCE_LIVE_LOOKUP_ENTRIES
            && let Some(oldest) = cache
                .iter()
                .min_by_key(|(_, expires)| **expires)
                .map(|(name, _)| name.clone())
        {
            cache.remove(&oldest);
        }
        cache.insert(name.to_string(), now + FORCE_LIVE_LOOKUP_TTL);
    }

    fn recently_deleted(&self, name: &str) -> bool {
        let cache = self
            .force_live_lookup
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        cache
            .get(name)
            .is_some_and(|expires| *expires > Instant::now())
    }

    /// The namespace as the informer has it, or from storage when the informer may be stale.
    async fn namespace(&self, attrs: &Attributes) -> Result<Arc<Value>, ApiError> {
        let name = attrs.namespace.as_str();
        let mut cached = self.informer.get("", name);
        if cached.is_none() && attrs.operation == Operation::Create {
            // A namespace created just before may not have reached the informer yet.
            tokio::time::sleep(MISSING_NAMESPACE_WAIT).await;
            cached = self.informer.get("", name);
        }
        let force_live = cached
            .as_deref()
            .is_some_and(|ns| !is_terminating(ns) && self.recently_deleted(name));
        match cached {
            Some(ns) if !force_live => Ok(ns),
            _ => self
                .namespaces
                .get(&RequestContext::default(), name, &GetOptions::default())
                .await
                .map(Arc::new),
        }
    }
}

#[async_trait]
impl Plugin for NamespaceLifecycle {
    fn name(&self) -> &str {
        NAME
    }

    fn handles(&self, op: Operation) -> bool {
        matches!(
            op,
            Operation::Create | Operation::Update | Operation::Delete
        )
    }

    fn mutates(&self) -> bool {
        true
    }

    async fn admit(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
        let namespace_kind = is_namespace_kind(attrs);
        if attrs.operation == Operation::Delete
            && namespace_kind
            && IMMORTAL.contains(&attrs.name.as_str())
        {
            return Err(forbidden(attrs, "this namespace may not be deleted"));
        }
        if namespace_kind {
            if attrs.operation == Operation::Delete {
                self.remember_deletion(&attrs.name);
            }
            return Ok(());
        }
        if attrs.namespace.is_empty()
            || attrs.operation == Operation::Delete
            || is_access_review(attrs)
        {
            return Ok(());
        }
        if tokio::time::timeout(READY_WAIT, self.informer.wait_synced())
            .await
            .is_err()
        {
            return Err(forbidden(attrs, "not yet ready to handle request"));
        }
        let namespace = self.namespace(attrs).await?;
        if attrs.operation == Operation::Create && is_terminating(&namespace) {
            let mut err = forbidden(
                attrs,
                &format!(
                    "unable to create new content in namespace {} because it is being terminated",
                    attrs.namespace
                ),
            );
            if let Some(details) = err.0.details.as_mut() {
                details.causes.push(StatusCause {
                    reason: "NamespaceTerminating".into(),
                    message: format!("namespace {} is being terminated", attrs.namespace),
                    field: "metadata.namespace".into(),
                });
            }
            return Err(err);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::core::namespaces::namespaces;
    use apiserver::admission::{GroupVersionKind, GroupVersionResource};
    use apiserver::registry::rest::{CreateOptions, DeleteOptions};
    use apiserver::request::UserInfo;
    use apiserver::storage::Storage;
    use apiserver::storage::backends::EmbeddedStorage;
    use http::StatusCode;
    use serde_json::json;
    use tokio_util::sync::CancellationToken;

    struct Fixture {
        _dir: tempfile::TempDir,
        plugin: NamespaceLifecycle,
        stop: CancellationToken,
    }

    impl Drop for Fixture {
        fn drop(&mut self) {
            self.stop.cancel();
        }
    }

    async fn fixture(existing: &[&str]) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let backend: Arc<dyn Storage> = Arc::new(EmbeddedStorage::open(dir.path()).unwrap());
        let store = Store::new(namespaces().strategy, backend, "/registry/namespaces");
        for name in existing {
            store
                .create(
                    &RequestContext::default(),
                    json!({"metadata": {"name": name}}),
                    &CreateOptions::default(),
                )
                .await
                .unwrap();
        }
        let informer = Informer::new(Arc::new(store.clone()));
        let stop = CancellationToken::new();
        informer.start(stop.clone());
        informer.wait_synced().await;
        Fixture {
            _dir: dir,
            plugin: NamespaceLifecycle {
                informer,
                namespaces: store,
                force_live_lookup: Mutex::new(HashMap::new()),
            },
            stop,
        }
    }

    fn attrs(
        operation: Operation,
        kind: &str,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> Attributes {
        let mut attrs = Attributes::new(
            operation,
            GroupVersionKind {
                group: String::new(),
                version: "v1".into(),
                kind: kind.into(),
            },
            GroupVersionResource {
                group: String::new(),
                version: "v1".into(),
                resource: resource.into(),
            },
            Arc::new(UserInfo::default()),
        );
        attrs.namespace = namespace.into();
        attrs.name = name.into();
        attrs.object = Some(json!({"metadata": {"name": name}}));
        attrs
    }

    #[tokio::test]
    async fn content_in_a_missing_namespace_is_not_found() {
        let f = fixture(&[]).await;
        for op in [Operation::Create, Operation::Update] {
            let mut a = attrs(op, "ConfigMap", "configmaps", "nope", "c");
            let err = f.plugin.admit(&mut a).await.unwrap_err();
            assert_eq!(err.code(), StatusCode::NOT_FOUND);
            assert_eq!(err.to_string(), r#"namespaces "nope" not found"#);
        }
        // Deletes and cluster-scoped resources are not its concern.
        let mut delete = attrs(Operation::Delete, "ConfigMap", "configmaps", "nope", "c");
        f.plugin.admit(&mut delete).await.unwrap();
        let mut node = attrs(Operation::Create, "Node", "nodes", "", "n1");
        f.plugin.admit(&mut node).await.unwrap();
    }

    #[tokio::test]
    async fn creates_in_a_terminating_namespace_are_forbidden_with_the_cause() {
        let f = fixture(&["x"]).await;
        let mut ok = attrs(Operation::Create, "ConfigMap", "configmaps", "x", "before");
        f.plugin.admit(&mut ok).await.unwrap();
        // The deletion passes through the plugin first, which then reads the namespace from
        // storage even before its informer sees it terminate.
        let mut delete = attrs(Operation::Delete, "Namespace", "namespaces", "", "x");
        f.plugin.admit(&mut delete).await.unwrap();
        crate::registry::namespace::NamespaceStorage::new(f.plugin.namespaces.clone())
            .delete(&RequestContext::default(), "x", &DeleteOptions::default())
            .await
            .unwrap();
        let mut create = attrs(Operation::Create, "ConfigMap", "configmaps", "x", "new");
        let err = f.plugin.admit(&mut create).await.unwrap_err();
        assert_eq!(err.code(), StatusCode::FORBIDDEN);
        assert_eq!(
            err.to_string(),
            r#"configmaps "new" is forbidden: unable to create new content in namespace x because it is being terminated"#
        );
        let cause = &err.0.details.as_ref().unwrap().causes[0];
        assert_eq!(cause.reason, "NamespaceTerminating");
        assert_eq!(cause.message, "namespace x is being terminated");
        assert_eq!(cause.field, "metadata.namespace");
        // Updates of what is there still go through.
        let mut update = attrs(Operation::Update, "ConfigMap", "configmaps", "x", "before");
        f.plugin.admit(&mut update).await.unwrap();
    }

    #[tokio::test]
    async fn the_immortal_namespaces_may_not_be_deleted() {
        let f = fixture(&["default"]).await;
        for name in IMMORTAL {
            let mut delete = attrs(Operation::Delete, "Namespace", "namespaces", "", name);
            let err = f.plugin.admit(&mut delete).await.unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted")
            );
        }
    }
}
