//! autoscaling: horizontalpodautoscalers, stored as `autoscaling/v2` and also served as
//! `autoscaling/v1` through upstream's conversion, which keeps what v1 cannot express (other
//! metrics, current metrics, conditions, behavior) in `autoscaling.alpha.kubernetes.io/*`
//! annotations so that it survives a v1 round trip.

use apiserver::registry::FieldError;
use k8s_openapi::api::autoscaling::{v1, v2};
use serde_json::{Map, Value, json};

use super::docs;
use super::json::{array_at, get, i64_at, str_at};
use super::strategy::{BuiltinStrategy, info};
use super::table::{age_cell, age_column, column, name_cell, name_column};
use super::validation::path_segment;
use super::{Conversion, ResourceDef};

/// The annotation holding the metrics other than the CPU utilization target (v1 form).
pub const METRICS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/metrics";
/// The annotation holding `status.currentMetrics` (v1 form).
pub const CURRENT_METRICS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
/// The annotation holding `status.conditions`.
pub const CONDITIONS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/conditions";
/// The annotation holding `spec.behavior`.
pub const BEHAVIOR_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/behavior";

const ROUND_TRIP: [&str; 4] = [
    METRICS_ANNOTATION,
    CURRENT_METRICS_ANNOTATION,
    CONDITIONS_ANNOTATION,
    BEHAVIOR_ANNOTATION,
];

/// The CPU utilization upstream assumes when no metric is given.
const DEFAULT_CPU_UTILIZATION: i64 = 80;

/// autoscaling/v2 resources.
pub fn resources_v2() -> Vec<ResourceDef> {
    vec![horizontalpodautoscalers_v2()]
}

/// autoscaling/v1 resources.
pub fn resources_v1() -> Vec<ResourceDef> {
    vec![horizontalpodautoscalers_v1()]
}

/// The v2 horizontalpodautoscalers resource (the stored version; subresource `status`).
pub fn horizontalpodautoscalers_v2() -> ResourceDef {
    let strategy = BuiltinStrategy::new::<v2::HorizontalPodAutoscaler>(hpa_info("v2"))
        .status_from(|| json!({"currentMetrics": null, "desiredReplicas": 0}))
        .generation()
        .defaults(default_v2)
        .validate(validate_v2)
        .table(columns, row_v2);
    ResourceDef::new(strategy).with(&["status"])
}

/// The v1 horizontalpodautoscalers resource: the v2 objects converted.
pub fn horizontalpodautoscalers_v1() -> ResourceDef {
    let strategy = BuiltinStrategy::new::<v1::HorizontalPodAutoscaler>(hpa_info("v1"))
        .status_from(|| json!({"currentReplicas": 0, "desiredReplicas": 0}))
        .generation()
        .defaults(|obj| super::json::default_at(obj, "spec.minReplicas", json!(1)))
        .validate(|obj| validate_v2(&v1_to_v2(obj.clone())))
        .table(columns, |obj| row_v2(&v1_to_v2(obj.clone())));
    ResourceDef::new(strategy)
        .with(&["status"])
        .converted(Conversion {
            stored_version: "v2",
            to_stored: v1_to_v2,
            from_stored: v2_to_v1,
        })
}

fn hpa_info(version: &str) -> apiserver::registry::ResourceInfo {
    info(
        "autoscaling",
        version,
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        true,
        &["hpa"],
        &["all"],
    )
}

/// Upstream's v2 defaults: one minimum replica, the CPU utilization metric when there is none,
/// and the scaling rules of a given `behavior` filled in.
fn default_v2(obj: &mut Value) {
    super::json::default_at(obj, "spec.minReplicas", json!(1));
    if array_at(obj, "spec.metrics").is_empty()
        && let Some(spec) = super::json::object_at(obj, "spec")
    {
        spec.insert(
            "metrics".into(),
            json!([cpu_utilization_metric(DEFAULT_CPU_UTILIZATION)]),
        );
    }
    let Some(behavior) = super::json::get_mut(obj, "spec.behavior").and_then(Value::as_object_mut)
    else {
        return;
    };
    let up = behavior.entry("scaleUp").or_insert(Value::Null);
    fill_rules(
        up,
        Some(0),
        json!([
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15}
        ]),
    );
    let down = behavior.entry("scaleDown").or_insert(Value::Null);
    fill_rules(
        down,
        None,
        json!([{"type": "Percent", "value": 100, "periodSeconds": 15}]),
    );
}

