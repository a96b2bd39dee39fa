//! The smaller core resources: serviceaccounts, endpoints, events, nodes, limitranges and
//! resourcequotas.

use std::collections::{BTreeMap, BTreeSet};

use apiserver::registry::{FieldError, SelectableFields, TableColumn};
use k8s_openapi::api::core::v1::{
    Endpoints, Event, LimitRange, Node, ResourceQuota, ServiceAccount,
};
use serde_json::{Value, json};

use crate::apis::ResourceDef;
use crate::apis::json::{array_at, get, i64_at, str_at};
use crate::apis::quantity::Quantity;
use crate::apis::strategy::{BuiltinStrategy, info};
use crate::apis::table::{
    age_cell, age_column, column, name_cell, name_column, translate_timestamp_since,
};

/// The serviceaccounts resource.
pub fn serviceaccounts() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<ServiceAccount>(info(
            "",
            "v1",
            "ServiceAccount",
            "serviceaccounts",
            true,
            &["sa"],
            &[],
        ))
        .table(
            || {
                vec![
                    name_column(),
                    column("Secrets", "string", "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.", 0),
                    age_column(),
                ]
            },
            |obj| {
                vec![
                    name_cell(obj),
                    json!(array_at(obj, "secrets").len()),
                    age_cell(obj),
                ]
            },
        ),
    )
    .with(&["token"])
}

/// The endpoints resource.
pub fn endpoints() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<Endpoints>(info(
            "",
            "v1",
            "Endpoints",
            "endpoints",
            true,
            &["ep"],
            &[],
        ))
        .create_on_update()
        .table(
            || {
                vec![
                    name_column(),
                    column(
                        "Endpoints",
                        "string",
                        "The set of all endpoints is the union of all subsets.",
                        0,
                    ),
                    age_column(),
                ]
            },
            |obj| vec![name_cell(obj), json!(format_endpoints(obj)), age_cell(obj)],
        ),
    )
}

/// Upstream `formatEndpoints`: `ip:port` pairs, three at most, then `+ N more...`.
fn format_endpoints(obj: &Value) -> String {
    const MAX: usize = 3;
    let mut shown = Vec::new();
    let mut count = 0;
    for subset in array_at(obj, "subsets") {
        let ports = array_at(subset, "ports");
        for address in array_at(subset, "addresses") {
            let ip = address
                .get("ip")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if ports.is_empty() {
                count += 1;
                if shown.len() < MAX {
                    shown.push(ip.to_string());
                }
            }
            for port in ports {
                count += 1;
                if shown.len() < MAX {
                    let number = port.get("port").and_then(Value::as_i64).unwrap_or(0);
                    shown.push(format!("{ip}:{number}"));
                }
            }
        }
    }
    if shown.is_empty() {
        return "<none>".into();
    }
    let mut out = shown.join(",");
    if count > MAX {
        out.push_str(&format!(" + {} more...", count - MAX));
    }
    out
}

/// The events resource (core/v1).
pub fn events() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<Event>(info("", "v1", "Event", "events", true, &["ev"], &[]))
            .create_on_update()
            .selectable(event_fields)
            .table(event_columns, event_row),
    )
}

/// Upstream's event field selectors (`involvedObject.*`, `reason`, `source`, `type`, ...).
pub fn event_fields(obj: &Value) -> SelectableFields {
    let mut fields = SelectableFields::new();
    for key in [
        "kind",
        "namespace",
        "name",
        "uid",
        "apiVersion",
        "resourceVersion",
        "fieldPath",
    ] {
        fields.insert(
            format!("involvedObject.{key}"),
            str_at(obj, &format!("involvedObject.{key}"))
                .unwrap_or_default()
                .into(),
        );
    }
    for key in ["reason", "reportingComponent", "type"] {
        fields.insert(key.into(), str_at(obj, key).unwrap_or_default().into());
    }
    fields.insert(
        "source".into(),
        str_at(obj, "source.component").unwrap_or_default().into(),
    );
    fields
}

