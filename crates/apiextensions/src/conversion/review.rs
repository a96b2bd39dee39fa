//! The `ConversionReview` exchange (`apiextensions.k8s.io/v1` and `v1beta1`): the request,
//! the checks on the response, and the checks and metadata restoration on each converted
//! object, with upstream's error texts.

use apiserver::storage::selection::labels::{label_key_errors, label_value_errors};
use serde_json::{Map, Value, json};

use super::metrics::FailureType;
use super::{gvk_string, split_api_version};

/// The review versions this server speaks.
pub const SUPPORTED: [&str; 2] = ["v1", "v1beta1"];

/// Why a review failed: upstream's text (without the `conversion webhook for …` prefix the
/// caller adds) and the metric's failure type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReviewError {
    /// The text.
    pub message: String,
    /// The failure type of `apiserver_conversion_webhook_request_total`.
    pub failure: FailureType,
}

fn fail(failure: FailureType, message: impl Into<String>) -> ReviewError {
    ReviewError {
        message: message.into(),
        failure,
    }
}

/// The first version of `conversion_review_versions` this server speaks (upstream picks the
/// first known one in the CRD's order).
pub fn pick_version(conversion_review_versions: &[String]) -> Option<&'static str> {
    conversion_review_versions
        .iter()
        .find_map(|v| SUPPORTED.iter().find(|s| **s == v.as_str()).copied())
}

/// The review sent to the webhook.
pub fn request(
    review_version: &str,
    uid: &str,
    desired_api_version: &str,
    objects: &[Value],
) -> Value {
    json!({
        "kind": "ConversionReview",
        "apiVersion": format!("apiextensions.k8s.io/{review_version}"),
        "request": {
            "uid": uid,
            "desiredAPIVersion": desired_api_version,
            "objects": objects,
        },
        "response": {"uid": "", "convertedObjects": null, "result": {"metadata": {}}},
    })
}

/// The converted objects of the webhook's `response`, after upstream's checks: for `v1`
/// the review's kind and version and the echoed `uid`; for both versions a response whose
/// `result.status` is `Success`.
pub fn converted_objects(
    review_version: &str,
    expected_uid: &str,
    response: &Value,
) -> Result<Vec<Value>, ReviewError> {
    let malformed = |m: String| fail(FailureType::MalformedResponse, m);
    if !response.is_object() {
        return Err(malformed(format!(
            "unable to decode the webhook response: expected a JSON object, got {}",
            json_type(response)
        )));
    }
    let s = |p: &str| {
        response
            .pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    if review_version == "v1" {
        let (api_version, kind) = (s("/apiVersion"), s("/kind"));
        if api_version != "apiextensions.k8s.io/v1" || kind != "ConversionReview" {
            return Err(malformed(format!(
                "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {}",
                gvk_string(api_version, kind)
            )));
        }
    }
    let Some(answer) = response.get("response").filter(|r| !r.is_null()) else {
        return Err(malformed("no response provided".into()));
    };
    if review_version == "v1" {
        let uid = answer
            .get("uid")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if uid != expected_uid {
            return Err(malformed(format!(
                "expected response.uid={expected_uid:?}, got {uid:?}"
            )));
        }
    }
    let status = answer
        .pointer("/result/status")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if status != "Success" {
        let message = answer
            .pointer("/result/message")
            .and_then(Value::as_str)
            .unwrap_or_default();
        return Err(malformed(if message.is_empty() {
            format!("response.result.status was '{status}', not 'Success'")
        } else {
            message.to_string()
        }));
    }
    match answer.get("convertedObjects") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => Ok(items.clone()),
        Some(other) => Err(malformed(format!(
            "unable to decode response.convertedObjects: expected an array, got {}",
            json_type(other)
        ))),
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// upstream `validateConvertedObject`: the converted object keeps the kind, name, namespace
/// and uid.
pub fn validate_converted(original: &Value, converted: &Value) -> Result<(), String> {
    let kind = |o: &Value| {
        o.get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    if kind(original) != kind(converted) {
        return Err(format!(
            "must have the same kind: {} != {}",
            kind(original),
            kind(converted)
        ));
    }
    for (field, what) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
        let (a, b) = (meta_str(original, field), meta_str(converted, field));
        if a != b {
            return Err(format!("must have the same {what}: {a} != {b}"));
        }
    }
    Ok(())
}

/// upstream `restoreObjectMeta`: the converted object gets the original's metadata back,
/// except its own labels and annotations (which must be valid string maps).
pub fn restore_metadata(original: &Value, converted: &mut Value) -> Result<(), String> {
    let response_meta = match converted.get("metadata") {
        None => return Err("missing metadata in converted object".into()),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => {
            return Err(format!(
                "invalid metadata of type {} in converted object",
                go_type(other)
            ));
        }
    };
    let mut restored: Map<String, Value> = match original.get("metadata") {
        None => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => {
            return Err(format!(
                "invalid metadata of type {} in input object",
                go_type(other)
            ));
        }
    };
    for field in ["labels", "annotations"] {
        let response_field = match response_meta.get(field) {
            None | Some(Value::Null) => {
                restored.remove(field);
                continue;
            }
            Some(Value::Object(m)) => m,
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in converted object",
                    go_type(other)
                ));
            }
        };
        let original_field = match restored.get(field) {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m),
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in original object",
                    go_type(other)
                ));
            }
        };
        let mut changed = original_field.map_or(0, Map::len) != response_field.len();
        for (k, v) in response_field {
            if !v.is_string() {
                return Err(format!(
                    "metadata.{field}[{k}] must be a string, but is {} in converted object",
                    go_type(v)
                ));
            }
            if original_field.and_then(|o| o.get(k)) != Some(v) {
                changed = true;
            }
        }
        if changed {
            let errs = if field == "labels" {
                label_errors(response_field)
            } else {
                annotation_errors(response_field)
            };
            match errs.len() {
                0 => {}
                1 => return Err(errs[0].clone()),
                _ => return Err(format!("[{}]", errs.join(", "))),
            }
        }
        restored.insert(field.into(), Value::Object(response_field.clone()));
    }
    if let Some(map) = converted.as_object_mut() {
        map.insert("metadata".into(), Value::Object(restored));
    }
    Ok(())
}

