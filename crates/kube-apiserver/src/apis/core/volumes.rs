//! PersistentVolumeClaims and PersistentVolumes: `Pending` on create, required access modes
//! and sizes, the claim spec frozen after creation, kubectl's columns.

use apiserver::registry::{FieldError, TableColumn};
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use serde_json::{Value, json};

use crate::apis::ResourceDef;
use crate::apis::json::{array_at, default_at, get, has, str_at};
use crate::apis::strategy::{BuiltinStrategy, info};
use crate::apis::table::{age_cell, age_column, column, name_cell, name_column};

/// The persistentvolumeclaims resource (subresource `status`).
pub fn persistentvolumeclaims() -> ResourceDef {
    let strategy = BuiltinStrategy::new::<PersistentVolumeClaim>(info(
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        true,
        &["pvc"],
        &[],
    ))
    .status_from(|| json!({"phase": "Pending"}))
    .defaults(|obj| default_at(obj, "spec.volumeMode", json!("Filesystem")))
    .validate(validate_claim)
    .validate_update(validate_claim_update)
    .table(claim_columns, claim_row);
    ResourceDef::new(strategy).with(&["status"])
}

fn validate_access_modes(obj: &Value, errs: &mut Vec<FieldError>) {
    const MODES: [&str; 4] = [
        "ReadOnlyMany",
        "ReadWriteMany",
        "ReadWriteOnce",
        "ReadWriteOncePod",
    ];
    let modes = array_at(obj, "spec.accessModes");
    if modes.is_empty() {
        errs.push(FieldError::required(
            "spec.accessModes",
            "at least 1 access mode is required",
        ));
    }
    for mode in modes.iter().filter_map(Value::as_str) {
        if !MODES.contains(&mode) {
            errs.push(FieldError::not_supported("spec.accessModes", mode, &MODES));
        }
    }
}

fn validate_claim(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    validate_access_modes(obj, &mut errs);
    if !has(obj, "spec.resources.requests.storage") {
        errs.push(FieldError::required("spec.resources[storage]", ""));
    }
    errs
}

/// After creation only `resources.requests` and `volumeAttributesClassName` may change
/// (and binding fills `volumeName`).
fn validate_claim_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let strip = |obj: &Value| {
        let mut spec = obj.get("spec").cloned().unwrap_or(Value::Null);
        if let Value::Object(map) = &mut spec {
            map.remove("volumeAttributesClassName");
            if let Some(Value::Object(resources)) = map.get_mut("resources") {
                resources.remove("requests");
            }
            if obj.get("spec") != old.get("spec") && !has(old, "spec.volumeName") {
                map.remove("volumeName");
            }
        }
        spec
    };
    if strip(new) == strip(old) {
        return Vec::new();
    }
    vec![FieldError::forbidden(
        "spec",
        "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
    )]
}

fn claim_columns() -> Vec<TableColumn> {
    vec![
        name_column(),
        column("Status", "string", "The phase of the claim.", 0),
        column(
            "Volume",
            "string",
            "volumeName is the binding reference to the PersistentVolume backing this claim.",
            0,
        ),
        column(
            "Capacity",
            "string",
            "capacity represents the actual resources of the underlying volume.",
            0,
        ),
        column(
            "Access Modes",
            "string",
            "accessModes contains the actual access modes the volume backing the PVC has. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1",
            0,
        ),
        column(
            "StorageClass",
            "string",
            "storageClassName is the name of the StorageClass required by the claim. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#class-1",
            0,
        ),
        column(
            "VolumeAttributesClass",
            "string",
            "volumeAttributesClassName may be used to set the VolumeAttributesClass used by this claim.",
            0,
        ),
        age_column(),
        column(
            "VolumeMode",
            "string",
            "volumeMode defines what type of volume is required by the claim. Value of Filesystem is implied when not included in claim spec.",
            1,
        ),
    ]
}

/// Upstream `GetAccessModesAsString`: `RWO,ROX,RWX,RWOP` in that order.
fn access_modes(modes: &[Value]) -> String {
    let has_mode = |m: &str| modes.iter().any(|v| v.as_str() == Some(m));
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| has_mode(mode))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

fn phase(obj: &Value) -> String {
    if has(obj, "metadata.deletionTimestamp") {
        "Terminating".into()
    } else {
        str_at(obj, "status.phase").unwrap_or_default().into()
    }
}

fn storage_class(obj: &Value) -> String {
    get(obj, "metadata.annotations")
        .and_then(|a| a.get("volume.beta.kubernetes.io/storage-class"))
        .and_then(Value::as_str)
        .or_else(|| str_at(obj, "spec.storageClassName"))
        .unwrap_or_default()
        .to_string()
}

fn unset_or(obj: &Value, path: &str) -> Value {
    json!(
        str_at(obj, path)
            .filter(|s| !s.is_empty())
            .unwrap_or("<unset>")
    )
}

fn claim_row(obj: &Value) -> Vec<Value> {
    let volume = str_at(obj, "spec.volumeName").unwrap_or_default();
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            str_at(obj, "status.capacity.storage")
                .unwrap_or_default()
                .to_string(),
            access_modes(array_at(obj, "status.accessModes")),
        )
    };
    vec![
        name_cell(obj),
        json!(phase(obj)),
        json!(volume),
        json!(capacity),
        json!(modes),
        json!(storage_class(obj)),
        unset_or(obj, "spec.volumeAttributesClassName"),
        age_cell(obj),
        unset_or(obj, "spec.volumeMode"),
    ]
}

