//! The storage contract (etcd3 semantics) and its backends, the analogue of
//! `k8s.io/apiserver/pkg/storage`.
//!
//! One global, increasing revision; every object carries the revision of its last change as its
//! `metadata.resourceVersion`; writes are compare-and-swap on that revision; a watch replays
//! every change after a revision, in order, exactly once; old revisions are compacted and asking
//! for one is a 410.
//!
//! Keys are strings built by the caller (`/registry/configmaps/default/foo`), values are the
//! object's JSON bytes. Storage keeps objects without `resourceVersion` and sets it on every
//! object it returns (see [`versioner`]). The backends store each value as its resource's
//! [`value`] transformer makes it (encryption at rest; see [`Storage::for_resource`]) and
//! return plain JSON.

pub mod backends;
pub mod cacher;
pub mod compactor;
pub mod continue_token;
pub mod errors;
pub mod factory;
pub mod health;
pub mod router;
pub mod selection;
#[cfg(test)]
pub mod testing;
pub mod value;
pub mod versioner;
pub mod watch;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;

pub use errors::{Operation, StorageError};
pub use selection::{FieldSelector, LabelSelector, SelectionPredicate};
pub use watch::{WatchEvent, WatchStream};

/// A boxed, sendable future (keeps [`Storage`] object-safe).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Result of a storage operation.
pub type Result<T, E = StorageError> = std::result::Result<T, E>;

/// etcd's default `--max-request-bytes` (1.5 MiB); both backends refuse larger writes.
pub const MAX_REQUEST_BYTES: usize = 1536 * 1024;

/// An object as storage returns it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Object {
    /// Its key.
    pub key: String,
    /// Its JSON with `metadata.resourceVersion` set to [`Object::resource_version`].
    pub value: Bytes,
    /// The revision of its last change (for a deleted object: the deletion's revision).
    pub resource_version: u64,
}

/// `metav1.ResourceVersionMatch`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ResourceVersionMatch {
    /// Unset: legacy semantics.
    #[default]
    Unset,
    /// `NotOlderThan`
    NotOlderThan,
    /// `Exact`
    Exact,
}

impl ResourceVersionMatch {
    /// Parses the query value; unknown values are rejected by validation upstream.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "" => Some(Self::Unset),
            "NotOlderThan" => Some(Self::NotOlderThan),
            "Exact" => Some(Self::Exact),
            _ => None,
        }
    }
}

/// Options of [`Storage::get`] (upstream `storage.GetOptions`).
#[derive(Clone, Debug, Default)]
pub struct GetOptions {
    /// `""` = most recent; `"0"` = any; `N` = not older than N.
    pub resource_version: String,
    /// Return `Ok(None)` instead of `KeyNotFound`.
    pub ignore_not_found: bool,
}

/// Options of [`Storage::list`], [`Storage::watch`] and [`Storage::count`] (upstream
/// `storage.ListOptions` plus the predicate's limit and continue).
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    /// The resourceVersion parameter.
    pub resource_version: String,
    /// The resourceVersionMatch parameter.
    pub resource_version_match: ResourceVersionMatch,
    /// Label and field selectors.
    pub predicate: SelectionPredicate,
    /// Page size (0 = unlimited).
    pub limit: i64,
    /// Continue token from a previous page.
    pub continue_token: String,
    /// List/watch everything under the key as a prefix (a collection) rather than one key.
    pub recursive: bool,
    /// Watch: deliver bookmarks.
    pub allow_watch_bookmarks: bool,
    /// Watch: `sendInitialEvents`.
    pub send_initial_events: Option<bool>,
    /// Watch: ask the backend for progress notifications (bookmarks carrying the revision).
    pub progress_notify: bool,
    /// Watch: the events feed a watch cache, which keeps every object's previous state itself.
    /// Without a selector a backend may then leave previous values out (etcd's `prev_kv`,
    /// one more read per event inside etcd): a deletion carries its key and revision with an
    /// empty value.
    pub feeds_watch_cache: bool,
}

/// A page of a list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListResult {
    /// The items, in key order.
    pub items: Vec<Object>,
    /// The revision the list was read at (the list's resourceVersion).
    pub resource_version: u64,
    /// The continue token when more items remain.
    pub continue_token: Option<String>,
    /// Items after this page, when known (only without selectors).
    pub remaining_item_count: Option<i64>,
}

