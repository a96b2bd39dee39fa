//! resource.k8s.io/v1 (dynamic resource allocation): deviceclasses, resourceclaims (subresource
//! `status`), resourceclaimtemplates and resourceslices.

use apiserver::registry::{FieldError, SelectableFields};
use k8s_openapi::api::resource::v1::{
    DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice,
};
use serde_json::{Value, json};

use super::ResourceDef;
use super::docs;
use super::json::{array_at, array_mut, get, has, i64_at, str_at};
use super::strategy::{BuiltinStrategy, info};
use super::table::{age_cell, age_column, column, name_cell, name_column};
use super::validation::{dns1123_label, dns1123_subdomain, immutable};

const GROUP: &str = "resource.k8s.io";

/// resource.k8s.io/v1 resources.
pub fn resources() -> Vec<ResourceDef> {
    vec![
        deviceclasses(),
        resourceclaims(),
        resourceclaimtemplates(),
        resourceslices(),
    ]
}

/// The deviceclasses resource.
pub fn deviceclasses() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<DeviceClass>(info(
            GROUP,
            "v1",
            "DeviceClass",
            "deviceclasses",
            false,
            &[],
            &[],
        ))
        .generation()
        .table(plain_columns, plain_row),
    )
}

/// The resourceclaims resource (subresource `status`); the spec is immutable.
pub fn resourceclaims() -> ResourceDef {
    let strategy = BuiltinStrategy::new::<ResourceClaim>(info(
        GROUP,
        "v1",
        "ResourceClaim",
        "resourceclaims",
        true,
        &[],
        &[],
    ))
    .status()
    .generation()
    .defaults(|obj| default_device_requests(obj, "spec.devices.requests"))
    .validate(|obj| validate_claim_spec(obj, "spec"))
    .validate_update(|new, old| immutable(new, old, "spec").into_iter().collect())
    .table(
        || {
            vec![
                name_column(),
                column(
                    "State",
                    "string",
                    "A summary of the current state (allocated, pending, reserved, etc.).",
                    0,
                ),
                age_column(),
            ]
        },
        |obj| vec![name_cell(obj), json!(claim_state(obj)), age_cell(obj)],
    );
    ResourceDef::new(strategy).with(&["status"])
}

/// The resourceclaimtemplates resource.
pub fn resourceclaimtemplates() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<ResourceClaimTemplate>(info(
            GROUP,
            "v1",
            "ResourceClaimTemplate",
            "resourceclaimtemplates",
            true,
            &[],
            &[],
        ))
        .defaults(|obj| default_device_requests(obj, "spec.spec.devices.requests"))
        .validate(|obj| validate_claim_spec(obj, "spec.spec"))
        .validate_update(|new, old| immutable(new, old, "spec").into_iter().collect())
        .table(plain_columns, plain_row),
    )
}

/// The resourceslices resource (field selectors `spec.nodeName` and `spec.driver`).
pub fn resourceslices() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<ResourceSlice>(info(
            GROUP,
            "v1",
            "ResourceSlice",
            "resourceslices",
            false,
            &[],
            &[],
        ))
        .generation()
        .validate(validate_slice)
        .validate_update(|new, old| {
            ["spec.driver", "spec.nodeName"]
                .iter()
                .filter_map(|path| immutable(new, old, path))
                .collect()
        })
        .selectable(|obj| {
            let mut fields = SelectableFields::new();
            for (field, path) in [
                ("spec.nodeName", "spec.nodeName"),
                ("spec.driver", "spec.driver"),
            ] {
                fields.insert(field.into(), str_at(obj, path).unwrap_or_default().into());
            }
            fields
        })
        .table(
            || {
                vec![
                    name_column(),
                    column("Node", "string", docs::SLICE_NODE, 0),
                    column("Driver", "string", docs::SLICE_DRIVER, 0),
                    column("Pool", "string", docs::SLICE_POOL, 0),
                    age_column(),
                ]
            },
            |obj| {
                let node = str_at(obj, "spec.nodeName").filter(|n| !n.is_empty());
                vec![
                    name_cell(obj),
                    json!(node.unwrap_or("<none>")),
                    json!(str_at(obj, "spec.driver").unwrap_or_default()),
                    json!(str_at(obj, "spec.pool.name").unwrap_or_default()),
                    age_cell(obj),
                ]
            },
        ),
    )
}

