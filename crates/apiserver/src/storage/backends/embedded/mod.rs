//! The embedded backend (the default, under `--data-dir`): an etcd3-like MVCC store on redb.
//!
//! Writes go through one writer thread ([`writer`]) that commits with fsync and then publishes
//! each change on an in-memory broadcast. A watch subscribes to the broadcast *before* reading
//! the backlog from `by_rev`, and skips what it has already delivered, so it sees every revision
//! exactly once; if it falls behind the broadcast it re-reads the backlog.

#[cfg(test)]
mod crash_tests;
pub mod layout;
pub mod writer;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, mpsc as std_mpsc};

use bytes::Bytes;
use redb::{Database, DatabaseError, ReadableDatabase};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use self::layout::{
    BY_REV, HISTORY, LATEST, META, META_COMPACT, Record, db_err, meta_get, version_at,
    version_before,
};
use self::writer::{Expect, Op, Outcome, Request};
use crate::status::ApiError;
use crate::storage::errors::{
    INCONSISTENT_CONTINUE_MESSAGE, LIST_EXPIRED_MESSAGE, WATCH_EXPIRED_MESSAGE,
};
use crate::storage::value::{ResourceTransformer, ResourceTransformers};
use crate::storage::watch::{RawEvent, WATCH_CHANNEL_CAPACITY, key_matches, transform};
use crate::storage::{
    BoxFuture, GetOptions, ListOptions, ListResult, Object, Preconditions, Result,
    SelectionPredicate, Storage, StorageError, UpdateFn, ValidateDeletionFn, WatchEvent,
    WatchStream, check_size, continue_token, finish_page, parse_watch_rv, plan_list,
    recursive_prefix, untransform, untransform_item, versioner,
};

/// Messages on the in-memory change broadcast, in revision order.
#[derive(Clone, Debug)]
pub enum Bus {
    /// A committed change.
    Event(Arc<RawEvent>),
    /// Every change up to this revision has been published.
    Progress(u64),
}

/// State shared by the handle, the writer thread and the watch tasks.
pub struct Shared {
    bus: broadcast::Sender<Bus>,
    publish_lock: Mutex<()>,
    current_rev: AtomicU64,
    compact_rev: AtomicU64,
    healthy: AtomicBool,
    last_error: Mutex<Option<String>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Capacity of the change broadcast; a watcher further behind re-reads history.
const BUS_CAPACITY: usize = 4096;
/// Revisions read per backlog chunk during watch replay.
const REPLAY_CHUNK: usize = 512;
/// The database file inside the data directory.
pub const DB_FILE: &str = "storage.redb";

struct Inner {
    db: Arc<Database>,
    writer: Option<std_mpsc::Sender<Request>>,
    thread: Option<std::thread::JoinHandle<()>>,
    shared: Arc<Shared>,
    path: PathBuf,
}

impl Drop for Inner {
    /// Stops the writer and waits for it, so the database file is closed (and its lock
    /// released) when the last handle goes; watch tasks only hold weak references.
    fn drop(&mut self) {
        self.writer.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The embedded storage backend. Cheap to clone (one shared database). Values pass through
/// the handle's [`ResourceTransformer`] (see [`Storage::for_resource`]); a handle not made for
/// a resource stores them as they are.
#[derive(Clone)]
pub struct EmbeddedStorage {
    inner: Arc<Inner>,
    transformers: Arc<ResourceTransformers>,
    transformer: ResourceTransformer,
}

impl std::fmt::Debug for EmbeddedStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedStorage")
            .field("path", &self.inner.path)
            .finish()
    }
}

/// redb's page cache (its default is 1 GiB). Reads are served by the watch cache, so redb
/// needs little more than the upper B-tree pages a commit walks; pages it drops are read back
/// from the operating system's file cache. With 100k configmaps the default cache held ~85 MiB
/// that the watch cache holds again; at 8 MiB the create rate stays the same.
const REDB_CACHE_BYTES: usize = 8 << 20;

impl EmbeddedStorage {
    /// Opens (creating if needed) the store in `dir`. Only one process may own a data
    /// directory: a second one gets an error saying so, and the files are left untouched.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref();
        crate::util::files::create_private_dir(dir).map_err(|e| {
            StorageError::Internal(format!("creating data directory {}: {e}", dir.display()))
        })?;
        let path = dir.join(DB_FILE);
        // Secrets are stored here: only the owner may read the file.
        private_file(&path)
            .map_err(|e| StorageError::Internal(format!("creating {}: {e}", path.display())))?;
        let db = match Database::builder()
            .set_cache_size(REDB_CACHE_BYTES)
            .create(&path)
        {
            Ok(db) => db,
            Err(DatabaseError::DatabaseAlreadyOpen) => {
                return Err(StorageError::Internal(format!(
                    "data directory {} is already in use by another process (the lock on {} is held)",
                    dir.display(),
                    path.display()
                )));
            }
            Err(e) => {
                return Err(StorageError::Internal(format!(
                    "opening {}: {e}",
                    path.display()
                )));
            }
        };
        let (rev, compact) = {
            let txn = db.begin_write().map_err(db_err)?;
            let (rev, compact) = {
                txn.open_table(HISTORY).map_err(db_err)?;
                txn.open_table(LATEST).map_err(db_err)?;
                txn.open_table(layout::LEASES).map_err(db_err)?;
                let meta = txn.open_table(META).map_err(db_err)?;
                let by_rev = txn.open_table(BY_REV).map_err(db_err)?;
                (
                    layout::current_rev(&by_rev, &meta)?,
                    meta_get(&meta, META_COMPACT)?,
                )
            };
            txn.commit().map_err(db_err)?;
            (rev, compact)
        };
        let db = Arc::new(db);
        let (bus, _) = broadcast::channel(BUS_CAPACITY);
        let shared = Arc::new(Shared {
            bus,
            publish_lock: Mutex::new(()),
            current_rev: AtomicU64::new(rev),
            compact_rev: AtomicU64::new(compact),
            healthy: AtomicBool::new(true),
            last_error: Mutex::new(None),
        });
        let (tx, rx) = std_mpsc::channel();
        let thread_db = db.clone();
        let thread_shared = shared.clone();
        let thread = std::thread::Builder::new()
            .name("storage-writer".into())
            .spawn(move || writer::run(thread_db, thread_shared, rx))
            .map_err(|e| StorageError::Internal(format!("starting the storage writer: {e}")))?;
        Ok(EmbeddedStorage {
            inner: Arc::new(Inner {
                db,
                writer: Some(tx),
                thread: Some(thread),
                shared,
                path,
            }),
            transformers: ResourceTransformers::identity(),
            transformer: ResourceTransformer::identity(),
        })
    }

