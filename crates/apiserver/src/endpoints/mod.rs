//! REST endpoints, discovery and OpenAPI.

pub mod discovery;
pub mod negotiation;
pub mod patch;
pub mod protobuf;
