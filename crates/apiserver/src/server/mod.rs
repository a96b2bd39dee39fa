//! The generic API server: configuration, life cycle, hooks, health, routing and serving.

pub mod lifecycle;
pub mod serving;