fn plain_columns() -> Vec<apiserver::registry::TableColumn> {
    vec![name_column(), age_column()]
}

fn plain_row(obj: &Value) -> Vec<Value> {
    vec![name_cell(obj), age_cell(obj)]
}

/// Upstream's printed claim state: `deleted`, `pending`, `allocated`, `reserved`, comma-joined.
fn claim_state(obj: &Value) -> String {
    let deleted = has(obj, "metadata.deletionTimestamp");
    let mut states = Vec::new();
    if deleted {
        states.push("deleted");
    }
    if has(obj, "status.allocation") {
        states.push("allocated");
        if !array_at(obj, "status.reservedFor").is_empty() {
            states.push("reserved");
        }
    } else if !deleted {
        states.push("pending");
    }
    states.join(",")
}

/// v1 defaulting of device requests: an `exactly` request (and each `firstAvailable`
/// subrequest) gets `allocationMode: ExactCount` and, for that mode, `count: 1`.
fn default_device_requests(obj: &mut Value, path: &str) {
    let Some(requests) = array_mut(obj, path) else {
        return;
    };
    let default_one = |req: &mut Value| {
        if let Some(map) = req.as_object_mut() {
            let mode = map
                .entry("allocationMode")
                .or_insert_with(|| json!("ExactCount"));
            if mode == "ExactCount" && !map.contains_key("count") {
                map.insert("count".into(), json!(1));
            }
        }
    };
    for request in requests {
        if let Some(exactly) = request.get_mut("exactly").filter(|e| e.is_object()) {
            default_one(exactly);
        }
        if let Some(subs) = request
            .get_mut("firstAvailable")
            .and_then(Value::as_array_mut)
        {
            subs.iter_mut().for_each(default_one);
        }
    }
}

/// The checks of upstream's `validateResourceClaimSpec` that clients meet first: request names
/// are unique DNS labels; each request has exactly one of `exactly` and `firstAvailable`; a
/// device class name is a DNS subdomain; `count` is positive for `ExactCount`.
fn validate_claim_spec(obj: &Value, spec: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let requests_path = format!("{spec}.devices.requests");
    let mut seen = Vec::new();
    for (i, request) in array_at(obj, &requests_path).iter().enumerate() {
        let at = format!("{requests_path}[{i}]");
        let name = request.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() {
            errs.push(FieldError::required(&format!("{at}.name"), ""));
        } else {
            for msg in dns1123_label(name) {
                errs.push(FieldError::invalid(&format!("{at}.name"), name, &msg));
            }
            if seen.contains(&name) {
                errs.push(FieldError::duplicate(&format!("{at}.name"), name));
            }
            seen.push(name);
        }
        let exactly = request.get("exactly").filter(|e| !e.is_null());
        let first = request.get("firstAvailable").and_then(Value::as_array);
        match (exactly, first.is_some_and(|f| !f.is_empty())) {
            (Some(_), true) => errs.push(FieldError::invalid(
                &at,
                json!("{exactly, firstAvailable}"),
                "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set",
            )),
            (None, false) => errs.push(FieldError::required(
                &at,
                "exactly one of `exactly` or `firstAvailable` is required",
            )),
            (Some(exact), false) => errs.extend(validate_exact(exact, &format!("{at}.exactly"))),
            (None, true) => {
                for (j, sub) in first.into_iter().flatten().enumerate() {
                    errs.extend(validate_exact(sub, &format!("{at}.firstAvailable[{j}]")));
                }
            }
        }
    }
    errs
}

fn validate_exact(request: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let class = request
        .get("deviceClassName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if class.is_empty() {
        errs.push(FieldError::required(&format!("{at}.deviceClassName"), ""));
    } else {
        for msg in dns1123_subdomain(class) {
            errs.push(FieldError::invalid(
                &format!("{at}.deviceClassName"),
                class,
                &msg,
            ));
        }
    }
    match request.get("allocationMode").and_then(Value::as_str) {
        Some("ExactCount") | None => {
            if let Some(count) = request.get("count").and_then(Value::as_i64)
                && count <= 0
            {
                errs.push(FieldError::invalid(
                    &format!("{at}.count"),
                    count,
                    "must be greater than zero",
                ));
            }
        }
        Some("All") => {}
        Some(other) => errs.push(FieldError::not_supported(
            &format!("{at}.allocationMode"),
            other,
            &["All", "ExactCount"],
        )),
    }
    errs
}

