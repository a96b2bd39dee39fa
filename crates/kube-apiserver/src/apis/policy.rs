//! policy/v1: poddisruptionbudgets.

use apiserver::registry::FieldError;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use serde_json::{Value, json};

use super::ResourceDef;
use super::json::{get, has};
use super::strategy::{BuiltinStrategy, info};
use super::table::{age_cell, age_column, column, int_cell, name_cell, name_column};

/// policy/v1 resources.
pub fn resources() -> Vec<ResourceDef> {
    vec![poddisruptionbudgets()]
}

fn int_or_string_cell(obj: &Value, path: &str) -> Value {
    match get(obj, path) {
        Some(Value::Number(n)) => json!(n.to_string()),
        Some(Value::String(s)) => json!(s),
        _ => json!("N/A"),
    }
}

/// The poddisruptionbudgets resource (subresource `status`).
pub fn poddisruptionbudgets() -> ResourceDef {
    let strategy = BuiltinStrategy::new::<PodDisruptionBudget>(info(
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        true,
        &["pdb"],
        &[],
    ))
    .status_from(|| json!({"currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0}))
    .generation()
    .validate(|obj| {
        let mut errs = Vec::new();
        if has(obj, "spec.minAvailable") && has(obj, "spec.maxUnavailable") {
            errs.push(FieldError::invalid(
                "spec",
                get(obj, "spec").cloned().unwrap_or(Value::Null),
                "minAvailable and maxUnavailable cannot be both set",
            ));
        }
        for path in ["spec.minAvailable", "spec.maxUnavailable"] {
            if let Some(n) = get(obj, path).and_then(Value::as_i64)
                && n < 0
            {
                errs.push(FieldError::invalid(
                    path,
                    n,
                    "must be greater than or equal to 0",
                ));
            }
        }
        errs
    })
    .table(
        || {
            vec![
                name_column(),
                column(
                    "Min Available",
                    "string",
                    "The minimum number of pods that must be available.",
                    0,
                ),
                column(
                    "Max Unavailable",
                    "string",
                    "The maximum number of pods that may be unavailable.",
                    0,
                ),
                column(
                    "Allowed Disruptions",
                    "integer",
                    "Calculated number of pods that may be disrupted at this time.",
                    0,
                ),
                age_column(),
            ]
        },
        |obj| {
            vec![
                name_cell(obj),
                int_or_string_cell(obj, "spec.minAvailable"),
                int_or_string_cell(obj, "spec.maxUnavailable"),
                int_cell(obj, "status.disruptionsAllowed"),
                age_cell(obj),
            ]
        },
    );
    ResourceDef::new(strategy).with(&["status"])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pdb() {
        let def = poddisruptionbudgets();
        let pdb = json!({"metadata": {"name": "p"}, "spec": {"minAvailable": 1}});
        assert!(def.strategy.validate(&pdb).is_empty());
        assert_eq!(
            def.strategy.table_row(&pdb)[1..4],
            [json!("1"), json!("N/A"), json!(0)]
        );
        let both = json!({"metadata": {"name": "p"}, "spec": {"minAvailable": 1, "maxUnavailable": "50%"}});
        assert!(
            def.strategy.validate(&both)[0]
                .to_string()
                .ends_with("minAvailable and maxUnavailable cannot be both set")
        );
    }
}
