//! `DiscoveryManager`: the groups, versions and resources the server advertises, changeable at
//! runtime, and the documents derived from them (both unaggregated and aggregated).
//!
//! The core group is the group named `""`; it is served at `/api` and `/api/v1`, every other
//! group below `/apis`. The aggregated documents are computed lazily and cached until the next
//! change (upstream `resourceDiscoveryManager`).

use std::net::IpAddr;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use arc_swap::ArcSwapOption;
use bytes::Bytes;
use sha2::{Digest, Sha512};

use super::addresses::Addresses;
use super::aggregated_types::{
    APIDISCOVERY_GROUP, APIDISCOVERY_V2, APIGROUP_DISCOVERY_LIST, APIGroupDiscovery,
    APIGroupDiscoveryList, APIVersionDiscovery, DiscoveryFreshness, DiscoveryObjectMeta,
};
use super::convert::{ConvertError, convert_api_resources_to_discovery};
use super::types::{
    APIGroup, APIGroupList, APIResource, APIResourceList, APIVersions, GroupVersionForDiscovery,
    META_V1, group_version_string, keep_unversioned,
};
use super::version_order::compare_kube_aware_versions;
use crate::status::ListMeta;
use crate::util::gojson;

/// The group priority a version gets when added without one (upstream default).
pub const DEFAULT_GROUP_PRIORITY_MINIMUM: i32 = 1000;
/// The version priority a version gets when added without one (upstream default).
pub const DEFAULT_VERSION_PRIORITY: i32 = 15;

/// Ordering hints of a group-version in aggregated discovery (upstream `priorityInfo`, as an
/// `APIService` carries them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Priority {
    /// Groups are ordered by the highest minimum of their versions, descending.
    pub group_priority_minimum: i32,
    /// Versions are ordered by this, descending; ties in Kubernetes version order.
    pub version_priority: i32,
}

impl Default for Priority {
    fn default() -> Self {
        Priority {
            group_priority_minimum: DEFAULT_GROUP_PRIORITY_MINIMUM,
            version_priority: DEFAULT_VERSION_PRIORITY,
        }
    }
}

/// Who provides a group-version. When several sources provide the same group-version, the
/// lowest wins (upstream `Source`: an aggregated API server's document beats the built-in one,
/// which beats a custom resource's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Source {
    /// Discovered from an aggregated API server.
    Aggregator = 0,
    /// Built into this server.
    #[default]
    Builtin = 100,
    /// A custom resource definition.
    Crd = 200,
}

/// How a group-version is added: its source, priority and freshness.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VersionOptions {
    /// Who provides it.
    pub source: Source,
    /// `None` keeps the priority the group-version already has, or the defaults (1000, 15).
    pub priority: Option<Priority>,
    /// `Stale` for a source that could not be refreshed.
    pub freshness: DiscoveryFreshness,
}

/// Errors from changing the advertised API.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DiscoveryError {
    /// The resources cannot be expressed in aggregated discovery.
    #[error(transparent)]
    Convert(#[from] ConvertError),
    /// A version must not be empty.
    #[error("cannot register an empty version for group {0:?}")]
    EmptyVersion(String),
}

/// One served version of a group.
#[derive(Clone, Debug, PartialEq)]
struct VersionEntry {
    version: String,
    source: Source,
    /// Sorted by name, as the unaggregated `APIResourceList` lists them.
    resources: Vec<APIResource>,
    freshness: DiscoveryFreshness,
    aggregated: APIVersionDiscovery,
    priority: Priority,
}

#[derive(Clone, Debug)]
struct GroupEntry {
    name: String,
    /// In insertion order; the first is the preferred version in unaggregated discovery. A
    /// version may appear once per source.
    versions: Vec<VersionEntry>,
}

impl GroupEntry {
    /// The served versions: each version once, in first-insertion order, from its lowest source.
    fn effective_versions(&self) -> Vec<&VersionEntry> {
        let mut out: Vec<&VersionEntry> = Vec::with_capacity(self.versions.len());
        for entry in &self.versions {
            match out.iter_mut().find(|v| v.version == entry.version) {
                Some(winner) if entry.source < winner.source => *winner = entry,
                Some(_) => {}
                None => out.push(entry),
            }
        }
        out
    }
}