/// Upstream `GenerateHPAScale{Up,Down}Rules`: missing rules or their missing fields from the
/// defaults.
fn fill_rules(rules: &mut Value, stabilization: Option<i64>, policies: Value) {
    if !rules.is_object() {
        *rules = json!({});
    }
    if let Some(map) = rules.as_object_mut() {
        if map.get("policies").is_none_or(Value::is_null) {
            map.insert("policies".into(), policies);
        }
        if map.get("selectPolicy").is_none_or(Value::is_null) {
            map.insert("selectPolicy".into(), json!("Max"));
        }
        if let Some(s) = stabilization
            && map
                .get("stabilizationWindowSeconds")
                .is_none_or(Value::is_null)
        {
            map.insert("stabilizationWindowSeconds".into(), json!(s));
        }
    }
}

fn cpu_utilization_metric(percent: i64) -> Value {
    json!({"type": "Resource", "resource": {"name": "cpu",
        "target": {"type": "Utilization", "averageUtilization": percent}}})
}

/// The checks of upstream's `ValidateHorizontalPodAutoscaler` clients meet: the scale target,
/// replica bounds and each metric's source and target.
fn validate_v2(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for field in ["kind", "name"] {
        let path = format!("spec.scaleTargetRef.{field}");
        match str_at(obj, &path).unwrap_or_default() {
            "" => errs.push(FieldError::required(&path, "")),
            value => errs.extend(
                path_segment(value)
                    .into_iter()
                    .map(|msg| FieldError::invalid(&path, value, &msg)),
            ),
        }
    }
    let min = i64_at(obj, "spec.minReplicas");
    if let Some(min) = min
        && min < 1
    {
        errs.push(FieldError::invalid(
            "spec.minReplicas",
            min,
            "must be greater than or equal to 1",
        ));
    }
    let max = i64_at(obj, "spec.maxReplicas").unwrap_or(0);
    if max < 1 {
        errs.push(FieldError::invalid(
            "spec.maxReplicas",
            max,
            "must be greater than 0",
        ));
    }
    if let Some(min) = min
        && max < min
    {
        errs.push(FieldError::invalid(
            "spec.maxReplicas",
            max,
            "must be greater than or equal to `minReplicas`",
        ));
    }
    const TYPES: [&str; 5] = [
        "ContainerResource",
        "External",
        "Object",
        "Pods",
        "Resource",
    ];
    for (i, metric) in array_at(obj, "spec.metrics").iter().enumerate() {
        let at = format!("spec.metrics[{i}]");
        let kind = str_at(metric, "type").unwrap_or_default();
        let source = match kind {
            "" => {
                errs.push(FieldError::required(
                    &format!("{at}.type"),
                    "must specify a metric source type",
                ));
                continue;
            }
            "Resource" => "resource",
            "ContainerResource" => "containerResource",
            "Pods" => "pods",
            "Object" => "object",
            "External" => "external",
            other => {
                errs.push(FieldError::not_supported(
                    &format!("{at}.type"),
                    other,
                    &TYPES,
                ));
                continue;
            }
        };
        let Some(src) = metric.get(source).filter(|s| s.is_object()) else {
            errs.push(FieldError::required(
                &format!("{at}.{source}"),
                &format!("must populate information for the given metric source (type {kind})"),
            ));
            continue;
        };
        let target_at = format!("{at}.{source}.target");
        match str_at(src, "target.type") {
            None | Some("") => errs.push(FieldError::required(
                &format!("{target_at}.type"),
                "must specify a metric target type",
            )),
            Some("Utilization" | "Value" | "AverageValue") => {}
            Some(other) => errs.push(FieldError::not_supported(
                &format!("{target_at}.type"),
                other,
                &["AverageValue", "Utilization", "Value"],
            )),
        }
        if let Some(u) = i64_at(src, "target.averageUtilization")
            && u <= 0
        {
            errs.push(FieldError::invalid(
                &format!("{target_at}.averageUtilization"),
                u,
                "must be greater than 0",
            ));
        }
    }
    errs
}

