//! scheduling.k8s.io/v1: priorityclasses.

use apiserver::registry::FieldError;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use serde_json::{Value, json};

use super::ResourceDef;
use super::json::{default_at, get, i64_at, str_at};
use super::strategy::{BuiltinStrategy, info};
use super::table::{age_cell, age_column, column, name_cell, name_column};

/// scheduling.k8s.io/v1 resources.
pub fn resources() -> Vec<ResourceDef> {
    vec![priorityclasses()]
}

/// The highest priority a user-defined class may have.
const HIGHEST_USER_PRIORITY: i64 = 1_000_000_000;

/// The system classes upstream creates itself, which alone may use the `system-` prefix.
const SYSTEM_CLASSES: [&str; 2] = ["system-node-critical", "system-cluster-critical"];

/// The priorityclasses resource.
pub fn priorityclasses() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<PriorityClass>(info(
            "scheduling.k8s.io",
            "v1",
            "PriorityClass",
            "priorityclasses",
            false,
            &["pc"],
            &[],
        ))
        .defaults(|obj| default_at(obj, "preemptionPolicy", json!("PreemptLowerPriority")))
        .validate(|obj| {
            let mut errs = Vec::new();
            let name = str_at(obj, "metadata.name").unwrap_or_default();
            let system = SYSTEM_CLASSES.contains(&name);
            if name.starts_with("system-") && !system {
                errs.push(FieldError::invalid(
                    "metadata.name",
                    name,
                    "priority class names with 'system-' prefix are reserved",
                ));
            }
            if let Some(value) = i64_at(obj, "value")
                && value > HIGHEST_USER_PRIORITY
                && !system
            {
                errs.push(FieldError::forbidden(
                    "value",
                    &format!("maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}"),
                ));
            }
            errs
        })
        .validate_update(|new, old| {
            let mut errs = Vec::new();
            if get(new, "value") != get(old, "value") {
                errs.push(FieldError::forbidden("value", "may not be changed in an update."));
            }
            if get(new, "preemptionPolicy") != get(old, "preemptionPolicy") {
                errs.push(FieldError::invalid(
                    "preemptionPolicy",
                    get(new, "preemptionPolicy").cloned().unwrap_or(Value::Null),
                    "field is immutable",
                ));
            }
            errs
        })
        .table(
            || {
                vec![
                    name_column(),
                    column("Value", "integer", "value represents the integer value of this priority class. This is the actual priority that pods receive when they have the name of this class in their pod spec.", 0),
                    column("Global-Default", "boolean", "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class. Only one PriorityClass can be marked as `globalDefault`. However, if more than one PriorityClasses exists with their `globalDefault` field set to true, the smallest value of such global default PriorityClasses will be used as the default priority.", 0),
                    age_column(),
                    column("PreemptionPolicy", "string", "preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, PreemptLowerPriority. Defaults to PreemptLowerPriority if unset.", 0),
                ]
            },
            |obj| {
                vec![
                    name_cell(obj),
                    json!(i64_at(obj, "value").unwrap_or(0)),
                    json!(get(obj, "globalDefault").and_then(Value::as_bool).unwrap_or(false)),
                    age_cell(obj),
                    json!(str_at(obj, "preemptionPolicy").unwrap_or_default()),
                ]
            },
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_classes() {
        let def = priorityclasses();
        let mut pc = json!({"metadata": {"name": "high"}, "value": 1000});
        def.strategy.prepare_for_create(&mut pc);
        assert!(def.strategy.validate(&pc).is_empty());
        assert_eq!(
            def.strategy.table_row(&pc)[1..3],
            [json!(1000), json!(false)]
        );
        assert_eq!(def.strategy.table_row(&pc)[4], "PreemptLowerPriority");
        let reserved = json!({"metadata": {"name": "system-x"}, "value": 2_000_000_000i64});
        assert_eq!(def.strategy.validate(&reserved).len(), 2);
        let mut changed = pc.clone();
        changed["value"] = json!(1);
        assert_eq!(
            def.strategy.validate_update(&changed, &pc)[0].to_string(),
            "value: Forbidden: may not be changed in an update."
        );
    }
}
