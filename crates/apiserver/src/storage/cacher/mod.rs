//! The watch cache (upstream `pkg/storage/cacher`): per resource, one storage watch feeds an
//! in-memory store and a bounded window of recent events. LISTs at resourceVersion `"0"` or
//! `NotOlderThan`, consistent LISTs when the cache can prove it is fresh, GETs with a
//! resourceVersion, and every watch are served from memory; each event is fanned out to all
//! watchers without one storage watch per client. A watcher whose buffer is full is ended (its
//! client re-watches or re-lists) without stalling the others. Writes go to the storage.

mod state;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use bytes::Bytes;
use http::StatusCode;
use tokio::sync::{Notify, mpsc, watch};
use tokio_util::sync::CancellationToken;

use self::state::{State, Watcher};
use super::selection::{GetAttrs, default_attrs};
use super::{
    BoxFuture, GetOptions, ListOptions, ListResult, Object, Preconditions, ResourceVersionMatch,
    Result, Storage, StorageError, UpdateFn, ValidateDeletionFn, WatchEvent, WatchStream,
    parse_watch_rv, recursive_prefix, versioner,
};
use crate::status::ApiError;

/// Watch cache settings.
#[derive(Clone)]
pub struct CacherConfig {
    /// The resource's key prefix, e.g. `/registry/pods/`; other keys go straight to storage.
    pub resource_prefix: String,
    /// Recent events kept for watches that start in the past.
    pub window_capacity: usize,
    /// Events buffered per watcher before it is ended as too slow.
    pub watcher_buffer: usize,
    /// Interval of bookmarks to watchers that asked for them (upstream: about a minute).
    pub bookmark_interval: Duration,
    /// How long a read waits for the cache to catch up with a resourceVersion.
    pub freshness_timeout: Duration,
    /// Attribute extraction for selectors.
    pub get_attrs: GetAttrs,
}

impl CacherConfig {
    /// Defaults for a resource prefix.
    pub fn new(resource_prefix: &str) -> Self {
        CacherConfig {
            resource_prefix: recursive_prefix(resource_prefix),
            window_capacity: 4096,
            watcher_buffer: 100,
            bookmark_interval: Duration::from_secs(55),
            freshness_timeout: Duration::from_secs(3),
            get_attrs: Arc::new(default_attrs),
        }
    }
}

/// The storage a registry store of `group`/`resource` runs on (upstream's REST options
/// decorator): `storage`'s handle for the resource behind a watch cache made with `config`, or
/// the handle alone when `--watch-cache` or `--watch-cache-sizes` turn the cache off for it
/// (`built_in` is false for custom resources).
pub fn decorated_storage(
    storage: &Arc<dyn Storage>,
    group: &str,
    resource: &str,
    built_in: bool,
    config: CacherConfig,
) -> Arc<dyn Storage> {
    let handle = super::resource_storage(storage, group, resource);
    if storage.watch_cache_enabled(group, resource, built_in) {
        Arc::new(Cacher::new(handle, config))
    } else {
        tracing::debug!(group, resource, "Not using watch cache");
        handle
    }
}

/// Most storage events applied and fanned out together.
const MAX_BATCH: usize = 1024;

/// How often a read waiting for freshness asks the storage for progress (upstream's
/// `progressRequestPeriod`).
const PROGRESS_REQUEST_PERIOD: Duration = Duration::from_millis(100);

struct Inner {
    storage: Arc<dyn Storage>,
    config: CacherConfig,
    state: RwLock<State>,
    rev_tx: watch::Sender<u64>,
    progress: Notify,
    next_watcher: AtomicU64,
    stop: CancellationToken,
}

/// The watch cache for one resource; implements [`Storage`] by serving reads from memory and
/// passing writes through. Dropping the last handle stops its background tasks.
#[derive(Clone)]
pub struct Cacher {
    inner: Arc<Inner>,
    _stop: Arc<tokio_util::sync::DropGuard>,
}

impl std::fmt::Debug for Cacher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cacher")
            .field("prefix", &self.inner.config.resource_prefix)
            .finish()
    }
}

fn read(s: &RwLock<State>) -> RwLockReadGuard<'_, State> {
    s.read().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write(s: &RwLock<State>) -> RwLockWriteGuard<'_, State> {
    s.write().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Upstream's 429 while the cache is (re)initializing.