fn event_columns() -> Vec<TableColumn> {
    vec![
        column(
            "Last Seen",
            "string",
            "The time at which the most recent occurrence of this event was recorded.",
            0,
        ),
        column(
            "Type",
            "string",
            "Type of this event (Normal, Warning), new types could be added in the future",
            0,
        ),
        column(
            "Reason",
            "string",
            "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
            0,
        ),
        column(
            "Object",
            "string",
            "The object that this event is about.",
            0,
        ),
        column(
            "Subobject",
            "string",
            "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2].",
            1,
        ),
        column(
            "Source",
            "string",
            "The component reporting this event. Should be a short machine understandable string.",
            1,
        ),
        column(
            "Message",
            "string",
            "A human-readable description of the status of this operation.",
            0,
        ),
        column(
            "First Seen",
            "string",
            "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
            1,
        ),
        column(
            "Count",
            "string",
            "The number of times this event has occurred.",
            1,
        ),
        TableColumn::new(
            "Name",
            "string",
            "name",
            crate::apis::table::NAME_DESCRIPTION,
            1,
        ),
    ]
}

fn non_empty<'a>(obj: &'a Value, path: &str) -> Option<&'a str> {
    str_at(obj, path).filter(|s| !s.is_empty())
}

fn event_row(obj: &Value) -> Vec<Value> {
    let first = translate_timestamp_since(
        non_empty(obj, "firstTimestamp").or_else(|| non_empty(obj, "eventTime")),
    );
    let mut last = translate_timestamp_since(
        non_empty(obj, "lastTimestamp").or_else(|| non_empty(obj, "eventTime")),
    );
    let mut count = i64_at(obj, "count").unwrap_or(0);
    if get(obj, "series").is_some_and(|s| !s.is_null()) {
        last = translate_timestamp_since(non_empty(obj, "series.lastObservedTime"));
        count = i64_at(obj, "series.count").unwrap_or(0);
    } else if count == 0 {
        count = 1;
    }
    let kind = str_at(obj, "involvedObject.kind")
        .unwrap_or_default()
        .to_lowercase();
    let target = match non_empty(obj, "involvedObject.name") {
        Some(name) => format!("{kind}/{name}"),
        None => kind,
    };
    let component =
        non_empty(obj, "source.component").or_else(|| non_empty(obj, "reportingComponent"));
    let instance = non_empty(obj, "source.host").or_else(|| non_empty(obj, "reportingInstance"));
    let source = match (component, instance) {
        (None, _) => "<unknown>".to_string(),
        (Some(c), None) => c.to_string(),
        (Some(c), Some(i)) => format!("{c}, {i}"),
    };
    vec![
        json!(last),
        json!(str_at(obj, "type").unwrap_or_default()),
        json!(str_at(obj, "reason").unwrap_or_default()),
        json!(target),
        json!(str_at(obj, "involvedObject.fieldPath").unwrap_or_default()),
        json!(source),
        json!(str_at(obj, "message").unwrap_or_default().trim()),
        json!(first),
        json!(count),
        name_cell(obj),
    ]
}

/// The nodes resource (subresource `status`).
pub fn nodes() -> ResourceDef {
    let strategy =
        BuiltinStrategy::new::<Node>(info("", "v1", "Node", "nodes", false, &["no"], &[]))
            .status_kept_on_create()
            .selectable(|obj| {
                let mut fields = SelectableFields::new();
                let unschedulable =
                    get(obj, "spec.unschedulable").and_then(Value::as_bool) == Some(true);
                fields.insert("spec.unschedulable".into(), unschedulable.to_string());
                fields
            })
            .table(node_columns, node_row);
    ResourceDef::new(strategy).with(&["status"])
}

fn node_columns() -> Vec<TableColumn> {
    vec![
        name_column(),
        column("Status", "string", "The status of the node", 0),
        column("Roles", "string", "The roles of the node", 0),
        age_column(),
        column(
            "Version",
            "string",
            "Kubelet Version reported by the node.",
            0,
        ),
        column(
            "Internal-IP",
            "string",
            "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses",
            1,
        ),
        column(
            "External-IP",
            "string",
            "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses",
            1,
        ),
        column(
            "OS-Image",
            "string",
            "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
            1,
        ),
        column(
            "Kernel-Version",
            "string",
            "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
            1,
        ),
        column(
            "Container-Runtime",
            "string",
            "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
            1,
        ),
    ]
}

