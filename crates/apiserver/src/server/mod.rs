//! The generic API server: configuration, life cycle, hooks, health, routing and serving.

pub mod healthz;
pub mod lifecycle;
pub mod mux;
pub mod routes;
