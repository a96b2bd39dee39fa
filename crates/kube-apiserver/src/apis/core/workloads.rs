//! ReplicationControllers: a `map[string]string` selector defaulted from the template labels.

use apiserver::registry::{FieldError, SelectableFields, TableColumn};
use k8s_openapi::api::core::v1::ReplicationController;
use serde_json::{Map, Value, json};

use crate::apis::ResourceDef;
use crate::apis::json::{default_at, get, i64_at, object_at};
use crate::apis::podspec::{default_template, validate_template};
use crate::apis::strategy::{BuiltinStrategy, info};
use crate::apis::table::{
    age_cell, age_column, column, containers_images_cells, containers_images_columns,
    format_labels, int_cell, name_cell, name_column,
};
use crate::apis::validation::non_negative;

/// The replicationcontrollers resource (subresources `status` and `scale`).
pub fn replicationcontrollers() -> ResourceDef {
    let strategy = BuiltinStrategy::new::<ReplicationController>(info(
        "",
        "v1",
        "ReplicationController",
        "replicationcontrollers",
        true,
        &["rc"],
        &["all"],
    ))
    .status_from(|| json!({"replicas": 0}))
    .generation()
    .defaults(default_rc)
    .validate(validate)
    .selectable(|obj| {
        let mut fields = SelectableFields::new();
        fields.insert(
            "status.replicas".into(),
            i64_at(obj, "status.replicas").unwrap_or(0).to_string(),
        );
        fields
    })
    .table(columns, row);
    ResourceDef::new(strategy).with(&["status", "scale"])
}

/// Upstream `SetDefaults_ReplicationController`: the selector and the object's labels default
/// to the template's labels; one replica.
fn default_rc(obj: &mut Value) {
    let labels = get(obj, "spec.template.metadata.labels")
        .and_then(Value::as_object)
        .filter(|l| !l.is_empty())
        .cloned();
    if let Some(labels) = labels {
        if get(obj, "spec.selector")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty)
            && let Some(spec) = object_at(obj, "spec")
        {
            spec.insert("selector".into(), Value::Object(labels.clone()));
        }
        if get(obj, "metadata.labels")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty)
            && let Some(meta) = object_at(obj, "metadata")
        {
            meta.insert("labels".into(), Value::Object(labels));
        }
    }
    default_at(obj, "spec.replicas", json!(1));
    default_template(obj, "spec.template");
}

fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let selector = get(obj, "spec.selector")
        .and_then(Value::as_object)
        .filter(|s| !s.is_empty());
    match selector {
        None => errs.push(FieldError::required("spec.selector", "")),
        Some(selector) => {
            let empty = Map::new();
            let labels = get(obj, "spec.template.metadata.labels")
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            if selector.iter().any(|(k, v)| labels.get(k) != Some(v)) {
                errs.push(FieldError::invalid(
                    "spec.template.metadata.labels",
                    Value::Object(labels.clone()),
                    "`selector` does not match template `labels`",
                ));
            }
        }
    }
    errs.extend(non_negative(obj, "spec.replicas"));
    if get(obj, "spec.template").is_none() {
        errs.push(FieldError::required("spec.template", ""));
    } else {
        errs.extend(validate_template(obj, "spec.template", &["Always"]));
    }
    errs
}

fn columns() -> Vec<TableColumn> {
    let [containers, images] = containers_images_columns();
    vec![
        name_column(),
        column(
            "Desired",
            "integer",
            "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller",
            0,
        ),
        column(
            "Current",
            "integer",
            "Replicas is the most recently observed number of replicas. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller",
            0,
        ),
        column(
            "Ready",
            "integer",
            "The number of ready replicas for this replication controller.",
            0,
        ),
        age_column(),
        containers,
        images,
        column(
            "Selector",
            "string",
            "Selector is a label query over pods that should match the Replicas count. If Selector is empty, it is defaulted to the labels present on the Pod template. Label keys and values that must match in order to be controlled by this replication controller, if empty defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
            1,
        ),
    ]
}

fn row(obj: &Value) -> Vec<Value> {
    let [containers, images] = containers_images_cells(get(obj, "spec.template.spec"));
    vec![
        name_cell(obj),
        int_cell(obj, "spec.replicas"),
        int_cell(obj, "status.replicas"),
        int_cell(obj, "status.readyReplicas"),
        age_cell(obj),
        containers,
        images,
        json!(format_labels(get(obj, "spec.selector"))),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selector_defaults_from_template() {
        let def = replicationcontrollers();
        let mut rc = json!({"metadata": {"name": "r"}, "spec": {"template": {
            "metadata": {"labels": {"app": "x"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        def.strategy.prepare_for_create(&mut rc);
        assert_eq!(rc["spec"]["selector"], json!({"app": "x"}));
        assert_eq!(rc["metadata"]["labels"], json!({"app": "x"}));
        assert_eq!(rc["spec"]["replicas"], 1);
        assert!(
            def.strategy.validate(&rc).is_empty(),
            "{:?}",
            def.strategy.validate(&rc)
        );
        let row = def.strategy.table_row(&rc);
        assert_eq!(row[1], 1);
        assert_eq!(row[5..], [json!("c"), json!("i"), json!("app=x")]);
    }
}