/// Preconditions of update and delete (upstream `storage.Preconditions`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Preconditions {
    /// The object's UID must equal this.
    pub uid: Option<String>,
    /// The object's resourceVersion must equal this.
    pub resource_version: Option<String>,
}

impl Preconditions {
    /// Checks the preconditions against the current object (upstream `Preconditions.Check`).
    pub fn check(&self, key: &str, current: &Object) -> Result<()> {
        if let Some(uid) = &self.uid {
            let have = versioner::object_uid(&current.value)?;
            if *uid != have {
                return Err(StorageError::InvalidObj {
                    key: key.into(),
                    message: format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {have}"
                    ),
                });
            }
        }
        if let Some(rv) = &self.resource_version {
            let have = current.resource_version.to_string();
            if *rv != have {
                return Err(StorageError::InvalidObj {
                    key: key.into(),
                    message: format!(
                        "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {have}"
                    ),
                });
            }
        }
        Ok(())
    }
}

/// The update function of [`Storage::guaranteed_update`]: receives the current object (`None`
/// when it does not exist and `ignore_not_found` was set) and returns the new object's JSON.
/// It may run several times (once per conflict).
pub type UpdateFn<'a> = dyn FnMut(Option<&Object>) -> Result<Bytes> + Send + 'a;

/// A check on the current object before deleting it (upstream `ValidateObjectFunc`).
pub type ValidateDeletionFn<'a> = dyn Fn(&Object) -> Result<()> + Send + Sync + 'a;

/// The storage contract (upstream `storage.Interface`). Object-safe; share as
/// `Arc<dyn Storage>`.
pub trait Storage: Send + Sync {
    /// Creates `key`; `KeyExists` if present. Returns the stored object with its revision.
    fn create<'a>(&'a self, key: &'a str, obj: Bytes) -> BoxFuture<'a, Result<Object>>;

    /// Reads `key`; `KeyNotFound` (or `Ok(None)` with `ignore_not_found`).
    fn get<'a>(&'a self, key: &'a str, opts: GetOptions) -> BoxFuture<'a, Result<Option<Object>>>;

    /// Lists `key` (a prefix when `opts.recursive`).
    fn list<'a>(&'a self, key: &'a str, opts: ListOptions) -> BoxFuture<'a, Result<ListResult>>;

    /// Read-modify-write with compare-and-swap, retried on conflict.
    fn guaranteed_update<'a>(
        &'a self,
        key: &'a str,
        ignore_not_found: bool,
        preconditions: Option<Preconditions>,
        try_update: &'a mut UpdateFn<'a>,
    ) -> BoxFuture<'a, Result<Object>>;

    /// [`guaranteed_update`](Self::guaranteed_update) starting from `cached`, a copy of the
    /// object that may be stale (the watch cache's; upstream's `cachedExistingObject`): a
    /// backend may run the update on it and let the compare-and-swap catch a stale copy,
    /// saving a read. Whatever fails or changes nothing against the copy is decided again on
    /// a fresh read. The default ignores the copy.
    fn guaranteed_update_cached<'a>(
        &'a self,
        key: &'a str,
        ignore_not_found: bool,
        preconditions: Option<Preconditions>,
        try_update: &'a mut UpdateFn<'a>,
        cached: Option<Object>,
    ) -> BoxFuture<'a, Result<Object>> {
        let _ = cached;
        self.guaranteed_update(key, ignore_not_found, preconditions, try_update)
    }

    /// Writes what `try_update` makes of the current object of `key` (`None` when absent) and
    /// gives the key a time to live: it is deleted (a watch sees the deletion) `ttl` after this
    /// write unless written again meanwhile. Upstream: a `GuaranteedUpdate` whose update
    /// function returns a TTL, stored with an etcd lease (the master leases of the endpoint
    /// reconciler). Always writes, since the write is what renews the time to live. Layers
    /// without the backend's keys (the watch cache) refuse it.
    fn guaranteed_update_with_ttl<'a>(
        &'a self,
        key: &'a str,
        ttl: std::time::Duration,
        try_update: &'a mut UpdateFn<'a>,
    ) -> BoxFuture<'a, Result<Object>> {
        let _ = (ttl, try_update);
        Box::pin(async move {
            Err(StorageError::Internal(format!(
                "storage for {key:?} does not support keys with a time to live"
            )))
        })
    }

    /// Deletes `key` after checking preconditions and `validate`; returns the deleted object
    /// with the deletion's revision as its resourceVersion.
    fn delete<'a>(
        &'a self,
        key: &'a str,
        preconditions: Option<Preconditions>,
        validate: Option<&'a ValidateDeletionFn<'a>>,
    ) -> BoxFuture<'a, Result<Object>>;

    /// Watches `key` (a prefix when `opts.recursive`) from `opts.resource_version`.
    fn watch<'a>(&'a self, key: &'a str, opts: ListOptions) -> BoxFuture<'a, Result<WatchStream>>;

    /// Number of objects under the prefix.
    fn count<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<i64>>;

    /// The current (latest committed) revision, read consistently.
    fn current_revision(&self) -> BoxFuture<'_, Result<u64>>;

    /// Compacts history before `revision`; reads and watches older than it get 410.
    fn compact(&self, revision: u64) -> BoxFuture<'_, Result<()>>;

    /// The revision history has been compacted to (0 if never).
    fn compacted_revision(&self) -> u64;

    /// Health of the backend for `/readyz` and `/livez` (check name `etcd`).
    fn health(&self) -> BoxFuture<'_, Result<(), String>>;

    /// Whether a progress notification (the bookmark a watch with `progress_notify` sends after
    /// [`WatchStream::request_progress`]) proves every change up to its revision has been
    /// delivered. The watch cache serves consistent reads from memory only then.
    fn reliable_progress(&self) -> bool {
        false
    }

    /// This storage for the values of one resource: the same backend, with the value
    /// transformer the encryption configuration gives `group`/`resource` (upstream gives each
    /// resource's etcd3 store its own transformer). Layers that hold no stored bytes (the
    /// watch cache) answer `None`: use them as they are.
    fn for_resource(&self, group: &str, resource: &str) -> Option<Arc<dyn Storage>> {
        let _ = (group, resource);
        None
    }

    /// Whether the registry store of `group`/`resource` keeps a watch cache over this storage
    /// (`built_in` is false for custom resources). Backends answer yes; the
    /// [`router::ResourceRouter`] answers from `--watch-cache` and `--watch-cache-sizes`.
    fn watch_cache_enabled(&self, group: &str, resource: &str, built_in: bool) -> bool {
        let _ = (group, resource, built_in);
        true
    }
}