fn columns() -> Vec<apiserver::registry::TableColumn> {
    vec![
        name_column(),
        column("Reference", "string", docs::HPA_REFERENCE, 0),
        column("Targets", "string", docs::HPA_METRICS, 0),
        column("MinPods", "string", docs::HPA_MIN, 0),
        column("MaxPods", "integer", docs::HPA_MAX, 0),
        column("Replicas", "integer", docs::HPA_REPLICAS, 0),
        age_column(),
    ]
}

/// Upstream `printHorizontalPodAutoscaler` (of the v2 form).
fn row_v2(obj: &Value) -> Vec<Value> {
    let reference = format!(
        "{}/{}",
        str_at(obj, "spec.scaleTargetRef.kind").unwrap_or_default(),
        str_at(obj, "spec.scaleTargetRef.name").unwrap_or_default()
    );
    let min = i64_at(obj, "spec.minReplicas").map_or("<unset>".to_string(), |m| m.to_string());
    vec![
        name_cell(obj),
        json!(reference),
        json!(format_metrics(
            array_at(obj, "spec.metrics"),
            array_at(obj, "status.currentMetrics")
        )),
        json!(min),
        json!(i64_at(obj, "spec.maxReplicas").unwrap_or(0)),
        json!(i64_at(obj, "status.currentReplicas").unwrap_or(0)),
        age_cell(obj),
    ]
}

/// A quantity as printed (Go's zero quantity prints `0`).
fn quantity(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "0".into(),
    }
}

/// Upstream `formatHPAMetrics`: `current/target` per metric, at most two then `+ N more...`.
fn format_metrics(specs: &[Value], statuses: &[Value]) -> String {
    if specs.is_empty() {
        return "<none>".into();
    }
    let mut list = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let status = |source: &str| {
            statuses
                .get(i)
                .and_then(|s| s.get(source))
                .filter(|s| s.is_object())
        };
        let text = match str_at(spec, "type").unwrap_or_default() {
            kind @ ("External" | "Object") => {
                let source = if kind == "External" {
                    "external"
                } else {
                    "object"
                };
                match get(spec, &format!("{source}.target.averageValue")) {
                    Some(avg) if !avg.is_null() => {
                        let current = status(source)
                            .and_then(|s| get(s, "current.averageValue"))
                            .filter(|v| !v.is_null())
                            .map_or("<unknown>".to_string(), |v| quantity(Some(v)));
                        format!("{current}/{} (avg)", quantity(Some(avg)))
                    }
                    _ => {
                        let current = status(source).map_or("<unknown>".to_string(), |s| {
                            quantity(get(s, "current.value"))
                        });
                        format!(
                            "{current}/{}",
                            quantity(get(spec, &format!("{source}.target.value")))
                        )
                    }
                }
            }
            "Pods" => {
                let current = status("pods").map_or("<unknown>".to_string(), |s| {
                    quantity(get(s, "current.averageValue"))
                });
                format!(
                    "{current}/{}",
                    quantity(get(spec, "pods.target.averageValue"))
                )
            }
            kind @ ("Resource" | "ContainerResource") => {
                let source = if kind == "Resource" {
                    "resource"
                } else {
                    "containerResource"
                };
                let name = str_at(spec, &format!("{source}.name")).unwrap_or_default();
                match get(spec, &format!("{source}.target.averageValue")) {
                    Some(avg) if !avg.is_null() => {
                        let current = status(source).map_or("<unknown>".to_string(), |s| {
                            quantity(get(s, "current.averageValue"))
                        });
                        format!("{name}: {current}/{}", quantity(Some(avg)))
                    }
                    _ => {
                        let current = status(source)
                            .and_then(|s| i64_at(s, "current.averageUtilization"))
                            .map_or("<unknown>".to_string(), |u| format!("{u}%"));
                        let target = i64_at(spec, &format!("{source}.target.averageUtilization"))
                            .map_or("<auto>".to_string(), |u| format!("{u}%"));
                        format!("{name}: {current}/{target}")
                    }
                }
            }
            _ => "<unknown type>".into(),
        };
        list.push(text);
    }
    let count = list.len();
    if count > 2 {
        list.truncate(2);
        return format!("{} + {} more...", list.join(", "), count - 2);
    }
    list.join(", ")
}

// ---- conversion ----------------------------------------------------------------------------

fn set(map: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(v) = value.filter(|v| !v.is_null()) {
        map.insert(key.into(), v);
    }
}

