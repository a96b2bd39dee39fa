//! storage.k8s.io/v1: storageclasses, csidrivers, csinodes, csistoragecapacities,
//! volumeattachments (subresource `status`) and volumeattributesclasses.

use apiserver::registry::FieldError;
use k8s_openapi::api::storage::v1::{
    CSIDriver, CSINode, CSIStorageCapacity, StorageClass, VolumeAttachment, VolumeAttributesClass,
};
use serde_json::{Value, json};

use super::ResourceDef;
use super::docs;
use super::json::{array_at, default_at, get, has, str_at};
use super::strategy::{BuiltinStrategy, info};
use super::table::{age_cell, age_column, column, name_cell, name_column};
use super::validation::{dns1123_subdomain, immutable};

/// storage.k8s.io/v1 resources.
pub fn resources() -> Vec<ResourceDef> {
    vec![
        csidrivers(),
        csinodes(),
        csistoragecapacities(),
        storageclasses(),
        volumeattachments(),
        volumeattributesclasses(),
    ]
}

const GROUP: &str = "storage.k8s.io";

/// The csidrivers resource.
pub fn csidrivers() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<CSIDriver>(info(
            GROUP,
            "v1",
            "CSIDriver",
            "csidrivers",
            false,
            &[],
            &[],
        ))
        .defaults(|obj| {
            default_at(obj, "spec.attachRequired", json!(true));
            default_at(obj, "spec.podInfoOnMount", json!(false));
            default_at(obj, "spec.storageCapacity", json!(false));
            default_at(obj, "spec.fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
            default_at(obj, "spec.requiresRepublish", json!(false));
            default_at(obj, "spec.seLinuxMount", json!(false));
            if array_at(obj, "spec.volumeLifecycleModes").is_empty()
                && let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut)
            {
                spec.insert("volumeLifecycleModes".into(), json!(["Persistent"]));
            }
        })
        .validate(|obj| {
            let mut errs = Vec::new();
            if let Some(policy) = str_at(obj, "spec.fsGroupPolicy") {
                const POLICIES: [&str; 3] = ["File", "None", "ReadWriteOnceWithFSType"];
                if !POLICIES.contains(&policy) {
                    errs.push(FieldError::not_supported(
                        "spec.fsGroupPolicy",
                        policy,
                        &POLICIES,
                    ));
                }
            }
            for (i, mode) in array_at(obj, "spec.volumeLifecycleModes")
                .iter()
                .enumerate()
            {
                let mode = mode.as_str().unwrap_or_default();
                if !matches!(mode, "Persistent" | "Ephemeral") {
                    errs.push(FieldError::not_supported(
                        &format!("spec.volumeLifecycleModes[{i}]"),
                        mode,
                        &["Ephemeral", "Persistent"],
                    ));
                }
            }
            errs
        })
        .validate_update(|new, old| {
            [
                "spec.attachRequired",
                "spec.fsGroupPolicy",
                "spec.volumeLifecycleModes",
            ]
            .iter()
            .filter_map(|path| immutable(new, old, path))
            .collect()
        })
        .table(
            || {
                vec![
                    name_column(),
                    column("AttachRequired", "boolean", docs::CSI_ATTACH_REQUIRED, 0),
                    column("PodInfoOnMount", "boolean", docs::CSI_POD_INFO, 0),
                    column("StorageCapacity", "boolean", docs::CSI_STORAGE_CAPACITY, 0),
                    column("TokenRequests", "string", docs::CSI_TOKEN_REQUESTS, 0),
                    column(
                        "RequiresRepublish",
                        "boolean",
                        docs::CSI_REQUIRES_REPUBLISH,
                        0,
                    ),
                    column("Modes", "string", docs::CSI_MODES, 0),
                    age_column(),
                ]
            },
            |obj| {
                let flag = |path: &str, default: bool| {
                    json!(get(obj, path).and_then(Value::as_bool).unwrap_or(default))
                };
                let tokens = match get(obj, "spec.tokenRequests").and_then(Value::as_array) {
                    Some(requests) => requests
                        .iter()
                        .map(|t| {
                            t.get("audience")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                        })
                        .collect::<Vec<_>>()
                        .join(","),
                    None => "<unset>".into(),
                };
                let modes: Vec<&str> = array_at(obj, "spec.volumeLifecycleModes")
                    .iter()
                    .filter_map(Value::as_str)
                    .collect();
                let modes = if modes.is_empty() {
                    "<none>".to_string()
                } else {
                    modes.join(",")
                };
                vec![
                    name_cell(obj),
                    flag("spec.attachRequired", true),
                    flag("spec.podInfoOnMount", false),
                    flag("spec.storageCapacity", false),
                    json!(tokens),
                    flag("spec.requiresRepublish", false),
                    json!(modes),
                    age_cell(obj),
                ]
            },
        ),
    )
}

