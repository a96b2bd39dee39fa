//! Checking a JSON object against its k8s-openapi type: type errors become field errors (as
//! upstream's decoder refuses them) and unknown fields are reported as upstream's strict
//! decoder does (`unknown field "spec.bogusField"`).

use crate::registry::FieldError;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A copy of `obj` ready for typed decoding: without `apiVersion`/`kind` (k8s-openapi checks
/// them against its own constants, while the REST layer has already checked them) and without
/// `null` map values (Go decodes `null` as the zero value; serde refuses it for required
/// fields).
fn decodable(obj: &Value) -> Value {
    let mut copy = strip_nulls(obj);
    if let Value::Object(map) = &mut copy {
        map.remove("apiVersion");
        map.remove("kind");
    }
    copy
}

fn strip_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), strip_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(strip_nulls).collect()),
        other => other.clone(),
    }
}

/// The first type error of `obj` decoded as `T`, as a field error at its path
/// (`spec.replicas: Invalid value: "abc": expected i32`).
pub fn type_error<T: DeserializeOwned>(obj: &Value) -> Option<FieldError> {
    let copy = decodable(obj);
    let err = serde_path_to_error::deserialize::<_, T>(&copy).err()?;
    let mut field = String::new();
    let mut cursor = Some(&copy);
    for segment in err.path().iter() {
        match segment {
            serde_path_to_error::Segment::Seq { index } => {
                field.push_str(&format!("[{index}]"));
                cursor = cursor.and_then(|v| v.get(*index));
            }
            serde_path_to_error::Segment::Map { key } => {
                if !field.is_empty() {
                    field.push('.');
                }
                field.push_str(key);
                cursor = cursor.and_then(|v| v.get(key.as_str()));
            }
            serde_path_to_error::Segment::Enum { .. } | serde_path_to_error::Segment::Unknown => {}
        }
    }
    let detail = err.inner().to_string();
    let bad = cursor.cloned().unwrap_or(Value::Null);
    Some(FieldError::invalid(&field, bad, &detail))
}

/// Removes the fields of `obj` that `T` does not know — upstream decodes a body into its Go
/// type, so they are never stored — and names them as upstream's strict decoder does
/// (`spec.containers[0].bogus`), in document order.
pub fn drop_unknown_fields<T: DeserializeOwned>(obj: &mut Value) -> Vec<String> {
    let paths = unknown_paths::<T>(obj);
    for path in &paths {
        remove_at(obj, path);
    }
    paths.iter().map(|p| render(p)).collect()
}

/// One step of a path into a JSON value.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

fn unknown_paths<T: DeserializeOwned>(obj: &Value) -> Vec<Vec<Step>> {
    // The copy only lacks null map entries and the top-level apiVersion/kind, so paths into
    // it are paths into `obj`.
    let copy = decodable(obj);
    let mut unknown = Vec::new();
    // A type error stops decoding; what was found until then is still reported.
    let _ = serde_ignored::deserialize::<_, _, T>(&copy, |path| {
        let mut steps = Vec::new();
        collect_steps(&path, &mut steps);
        unknown.push(steps);
    });
    unknown
}

/// serde_ignored's path as steps, without its `?` (Option/newtype) segments.
fn collect_steps(path: &serde_ignored::Path<'_>, steps: &mut Vec<Step>) {
    match path {
        serde_ignored::Path::Root => {}
        serde_ignored::Path::Seq { parent, index } => {
            collect_steps(parent, steps);
            steps.push(Step::Index(*index));
        }
        serde_ignored::Path::Map { parent, key } => {
            collect_steps(parent, steps);
            steps.push(Step::Key(key.clone()));
        }
        serde_ignored::Path::Some { parent }
        | serde_ignored::Path::NewtypeStruct { parent }
        | serde_ignored::Path::NewtypeVariant { parent } => collect_steps(parent, steps),
    }
}

