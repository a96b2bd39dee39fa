//! Checking a JSON object against its k8s-openapi type: type errors become field errors (as
//! upstream's decoder refuses them) and unknown fields are reported as upstream's strict
//! decoder does (`unknown field "spec.bogusField"`).

use apiserver::registry::FieldError;
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

/// The fields of `obj` that `T` does not know, as upstream's strict decoder names them
/// (`spec.containers[0].bogus`), in document order.
pub fn unknown_fields<T: DeserializeOwned>(obj: &Value) -> Vec<String> {
    let copy = decodable(obj);
    let mut unknown = Vec::new();
    // A type error stops decoding; what was found until then is still reported.
    let _ = serde_ignored::deserialize::<_, _, T>(&copy, |path| {
        unknown.push(render_path(&path));
    });
    unknown
}

/// serde_ignored's path without its `?` (Option/newtype) segments, with list indexes in
/// brackets.
fn render_path(path: &serde_ignored::Path<'_>) -> String {
    match path {
        serde_ignored::Path::Root => String::new(),
        serde_ignored::Path::Seq { parent, index } => format!("{}[{index}]", render_path(parent)),
        serde_ignored::Path::Map { parent, key } => {
            let parent = render_path(parent);
            if parent.is_empty() {
                key.clone()
            } else {
                format!("{parent}.{key}")
            }
        }
        serde_ignored::Path::Some { parent }
        | serde_ignored::Path::NewtypeStruct { parent }
        | serde_ignored::Path::NewtypeVariant { parent } => render_path(parent),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{ConfigMap, Pod};
    use serde_json::json;

    #[test]
    fn unknown_fields_are_named_as_upstream() {
        let obj = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "x", "bogusMeta": 1},
            "spec": {"bogusField": true, "selector": {"matchLabels": {"a": "b"}},
                     "template": {"spec": {"containers": [{"name": "c", "image": "i", "extra": 1}]}}}
        });
        assert_eq!(
            unknown_fields::<Deployment>(&obj),
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
        assert!(unknown_fields::<ConfigMap>(&obj).is_empty());
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