    /// Uses `transformers` for the handles [`Storage::for_resource`] makes (the encryption
    /// configuration).
    pub fn with_transformers(mut self, transformers: Arc<ResourceTransformers>) -> Self {
        self.transformers = transformers;
        self
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Publishes a progress notification (the current revision) to every watch that asked for
    /// progress, ordered after every change already published.
    pub fn request_progress(&self) {
        request_progress(&self.inner.shared);
    }

    async fn submit(&self, op: Op) -> Result<Outcome> {
        let (reply, rx) = oneshot::channel();
        self.inner
            .writer
            .as_ref()
            .ok_or_else(|| StorageError::Internal("embedded storage is closed".into()))?
            .send(Request { op, reply })
            .map_err(|_| StorageError::Internal("embedded storage writer has stopped".into()))?;
        rx.await
            .map_err(|_| StorageError::Internal("embedded storage writer has stopped".into()))?
    }

    async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Database) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let db = self.inner.db.clone();
        tokio::task::spawn_blocking(move || f(&db))
            .await
            .map_err(StorageError::internal)?
    }

    /// The current stored value of `key` and its revision. Read in place rather than on the
    /// blocking pool: a point lookup in two B-trees, normally from redb's page cache, costs less
    /// than the two thread hops (this is on every update and delete).
    fn read_current(&self, key: &str) -> Result<Option<(Bytes, u64)>> {
        let txn = self.inner.db.begin_read().map_err(db_err)?;
        let latest = txn.open_table(LATEST).map_err(db_err)?;
        let Some(rev) = latest.get(key).map_err(db_err)?.map(|g| g.value()) else {
            return Ok(None);
        };
        let history = txn.open_table(HISTORY).map_err(db_err)?;
        let rec = history
            .get((key, rev))
            .map_err(db_err)?
            .map(|g| Record::decode(g.value()))
            .transpose()?;
        Ok(rec.and_then(|r| r.value).map(|v| (Bytes::from(v), rev)))
    }

    /// [`Self::read_current`] read through the transformer: the plain value, whether it is
    /// stale (to be rewritten even if unchanged), and its revision.
    fn read_current_plain(&self, key: &str) -> Result<Option<(Bytes, bool, u64)>> {
        let Some((raw, rev)) = self.read_current(key)? else {
            return Ok(None);
        };
        let read = untransform(&self.transformer, key, raw)?;
        Ok(Some((read.data, read.stale, rev)))
    }
}

/// Creates `path` empty with mode 0600 if it does not exist (redb initialises an empty file),
/// and narrows an existing file to 0600.
fn private_file(path: &Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        options.mode(0o600);
        let file = options.open(path)?;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
    }
    #[cfg(not(unix))]
    options.open(path).map(drop)
}

fn closed() -> StorageError {
    StorageError::Internal("embedded storage is closed".into())
}

fn request_progress(shared: &Shared) {
    let _publishing = lock(&shared.publish_lock);
    let rev = shared.current_rev.load(Ordering::SeqCst);
    let _ = shared.bus.send(Bus::Progress(rev));
}

