//! `metadata` of unstructured objects: accessors, the system fields a create fills in, name
//! generation, and the common ObjectMeta validation upstream runs for every resource
//! (`ValidateObjectMetaAccessor` and its update variant).

use rand::Rng;
use serde_json::{Map, Value};

use crate::registry::FieldError;
use crate::status::ApiError;
use crate::storage::selection::labels::{label_key_errors, label_value_errors};

/// The `metadata` map of `obj` (`None` when absent or not a map).
pub fn meta(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

/// The `metadata` map of `obj`, created when absent. `obj` must be a JSON object.
pub fn meta_mut(obj: &mut Value) -> Result<&mut Map<String, Value>, ApiError> {
    let top = obj
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("the object is not a JSON object"))?;
    let entry = top
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    entry
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("the object's metadata is not a JSON object"))
}

/// A string field of `metadata` (empty when absent).
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    meta(obj)
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `metadata.generation` (0 when absent).
pub fn generation(obj: &Value) -> i64 {
    meta(obj)
        .and_then(|m| m.get("generation"))
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// `metadata.finalizers`.
pub fn finalizers(obj: &Value) -> Vec<String> {
    meta(obj)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `metadata.deletionTimestamp` is set.
pub fn is_deleting(obj: &Value) -> bool {
    meta(obj)
        .and_then(|m| m.get("deletionTimestamp"))
        .is_some_and(|v| !v.is_null())
}

/// Sets (non-empty) or removes (empty) a string field of `metadata`.
pub fn set_meta_str(obj: &mut Value, field: &str, value: &str) -> Result<(), ApiError> {
    let m = meta_mut(obj)?;
    if value.is_empty() {
        m.remove(field);
    } else {
        m.insert(field.to_string(), Value::String(value.to_string()));
    }
    Ok(())
}

/// Sets `kind` and `apiVersion`.
pub fn set_type_meta(obj: &mut Value, kind: &str, api_version: &str) {
    if let Some(top) = obj.as_object_mut() {
        top.insert("apiVersion".into(), Value::String(api_version.into()));
        top.insert("kind".into(), Value::String(kind.into()));
    }
}

/// Now as RFC 3339 with seconds in UTC (`metav1.Time`'s encoding).
pub fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// The alphabet of upstream's `SimpleNameGenerator` (no vowels, no confusable characters).
const NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
/// Length of the random suffix.
const RANDOM_LENGTH: usize = 5;
/// Names are at most 63 characters, so the base is cut to leave room for the suffix.
const MAX_GENERATED_BASE: usize = 63 - RANDOM_LENGTH;

/// `names.SimpleNameGenerator.GenerateName`: `base` (cut to 58 bytes) plus 5 random characters.
pub fn generate_name(base: &str) -> String {
    let mut cut = base.len().min(MAX_GENERATED_BASE);
    while !base.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut rng = rand::rng();
    let suffix: String = (0..RANDOM_LENGTH)
        .map(|_| char::from(NAME_ALPHABET[rng.random_range(0..NAME_ALPHABET.len())]))
        .collect();
    format!("{}{suffix}", &base[..cut])
}

/// `path.IsValidPathSegmentName` / `IsValidPathSegmentPrefix`: names become key and URL path
/// segments.
pub fn path_segment_errors(name: &str, prefix: bool) -> Vec<String> {
    let mut errs = Vec::new();
    if !prefix {
        for bad in [".", ".."] {
            if name == bad {
                errs.push(format!("may not be '{bad}'"));
            }
        }
    }
    for bad in ["/", "%"] {
        if name.contains(bad) {
            errs.push(format!("may not contain '{bad}'"));
        }
    }
    errs
}

/// The common ObjectMeta checks of a new object (upstream `ValidateObjectMetaAccessor` with
/// path-segment names): name or generateName, namespace presence by scope, generation, labels
/// and annotation keys.
pub fn validate_object_meta(obj: &Value, namespaced: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let generate_name = meta_str(obj, "generateName");
    if !generate_name.is_empty() {
        for msg in path_segment_errors(generate_name, true) {
            errs.push(FieldError::invalid(
                "metadata.generateName",
                generate_name,
                &msg,
            ));
        }
    }
    let name = meta_str(obj, "name");
    if name.is_empty() {
        errs.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        for msg in path_segment_errors(name, false) {
            errs.push(FieldError::invalid("metadata.name", name, &msg));
        }
    }
    let ns = meta_str(obj, "namespace");
    if namespaced {
        if ns.is_empty() {
            errs.push(FieldError::required("metadata.namespace", ""));
        } else {
            for msg in crate::registry::names::dns1123_label(ns) {
                errs.push(FieldError::invalid("metadata.namespace", ns, &msg));
            }
        }
    } else if !ns.is_empty() {
        errs.push(FieldError::forbidden(
            "metadata.namespace",
            "not allowed on this type",
        ));
    }
    if generation(obj) < 0 {
        errs.push(FieldError::invalid(
            "metadata.generation",
            generation(obj),
            "must be greater than or equal to 0",
        ));
    }
    if let Some(labels) = meta(obj)
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
    {
        for (k, v) in labels {
            for msg in label_key_errors(k) {
                errs.push(FieldError::invalid("metadata.labels", k.as_str(), &msg));
            }
            let v = v.as_str().unwrap_or("");
            for msg in label_value_errors(v) {
                errs.push(FieldError::invalid("metadata.labels", v, &msg));
            }
        }
    }
    if let Some(annotations) = meta(obj)
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
    {
        for k in annotations.keys() {
            for msg in label_key_errors(&k.to_lowercase()) {
                errs.push(FieldError::invalid(
                    "metadata.annotations",
                    k.as_str(),
                    &msg,
                ));
            }
        }
    }
    errs.extend(validate_owner_references(obj));
    errs
}

/// The group and version of an `apiVersion` as `schema.ParseGroupVersion` reads it: `v1` is
/// the legacy group; more than one `/` parses as nothing.
pub fn parse_group_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        None => ("", api_version),
        Some((_, version)) if version.contains('/') => ("", ""),
        Some((group, version)) => (group, version),
    }
}