fn field(v: &Value, key: &str) -> Option<Value> {
    v.get(key).filter(|v| !v.is_null()).cloned()
}

/// A v2 metric identifier `{name, selector}`.
fn identifier(name: Option<Value>, selector: Option<Value>) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), name.unwrap_or(json!("")));
    set(&mut m, "selector", selector);
    Value::Object(m)
}

/// v1 (annotation) `MetricSpec` → v2 `MetricSpec`.
fn metric_spec_to_v2(m: &Value) -> Value {
    let kind = str_at(m, "type").unwrap_or_default();
    let mut out = Map::new();
    out.insert("type".into(), json!(kind));
    let target = |kind: &str, value: Option<Value>, avg: Option<Value>, util: Option<Value>| {
        let mut t = Map::new();
        t.insert("type".into(), json!(kind));
        set(&mut t, "value", value);
        set(&mut t, "averageValue", avg);
        set(&mut t, "averageUtilization", util);
        Value::Object(t)
    };
    if let Some(o) = m.get("object").filter(|o| o.is_object()) {
        let avg = field(o, "averageValue");
        let kind = if avg.is_none() {
            "Value"
        } else {
            "AverageValue"
        };
        out.insert(
            "object".into(),
            json!({
                "describedObject": field(o, "target").unwrap_or(json!({})),
                "metric": identifier(field(o, "metricName"), field(o, "selector")),
                "target": target(kind, Some(field(o, "targetValue").unwrap_or(json!("0"))), avg, None),
            }),
        );
    }
    if let Some(p) = m.get("pods").filter(|p| p.is_object()) {
        out.insert(
            "pods".into(),
            json!({
                "metric": identifier(field(p, "metricName"), field(p, "selector")),
                "target": target("AverageValue", None, Some(field(p, "targetAverageValue").unwrap_or(json!("0"))), None),
            }),
        );
    }
    for source in ["resource", "containerResource"] {
        if let Some(r) = m.get(source).filter(|r| r.is_object()) {
            let util = field(r, "targetAverageUtilization");
            let kind = if util.is_none() {
                "AverageValue"
            } else {
                "Utilization"
            };
            let mut v = Map::new();
            v.insert("name".into(), field(r, "name").unwrap_or(json!("")));
            v.insert(
                "target".into(),
                target(kind, None, field(r, "targetAverageValue"), util),
            );
            if source == "containerResource" {
                v.insert(
                    "container".into(),
                    field(r, "container").unwrap_or(json!("")),
                );
            }
            out.insert(source.into(), Value::Object(v));
        }
    }
    if let Some(e) = m.get("external").filter(|e| e.is_object()) {
        let avg = field(e, "targetAverageValue");
        let kind = if avg.is_some() {
            "AverageValue"
        } else {
            "Value"
        };
        out.insert(
            "external".into(),
            json!({
                "metric": identifier(field(e, "metricName"), field(e, "metricSelector")),
                "target": target(kind, field(e, "targetValue"), avg, None),
            }),
        );
    }
    Value::Object(out)
}

/// v1 (annotation) `MetricStatus` → v2 `MetricStatus`.
fn metric_status_to_v2(m: &Value) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), json!(str_at(m, "type").unwrap_or_default()));
    let current = |value: Option<Value>, avg: Option<Value>, util: Option<Value>| {
        let mut c = Map::new();
        set(&mut c, "value", value);
        set(&mut c, "averageValue", avg);
        set(&mut c, "averageUtilization", util);
        Value::Object(c)
    };
    if let Some(o) = m.get("object").filter(|o| o.is_object()) {
        out.insert(
            "object".into(),
            json!({
                "describedObject": field(o, "target").unwrap_or(json!({})),
                "metric": identifier(field(o, "metricName"), field(o, "selector")),
                "current": current(field(o, "currentValue"), field(o, "averageValue"), None),
            }),
        );
    }
    if let Some(p) = m.get("pods").filter(|p| p.is_object()) {
        out.insert(
            "pods".into(),
            json!({
                "metric": identifier(field(p, "metricName"), field(p, "selector")),
                "current": current(None, field(p, "currentAverageValue"), None),
            }),
        );
    }
    for source in ["resource", "containerResource"] {
        if let Some(r) = m.get(source).filter(|r| r.is_object()) {
            let mut v = Map::new();
            v.insert("name".into(), field(r, "name").unwrap_or(json!("")));
            v.insert(
                "current".into(),
                current(
                    None,
                    field(r, "currentAverageValue"),
                    field(r, "currentAverageUtilization"),
                ),
            );
            if source == "containerResource" {
                v.insert(
                    "container".into(),
                    field(r, "container").unwrap_or(json!("")),
                );
            }
            out.insert(source.into(), Value::Object(v));
        }
    }
    if let Some(e) = m.get("external").filter(|e| e.is_object()) {
        out.insert(
            "external".into(),
            json!({
                "metric": identifier(field(e, "metricName"), field(e, "metricSelector")),
                "current": current(field(e, "currentValue"), field(e, "currentAverageValue"), None),
            }),
        );
    }
    Value::Object(out)
}

