//! Defaulting (upstream `defaulting/algorithm.go`): fills in `default`s of absent fields
//! (and of non-nullable fields that are null), recursing into objects, maps and arrays.

use serde_json::Value;

use super::node::Node;

fn non_nullable_null(x: &Value, s: Option<&Node>) -> bool {
    x.is_null() && s.is_some_and(|s| !s.nullable)
}

/// Applies the defaults of `s` to `x`.
pub(crate) fn default(x: &mut Value, s: Option<&Node>) {
    let Some(s) = s else {
        return;
    };
    match x {
        Value::Object(map) => {
            for (k, prop) in &s.properties {
                let Some(d) = &prop.default else {
                    continue;
                };
                let missing = map.get(k).is_none_or(|v| non_nullable_null(v, Some(prop)));
                if missing {
                    map.insert(k.clone(), d.clone());
                }
            }
            let ap = s.additional_schema();
            for (k, v) in map.iter_mut() {
                if let Some(prop) = s.properties.get(k) {
                    default(v, Some(prop));
                } else if s.has_additional() {
                    // Upstream replaces a null by the (possibly absent, i.e. null) default.
                    if non_nullable_null(v, ap) {
                        *v = ap.and_then(|a| a.default.clone()).unwrap_or(Value::Null);
                    }
                    default(v, ap);
                }
            }
        }
        Value::Array(items) => {
            let item = s.items.as_deref();
            for v in items.iter_mut() {
                if non_nullable_null(v, item) {
                    *v = item.and_then(|a| a.default.clone()).unwrap_or(Value::Null);
                }
                default(v, item);
            }
        }
        _ => {}
    }
}

fn field_schema<'a>(k: &str, s: Option<&'a Node>) -> Option<&'a Node> {
    let s = s?;
    s.properties.get(k).or_else(|| s.additional_schema())
}

/// Removes `null`s of non-nullable fields that have no default (upstream
/// `PruneNonNullableNullsWithoutDefaults`).
pub(crate) fn prune_nulls(x: &mut Value, s: Option<&Node>) {
    match x {
        Value::Object(map) => {
            map.retain(|k, v| {
                let schema = field_schema(k, s);
                !(v.is_null() && schema.is_some_and(|f| !f.nullable && f.default.is_none()))
            });
            for (k, v) in map.iter_mut() {
                prune_nulls(v, field_schema(k, s));
            }
        }
        Value::Array(items) => {
            let item = s.and_then(|s| s.items.as_deref());
            for v in items {
                prune_nulls(v, item);
            }
        }
        _ => {}
    }
}
