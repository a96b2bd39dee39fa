//! Namespaces: DNS-label names, the `kubernetes` finalizer, `Active` phase on create, the
//! `kubernetes.io/metadata.name` label.

use apiserver::registry::{FieldError, SelectableFields, TableColumn};
use k8s_openapi::api::core::v1::Namespace;
use serde_json::{Value, json};

use crate::apis::ResourceDef;
use crate::apis::json::{array_at, object_at, str_at};
use crate::apis::strategy::{BuiltinStrategy, info};
use crate::apis::table::{age_cell, age_column, column, name_cell, name_column};
use crate::apis::validation::{NameRule, qualified_name};

/// The finalizer the namespace controller removes once the namespace's content is deleted.
pub const KUBERNETES_FINALIZER: &str = "kubernetes";

/// The label every namespace carries with its own name (upstream since 1.21).
const NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// The namespaces resource (subresources `status` and `finalize`).
pub fn namespaces() -> ResourceDef {
    let strategy = BuiltinStrategy::new::<Namespace>(info(
        "",
        "v1",
        "Namespace",
        "namespaces",
        false,
        &["ns"],
        &[],
    ))
    .name_rule(NameRule::Label)
    .status_from(|| json!({"phase": "Active"}))
    .defaults(set_name_label)
    .prepare_create(ensure_finalizer)
    .prepare_update(keep_finalizers)
    .validate(validate)
    .selectable(selectable)
    .table(columns, row);
    ResourceDef::new(strategy).with(&["status", "finalize"])
}

fn set_name_label(obj: &mut Value) {
    let Some(name) = str_at(obj, "metadata.name").map(str::to_string) else {
        return;
    };
    if let Some(labels) = object_at(obj, "metadata.labels") {
        labels.insert(NAME_LABEL.into(), Value::String(name));
    }
}

fn ensure_finalizer(obj: &mut Value) {
    let present = array_at(obj, "spec.finalizers")
        .iter()
        .any(|f| f.as_str() == Some(KUBERNETES_FINALIZER));
    if present {
        return;
    }
    if let Some(spec) = object_at(obj, "spec") {
        match spec.get_mut("finalizers") {
            Some(Value::Array(list)) => list.push(json!(KUBERNETES_FINALIZER)),
            _ => {
                spec.insert("finalizers".into(), json!([KUBERNETES_FINALIZER]));
            }
        }
    }
}

/// Finalizers change only through the `finalize` subresource.
fn keep_finalizers(new: &mut Value, old: &Value) {
    let finalizers = old.get("spec").and_then(|s| s.get("finalizers")).cloned();
    if let Some(spec) = object_at(new, "spec") {
        match finalizers {
            Some(f) => spec.insert("finalizers".into(), f),
            None => spec.remove("finalizers"),
        };
    }
}

fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, finalizer) in array_at(obj, "spec.finalizers").iter().enumerate() {
        let text = finalizer.as_str().unwrap_or_default();
        // upstream accepts the bare `kubernetes` finalizer and qualified names.
        if text == KUBERNETES_FINALIZER {
            continue;
        }
        for msg in qualified_name(text) {
            errs.push(FieldError::invalid(
                &format!("spec.finalizers[{i}]"),
                text,
                &msg,
            ));
        }
    }
    errs
}

fn selectable(obj: &Value) -> SelectableFields {
    let mut fields = SelectableFields::new();
    fields.insert(
        "status.phase".into(),
        str_at(obj, "status.phase").unwrap_or_default().into(),
    );
    fields
}

fn columns() -> Vec<TableColumn> {
    vec![
        name_column(),
        column("Status", "string", "The status of the namespace", 0),
        age_column(),
    ]
}

fn row(obj: &Value) -> Vec<Value> {
    vec![
        name_cell(obj),
        json!(str_at(obj, "status.phase").unwrap_or_default()),
        age_cell(obj),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_defaults_finalizer_phase_and_label() {
        let def = namespaces();
        let mut ns = json!({"metadata": {"name": "team-a"}, "status": {"phase": "Terminating"}});
        def.strategy.prepare_for_create(&mut ns);
        assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
        assert_eq!(ns["status"], json!({"phase": "Active"}));
        assert_eq!(ns["metadata"]["labels"][NAME_LABEL], "team-a");
        assert!(def.strategy.validate(&ns).is_empty());
        assert_eq!(def.strategy.table_row(&ns)[1], "Active");
        assert_eq!(
            def.strategy.selectable_fields(&ns)["status.phase"],
            "Active"
        );
    }

    #[test]
    fn update_keeps_finalizers_and_status() {
        let def = namespaces();
        let old = json!({"metadata": {"name": "a"}, "spec": {"finalizers": ["kubernetes"]},
                         "status": {"phase": "Active"}});
        let mut new = json!({"metadata": {"name": "a"}, "spec": {}, "status": {"phase": "X"}});
        def.strategy.prepare_for_update(&mut new, &old);
        assert_eq!(new["spec"]["finalizers"], json!(["kubernetes"]));
        assert_eq!(new["status"]["phase"], "Active");
    }

    #[test]
    fn names_are_dns_labels() {
        let def = namespaces();
        let errs = def.strategy.validate(&json!({"metadata": {"name": "a.b"}}));
        assert_eq!(
            errs[0].to_string(),
            "metadata.name: Invalid value: \"a.b\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        );
        assert_eq!(def.strategy.info().short_names, vec!["ns"]);
        assert!(!def.strategy.info().namespaced);
    }
}