#[derive(Default)]
struct State {
    /// In first-insertion order (the order of `/apis`).
    groups: Vec<GroupEntry>,
}

impl State {
    fn group(&self, name: &str) -> Option<&GroupEntry> {
        self.groups.iter().find(|g| g.name == name)
    }
}

/// An aggregated document ready to serve.
#[derive(Debug)]
pub struct CachedAggregated {
    /// The list as served (with `kind` and `apiVersion`).
    pub list: APIGroupDiscoveryList,
    /// Its compact JSON followed by a newline.
    pub json: Bytes,
    /// Uppercase hex SHA-512 of the JSON of the list without `kind`/`apiVersion` (what upstream
    /// hashes), unquoted.
    pub etag: String,
}

struct Inner {
    state: RwLock<State>,
    legacy_cache: ArcSwapOption<CachedAggregated>,
    apis_cache: ArcSwapOption<CachedAggregated>,
    addresses: Addresses,
}

/// The advertised API of one server. Cloning shares it; all methods are thread-safe.
#[derive(Clone)]
pub struct DiscoveryManager {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for DiscoveryManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiscoveryManager")
            .field("groups", &self.groups())
            .finish_non_exhaustive()
    }
}

impl DiscoveryManager {
    /// An empty manager advertising `addresses` in `serverAddressByClientCIDRs`.
    pub fn new(addresses: Addresses) -> Self {
        DiscoveryManager {
            inner: Arc::new(Inner {
                state: RwLock::new(State::default()),
                legacy_cache: ArcSwapOption::empty(),
                apis_cache: ArcSwapOption::empty(),
                addresses,
            }),
        }
    }

    /// The advertised addresses.
    pub fn addresses(&self) -> &Addresses {
        &self.inner.addresses
    }

    fn read(&self) -> RwLockReadGuard<'_, State> {
        // Every change is applied to a copy-free structure in one step, so a panic elsewhere
        // cannot leave it half-updated; a poisoned lock is still consistent.
        self.inner
            .state
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.inner
            .state
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Drops the cached aggregated documents. Called with the write lock held, so a reader that
    /// computes a document under the read lock can never store a stale one.
    fn invalidate(&self) {
        self.inner.legacy_cache.store(None);
        self.inner.apis_cache.store(None);
    }

    /// Adds (or replaces) `group`/`version` with `resources` (top-level resources and
    /// `resource/subresource` entries; sorted by name here) from the built-in source.
    /// `priority: None` keeps the version's current priority, or the defaults (1000, 15) for a
    /// new version. A new group is appended to the `/apis` order; a new version to its group's
    /// versions (the first version added is the preferred one). Adding exactly what is there
    /// changes nothing.
    pub fn add_group_version(
        &self,
        group: &str,
        version: &str,
        resources: Vec<APIResource>,
        priority: Option<Priority>,
    ) -> Result<(), DiscoveryError> {
        let options = VersionOptions {
            priority,
            ..VersionOptions::default()
        };
        self.add_group_version_with(group, version, resources, options)
    }

    /// [`add_group_version`](Self::add_group_version) with an explicit source and freshness.
    pub fn add_group_version_with(
        &self,
        group: &str,
        version: &str,
        mut resources: Vec<APIResource>,
        options: VersionOptions,
    ) -> Result<(), DiscoveryError> {
        if version.is_empty() {
            return Err(DiscoveryError::EmptyVersion(group.to_string()));
        }
        resources.sort_by(|a, b| a.name.cmp(&b.name));
        let aggregated = APIVersionDiscovery {
            version: version.to_string(),
            resources: convert_api_resources_to_discovery(&resources)?,
            freshness: options.freshness,
        };
        let mut state = self.write();
        let index = match state.groups.iter().position(|g| g.name == group) {
            Some(index) => index,
            None => {
                state.groups.push(GroupEntry {
                    name: group.to_string(),
                    versions: Vec::new(),
                });
                state.groups.len() - 1
            }
        };
        let entry = &mut state.groups[index];
        let existing = entry
            .versions
            .iter_mut()
            .find(|v| v.version == version && v.source == options.source);
        let priority = options
            .priority
            .or_else(|| existing.as_ref().map(|v| v.priority))
            .unwrap_or_default();
        let new = VersionEntry {
            version: version.to_string(),
            source: options.source,
            resources,
            freshness: options.freshness,
            aggregated,
            priority,
        };
        match existing {
            Some(current) if *current == new => return Ok(()),
            Some(current) => *current = new,
            None => entry.versions.push(new),
        }
        self.invalidate();
        Ok(())
    }