/// The checks of upstream's `ValidateResourceSlice` on the slice's identity: driver, pool and
/// the node selection (exactly one of four).
fn validate_slice(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let driver = str_at(obj, "spec.driver").unwrap_or_default();
    if driver.is_empty() {
        errs.push(FieldError::required("spec.driver", ""));
    } else {
        for msg in dns1123_subdomain(driver) {
            errs.push(FieldError::invalid("spec.driver", driver, &msg));
        }
    }
    if str_at(obj, "spec.pool.name").is_none_or(str::is_empty) {
        errs.push(FieldError::required("spec.pool.name", ""));
    }
    if i64_at(obj, "spec.pool.resourceSliceCount").unwrap_or(0) <= 0 {
        errs.push(FieldError::invalid(
            "spec.pool.resourceSliceCount",
            i64_at(obj, "spec.pool.resourceSliceCount").unwrap_or(0),
            "must be greater than zero",
        ));
    }
    let set: Vec<&str> = [
        (
            "nodeName",
            str_at(obj, "spec.nodeName").is_some_and(|n| !n.is_empty()),
        ),
        ("nodeSelector", has(obj, "spec.nodeSelector")),
        (
            "allNodes",
            get(obj, "spec.allNodes").and_then(Value::as_bool) == Some(true),
        ),
        (
            "perDeviceNodeSelection",
            get(obj, "spec.perDeviceNodeSelection").and_then(Value::as_bool) == Some(true),
        ),
    ]
    .iter()
    .filter(|(_, set)| *set)
    .map(|(name, _)| *name)
    .collect();
    match set.len() {
        1 => {}
        0 => errs.push(FieldError::required(
            "spec",
            "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required",
        )),
        _ => errs.push(FieldError::invalid(
            "spec",
            json!(format!("{{{}}}", set.join(", "))),
            "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set",
        )),
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claim_requests_are_defaulted_and_validated() {
        let def = resourceclaims();
        let mut claim = json!({"metadata": {"name": "gpu", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}});
        def.strategy.prepare_for_create(&mut claim);
        assert_eq!(
            claim["spec"]["devices"]["requests"][0]["exactly"],
            json!({"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1})
        );
        assert!(def.strategy.validate(&claim).is_empty());
        assert_eq!(def.strategy.table_row(&claim)[1], json!("pending"));
        let bad = json!({"metadata": {"name": "x", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "r"}]}}});
        assert_eq!(
            def.strategy.validate(&bad)[0].to_string(),
            "spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is required"
        );
        let mut changed = claim.clone();
        changed["spec"]["devices"]["requests"][0]["name"] = json!("other");
        assert!(
            def.strategy.validate_update(&changed, &claim)[0]
                .to_string()
                .ends_with("field is immutable")
        );
        let mut allocated = claim.clone();
        allocated["status"] = json!({"allocation": {}, "reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]});
        assert_eq!(
            def.strategy.table_row(&allocated)[1],
            json!("allocated,reserved")
        );
    }

    #[test]
    fn slice_needs_one_node_selection() {
        let def = resourceslices();
        let slice = json!({"metadata": {"name": "s"}, "spec": {"driver": "gpu.example.com",
            "pool": {"name": "p", "resourceSliceCount": 1}, "nodeName": "n1"}});
        assert!(def.strategy.validate(&slice).is_empty());
        assert_eq!(
            def.strategy.table_row(&slice)[..4],
            [
                json!("s"),
                json!("n1"),
                json!("gpu.example.com"),
                json!("p")
            ]
        );
        assert_eq!(
            def.strategy.selectable_fields(&slice)["spec.driver"],
            "gpu.example.com"
        );
        let mut none = slice.clone();
        none["spec"].as_object_mut().unwrap().remove("nodeName");
        assert_eq!(
            def.strategy.validate(&none)[0].to_string(),
            "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
        );
    }
}