/// Which side of a metric a v1 (annotation) metric holds: the spec's targets or the status's
/// current values. The two differ only in their field names (`targetValue`, `currentValue`)
/// and in which quantities are required (the status's resource and external values are).
#[derive(Clone, Copy)]
enum MetricSide {
    Spec,
    Status,
}

impl MetricSide {
    /// The v2 sub-object (`target`, `current`) and the v1 field-name prefix.
    fn word(self) -> &'static str {
        match self {
            MetricSide::Spec => "target",
            MetricSide::Status => "current",
        }
    }

    /// v1 `<word><Name>` set from v2 `<word>.<path>`: always (as a quantity, zero when
    /// absent) when `required` on this side, else only when present.
    fn copy_quantity(
        self,
        v: &mut Map<String, Value>,
        name: &str,
        from: &Value,
        path: &str,
        required: bool,
    ) {
        let word = self.word();
        let value = get(from, &format!("{word}.{path}"));
        let key = format!("{word}{name}");
        if required {
            v.insert(key, json!(quantity(value)));
        } else {
            set(v, &key, value.cloned());
        }
    }
}

/// v2 `MetricSpec` or `MetricStatus` → the v1 (annotation) form of the same side.
fn metric_to_v1(m: &Value, side: MetricSide) -> Value {
    let word = side.word();
    let status = matches!(side, MetricSide::Status);
    let mut out = Map::new();
    out.insert("type".into(), json!(str_at(m, "type").unwrap_or_default()));
    if let Some(o) = m.get("object").filter(|o| o.is_object()) {
        let mut v = Map::new();
        v.insert(
            "target".into(),
            field(o, "describedObject").unwrap_or(json!({"kind": "", "name": ""})),
        );
        v.insert(
            "metricName".into(),
            json!(str_at(o, "metric.name").unwrap_or_default()),
        );
        side.copy_quantity(&mut v, "Value", o, "value", true);
        set(&mut v, "selector", get(o, "metric.selector").cloned());
        set(
            &mut v,
            "averageValue",
            get(o, &format!("{word}.averageValue")).cloned(),
        );
        out.insert("object".into(), Value::Object(v));
    }
    if let Some(p) = m.get("pods").filter(|p| p.is_object()) {
        let mut v = Map::new();
        v.insert(
            "metricName".into(),
            json!(str_at(p, "metric.name").unwrap_or_default()),
        );
        side.copy_quantity(&mut v, "AverageValue", p, "averageValue", true);
        set(&mut v, "selector", get(p, "metric.selector").cloned());
        out.insert("pods".into(), Value::Object(v));
    }
    for source in ["resource", "containerResource"] {
        if let Some(r) = m.get(source).filter(|r| r.is_object()) {
            let mut v = Map::new();
            v.insert("name".into(), field(r, "name").unwrap_or(json!("")));
            set(
                &mut v,
                &format!("{word}AverageUtilization"),
                get(r, &format!("{word}.averageUtilization")).cloned(),
            );
            side.copy_quantity(&mut v, "AverageValue", r, "averageValue", status);
            if source == "containerResource" {
                v.insert(
                    "container".into(),
                    field(r, "container").unwrap_or(json!("")),
                );
            }
            out.insert(source.into(), Value::Object(v));
        }
    }
    if let Some(e) = m.get("external").filter(|e| e.is_object()) {
        let mut v = Map::new();
        v.insert(
            "metricName".into(),
            json!(str_at(e, "metric.name").unwrap_or_default()),
        );
        set(&mut v, "metricSelector", get(e, "metric.selector").cloned());
        side.copy_quantity(&mut v, "Value", e, "value", status);
        side.copy_quantity(&mut v, "AverageValue", e, "averageValue", false);
        out.insert("external".into(), Value::Object(v));
    }
    Value::Object(out)
}

