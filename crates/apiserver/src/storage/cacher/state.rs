//! The watch cache's state: the objects at the cache's revision, the window of recent events
//! and the registered watchers.

use std::borrow::Borrow;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, OnceLock};

use tokio::sync::mpsc;

use crate::storage::selection::{GetAttrs, PackedAttrs, SelectionPredicate};
use crate::storage::watch::{EventBatch, key_matches};
use crate::storage::{
    ListOptions, ListResult, Object, Result, WatchEvent, finish_page, recursive_prefix, versioner,
};

/// An object with its selector attributes, extracted once.
pub struct CachedObject {
    /// The object (resourceVersion set).
    pub object: Object,
    labels: PackedAttrs,
    fields: PackedAttrs,
}

impl CachedObject {
    fn new(object: Object, attrs: &GetAttrs) -> Self {
        // Objects whose attributes cannot be read match only the empty selector.
        let (labels, fields) = attrs(&object.value).unwrap_or_default();
        CachedObject {
            object,
            labels: PackedAttrs::from(&labels),
            fields: PackedAttrs::from(&fields),
        }
    }

    fn matches(&self, pred: &SelectionPredicate) -> bool {
        pred.is_empty() || pred.matches_attrs(&self.labels, &self.fields)
    }
}

/// An object of the store, ordered and found by its key (which only the object holds).
#[derive(Clone)]
pub struct Keyed(pub Arc<CachedObject>);

impl Keyed {
    fn key(&self) -> &str {
        &self.0.object.key
    }
}

impl Borrow<str> for Keyed {
    fn borrow(&self) -> &str {
        self.key()
    }
}

impl PartialEq for Keyed {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Keyed {}

impl PartialOrd for Keyed {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Keyed {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(other.key())
    }
}

/// One change in the window.
pub struct CachedEvent {
    key: String,
    rev: u64,
    cur: Option<Arc<CachedObject>>,
    prev: Option<Arc<CachedObject>>,
    /// The previous object at this event's revision (what DELETED carries), made on demand.
    prev_at_rev: OnceLock<Object>,
}

impl CachedEvent {
    fn prev_object(&self) -> Option<Object> {
        let prev = self.prev.as_ref()?;
        Some(
            self.prev_at_rev
                .get_or_init(|| {
                    let value = versioner::set_resource_version(&prev.object.value, self.rev)
                        .unwrap_or_else(|_| prev.object.value.clone());
                    Object {
                        key: prev.object.key.clone(),
                        value,
                        resource_version: self.rev,
                    }
                })
                .clone(),
        )
    }

    /// What a watcher with `pred` sees of this event (upstream `watchCacheEvent` filtering).
    fn for_watcher(&self, pred: &SelectionPredicate) -> Option<WatchEvent> {
        let cur_match = self.cur.as_ref().is_some_and(|c| c.matches(pred));
        let prev_match = self.prev.as_ref().is_some_and(|p| p.matches(pred));
        match (&self.cur, cur_match, prev_match) {
            (Some(c), true, false) => Some(WatchEvent::Added(c.object.clone())),
            (Some(c), true, true) => Some(WatchEvent::Modified(c.object.clone())),
            (_, false, true) => self.prev_object().map(WatchEvent::Deleted),
            _ => None,
        }
    }
}

/// A registered watcher.
pub struct Watcher {
    /// The watched key (a prefix when `recursive`).
    pub key: String,
    /// Prefix watch.
    pub recursive: bool,
    /// Its selectors.
    pub predicate: SelectionPredicate,
    /// It asked for bookmarks.
    pub bookmarks: bool,
    /// It started from this revision: events and bookmarks at or before it are not sent
    /// (upstream's cache watcher skips them the same way, so a watch from a revision the cache
    /// has not reached yet starts at once).
    pub from: u64,
    /// Its buffer (of batches).
    pub tx: mpsc::Sender<EventBatch>,
}

/// The cache proper.
pub struct State {
    /// A complete list has been loaded.
    pub ready: bool,
    /// The revision the cache is at: every event up to it has been applied, as far as the
    /// storage's progress notifications tell.
    pub rev: u64,
    /// The newest revision of an event or list the storage delivered: its watch resumes after
    /// it (not after `rev`, which a progress notification may have moved past events still in
    /// flight on etcd 3.4).
    pub delivered: u64,
    /// The objects, by key.
    pub store: BTreeSet<Keyed>,
    window: VecDeque<Arc<CachedEvent>>,
    capacity: usize,
    /// A watch from a revision at or after this one can be served from the window.
    oldest: u64,
    /// Registered watchers.
    pub watchers: HashMap<u64, Watcher>,
    /// Whether the storage's progress notifications can be trusted to follow every event up
    /// to their revision (not etcd 3.4's).
    progress_reliable: bool,
}

impl State {
    /// An empty, not ready cache over a storage whose progress notifications are
    /// `progress_reliable` or not.
    pub fn new(capacity: usize, progress_reliable: bool) -> Self {
        State {
            progress_reliable,
            ready: false,
            rev: 0,
            delivered: 0,
            store: BTreeSet::new(),
            window: VecDeque::new(),
            capacity: capacity.max(1),
            oldest: 0,
            watchers: HashMap::new(),
        }
    }

