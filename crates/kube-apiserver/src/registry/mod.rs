//! Resource storages that wrap the generic store with upstream's per-resource REST
//! behaviour: namespace lifecycle, the scale subresource, service cluster IPs, the pod
//! subresources (binding, eviction, log, exec/attach/portforward, ephemeral containers),
//! component statuses, certificate signing requests, version conversion, the service-account
//! token subresource and authentication's reviews.

pub mod authentication;
pub mod authorization;
pub mod binding;
pub mod componentstatus;
pub mod converted;
pub mod csr;
pub mod eviction;
pub mod namespace;
pub mod pod;
pub mod policybased;
pub mod scale;
pub mod service;
pub mod serviceaccount_token;
