//! apiextensions.k8s.io/v1 `customresourcedefinitions`: the strategy (defaults, the
//! `customresourcecleanup` finalizer, status subresource, stored versions, validation through
//! the [`CrdValidator`] seam) and helpers to read a CRD's spec and conditions.

use std::sync::Arc;

use apiserver::registry::{FieldError, ResourceInfo, Strategy};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{Value, json};

use crate::seams::CrdValidator;
use crate::typed;

/// The API group.
pub const GROUP: &str = "apiextensions.k8s.io";
/// The finalizer that makes deleting a CRD delete its custom resources first.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// The discovery facts of `customresourcedefinitions`.
pub fn crd_info() -> ResourceInfo {
    ResourceInfo {
        group: GROUP.into(),
        version: "v1".into(),
        kind: "CustomResourceDefinition".into(),
        list_kind: "CustomResourceDefinitionList".into(),
        resource: "customresourcedefinitions".into(),
        singular: "customresourcedefinition".into(),
        namespaced: false,
        short_names: vec!["crd".into(), "crds".into()],
        categories: vec!["api-extensions".into()],
    }
}

/// The CRD strategy.
pub struct CrdStrategy {
    info: ResourceInfo,
    validator: Arc<dyn CrdValidator>,
}

impl CrdStrategy {
    /// A strategy validating through `validator`.
    pub fn new(validator: Arc<dyn CrdValidator>) -> Self {
        CrdStrategy {
            info: crd_info(),
            validator,
        }
    }
}

fn at<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(obj, |v, k| v.get(k))
}

/// Upstream's defaults: conversion strategy `None`, `singular` = lower-case kind,
/// `listKind` = kind + `List`.
fn defaults(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let conversion = spec.entry("conversion").or_insert_with(|| json!({}));
    if let Some(conversion) = conversion.as_object_mut() {
        conversion
            .entry("strategy")
            .or_insert_with(|| json!("None"));
    }
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut)
        && let Some(kind) = names
            .get("kind")
            .and_then(Value::as_str)
            .map(str::to_string)
    {
        names
            .entry("singular")
            .or_insert_with(|| json!(kind.to_lowercase()));
        names
            .entry("listKind")
            .or_insert_with(|| json!(format!("{kind}List")));
    }
}

/// Upstream records the storage version in `status.storedVersions` on create and update.
fn record_storage_version(obj: &mut Value) {
    let Some(storage) = storage_version(obj) else {
        return;
    };
    let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) else {
        return;
    };
    let stored = status.entry("storedVersions").or_insert_with(|| json!([]));
    if !stored.is_array() {
        *stored = json!([]);
    }
    if let Value::Array(list) = stored
        && !list.iter().any(|v| v.as_str() == Some(&storage))
    {
        list.push(json!(storage));
    }
}

/// The name of the version marked `storage: true`.
pub fn storage_version(crd: &Value) -> Option<String> {
    versions(crd)
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// `spec.versions`.
pub fn versions(crd: &Value) -> &[Value] {
    at(crd, "spec.versions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

impl Strategy for CrdStrategy {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if let Value::Object(map) = obj {
            map.insert(
                "status".into(),
                json!({"acceptedNames": {"kind": "", "plural": ""}, "storedVersions": []}),
            );
        }
        defaults(obj);
        record_storage_version(obj);
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            let finalizers = meta.entry("finalizers").or_insert_with(|| json!([]));
            if !finalizers.is_array() {
                *finalizers = json!([]);
            }
            if let Value::Array(list) = finalizers
                && !list.iter().any(|f| f == CLEANUP_FINALIZER)
            {
                list.push(json!(CLEANUP_FINALIZER));
            }
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        if let Value::Object(map) = new {
            match old.get("status") {
                Some(status) => map.insert("status".into(), status.clone()),
                None => map.remove("status"),
            };
        }
        defaults(new);
        record_storage_version(new);
    }

    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        if let Some(err) = typed::type_error::<CustomResourceDefinition>(obj) {
            return vec![err];
        }
        self.validator.validate(obj, None)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        if let Some(err) = typed::type_error::<CustomResourceDefinition>(new) {
            return vec![err];
        }
        self.validator.validate(new, Some(old))
    }

    fn drop_unknown_fields(&self, obj: &mut Value) -> Vec<String> {
        typed::drop_unknown_fields::<CustomResourceDefinition>(obj)
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn allow_unconditional_update(&self) -> bool {
        false
    }
}

/// One condition of a CRD's status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    /// `NamesAccepted`, `Established`, `Terminating`, …
    pub type_: String,
    /// `True`, `False`, `Unknown`.
    pub status: String,
    /// CamelCase reason.
    pub reason: String,
    /// Human-readable message.
    pub message: String,
}

impl Condition {
    /// A condition.
    pub fn new(type_: &str, status: &str, reason: &str, message: &str) -> Self {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
        }
    }
}

/// The condition of `type_` in `crd`'s status.
pub fn condition<'a>(crd: &'a Value, type_: &str) -> Option<&'a Value> {
    crd.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
}

