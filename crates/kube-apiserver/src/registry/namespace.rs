//! Namespace lifecycle: upstream's namespace registry (DELETE of a namespace with
//! `spec.finalizers` only marks it `Terminating`; the `finalize` subresource) and the
//! namespace controller that empties a terminating namespace, removes the `kubernetes`
//! finalizer and deletes it. Creates into missing or terminating namespaces are refused by the
//! NamespaceLifecycle admission plugin (`admission/plugins/namespace_lifecycle.rs`).

use std::sync::Arc;
use std::time::Duration;

use apiserver::registry::ResourceInfo;
use apiserver::registry::rest::{
    BoxFuture, DeleteOptions, GetOptions, ListOptions, RequestContext, RestStorage, UpdateFunc,
    UpdateOptions, WrappingStorage, method_not_supported,
};
use apiserver::registry::store::Store;
use apiserver::registry::store::meta::now_rfc3339;
use apiserver::server::hooks::PostStartHookFn;
use apiserver::status::{ApiError, reason};
use apiserver::storage::errors::Operation;
use apiserver::storage::{self, Object, StorageError};
use bytes::Bytes;
use serde_json::{Value, json};

use crate::apis::core::namespaces::KUBERNETES_FINALIZER;
use crate::install::Stores;

/// How often the namespace controller looks for terminating namespaces.
const RESYNC: Duration = Duration::from_millis(500);

fn spec_finalizers(obj: &Value) -> Vec<String> {
    obj.pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn is_terminating(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
        || obj.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating")
}

fn decode(obj: &Object) -> Result<Value, StorageError> {
    serde_json::from_slice(&obj.value).map_err(|e| StorageError::Internal(e.to_string()))
}

fn encode(v: &Value) -> Result<Bytes, StorageError> {
    serde_json::to_vec(v)
        .map(Bytes::from)
        .map_err(|e| StorageError::Internal(e.to_string()))
}

fn with_type_meta(mut v: Value) -> Value {
    if let Some(m) = v.as_object_mut() {
        m.insert("kind".into(), json!("Namespace"));
        m.insert("apiVersion".into(), json!("v1"));
    }
    v
}

/// Rewrites the stored namespace `name` with `change`, bypassing the strategy (which keeps
/// finalizers, status and deletionTimestamp from the old object).
async fn rewrite(
    store: &Store,
    name: &str,
    mut change: impl FnMut(&mut Value) -> Result<(), ApiError> + Send,
) -> Result<Value, ApiError> {
    let key = store.key("", name)?;
    let mut run = |cur: Option<&Object>| -> storage::Result<Bytes> {
        let cur = cur.ok_or_else(|| StorageError::KeyNotFound {
            key: String::new(),
            resource_version: 0,
        })?;
        let mut v = decode(cur)?;
        change(&mut v).map_err(StorageError::Api)?;
        encode(&v)
    };
    match store
        .storage()
        .guaranteed_update(&key, false, None, &mut run)
        .await
    {
        Ok(stored) => decode(&stored)
            .map(with_type_meta)
            .map_err(ApiError::internal),
        Err(e) => Err(e.to_api_error(Operation::Update, "", "namespaces", name)),
    }
}

/// The `namespaces` resource: the generic store, except that DELETE of a namespace with
/// `spec.finalizers` marks it `Terminating` (upstream's namespace `REST.Delete`).
pub struct NamespaceStorage {
    store: Store,
}

impl NamespaceStorage {
    /// Wraps the namespaces store.
    pub fn new(store: Store) -> Self {
        NamespaceStorage { store }
    }

    async fn delete_inner(
        &self,
        ctx: &RequestContext,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<(Value, bool), ApiError> {
        let current = self.store.get(ctx, name, &GetOptions::default()).await?;
        if spec_finalizers(&current).is_empty() {
            return self.store.delete(ctx, name, opts).await;
        }
        if let Some(p) = &opts.preconditions {
            let uid = current.pointer("/metadata/uid").and_then(Value::as_str);
            if let Some(want) = &p.uid
                && Some(want.as_str()) != uid
            {
                return Err(ApiError::conflict(
                    "",
                    "namespaces",
                    name,
                    &format!(
                        "Precondition failed: UID in precondition: {want}, UID in object meta: {}",
                        uid.unwrap_or_default()
                    ),
                ));
            }
        }
        // A second DELETE while the content is being removed: upstream answers 409.
        if current
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|v| !v.is_null())
        {
            return Err(ApiError::conflict(
                "",
                "namespaces",
                name,
                "The system is ensuring all content is removed from this namespace.  Upon \
                 completion, this namespace will automatically be purged by the system.",
            ));
        }
        if opts.is_dry_run() {
            let mut v = current;
            mark_terminating(&mut v)?;
            return Ok((v, false));
        }
        let marked = rewrite(&self.store, name, mark_terminating).await?;
        Ok((marked, false))
    }
}

fn mark_terminating(v: &mut Value) -> Result<(), ApiError> {
    let obj = v
        .as_object_mut()
        .ok_or_else(|| ApiError::internal("namespace is not an object"))?;
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| ApiError::internal("metadata is not an object"))?;
    if meta.get("deletionTimestamp").is_none_or(Value::is_null) {
        meta.insert("deletionTimestamp".into(), json!(now_rfc3339()));
    }
    let status = obj
        .entry("status")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| ApiError::internal("status is not an object"))?;
    status.insert("phase".into(), json!("Terminating"));
    Ok(())
}