/// `spec.containers[0].bogus`.
fn render(steps: &[Step]) -> String {
    let mut out = String::new();
    for step in steps {
        match step {
            Step::Index(i) => out.push_str(&format!("[{i}]")),
            Step::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
        }
    }
    out
}

/// Removes the field at `path` (whose last step is a key) from `value`, if it is there.
fn remove_at(value: &mut Value, path: &[Step]) {
    let Some((Step::Key(last), parents)) = path.split_last() else {
        return;
    };
    let mut cursor = value;
    for step in parents {
        let next = match (step, cursor) {
            (Step::Key(k), Value::Object(map)) => map.get_mut(k),
            (Step::Index(i), Value::Array(items)) => items.get_mut(*i),
            _ => None,
        };
        match next {
            Some(v) => cursor = v,
            None => return,
        }
    }
    if let Value::Object(map) = cursor {
        map.remove(last);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{ConfigMap, Pod};
    use serde_json::json;

    #[test]
    fn unknown_fields_are_dropped_at_every_depth_and_known_ones_kept() {
        let mut obj = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "x", "bogusMeta": 1, "labels": {"free": "form"}},
            "spec": {"bogus": {"deep": true}, "nodeName": null,
                     "containers": [{"name": "a", "image": "i"},
                                    {"name": "c", "image": "i", "extra": 1,
                                     "ports": [{"containerPort": 80, "nope": "x"}]}]}
        });
        let dropped = drop_unknown_fields::<Pod>(&mut obj);
        assert_eq!(
            dropped,
            vec![
                "metadata.bogusMeta",
                "spec.bogus",
                "spec.containers[1].extra",
                "spec.containers[1].ports[0].nope"
            ]
        );
        assert_eq!(
            obj,
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "x", "labels": {"free": "form"}},
                "spec": {"nodeName": null,
                         "containers": [{"name": "a", "image": "i"},
                                        {"name": "c", "image": "i",
                                         "ports": [{"containerPort": 80}]}]}
            })
        );
        assert!(drop_unknown_fields::<Pod>(&mut obj).is_empty());
    }

    #[test]
    fn unknown_fields_are_named_as_upstream() {
        let obj = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "x", "bogusMeta": 1},
            "spec": {"bogusField": true, "selector": {"matchLabels": {"a": "b"}},
                     "template": {"spec": {"containers": [{"name": "c", "image": "i", "extra": 1}]}}}
        });
        assert_eq!(
            drop_unknown_fields::<Deployment>(&mut obj.clone()),
            vec![
                "metadata.bogusMeta",
                "spec.bogusField",
                "spec.template.spec.containers[0].extra"
            ]
        );
    }

    #[test]
    fn known_fields_report_nothing() {
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
                         "data": {"a": "b"}, "binaryData": {"b": "AAAA"}});
        assert!(drop_unknown_fields::<ConfigMap>(&mut obj.clone()).is_empty());
        assert!(type_error::<ConfigMap>(&obj).is_none());
    }

    #[test]
    fn type_errors_name_the_field_and_value() {
        let obj = json!({"metadata": {"name": "x"}, "spec": {"replicas": "abc"}});
        let err = type_error::<Deployment>(&obj).unwrap();
        assert_eq!(err.field, "spec.replicas");
        assert!(
            err.to_string()
                .starts_with("spec.replicas: Invalid value: \"abc\": invalid type: string"),
            "{err}"
        );
        let obj = json!({"metadata": {"name": "x"},
                         "spec": {"containers": [{"name": "c", "ports": [{"containerPort": "x"}]}]}});
        let err = type_error::<Pod>(&obj).unwrap();
        assert_eq!(err.field, "spec.containers[0].ports[0].containerPort");
    }

    #[test]
    fn nulls_decode_as_zero_values() {
        let obj = json!({"metadata": {"name": "x", "labels": null},
                         "spec": {"containers": [{"name": null, "image": "i"}]}});
        assert!(type_error::<Pod>(&obj).is_none());
    }
}
