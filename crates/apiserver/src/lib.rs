//! `apiserver`: the Kubernetes generic API server (the Rust analogue of `k8s.io/apiserver`).
//!
//! The crate is organised the way the Go packages are, so each upstream concept is found where
//! its name suggests:
//!
//! * [`server`]: the generic server, its configuration (`Config` → `CompletedConfig` →
//!   `GenericApiServer::new` → `prepare_run` → `run`), lifecycle signals, hooks, health checks,
//!   the path mux, delegation and secure serving;
//! * [`filters`]: one tower layer per filter of the default handler chain;
//! * [`request`]: what filters learn about a request (request info, user, timestamps);
//! * [`authn`], [`authz`], [`audit`]: authentication, authorization and auditing;
//! * [`status`]: the `metav1.Status` error responses;
//! * [`storage`]: the etcd3-style storage contract and its backends.
#![warn(missing_docs)]

pub mod admission;
pub mod apis;
pub mod audit;
pub mod authn;
pub mod authz;
pub mod body;
pub mod endpoints;
pub mod filters;
pub mod metrics;
pub mod registry;
pub mod request;
pub mod server;
pub mod status;
pub mod storage;
pub mod util;