impl WrappingStorage for NamespaceStorage {
    fn inner(&self) -> &dyn RestStorage {
        &self.store
    }
    fn delete<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        opts: &'a DeleteOptions,
    ) -> BoxFuture<'a, Result<(Value, bool), ApiError>> {
        Box::pin(self.delete_inner(ctx, name, opts))
    }
    /// Upstream's namespace REST has no DeleteCollection (discovery lists no
    /// `deletecollection`, and the verb answers 405).
    fn verbs(&self) -> Vec<&'static str> {
        let mut verbs = self.store.verbs();
        verbs.retain(|v| *v != "deletecollection");
        verbs
    }
    fn delete_collection<'a>(
        &'a self,
        _ctx: &'a RequestContext,
        _delete: &'a DeleteOptions,
        _list: &'a ListOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(async { Err(method_not_supported(self.store.info(), "deletecollection")) })
    }
}

/// `namespaces/finalize`: PUT changes only `spec.finalizers` (upstream `FinalizeREST`).
pub struct FinalizeStorage {
    store: Store,
    info: ResourceInfo,
}

impl FinalizeStorage {
    /// The finalize subresource of the namespaces store.
    pub fn new(store: Store) -> Self {
        let info = store.info().clone();
        FinalizeStorage { store, info }
    }

    async fn update_inner(
        &self,
        name: &str,
        mut update: UpdateFunc,
        opts: &UpdateOptions,
    ) -> Result<(Value, bool), ApiError> {
        let mut change = |v: &mut Value| -> Result<(), ApiError> {
            let new = update(Some(&with_type_meta(v.clone())))?;
            let finalizers = new.pointer("/spec/finalizers").cloned();
            let obj = v
                .as_object_mut()
                .ok_or_else(|| ApiError::internal("namespace is not an object"))?;
            let spec = obj
                .entry("spec")
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .ok_or_else(|| ApiError::internal("spec is not an object"))?;
            match finalizers {
                Some(f) if !f.is_null() => spec.insert("finalizers".into(), f),
                _ => spec.remove("finalizers"),
            };
            Ok(())
        };
        if opts.is_dry_run() {
            let ctx = RequestContext::default();
            let mut v = self.store.get(&ctx, name, &GetOptions::default()).await?;
            change(&mut v)?;
            return Ok((v, false));
        }
        Ok((rewrite(&self.store, name, change).await?, false))
    }
}