    /// Sets the priority of an existing group-version (from every source); `false` when it does
    /// not exist.
    pub fn set_group_version_priority(
        &self,
        group: &str,
        version: &str,
        priority: Priority,
    ) -> bool {
        let mut state = self.write();
        let Some(group) = state.groups.iter_mut().find(|g| g.name == group) else {
            return false;
        };
        let mut found = false;
        let mut changed = false;
        for entry in group.versions.iter_mut().filter(|v| v.version == version) {
            found = true;
            changed |= entry.priority != priority;
            entry.priority = priority;
        }
        if changed {
            self.invalidate();
        }
        found
    }

    /// Removes one version of the built-in source; the group goes when its last version does.
    /// `false` if absent.
    pub fn remove_group_version(&self, group: &str, version: &str) -> bool {
        self.remove_group_version_from(Source::Builtin, group, version)
    }

    /// Removes one version provided by `source`. `false` if absent.
    pub fn remove_group_version_from(&self, source: Source, group: &str, version: &str) -> bool {
        self.remove_where(group, |v| v.version == version && v.source == source)
    }

    /// Removes every version the built-in source provides for `group`. `false` if absent.
    pub fn remove_group(&self, group: &str) -> bool {
        self.remove_group_from(Source::Builtin, group)
    }

    /// Removes every version `source` provides for `group`. `false` if absent.
    pub fn remove_group_from(&self, source: Source, group: &str) -> bool {
        self.remove_where(group, |v| v.source == source)
    }

    fn remove_where(&self, group: &str, doomed: impl Fn(&VersionEntry) -> bool) -> bool {
        let mut state = self.write();
        let Some(index) = state.groups.iter().position(|g| g.name == group) else {
            return false;
        };
        let versions = &mut state.groups[index].versions;
        let before = versions.len();
        versions.retain(|v| !doomed(v));
        if versions.len() == before {
            return false;
        }
        if versions.is_empty() {
            state.groups.remove(index);
        }
        self.invalidate();
        true
    }

    /// The registered group names in insertion order (`""` is the core group).
    pub fn groups(&self) -> Vec<String> {
        self.read().groups.iter().map(|g| g.name.clone()).collect()
    }

    /// Whether `group`/`version` is registered.
    pub fn has_group_version(&self, group: &str, version: &str) -> bool {
        self.read()
            .group(group)
            .is_some_and(|g| g.versions.iter().any(|v| v.version == version))
    }

    /// `/api`: always `versions: ["v1"]`, no `apiVersion`.
    pub fn api_versions(&self, client_ip: Option<IpAddr>) -> APIVersions {
        APIVersions {
            kind: "APIVersions".into(),
            api_version: String::new(),
            versions: vec!["v1".into()],
            server_address_by_client_cidrs: self
                .inner
                .addresses
                .server_address_by_client_cidrs(client_ip),
        }
    }

    /// `/apis`: the named groups in first-insertion order, each with the addresses, no
    /// `apiVersion`.
    pub fn api_group_list(&self, client_ip: Option<IpAddr>) -> APIGroupList {
        let addresses = self
            .inner
            .addresses
            .server_address_by_client_cidrs(client_ip);
        let state = self.read();
        let groups = state
            .groups
            .iter()
            .filter(|g| !g.name.is_empty())
            .map(|g| APIGroup {
                server_address_by_client_cidrs: addresses.clone(),
                ..unaggregated_group(g)
            })
            .collect();
        APIGroupList {
            kind: "APIGroupList".into(),
            api_version: String::new(),
            groups,
        }
    }

