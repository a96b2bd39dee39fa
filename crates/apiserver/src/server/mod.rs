//! The generic API server: configuration, life cycle, hooks, health, routing and serving.

pub mod delegation;
pub mod handler;
pub mod healthz;
pub mod hooks;
pub mod lifecycle;
pub mod loopback;
pub mod mux;
pub mod routes;
pub mod serving;
pub mod waitgroup;