impl RestStorage for FinalizeStorage {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }
    fn verbs(&self) -> Vec<&'static str> {
        vec!["update"]
    }
    fn update<'a>(
        &'a self,
        _ctx: &'a RequestContext,
        name: &'a str,
        update: UpdateFunc,
        opts: &'a UpdateOptions,
        _force_allow_create: bool,
    ) -> BoxFuture<'a, Result<(Value, bool), ApiError>> {
        Box::pin(self.update_inner(name, update, opts))
    }
}

/// One pass of the namespace controller over terminating namespaces: deletes their content;
/// once none is left, drops the `kubernetes` finalizer and deletes the namespace.
pub async fn sync_terminating(stores: &Stores) -> Result<(), ApiError> {
    let Some(namespaces) = stores.get(&(String::new(), "namespaces".to_string())) else {
        return Ok(());
    };
    let list = namespaces
        .list(&RequestContext::default(), &ListOptions::default())
        .await?;
    let items = list
        .get("items")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for ns in items.iter().filter(|ns| is_terminating(ns)) {
        let Some(name) = ns.pointer("/metadata/name").and_then(Value::as_str) else {
            continue;
        };
        if let Err(err) = finalize_namespace(stores, namespaces, name).await {
            tracing::warn!(namespace = name, error = %err, "namespace controller");
        }
    }
    Ok(())
}

async fn finalize_namespace(
    stores: &Stores,
    namespaces: &Store,
    name: &str,
) -> Result<(), ApiError> {
    let ctx = RequestContext {
        namespace: name.to_string(),
        ..Default::default()
    };
    let mut remaining = false;
    for store in stores.values().filter(|s| s.info().namespaced) {
        store
            .delete_collection(&ctx, &DeleteOptions::default(), &ListOptions::default())
            .await?;
        let left = store.list(&ctx, &ListOptions::default()).await?;
        if left
            .get("items")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
        {
            remaining = true;
        }
    }
    if remaining {
        return Ok(());
    }
    let finalized = rewrite(namespaces, name, |v| {
        if let Some(list) = v
            .pointer_mut("/spec/finalizers")
            .and_then(Value::as_array_mut)
        {
            list.retain(|f| f.as_str() != Some(KUBERNETES_FINALIZER));
        }
        Ok(())
    })
    .await?;
    if !spec_finalizers(&finalized).is_empty() {
        return Ok(());
    }
    match namespaces
        .delete(&RequestContext::default(), name, &DeleteOptions::default())
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.reason() == reason::NOT_FOUND => Ok(()),
        Err(e) => Err(e),
    }
}

