//! The schema as published in OpenAPI.

use serde_json::Value;

use super::node::Node;

/// OpenAPI v3.
pub(crate) fn to_v3(n: &Node) -> Value {
    Value::Object(n.raw.clone())
}

/// OpenAPI v2.
pub(crate) fn to_v2(n: &Node) -> Value {
    Value::Object(n.raw.clone())
}
