//! JSON patches from mutating webhooks, applied with the semantics and error texts of the
//! library upstream uses for them (evanphx/json-patch v4): `add`, `remove`, `replace`,
//! `move`, `copy` and `test`, RFC 6901 pointers, `-` for the end of an array.

use serde_json::{Map, Value};

/// A decoded patch: its operations as JSON objects.
#[derive(Clone, Debug, PartialEq)]
pub struct Patch(pub Vec<Map<String, Value>>);

/// Decodes patch bytes (a JSON array of objects); the error text is Go's.
pub fn decode(bytes: &[u8]) -> Result<Patch, String> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        apiserver::util::gojson::syntax_error_text(bytes, &e).unwrap_or_else(|| e.to_string())
    })?;
    match value {
        Value::Array(items) => items
            .into_iter()
            .map(|item| match item {
                Value::Object(map) => Ok(map),
                other => Err(format!(
                    "json: cannot unmarshal {} into Go value of type jsonpatch.Operation",
                    go_type(&other)
                )),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Patch),
        other => Err(format!(
            "json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
            go_type(&other)
        )),
    }
}

fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

const MISSING: &str = "missing value";

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// The container holding the last token of `path` and that token, if every parent exists
/// (upstream `findObject`).
fn find_parent<'a>(doc: &'a mut Value, path: &str) -> Option<(&'a mut Value, String)> {
    let mut parts: Vec<String> = path.split('/').map(unescape).collect();
    if parts.len() < 2 {
        return None;
    }
    let key = parts.pop()?;
    let mut cursor = doc;
    for part in parts.into_iter().skip(1) {
        cursor = match cursor {
            Value::Object(map) => map.get_mut(&part)?,
            Value::Array(items) => {
                let idx: usize = part.parse().ok()?;
                items.get_mut(idx)?
            }
            _ => return None,
        };
        if !(cursor.is_object() || cursor.is_array()) {
            return None;
        }
    }
    Some((cursor, key))
}

fn array_index(key: &str, len: usize, for_add: bool) -> Result<usize, String> {
    if for_add && key == "-" {
        return Ok(len);
    }
    let idx: i64 = key
        .parse()
        .map_err(|_| format!("Unable to access invalid index: {key}: invalid index referenced"))?;
    let limit = if for_add { len as i64 } else { len as i64 - 1 };
    let resolved = if idx < 0 { idx + len as i64 } else { idx };
    if idx < -(len as i64) || resolved < 0 || resolved > limit {
        return Err(format!(
            "Unable to access invalid index: {idx}: invalid index referenced"
        ));
    }
    Ok(resolved as usize)
}

fn get_child<'a>(container: &'a Value, key: &str) -> Option<&'a Value> {
    match container {
        Value::Object(map) => map.get(key),
        Value::Array(items) => array_index(key, items.len(), false)
            .ok()
            .and_then(|i| items.get(i)),
        _ => None,
    }
}

fn add_child(container: &mut Value, key: &str, value: Value) -> Result<(), String> {
    match container {
        Value::Object(map) => {
            map.insert(key.to_string(), value);
            Ok(())
        }
        Value::Array(items) => {
            let idx = array_index(key, items.len(), true)?;
            items.insert(idx, value);
            Ok(())
        }
        _ => Err(format!("Unable to access invalid index: {key}")),
    }
}

fn remove_child(container: &mut Value, key: &str) -> Result<Value, String> {
    match container {
        Value::Object(map) => map
            .remove(key)
            .ok_or_else(|| format!("Unable to remove nonexistent key: {key}: {MISSING}")),
        Value::Array(items) => {
            let idx = array_index(key, items.len(), false)?;
            Ok(items.remove(idx))
        }
        _ => Err(format!(
            "Unable to remove nonexistent key: {key}: {MISSING}"
        )),
    }
}

fn op_string<'a>(op: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    op.get(key).and_then(Value::as_str)
}

/// Resolves a whole-document pointer (`""`) or a child pointer to its value.
fn lookup(doc: &Value, path: &str) -> Option<Value> {
    if path.is_empty() {
        return Some(doc.clone());
    }
    let mut doc = doc.clone();
    let (container, key) = find_parent(&mut doc, path)?;
    get_child(container, &key).cloned()
}