/// The persistentvolumes resource (subresource `status`).
pub fn persistentvolumes() -> ResourceDef {
    let strategy = BuiltinStrategy::new::<PersistentVolume>(info(
        "",
        "v1",
        "PersistentVolume",
        "persistentvolumes",
        false,
        &["pv"],
        &[],
    ))
    .status_from(|| json!({"phase": "Pending", "lastPhaseTransitionTime": now()}))
    .defaults(|obj| {
        default_at(obj, "spec.persistentVolumeReclaimPolicy", json!("Retain"));
        default_at(obj, "spec.volumeMode", json!("Filesystem"));
    })
    .validate(|obj| {
        let mut errs = Vec::new();
        validate_access_modes(obj, &mut errs);
        if !has(obj, "spec.capacity.storage") {
            errs.push(FieldError::required("spec.capacity", ""));
        }
        errs
    })
    .table(volume_columns, volume_row);
    ResourceDef::new(strategy).with(&["status"])
}

/// The current time as Kubernetes writes `metav1.Time` (RFC 3339, whole seconds).
fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn volume_columns() -> Vec<TableColumn> {
    vec![
        name_column(),
        column(
            "Capacity",
            "string",
            "capacity is the description of the persistent volume's resources and capacity. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity",
            0,
        ),
        column(
            "Access Modes",
            "string",
            "accessModes contains all ways the volume can be mounted. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes",
            0,
        ),
        column(
            "Reclaim Policy",
            "string",
            "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim. Valid options are Retain (default for manually created PersistentVolumes), Delete (default for dynamically provisioned PersistentVolumes), and Recycle (deprecated). Recycle must be supported by the volume plugin underlying this PersistentVolume. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming",
            0,
        ),
        column(
            "Status",
            "string",
            "phase indicates if a volume is available, bound to a claim, or released by a claim. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase",
            0,
        ),
        column(
            "Claim",
            "string",
            "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim. Expected to be non-nil when bound. claim.VolumeName is the authoritative bind between PV and PVC. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding",
            0,
        ),
        column(
            "StorageClass",
            "string",
            "storageClassName is the name of StorageClass to which this persistent volume belongs. Empty value means that this volume does not belong to any StorageClass.",
            0,
        ),
        column(
            "VolumeAttributesClass",
            "string",
            "Name of VolumeAttributesClass to which this persistent volume belongs. Empty value is not allowed.",
            0,
        ),
        column(
            "Reason",
            "string",
            "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI.",
            0,
        ),
        age_column(),
        column(
            "VolumeMode",
            "string",
            "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state. Value of Filesystem is implied when not included in spec.",
            1,
        ),
    ]
}

fn volume_row(obj: &Value) -> Vec<Value> {
    let claim = match (
        str_at(obj, "spec.claimRef.namespace"),
        str_at(obj, "spec.claimRef.name"),
    ) {
        (Some(ns), Some(name)) => format!("{ns}/{name}"),
        _ => String::new(),
    };
    vec![
        name_cell(obj),
        json!(str_at(obj, "spec.capacity.storage").unwrap_or_default()),
        json!(access_modes(array_at(obj, "spec.accessModes"))),
        json!(str_at(obj, "spec.persistentVolumeReclaimPolicy").unwrap_or_default()),
        json!(phase(obj)),
        json!(claim),
        json!(storage_class(obj)),
        unset_or(obj, "spec.volumeAttributesClassName"),
        json!(str_at(obj, "status.reason").unwrap_or_default()),
        age_cell(obj),
        unset_or(obj, "spec.volumeMode"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claim_create_validate_and_row() {
        let def = persistentvolumeclaims();
        let mut pvc = json!({"metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
        def.strategy.prepare_for_create(&mut pvc);
        assert_eq!(pvc["status"]["phase"], "Pending");
        assert!(def.strategy.validate(&pvc).is_empty());
        let row = def.strategy.table_row(&pvc);
        assert_eq!(
            row[1..7],
            [
                json!("Pending"),
                json!(""),
                json!(""),
                json!(""),
                json!(""),
                json!("<unset>")
            ]
        );
        let empty = json!({"metadata": {"name": "data"}, "spec": {}});
        let errs: Vec<String> = def
            .strategy
            .validate(&empty)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errs,
            vec![
                "spec.accessModes: Required value: at least 1 access mode is required",
                "spec.resources[storage]: Required value",
            ]
        );
        let mut grown = pvc.clone();
        grown["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
        assert!(def.strategy.validate_update(&grown, &pvc).is_empty());
        let mut changed = pvc.clone();
        changed["spec"]["accessModes"] = json!(["ReadWriteMany"]);
        assert_eq!(
            def.strategy.validate_update(&changed, &pvc)[0].field,
            "spec"
        );
    }

    #[test]
    fn volume_row_shows_claim() {
        let def = persistentvolumes();
        let mut pv = json!({"metadata": {"name": "pv1"},
            "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
                     "claimRef": {"namespace": "d", "name": "data"}, "hostPath": {"path": "/x"}}});
        def.strategy.prepare_for_create(&mut pv);
        assert!(def.strategy.validate(&pv).is_empty());
        let row = def.strategy.table_row(&pv);
        assert_eq!(
            row[1..6],
            [
                json!("5Gi"),
                json!("RWO,ROX"),
                json!("Retain"),
                json!("Pending"),
                json!("d/data")
            ]
        );
    }
}
