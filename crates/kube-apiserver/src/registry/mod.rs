//! Resource storages that wrap the generic store with upstream's per-resource REST
//! behaviour: namespace lifecycle, the scale subresource, service cluster IPs, pod binding,
//! component statuses, certificate signing requests and version conversion.

pub mod binding;
pub mod componentstatus;
pub mod converted;
pub mod csr;
pub mod namespace;
pub mod scale;
pub mod service;
