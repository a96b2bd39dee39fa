//! apiextensions.k8s.io/v1: customresourcedefinitions (stored and validated; serving the
//! custom resources comes later).

use apiserver::registry::FieldError;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{Value, json};

use super::ResourceDef;
use super::json::{array_at, default_at, object_at, str_at};
use super::strategy::{BuiltinStrategy, info};
use super::validation::{dns1123_label, dns1123_subdomain, immutable};

/// apiextensions.k8s.io/v1 resources.
pub fn resources() -> Vec<ResourceDef> {
    vec![customresourcedefinitions()]
}

/// The customresourcedefinitions resource (subresource `status`).
pub fn customresourcedefinitions() -> ResourceDef {
    let strategy = BuiltinStrategy::new::<CustomResourceDefinition>(info(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
        &["crd", "crds"],
        &["api-extensions"],
    ))
    .conditional_updates_only()
    .status_from(|| json!({"acceptedNames": {"kind": "", "plural": ""}, "storedVersions": []}))
    .generation()
    .defaults(|obj| {
        default_at(obj, "spec.conversion.strategy", json!("None"));
        if let Some(names) = object_at(obj, "spec.names") {
            let kind = names
                .get("kind")
                .and_then(Value::as_str)
                .map(str::to_lowercase);
            if let Some(kind) = kind {
                names.entry("singular").or_insert(json!(kind));
            }
            let kind = names
                .get("kind")
                .and_then(Value::as_str)
                .map(|k| format!("{k}List"));
            if let Some(list_kind) = kind {
                names.entry("listKind").or_insert(json!(list_kind));
            }
        }
    })
    .prepare_create(record_storage_version)
    .prepare_update(|new, _old| record_storage_version(new))
    .validate(validate)
    .validate_update(|new, old| {
        let mut errs: Vec<FieldError> = immutable(new, old, "spec.group").into_iter().collect();
        errs.extend(immutable(new, old, "spec.names.plural"));
        errs
    });
    ResourceDef::new(strategy).with(&["status"])
}

/// Upstream records the storage version in `status.storedVersions` on create and update.
fn record_storage_version(obj: &mut Value) {
    let storage = array_at(obj, "spec.versions")
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name"))
        .cloned();
    let Some(storage) = storage else {
        return;
    };
    if let Some(status) = object_at(obj, "status") {
        let stored = status.entry("storedVersions").or_insert_with(|| json!([]));
        if !stored.is_array() {
            *stored = json!([]);
        }
        if let Value::Array(list) = stored
            && !list.contains(&storage)
        {
            list.push(storage);
        }
    }
}

fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let group = str_at(obj, "spec.group").unwrap_or_default();
    let plural = str_at(obj, "spec.names.plural").unwrap_or_default();
    let name = str_at(obj, "metadata.name").unwrap_or_default();
    if name != format!("{plural}.{group}") {
        errs.push(FieldError::invalid(
            "metadata.name",
            name,
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    if group.is_empty() {
        errs.push(FieldError::required("spec.group", ""));
    } else {
        for msg in dns1123_subdomain(group) {
            errs.push(FieldError::invalid("spec.group", group, &msg));
        }
        if !group.contains('.') {
            errs.push(FieldError::invalid(
                "spec.group",
                group,
                "should be a domain with at least one dot",
            ));
        }
    }
    if plural.is_empty() {
        errs.push(FieldError::required("spec.names.plural", ""));
    } else {
        for msg in dns1123_label(plural) {
            errs.push(FieldError::invalid("spec.names.plural", plural, &msg));
        }
    }
    if str_at(obj, "spec.names.kind").is_none_or(str::is_empty) {
        errs.push(FieldError::required("spec.names.kind", ""));
    }
    match str_at(obj, "spec.scope").unwrap_or_default() {
        "Cluster" | "Namespaced" => {}
        scope => errs.push(FieldError::not_supported(
            "spec.scope",
            scope,
            &["Cluster", "Namespaced"],
        )),
    }
    let versions = array_at(obj, "spec.versions");
    if versions.is_empty() {
        errs.push(FieldError::invalid(
            "spec.versions",
            json!([]),
            "must have exactly one version marked as storage version",
        ));
    } else {
        let storage = versions
            .iter()
            .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
            .count();
        if storage != 1 {
            errs.push(FieldError::invalid(
                "spec.versions",
                Value::Array(versions.to_vec()),
                "must have exactly one version marked as storage version",
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd() -> Value {
        json!({"metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                              "schema": {"openAPIV3Schema": {"type": "object"}}}]}})
    }

    #[test]
    fn crd_create() {
        let def = customresourcedefinitions();
        let mut c = crd();
        def.strategy.prepare_for_create(&mut c);
        assert_eq!(c["status"]["storedVersions"], json!(["v1"]));
        assert_eq!(c["spec"]["names"]["singular"], "widget");
        assert_eq!(c["spec"]["names"]["listKind"], "WidgetList");
        assert!(
            def.strategy.validate(&c).is_empty(),
            "{:?}",
            def.strategy.validate(&c)
        );
        let info = def.strategy.info();
        assert_eq!(info.short_names, vec!["crd", "crds"]);
        assert_eq!(info.categories, vec!["api-extensions"]);
        let mut wrong = crd();
        wrong["metadata"]["name"] = json!("widgets");
        assert_eq!(
            def.strategy.validate(&wrong)[0].to_string(),
            "metadata.name: Invalid value: \"widgets\": must be spec.names.plural+\".\"+spec.group"
        );
    }
}