/// upstream `ValidateLabels` over `metadata.labels`.
fn label_errors(labels: &Map<String, Value>) -> Vec<String> {
    let mut errs = Vec::new();
    for (k, v) in labels {
        for msg in label_key_errors(k) {
            errs.push(format!("metadata.labels: Invalid value: {k:?}: {msg}"));
        }
        let v = v.as_str().unwrap_or_default();
        for msg in label_value_errors(v) {
            errs.push(format!("metadata.labels: Invalid value: {v:?}: {msg}"));
        }
    }
    errs
}

/// The total size of annotations upstream allows (256 KiB).
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// upstream `ValidateAnnotations` over `metadata.annotation` (upstream's path).
fn annotation_errors(annotations: &Map<String, Value>) -> Vec<String> {
    let mut errs = Vec::new();
    let mut total = 0;
    for (k, v) in annotations {
        for msg in label_key_errors(&k.to_lowercase()) {
            errs.push(format!("metadata.annotation: Invalid value: {k:?}: {msg}"));
        }
        total += k.len() + v.as_str().map_or(0, str::len);
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(format!(
            "metadata.annotation: Too long: may not be more than {TOTAL_ANNOTATION_SIZE_LIMIT} bytes"
        ));
    }
    errs
}

/// The Go type name upstream's messages print for a JSON value.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// Checks and repairs what the webhook returned for `originals` (converted to
/// `desired_api_version`): count, group-version, kind, identity, then restored metadata.
/// `label` names the conversion; `list` selects upstream's list texts (indices counted from
/// 1 as upstream's counter is already advanced) over its single-object ones.
pub fn check_converted(
    originals: &[Value],
    mut converted: Vec<Value>,
    desired_api_version: &str,
    label: &str,
    list: bool,
) -> Result<Vec<Value>, ReviewError> {
    let invalid = |m: String| fail(FailureType::InvalidConvertedObject, m);
    if converted.len() != originals.len() {
        return Err(fail(
            FailureType::PartialResponse,
            format!(
                "conversion webhook for {label} returned {} objects, expected {}",
                converted.len(),
                originals.len()
            ),
        ));
    }
    let (want_group, want_version) = split_api_version(desired_api_version);
    for (i, (original, out)) in originals.iter().zip(converted.iter_mut()).enumerate() {
        let index = i + 1;
        let (what, at) = if list {
            ("invalid converted object", format!("at index {index}"))
        } else {
            ("invalid object", "at index 0".to_string())
        };
        if !out.is_object() {
            return Err(invalid(format!(
                "conversion webhook for {label} returned {what} {at}: expected a JSON object, got {}",
                json_type(out)
            )));
        }
        let api_version = out
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let (group, version) = split_api_version(api_version);
        if (group, version) != (want_group, want_version) {
            return Err(invalid(format!(
                "conversion webhook for {label} returned {what} {at}: invalid groupVersion (expected {desired_api_version}, received {})",
                go_group_version(group, version)
            )));
        }
        let kind = |o: &Value| {
            o.get("kind")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        if kind(original) != kind(out) {
            return Err(invalid(format!(
                "conversion webhook for {label} returned {what} {at}: invalid kind (expected {}, received {})",
                kind(original),
                kind(out)
            )));
        }
        if let Err(e) = validate_converted(original, out) {
            return Err(invalid(if list {
                format!(
                    "conversion webhook for {label} returned invalid converted object at index {index}: {e}"
                )
            } else {
                format!("conversion webhook for {label} returned invalid object: {e}")
            }));
        }
        if let Err(e) = restore_metadata(original, out) {
            return Err(invalid(if list {
                format!(
                    "conversion webhook for {label} returned invalid metadata in object at index {index}: {e}"
                )
            } else {
                format!("conversion webhook for {label} returned invalid metadata: {e}")
            }));
        }
    }
    Ok(converted)
}

/// Go's `GroupVersion.String()`: `version` alone for the legacy group.
fn go_group_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}
