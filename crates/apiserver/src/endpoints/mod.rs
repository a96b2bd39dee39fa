//! REST endpoints, discovery and OpenAPI.

pub mod discovery;
pub mod handlers;
pub mod installer;
pub mod negotiation;
pub mod patch;