fn to_object(key: &str, stored: &[u8], rev: u64) -> Result<Object> {
    Ok(Object {
        key: key.to_string(),
        value: versioner::set_resource_version(stored, rev)?,
        resource_version: rev,
    })
}

/// Called for each live key of a list with its stored value, in order; returns false to stop.
type Visitor<'a> = dyn FnMut(&str, u64, Vec<u8>) -> Result<bool> + 'a;

/// Reads a page at a revision in one snapshot, values read through `transformer`.
fn read_list(
    db: &Database,
    transformer: &ResourceTransformer,
    prefix: &str,
    exact_key: Option<&str>,
    plan: &crate::storage::ListPlan,
    limit: i64,
    pred: &SelectionPredicate,
) -> Result<ListResult> {
    let txn = db.begin_read().map_err(db_err)?;
    let meta = txn.open_table(META).map_err(db_err)?;
    let current = layout::current_rev(&txn.open_table(BY_REV).map_err(db_err)?, &meta)?;
    let compact = meta_get(&meta, META_COMPACT)?;
    if plan.min_rev > current {
        return Err(StorageError::TooLargeResourceVersion {
            requested: plan.min_rev,
            current,
            retry_after_seconds: 0,
        });
    }
    let rev = if plan.with_rev > 0 {
        plan.with_rev
    } else {
        current
    };
    if rev > current {
        return Err(StorageError::TooLargeResourceVersion {
            requested: rev,
            current,
            retry_after_seconds: 0,
        });
    }
    if rev < compact {
        return Err(match &plan.continue_key {
            Some(key) => StorageError::Expired {
                requested: rev,
                current: compact,
                message: INCONSISTENT_CONTINUE_MESSAGE.into(),
                continue_token: continue_token::encode(key, prefix, -1).ok(),
            },
            None => StorageError::Expired {
                requested: rev,
                current: compact,
                message: LIST_EXPIRED_MESSAGE.into(),
                continue_token: None,
            },
        });
    }
    let history = txn.open_table(HISTORY).map_err(db_err)?;
    let start = plan
        .continue_key
        .clone()
        .unwrap_or_else(|| prefix.to_string());
    let limit_n = usize::try_from(limit).unwrap_or(0);
    let mut items = Vec::new();
    let mut has_more = false;
    let mut remaining: i64 = 0;
    let in_range = |k: &str| match exact_key {
        Some(e) => k == e,
        None => k.starts_with(prefix),
    };
    // Visits each live key in range at `rev`, in key order; returns false to stop.
    let mut visit = |key: &str, mod_rev: u64, stored: Vec<u8>| -> Result<bool> {
        if limit_n > 0 && items.len() >= limit_n {
            has_more = true;
            if pred.is_empty() {
                remaining += 1;
                return Ok(true);
            }
            return Ok(false);
        }
        let value = untransform_item(transformer, key, Bytes::from(stored))?;
        if pred.matches(&value) {
            items.push(to_object(key, &value, mod_rev)?);
        }
        Ok(true)
    };
    if rev == current {
        let latest = txn.open_table(LATEST).map_err(db_err)?;
        for entry in latest.range(start.as_str()..).map_err(db_err)? {
            let (k, v) = entry.map_err(db_err)?;
            let key = k.value();
            if !in_range(key) {
                break;
            }
            let mod_rev = v.value();
            let Some(rec) = history.get((key, mod_rev)).map_err(db_err)? else {
                continue;
            };
            let rec = Record::decode(rec.value())?;
            if let Some(value) = rec.value
                && !visit(key, mod_rev, value)?
            {
                break;
            }
        }
    } else {
        let mut pending: Option<(String, u64, Record)> = None;
        let flush = |p: Option<(String, u64, Record)>, visit: &mut Visitor<'_>| -> Result<bool> {
            match p {
                Some((key, mod_rev, Record { value: Some(v), .. })) => visit(&key, mod_rev, v),
                _ => Ok(true),
            }
        };
        let mut stopped = false;
        for entry in history.range((start.as_str(), 0u64)..).map_err(db_err)? {
            let (k, v) = entry.map_err(db_err)?;
            let (key, r) = k.value();
            if !in_range(key) {
                break;
            }
            if pending.as_ref().is_some_and(|(pk, _, _)| pk != key)
                && !flush(pending.take(), &mut visit)?
            {
                stopped = true;
                break;
            }
            if r <= rev {
                pending = Some((key.to_string(), r, Record::decode(v.value())?));
            }
        }
        if !stopped {
            flush(pending.take(), &mut visit)?;
        }
    }
    let total_after = if pred.is_empty() {
        Some(remaining)
    } else {
        None
    };
    finish_page(prefix, items, rev, limit, has_more, total_after)
}

