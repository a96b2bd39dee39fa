//! Small helpers for reading and defaulting unstructured objects by dotted paths
//! (`spec.template.spec`).

use serde_json::{Map, Value};

/// The value at a dotted path of object keys.
pub fn get<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(obj, |v, key| v.get(key))
}

/// The mutable value at a dotted path of object keys.
pub fn get_mut<'a>(obj: &'a mut Value, path: &str) -> Option<&'a mut Value> {
    path.split('.').try_fold(obj, |v, key| v.get_mut(key))
}

/// The string at a dotted path.
pub fn str_at<'a>(obj: &'a Value, path: &str) -> Option<&'a str> {
    get(obj, path).and_then(Value::as_str)
}

/// The integer at a dotted path.
pub fn i64_at(obj: &Value, path: &str) -> Option<i64> {
    get(obj, path).and_then(Value::as_i64)
}

/// The array at a dotted path (empty when absent).
pub fn array_at<'a>(obj: &'a Value, path: &str) -> &'a [Value] {
    get(obj, path)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The object at a dotted path, created (replacing a `null` or non-object) when missing.
pub fn object_at<'a>(obj: &'a mut Value, path: &str) -> Option<&'a mut Map<String, Value>> {
    let mut cursor = obj;
    for key in path.split('.') {
        if !cursor.is_object() {
            *cursor = Value::Object(Map::new());
        }
        cursor = match cursor {
            Value::Object(map) => map
                .entry(key.to_string())
                .or_insert_with(|| Value::Object(Map::new())),
            other => other,
        };
    }
    if !cursor.is_object() {
        *cursor = Value::Object(Map::new());
    }
    cursor.as_object_mut()
}

/// Sets `key` of `map` to `value` unless it holds a non-null value already.
pub fn default_key(map: &mut Map<String, Value>, key: &str, value: Value) {
    match map.get(key) {
        Some(v) if !v.is_null() => {}
        _ => {
            map.insert(key.to_string(), value);
        }
    }
}

/// Sets the field at a dotted path unless it holds a non-null value already, creating parent
/// objects as needed.
pub fn default_at(obj: &mut Value, path: &str, value: Value) {
    let (parent, key) = match path.rsplit_once('.') {
        Some((parent, key)) => (Some(parent), key),
        None => (None, path),
    };
    let map = match parent {
        Some(parent) => object_at(obj, parent),
        None => obj.as_object_mut(),
    };
    if let Some(map) = map {
        default_key(map, key, value);
    }
}

/// The mutable array at a dotted path, if there is one.
pub fn array_mut<'a>(obj: &'a mut Value, path: &str) -> Option<&'a mut Vec<Value>> {
    get_mut(obj, path).and_then(Value::as_array_mut)
}

/// Whether the object has a non-null value at a dotted path.
pub fn has(obj: &Value, path: &str) -> bool {
    get(obj, path).is_some_and(|v| !v.is_null())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_only_missing_fields() {
        let mut obj = json!({"spec": {"a": 1, "b": null}});
        default_at(&mut obj, "spec.a", json!(2));
        default_at(&mut obj, "spec.b", json!(3));
        default_at(&mut obj, "spec.c.d", json!(4));
        assert_eq!(obj, json!({"spec": {"a": 1, "b": 3, "c": {"d": 4}}}));
        assert_eq!(i64_at(&obj, "spec.c.d"), Some(4));
        assert!(array_at(&obj, "spec.none").is_empty());
    }
}
