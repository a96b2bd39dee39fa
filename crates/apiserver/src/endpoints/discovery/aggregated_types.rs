//! The aggregated discovery documents of `apidiscovery.k8s.io/v2`, served at `/api` and `/apis`
//! when the client asks for them. Keys follow upstream's declaration order.

use serde::{Deserialize, Serialize};

use crate::status::ListMeta;

/// The group of the aggregated discovery types.
pub const APIDISCOVERY_GROUP: &str = "apidiscovery.k8s.io";
/// The served version of the aggregated discovery types.
pub const APIDISCOVERY_V2: &str = "v2";
/// The kind of the aggregated list.
pub const APIGROUP_DISCOVERY_LIST: &str = "APIGroupDiscoveryList";

/// `metav1.GroupVersionKind` as written in discovery: every field always present.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupVersionKind {
    /// Group (empty for core).
    pub group: String,
    /// Version.
    pub version: String,
    /// Kind.
    pub kind: String,
}

/// The `metadata` of an `APIGroupDiscovery`: a `metav1.ObjectMeta` with only the name set. Go
/// writes the zero `creationTimestamp` as `null`, so it is always present.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoveryObjectMeta {
    /// The group name (empty for the legacy group).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Always `null`.
    #[serde(default)]
    pub creation_timestamp: Option<String>,
}

/// `apidiscovery.ResourceScope`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ResourceScope {
    /// `Namespaced`
    #[default]
    Namespaced,
    /// `Cluster`
    Cluster,
}

impl std::fmt::Display for ResourceScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ResourceScope::Namespaced => "Namespaced",
            ResourceScope::Cluster => "Cluster",
        })
    }
}

/// `apidiscovery.DiscoveryFreshness`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum DiscoveryFreshness {
    /// `Current`: the document is up to date.
    #[default]
    Current,
    /// `Stale`: the source (e.g. an aggregated API server) could not be refreshed.
    Stale,
}

/// `apidiscovery.APIGroupDiscoveryList`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct APIGroupDiscoveryList {
    /// `APIGroupDiscoveryList` when served; empty when hashed for the ETag.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// `apidiscovery.k8s.io/v2` when served; empty when hashed for the ETag.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Always `{}`.
    #[serde(default)]
    pub metadata: ListMeta,
    /// The groups, by priority then name.
    pub items: Vec<APIGroupDiscovery>,
}

/// `apidiscovery.APIGroupDiscovery`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct APIGroupDiscovery {
    /// `metadata.name` is the group name.
    #[serde(default)]
    pub metadata: DiscoveryObjectMeta,
    /// The versions, highest priority first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<APIVersionDiscovery>,
}

/// `apidiscovery.APIVersionDiscovery`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct APIVersionDiscovery {
    /// The version, e.g. `v1`.
    pub version: String,
    /// The resources, with their subresources nested.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<APIResourceDiscovery>,
    /// Whether the version's document is current.
    #[serde(default)]
    pub freshness: DiscoveryFreshness,
}

/// `apidiscovery.APIResourceDiscovery`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct APIResourceDiscovery {
    /// Plural resource name.
    pub resource: String,
    /// The kind returned (a placeholder parent has an all-empty kind).
    pub response_kind: GroupVersionKind,
    /// `Namespaced` or `Cluster`.
    pub scope: ResourceScope,
    /// Singular name.
    #[serde(default)]
    pub singular_resource: String,
    /// Verbs; always an array.
    #[serde(default)]
    pub verbs: Vec<String>,
    /// Short names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub short_names: Vec<String>,
    /// Categories.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
    /// Subresources.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subresources: Vec<APISubresourceDiscovery>,
}

/// `apidiscovery.APISubresourceDiscovery`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct APISubresourceDiscovery {
    /// The subresource name, e.g. `status`.
    pub subresource: String,
    /// The kind returned; all-empty when unknown (upstream avoids a nil for old clients).
    pub response_kind: GroupVersionKind,
    /// Kinds accepted in request bodies, when they differ from the parent's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted_types: Vec<GroupVersionKind>,
    /// Verbs; always an array.
    #[serde(default)]
    pub verbs: Vec<String>,
}