/// Reads the changes after `after` (at most [`REPLAY_CHUNK`] revisions); returns them and the
/// last revision scanned (`after` itself when caught up).
fn read_backlog(
    db: &Database,
    after: u64,
    watched: &str,
    recursive: bool,
) -> Result<(Vec<RawEvent>, u64, bool)> {
    let txn = db.begin_read().map_err(db_err)?;
    let meta = txn.open_table(META).map_err(db_err)?;
    let current = layout::current_rev(&txn.open_table(BY_REV).map_err(db_err)?, &meta)?;
    let compact = meta_get(&meta, META_COMPACT)?;
    if after + 1 < compact {
        return Err(StorageError::Expired {
            requested: after,
            current: compact,
            message: WATCH_EXPIRED_MESSAGE.into(),
            continue_token: None,
        });
    }
    let by_rev = txn.open_table(BY_REV).map_err(db_err)?;
    let history = txn.open_table(HISTORY).map_err(db_err)?;
    let mut events = Vec::new();
    let mut last = after;
    let mut scanned = 0;
    for entry in by_rev.range((after + 1)..=current).map_err(db_err)? {
        let (r, k) = entry.map_err(db_err)?;
        let (rev, key) = (r.value(), k.value());
        last = rev;
        scanned += 1;
        if key_matches(watched, recursive, key) {
            let value = version_at(&history, key, rev)?
                .filter(|(r, _)| *r == rev)
                .and_then(|(_, rec)| rec.value)
                .map(Bytes::from);
            let prev = version_before(&history, key, rev)?
                .and_then(|(_, rec)| rec.value)
                .map(Bytes::from);
            events.push(RawEvent {
                key: key.to_string(),
                rev,
                value,
                prev,
            });
        }
        if scanned >= REPLAY_CHUNK {
            return Ok((events, last, false));
        }
    }
    Ok((events, current.max(last), true))
}

struct WatchTask {
    db: std::sync::Weak<Database>,
    transformer: ResourceTransformer,
    shared: Arc<Shared>,
    watched: String,
    recursive: bool,
    opts: ListOptions,
    tx: mpsc::Sender<WatchEvent>,
}

impl WatchTask {
    async fn send(&self, ev: WatchEvent) -> bool {
        self.tx.send(ev).await.is_ok()
    }

    async fn send_raw(&self, ev: &RawEvent) -> bool {
        if !key_matches(&self.watched, self.recursive, &ev.key) {
            return true;
        }
        let ev = match ev.untransformed(&self.transformer) {
            Ok(ev) => ev,
            Err(err) => {
                let _ = self.send(WatchEvent::Error(err)).await;
                return false;
            }
        };
        match transform(&ev, &self.opts.predicate) {
            None => true,
            Some(Ok(e)) => self.send(e).await,
            Some(Err(err)) => {
                let _ = self.send(WatchEvent::Error(err)).await;
                false
            }
        }
    }

    async fn fail(&self, err: StorageError) {
        let api: ApiError = err.to_api_error(crate::storage::Operation::Watch, "", "", "");
        let _ = self.send(WatchEvent::Error(api)).await;
    }

    /// Delivers the backlog after `last`; returns the new `last`, or `None` when the watch ended.
    async fn replay(&self, mut last: u64) -> Option<u64> {
        loop {
            let db = self.db.clone();
            let watched = self.watched.clone();
            let recursive = self.recursive;
            let res = tokio::task::spawn_blocking(move || {
                let db = db.upgrade().ok_or_else(closed)?;
                read_backlog(&db, last, &watched, recursive)
            })
            .await
            .map_err(StorageError::internal)
            .and_then(|r| r);
            let (events, new_last, done) = match res {
                Ok(v) => v,
                Err(e) => {
                    self.fail(e).await;
                    return None;
                }
            };
            for ev in &events {
                if !self.send_raw(ev).await {
                    return None;
                }
            }
            last = new_last;
            if done {
                return Some(last);
            }
        }
    }

    async fn initial(&self) -> Option<u64> {
        let db = self.db.clone();
        let watched = self.watched.clone();
        let recursive = self.recursive;
        let pred = self.opts.predicate.clone();
        let transformer = self.transformer.clone();
        let res = tokio::task::spawn_blocking(move || {
            let db = db.upgrade().ok_or_else(closed)?;
            let plan = crate::storage::ListPlan {
                with_rev: 0,
                continue_key: None,
                min_rev: 0,
            };
            let exact = (!recursive).then_some(watched.as_str());
            read_list(&db, &transformer, &watched, exact, &plan, 0, &pred)
        })
        .await
        .map_err(StorageError::internal)
        .and_then(|r| r);
        let list = match res {
            Ok(l) => l,
            Err(e) => {
                self.fail(e).await;
                return None;
            }
        };
        for item in list.items {
            if !self.send(WatchEvent::Added(item)).await {
                return None;
            }
        }
        if self.opts.send_initial_events == Some(true) && self.opts.allow_watch_bookmarks {
            let ok = self
                .send(WatchEvent::Bookmark {
                    resource_version: list.resource_version,
                    initial_events_end: true,
                })
                .await;
            if !ok {
                return None;
            }
        }
        Some(list.resource_version)
    }

