//! Checks beyond the OpenAPI validation that upstream runs on custom resources: embedded
//! resources' `apiVersion`/`kind`/`metadata` (`objectmeta/validation.go`) and the
//! uniqueness of `x-kubernetes-list-type: set|map` lists (`listtype/validation.go`).

use apiserver::registry::FieldError;
use serde_json::{Map, Value};

use super::names::dns1035_label;
use super::node::Node;
use super::path::{idx, key, sub};

/// Errors of embedded resources under `x` (not the resource root, which the strategy checks).
pub(crate) fn validate_embedded(
    path: &str,
    x: &Value,
    s: Option<&Node>,
    errs: &mut Vec<FieldError>,
) {
    let Some(s) = s else {
        return;
    };
    match x {
        Value::Object(map) => {
            if s.x_embedded_resource {
                embedded_resource(path, map, errs);
            }
            for (k, v) in map {
                if let Some(prop) = s.properties.get(k) {
                    validate_embedded(&sub(path, k), v, Some(prop), errs);
                } else if s.has_additional() {
                    validate_embedded(&key(path, k), v, s.additional_schema(), errs);
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                validate_embedded(&idx(path, i), v, s.items.as_deref(), errs);
            }
        }
        _ => {}
    }
}

fn embedded_resource(path: &str, x: &Map<String, Value>, errs: &mut Vec<FieldError>) {
    if !x.contains_key("apiVersion") {
        errs.push(FieldError::required(&sub(path, "apiVersion"), ""));
    }
    if !x.contains_key("kind") {
        errs.push(FieldError::required(&sub(path, "kind"), ""));
    }
    for (k, v) in x {
        let p = sub(path, k);
        match k.as_str() {
            "apiVersion" => match v {
                Value::String(s) if s.is_empty() => {
                    errs.push(FieldError::invalid(&p, s.as_str(), "must not be empty"))
                }
                Value::String(s) if s.matches('/').count() > 1 => errs.push(FieldError::invalid(
                    &p,
                    s.as_str(),
                    &format!("unexpected GroupVersion string: {s}"),
                )),
                Value::String(_) => {}
                other => errs.push(FieldError::invalid(&p, other.clone(), "must be a string")),
            },
            "kind" => match v {
                Value::String(s) if s.is_empty() => {
                    errs.push(FieldError::invalid(&p, s.as_str(), "must not be empty"))
                }
                Value::String(s) => {
                    let e = dns1035_label(&s.to_lowercase());
                    if !e.is_empty() {
                        errs.push(FieldError::invalid(
                            &p,
                            s.as_str(),
                            &format!(
                                "may have mixed case, but should otherwise match: {}",
                                e.join(",")
                            ),
                        ));
                    }
                }
                other => errs.push(FieldError::invalid(&p, other.clone(), "must be a string")),
            },
            "metadata" => metadata(&p, v, errs),
            _ => {}
        }
    }
}

/// The embedded ObjectMeta, checked as upstream's `ValidateObjectMeta` with path-segment
/// names (an empty name counts as set; namespaced when it has a namespace).
fn metadata(path: &str, v: &Value, errs: &mut Vec<FieldError>) {
    let Value::Object(m) = v else {
        let kind = match v {
            Value::String(_) => "string",
            Value::Number(_) => "number",
            Value::Bool(_) => "bool",
            Value::Array(_) => "array",
            _ => "null",
        };
        if !v.is_null() {
            errs.push(FieldError::invalid(
                path,
                v.clone(),
                &format!("json: cannot unmarshal {kind} into Go value of type v1.ObjectMeta"),
            ));
        }
        return;
    };
    let mut meta = m.clone();
    if meta
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        meta.insert("name".into(), Value::String("fakename".into()));
    }
    let namespaced = !meta
        .get("namespace")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty();
    let obj = serde_json::json!({ "metadata": meta });
    for mut e in apiserver::registry::store::meta::validate_object_meta(&obj, namespaced) {
        if let Some(rest) = e.field.strip_prefix("metadata") {
            e.field = format!("{path}{rest}");
        }
        errs.push(e);
    }
}

/// Duplicate entries of `x-kubernetes-list-type: set` and `map` lists.
pub(crate) fn validate_list_types(
    path: &str,
    s: &Node,
    obj: &Map<String, Value>,
    errs: &mut Vec<FieldError>,
) {
    if let Some(ap) = s.additional_schema() {
        for (k, v) in obj {
            list_value(&key(path, k), ap, v, errs);
        }
    }
    for (k, v) in obj {
        if let Some(prop) = s.properties.get(k) {
            list_value(&sub(path, k), prop, v, errs);
        }
    }
}

fn list_value(path: &str, s: &Node, v: &Value, errs: &mut Vec<FieldError>) {
    match v {
        Value::Array(items) => list_array(path, s, items, errs),
        Value::Object(m) => validate_list_types(path, s, m, errs),
        _ => {}
    }
}

fn list_array(path: &str, s: &Node, items: &[Value], errs: &mut Vec<FieldError>) {
    match s.x_list_type.as_deref() {
        Some("set") => {
            for i in non_unique(items) {
                errs.push(FieldError::duplicate(&idx(path, i), items[i].clone()));
            }
        }
        Some("map") => list_map(path, s, items, errs),
        _ => {}
    }
    if let Some(item) = &s.items {
        for (i, v) in items.iter().enumerate() {
            list_value(&idx(path, i), item, v, errs);
        }
    }
}

/// The indices of the second occurrence of each repeated value (upstream reports each
/// repeated value once).
fn non_unique(items: &[Value]) -> Vec<usize> {
    let mut out = Vec::new();
    for (i, x) in items.iter().enumerate() {
        let before = items[..i].iter().filter(|y| *y == x).count();
        if before == 1 {
            out.push(i);
        }
    }
    out
}

fn list_map(path: &str, s: &Node, items: &[Value], errs: &mut Vec<FieldError>) {
    for (i, x) in items.iter().enumerate() {
        if !x.is_null() && !x.is_object() {
            errs.push(FieldError::invalid(
                &idx(path, i),
                x.clone(),
                "must be an object for an array of list-type map",
            ));
            return;
        }
    }
    if items.len() <= 1 {
        return;
    }
    // The key of each entry: the key fields it has (an absent key is "unspecified").
    let keys: Vec<Map<String, Value>> = items
        .iter()
        .map(|x| {
            let mut key = Map::new();
            if let Some(m) = x.as_object() {
                for k in &s.x_list_map_keys {
                    if let Some(v) = m.get(k) {
                        key.insert(k.clone(), v.clone());
                    }
                }
            }
            key
        })
        .collect();
    let as_values: Vec<Value> = keys.iter().cloned().map(Value::Object).collect();
    for i in non_unique(&as_values) {
        errs.push(FieldError::duplicate(&idx(path, i), as_values[i].clone()));
    }
}
