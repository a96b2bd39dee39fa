//! API discovery (upstream `pkg/endpoints/discovery` and its `aggregated` package).
//!
//! A [`DiscoveryManager`] holds the advertised groups, versions and resources and serves:
//!
//! * `/api` → `APIVersions`, `/apis` → `APIGroupList`, `/apis/<g>` → `APIGroup`,
//!   `/api/v1` and `/apis/<g>/<v>` → `APIResourceList` (unaggregated, [`types`]);
//! * `/api` and `/apis` → `APIGroupDiscoveryList` when the client asks for aggregated
//!   discovery `v2` ([`aggregated_types`]), with ETag-based caching.
//!
//! The core group is the group named `""`. Group-versions can come from several [`Source`]s
//! (built-in, custom resources, aggregated servers); the lowest source wins a duplicate.
//! Output negotiation is shared with the REST layer ([`crate::endpoints::negotiation`]).

pub mod addresses;
pub mod aggregated_types;
pub mod convert;
pub mod handlers;
pub mod manager;
pub mod storage_version_hash;
pub mod types;
pub mod version_order;

pub use addresses::{Addresses, CidrRule, IpCidr};
pub use convert::{ConvertError, convert_api_resources_to_discovery};
pub use handlers::{AGGREGATED_CONTENT_TYPE, DiscoveryPath};
pub use manager::{DiscoveryError, DiscoveryManager, Priority, Source, VersionOptions};
pub use storage_version_hash::storage_version_hash;
pub use types::APIResource;

#[cfg(test)]
mod tests;
