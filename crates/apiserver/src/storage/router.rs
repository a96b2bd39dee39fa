//! Per-resource storage choices, the analogue of upstream's storage factory and REST options
//! getter: which etcd cluster a resource lives in (`--etcd-servers-overrides`) and whether its
//! registry store keeps a watch cache (`--watch-cache`, `--watch-cache-sizes`).
//!
//! A [`ResourceRouter`] is a [`Storage`]: keys it is handed directly go to the default backend,
//! and [`Storage::for_resource`] hands out the backend of the resource's override.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;

use super::{
    BoxFuture, GetOptions, ListOptions, ListResult, Object, Preconditions, Result, Storage,
    UpdateFn, ValidateDeletionFn, WatchStream,
};

/// A group and resource (`""` is the legacy core group).
pub type GroupResource = (String, String);

/// Upstream's "all resources of a group" override key (`apps/*`).
const ALL_RESOURCES: &str = "*";

/// A group and resource known at compile time.
type StaticGroupResource = (&'static str, &'static str);

/// Resources stored with another one (upstream's cohabitating resources): they follow that
/// resource's etcd servers.
const COHABITATING: &[(StaticGroupResource, StaticGroupResource)] =
    &[(("events.k8s.io", "events"), ("", "events"))];

/// Which registry stores keep a watch cache (upstream's `EnableWatchCache` and the sizes map).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchCachePolicy {
    /// `--watch-cache`: false turns every watch cache off.
    pub enabled: bool,
    /// `--watch-cache-sizes` merged over the defaults: size 0 turns the cache of a resource
    /// built into the server off; other sizes keep it (caches size themselves).
    pub sizes: BTreeMap<GroupResource, u64>,
}

impl Default for WatchCachePolicy {
    fn default() -> Self {
        WatchCachePolicy {
            enabled: true,
            sizes: default_watch_cache_sizes(),
        }
    }
}

/// kube-apiserver's default sizes: no watch cache for events (core and `events.k8s.io`).
pub fn default_watch_cache_sizes() -> BTreeMap<GroupResource, u64> {
    BTreeMap::from([
        ((String::new(), "events".to_string()), 0),
        (("events.k8s.io".to_string(), "events".to_string()), 0),
    ])
}

impl WatchCachePolicy {
    /// Whether the store of `group`/`resource` keeps a watch cache; `built_in` is false for
    /// custom resources, which only `--watch-cache` governs (as upstream).
    pub fn caches(&self, group: &str, resource: &str, built_in: bool) -> bool {
        if !self.enabled {
            return false;
        }
        !built_in
            || self
                .sizes
                .get(&(group.to_string(), resource.to_string()))
                .is_none_or(|size| *size > 0)
    }
}

/// The default backend, the override backends by resource, and the watch-cache policy.
#[derive(Clone)]
pub struct ResourceRouter {
    default: Arc<dyn Storage>,
    overrides: BTreeMap<GroupResource, Arc<dyn Storage>>,
    watch_cache: WatchCachePolicy,
}

impl std::fmt::Debug for ResourceRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceRouter")
            .field("overrides", &self.overrides.keys().collect::<Vec<_>>())
            .field("watch_cache", &self.watch_cache)
            .finish()
    }
}

impl ResourceRouter {
    /// Routes everything to `default` with `watch_cache` deciding the caches.
    pub fn new(default: Arc<dyn Storage>, watch_cache: WatchCachePolicy) -> Self {
        ResourceRouter {
            default,
            overrides: BTreeMap::new(),
            watch_cache,
        }
    }

    /// Stores `group`/`resource` in `storage` (`resource` `*`: every resource of the group
    /// without an override of its own).
    pub fn with_override(mut self, group: &str, resource: &str, storage: Arc<dyn Storage>) -> Self {
        self.overrides
            .insert((group.to_string(), resource.to_string()), storage);
        self
    }

    /// The backend `group`/`resource` lives in, as upstream's storage factory picks it: the
    /// resource it cohabits with, then an override of the resource, of its group (`*`), or
    /// the default.
    pub fn backend_for(&self, group: &str, resource: &str) -> &Arc<dyn Storage> {
        let (group, resource) = COHABITATING
            .iter()
            .find(|(from, _)| *from == (group, resource))
            .map_or((group, resource), |(_, to)| *to);
        self.overrides
            .get(&(group.to_string(), resource.to_string()))
            .or_else(|| {
                self.overrides
                    .get(&(group.to_string(), ALL_RESOURCES.to_string()))
            })
            .unwrap_or(&self.default)
    }
}

impl Storage for ResourceRouter {
    fn create<'a>(&'a self, key: &'a str, obj: Bytes) -> BoxFuture<'a, Result<Object>> {
        self.default.create(key, obj)
    }

    fn get<'a>(&'a self, key: &'a str, opts: GetOptions) -> BoxFuture<'a, Result<Option<Object>>> {
        self.default.get(key, opts)
    }

    fn list<'a>(&'a self, key: &'a str, opts: ListOptions) -> BoxFuture<'a, Result<ListResult>> {
        self.default.list(key, opts)
    }