fn not_ready() -> StorageError {
    StorageError::Api(
        ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            crate::status::reason::TOO_MANY_REQUESTS,
            "storage is (re)initializing",
        )
        .with_details(crate::status::StatusDetails {
            retry_after_seconds: 1,
            ..Default::default()
        }),
    )
}

impl Cacher {
    /// Starts a cache of `config.resource_prefix` over `storage` (must run inside a tokio
    /// runtime). Reads wait for the initial list; the cache re-lists by itself after errors.
    pub fn new(storage: Arc<dyn Storage>, config: CacherConfig) -> Self {
        let (rev_tx, _) = watch::channel(0);
        let stop = CancellationToken::new();
        let progress_reliable = storage.reliable_progress();
        let inner = Arc::new(Inner {
            storage,
            state: RwLock::new(State::new(config.window_capacity, progress_reliable)),
            config,
            rev_tx,
            progress: Notify::new(),
            next_watcher: AtomicU64::new(1),
            stop: stop.clone(),
        });
        tokio::spawn(reflector(Arc::downgrade(&inner), stop.clone()));
        tokio::spawn(bookmarker(Arc::downgrade(&inner), stop.clone()));
        Cacher {
            inner,
            _stop: Arc::new(stop.drop_guard()),
        }
    }

    /// Whether the cache holds a complete state.
    pub fn is_ready(&self) -> bool {
        read(&self.inner.state).ready
    }

    /// The revision the cache is at.
    pub fn resource_version(&self) -> u64 {
        read(&self.inner.state).rev
    }

    /// Number of registered watchers.
    pub fn watcher_count(&self) -> usize {
        read(&self.inner.state).watchers.len()
    }

    fn covers(&self, key: &str) -> bool {
        key.starts_with(&self.inner.config.resource_prefix)
            || recursive_prefix(key) == self.inner.config.resource_prefix
    }

    /// Waits until the cache is ready and at least at `rev`; false on timeout. While it waits
    /// it asks the storage for a progress notification every 100 ms (upstream's conditional
    /// progress requester), which brings a quiet resource's cache up to the storage's revision.
    async fn wait_for(&self, rev: u64, timeout: Duration) -> bool {
        let mut rx = self.inner.rev_tx.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            {
                let st = read(&self.inner.state);
                if st.ready && st.rev >= rev {
                    return true;
                }
            }
            if rev > 0 {
                self.inner.progress.notify_one();
            }
            let next_request =
                (tokio::time::Instant::now() + PROGRESS_REQUEST_PERIOD).min(deadline);
            match tokio::time::timeout_at(next_request, rx.changed()).await {
                Ok(Ok(())) => {}
                Err(_) if next_request < deadline => {}
                _ => {
                    let st = read(&self.inner.state);
                    return st.ready && st.rev >= rev;
                }
            }
        }
    }

    /// Waits for freshness for a consistent read: the storage's current revision.
    async fn wait_consistent(&self) -> Result<bool> {
        if !self.inner.storage.reliable_progress() {
            return Ok(false);
        }
        let current = self.inner.storage.current_revision().await?;
        Ok(self
            .wait_for(current, self.inner.config.freshness_timeout)
            .await)
    }

    async fn wait_not_older_than(&self, rv: u64) -> Result<()> {
        if self.wait_for(rv, self.inner.config.freshness_timeout).await {
            return Ok(());
        }
        let st = read(&self.inner.state);
        if !st.ready {
            return Err(not_ready());
        }
        Err(StorageError::TooLargeResourceVersion {
            requested: rv,
            current: st.rev,
            retry_after_seconds: 1,
        })
    }

    /// Whether the cache, having reached `rv`, can answer a read not older than `rv` itself:
    /// always when the storage's progress notifications are reliable; otherwise only when
    /// events (not a progress notification, which etcd 3.4 can send ahead of events still in
    /// flight) brought it there. Otherwise the storage answers.
    fn fresh_by_events(&self, rv: u64) -> bool {
        self.inner.storage.reliable_progress() || read(&self.inner.state).delivered >= rv
    }

    fn list_from_cache(&self, key: &str, opts: &ListOptions) -> Result<ListResult> {
        let st = read(&self.inner.state);
        st.list(key, opts)
    }
}

