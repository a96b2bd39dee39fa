//! [`ConvertingStorage`]: a served version's view of the storage of its CRD, which keeps
//! every object in the storage version (upstream's CRD storage codec: decode to the served
//! version, encode to the storage version, converting through the CRD's converter).
//!
//! Reads hand out objects converted to the served version (a list in one conversion, a
//! watch event by event); creates and updates convert the new object to the storage version
//! before it is written and the written object back. An update runs the caller's update
//! function on the converted current object outside the backend's compare-and-swap (the
//! conversion is asynchronous) and writes only if the object is still the one converted,
//! starting over otherwise.

use std::borrow::Cow;
use std::sync::Arc;

use apiserver::status::ApiError;
use apiserver::storage::watch::WATCH_CHANNEL_CAPACITY;
use apiserver::storage::{
    BoxFuture, GetOptions, ListOptions, ListResult, Object, Preconditions, Result, Storage,
    StorageError, UpdateFn, ValidateDeletionFn, WatchEvent, WatchStream,
};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{ConversionError, CrConverter};

/// The storage of one served version of a CRD over the CRD's storage (normally its watch
/// cache).
#[derive(Clone)]
pub struct ConvertingStorage {
    inner: Arc<dyn Storage>,
    converter: Arc<CrConverter>,
    version: String,
    storage_version: String,
    /// `<group>/<version>`.
    served_api_version: String,
    /// `<group>/<storage version>`.
    stored_api_version: String,
}

impl std::fmt::Debug for ConvertingStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConvertingStorage")
            .field("version", &self.version)
            .field("storage_version", &self.storage_version)
            .finish()
    }
}

/// The top-level `apiVersion` of a stored object, read without decoding the rest.
#[derive(Deserialize)]
struct ApiVersionView<'a> {
    #[serde(borrow, default, rename = "apiVersion")]
    api_version: Option<Cow<'a, str>>,
}

fn is_in(value: &[u8], api_version: &str) -> bool {
    serde_json::from_slice::<ApiVersionView<'_>>(value)
        .is_ok_and(|v| v.api_version.as_deref() == Some(api_version))
}

fn conversion_error(err: ConversionError) -> StorageError {
    StorageError::Api(err.to_api_error())
}

fn decode(value: &[u8]) -> Result<Value> {
    serde_json::from_slice(value).map_err(StorageError::internal)
}

fn encode(value: &Value) -> Result<Bytes> {
    serde_json::to_vec(value)
        .map(Bytes::from)
        .map_err(StorageError::internal)
}

/// The error that makes the backend's update loop give up so the update starts over.
fn stale() -> StorageError {
    StorageError::Internal("conversion: the object changed while it was converted".into())
}

impl ConvertingStorage {
    /// The view of served `version` over `inner`, which stores objects in
    /// `storage_version`.
    pub fn new(
        inner: Arc<dyn Storage>,
        converter: Arc<CrConverter>,
        version: &str,
        storage_version: &str,
    ) -> Self {
        ConvertingStorage {
            served_api_version: converter.api_version(version),
            stored_api_version: converter.api_version(storage_version),
            inner,
            converter,
            version: version.to_string(),
            storage_version: storage_version.to_string(),
        }
    }

    /// `obj` in the served version.
    async fn to_served(&self, obj: Object) -> Result<Object> {
        if is_in(&obj.value, &self.served_api_version) {
            return Ok(obj);
        }
        let converted = self
            .converter
            .convert_one(decode(&obj.value)?, &self.version)
            .await
            .map_err(conversion_error)?;
        Ok(Object {
            value: encode(&converted)?,
            ..obj
        })
    }

    /// `items` in the served version, converted together.
    async fn all_to_served(&self, items: Vec<Object>) -> Result<Vec<Object>> {
        if items
            .iter()
            .all(|o| is_in(&o.value, &self.served_api_version))
        {
            return Ok(items);
        }
        let values = items
            .iter()
            .map(|o| decode(&o.value))
            .collect::<Result<Vec<_>>>()?;
        let converted = self
            .converter
            .convert(values, &self.version)
            .await
            .map_err(conversion_error)?;
        items
            .into_iter()
            .zip(converted)
            .map(|(o, v)| {
                Ok(Object {
                    value: encode(&v)?,
                    ..o
                })
            })
            .collect()
    }

    /// The JSON of a new object (served version) in the storage version.
    async fn to_stored(&self, value: Bytes) -> Result<Bytes> {
        if is_in(&value, &self.stored_api_version) {
            return Ok(value);
        }
        let converted = self
            .converter
            .convert_one(decode(&value)?, &self.storage_version)
            .await
            .map_err(conversion_error)?;
        encode(&converted)
    }

    /// A watch event in the served version; a failed conversion ends the watch with the
    /// error.
    async fn event_to_served(&self, ev: WatchEvent) -> WatchEvent {
        let convert = |o: Object| async move {
            self.to_served(o).await.map_err(|e| match e {
                StorageError::Api(err) => err,
                other => ApiError::internal(other),
            })
        };
        let result = match ev {
            WatchEvent::Added(o) => convert(o).await.map(WatchEvent::Added),
            WatchEvent::Modified(o) => convert(o).await.map(WatchEvent::Modified),
            WatchEvent::Deleted(o) => convert(o).await.map(WatchEvent::Deleted),
            other => Ok(other),
        };
        result.unwrap_or_else(WatchEvent::Error)
    }