    fn guaranteed_update<'a>(
        &'a self,
        key: &'a str,
        ignore_not_found: bool,
        preconditions: Option<Preconditions>,
        try_update: &'a mut UpdateFn<'a>,
    ) -> BoxFuture<'a, Result<Object>> {
        self.default
            .guaranteed_update(key, ignore_not_found, preconditions, try_update)
    }

    fn guaranteed_update_cached<'a>(
        &'a self,
        key: &'a str,
        ignore_not_found: bool,
        preconditions: Option<Preconditions>,
        try_update: &'a mut UpdateFn<'a>,
        cached: Option<Object>,
    ) -> BoxFuture<'a, Result<Object>> {
        self.default.guaranteed_update_cached(
            key,
            ignore_not_found,
            preconditions,
            try_update,
            cached,
        )
    }

    fn guaranteed_update_with_ttl<'a>(
        &'a self,
        key: &'a str,
        ttl: std::time::Duration,
        try_update: &'a mut UpdateFn<'a>,
    ) -> BoxFuture<'a, Result<Object>> {
        self.default
            .guaranteed_update_with_ttl(key, ttl, try_update)
    }

    fn delete<'a>(
        &'a self,
        key: &'a str,
        preconditions: Option<Preconditions>,
        validate: Option<&'a ValidateDeletionFn<'a>>,
    ) -> BoxFuture<'a, Result<Object>> {
        self.default.delete(key, preconditions, validate)
    }

    fn watch<'a>(&'a self, key: &'a str, opts: ListOptions) -> BoxFuture<'a, Result<WatchStream>> {
        self.default.watch(key, opts)
    }

    fn count<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<i64>> {
        self.default.count(key)
    }

    fn current_revision(&self) -> BoxFuture<'_, Result<u64>> {
        self.default.current_revision()
    }

    fn compact(&self, revision: u64) -> BoxFuture<'_, Result<()>> {
        self.default.compact(revision)
    }

    fn compacted_revision(&self) -> u64 {
        self.default.compacted_revision()
    }

    fn health(&self) -> BoxFuture<'_, Result<(), String>> {
        self.default.health()
    }

    fn reliable_progress(&self) -> bool {
        self.default.reliable_progress()
    }

    fn for_resource(&self, group: &str, resource: &str) -> Option<Arc<dyn Storage>> {
        let backend = self.backend_for(group, resource);
        Some(
            backend
                .for_resource(group, resource)
                .unwrap_or_else(|| backend.clone()),
        )
    }

    fn watch_cache_enabled(&self, group: &str, resource: &str, built_in: bool) -> bool {
        self.watch_cache.caches(group, resource, built_in)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::backends::EmbeddedStorage;

    fn embedded(dir: &std::path::Path) -> Arc<dyn Storage> {
        Arc::new(EmbeddedStorage::open(dir).unwrap())
    }

    #[tokio::test]
    async fn overrides_route_a_resource_its_cohabitant_and_a_whole_group() {
        let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
        let (main, events, apps) = (
            embedded(dirs[0].path()),
            embedded(dirs[1].path()),
            embedded(dirs[2].path()),
        );
        let router = ResourceRouter::new(main.clone(), WatchCachePolicy::default())
            .with_override("", "events", events.clone())
            .with_override("apps", "*", apps.clone());
        let pod = crate::storage::testing::pod("ns", "a", &[]);
        for (group, resource, key, home) in [
            ("", "pods", "/registry/pods/ns/a", &main),
            ("", "events", "/registry/events/ns/a", &events),
            (
                "events.k8s.io",
                "events",
                "/registry/events.k8s.io/events/ns/a",
                &events,
            ),
            ("apps", "deployments", "/registry/deployments/ns/a", &apps),
        ] {
            let handle = router.for_resource(group, resource).unwrap();
            handle.create(key, pod.clone()).await.unwrap();
            let opts = GetOptions {
                ignore_not_found: true,
                ..Default::default()
            };
            for other in [&main, &events, &apps] {
                let found = other.get(key, opts.clone()).await.unwrap().is_some();
                assert_eq!(found, Arc::ptr_eq(other, home), "{group}/{resource}");
            }
        }
    }

    #[tokio::test]
    async fn keys_with_a_time_to_live_go_to_the_default_backend() {
        let dir = tempfile::tempdir().unwrap();
        let main = embedded(dir.path());
        let router = ResourceRouter::new(main.clone(), WatchCachePolicy::default());
        let pod = crate::storage::testing::pod("ns", "lease", &[]);
        let mut write = |_: Option<&Object>| -> Result<Bytes> { Ok(pod.clone()) };
        router
            .guaranteed_update_with_ttl(
                "/registry/masterleases/10.0.0.1",
                std::time::Duration::from_secs(60),
                &mut write,
            )
            .await
            .unwrap();
        let opts = GetOptions {
            ignore_not_found: true,
            ..Default::default()
        };
        let stored = main.get("/registry/masterleases/10.0.0.1", opts).await;
        assert!(stored.unwrap().is_some());
    }

    #[test]
    fn watch_cache_policy_follows_the_flags() {
        let mut policy = WatchCachePolicy::default();
        assert!(policy.caches("", "pods", true));
        assert!(!policy.caches("", "events", true));
        assert!(!policy.caches("events.k8s.io", "events", true));
        policy.sizes.insert((String::new(), "events".into()), 100);
        policy
            .sizes
            .insert(("apps".into(), "deployments".into()), 0);
        assert!(policy.caches("", "events", true));
        assert!(!policy.caches("apps", "deployments", true));
        // Sizes are for built-in resources only.
        assert!(policy.caches("apps", "deployments", false));
        policy.enabled = false;
        assert!(!policy.caches("", "pods", true));
        assert!(!policy.caches("example.com", "widgets", false));
    }
}