    /// `/apis/<group>`, or `None` when the group is not registered.
    pub fn api_group(&self, group: &str) -> Option<APIGroup> {
        let state = self.read();
        let entry = state.group(group)?;
        Some(APIGroup {
            kind: "APIGroup".into(),
            api_version: versioned(group),
            ..unaggregated_group(entry)
        })
    }

    /// `/apis/<group>/<version>` (or `/api/v1` for group `""`), or `None` when not registered.
    pub fn api_resource_list(&self, group: &str, version: &str) -> Option<APIResourceList> {
        let state = self.read();
        let group_entry = state.group(group)?;
        let entry = group_entry
            .effective_versions()
            .into_iter()
            .find(|v| v.version == version)?;
        Some(APIResourceList {
            kind: "APIResourceList".into(),
            api_version: versioned(group),
            group_version: group_version_string(group, version),
            resources: entry.resources.clone(),
        })
    }

    /// The aggregated document of `/api` (`legacy`) or `/apis`, from the cache or computed now.
    pub fn aggregated(&self, legacy: bool) -> Arc<CachedAggregated> {
        let cache = if legacy {
            &self.inner.legacy_cache
        } else {
            &self.inner.apis_cache
        };
        let state = self.read();
        if let Some(cached) = cache.load_full() {
            return cached;
        }
        let computed = Arc::new(compute_aggregated(&state, legacy));
        cache.store(Some(computed.clone()));
        computed
    }
}

/// `v1`, or empty for the groups whose documents upstream strips.
fn versioned(group: &str) -> String {
    if keep_unversioned(group) {
        String::new()
    } else {
        META_V1.to_string()
    }
}

fn unaggregated_group(group: &GroupEntry) -> APIGroup {
    let versions: Vec<GroupVersionForDiscovery> = group
        .effective_versions()
        .into_iter()
        .map(|v| GroupVersionForDiscovery::new(&group.name, &v.version))
        .collect();
    APIGroup {
        kind: String::new(),
        api_version: String::new(),
        name: group.name.clone(),
        preferred_version: versions.first().cloned().unwrap_or_default(),
        versions,
        server_address_by_client_cidrs: Vec::new(),
    }
}

/// Orders versions by priority, then Kubernetes version order, and groups by their highest
/// group priority minimum, then name (upstream `calculateAPIGroupsLocked`).
fn compute_aggregated(state: &State, legacy: bool) -> CachedAggregated {
    let mut groups: Vec<(i32, APIGroupDiscovery)> = state
        .groups
        .iter()
        .filter(|g| g.name.is_empty() == legacy)
        .map(|g| {
            let mut versions = g.effective_versions();
            versions.sort_by(|a, b| {
                b.priority
                    .version_priority
                    .cmp(&a.priority.version_priority)
                    .then_with(|| compare_kube_aware_versions(&b.version, &a.version))
            });
            let priority = versions
                .iter()
                .map(|v| v.priority.group_priority_minimum)
                .max()
                .unwrap_or_default();
            let discovery = APIGroupDiscovery {
                metadata: DiscoveryObjectMeta {
                    name: g.name.clone(),
                    creation_timestamp: None,
                },
                versions: versions.into_iter().map(|v| v.aggregated.clone()).collect(),
            };
            (priority, discovery)
        })
        .collect();
    groups.sort_by(|(pa, a), (pb, b)| {
        pb.cmp(pa)
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
    let mut list = APIGroupDiscoveryList {
        kind: String::new(),
        api_version: String::new(),
        metadata: ListMeta::default(),
        items: groups.into_iter().map(|(_, g)| g).collect(),
    };
    // Upstream hashes `json.Marshal` of the list before the encoder sets its type meta.
    let etag = serde_json::to_string(&list)
        .map(|text| hex_upper(&Sha512::digest(gojson::escape_html(text).as_bytes())))
        .unwrap_or_default();
    list.kind = APIGROUP_DISCOVERY_LIST.to_string();
    list.api_version = format!("{APIDISCOVERY_GROUP}/{APIDISCOVERY_V2}");
    let json = gojson::to_line(&list).map(Bytes::from).unwrap_or_default();
    CachedAggregated { list, json, etag }
}

fn hex_upper(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            // Writing to a String cannot fail.
            let _ = write!(s, "{b:02X}");
            s
        })
}
