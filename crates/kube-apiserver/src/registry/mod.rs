//! Resource storages that wrap the generic store with upstream's per-resource REST
//! behaviour: namespace lifecycle, the scale subresource, service cluster IPs, and the pod
//! subresources (binding, eviction, log, exec/attach/portforward, ephemeral containers).

pub mod binding;
pub mod eviction;
pub mod namespace;
pub mod pod;
pub mod scale;
pub mod service;
