//! The unaggregated discovery documents of `meta/v1` (`APIVersions`, `APIGroupList`, `APIGroup`,
//! `APIResourceList`). Field order is upstream's declaration order, which is Go's JSON key order;
//! `omitempty` fields are skipped when empty, the others are always written.

use serde::{Deserialize, Serialize};

/// The `apiVersion` of every unaggregated discovery document (unless stripped).
pub const META_V1: &str = "v1";

/// `metav1.ServerAddressByClientCIDR`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerAddressByClientCIDR {
    /// The CIDR the client address must fall into.
    #[serde(rename = "clientCIDR")]
    pub client_cidr: String,
    /// `host:port` the client should use.
    pub server_address: String,
}

/// `metav1.APIVersions`, served at `/api`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct APIVersions {
    /// `APIVersions`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Stripped (empty) at `/api`, as upstream does for release-1.1 compatibility.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The legacy versions, always `["v1"]`.
    pub versions: Vec<String>,
    /// Where clients in each CIDR reach the server.
    #[serde(rename = "serverAddressByClientCIDRs")]
    pub server_address_by_client_cidrs: Vec<ServerAddressByClientCIDR>,
}

/// `metav1.GroupVersionForDiscovery`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupVersionForDiscovery {
    /// `group/version`.
    pub group_version: String,
    /// `version`.
    pub version: String,
}

impl GroupVersionForDiscovery {
    /// The entry for `group`/`version` (`version` alone for the core group).
    pub fn new(group: &str, version: &str) -> Self {
        GroupVersionForDiscovery {
            group_version: group_version_string(group, version),
            version: version.to_string(),
        }
    }
}

/// `group/version`, or `version` for the core group.
pub fn group_version_string(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// `metav1.APIGroup`, served at `/apis/<group>` and listed at `/apis`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct APIGroup {
    /// `APIGroup` when served alone; empty inside a list.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// `v1` when served alone (stripped for `extensions`); empty inside a list.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The group name.
    pub name: String,
    /// The served versions, preferred first.
    pub versions: Vec<GroupVersionForDiscovery>,
    /// The preferred version (Go's `omitempty` never omits a struct, so always written).
    #[serde(default)]
    pub preferred_version: GroupVersionForDiscovery,
    /// Addresses, set only in the `/apis` list.
    #[serde(
        default,
        rename = "serverAddressByClientCIDRs",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub server_address_by_client_cidrs: Vec<ServerAddressByClientCIDR>,
}

/// `metav1.APIGroupList`, served at `/apis`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct APIGroupList {
    /// `APIGroupList`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Stripped (empty) at `/apis`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The groups in first-insertion order.
    pub groups: Vec<APIGroup>,
}

/// `metav1.APIResource`: one resource or `resource/subresource` of a group-version.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct APIResource {
    /// Plural resource name, or `resource/subresource`.
    pub name: String,
    /// Singular name (empty for subresources).
    #[serde(default)]
    pub singular_name: String,
    /// Whether the resource is namespaced.
    pub namespaced: bool,
    /// Group of the kind when it differs from the group-version served (e.g. `scale`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// Version of the kind when it differs from the group-version served.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// The kind.
    pub kind: String,
    /// Sorted verbs; always an array, possibly empty.
    #[serde(default)]
    pub verbs: Vec<String>,
    /// Short names (`deploy`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub short_names: Vec<String>,
    /// Categories (`all`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
    /// `base64(sha256("group/version/kind")[:8])` of the storage version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub storage_version_hash: String,
}

/// `metav1.APIResourceList`, served at `/api/v1` and `/apis/<group>/<version>`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct APIResourceList {
    /// `APIResourceList`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// `v1`, stripped for the core group and `extensions`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `group/version`.
    pub group_version: String,
    /// The resources sorted by name.
    pub resources: Vec<APIResource>,
}

/// Whether discovery documents of `group` omit `apiVersion`: the core group and `extensions`
/// did so in release 1.1 and upstream keeps it (`keepUnversioned`).
pub fn keep_unversioned(group: &str) -> bool {
    group.is_empty() || group == "extensions"
}