/// `storage` for the values of `group`/`resource` (see [`Storage::for_resource`]), or
/// `storage` itself when it has no per-resource form.
pub fn resource_storage(
    storage: &Arc<dyn Storage>,
    group: &str,
    resource: &str,
) -> Arc<dyn Storage> {
    storage
        .for_resource(group, resource)
        .unwrap_or_else(|| storage.clone())
}

/// Reads the stored value of `key` through `transformer`; a value no provider reads is
/// upstream's internal error carrying the transformer's text.
pub(crate) fn untransform(
    transformer: &value::ResourceTransformer,
    key: &str,
    raw: Bytes,
) -> Result<value::Untransformed> {
    transformer
        .from_storage(key, raw)
        .map_err(|e| StorageError::Internal(e.0))
}

/// [`untransform`] for an item of a list (upstream names the key).
pub(crate) fn untransform_item(
    transformer: &value::ResourceTransformer,
    key: &str,
    raw: Bytes,
) -> Result<Bytes> {
    transformer
        .from_storage(key, raw)
        .map(|v| v.data)
        .map_err(|e| StorageError::Internal(format!("unable to transform key {key:?}: {e}")))
}

/// The stored form of the plain value `plain` of `key`.
pub(crate) fn transform(
    transformer: &value::ResourceTransformer,
    key: &str,
    plain: Bytes,
) -> Result<Bytes> {
    transformer
        .to_storage(key, plain)
        .map_err(|e| StorageError::Internal(e.0))
}

/// Normalizes a list prefix as upstream does for recursive operations: a trailing `/`.
pub fn recursive_prefix(key: &str) -> String {
    if key.ends_with('/') {
        key.to_string()
    } else {
        format!("{key}/")
    }
}

/// What a list should read, after validating its options (upstream `ValidateListOptions`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListPlan {
    /// The revision to read at; 0 = current.
    pub with_rev: u64,
    /// Key to start at (from a continue token).
    pub continue_key: Option<String>,
    /// Minimum revision (NotOlderThan), 0 for none.
    pub min_rev: u64,
}