/// Keeps the cache in sync: list, then watch from the list's revision; re-list on 410.
async fn reflector(inner: std::sync::Weak<Inner>, stop: CancellationToken) {
    let mut backoff = Duration::from_millis(100);
    'relist: loop {
        let Some(me) = inner.upgrade() else { return };
        let prefix = me.config.resource_prefix.clone();
        let storage = me.storage.clone();
        drop(me);
        let list = tokio::select! {
            _ = stop.cancelled() => return,
            l = storage.list(&prefix, ListOptions { recursive: true, ..Default::default() }) => l,
        };
        let list = match list {
            Ok(l) => l,
            Err(_) => {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(Duration::from_secs(5));
                continue 'relist;
            }
        };
        {
            let Some(me) = inner.upgrade() else { return };
            let mut st = write(&me.state);
            st.replace(list, &me.config.get_attrs);
            let rev = st.rev;
            drop(st);
            me.rev_tx.send_replace(rev);
        }
        loop {
            let from = match inner.upgrade() {
                Some(me) => read(&me.state).delivered,
                None => return,
            };
            let opts = ListOptions {
                resource_version: from.to_string(),
                recursive: true,
                progress_notify: true,
                send_initial_events: Some(false),
                feeds_watch_cache: true,
                ..Default::default()
            };
            let mut w = tokio::select! {
                _ = stop.cancelled() => return,
                w = storage.watch(&prefix, opts) => match w {
                    Ok(w) => w,
                    Err(_) => {
                        tokio::select! {
                            _ = stop.cancelled() => return,
                            _ = tokio::time::sleep(backoff) => {}
                        }
                        backoff = (backoff * 2).min(Duration::from_secs(5));
                        continue;
                    }
                },
            };
            loop {
                let Some(me) = inner.upgrade() else { return };
                let ev = tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = me.progress.notified() => {
                        w.request_progress();
                        continue;
                    }
                    ev = w.next() => ev,
                };
                match ev {
                    None => break,
                    Some(WatchEvent::Error(e)) => {
                        if e.code() == StatusCode::GONE {
                            // Our revision is gone: start over (watchers are ended; they
                            // re-list).
                            continue 'relist;
                        }
                        break;
                    }
                    Some(ev) => {
                        backoff = Duration::from_millis(100);
                        // Take whatever else is ready too: one fan-out per batch.
                        let mut batch = vec![ev];
                        let mut failed = None;
                        while batch.len() < MAX_BATCH {
                            match w.try_next() {
                                Some(WatchEvent::Error(e)) => {
                                    failed = Some(e);
                                    break;
                                }
                                Some(ev) => batch.push(ev),
                                None => break,
                            }
                        }
                        let rev = {
                            let mut st = write(&me.state);
                            st.apply_batch(batch, &me.config.get_attrs);
                            st.rev
                        };
                        me.rev_tx.send_replace(rev);
                        if let Some(e) = failed {
                            if e.code() == StatusCode::GONE {
                                continue 'relist;
                            }
                            break;
                        }
                    }
                }
            }
            // The watch ended or failed: resume from the cache's revision after a pause.
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(Duration::from_secs(5));
        }
    }
}

/// Sends bookmarks to every watcher that asked for them.
async fn bookmarker(inner: std::sync::Weak<Inner>, stop: CancellationToken) {
    loop {
        let interval = match inner.upgrade() {
            Some(me) => me.config.bookmark_interval,
            None => return,
        };
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(interval) => {}
        }
        let Some(me) = inner.upgrade() else { return };
        write(&me.state).send_bookmarks();
    }
}

impl Storage for Cacher {
    fn create<'a>(&'a self, key: &'a str, obj: Bytes) -> BoxFuture<'a, Result<Object>> {
        self.inner.storage.create(key, obj)
    }

    fn get<'a>(&'a self, key: &'a str, opts: GetOptions) -> BoxFuture<'a, Result<Option<Object>>> {
        Box::pin(async move {
            if opts.resource_version.is_empty() || !self.covers(key) {
                return self.inner.storage.get(key, opts).await;
            }
            let rv = versioner::parse_resource_version(&opts.resource_version)?;
            if rv > 0 {
                self.wait_not_older_than(rv).await?;
                if !self.fresh_by_events(rv) {
                    return self.inner.storage.get(key, opts).await;
                }
            } else if !self.wait_for(0, self.inner.config.freshness_timeout).await {
                return self.inner.storage.get(key, opts).await;
            }
            let st = read(&self.inner.state);
            match st.store.get(key) {
                Some(o) => Ok(Some(o.0.object.clone())),
                None if opts.ignore_not_found => Ok(None),
                None => Err(StorageError::KeyNotFound {
                    key: key.into(),
                    resource_version: st.served_rev(),
                }),
            }
        })
    }