/// The csinodes resource.
pub fn csinodes() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<CSINode>(info(GROUP, "v1", "CSINode", "csinodes", false, &[], &[]))
            .validate(|obj| {
                let mut errs = Vec::new();
                let mut seen = Vec::new();
                for (i, driver) in array_at(obj, "spec.drivers").iter().enumerate() {
                    let name = driver
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    let at = format!("spec.drivers[{i}]");
                    if name.is_empty() {
                        errs.push(FieldError::required(&format!("{at}.name"), ""));
                    } else if seen.contains(&name) {
                        errs.push(FieldError::duplicate(&format!("{at}.name"), name));
                    }
                    seen.push(name);
                    if driver
                        .get("nodeID")
                        .and_then(Value::as_str)
                        .is_none_or(str::is_empty)
                    {
                        errs.push(FieldError::required(&format!("{at}.nodeID"), ""));
                    }
                }
                errs
            })
            .table(
                || {
                    vec![
                        name_column(),
                        column("Drivers", "integer", docs::CSI_NODE_DRIVERS, 0),
                        age_column(),
                    ]
                },
                |obj| {
                    vec![
                        name_cell(obj),
                        json!(array_at(obj, "spec.drivers").len()),
                        age_cell(obj),
                    ]
                },
            ),
    )
}

/// The csistoragecapacities resource.
pub fn csistoragecapacities() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<CSIStorageCapacity>(info(
            GROUP,
            "v1",
            "CSIStorageCapacity",
            "csistoragecapacities",
            true,
            &[],
            &[],
        ))
        .validate(|obj| {
            let class = str_at(obj, "storageClassName").unwrap_or_default();
            if class.is_empty() {
                return vec![FieldError::required("storageClassName", "")];
            }
            dns1123_subdomain(class)
                .into_iter()
                .map(|msg| FieldError::invalid("storageClassName", class, &msg))
                .collect()
        })
        .table(
            || {
                vec![
                    name_column(),
                    column("StorageClassName", "string", docs::CAPACITY_CLASS, 0),
                    column("Capacity", "string", docs::CAPACITY, 0),
                    age_column(),
                ]
            },
            |obj| {
                let capacity = match get(obj, "capacity") {
                    Some(Value::String(q)) => q.clone(),
                    Some(Value::Number(n)) => n.to_string(),
                    _ => "<unset>".into(),
                };
                vec![
                    name_cell(obj),
                    json!(str_at(obj, "storageClassName").unwrap_or_default()),
                    json!(capacity),
                    age_cell(obj),
                ]
            },
        ),
    )
}

