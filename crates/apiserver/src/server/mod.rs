//! The generic API server: configuration, life cycle, hooks, health, routing and serving.

pub mod apis;
pub mod authconfig_metrics;
pub mod config;
pub mod delegation;
pub mod encryptionconfig;
pub mod genericapiserver;
pub mod handler;
pub mod healthz;
pub mod hooks;
pub mod lifecycle;
pub mod loopback;
pub mod mux;
pub mod routes;
pub mod run;
pub mod serving;
pub mod systemd;
pub mod waitgroup;

pub use apis::{ApiGroupInfo, ApiGroupVersion, InstallError};
pub use config::{CompletedConfig, Config};
pub use delegation::{DelegationTarget, EmptyDelegate};
pub use genericapiserver::{GenericApiServer, PreparedGenericApiServer};