fn node_row(obj: &Value) -> Vec<Value> {
    let mut status = Vec::new();
    if let Some(ready) = array_at(obj, "status.conditions")
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
    {
        status.push(
            if ready.get("status").and_then(Value::as_str) == Some("True") {
                "Ready"
            } else {
                "NotReady"
            },
        );
    }
    if status.is_empty() {
        status.push("Unknown");
    }
    if get(obj, "spec.unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push("SchedulingDisabled");
    }
    let mut roles = BTreeSet::new();
    if let Some(Value::Object(labels)) = get(obj, "metadata.labels") {
        for (key, value) in labels {
            if let Some(role) = key.strip_prefix("node-role.kubernetes.io/")
                && !role.is_empty()
            {
                roles.insert(role.to_string());
            } else if key == "kubernetes.io/role"
                && let Some(role) = value.as_str().filter(|r| !r.is_empty())
            {
                roles.insert(role.to_string());
            }
        }
    }
    let roles = if roles.is_empty() {
        "<none>".to_string()
    } else {
        roles.into_iter().collect::<Vec<_>>().join(",")
    };
    let address = |kind: &str| {
        array_at(obj, "status.addresses")
            .iter()
            .find(|a| a.get("type").and_then(Value::as_str) == Some(kind))
            .and_then(|a| a.get("address"))
            .and_then(Value::as_str)
            .unwrap_or("<none>")
            .to_string()
    };
    let info = |field: &str| {
        json!(non_empty(obj, &format!("status.nodeInfo.{field}")).unwrap_or("<unknown>"))
    };
    vec![
        name_cell(obj),
        json!(status.join(",")),
        json!(roles),
        age_cell(obj),
        json!(str_at(obj, "status.nodeInfo.kubeletVersion").unwrap_or_default()),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        info("osImage"),
        info("kernelVersion"),
        info("containerRuntimeVersion"),
    ]
}

/// The limitranges resource.
pub fn limitranges() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<LimitRange>(info(
            "",
            "v1",
            "LimitRange",
            "limitranges",
            true,
            &["limits"],
            &[],
        ))
        .create_on_update()
        .defaults(default_limit_range)
        .validate(validate_limit_range),
    )
}

/// Whether `resource` may be overcommitted (requested below its limit): native resources
/// other than huge pages (upstream `helper.IsOvercommitAllowed`).
fn overcommit_allowed(resource: &str) -> bool {
    let native = !resource.contains('/') || resource.contains("kubernetes.io/");
    native && !resource.starts_with("hugepages-")
}

