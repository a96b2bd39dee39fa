//! REST endpoints, discovery and OpenAPI.

pub mod patch;
