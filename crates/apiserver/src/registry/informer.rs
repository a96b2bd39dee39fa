//! An in-process informer: a list+watch cache of one resource's objects, read from its
//! [`RestStorage`] (normally the watch cache), for controllers and authorizers that need the
//! current objects on every request without a storage read (client-go's shared informer,
//! without the client).
//!
//! The informer lists, then watches from the list's resourceVersion; when the watch ends it
//! watches again from the last resourceVersion it saw, and when that fails (an expired
//! resourceVersion, a storage error) it lists again and reports the differences as events, so
//! handlers always converge on the stored state.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::rest::{ListOptions, ObjectEvent, RequestContext, RestStorage};

/// How long to wait after a failed list or watch before trying again.
const RETRY: Duration = Duration::from_secs(1);

/// A change seen by an informer.
#[derive(Clone, Debug)]
pub enum InformerEvent {
    /// An object appeared (also every object of the first list).
    Added(Arc<Value>),
    /// An object changed.
    Modified {
        /// The object before the change.
        old: Arc<Value>,
        /// The object after the change.
        new: Arc<Value>,
    },
    /// An object was deleted (its last known state).
    Deleted(Arc<Value>),
}

impl InformerEvent {
    /// The object the event is about (the new state for a modification).
    pub fn object(&self) -> &Arc<Value> {
        match self {
            InformerEvent::Added(obj) | InformerEvent::Deleted(obj) => obj,
            InformerEvent::Modified { new, .. } => new,
        }
    }
}

/// Called for every event, in order, on the informer's task. Handlers must not block.
pub type EventHandler = Arc<dyn Fn(&InformerEvent) + Send + Sync>;

/// A list+watch cache of one resource. Cloning shares the cache.
#[derive(Clone)]
pub struct Informer {
    inner: Arc<Inner>,
}

struct Inner {
    storage: Arc<dyn RestStorage>,
    items: RwLock<HashMap<String, Arc<Value>>>,
    handlers: RwLock<Vec<EventHandler>>,
    synced: watch::Sender<bool>,
}

impl std::fmt::Debug for Informer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Informer")
            .field("resource", &self.inner.storage.info().resource)
            .field("synced", &self.has_synced())
            .finish()
    }
}

/// The cache key of an object: `namespace/name`, or `name` for cluster-scoped objects.
pub fn object_key(obj: &Value) -> String {
    let namespace = obj
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    key(namespace, name)
}

fn key(namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        name.to_string()
    } else {
        format!("{namespace}/{name}")
    }
}

fn resource_version(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|rv| !rv.is_empty())
}

impl Informer {
    /// An informer over `storage`; nothing happens until [`start`](Self::start).
    pub fn new(storage: Arc<dyn RestStorage>) -> Self {
        let (synced, _) = watch::channel(false);
        Informer {
            inner: Arc::new(Inner {
                storage,
                items: RwLock::new(HashMap::new()),
                handlers: RwLock::new(Vec::new()),
                synced,
            }),
        }
    }

    /// Adds a handler. Objects already in the cache are replayed to it as `Added` first, so a
    /// handler added after the first list misses nothing.
    pub fn add_handler(&self, handler: EventHandler) {
        let mut handlers = self
            .inner
            .handlers
            .write()
            .unwrap_or_else(|e| e.into_inner());
        for obj in self.list() {
            handler(&InformerEvent::Added(obj));
        }
        handlers.push(handler);
    }

    /// Starts listing and watching on a task of its own, until `stop` fires.
    pub fn start(&self, stop: CancellationToken) {
        let this = self.clone();
        tokio::spawn(async move { this.run(stop).await });
    }

    /// Whether the first list has been loaded.
    pub fn has_synced(&self) -> bool {
        *self.inner.synced.borrow()
    }

    /// Waits until the first list has been loaded.
    pub async fn wait_synced(&self) {
        let mut rx = self.inner.synced.subscribe();
        // The sender lives as long as `self`, so this only ends when synced.
        let _ = rx.wait_for(|synced| *synced).await;
    }

