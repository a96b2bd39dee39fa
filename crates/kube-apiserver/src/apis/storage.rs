//! storage.k8s.io/v1: storageclasses.

use apiserver::registry::FieldError;
use k8s_openapi::api::storage::v1::StorageClass;
use serde_json::{Value, json};

use super::ResourceDef;
use super::json::{default_at, get, str_at};
use super::strategy::{BuiltinStrategy, info};
use super::table::{age_cell, age_column, column, name_column};
use super::validation::immutable;

/// storage.k8s.io/v1 resources.
pub fn resources() -> Vec<ResourceDef> {
    vec![storageclasses()]
}

/// The annotation marking the default storage class (and its beta spelling).
const DEFAULT_CLASS: [&str; 2] = [
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
];

/// The storageclasses resource.
pub fn storageclasses() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<StorageClass>(info(
            "storage.k8s.io",
            "v1",
            "StorageClass",
            "storageclasses",
            false,
            &["sc"],
            &[],
        ))
        .defaults(|obj| {
            default_at(obj, "reclaimPolicy", json!("Delete"));
            default_at(obj, "volumeBindingMode", json!("Immediate"));
        })
        .validate(|obj| {
            let mut errs = Vec::new();
            if str_at(obj, "provisioner").is_none_or(str::is_empty) {
                errs.push(FieldError::required("provisioner", ""));
            }
            if let Some(p) = str_at(obj, "reclaimPolicy")
                && !matches!(p, "Delete" | "Retain")
            {
                errs.push(FieldError::not_supported("reclaimPolicy", p, &["Delete", "Retain"]));
            }
            if let Some(m) = str_at(obj, "volumeBindingMode")
                && !matches!(m, "Immediate" | "WaitForFirstConsumer")
            {
                errs.push(FieldError::not_supported(
                    "volumeBindingMode",
                    m,
                    &["Immediate", "WaitForFirstConsumer"],
                ));
            }
            errs
        })
        .validate_update(|new, old| {
            let mut errs = Vec::new();
            for field in ["parameters", "provisioner", "reclaimPolicy", "volumeBindingMode"] {
                if get(new, field) != get(old, field) {
                    errs.push(FieldError::forbidden(
                        field,
                        "updates to parameters are forbidden.",
                    ));
                }
            }
            // upstream words the provisioner/reclaim policy errors as plain immutability.
            for err in &mut errs {
                if err.field != "parameters" {
                    *err = immutable(new, old, &err.field.clone()).unwrap_or_else(|| err.clone());
                }
            }
            errs
        })
        .table(
            || {
                vec![
                    name_column(),
                    column("Provisioner", "string", "provisioner indicates the type of the provisioner.", 0),
                    column("ReclaimPolicy", "string", "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class. Defaults to Delete.", 0),
                    column("VolumeBindingMode", "string", "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.  When unset, VolumeBindingImmediate is used. This field is only honored by servers that enable the VolumeScheduling feature.", 0),
                    column("AllowVolumeExpansion", "string", "allowVolumeExpansion shows whether the storage class allow volume expand.", 0),
                    age_column(),
                ]
            },
            |obj| {
                let mut name = str_at(obj, "metadata.name").unwrap_or_default().to_string();
                let is_default = DEFAULT_CLASS.iter().any(|key| {
                    get(obj, "metadata.annotations")
                        .and_then(|a| a.get(*key))
                        .and_then(Value::as_str)
                        == Some("true")
                });
                if is_default {
                    name.push_str(" (default)");
                }
                vec![
                    json!(name),
                    json!(str_at(obj, "provisioner").unwrap_or_default()),
                    json!(str_at(obj, "reclaimPolicy").unwrap_or("Delete")),
                    json!(str_at(obj, "volumeBindingMode").unwrap_or("Immediate")),
                    json!(get(obj, "allowVolumeExpansion").and_then(Value::as_bool).unwrap_or(false)),
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
    fn storage_class() {
        let def = storageclasses();
        let mut sc = json!({"metadata": {"name": "standard",
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "rancher.io/local-path"});
        def.strategy.prepare_for_create(&mut sc);
        assert!(def.strategy.validate(&sc).is_empty());
        assert_eq!(
            def.strategy.table_row(&sc)[..5],
            [
                json!("standard (default)"),
                json!("rancher.io/local-path"),
                json!("Delete"),
                json!("Immediate"),
                json!(false)
            ]
        );
        let mut changed = sc.clone();
        changed["provisioner"] = json!("other");
        assert_eq!(
            def.strategy.validate_update(&changed, &sc)[0].to_string(),
            "provisioner: Invalid value: \"other\": field is immutable"
        );
    }
}