/// Upstream `ValidateOwnerReferences` of `metadata.ownerReferences`: apiVersion (its version),
/// kind, name and uid must be set, core/v1 Events may not own anything, and at most one
/// reference may be the controller.
pub fn validate_owner_references(obj: &Value) -> Vec<FieldError> {
    const FIELD: &str = "metadata.ownerReferences";
    let mut errs = Vec::new();
    let Some(refs) = meta(obj)
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
    else {
        return errs;
    };
    let text = |r: &Value, key: &str| r.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    let mut first_controller: Option<String> = None;
    for r in refs {
        let api_version = text(r, "apiVersion");
        let kind = text(r, "kind");
        let name = text(r, "name");
        let uid = text(r, "uid");
        let (group, version) = parse_group_version(&api_version);
        if version.is_empty() {
            errs.push(FieldError::invalid(
                &format!("{FIELD}.apiVersion"),
                api_version.as_str(),
                "version must not be empty",
            ));
        }
        if kind.is_empty() {
            errs.push(FieldError::invalid(
                &format!("{FIELD}.kind"),
                kind.as_str(),
                "must not be empty",
            ));
        }
        if name.is_empty() {
            errs.push(FieldError::invalid(
                &format!("{FIELD}.name"),
                name.as_str(),
                "must not be empty",
            ));
        }
        if uid.is_empty() {
            errs.push(FieldError::invalid(
                &format!("{FIELD}.uid"),
                uid.as_str(),
                "must not be empty",
            ));
        }
        if group.is_empty() && version == "v1" && kind == "Event" {
            errs.push(FieldError::invalid(
                FIELD,
                r.clone(),
                &format!("{group}/{version}, Kind={kind} is disallowed from being an owner"),
            ));
        }
        if r.get("controller").and_then(Value::as_bool) == Some(true) {
            let current = format!("{kind}/{name}");
            match &first_controller {
                Some(first) => errs.push(FieldError::invalid(
                    FIELD,
                    Value::Array(refs.clone()),
                    &format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}"
                    ),
                )),
                None => first_controller = Some(current),
            }
        }
    }
    errs
}

fn immutable(errs: &mut Vec<FieldError>, new: &Value, old: &Value, field: &str) {
    let a = meta(new)
        .and_then(|m| m.get(field))
        .filter(|v| !v.is_null());
    let b = meta(old)
        .and_then(|m| m.get(field))
        .filter(|v| !v.is_null());
    if a != b {
        errs.push(FieldError::invalid(
            &format!("metadata.{field}"),
            a.cloned().unwrap_or(Value::Null),
            "field is immutable",
        ));
    }
}