/// Whether the condition `type_` is `True`.
pub fn is_true(crd: &Value, type_: &str) -> bool {
    condition(crd, type_)
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
        == Some("True")
}

/// Sets a condition in `status` (an object), keeping `lastTransitionTime` unless the status
/// changes (upstream `SetCRDCondition`); `now` is the RFC 3339 time of a transition.
pub fn set_condition(status: &mut Value, cond: &Condition, now: &str) {
    let Some(map) = status.as_object_mut() else {
        return;
    };
    let list = map.entry("conditions").or_insert_with(|| json!([]));
    if !list.is_array() {
        *list = json!([]);
    }
    let Value::Array(list) = list else {
        return;
    };
    let existing = list
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(&cond.type_));
    let mut entry = json!({
        "type": cond.type_,
        "status": cond.status,
        "lastTransitionTime": now,
        "reason": cond.reason,
        "message": cond.message,
    });
    match existing {
        Some(current) => {
            if current.get("status").and_then(Value::as_str) == Some(&cond.status)
                && let Some(time) = current.get("lastTransitionTime")
            {
                entry["lastTransitionTime"] = time.clone();
            }
            *current = entry;
        }
        None => list.push(entry),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seams::StructuralCrdValidator;

    fn crd() -> Value {
        json!({"metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                              "schema": {"openAPIV3Schema": {"type": "object"}}}]}})
    }

    fn strategy() -> CrdStrategy {
        CrdStrategy::new(Arc::new(StructuralCrdValidator))
    }

    #[test]
    fn create_defaults_status_and_finalizer() {
        let s = strategy();
        let mut c = crd();
        s.prepare_for_create(&mut c);
        assert_eq!(c["status"]["storedVersions"], json!(["v1"]));
        assert_eq!(
            c["status"]["acceptedNames"],
            json!({"kind": "", "plural": ""})
        );
        assert_eq!(c["spec"]["names"]["singular"], "widget");
        assert_eq!(c["spec"]["names"]["listKind"], "WidgetList");
        assert_eq!(c["spec"]["conversion"]["strategy"], "None");
        assert_eq!(c["metadata"]["finalizers"], json!([CLEANUP_FINALIZER]));
        assert!(s.validate(&c).is_empty(), "{:?}", s.validate(&c));
        assert!(s.drop_unknown_fields(&mut c.clone()).is_empty());
    }

    #[test]
    fn validation_messages_as_upstream() {
        let s = strategy();
        let mut wrong = crd();
        wrong["metadata"]["name"] = json!("widgets");
        assert_eq!(
            s.validate(&wrong)[0].to_string(),
            "metadata.name: Invalid value: \"widgets\": must be spec.names.plural+\".\"+spec.group"
        );
        let mut two = crd();
        two["spec"]["versions"] = json!([
            {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {}}},
            {"name": "v2", "served": true, "storage": true, "schema": {"openAPIV3Schema": {}}}]);
        assert!(
            s.validate(&two)[0]
                .to_string()
                .ends_with("must have exactly one version marked as storage version")
        );
        let mut noschema = crd();
        noschema["spec"]["versions"][0]
            .as_object_mut()
            .unwrap()
            .remove("schema");
        assert_eq!(
            s.validate(&noschema)[0].to_string(),
            "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"
        );
        let mut moved = crd();
        moved["spec"]["group"] = json!("other.com");
        let errs: Vec<String> = s
            .validate_update(&moved, &crd())
            .iter()
            .map(|e| e.to_string())
            .collect();
        assert!(
            errs.contains(
                &"spec.group: Invalid value: \"other.com\": field is immutable".to_string()
            )
        );
    }

    #[test]
    fn update_keeps_status_and_records_new_storage_version() {
        let s = strategy();
        let mut old = crd();
        s.prepare_for_create(&mut old);
        let mut new = crd();
        new["spec"]["versions"] = json!([
            {"name": "v1", "served": true, "storage": false, "schema": {"openAPIV3Schema": {}}},
            {"name": "v2", "served": true, "storage": true, "schema": {"openAPIV3Schema": {}}}]);
        new["status"] = json!({"bogus": true});
        s.prepare_for_update(&mut new, &old);
        assert_eq!(new["status"]["storedVersions"], json!(["v1", "v2"]));
        assert!(new["status"].get("bogus").is_none());
    }

    #[test]
    fn conditions_keep_transition_time_while_status_holds() {
        let mut status = json!({});
        set_condition(
            &mut status,
            &Condition::new("Established", "False", "Installing", "x"),
            "t1",
        );
        set_condition(
            &mut status,
            &Condition::new("Established", "False", "Installing", "y"),
            "t2",
        );
        assert_eq!(status["conditions"][0]["lastTransitionTime"], "t1");
        assert_eq!(status["conditions"][0]["message"], "y");
        set_condition(
            &mut status,
            &Condition::new("Established", "True", "InitialNamesAccepted", "z"),
            "t3",
        );
        assert_eq!(status["conditions"][0]["lastTransitionTime"], "t3");
        let crd = json!({"status": status});
        assert!(is_true(&crd, "Established"));
    }
}