    fn list<'a>(&'a self, key: &'a str, opts: ListOptions) -> BoxFuture<'a, Result<ListResult>> {
        Box::pin(async move {
            let delegate = !self.covers(key)
                || !opts.continue_token.is_empty()
                || opts.resource_version_match == ResourceVersionMatch::Exact
                || (opts.limit > 0
                    && opts.resource_version_match == ResourceVersionMatch::Unset
                    && !opts.resource_version.is_empty()
                    && opts.resource_version != "0");
            if delegate {
                return self.inner.storage.list(key, opts).await;
            }
            if opts.resource_version.is_empty() {
                // Consistent read: from the cache only when it provably caught up.
                if !self.wait_consistent().await? {
                    return self.inner.storage.list(key, opts).await;
                }
            } else {
                let rv =
                    versioner::parse_resource_version(&opts.resource_version).map_err(|e| {
                        StorageError::BadRequest(format!("invalid resource version: {e}"))
                    })?;
                if rv > 0 {
                    self.wait_not_older_than(rv).await?;
                    if !self.fresh_by_events(rv) {
                        return self.inner.storage.list(key, opts).await;
                    }
                } else if !self.wait_for(0, self.inner.config.freshness_timeout).await {
                    return Err(not_ready());
                }
            }
            self.list_from_cache(key, &opts)
        })
    }