/// Applies `patch` to `doc`, with upstream's error texts.
pub fn apply(patch: &Patch, doc: &mut Value) -> Result<(), String> {
    for op in &patch.0 {
        let kind = op_string(op, "op").unwrap_or("unknown");
        let path = op_string(op, "path").unwrap_or_default().to_string();
        match kind {
            "add" => {
                let value = op.get("value").cloned().unwrap_or(Value::Null);
                if path.is_empty() {
                    *doc = value;
                    continue;
                }
                let Some((container, key)) = find_parent(doc, &path) else {
                    return Err(format!(
                        "add operation does not apply: doc is missing path: \"{path}\": {MISSING}"
                    ));
                };
                add_child(container, &key, value)
                    .map_err(|e| format!("error in add for path: '{path}': {e}"))?;
            }
            "remove" => {
                let Some((container, key)) = find_parent(doc, &path) else {
                    return Err(format!(
                        "remove operation does not apply: doc is missing path: \"{path}\": {MISSING}"
                    ));
                };
                remove_child(container, &key)
                    .map_err(|e| format!("error in remove for path: '{path}': {e}"))?;
            }
            "replace" => {
                let value = op.get("value").cloned().unwrap_or(Value::Null);
                if path.is_empty() {
                    *doc = value;
                    continue;
                }
                let Some((container, key)) = find_parent(doc, &path) else {
                    return Err(format!(
                        "replace operation does not apply: doc is missing path: {path}: {MISSING}"
                    ));
                };
                let slot = match container {
                    Value::Object(map) => map.get_mut(&key),
                    Value::Array(items) => match array_index(&key, items.len(), false) {
                        Ok(i) => items.get_mut(i),
                        Err(_) => None,
                    },
                    _ => None,
                };
                let Some(slot) = slot else {
                    return Err(format!(
                        "replace operation does not apply: doc is missing key: {path}: {MISSING}"
                    ));
                };
                *slot = value;
            }
            "move" | "copy" => {
                let from = op_string(op, "from").unwrap_or_default().to_string();
                let value = if kind == "move" {
                    let Some((container, key)) = find_parent(doc, &from) else {
                        return Err(format!(
                            "move operation does not apply: doc is missing from path: {from}: {MISSING}"
                        ));
                    };
                    remove_child(container, &key)
                        .map_err(|e| format!("error in move for path: '{key}': {e}"))?
                } else {
                    lookup(doc, &from).ok_or_else(|| {
                        format!(
                            "copy operation does not apply: doc is missing from path: \"{from}\": {MISSING}"
                        )
                    })?
                };
                let Some((container, key)) = find_parent(doc, &path) else {
                    return Err(format!(
                        "{kind} operation does not apply: doc is missing destination path: {path}: {MISSING}"
                    ));
                };
                add_child(container, &key, value)
                    .map_err(|e| format!("error in {kind} for path: '{path}': {e}"))?;
            }
            "test" => {
                let expected = op.get("value").cloned().unwrap_or(Value::Null);
                let actual = if path.is_empty() {
                    Some(doc.clone())
                } else {
                    match find_parent(doc, &path) {
                        Some((container, key)) => get_child(container, &key).cloned(),
                        None => {
                            return Err(format!(
                                "test operation does not apply: is missing path: {path}: {MISSING}"
                            ));
                        }
                    }
                };
                if actual.unwrap_or(Value::Null) != expected {
                    return Err(format!("testing value {path} failed: test failed"));
                }
            }
            other => {
                return Err(format!("Unexpected kind: {other}: unknown object type"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(patch: Value, doc: Value) -> Result<Value, String> {
        let patch = decode(patch.to_string().as_bytes())?;
        let mut doc = doc;
        apply(&patch, &mut doc).map(|()| doc)
    }

    #[test]
    fn operations_apply() {
        let doc = json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "list": [1, 2]});
        let out = run(
            json!([
                {"op": "add", "path": "/metadata/labels/a~1b", "value": "y"},
                {"op": "replace", "path": "/metadata/labels/x", "value": "2"},
                {"op": "add", "path": "/list/-", "value": 3},
                {"op": "remove", "path": "/list/0"},
                {"op": "copy", "from": "/metadata/name", "path": "/copied"},
                {"op": "move", "from": "/copied", "path": "/moved"},
                {"op": "test", "path": "/moved", "value": "a"}
            ]),
            doc,
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"metadata": {"name": "a", "labels": {"x": "2", "a/b": "y"}}, "list": [2, 3], "moved": "a"})
        );
    }

    #[test]
    fn failures_read_like_upstream() {
        let doc = json!({"metadata": {"name": "a", "labels": {}}});
        assert_eq!(
            run(
                json!([{"op": "replace", "path": "/metadata/labels/missing", "value": "x"}]),
                doc.clone()
            )
            .unwrap_err(),
            "replace operation does not apply: doc is missing key: /metadata/labels/missing: missing value"
        );
        assert_eq!(
            run(json!([{"op": "remove", "path": "/spec/x"}]), doc.clone()).unwrap_err(),
            "remove operation does not apply: doc is missing path: \"/spec/x\": missing value"
        );
        assert_eq!(
            run(
                json!([{"op": "add", "path": "/spec/x", "value": 1}]),
                doc.clone()
            )
            .unwrap_err(),
            "add operation does not apply: doc is missing path: \"/spec/x\": missing value"
        );
        assert_eq!(
            run(
                json!([{"op": "test", "path": "/metadata/name", "value": "b"}]),
                doc.clone()
            )
            .unwrap_err(),
            "testing value /metadata/name failed: test failed"
        );
        assert_eq!(
            run(json!([{"op": "frob", "path": "/x"}]), doc.clone()).unwrap_err(),
            "Unexpected kind: frob: unknown object type"
        );
        assert!(decode(b"{\"op\":\"add\"}").is_err());
        assert!(decode(b"[").is_err());
    }
}