/// The volumeattachments resource (subresource `status`); the spec is immutable.
pub fn volumeattachments() -> ResourceDef {
    let strategy = BuiltinStrategy::new::<VolumeAttachment>(info(
        GROUP,
        "v1",
        "VolumeAttachment",
        "volumeattachments",
        false,
        &[],
        &[],
    ))
    .status_from(|| json!({"attached": false}))
    .validate(|obj| {
        let mut errs = Vec::new();
        for field in ["spec.attacher", "spec.nodeName"] {
            if str_at(obj, field).is_none_or(str::is_empty) {
                errs.push(FieldError::required(field, ""));
            }
        }
        let pv = str_at(obj, "spec.source.persistentVolumeName").is_some_and(|n| !n.is_empty());
        let inline = has(obj, "spec.source.inlineVolumeSpec");
        if pv == inline {
            errs.push(FieldError::required(
                "spec.source",
                "must specify exactly one of inlineVolumeSpec and persistentVolumeName",
            ));
        }
        errs
    })
    .validate_update(|new, old| immutable(new, old, "spec").into_iter().collect())
    .table(
        || {
            vec![
                name_column(),
                column("Attacher", "string", docs::VA_ATTACHER, 0),
                column("PV", "string", docs::VA_PV, 0),
                column("Node", "string", docs::VA_NODE, 0),
                column("Attached", "boolean", docs::VA_ATTACHED, 0),
                age_column(),
            ]
        },
        |obj| {
            vec![
                name_cell(obj),
                json!(str_at(obj, "spec.attacher").unwrap_or_default()),
                json!(str_at(obj, "spec.source.persistentVolumeName").unwrap_or_default()),
                json!(str_at(obj, "spec.nodeName").unwrap_or_default()),
                json!(
                    get(obj, "status.attached")
                        .and_then(Value::as_bool)
                        .unwrap_or(false)
                ),
                age_cell(obj),
            ]
        },
    );
    ResourceDef::new(strategy).with(&["status"])
}

/// The volumeattributesclasses resource.
pub fn volumeattributesclasses() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<VolumeAttributesClass>(info(
            GROUP,
            "v1",
            "VolumeAttributesClass",
            "volumeattributesclasses",
            false,
            &["vac"],
            &[],
        ))
        .validate(|obj| {
            if str_at(obj, "driverName").is_none_or(str::is_empty) {
                return vec![FieldError::required("driverName", "")];
            }
            Vec::new()
        })
        .validate_update(|new, old| {
            let mut errs: Vec<FieldError> = immutable(new, old, "driverName").into_iter().collect();
            if get(new, "parameters") != get(old, "parameters") {
                errs.push(FieldError::forbidden(
                    "parameters",
                    "updates to parameters are forbidden.",
                ));
            }
            errs
        })
        .table(
            || {
                vec![
                    name_column(),
                    column("DriverName", "string", docs::VAC_DRIVER, 0),
                    age_column(),
                ]
            },
            |obj| {
                vec![
                    name_cell(obj),
                    json!(str_at(obj, "driverName").unwrap_or_default()),
                    age_cell(obj),
                ]
            },
        ),
    )
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
    fn csi_driver_defaults_and_row() {
        let def = csidrivers();
        let mut driver = json!({"metadata": {"name": "hostpath.csi.k8s.io"}, "spec": {}});
        def.strategy.prepare_for_create(&mut driver);
        assert_eq!(driver["spec"]["attachRequired"], json!(true));
        assert_eq!(
            driver["spec"]["volumeLifecycleModes"],
            json!(["Persistent"])
        );
        assert!(def.strategy.validate(&driver).is_empty());
        assert_eq!(
            def.strategy.table_row(&driver)[1..7],
            [
                json!(true),
                json!(false),
                json!(false),
                json!("<unset>"),
                json!(false),
                json!("Persistent")
            ]
        );
        let mut changed = driver.clone();
        changed["spec"]["attachRequired"] = json!(false);
        assert_eq!(
            def.strategy.validate_update(&changed, &driver)[0].to_string(),
            "spec.attachRequired: Invalid value: false: field is immutable"
        );
    }

    #[test]
    fn volume_attachment_needs_one_source() {
        let def = volumeattachments();
        let va = json!({"metadata": {"name": "va"}, "spec": {"attacher": "csi.example.com",
            "nodeName": "n1", "source": {"persistentVolumeName": "pv1"}}});
        assert!(def.strategy.validate(&va).is_empty());
        assert_eq!(
            def.strategy.table_row(&va)[1..5],
            [
                json!("csi.example.com"),
                json!("pv1"),
                json!("n1"),
                json!(false)
            ]
        );
        let bad = json!({"metadata": {"name": "va"}, "spec": {"attacher": "a", "nodeName": "n", "source": {}}});
        assert_eq!(
            def.strategy.validate(&bad)[0].to_string(),
            "spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName"
        );
    }

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
