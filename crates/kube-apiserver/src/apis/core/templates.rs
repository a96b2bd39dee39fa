//! podtemplates, and the two core resources without a store of their own: `bindings` (create
//! only, see `registry::binding`) and `componentstatuses` (computed, see
//! `registry::componentstatus`).

use k8s_openapi::api::core::v1::{Binding, ComponentStatus, PodTemplate};
use serde_json::{Value, json};

use crate::apis::ResourceDef;
use crate::apis::json::{array_at, get, str_at};
use crate::apis::podspec::{default_template, validate_template};
use crate::apis::strategy::{BuiltinStrategy, info};
use crate::apis::table::{column, containers_images_cells, format_labels, name_cell, name_column};

/// The podtemplates resource.
pub fn podtemplates() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<PodTemplate>(info(
            "",
            "v1",
            "PodTemplate",
            "podtemplates",
            true,
            &[],
            &[],
        ))
        .defaults(|obj| default_template(obj, "template"))
        .validate(|obj| validate_template(obj, "template", &["Always", "OnFailure", "Never"]))
        .table(
            || {
                vec![
                    name_column(),
                    column(
                        "Containers",
                        "string",
                        "Names of each container in the template.",
                        0,
                    ),
                    column(
                        "Images",
                        "string",
                        "Images referenced by each container in the template.",
                        0,
                    ),
                    column(
                        "Pod Labels",
                        "string",
                        "The labels for the pod template.",
                        0,
                    ),
                ]
            },
            |obj| {
                let [names, images] = containers_images_cells(get(obj, "template.spec"));
                vec![
                    name_cell(obj),
                    names,
                    images,
                    json!(format_labels(get(obj, "template.metadata.labels"))),
                ]
            },
        ),
    )
}

/// The `bindings` resource (create only; its storage is `registry::binding::BindingsStorage`).
pub fn bindings() -> ResourceDef {
    ResourceDef::new(BuiltinStrategy::new::<Binding>(info(
        "",
        "v1",
        "Binding",
        "bindings",
        true,
        &[],
        &[],
    )))
    .virtual_resource()
}

/// The `componentstatuses` resource (get and list; computed by
/// `registry::componentstatus::ComponentStatusStorage`).
pub fn componentstatuses() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<ComponentStatus>(info(
            "",
            "v1",
            "ComponentStatus",
            "componentstatuses",
            false,
            &["cs"],
            &[],
        ))
        .table(
            || {
                vec![
                    name_column(),
                    column("Status", "string", "Status of the component conditions", 0),
                    column(
                        "Message",
                        "string",
                        "Message of the component conditions",
                        0,
                    ),
                    column("Error", "string", "Error of the component conditions", 0),
                ]
            },
            component_status_row,
        ),
    )
    .virtual_resource()
}

/// Upstream `printComponentStatus`: the `Healthy` condition's status, message and error.
fn component_status_row(obj: &Value) -> Vec<Value> {
    let healthy = array_at(obj, "conditions")
        .iter()
        .find(|c| str_at(c, "type") == Some("Healthy"));
    let (status, message, error) = match healthy {
        Some(c) => (
            if str_at(c, "status") == Some("True") {
                "Healthy"
            } else {
                "Unhealthy"
            },
            str_at(c, "message").unwrap_or_default(),
            str_at(c, "error").unwrap_or_default(),
        ),
        None => ("Unknown", "", ""),
    };
    vec![name_cell(obj), json!(status), json!(message), json!(error)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_template_defaults_validates_and_prints() {
        let def = podtemplates();
        let mut t = json!({"metadata": {"name": "t", "namespace": "default"},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}});
        def.strategy.prepare_for_create(&mut t);
        assert_eq!(t["template"]["spec"]["restartPolicy"], "Always");
        assert!(
            def.strategy.validate(&t).is_empty(),
            "{:?}",
            def.strategy.validate(&t)
        );
        assert_eq!(
            def.strategy.table_row(&t),
            vec![json!("t"), json!("c"), json!("nginx"), json!("app=web")]
        );
    }

    #[test]
    fn component_status_rows() {
        let def = componentstatuses();
        let cs = json!({"metadata": {"name": "etcd-0"},
            "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]});
        assert_eq!(
            def.strategy.table_row(&cs),
            vec![json!("etcd-0"), json!("Healthy"), json!("ok"), json!("")]
        );
        let down = json!({"metadata": {"name": "scheduler"},
            "conditions": [{"type": "Healthy", "status": "False", "message": "refused"}]});
        assert_eq!(def.strategy.table_row(&down)[1], json!("Unhealthy"));
    }
}