/// The common ObjectMeta checks of an update (upstream `ValidateObjectMetaAccessorUpdate`).
pub fn validate_object_meta_update(new: &Value, old: &Value, namespaced: bool) -> Vec<FieldError> {
    let mut errs = validate_object_meta(new, namespaced);
    if is_deleting(old) {
        let old_f = finalizers(old);
        let extra: std::collections::BTreeSet<String> = finalizers(new)
            .into_iter()
            .filter(|f| !old_f.contains(f))
            .collect();
        if !extra.is_empty() {
            let quoted: Vec<String> = extra.iter().map(|f| format!("{f:?}")).collect();
            errs.push(FieldError::forbidden(
                "metadata.finalizers",
                &format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                    quoted.join(", ")
                ),
            ));
        }
    }
    if generation(new) < generation(old) {
        errs.push(FieldError::invalid(
            "metadata.generation",
            generation(new),
            "must not be decremented",
        ));
    }
    for field in [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        immutable(&mut errs, new, old, field);
    }
    errs
}

/// Everything but `metadata` and `status`: what a generation bump compares (upstream
/// strategies compare `spec`; objects without a spec, e.g. ConfigMaps, compare their data).
pub fn differs_outside_meta_and_status(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| -> Map<String, Value> {
        v.as_object()
            .map(|m| {
                m.iter()
                    .filter(|(k, _)| {
                        !matches!(k.as_str(), "metadata" | "status" | "kind" | "apiVersion")
                    })
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default()
    };
    strip(a) != strip(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn generated_names() {
        let n = generate_name("foo-");
        assert_eq!(n.len(), 9);
        assert!(n.starts_with("foo-"));
        assert!(n[4..].bytes().all(|b| NAME_ALPHABET.contains(&b)));
        assert_eq!(generate_name(&"a".repeat(80)).len(), 63);
    }

    #[test]
    fn meta_validation() {
        let errs = validate_object_meta(&json!({"metadata":{}}), true);
        let rendered: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert_eq!(
            rendered,
            [
                "metadata.name: Required value: name or generateName is required",
                "metadata.namespace: Required value"
            ]
        );
        let errs = validate_object_meta(&json!({"metadata":{"name":"a/b","namespace":"x"}}), false);
        let rendered: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert_eq!(
            rendered,
            [
                "metadata.name: Invalid value: \"a/b\": may not contain '/'",
                "metadata.namespace: Forbidden: not allowed on this type"
            ]
        );
        let old = json!({"metadata":{"name":"a","uid":"1"}});
        let new = json!({"metadata":{"name":"a","uid":"2"}});
        let errs = validate_object_meta_update(&new, &old, false);
        assert_eq!(
            errs[0].to_string(),
            "metadata.uid: Invalid value: \"2\": field is immutable"
        );
    }

    #[test]
    fn owner_references_are_validated_as_upstream() {
        let obj = json!({"metadata":{"ownerReferences":[
            {"apiVersion":"","kind":"","name":"","uid":""},
            {"apiVersion":"a/b/c","kind":"K","name":"n","uid":"u"},
            {"apiVersion":"v1","kind":"Event","name":"e","uid":"1"},
            {"apiVersion":"apps/v1","kind":"ReplicaSet","name":"a","uid":"2","controller":true},
            {"apiVersion":"apps/v1","kind":"Deployment","name":"b","uid":"3","controller":true},
        ]}});
        let rendered: Vec<String> = validate_owner_references(&obj)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            rendered[..5],
            [
                "metadata.ownerReferences.apiVersion: Invalid value: \"\": version must not be empty",
                "metadata.ownerReferences.kind: Invalid value: \"\": must not be empty",
                "metadata.ownerReferences.name: Invalid value: \"\": must not be empty",
                "metadata.ownerReferences.uid: Invalid value: \"\": must not be empty",
                "metadata.ownerReferences.apiVersion: Invalid value: \"a/b/c\": version must not be empty",
            ]
        );
        assert!(rendered[5].ends_with("/v1, Kind=Event is disallowed from being an owner"));
        assert!(rendered[6].ends_with(
            "Only one reference can have Controller set to true. Found \"true\" in references for ReplicaSet/a and Deployment/b"
        ));
        assert_eq!(rendered.len(), 7);
        let fine = json!({"metadata":{"ownerReferences":[
            {"apiVersion":"apps/v1","kind":"ReplicaSet","name":"a","uid":"2","controller":true},
            {"apiVersion":"v1","kind":"Pod","name":"p","uid":"3","controller":false},
        ]}});
        assert!(validate_owner_references(&fine).is_empty());
    }

    #[test]
    fn timestamps_are_rfc3339_seconds() {
        let t = now_rfc3339();
        assert_eq!(t.len(), 20);
        assert!(t.ends_with('Z'));
    }
}