    async fn run(self, start: u64, initial: bool, stop: CancellationToken) {
        // Subscribe first, so nothing committed after the backlog read is missed.
        let mut bus = self.shared.bus.subscribe();
        let mut last = start;
        if initial {
            match self.initial().await {
                Some(r) => last = r,
                None => return,
            }
        }
        match self.replay(last).await {
            Some(r) => last = r,
            None => return,
        }
        loop {
            let msg = tokio::select! {
                _ = stop.cancelled() => return,
                _ = self.tx.closed() => return,
                msg = bus.recv() => msg,
            };
            match msg {
                Ok(Bus::Event(ev)) => {
                    if ev.rev <= last {
                        continue;
                    }
                    if ev.rev > last + 1 {
                        // Missed something: the backlog has it (committed before published).
                        match self.replay(last).await {
                            Some(r) => last = r,
                            None => return,
                        }
                        if ev.rev <= last {
                            continue;
                        }
                    }
                    if !self.send_raw(&ev).await {
                        return;
                    }
                    last = ev.rev;
                }
                Ok(Bus::Progress(rev)) => {
                    if rev > last {
                        match self.replay(last).await {
                            Some(r) => last = r,
                            None => return,
                        }
                    }
                    if self.opts.progress_notify {
                        let ok = self
                            .send(WatchEvent::Bookmark {
                                resource_version: last.max(rev),
                                initial_events_end: false,
                            })
                            .await;
                        if !ok {
                            return;
                        }
                    }
                    last = last.max(rev);
                }
                Err(broadcast::error::RecvError::Lagged(_)) => match self.replay(last).await {
                    Some(r) => last = r,
                    None => return,
                },
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }
}

impl Storage for EmbeddedStorage {
    fn create<'a>(&'a self, key: &'a str, obj: Bytes) -> BoxFuture<'a, Result<Object>> {
        Box::pin(async move {
            if versioner::object_resource_version(&obj)? != 0 {
                return Err(StorageError::Internal(
                    "resourceVersion should not be set on objects to be created".into(),
                ));
            }
            let stored = versioner::strip_resource_version(&obj)?;
            let value = crate::storage::transform(&self.transformer, key, stored.clone())?;
            check_size(key, &value)?;
            let out = self
                .submit(Op::Put {
                    key: key.to_string(),
                    value,
                    expect: Expect::Absent,
                    ttl: None,
                })
                .await?;
            to_object(key, &stored, out.rev)
        })
    }

    fn get<'a>(&'a self, key: &'a str, opts: GetOptions) -> BoxFuture<'a, Result<Option<Object>>> {
        Box::pin(async move {
            let min = versioner::parse_resource_version(&opts.resource_version)?;
            let k = key.to_string();
            let transformer = self.transformer.clone();
            let found = self
                .read(move |db| {
                    let txn = db.begin_read().map_err(db_err)?;
                    let meta = txn.open_table(META).map_err(db_err)?;
                    let current =
                        layout::current_rev(&txn.open_table(BY_REV).map_err(db_err)?, &meta)?;
                    if min > current {
                        return Err(StorageError::TooLargeResourceVersion {
                            requested: min,
                            current,
                            retry_after_seconds: 0,
                        });
                    }
                    let latest = txn.open_table(LATEST).map_err(db_err)?;
                    let Some(rev) = latest.get(k.as_str()).map_err(db_err)?.map(|g| g.value())
                    else {
                        return Ok(Err(current));
                    };
                    let history = txn.open_table(HISTORY).map_err(db_err)?;
                    match history.get((k.as_str(), rev)).map_err(db_err)? {
                        Some(g) => match Record::decode(g.value())?.value {
                            Some(v) => {
                                let plain = untransform(&transformer, &k, Bytes::from(v))?;
                                Ok(Ok(to_object(&k, &plain.data, rev)?))
                            }
                            None => Ok(Err(current)),
                        },
                        None => Ok(Err(current)),
                    }
                })
                .await?;
            match found {
                Ok(obj) => Ok(Some(obj)),
                Err(_) if opts.ignore_not_found => Ok(None),
                Err(current) => Err(StorageError::KeyNotFound {
                    key: key.to_string(),
                    resource_version: current,
                }),
            }
        })
    }

    fn list<'a>(&'a self, key: &'a str, opts: ListOptions) -> BoxFuture<'a, Result<ListResult>> {
        Box::pin(async move {
            let (prefix, exact) = if opts.recursive {
                (recursive_prefix(key), None)
            } else {
                (key.to_string(), Some(key.to_string()))
            };
            let plan = plan_list(&prefix, &opts)?;
            let pred = opts.predicate.clone();
            let limit = if opts.recursive { opts.limit } else { 0 };
            let transformer = self.transformer.clone();
            self.read(move |db| {
                read_list(
                    db,
                    &transformer,
                    &prefix,
                    exact.as_deref(),
                    &plan,
                    limit,
                    &pred,
                )
            })
            .await
        })
    }

    fn guaranteed_update<'a>(
        &'a self,
        key: &'a str,
        ignore_not_found: bool,
        preconditions: Option<Preconditions>,
        try_update: &'a mut UpdateFn<'a>,
    ) -> BoxFuture<'a, Result<Object>> {
        Box::pin(async move {
            loop {
                let current = self.read_current_plain(key)?;
                let cur_obj = match &current {
                    Some((v, _, rev)) => Some(to_object(key, v, *rev)?),
                    None if ignore_not_found => None,
                    None => {
                        return Err(StorageError::KeyNotFound {
                            key: key.to_string(),
                            resource_version: 0,
                        });
                    }
                };
                if let (Some(p), Some(obj)) = (&preconditions, &cur_obj) {
                    p.check(key, obj)?;
                }
                let new = try_update(cur_obj.as_ref())?;
                let stored = versioner::strip_resource_version(&new)?;
                if let (Some((old, stale, _)), Some(obj)) = (&current, &cur_obj)
                    && !*stale
                    && *old == stored
                {
                    // Nothing changed: no write, no new revision (as upstream). A value not
                    // written by the current write key is rewritten all the same.
                    return Ok(obj.clone());
                }
                let value = crate::storage::transform(&self.transformer, key, stored.clone())?;
                check_size(key, &value)?;
                let expect = match &current {
                    Some((_, _, rev)) => Expect::Rev(*rev),
                    None => Expect::AbsentOrConflict,
                };
                match self
                    .submit(Op::Put {
                        key: key.to_string(),
                        value,
                        expect,
                        ttl: None,
                    })
                    .await
                {
                    Ok(out) => return to_object(key, &stored, out.rev),
                    Err(StorageError::Conflict { .. }) => continue,
                    Err(e) => return Err(e),
                }
            }
        })
    }

