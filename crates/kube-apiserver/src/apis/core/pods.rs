//! Pods (stored only: there is no kubelet): spec defaults, `Pending` status with a QoS class
//! on create, the mostly immutable spec, kubectl's columns and upstream's field selectors.

use apiserver::registry::rest::DeleteOptions;
use apiserver::registry::{FieldError, SelectableFields, TableColumn};
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

use crate::apis::ResourceDef;
use crate::apis::json::{array_at, get, get_mut, has, i64_at, str_at};
use crate::apis::podspec::{default_pod_spec, validate_pod_spec};
use crate::apis::strategy::{BuiltinStrategy, info};
use crate::apis::table::{
    age_cell, age_column, column, name_cell, name_column, translate_timestamp_since,
};

/// The pods resource (subresource `status`).
pub fn pods() -> ResourceDef {
    let strategy =
        BuiltinStrategy::new::<Pod>(info("", "v1", "Pod", "pods", true, &["po"], &["all"]))
            .status()
            .defaults(default_pod)
            .prepare_create(initial_status)
            .validate(validate)
            .validate_update(validate_update)
            .selectable(selectable)
            .graceful_delete(check_graceful_delete)
            .table(columns, row);
    ResourceDef::new(strategy).with(&["status"])
}

/// Upstream's pod `CheckGracefulDelete`: the request's grace period, else the pod's
/// `spec.terminationGracePeriodSeconds` (else 0); 0 for pods not bound to a node and for
/// terminated ones; negative periods become 1.
pub fn check_graceful_delete(pod: &Value, opts: &mut DeleteOptions) -> bool {
    let mut period = opts
        .grace_period_seconds
        .or_else(|| i64_at(pod, "spec.terminationGracePeriodSeconds"))
        .unwrap_or(0);
    if str_at(pod, "spec.nodeName").unwrap_or_default().is_empty() {
        period = 0;
    }
    if matches!(str_at(pod, "status.phase"), Some("Failed" | "Succeeded")) {
        period = 0;
    }
    if period < 0 {
        period = 1;
    }
    opts.grace_period_seconds = Some(period);
    true
}

fn default_pod(obj: &mut Value) {
    if let Some(spec) = get_mut(obj, "spec") {
        default_pod_spec(spec);
    }
}

/// Upstream sets `Pending` and the pod's QoS class on create.
fn initial_status(obj: &mut Value) {
    let qos = qos_class(obj.get("spec"));
    if let Value::Object(map) = obj {
        map.insert(
            "status".into(),
            json!({"phase": "Pending", "qosClass": qos}),
        );
    }
}

