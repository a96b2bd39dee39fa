//! coordination.k8s.io/v1: leases (leader election, node heartbeats).

use apiserver::registry::FieldError;
use k8s_openapi::api::coordination::v1::Lease;
use serde_json::json;

use super::ResourceDef;
use super::json::str_at;
use super::strategy::{BuiltinStrategy, info};
use super::table::{age_cell, age_column, column, name_cell, name_column};
use super::validation::non_negative;

/// coordination.k8s.io/v1 resources.
pub fn resources() -> Vec<ResourceDef> {
    vec![leases()]
}

/// The leases resource.
pub fn leases() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<Lease>(info(
            "coordination.k8s.io",
            "v1",
            "Lease",
            "leases",
            true,
            &[],
            &[],
        ))
        .create_on_update()
        .validate(|obj| {
            let mut errs: Vec<FieldError> = Vec::new();
            errs.extend(non_negative(obj, "spec.leaseTransitions"));
            if let Some(d) = super::json::i64_at(obj, "spec.leaseDurationSeconds")
                && d <= 0
            {
                errs.push(FieldError::invalid(
                    "spec.leaseDurationSeconds",
                    d,
                    "must be greater than 0",
                ));
            }
            errs
        })
        .table(
            || {
                vec![
                    name_column(),
                    column("Holder", "string", "The holder of the lease.", 0),
                    age_column(),
                ]
            },
            |obj| {
                vec![
                    name_cell(obj),
                    json!(str_at(obj, "spec.holderIdentity").unwrap_or_default()),
                    age_cell(obj),
                ]
            },
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_row_and_validation() {
        let def = leases();
        let lease = json!({"metadata": {"name": "kube-scheduler"},
                           "spec": {"holderIdentity": "node-1", "leaseDurationSeconds": 15}});
        assert!(def.strategy.validate(&lease).is_empty());
        assert_eq!(def.strategy.table_row(&lease)[1], "node-1");
        let bad = json!({"metadata": {"name": "l"}, "spec": {"leaseDurationSeconds": 0}});
        assert_eq!(
            def.strategy.validate(&bad)[0].to_string(),
            "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"
        );
    }
}