/// The namespace controller as a post-start hook: resyncs until the hook's stop token fires.
pub fn namespace_controller_hook(stores: Stores) -> PostStartHookFn {
    let stores = Arc::new(stores);
    Arc::new(move |ctx| {
        let stores = stores.clone();
        tokio::spawn(async move {
            loop {
                if let Err(err) = sync_terminating(&stores).await {
                    tracing::warn!(error = %err, "namespace controller");
                }
                tokio::select! {
                    _ = ctx.stop.cancelled() => return,
                    _ = tokio::time::sleep(RESYNC) => {}
                }
            }
        });
        Box::pin(async { Ok(()) })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::core::config::configmaps;
    use crate::apis::core::namespaces::namespaces;
    use apiserver::registry::rest::CreateOptions;
    use apiserver::storage::Storage;
    use apiserver::storage::backends::EmbeddedStorage;
    use http::StatusCode;

    struct Fixture {
        _dir: tempfile::TempDir,
        stores: Stores,
        namespaces: Store,
        configmaps: Store,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let backend: Arc<dyn Storage> = Arc::new(EmbeddedStorage::open(dir.path()).unwrap());
        let ns = Store::new(
            namespaces().strategy,
            backend.clone(),
            "/registry/namespaces",
        );
        let cm = Store::new(configmaps().strategy, backend, "/registry/configmaps");
        let mut stores = Stores::new();
        stores.insert((String::new(), "namespaces".into()), ns.clone());
        stores.insert((String::new(), "configmaps".into()), cm.clone());
        Fixture {
            _dir: dir,
            stores,
            namespaces: ns,
            configmaps: cm,
        }
    }

    fn in_ns(ns: &str) -> RequestContext {
        RequestContext {
            namespace: ns.into(),
            ..Default::default()
        }
    }

    async fn create_ns(f: &Fixture, name: &str) {
        f.namespaces
            .create(
                &RequestContext::default(),
                json!({"metadata": {"name": name}}),
                &CreateOptions::default(),
            )
            .await
            .unwrap();
    }

    fn cm(name: &str, finalizers: Value) -> Value {
        json!({"metadata": {"name": name, "finalizers": finalizers}, "data": {"a": "b"}})
    }

    #[tokio::test]
    async fn delete_marks_terminating_and_the_controller_finishes() {
        let f = fixture();
        create_ns(&f, "x").await;
        f.configmaps
            .create(
                &in_ns("x"),
                cm("held", json!(["example.com/hold"])),
                &CreateOptions::default(),
            )
            .await
            .unwrap();
        let storage: Box<dyn RestStorage> = Box::new(NamespaceStorage::new(f.namespaces.clone()));
        let (marked, deleted) = storage
            .delete(&RequestContext::default(), "x", &DeleteOptions::default())
            .await
            .unwrap();
        assert!(!deleted);
        assert_eq!(marked["status"]["phase"], "Terminating");
        assert!(marked["metadata"]["deletionTimestamp"].is_string());
        let again = storage
            .delete(&RequestContext::default(), "x", &DeleteOptions::default())
            .await
            .unwrap_err();
        assert_eq!(again.code(), StatusCode::CONFLICT);
        assert_eq!(
            again.to_string(),
            "Operation cannot be fulfilled on namespaces \"x\": The system is ensuring all \
             content is removed from this namespace.  Upon completion, this namespace will \
             automatically be purged by the system."
        );

        // The held configmap keeps the namespace alive.
        sync_terminating(&f.stores).await.unwrap();
        let ns = f
            .namespaces
            .get(&RequestContext::default(), "x", &GetOptions::default())
            .await
            .unwrap();
        assert_eq!(spec_finalizers(&ns), vec!["kubernetes".to_string()]);

        // Once it is gone, the namespace goes.
        let store = &f.stores[&(String::new(), "configmaps".to_string())];
        store
            .update(
                &in_ns("x"),
                "held",
                Box::new(|cur| {
                    let mut v = cur.cloned().unwrap();
                    v["metadata"]["finalizers"] = json!([]);
                    Ok(v)
                }),
                &UpdateOptions::default(),
                false,
            )
            .await
            .unwrap();
        sync_terminating(&f.stores).await.unwrap();
        let err = f
            .namespaces
            .get(&RequestContext::default(), "x", &GetOptions::default())
            .await
            .unwrap_err();
        assert_eq!(err.code(), StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn finalize_changes_only_spec_finalizers() {
        let f = fixture();
        create_ns(&f, "y").await;
        let finalize = FinalizeStorage::new(f.namespaces.clone());
        let (v, _) = finalize
            .update(
                &RequestContext::default(),
                "y",
                Box::new(|cur| {
                    let mut v = cur.cloned().unwrap();
                    v["spec"]["finalizers"] = json!([]);
                    v["metadata"]["labels"] = json!({"changed": "yes"});
                    Ok(v)
                }),
                &UpdateOptions::default(),
                false,
            )
            .await
            .unwrap();
        assert!(spec_finalizers(&v).is_empty());
        assert!(v["metadata"]["labels"].get("changed").is_none());
    }

    #[tokio::test]
    async fn delete_without_finalizers_deletes_at_once() {
        let f = fixture();
        create_ns(&f, "z").await;
        rewrite(&f.namespaces, "z", |v| {
            v["spec"]["finalizers"] = json!([]);
            Ok(())
        })
        .await
        .unwrap();
        let storage: Box<dyn RestStorage> = Box::new(NamespaceStorage::new(f.namespaces.clone()));
        let (_, deleted) = storage
            .delete(&RequestContext::default(), "z", &DeleteOptions::default())
            .await
            .unwrap();
        assert!(deleted);
    }
}
