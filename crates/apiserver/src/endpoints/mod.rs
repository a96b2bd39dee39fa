//! REST endpoints, discovery and OpenAPI.

pub mod apply;
pub mod discovery;
pub mod handlers;
pub mod installer;
pub mod negotiation;
pub mod openapi;
pub mod patch;
pub mod protobuf;