/// Upstream `GetPodQOS`, simplified to cpu and memory: no requests or limits at all is
/// `BestEffort`; limits equal to requests for both on every container is `Guaranteed`.
fn qos_class(spec: Option<&Value>) -> &'static str {
    let containers = spec.map_or(&[][..], |s| array_at(s, "containers"));
    let mut any = false;
    let mut guaranteed = !containers.is_empty();
    for container in containers {
        let requests = get(container, "resources.requests");
        let limits = get(container, "resources.limits");
        for resource in ["cpu", "memory"] {
            let request = requests.and_then(|r| r.get(resource));
            let limit = limits.and_then(|l| l.get(resource));
            any |= request.is_some() || limit.is_some();
            // a missing request defaults to the limit.
            if limit.is_none() || request.is_some_and(|r| Some(r) != limit) {
                guaranteed = false;
            }
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

fn validate(obj: &Value) -> Vec<FieldError> {
    validate_pod_spec(
        obj.get("spec"),
        "spec",
        &["Always", "OnFailure", "Never"],
        true,
    )
}

/// The parts of a pod spec an update may change: images, the active deadline, added
/// tolerations and a negative grace period set to 1.
fn validate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let strip = |obj: &Value| {
        let mut spec = obj.get("spec").cloned().unwrap_or(Value::Null);
        for list in ["containers", "initContainers"] {
            if let Some(Value::Array(containers)) = spec.get_mut(list) {
                for c in containers.iter_mut().filter_map(Value::as_object_mut) {
                    c.remove("image");
                }
            }
        }
        if let Value::Object(map) = &mut spec {
            map.remove("activeDeadlineSeconds");
            map.remove("tolerations");
            map.remove("terminationGracePeriodSeconds");
        }
        spec
    };
    if strip(new) == strip(old) {
        return Vec::new();
    }
    vec![FieldError::forbidden(
        "spec",
        "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
    )]
}

fn selectable(obj: &Value) -> SelectableFields {
    let mut fields = SelectableFields::new();
    for path in [
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "status.phase",
        "status.nominatedNodeName",
    ] {
        fields.insert(path.into(), str_at(obj, path).unwrap_or_default().into());
    }
    let host_network = get(obj, "spec.hostNetwork").and_then(Value::as_bool) == Some(true);
    fields.insert("spec.hostNetwork".into(), host_network.to_string());
    // upstream selects on the first pod IP.
    let ip = array_at(obj, "status.podIPs")
        .first()
        .and_then(|ip| ip.get("ip"))
        .and_then(Value::as_str)
        .or_else(|| str_at(obj, "status.podIP"))
        .unwrap_or_default();
    fields.insert("status.podIP".into(), ip.into());
    fields
}

fn columns() -> Vec<TableColumn> {
    vec![
        name_column(),
        column(
            "Ready",
            "string",
            "The aggregate readiness state of this pod for accepting traffic.",
            0,
        ),
        column(
            "Status",
            "string",
            "The aggregate status of the containers in this pod.",
            0,
        ),
        column(
            "Restarts",
            "string",
            "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
            0,
        ),
        age_column(),
        column(
            "IP",
            "string",
            "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
            1,
        ),
        column(
            "Node",
            "string",
            "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename",
            1,
        ),
        column(
            "Nominated Node",
            "string",
            "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.",
            1,
        ),
        column(
            "Readiness Gates",
            "string",
            "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates",
            1,
        ),
    ]
}

/// The `Status` cell as upstream's `printPod` derives it from the phase, the pod's reason and
/// the container states.
fn status_reason(obj: &Value) -> String {
    let mut reason = str_at(obj, "status.phase").unwrap_or_default().to_string();
    if let Some(r) = str_at(obj, "status.reason").filter(|r| !r.is_empty()) {
        reason = r.to_string();
    }
    let mut initializing = false;
    let init_count = array_at(obj, "spec.initContainers").len();
    for (i, status) in array_at(obj, "status.initContainerStatuses")
        .iter()
        .enumerate()
    {
        let terminated = get(status, "state.terminated");
        if terminated.is_some_and(|t| i64_at(t, "exitCode") == Some(0)) {
            continue;
        }
        if let Some(t) = terminated {
            reason = match str_at(t, "reason").filter(|r| !r.is_empty()) {
                Some(r) => format!("Init:{r}"),
                None => match i64_at(t, "signal").filter(|s| *s != 0) {
                    Some(signal) => format!("Init:Signal:{signal}"),
                    None => format!("Init:ExitCode:{}", i64_at(t, "exitCode").unwrap_or(0)),
                },
            };
        } else if let Some(waiting) = str_at(status, "state.waiting.reason")
            .filter(|r| !r.is_empty() && *r != "PodInitializing")
        {
            reason = format!("Init:{waiting}");
        } else {
            reason = format!("Init:{i}/{init_count}");
        }
        initializing = true;
        break;
    }
    if !initializing {
        let mut has_running = false;
        for status in array_at(obj, "status.containerStatuses").iter().rev() {
            if let Some(waiting) = str_at(status, "state.waiting.reason").filter(|r| !r.is_empty())
            {
                reason = waiting.to_string();
            } else if let Some(t) = get(status, "state.terminated") {
                reason = match str_at(t, "reason").filter(|r| !r.is_empty()) {
                    Some(r) => r.to_string(),
                    None => match i64_at(t, "signal").filter(|s| *s != 0) {
                        Some(signal) => format!("Signal:{signal}"),
                        None => format!("ExitCode:{}", i64_at(t, "exitCode").unwrap_or(0)),
                    },
                };
            } else if has(status, "state.running")
                && status.get("ready").and_then(Value::as_bool) == Some(true)
            {
                has_running = true;
            }
        }
        if reason == "Completed" && has_running {
            reason = "Running".into();
        }
    }
    if has(obj, "metadata.deletionTimestamp") {
        reason = if str_at(obj, "status.reason") == Some("NodeLost") {
            "Unknown".into()
        } else {
            "Terminating".into()
        };
    }
    reason
}

fn row(obj: &Value) -> Vec<Value> {
    let statuses = array_at(obj, "status.containerStatuses");
    let total = array_at(obj, "spec.containers").len();
    let ready = statuses
        .iter()
        .filter(|s| s.get("ready").and_then(Value::as_bool) == Some(true))
        .count();
    let restarts: i64 = statuses
        .iter()
        .filter_map(|s| s.get("restartCount").and_then(Value::as_i64))
        .sum();
    let last_restart = statuses
        .iter()
        .filter_map(|s| str_at(s, "lastState.terminated.finishedAt"))
        .max();
    let restarts_cell = match last_restart {
        Some(at) if restarts != 0 => {
            format!("{restarts} ({} ago)", translate_timestamp_since(Some(at)))
        }
        _ => restarts.to_string(),
    };
    let or_none = |path: &str| {
        json!(
            str_at(obj, path)
                .filter(|v| !v.is_empty())
                .unwrap_or("<none>")
        )
    };
    let gates = array_at(obj, "spec.readinessGates");
    let gates_cell = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let passing = gates
            .iter()
            .filter(|g| {
                let kind = g.get("conditionType");
                array_at(obj, "status.conditions").iter().any(|c| {
                    c.get("type") == kind && c.get("status").and_then(Value::as_str) == Some("True")
                })
            })
            .count();
        format!("{passing}/{}", gates.len())
    };
    vec![
        name_cell(obj),
        json!(format!("{ready}/{total}")),
        json!(status_reason(obj)),
        json!(restarts_cell),
        age_cell(obj),
        or_none("status.podIP"),
        or_none("spec.nodeName"),
        or_none("status.nominatedNodeName"),
        json!(gates_cell),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(errs: Vec<FieldError>) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn create_defaults_and_pending_status() {
        let def = pods();
        let mut pod = json!({"metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            "status": {"phase": "Running"}});
        def.strategy.prepare_for_create(&mut pod);
        assert_eq!(
            pod["status"],
            json!({"phase": "Pending", "qosClass": "BestEffort"})
        );
        assert_eq!(pod["spec"]["restartPolicy"], "Always");
        assert_eq!(pod["spec"]["dnsPolicy"], "ClusterFirst");
        assert_eq!(pod["spec"]["containers"][0]["imagePullPolicy"], "Always");
        assert!(def.strategy.validate(&pod).is_empty());
        let row = def.strategy.table_row(&pod);
        assert_eq!(row[1..4], [json!("0/1"), json!("Pending"), json!("0")]);
        assert_eq!(
            row[5..],
            [
                json!("<none>"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>")
            ]
        );
    }

    #[test]
    fn qos_classes() {
        let g = json!({"containers": [{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]});
        assert_eq!(qos_class(Some(&g)), "Guaranteed");
        let b = json!({"containers": [{"resources": {"requests": {"cpu": "1"}}}]});
        assert_eq!(qos_class(Some(&b)), "Burstable");
    }

    #[test]
    fn containers_required_and_spec_mostly_immutable() {
        let def = pods();
        let pod = json!({"metadata": {"name": "p"}, "spec": {}});
        assert_eq!(
            strings(def.strategy.validate(&pod)),
            vec!["spec.containers: Required value"]
        );
        let old = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "a"}]}});
        let image = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "b"}]}});
        assert!(def.strategy.validate_update(&image, &old).is_empty());
        let renamed = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "d", "image": "a"}]}});
        assert!(
            strings(def.strategy.validate_update(&renamed, &old))[0]
                .starts_with("spec: Forbidden: pod updates may not change fields other than")
        );
    }

    #[test]
    fn running_pod_row_and_fields() {
        let def = pods();
        let pod = json!({"metadata": {"name": "p"},
            "spec": {"nodeName": "n1", "containers": [{"name": "a"}, {"name": "b"}]},
            "status": {"phase": "Running", "podIP": "10.1.0.5",
                "containerStatuses": [
                    {"name": "a", "ready": true, "restartCount": 0, "state": {"running": {}}},
                    {"name": "b", "ready": false, "restartCount": 2,
                     "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}});
        let row = def.strategy.table_row(&pod);
        assert_eq!(
            row[1..4],
            [json!("1/2"), json!("CrashLoopBackOff"), json!("2")]
        );
        assert_eq!(row[5..7], [json!("10.1.0.5"), json!("n1")]);
        let fields = def.strategy.selectable_fields(&pod);
        assert_eq!(fields["spec.nodeName"], "n1");
        assert_eq!(fields["status.podIP"], "10.1.0.5");
        assert_eq!(fields["spec.schedulerName"], "");
        assert_eq!(fields["spec.hostNetwork"], "false");
    }
}