    async fn update_loop<'a>(
        &'a self,
        key: &'a str,
        ignore_not_found: bool,
        preconditions: Option<Preconditions>,
        try_update: &'a mut UpdateFn<'a>,
    ) -> Result<Object> {
        loop {
            let current = self
                .inner
                .get(
                    key,
                    GetOptions {
                        ignore_not_found: true,
                        ..Default::default()
                    },
                )
                .await?;
            if let (Some(cur), Some(p)) = (&current, &preconditions) {
                p.check(key, cur)?;
            }
            let served = match &current {
                Some(cur) => Some(self.to_served(cur.clone()).await?),
                None if ignore_not_found => None,
                // Let the backend answer as it does for a missing key.
                None => {
                    let mut missing = |_: Option<&Object>| Err(stale());
                    match self
                        .inner
                        .guaranteed_update(key, false, preconditions.clone(), &mut missing)
                        .await
                    {
                        Err(e) if e.is_not_found() => return Err(e),
                        _ => continue,
                    }
                }
            };
            let new = try_update(served.as_ref())?;
            // The served bytes back: nothing changes, the stored bytes are kept.
            let stored = match &served {
                Some(s) if s.value == new => None,
                _ => Some(self.to_stored(new).await?),
            };
            let expected = current.as_ref().map(|c| c.resource_version);
            let mut changed_meanwhile = false;
            let mut write = |cur: Option<&Object>| -> Result<Bytes> {
                changed_meanwhile = cur.map(|c| c.resource_version) != expected;
                if changed_meanwhile {
                    return Err(stale());
                }
                match (&stored, cur) {
                    (Some(bytes), _) => Ok(bytes.clone()),
                    (None, Some(cur)) => Ok(cur.value.clone()),
                    (None, None) => Err(stale()),
                }
            };
            match self
                .inner
                .guaranteed_update(key, ignore_not_found, preconditions.clone(), &mut write)
                .await
            {
                Ok(obj) => return self.to_served(obj).await,
                Err(_) if changed_meanwhile => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

impl Storage for ConvertingStorage {
    fn create<'a>(&'a self, key: &'a str, obj: Bytes) -> BoxFuture<'a, Result<Object>> {
        Box::pin(async move {
            let stored = self.to_stored(obj).await?;
            let created = self.inner.create(key, stored).await?;
            self.to_served(created).await
        })
    }

    fn get<'a>(&'a self, key: &'a str, opts: GetOptions) -> BoxFuture<'a, Result<Option<Object>>> {
        Box::pin(async move {
            match self.inner.get(key, opts).await? {
                Some(obj) => Ok(Some(self.to_served(obj).await?)),
                None => Ok(None),
            }
        })
    }

    fn list<'a>(&'a self, key: &'a str, opts: ListOptions) -> BoxFuture<'a, Result<ListResult>> {
        Box::pin(async move {
            let mut page = self.inner.list(key, opts).await?;
            page.items = self.all_to_served(std::mem::take(&mut page.items)).await?;
            Ok(page)
        })
    }

    fn guaranteed_update<'a>(
        &'a self,
        key: &'a str,
        ignore_not_found: bool,
        preconditions: Option<Preconditions>,
        try_update: &'a mut UpdateFn<'a>,
    ) -> BoxFuture<'a, Result<Object>> {
        Box::pin(self.update_loop(key, ignore_not_found, preconditions, try_update))
    }

    fn delete<'a>(
        &'a self,
        key: &'a str,
        preconditions: Option<Preconditions>,
        validate: Option<&'a ValidateDeletionFn<'a>>,
    ) -> BoxFuture<'a, Result<Object>> {
        Box::pin(async move {
            let deleted = self.inner.delete(key, preconditions, validate).await?;
            self.to_served(deleted).await
        })
    }

    fn watch<'a>(&'a self, key: &'a str, opts: ListOptions) -> BoxFuture<'a, Result<WatchStream>> {
        Box::pin(async move {
            let mut inner = self.inner.watch(key, opts).await?;
            let (tx, rx) = mpsc::channel(WATCH_CHANNEL_CAPACITY);
            let (progress_tx, mut progress_rx) = mpsc::unbounded_channel::<()>();
            let stop = CancellationToken::new();
            let stopped = stop.clone();
            let this = self.clone();
            tokio::spawn(async move {
                loop {
                    let ev = tokio::select! {
                        _ = stopped.cancelled() => return,
                        Some(()) = progress_rx.recv() => {
                            inner.request_progress();
                            continue;
                        }
                        ev = inner.next() => ev,
                    };
                    let Some(ev) = ev else { return };
                    let out = this.event_to_served(ev).await;
                    let last = matches!(out, WatchEvent::Error(_));
                    let sent = tokio::select! {
                        _ = stopped.cancelled() => return,
                        sent = tx.send(out) => sent,
                    };
                    if sent.is_err() || last {
                        return;
                    }
                }
            });
            Ok(
                WatchStream::new(rx, Some(stop)).with_progress(Arc::new(move || {
                    let _ = progress_tx.send(());
                })),
            )
        })
    }

    fn count<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<i64>> {
        self.inner.count(key)
    }

    fn current_revision(&self) -> BoxFuture<'_, Result<u64>> {
        self.inner.current_revision()
    }

    fn compact(&self, revision: u64) -> BoxFuture<'_, Result<()>> {
        self.inner.compact(revision)
    }

    fn compacted_revision(&self) -> u64 {
        self.inner.compacted_revision()
    }

    fn health(&self) -> BoxFuture<'_, Result<(), String>> {
        self.inner.health()
    }

    fn reliable_progress(&self) -> bool {
        self.inner.reliable_progress()
    }
}