    fn guaranteed_update_with_ttl<'a>(
        &'a self,
        key: &'a str,
        ttl: std::time::Duration,
        try_update: &'a mut UpdateFn<'a>,
    ) -> BoxFuture<'a, Result<Object>> {
        Box::pin(async move {
            loop {
                let current = self.read_current_plain(key)?;
                let cur_obj = current
                    .as_ref()
                    .map(|(v, _, rev)| to_object(key, v, *rev))
                    .transpose()?;
                let new = try_update(cur_obj.as_ref())?;
                let stored = versioner::strip_resource_version(&new)?;
                let value = crate::storage::transform(&self.transformer, key, stored.clone())?;
                check_size(key, &value)?;
                let expect = match &current {
                    Some((_, _, rev)) => Expect::Rev(*rev),
                    None => Expect::AbsentOrConflict,
                };
                match self
                    .submit(Op::Put {
                        key: key.to_string(),
                        value,
                        expect,
                        ttl: Some(ttl),
                    })
                    .await
                {
                    Ok(out) => return to_object(key, &stored, out.rev),
                    Err(StorageError::Conflict { .. }) => continue,
                    Err(e) => return Err(e),
                }
            }
        })
    }

    fn delete<'a>(
        &'a self,
        key: &'a str,
        preconditions: Option<Preconditions>,
        validate: Option<&'a ValidateDeletionFn<'a>>,
    ) -> BoxFuture<'a, Result<Object>> {
        Box::pin(async move {
            loop {
                let Some((value, _, rev)) = self.read_current_plain(key)? else {
                    return Err(StorageError::KeyNotFound {
                        key: key.to_string(),
                        resource_version: 0,
                    });
                };
                let obj = to_object(key, &value, rev)?;
                if let Some(p) = &preconditions {
                    p.check(key, &obj)?;
                }
                if let Some(v) = validate {
                    v(&obj)?;
                }
                match self
                    .submit(Op::Delete {
                        key: key.to_string(),
                        expect_rev: rev,
                    })
                    .await
                {
                    Ok(out) => return to_object(key, &value, out.rev),
                    Err(StorageError::Conflict { .. }) => continue,
                    Err(e) => return Err(e),
                }
            }
        })
    }

    fn watch<'a>(&'a self, key: &'a str, opts: ListOptions) -> BoxFuture<'a, Result<WatchStream>> {
        Box::pin(async move {
            let rv = parse_watch_rv(&opts.resource_version)?;
            let initial = match opts.send_initial_events {
                None => rv == 0,
                Some(v) => v,
            };
            let watched = if opts.recursive {
                recursive_prefix(key)
            } else {
                key.to_string()
            };
            let start = if rv == 0 && !initial {
                self.current_revision().await?
            } else {
                rv
            };
            let (tx, rx) = mpsc::channel(WATCH_CHANNEL_CAPACITY);
            let stop = CancellationToken::new();
            let task = WatchTask {
                db: Arc::downgrade(&self.inner.db),
                transformer: self.transformer.clone(),
                shared: self.inner.shared.clone(),
                watched,
                recursive: opts.recursive,
                opts,
                tx,
            };
            tokio::spawn(task.run(start, initial, stop.clone()));
            let shared = self.inner.shared.clone();
            Ok(WatchStream::new(rx, Some(stop))
                .with_progress(Arc::new(move || request_progress(&shared))))
        })
    }

    fn count<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<i64>> {
        Box::pin(async move {
            let prefix = recursive_prefix(key);
            self.read(move |db| {
                let txn = db.begin_read().map_err(db_err)?;
                let latest = txn.open_table(LATEST).map_err(db_err)?;
                let mut n = 0i64;
                for entry in latest.range(prefix.as_str()..).map_err(db_err)? {
                    let (k, _) = entry.map_err(db_err)?;
                    if !k.value().starts_with(prefix.as_str()) {
                        break;
                    }
                    n += 1;
                }
                Ok(n)
            })
            .await
        })
    }

    fn current_revision(&self) -> BoxFuture<'_, Result<u64>> {
        Box::pin(async move {
            self.read(|db| {
                let txn = db.begin_read().map_err(db_err)?;
                let meta = txn.open_table(META).map_err(db_err)?;
                layout::current_rev(&txn.open_table(BY_REV).map_err(db_err)?, &meta)
            })
            .await
        })
    }

    fn compact(&self, revision: u64) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            self.submit(Op::Compact { rev: revision }).await?;
            Ok(())
        })
    }

    fn compacted_revision(&self) -> u64 {
        self.inner.shared.compact_rev.load(Ordering::SeqCst)
    }

    fn reliable_progress(&self) -> bool {
        // Progress is published on the same ordered broadcast as the changes.
        true
    }

    fn for_resource(&self, group: &str, resource: &str) -> Option<Arc<dyn Storage>> {
        Some(Arc::new(EmbeddedStorage {
            inner: self.inner.clone(),
            transformers: self.transformers.clone(),
            transformer: self.transformers.for_resource(group, resource),
        }))
    }

    fn health(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            if !self.inner.shared.healthy.load(Ordering::SeqCst) {
                let err = lock(&self.inner.shared.last_error).clone();
                return Err(err.unwrap_or_else(|| "embedded storage failed".into()));
            }
            self.current_revision()
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::testing::Caps;

    async fn store() -> (Arc<dyn Storage>, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let s = EmbeddedStorage::open(dir.path()).unwrap();
        (Arc::new(s), dir)
    }

    crate::storage_conformance!(
        store,
        Caps {
            watch_compaction_410: true
        }
    );
    crate::storage_conformance!(@tests store, Caps { watch_compaction_410: true }, ttl);

    /// A key's time to live is stored with it: after a restart the key still expires.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn ttl_keys_expire_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let key = "/registry/masterleases/10.0.0.1";
        {
            let s = EmbeddedStorage::open(dir.path()).unwrap();
            let mut f = |_: Option<&Object>| Ok(Bytes::from_static(br#"{"generation":1}"#));
            s.guaranteed_update_with_ttl(key, std::time::Duration::from_secs(2), &mut f)
                .await
                .unwrap();
        }
        let s = EmbeddedStorage::open(dir.path()).unwrap();
        let found = s.get(key, GetOptions::default()).await.unwrap();
        assert!(found.is_some());
        let mut w = s
            .watch(
                key,
                ListOptions {
                    resource_version: found.unwrap().resource_version.to_string(),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        match crate::storage::testing::next_change(&mut w).await {
            WatchEvent::Deleted(obj) => assert_eq!(obj.key, key),
            other => panic!("expected the key's deletion, got {other:?}"),
        }
    }

    /// The whole contract again with every value encrypted (aescbc, a key rotation's worth
    /// of providers): the backend transforms on every path, watches and lists included.
    mod encrypted {
        use super::*;

        async fn store() -> (Arc<dyn Storage>, tempfile::TempDir) {
            let dir = tempfile::tempdir().unwrap();
            let s = EmbeddedStorage::open(dir.path())
                .unwrap()
                .with_transformers(crate::storage::value::testing::rotating_aescbc());
            (s.for_resource("", "widgets").unwrap(), dir)
        }

        crate::storage_conformance!(
            store,
            Caps {
                watch_compaction_410: true
            }
        );

        #[tokio::test]
        async fn values_are_stored_encrypted_and_stale_ones_rewritten_by_a_no_op_update() {
            use crate::storage::value::testing::aescbc_set;
            let dir = tempfile::tempdir().unwrap();
            let all = ResourceTransformers::new(aescbc_set(&["key1"]));
            let base = EmbeddedStorage::open(dir.path())
                .unwrap()
                .with_transformers(all.clone());
            let s = EmbeddedStorage {
                transformer: all.for_resource("", "widgets"),
                ..base.clone()
            };
            let key = "/registry/widgets/ns/a";
            let created = s
                .create(
                    key,
                    Bytes::from_static(br#"{"metadata":{"name":"a"},"v":1}"#),
                )
                .await
                .unwrap();
            let (raw, _) = s.read_current(key).unwrap().unwrap();
            assert!(raw.starts_with(b"k8s:enc:aescbc:v1:key1:"));
            assert!(!String::from_utf8_lossy(&raw).contains("\"v\""));
            // Not this resource: stored as it is.
            let plain = EmbeddedStorage {
                transformer: all.for_resource("", "others"),
                ..base
            };
            plain
                .create(
                    "/registry/others/a",
                    Bytes::from_static(br#"{"metadata":{"name":"a"}}"#),
                )
                .await
                .unwrap();
            assert!(
                plain
                    .read_current("/registry/others/a")
                    .unwrap()
                    .unwrap()
                    .0
                    .starts_with(b"{")
            );

            // key2 now writes: an update that changes nothing still rewrites the stale value.
            all.set(aescbc_set(&["key2", "key1"]));
            let mut same =
                |cur: Option<&Object>| -> Result<Bytes> { Ok(cur.unwrap().value.clone()) };
            let updated = s
                .guaranteed_update(key, false, None, &mut same)
                .await
                .unwrap();
            assert!(updated.resource_version > created.resource_version);
            let (raw, _) = s.read_current(key).unwrap().unwrap();
            assert!(raw.starts_with(b"k8s:enc:aescbc:v1:key2:"));
            let mut same =
                |cur: Option<&Object>| -> Result<Bytes> { Ok(cur.unwrap().value.clone()) };
            let again = s
                .guaranteed_update(key, false, None, &mut same)
                .await
                .unwrap();
            assert_eq!(again.resource_version, updated.resource_version, "no write");

            // Without the key that wrote it, the value is an internal error naming the cause.
            all.set(aescbc_set(&["key3"]));
            let err = s.get(key, GetOptions::default()).await.unwrap_err();
            assert_eq!(
                err.to_string(),
                "no matching key was found for the provided AES transformer"
            );
            let err = s
                .list(
                    "/registry/widgets",
                    ListOptions {
                        recursive: true,
                        ..Default::default()
                    },
                )
                .await
                .unwrap_err();
            assert_eq!(
                err.to_string(),
                "unable to transform key \"/registry/widgets/ns/a\": no matching key was found for the provided AES transformer"
            );
        }
    }

    #[tokio::test]
    async fn second_open_of_a_data_dir_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let first = EmbeddedStorage::open(dir.path()).unwrap();
        let err = EmbeddedStorage::open(dir.path()).unwrap_err();
        assert!(err.to_string().contains("already in use"), "{err}");
        first
            .create(
                "/registry/x/a",
                Bytes::from_static(br#"{"metadata":{"name":"a"}}"#),
            )
            .await
            .unwrap();
        drop(first);
        // Reopening after close works and keeps data and the revision counter.
        let again = EmbeddedStorage::open(dir.path()).unwrap();
        assert_eq!(again.current_revision().await.unwrap(), 2);
        let b = again
            .create(
                "/registry/x/b",
                Bytes::from_static(br#"{"metadata":{"name":"b"}}"#),
            )
            .await
            .unwrap();
        assert_eq!(b.resource_version, 3);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn watch_survives_falling_behind_the_broadcast() {
        let (s, _dir) = store().await;
        let mut w = s
            .watch(
                "/registry/lag/",
                ListOptions {
                    resource_version: "0".into(),
                    recursive: true,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        // More concurrent writes than the broadcast holds, while nobody reads the watch.
        let n = BUS_CAPACITY + 500;
        let mut handles = Vec::new();
        for t in 0..4 {
            let s = s.clone();
            handles.push(tokio::spawn(async move {
                for i in (t..n).step_by(4) {
                    let name = format!("o{i:05}");
                    let obj = format!(r#"{{"metadata":{{"name":"{name}"}}}}"#);
                    s.create(&format!("/registry/lag/{name}"), Bytes::from(obj))
                        .await
                        .unwrap();
                }
            }));
        }
        for h in handles {
            h.await.unwrap();
        }
        // The empty store is at revision 1, so the first write is 2.
        let mut last = 1;
        for _ in 0..n {
            let ev = crate::storage::testing::next_event(&mut w).await;
            let rv = ev.resource_version();
            assert!(rv == last + 1, "gap or duplicate: {last} then {rv}");
            last = rv;
        }
    }
}
