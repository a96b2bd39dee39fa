//! node.k8s.io/v1: runtimeclasses.

use apiserver::registry::FieldError;
use k8s_openapi::api::node::v1::RuntimeClass;
use serde_json::{Value, json};

use super::ResourceDef;
use super::docs;
use super::json::str_at;
use super::strategy::{BuiltinStrategy, info};
use super::table::{age_cell, age_column, column, name_cell, name_column};
use super::validation::{dns1123_label, immutable};

/// node.k8s.io/v1 resources.
pub fn resources() -> Vec<ResourceDef> {
    vec![runtimeclasses()]
}

/// The runtimeclasses resource.
pub fn runtimeclasses() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<RuntimeClass>(info(
            "node.k8s.io",
            "v1",
            "RuntimeClass",
            "runtimeclasses",
            false,
            &[],
            &[],
        ))
        .validate(validate)
        .validate_update(|new, old| immutable(new, old, "handler").into_iter().collect())
        .table(
            || {
                vec![
                    name_column(),
                    column("Handler", "string", docs::RUNTIME_CLASS_HANDLER, 0),
                    age_column(),
                ]
            },
            |obj| {
                vec![
                    name_cell(obj),
                    json!(str_at(obj, "handler").unwrap_or_default()),
                    age_cell(obj),
                ]
            },
        ),
    )
}

/// Upstream `ValidateRuntimeClass`: the handler is a DNS-1123 label; overhead and scheduling are
/// checked by their types.
fn validate(obj: &Value) -> Vec<FieldError> {
    let handler = str_at(obj, "handler").unwrap_or_default();
    if handler.is_empty() {
        return vec![FieldError::required("handler", "")];
    }
    dns1123_label(handler)
        .into_iter()
        .map(|msg| FieldError::invalid("handler", handler, &msg))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handler_is_required_a_label_and_immutable() {
        let def = runtimeclasses();
        let rc = json!({"metadata": {"name": "gvisor"}, "handler": "runsc"});
        assert!(def.strategy.validate(&rc).is_empty());
        assert_eq!(
            def.strategy.table_row(&rc)[..2],
            [json!("gvisor"), json!("runsc")]
        );
        let bad = json!({"metadata": {"name": "x"}, "handler": "Run_SC"});
        assert!(
            def.strategy.validate(&bad)[0]
                .to_string()
                .starts_with("handler: Invalid value: \"Run_SC\": a lowercase RFC 1123 label")
        );
        let none = json!({"metadata": {"name": "x"}});
        assert_eq!(
            def.strategy.validate(&none)[0].to_string(),
            "handler: Required value"
        );
        let mut changed = rc.clone();
        changed["handler"] = json!("runc");
        assert_eq!(
            def.strategy.validate_update(&changed, &rc)[0].to_string(),
            "handler: Invalid value: \"runc\": field is immutable"
        );
    }
}