fn is_cpu_utilization_target(m: &Value) -> bool {
    str_at(m, "type") == Some("Resource")
        && str_at(m, "resource.name") == Some("cpu")
        && get(m, "resource.target.averageUtilization").is_some_and(|u| !u.is_null())
}

/// Takes the round-trip annotations out of an object's metadata.
fn take_round_trip(meta: &mut Map<String, Value>) -> Map<String, Value> {
    let mut taken = Map::new();
    if let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
        for key in ROUND_TRIP {
            if let Some(v) = annotations.remove(key) {
                taken.insert(key.into(), v);
            }
        }
        if annotations.is_empty() {
            meta.remove("annotations");
        }
    }
    taken
}

fn parse_list(annotation: Option<&Value>) -> Option<Vec<Value>> {
    serde_json::from_str::<Vec<Value>>(annotation?.as_str()?).ok()
}

/// autoscaling/v1 → autoscaling/v2 (upstream's v1 → internal conversion).
pub fn v1_to_v2(obj: Value) -> Value {
    let Value::Object(mut top) = obj else {
        return obj;
    };
    let mut meta = match top.remove("metadata") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let round_trip = take_round_trip(&mut meta);
    let spec_v1 = top.remove("spec").unwrap_or(json!({}));
    let status_v1 = top.remove("status");

    let mut spec = Map::new();
    set(
        &mut spec,
        "scaleTargetRef",
        field(&spec_v1, "scaleTargetRef"),
    );
    set(&mut spec, "minReplicas", field(&spec_v1, "minReplicas"));
    spec.insert(
        "maxReplicas".into(),
        field(&spec_v1, "maxReplicas").unwrap_or(json!(0)),
    );
    let mut metrics: Vec<Value> = parse_list(round_trip.get(METRICS_ANNOTATION))
        .map(|m| m.iter().map(metric_spec_to_v2).collect())
        .unwrap_or_default();
    if let Some(cpu) = field(&spec_v1, "targetCPUUtilizationPercentage") {
        metrics.push(cpu_utilization_metric(
            cpu.as_i64().unwrap_or(DEFAULT_CPU_UTILIZATION),
        ));
    }
    if metrics.is_empty() {
        metrics.push(cpu_utilization_metric(DEFAULT_CPU_UTILIZATION));
    }
    spec.insert("metrics".into(), Value::Array(metrics));
    if let Some(behavior) = round_trip
        .get(BEHAVIOR_ANNOTATION)
        .and_then(Value::as_str)
        .and_then(|b| serde_json::from_str::<Value>(b).ok())
        .filter(|b| b.as_object().is_some_and(|m| !m.is_empty()))
    {
        spec.insert("behavior".into(), behavior);
    }

    let mut out = Map::new();
    out.insert("apiVersion".into(), json!("autoscaling/v2"));
    out.insert("kind".into(), json!("HorizontalPodAutoscaler"));
    out.insert("metadata".into(), Value::Object(meta));
    out.insert("spec".into(), Value::Object(spec));
    if let Some(status_v1) = status_v1.filter(Value::is_object) {
        let mut status = Map::new();
        set(
            &mut status,
            "observedGeneration",
            field(&status_v1, "observedGeneration"),
        );
        set(
            &mut status,
            "lastScaleTime",
            field(&status_v1, "lastScaleTime"),
        );
        if let Some(c) = field(&status_v1, "currentReplicas").filter(|c| c != &json!(0)) {
            status.insert("currentReplicas".into(), c);
        }
        status.insert(
            "desiredReplicas".into(),
            field(&status_v1, "desiredReplicas").unwrap_or(json!(0)),
        );
        let current = match parse_list(round_trip.get(CURRENT_METRICS_ANNOTATION)) {
            Some(list) => Value::Array(list.iter().map(metric_status_to_v2).collect()),
            None => match field(&status_v1, "currentCPUUtilizationPercentage") {
                Some(cpu) => json!([{"type": "Resource", "resource": {"name": "cpu",
                    "current": {"averageUtilization": cpu}}}]),
                None => Value::Null,
            },
        };
        status.insert("currentMetrics".into(), current);
        if let Some(conditions) = parse_list(round_trip.get(CONDITIONS_ANNOTATION)) {
            status.insert("conditions".into(), Value::Array(conditions));
        }
        out.insert("status".into(), Value::Object(status));
    }
    for (k, v) in top {
        if k != "apiVersion" && k != "kind" {
            out.insert(k, v);
        }
    }
    Value::Object(out)
}