/// Validates list options against `prefix` (ending in `/`).
pub fn plan_list(prefix: &str, opts: &ListOptions) -> Result<ListPlan> {
    if opts.recursive && !opts.continue_token.is_empty() {
        let (key, rv) = continue_token::decode(&opts.continue_token, prefix)
            .map_err(|e| StorageError::BadRequest(format!("invalid continue token: {e}")))?;
        if !opts.resource_version.is_empty() && opts.resource_version != "0" {
            return Err(StorageError::BadRequest(
                "specifying resource version is not allowed when using continue".into(),
            ));
        }
        return Ok(ListPlan {
            with_rev: u64::try_from(rv).unwrap_or(0),
            continue_key: Some(key),
            min_rev: 0,
        });
    }
    if opts.resource_version.is_empty() {
        return Ok(ListPlan {
            with_rev: 0,
            continue_key: None,
            min_rev: 0,
        });
    }
    let rv = versioner::parse_resource_version(&opts.resource_version)
        .map_err(|e| StorageError::BadRequest(format!("invalid resource version: {e}")))?;
    let mut plan = ListPlan {
        with_rev: 0,
        continue_key: None,
        min_rev: rv,
    };
    match opts.resource_version_match {
        ResourceVersionMatch::NotOlderThan => {}
        ResourceVersionMatch::Exact => plan.with_rev = rv,
        ResourceVersionMatch::Unset => {
            // Legacy: a limited list at N reads exactly N.
            if opts.recursive && opts.limit > 0 && rv > 0 {
                plan.with_rev = rv;
            }
        }
    }
    if plan.with_rev > 0 {
        plan.min_rev = 0;
    }
    Ok(plan)
}

/// Parses the resourceVersion of a watch (422 on garbage, as upstream's watch error mapping).
pub fn parse_watch_rv(rv: &str) -> Result<u64> {
    versioner::parse_resource_version(rv)
}

/// Rejects objects over the backend's request limit.
pub fn check_size(key: &str, value: &[u8]) -> Result<()> {
    if key.len() + value.len() > MAX_REQUEST_BYTES {
        return Err(StorageError::RequestTooLarge);
    }
    Ok(())
}

/// Builds a page from items read at `rev` (in key order, already filtered and at most
/// `limit + 1` long when `has_more` is decided by the caller).
pub fn finish_page(
    prefix: &str,
    mut items: Vec<Object>,
    rev: u64,
    limit: i64,
    has_more: bool,
    total_after: Option<i64>,
) -> Result<ListResult> {
    let mut continue_token = None;
    let mut remaining = None;
    if has_more {
        if let Some(last) = items.last() {
            let start = format!("{}\u{0}", last.key);
            continue_token = Some(
                continue_token::encode(&start, prefix, rev as i64)
                    .map_err(StorageError::Internal)?,
            );
        }
        remaining = total_after.map(|n| n.max(0));
    }
    if limit > 0 && items.len() > limit as usize {
        items.truncate(limit as usize);
    }
    Ok(ListResult {
        items,
        resource_version: rev,
        continue_token,
        remaining_item_count: remaining,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_list_semantics() {
        let p = "/registry/pods/";
        let mut o = ListOptions {
            recursive: true,
            ..Default::default()
        };
        assert_eq!(plan_list(p, &o).unwrap().with_rev, 0);
        o.resource_version = "5".into();
        assert_eq!(plan_list(p, &o).unwrap().min_rev, 5);
        o.limit = 2;
        assert_eq!(plan_list(p, &o).unwrap().with_rev, 5);
        o.resource_version_match = ResourceVersionMatch::NotOlderThan;
        assert_eq!(plan_list(p, &o).unwrap().with_rev, 0);
        o.resource_version = "x".into();
        let err = plan_list(p, &o).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid resource version: resourceVersion: Invalid value: \"x\": strconv.ParseUint: parsing \"x\": invalid syntax"
        );
        o.resource_version = "5".into();
        o.continue_token = continue_token::encode("/registry/pods/a", p, 3).unwrap();
        assert_eq!(
            plan_list(p, &o).unwrap_err().to_string(),
            "specifying resource version is not allowed when using continue"
        );
        o.resource_version = "0".into();
        let plan = plan_list(p, &o).unwrap();
        assert_eq!(plan.with_rev, 3);
        assert_eq!(plan.continue_key.as_deref(), Some("/registry/pods/a"));
        o.continue_token = "garbage!".into();
        assert!(
            plan_list(p, &o)
                .unwrap_err()
                .to_string()
                .starts_with("invalid continue token: continue key is not valid")
        );
    }
}