/// Upstream `ValidateLimitRange`: one item per type, no defaults on `Pod` items, a storage
/// bound on `PersistentVolumeClaim` items, and per resource min ≤ default request ≤ default
/// ≤ max, a ratio of at least 1 and at most max/min, defaults equal to requests for resources
/// that cannot be overcommitted.
fn validate_limit_range(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut types = BTreeSet::new();
    for (i, item) in array_at(obj, "spec.limits").iter().enumerate() {
        let at = format!("spec.limits[{i}]");
        let kind = item.get("type").and_then(Value::as_str).unwrap_or_default();
        if kind.is_empty() {
            errs.push(FieldError::required(&format!("{at}.type"), ""));
        } else if !types.insert(kind.to_string()) {
            errs.push(FieldError::duplicate(&format!("{at}.type"), kind));
        }
        let mut section = |name: &str| -> BTreeMap<String, Quantity> {
            let mut out = BTreeMap::new();
            let Some(Value::Object(map)) = item.get(name) else {
                return out;
            };
            if kind == "Pod" && (name == "default" || name == "defaultRequest") {
                if !map.is_empty() {
                    errs.push(FieldError::forbidden(
                        &format!("{at}.{name}"),
                        "may not be specified when `type` is 'Pod'",
                    ));
                }
                return out;
            }
            for (resource, amount) in map {
                let text = match amount {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                match Quantity::parse(&text) {
                    Ok(q) => {
                        out.insert(resource.clone(), q);
                    }
                    Err(err) => errs.push(FieldError::invalid(
                        &format!("{at}.{name}[{resource}]"),
                        text,
                        &err.to_string(),
                    )),
                }
            }
            out
        };
        let max = section("max");
        let min = section("min");
        let defaults = section("default");
        let requests = section("defaultRequest");
        let ratios = section("maxLimitRequestRatio");
        if kind == "PersistentVolumeClaim"
            && !min.contains_key("storage")
            && !max.contains_key("storage")
        {
            errs.push(FieldError::required(
                &format!("{at}.limits"),
                "either minimum or maximum storage value is required, but neither was provided",
            ));
        }
        let keys: BTreeSet<&String> = max
            .keys()
            .chain(min.keys())
            .chain(defaults.keys())
            .chain(requests.keys())
            .chain(ratios.keys())
            .collect();
        for k in keys {
            let (lo, hi, def, req, ratio) = (
                min.get(k),
                max.get(k),
                defaults.get(k),
                requests.get(k),
                ratios.get(k),
            );
            let mut invalid = |field: &str, value: &Quantity, detail: String| {
                errs.push(FieldError::invalid(
                    &format!("{at}.{field}[{k}]"),
                    value.to_string(),
                    &detail,
                ));
            };
            if let (Some(lo), Some(hi)) = (lo, hi)
                && lo > hi
            {
                invalid(
                    "min",
                    lo,
                    format!("min value {lo} is greater than max value {hi}"),
                );
            }
            if let (Some(req), Some(lo)) = (req, lo)
                && lo > req
            {
                invalid(
                    "defaultRequest",
                    req,
                    format!("min value {lo} is greater than default request value {req}"),
                );
            }
            if let (Some(req), Some(hi)) = (req, hi)
                && req > hi
            {
                invalid(
                    "defaultRequest",
                    req,
                    format!("default request value {req} is greater than max value {hi}"),
                );
            }
            if let (Some(req), Some(def)) = (req, def)
                && req > def
            {
                invalid(
                    "defaultRequest",
                    req,
                    format!(
                        "default request value {req} is greater than default limit value {def}"
                    ),
                );
            }
            if let (Some(def), Some(lo)) = (def, lo)
                && lo > def
            {
                invalid(
                    "default",
                    lo,
                    format!("min value {lo} is greater than default value {def}"),
                );
            }
            if let (Some(def), Some(hi)) = (def, hi)
                && def > hi
            {
                invalid(
                    "default",
                    hi,
                    format!("default value {def} is greater than max value {hi}"),
                );
            }
            if let Some(ratio) = ratio {
                if *ratio < Quantity::from_units(1) {
                    invalid(
                        "maxLimitRequestRatio",
                        ratio,
                        format!("ratio {ratio} is less than 1"),
                    );
                }
                if let (Some(lo), Some(hi)) = (lo, hi)
                    && !lo.is_zero()
                {
                    let limit = hi.milli_value() as f64 / lo.milli_value() as f64;
                    let value = ratio.milli_value() as f64 / 1000.0;
                    if value > limit {
                        invalid(
                            "maxLimitRequestRatio",
                            ratio,
                            format!("ratio {ratio} is greater than max/min = {limit:.6}"),
                        );
                    }
                }
            }
            if !overcommit_allowed(k)
                && let (Some(def), Some(req)) = (def, req)
                && def != req
            {
                invalid(
                    "defaultRequest",
                    req,
                    format!("default value {def} must equal to defaultRequest value {req} in {k}"),
                );
            }
        }
    }
    errs
}

/// upstream `SetDefaults_LimitRangeItem`: a `Container` item's default limit is its max, its
/// default request its default limit, else its min.
fn default_limit_range(obj: &mut Value) {
    let Some(Value::Array(items)) = obj.pointer_mut("/spec/limits") else {
        return;
    };
    for item in items.iter_mut().filter(|i| i["type"] == "Container") {
        for (from, to) in [
            ("max", "default"),
            ("default", "defaultRequest"),
            ("min", "defaultRequest"),
        ] {
            let Some(Value::Object(source)) = item.get(from).cloned() else {
                continue;
            };
            if !item.get(to).is_some_and(Value::is_object) {
                item[to] = json!({});
            }
            if let Some(Value::Object(target)) = item.get_mut(to) {
                for (name, quantity) in source {
                    target.entry(name).or_insert(quantity);
                }
            }
        }
    }
}

/// The resourcequotas resource (subresource `status`).
pub fn resourcequotas() -> ResourceDef {
    let strategy = BuiltinStrategy::new::<ResourceQuota>(info(
        "",
        "v1",
        "ResourceQuota",
        "resourcequotas",
        true,
        &["quota"],
        &[],
    ))
    .status()
    .validate(validate_resource_quota)
    .table(
        || {
            vec![
                name_column(),
                age_column(),
                column("Request", "string", "Request represents a minimum amount of cpu/memory that a container may consume.", 0),
                column("Limit", "string", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.", 0),
            ]
        },
        quota_row,
    );
    ResourceDef::new(strategy).with(&["status"])
}

/// Quota resources whose amounts are counts (upstream `integerResources`).
const INTEGER_QUOTA_RESOURCES: &[&str] = &[
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

const QUOTA_SCOPES: &[&str] = &[
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
    "VolumeAttributesClass",
];

/// The amounts of `spec.hard` (and `status.hard`/`status.used`) are non-negative quantities,
/// whole for counted resources; scopes are known ones (upstream `ValidateResourceQuota`).
fn validate_resource_quota(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for path in ["spec.hard", "status.hard", "status.used"] {
        let Some(Value::Object(list)) = get(obj, path) else {
            continue;
        };
        for (resource, amount) in list {
            let field = format!("{path}[{resource}]");
            let text = match amount {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            match Quantity::parse(&text) {
                Err(err) => errs.push(FieldError::invalid(&field, text, &err.to_string())),
                Ok(q) if q.is_negative() => errs.push(FieldError::invalid(
                    &field,
                    q.to_string(),
                    "must be greater than or equal to 0",
                )),
                Ok(q)
                    if INTEGER_QUOTA_RESOURCES.contains(&resource.as_str())
                        && q.milli_value() % 1000 != 0 =>
                {
                    errs.push(FieldError::invalid(
                        &field,
                        q.to_string(),
                        "must be an integer",
                    ))
                }
                Ok(_) => {}
            }
        }
    }
    for (i, scope) in array_at(obj, "spec.scopes").iter().enumerate() {
        let name = scope.as_str().unwrap_or_default();
        if !QUOTA_SCOPES.contains(&name) {
            errs.push(FieldError::not_supported(
                &format!("spec.scopes[{i}]"),
                name,
                QUOTA_SCOPES,
            ));
        }
    }
    errs
}

/// Upstream `printResourceQuota`: `resource: used/hard` pairs, limits apart from the rest.
fn quota_row(obj: &Value) -> Vec<Value> {
    let mut requests = Vec::new();
    let mut limits = Vec::new();
    if let Some(Value::Object(hard)) = get(obj, "status.hard") {
        for (resource, hard_value) in hard {
            let used = get(obj, "status.used")
                .and_then(|u| u.get(resource))
                .and_then(Value::as_str)
                .unwrap_or("0");
            let text = format!(
                "{resource}: {used}/{}",
                hard_value.as_str().unwrap_or_default()
            );
            if resource.starts_with("limits.") {
                limits.push(text);
            } else {
                requests.push(text);
            }
        }
    }
    vec![
        name_cell(obj),
        age_cell(obj),
        json!(requests.join(", ")),
        json!(limits.join(", ")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_ranges_are_validated_as_upstream() {
        let errors = |limits: Value| -> Vec<(String, String)> {
            validate_limit_range(&json!({"spec": {"limits": limits}}))
                .into_iter()
                .map(|e| (e.field, e.detail))
                .collect()
        };
        assert!(
            errors(
                json!([{"type": "Container", "min": {"cpu": "100m"}, "max": {"cpu": "1"},
            "default": {"cpu": "500m"}, "defaultRequest": {"cpu": "200m"},
            "maxLimitRequestRatio": {"cpu": "4"}}])
            )
            .is_empty()
        );
        assert_eq!(
            errors(json!([{"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}}])),
            [(
                "spec.limits[0].min[cpu]".to_string(),
                "min value 2 is greater than max value 1".to_string()
            )]
        );
        assert_eq!(
            errors(json!([{"type": "Pod", "default": {"cpu": "1"}}, {"type": "Pod"}])),
            [
                (
                    "spec.limits[0].default".to_string(),
                    "may not be specified when `type` is 'Pod'".to_string()
                ),
                ("spec.limits[1].type".to_string(), String::new()),
            ]
        );
        assert_eq!(
            errors(json!([{"type": "PersistentVolumeClaim"}]))[0].1,
            "either minimum or maximum storage value is required, but neither was provided"
        );
        assert_eq!(
            errors(
                json!([{"type": "Container", "min": {"memory": "1Gi"}, "max": {"memory": "2Gi"},
                "maxLimitRequestRatio": {"memory": "3"}}])
            )[0]
            .1,
            "ratio 3 is greater than max/min = 2.000000"
        );
        assert_eq!(
            errors(json!([{"type": "Container", "maxLimitRequestRatio": {"cpu": "500m"}}]))[0].1,
            "ratio 500m is less than 1"
        );
        assert_eq!(
            errors(
                json!([{"type": "Container", "default": {"hugepages-2Mi": "4Mi"},
                "defaultRequest": {"hugepages-2Mi": "2Mi"}}])
            )[0]
            .1,
            "default value 4Mi must equal to defaultRequest value 2Mi in hugepages-2Mi"
        );
    }

    #[test]
    fn event_row_and_fields() {
        let def = events();
        let ev = json!({"metadata": {"name": "p.123", "namespace": "d"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "d"},
            "reason": "Scheduled", "type": "Normal", "message": " assigned \n",
            "source": {"component": "default-scheduler"}});
        let row = def.strategy.table_row(&ev);
        assert_eq!(
            row,
            vec![
                json!("<unknown>"),
                json!("Normal"),
                json!("Scheduled"),
                json!("pod/p"),
                json!(""),
                json!("default-scheduler"),
                json!("assigned"),
                json!("<unknown>"),
                json!(1),
                json!("p.123")
            ]
        );
        let fields = def.strategy.selectable_fields(&ev);
        assert_eq!(fields["involvedObject.name"], "p");
        assert_eq!(fields["source"], "default-scheduler");
        assert_eq!(fields["type"], "Normal");
    }

    #[test]
    fn container_limit_ranges_default_limits_from_max_and_requests_from_limits_or_min() {
        let mut lr = json!({"spec": {"limits": [
            {"type": "Container", "max": {"cpu": "1"}, "min": {"memory": "1Mi"}},
            {"type": "Pod", "max": {"cpu": "2"}}]}});
        default_limit_range(&mut lr);
        assert_eq!(
            lr["spec"]["limits"][0],
            json!({"type": "Container", "max": {"cpu": "1"}, "min": {"memory": "1Mi"},
                   "default": {"cpu": "1"}, "defaultRequest": {"cpu": "1", "memory": "1Mi"}})
        );
        assert_eq!(
            lr["spec"]["limits"][1],
            json!({"type": "Pod", "max": {"cpu": "2"}})
        );
    }

    #[test]
    fn quota_amounts_are_non_negative_quantities_and_counts_whole() {
        let quota = json!({"spec": {"hard": {"pods": "1500m", "cpu": "-1", "memory": "lots",
                                             "requests.cpu": "500m"},
                                    "scopes": ["BestEffort", "Sometimes"]}});
        let errs: Vec<String> = validate_resource_quota(&quota)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(errs.len(), 4, "{errs:?}");
        assert!(
            errs[0].contains("spec.hard[cpu]")
                && errs[0].contains("must be greater than or equal to 0"),
            "{errs:?}"
        );
        assert!(
            errs[1].contains("spec.hard[memory]") && errs[1].contains("quantities must match"),
            "{errs:?}"
        );
        assert!(
            errs[2].contains("spec.hard[pods]") && errs[2].contains("must be an integer"),
            "{errs:?}"
        );
        assert!(errs[3].contains("spec.scopes[1]"), "{errs:?}");
    }

    #[test]
    fn node_create_keeps_kubelet_status() {
        let def = nodes();
        let mut node =
            json!({"metadata": {"name": "n1"}, "status": {"nodeInfo": {"kubeletVersion": "v1"}}});
        def.strategy.prepare_for_create(&mut node);
        assert_eq!(node["status"]["nodeInfo"]["kubeletVersion"], "v1");
    }

    #[test]
    fn node_row() {
        let def = nodes();
        let node = json!({"metadata": {"name": "n1", "labels": {"node-role.kubernetes.io/control-plane": ""}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                       "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
                       "nodeInfo": {"kubeletVersion": "v1.35.0"}}});
        let row = def.strategy.table_row(&node);
        assert_eq!(
            row[1..3],
            [json!("Ready,SchedulingDisabled"), json!("control-plane")]
        );
        assert_eq!(
            row[4..8],
            [
                json!("v1.35.0"),
                json!("10.0.0.1"),
                json!("<none>"),
                json!("<unknown>")
            ]
        );
        assert_eq!(
            def.strategy.selectable_fields(&node)["spec.unschedulable"],
            "true"
        );
    }

    #[test]
    fn endpoints_cell() {
        let ep = json!({"subsets": [{"addresses": [{"ip": "1.1.1.1"}, {"ip": "2.2.2.2"}],
                                     "ports": [{"port": 80}, {"port": 443}]}]});
        assert_eq!(
            format_endpoints(&ep),
            "1.1.1.1:80,1.1.1.1:443,2.2.2.2:80 + 1 more..."
        );
        assert_eq!(format_endpoints(&json!({})), "<none>");
        assert_eq!(endpoints().strategy.info().singular, "endpoints");
    }

    #[test]
    fn serviceaccount_row() {
        let def = serviceaccounts();
        let row = def
            .strategy
            .table_row(&json!({"metadata": {"name": "default"}}));
        assert_eq!(row[..2], [json!("default"), json!(0)]);
    }
}