/// autoscaling/v2 → autoscaling/v1 (upstream's internal → v1 conversion).
pub fn v2_to_v1(obj: Value) -> Value {
    let Value::Object(mut top) = obj else {
        return obj;
    };
    let mut meta = match top.remove("metadata") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    take_round_trip(&mut meta);
    let spec_v2 = top.remove("spec").unwrap_or(json!({}));
    let status_v2 = top.remove("status");
    let mut annotations = Map::new();

    let mut spec = Map::new();
    set(
        &mut spec,
        "scaleTargetRef",
        field(&spec_v2, "scaleTargetRef"),
    );
    set(&mut spec, "minReplicas", field(&spec_v2, "minReplicas"));
    spec.insert(
        "maxReplicas".into(),
        field(&spec_v2, "maxReplicas").unwrap_or(json!(0)),
    );
    let metrics = array_at(&spec_v2, "metrics");
    if let Some(cpu) = metrics.iter().find(|m| is_cpu_utilization_target(m)) {
        set(
            &mut spec,
            "targetCPUUtilizationPercentage",
            get(cpu, "resource.target.averageUtilization").cloned(),
        );
    }
    let others: Vec<Value> = metrics
        .iter()
        .filter(|m| !is_cpu_utilization_target(m))
        .map(|m| metric_to_v1(m, MetricSide::Spec))
        .collect();
    if !others.is_empty() {
        annotations.insert(
            METRICS_ANNOTATION.into(),
            json!(Value::Array(others).to_string()),
        );
    }
    if let Some(behavior) = field(&spec_v2, "behavior") {
        annotations.insert(BEHAVIOR_ANNOTATION.into(), json!(behavior.to_string()));
    }

    let mut status = Map::new();
    let status_v2 = status_v2.unwrap_or(json!({}));
    set(
        &mut status,
        "observedGeneration",
        field(&status_v2, "observedGeneration"),
    );
    set(
        &mut status,
        "lastScaleTime",
        field(&status_v2, "lastScaleTime"),
    );
    status.insert(
        "currentReplicas".into(),
        field(&status_v2, "currentReplicas").unwrap_or(json!(0)),
    );
    status.insert(
        "desiredReplicas".into(),
        field(&status_v2, "desiredReplicas").unwrap_or(json!(0)),
    );
    let current = array_at(&status_v2, "currentMetrics");
    if let Some(u) = current
        .iter()
        .rev()
        .filter(|m| {
            str_at(m, "type") == Some("Resource") && str_at(m, "resource.name") == Some("cpu")
        })
        .filter_map(|m| get(m, "resource.current.averageUtilization").filter(|u| !u.is_null()))
        .next()
    {
        status.insert("currentCPUUtilizationPercentage".into(), u.clone());
    }
    if !current.is_empty() {
        let list: Vec<Value> = current
            .iter()
            .map(|m| metric_to_v1(m, MetricSide::Status))
            .collect();
        annotations.insert(
            CURRENT_METRICS_ANNOTATION.into(),
            json!(Value::Array(list).to_string()),
        );
    }
    let conditions = array_at(&status_v2, "conditions");
    if !conditions.is_empty() {
        annotations.insert(
            CONDITIONS_ANNOTATION.into(),
            json!(Value::Array(conditions.to_vec()).to_string()),
        );
    }
    if !annotations.is_empty() {
        let target = meta.entry("annotations").or_insert_with(|| json!({}));
        if let Some(map) = target.as_object_mut() {
            map.extend(annotations);
        }
    }

    let mut out = Map::new();
    out.insert("apiVersion".into(), json!("autoscaling/v1"));
    out.insert("kind".into(), json!("HorizontalPodAutoscaler"));
    out.insert("metadata".into(), Value::Object(meta));
    out.insert("spec".into(), Value::Object(spec));
    out.insert("status".into(), Value::Object(status));
    for (k, v) in top {
        if k != "apiVersion" && k != "kind" {
            out.insert(k, v);
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hpa_v2() -> Value {
        json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1, "maxReplicas": 5,
                "metrics": [
                    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}},
                    {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}},
                    {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}
                ],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}},
            "status": {"currentReplicas": 2, "desiredReplicas": 3,
                "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 40, "averageValue": "100m"}}}],
                "conditions": [{"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale"}]}})
    }

    #[test]
    fn v2_only_fields_round_trip_through_v1_annotations() {
        let v1 = v2_to_v1(hpa_v2());
        assert_eq!(v1["apiVersion"], "autoscaling/v1");
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 70);
        assert_eq!(v1["status"]["currentCPUUtilizationPercentage"], 40);
        let annotations = v1["metadata"]["annotations"].as_object().unwrap();
        let metrics: Value =
            serde_json::from_str(annotations[METRICS_ANNOTATION].as_str().unwrap()).unwrap();
        assert_eq!(
            metrics,
            json!([{"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "500Mi"}},
                   {"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "10"}}])
        );
        assert!(annotations.contains_key(BEHAVIOR_ANNOTATION));
        assert!(annotations.contains_key(CONDITIONS_ANNOTATION));
        assert!(annotations.contains_key(CURRENT_METRICS_ANNOTATION));
        // back to v2: the other metrics first, then the CPU target (upstream's order).
        let back = v1_to_v2(v1);
        assert_eq!(back["metadata"].get("annotations"), None);
        let metrics = back["spec"]["metrics"].as_array().unwrap();
        assert_eq!(metrics.len(), 3);
        assert_eq!(metrics[2], hpa_v2()["spec"]["metrics"][0]);
        assert_eq!(metrics[0], hpa_v2()["spec"]["metrics"][1]);
        assert_eq!(metrics[1], hpa_v2()["spec"]["metrics"][2]);
        assert_eq!(back["spec"]["behavior"], hpa_v2()["spec"]["behavior"]);
        assert_eq!(back["status"], hpa_v2()["status"]);
    }

    #[test]
    fn v1_without_target_gets_default_cpu_metric() {
        let v1 = json!({"metadata": {"name": "x"}, "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "x"}, "maxReplicas": 3}});
        let v2 = v1_to_v2(v1);
        assert_eq!(v2["spec"]["metrics"], json!([cpu_utilization_metric(80)]));
        assert_eq!(v2_to_v1(v2)["spec"]["targetCPUUtilizationPercentage"], 80);
    }

    #[test]
    fn defaults_validation_and_table_as_upstream() {
        let def = horizontalpodautoscalers_v2();
        let mut hpa = json!({"metadata": {"name": "web", "namespace": "default"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3,
                "behavior": {}}});
        def.strategy.prepare_for_create(&mut hpa);
        assert_eq!(hpa["spec"]["minReplicas"], 1);
        assert_eq!(
            hpa["spec"]["behavior"]["scaleDown"],
            json!({"policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}], "selectPolicy": "Max"})
        );
        assert_eq!(
            hpa["spec"]["behavior"]["scaleUp"]["stabilizationWindowSeconds"],
            0
        );
        assert_eq!(
            hpa["status"],
            json!({"currentMetrics": null, "desiredReplicas": 0})
        );
        assert!(def.strategy.validate(&hpa).is_empty());
        assert_eq!(
            def.strategy.table_row(&hpa)[1..6],
            [
                json!("Deployment/web"),
                json!("cpu: <unknown>/80%"),
                json!("1"),
                json!(3),
                json!(0)
            ]
        );
        let mut bad = hpa.clone();
        bad["spec"]["minReplicas"] = json!(5);
        assert_eq!(
            def.strategy.validate(&bad)[0].to_string(),
            "spec.maxReplicas: Invalid value: 3: must be greater than or equal to `minReplicas`"
        );
        let three = json!([{"type": "Pods", "pods": {"metric": {"name": "a"}, "target": {"type": "AverageValue", "averageValue": "1"}}},
            {"type": "Pods", "pods": {"metric": {"name": "b"}, "target": {"type": "AverageValue", "averageValue": "2"}}},
            {"type": "External", "external": {"metric": {"name": "c"}, "target": {"type": "Value", "value": "3"}}}]);
        assert_eq!(
            format_metrics(three.as_array().unwrap(), &[]),
            "<unknown>/1, <unknown>/2 + 1 more..."
        );
    }
}