    /// Loads a complete list; ends every watcher (their continuity is lost, as upstream).
    pub fn replace(&mut self, list: ListResult, attrs: &GetAttrs) {
        self.store = list
            .items
            .into_iter()
            .map(|o| Keyed(Arc::new(CachedObject::new(o, attrs))))
            .collect();
        self.rev = list.resource_version;
        self.delivered = self.rev;
        self.window.clear();
        self.oldest = self.rev;
        self.watchers.clear();
        self.ready = true;
    }

    /// Applies a batch of events from the storage watch, then fans them out with one send per
    /// watcher.
    pub fn apply_batch(&mut self, events: Vec<WatchEvent>, attrs: &GetAttrs) {
        let applied: Vec<Arc<CachedEvent>> = events
            .into_iter()
            .filter_map(|ev| self.apply(ev, attrs))
            .collect();
        self.dispatch(&applied);
    }

    /// Applies one event to the store and the window.
    fn apply(&mut self, ev: WatchEvent, attrs: &GetAttrs) -> Option<Arc<CachedEvent>> {
        if let WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) = &ev {
            if o.resource_version <= self.delivered {
                // Already reflected (a duplicate after a reconnect): applying it again would
                // move the store backwards. The storage delivers in revision order, so an
                // event after `delivered` is new even when a progress notification moved
                // `rev` past it.
                return None;
            }
            self.delivered = self.delivered.max(o.resource_version);
        }
        let (key, rev, cur, prev) = match ev {
            WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                let (key, rev) = (o.key.clone(), o.resource_version);
                let cur = Arc::new(CachedObject::new(o, attrs));
                let prev = self.store.replace(Keyed(cur.clone())).map(|k| k.0);
                (key, rev, Some(cur), prev)
            }
            WatchEvent::Deleted(o) => {
                let (key, rev) = (o.key.clone(), o.resource_version);
                let prev = match self.store.take(key.as_str()) {
                    Some(k) => k.0,
                    // A deletion without its object (the storage left previous values out)
                    // of a key the cache does not hold: nothing to remove or announce.
                    None if o.value.is_empty() => return None,
                    None => Arc::new(CachedObject::new(o, attrs)),
                };
                (key, rev, None, Some(prev))
            }
            WatchEvent::Bookmark {
                resource_version, ..
            } => {
                self.rev = self.rev.max(resource_version);
                return None;
            }
            WatchEvent::Error(_) => return None,
        };
        // A late event (older than a progress notification etcd 3.4 sent ahead of it) is
        // applied without moving the revision back.
        self.rev = self.rev.max(rev);
        let event = Arc::new(CachedEvent {
            key,
            rev,
            cur,
            prev,
            prev_at_rev: OnceLock::new(),
        });
        self.window.push_back(event.clone());
        while self.window.len() > self.capacity {
            if let Some(old) = self.window.pop_front() {
                self.oldest = old.rev;
            }
        }
        Some(event)
    }

    fn dispatch(&mut self, events: &[Arc<CachedEvent>]) {
        if events.is_empty() || self.watchers.is_empty() {
            return;
        }
        // The batch as a watcher without selectors sees it: shared by every such watcher whose
        // key range holds all the batch's keys (the common case: one resource, one prefix).
        let everything = SelectionPredicate::everything();
        let shared: EventBatch = Arc::new(
            events
                .iter()
                .filter_map(|e| e.for_watcher(&everything))
                .collect(),
        );
        let mut ended = Vec::new();
        for (id, w) in &self.watchers {
            let covers_all = w.predicate.is_empty()
                && events
                    .iter()
                    .all(|e| e.rev > w.from && key_matches(&w.key, w.recursive, &e.key));
            let batch = if covers_all {
                shared.clone()
            } else {
                let own: Vec<WatchEvent> = events
                    .iter()
                    .filter(|e| e.rev > w.from && key_matches(&w.key, w.recursive, &e.key))
                    .filter_map(|e| e.for_watcher(&w.predicate))
                    .collect();
                if own.is_empty() {
                    continue;
                }
                Arc::new(own)
            };
            if w.tx.try_send(batch).is_err() {
                // Full (too slow) or gone: end it; its client re-watches or re-lists.
                ended.push(*id);
            }
        }
        for id in ended {
            self.watchers.remove(&id);
        }
    }

    /// The revision the cache's contents are a snapshot at, which its answers carry (list
    /// revisions, bookmarks): `rev`, or with unreliable progress notifications the last
    /// delivered event's — a client resuming from a revision a progress notification reported
    /// could miss an event still in flight.
    pub fn served_rev(&self) -> u64 {
        if self.progress_reliable {
            self.rev
        } else {
            self.delivered
        }
    }

    /// Sends a bookmark at the cache's revision to watchers that asked, pruning dead ones.
    pub fn send_bookmarks(&mut self) {
        let served = self.served_rev();
        let bookmark: EventBatch = Arc::new(vec![WatchEvent::Bookmark {
            resource_version: served,
            initial_events_end: false,
        }]);
        self.watchers.retain(|_, w| {
            if w.tx.is_closed() {
                return false;
            }
            if w.bookmarks && served > w.from {
                let _ = w.tx.try_send(bookmark.clone());
            }
            true
        });
    }

    /// The current objects under the watched key as ADDED events.
    pub fn initial_events(
        &self,
        key: &str,
        recursive: bool,
        pred: &SelectionPredicate,
        out: &mut VecDeque<WatchEvent>,
    ) {
        for o in self
            .store
            .range::<str, _>((Bound::Included(key), Bound::Unbounded))
        {
            if !key_matches(key, recursive, o.key()) {
                break;
            }
            if o.0.matches(pred) {
                out.push_back(WatchEvent::Added(o.0.object.clone()));
            }
        }
    }

    /// The window's events after `rev` for a watcher; `Err(oldest)` when they are gone.
    pub fn events_since(
        &self,
        rev: u64,
        key: &str,
        recursive: bool,
        pred: &SelectionPredicate,
        out: &mut VecDeque<WatchEvent>,
    ) -> Result<(), u64> {
        if rev < self.oldest {
            return Err(self.oldest);
        }
        for ev in &self.window {
            if ev.rev <= rev || !key_matches(key, recursive, &ev.key) {
                continue;
            }
            if let Some(e) = ev.for_watcher(pred) {
                out.push_back(e);
            }
        }
        Ok(())
    }

    /// A list served from memory at the cache's revision.
    pub fn list(&self, key: &str, opts: &ListOptions) -> Result<ListResult> {
        let (prefix, exact) = if opts.recursive {
            (recursive_prefix(key), false)
        } else {
            (key.to_string(), true)
        };
        let limit = if opts.recursive { opts.limit } else { 0 };
        let limit_n = usize::try_from(limit).unwrap_or(0);
        let pred = &opts.predicate;
        let mut items = Vec::new();
        let mut has_more = false;
        let mut remaining = 0i64;
        for entry in self
            .store
            .range::<str, _>((Bound::Included(prefix.as_str()), Bound::Unbounded))
        {
            let (k, o) = (entry.key(), &entry.0);
            if (exact && k != prefix) || !k.starts_with(&prefix) {
                break;
            }
            if limit_n > 0 && items.len() >= limit_n {
                has_more = true;
                if pred.is_empty() {
                    remaining += 1;
                    continue;
                }
                break;
            }
            if o.matches(pred) {
                items.push(o.object.clone());
            }
        }
        let total_after = pred.is_empty().then_some(remaining);
        finish_page(
            &prefix,
            items,
            self.served_rev(),
            limit,
            has_more,
            total_after,
        )
    }
}