    fn guaranteed_update<'a>(
        &'a self,
        key: &'a str,
        ignore_not_found: bool,
        preconditions: Option<Preconditions>,
        try_update: &'a mut UpdateFn<'a>,
    ) -> BoxFuture<'a, Result<Object>> {
        // The cached copy saves the backend a read when it is current (upstream's cacher
        // passes its object to the etcd3 store the same way).
        let cached = if self.covers(key) {
            let st = read(&self.inner.state);
            st.store
                .get(key)
                .filter(|_| st.ready)
                .map(|o| o.0.object.clone())
        } else {
            None
        };
        self.inner.storage.guaranteed_update_cached(
            key,
            ignore_not_found,
            preconditions,
            try_update,
            cached,
        )
    }

    fn delete<'a>(
        &'a self,
        key: &'a str,
        preconditions: Option<Preconditions>,
        validate: Option<&'a ValidateDeletionFn<'a>>,
    ) -> BoxFuture<'a, Result<Object>> {
        self.inner.storage.delete(key, preconditions, validate)
    }

    fn watch<'a>(&'a self, key: &'a str, opts: ListOptions) -> BoxFuture<'a, Result<WatchStream>> {
        Box::pin(async move {
            if !self.covers(key) {
                return self.inner.storage.watch(key, opts).await;
            }
            let rv = parse_watch_rv(&opts.resource_version)?;
            let initial = match opts.send_initial_events {
                None => rv == 0,
                Some(v) => v,
            };
            if opts.resource_version.is_empty() && !self.wait_consistent().await? {
                // A consistent start the cache cannot prove: let the storage serve it.
                return self.inner.storage.watch(key, opts).await;
            }
            if !self.wait_for(0, self.inner.config.freshness_timeout).await {
                return Err(not_ready());
            }
            if rv > 0 && initial {
                // sendInitialEvents: a state not older than N, so the cache must have reached
                // it. A plain watch from N (upstream's cacher does the same) starts at once,
                // even from a revision the cache has not seen yet (a LIST from etcd answers
                // with etcd's revision, which writes elsewhere move): its watcher skips events
                // up to N.
                self.wait_not_older_than(rv).await?;
            }
            let watched = if opts.recursive {
                recursive_prefix(key)
            } else {
                key.to_string()
            };
            let (tx, rx) = mpsc::channel(self.inner.config.watcher_buffer);
            let id = self.inner.next_watcher.fetch_add(1, Ordering::Relaxed);
            let mut st = write(&self.inner.state);
            let mut first: VecDeque<WatchEvent> = VecDeque::new();
            if initial {
                st.initial_events(&watched, opts.recursive, &opts.predicate, &mut first);
                if opts.send_initial_events == Some(true) && opts.allow_watch_bookmarks {
                    // The state is not older than the requested revision (the wait above):
                    // with unreliable progress the cache serves the last delivered event's
                    // revision, which on a quiet resource is older than the one asked for.
                    first.push_back(WatchEvent::Bookmark {
                        resource_version: st.served_rev().max(rv),
                        initial_events_end: true,
                    });
                }
            } else if rv <= st.rev
                && let Err(oldest) =
                    st.events_since(rv, &watched, opts.recursive, &opts.predicate, &mut first)
            {
                return Ok(WatchStream::error(ApiError::expired(format!(
                    "too old resource version: {rv} ({oldest})"
                ))));
            }
            st.watchers.insert(
                id,
                Watcher {
                    key: watched,
                    recursive: opts.recursive,
                    predicate: opts.predicate,
                    bookmarks: opts.allow_watch_bookmarks,
                    from: if initial { 0 } else { rv },
                    tx,
                },
            );
            drop(st);
            // A watcher whose stream is dropped is pruned at the next dispatch or bookmark.
            let inner = Arc::downgrade(&self.inner);
            Ok(WatchStream::from_batches(rx)
                .with_initial(first)
                .with_progress(Arc::new(move || {
                    // Bring the cache up to the storage's revision; the bookmarker then
                    // reports it to watchers that asked for bookmarks.
                    if let Some(me) = inner.upgrade() {
                        me.progress.notify_one();
                    }
                })))
        })
    }

    fn count<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<i64>> {
        self.inner.storage.count(key)
    }

    fn current_revision(&self) -> BoxFuture<'_, Result<u64>> {
        self.inner.storage.current_revision()
    }

    fn compact(&self, revision: u64) -> BoxFuture<'_, Result<()>> {
        self.inner.storage.compact(revision)
    }

    fn compacted_revision(&self) -> u64 {
        self.inner.storage.compacted_revision()
    }

    fn health(&self) -> BoxFuture<'_, Result<(), String>> {
        self.inner.storage.health()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::backends::EmbeddedStorage;
    use crate::storage::testing::{Caps, next_event, pod};

    fn config() -> CacherConfig {
        CacherConfig {
            bookmark_interval: Duration::from_secs(1),
            ..CacherConfig::new("/registry/")
        }
    }

    async fn embedded() -> (Arc<dyn Storage>, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let s: Arc<dyn Storage> = Arc::new(EmbeddedStorage::open(dir.path()).unwrap());
        (Arc::new(Cacher::new(s, config())), dir)
    }

    mod over_embedded {
        use super::*;
        crate::storage_conformance!(
            embedded,
            Caps {
                watch_compaction_410: false
            }
        );
    }

    mod over_etcd {
        use super::*;
        use crate::storage::backends::{EtcdConfig, EtcdStorage};
        use crate::storage::testing::etcd_server::EtcdServer;

        async fn etcd() -> (Arc<dyn Storage>, EtcdServer) {
            let server = EtcdServer::start().await;
            let s = EtcdStorage::connect(EtcdConfig {
                endpoints: vec![server.url()],
                request_timeout: Duration::from_secs(3),
                ..Default::default()
            })
            .await
            .unwrap();
            (Arc::new(Cacher::new(Arc::new(s), config())), server)
        }

        crate::storage_conformance!(
            etcd,
            Caps {
                watch_compaction_410: false
            }
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn slow_watcher_is_ended_without_stalling_others() {
        let dir = tempfile::tempdir().unwrap();
        let s: Arc<dyn Storage> = Arc::new(EmbeddedStorage::open(dir.path()).unwrap());
        let cacher = Cacher::new(
            s,
            CacherConfig {
                watcher_buffer: 5,
                ..config()
            },
        );
        let opts = ListOptions {
            resource_version: "0".into(),
            recursive: true,
            ..Default::default()
        };
        let mut slow = cacher.watch("/registry/pods/", opts.clone()).await.unwrap();
        let mut fast = cacher.watch("/registry/pods/", opts).await.unwrap();
        let n = 50;
        let reader = tokio::spawn(async move {
            let mut seen = 0;
            while seen < n {
                match next_event(&mut fast).await {
                    WatchEvent::Added(_) => seen += 1,
                    WatchEvent::Bookmark { .. } => {}
                    other => panic!("unexpected {other:?}"),
                }
            }
        });
        for i in 0..n {
            cacher
                .create(
                    &format!("/registry/pods/ns/p{i}"),
                    pod("ns", &format!("p{i}"), &[]),
                )
                .await
                .unwrap();
        }
        reader.await.unwrap();
        // The slow one got its buffer's worth, then its stream ended.
        let mut got = 0;
        while let Some(ev) = tokio::time::timeout(Duration::from_secs(20), slow.next())
            .await
            .expect("slow watcher was not ended")
        {
            if let WatchEvent::Added(_) = ev {
                got += 1;
            }
        }
        assert!(got < n, "slow watcher got everything ({got})");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn fans_out_to_many_watchers_from_one_storage_watch() {
        let dir = tempfile::tempdir().unwrap();
        let s: Arc<dyn Storage> = Arc::new(EmbeddedStorage::open(dir.path()).unwrap());
        let cacher = Cacher::new(s, config());
        let start = cacher.current_revision().await.unwrap();
        let mut watchers = Vec::new();
        for _ in 0..1000 {
            let w = cacher
                .watch(
                    "/registry/cm/",
                    ListOptions {
                        resource_version: start.to_string(),
                        recursive: true,
                        ..Default::default()
                    },
                )
                .await
                .unwrap();
            watchers.push(w);
        }
        assert_eq!(cacher.watcher_count(), 1000);
        for i in 0..3 {
            cacher
                .create(
                    &format!("/registry/cm/ns/c{i}"),
                    pod("ns", &format!("c{i}"), &[]),
                )
                .await
                .unwrap();
        }
        for w in &mut watchers {
            for i in 0..3 {
                match next_event(w).await {
                    WatchEvent::Added(o) => assert!(o.key.ends_with(&format!("c{i}"))),
                    other => panic!("unexpected {other:?}"),
                }
            }
        }
        drop(watchers);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn periodic_bookmarks_only_to_watchers_that_asked() {
        let dir = tempfile::tempdir().unwrap();
        let s: Arc<dyn Storage> = Arc::new(EmbeddedStorage::open(dir.path()).unwrap());
        let cacher = Cacher::new(s, config());
        let opts = |bookmarks: bool| ListOptions {
            resource_version: "0".into(),
            recursive: true,
            allow_watch_bookmarks: bookmarks,
            ..Default::default()
        };
        let mut with = cacher.watch("/registry/b/", opts(true)).await.unwrap();
        let mut without = cacher.watch("/registry/b/", opts(false)).await.unwrap();
        match next_event(&mut with).await {
            WatchEvent::Bookmark {
                initial_events_end: false,
                ..
            } => {}
            other => panic!("expected a bookmark, got {other:?}"),
        }
        // After at least one bookmark period, the other watcher's next event is the write.
        cacher
            .create("/registry/b/ns/x", pod("ns", "x", &[]))
            .await
            .unwrap();
        match next_event(&mut without).await {
            WatchEvent::Added(o) => assert!(o.key.ends_with("/x")),
            other => panic!("expected ADDED, got {other:?}"),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn watch_from_before_the_window_is_410() {
        let dir = tempfile::tempdir().unwrap();
        let s: Arc<dyn Storage> = Arc::new(EmbeddedStorage::open(dir.path()).unwrap());
        let cacher = Cacher::new(
            s,
            CacherConfig {
                window_capacity: 3,
                ..config()
            },
        );
        let mut last = 0;
        for i in 0..6 {
            last = cacher
                .create(
                    &format!("/registry/x/ns/o{i}"),
                    pod("ns", &format!("o{i}"), &[]),
                )
                .await
                .unwrap()
                .resource_version;
        }
        assert!(cacher.wait_for(last, Duration::from_secs(20)).await);
        let mut w = cacher
            .watch(
                "/registry/x/",
                ListOptions {
                    resource_version: "1".into(),
                    recursive: true,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        match next_event(&mut w).await {
            WatchEvent::Error(e) => {
                assert_eq!(e.code(), StatusCode::GONE);
                assert!(
                    e.0.message.starts_with("too old resource version: 1 ("),
                    "{}",
                    e.0.message
                );
            }
            other => panic!("expected 410, got {other:?}"),
        }
    }
}