    /// The cached object `namespace/name` (empty namespace for cluster-scoped objects).
    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<Value>> {
        self.inner
            .items
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key(namespace, name))
            .cloned()
    }

    /// Every cached object, in no particular order.
    pub fn list(&self) -> Vec<Arc<Value>> {
        self.inner
            .items
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
    }

    fn context() -> RequestContext {
        RequestContext::default()
    }

    async fn run(self, stop: CancellationToken) {
        let mut rv: Option<String> = None;
        loop {
            let from = match rv.take() {
                Some(rv) => rv,
                None => match self.relist().await {
                    Ok(rv) => rv,
                    Err(err) => {
                        tracing::warn!(resource = %self.inner.storage.info().resource, error = %err, "informer list failed");
                        tokio::select! {
                            _ = stop.cancelled() => return,
                            _ = tokio::time::sleep(RETRY) => continue,
                        }
                    }
                },
            };
            let opts = ListOptions {
                watch: true,
                allow_watch_bookmarks: true,
                resource_version: from.clone(),
                ..ListOptions::default()
            };
            let mut events = match self.inner.storage.watch(&Self::context(), &opts).await {
                Ok(events) => events,
                Err(err) => {
                    tracing::debug!(resource = %self.inner.storage.info().resource, error = %err, "informer watch failed; listing again");
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = tokio::time::sleep(RETRY) => continue,
                    }
                }
            };
            let mut last = from;
            loop {
                let event = tokio::select! {
                    _ = stop.cancelled() => return,
                    event = events.next() => event,
                };
                match event {
                    Some(ObjectEvent::Added(obj)) | Some(ObjectEvent::Modified(obj)) => {
                        if let Some(v) = resource_version(&obj) {
                            last = v.to_string();
                        }
                        self.upsert(obj);
                    }
                    Some(ObjectEvent::Deleted(obj)) => {
                        if let Some(v) = resource_version(&obj) {
                            last = v.to_string();
                        }
                        self.remove(&object_key(&obj));
                    }
                    Some(ObjectEvent::Bookmark(obj)) => {
                        if let Some(v) = resource_version(&obj) {
                            last = v.to_string();
                        }
                    }
                    // An error (e.g. 410 Gone): list again.
                    Some(ObjectEvent::Error(_)) => break,
                    // A watch that simply ended: watch again from where it stopped.
                    None => {
                        rv = Some(last);
                        break;
                    }
                }
            }
        }
    }

    /// Lists, replaces the cache with the result (reporting the differences) and returns the
    /// list's resourceVersion.
    async fn relist(&self) -> Result<String, crate::status::ApiError> {
        let list = self
            .inner
            .storage
            .list(&Self::context(), &ListOptions::default())
            .await?;
        let rv = list
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let items: Vec<Value> = match list {
            Value::Object(mut map) => match map.remove("items") {
                Some(Value::Array(items)) => items,
                _ => Vec::new(),
            },
            _ => Vec::new(),
        };
        let mut fresh: HashMap<String, Arc<Value>> = HashMap::with_capacity(items.len());
        for item in items {
            fresh.insert(object_key(&item), Arc::new(item));
        }
        let mut events = Vec::new();
        {
            let mut cached = self.inner.items.write().unwrap_or_else(|e| e.into_inner());
            for (k, old) in cached.iter() {
                if !fresh.contains_key(k) {
                    events.push(InformerEvent::Deleted(old.clone()));
                }
            }
            for (k, new) in &fresh {
                match cached.get(k) {
                    None => events.push(InformerEvent::Added(new.clone())),
                    Some(old) if resource_version(old) != resource_version(new) => {
                        events.push(InformerEvent::Modified {
                            old: old.clone(),
                            new: new.clone(),
                        })
                    }
                    Some(_) => {}
                }
            }
            *cached = fresh;
        }
        for event in &events {
            self.notify(event);
        }
        self.inner.synced.send_replace(true);
        Ok(rv)
    }

    fn upsert(&self, obj: Value) {
        let obj = Arc::new(obj);
        let old = self
            .inner
            .items
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(object_key(&obj), obj.clone());
        let event = match old {
            Some(old) => InformerEvent::Modified { old, new: obj },
            None => InformerEvent::Added(obj),
        };
        self.notify(&event);
    }

    fn remove(&self, key: &str) {
        let old = self
            .inner
            .items
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key);
        if let Some(old) = old {
            self.notify(&InformerEvent::Deleted(old));
        }
    }

    fn notify(&self, event: &InformerEvent) {
        let handlers = self
            .inner
            .handlers
            .read()
            .unwrap_or_else(|e| e.into_inner());
        for handler in handlers.iter() {
            handler(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::rest::{CreateOptions, DeleteOptions, UpdateOptions};
    use crate::registry::store::Store;
    use crate::registry::{ResourceInfo, Strategy};
    use crate::storage::Storage;
    use crate::storage::backends::EmbeddedStorage;
    use serde_json::json;
    use std::sync::Mutex;

    struct ConfigMaps(ResourceInfo);

    impl Strategy for ConfigMaps {
        fn info(&self) -> &ResourceInfo {
            &self.0
        }
    }

    fn configmap_store(dir: &std::path::Path) -> Store {
        let backend: Arc<dyn Storage> = Arc::new(EmbeddedStorage::open(dir).unwrap());
        let info = ResourceInfo {
            version: "v1".into(),
            kind: "ConfigMap".into(),
            list_kind: "ConfigMapList".into(),
            resource: "configmaps".into(),
            singular: "configmap".into(),
            namespaced: true,
            ..Default::default()
        };
        Store::new(Arc::new(ConfigMaps(info)), backend, "/registry/configmaps")
    }

    fn cm(name: &str, value: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "namespace": "ns"}, "data": {"k": value}})
    }

    async fn eventually(mut check: impl FnMut() -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while !check() {
            assert!(tokio::time::Instant::now() < deadline, "condition not met");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test]
    async fn informer_lists_then_follows_creates_updates_and_deletes() {
        let dir = tempfile::tempdir().unwrap();
        let store = configmap_store(dir.path());
        let ctx = RequestContext {
            namespace: "ns".into(),
            ..Default::default()
        };
        store
            .create(&ctx, cm("before", "1"), &CreateOptions::default())
            .await
            .unwrap();
        let informer = Informer::new(Arc::new(store.clone()));
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let log = seen.clone();
        informer.add_handler(Arc::new(move |event| {
            let kind = match event {
                InformerEvent::Added(_) => "added",
                InformerEvent::Modified { .. } => "modified",
                InformerEvent::Deleted(_) => "deleted",
            };
            log.lock()
                .unwrap()
                .push(format!("{kind} {}", object_key(event.object())));
        }));
        let stop = CancellationToken::new();
        informer.start(stop.clone());
        informer.wait_synced().await;
        assert!(informer.get("ns", "before").is_some());

        store
            .create(&ctx, cm("after", "1"), &CreateOptions::default())
            .await
            .unwrap();
        eventually(|| informer.get("ns", "after").is_some()).await;
        let mut changed = (*informer.get("ns", "after").unwrap()).clone();
        changed["data"]["k"] = json!("2");
        store
            .update(
                &ctx,
                "after",
                Box::new(move |_| Ok(changed.clone())),
                &UpdateOptions::default(),
                false,
            )
            .await
            .unwrap();
        eventually(|| informer.get("ns", "after").unwrap()["data"]["k"] == json!("2")).await;
        store
            .delete(&ctx, "before", &DeleteOptions::default())
            .await
            .unwrap();
        eventually(|| informer.get("ns", "before").is_none()).await;
        assert_eq!(
            *seen.lock().unwrap(),
            vec![
                "added ns/before",
                "added ns/after",
                "modified ns/after",
                "deleted ns/before"
            ]
        );

        // A handler added late gets the current objects replayed.
        let late: Arc<Mutex<Vec<String>>> = Arc::default();
        let log = late.clone();
        informer.add_handler(Arc::new(move |event| {
            log.lock().unwrap().push(object_key(event.object()));
        }));
        assert_eq!(*late.lock().unwrap(), vec!["ns/after"]);
        stop.cancel();
    }
}
