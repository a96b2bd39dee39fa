//! REST endpoints, discovery and OpenAPI.
