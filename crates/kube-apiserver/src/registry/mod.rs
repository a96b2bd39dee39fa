//! Resource storages that wrap the generic store with upstream's per-resource REST
//! behaviour: namespace lifecycle, the scale subresource and service cluster IPs.

pub mod namespace;
pub mod scale;
pub mod service;
