//! Quota evaluators: what an object of a resource uses (upstream
//! `pkg/quota/v1/evaluator/core/` for pods, services and persistent volume claims, and the
//! generic object-count evaluator of `k8s.io/apiserver/pkg/quota/v1/generic` for everything
//! else, custom resources included).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::resources::{self, ResourceList};
use crate::apis::quantity::Quantity;

/// One requirement of a quota's scope selector (`spec.scopes` entries are `Exists`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopeRequirement {
    /// `Terminating`, `BestEffort`, `PriorityClass`, ...
    pub scope_name: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    pub operator: String,
    /// The values of `In` and `NotIn`.
    pub values: Vec<String>,
}

impl std::fmt::Display for ScopeRequirement {
    /// Go's `%v` of a `ScopedResourceSelectorRequirement`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{{{} {} [{}]}}",
            self.scope_name,
            self.operator,
            self.values.join(" ")
        )
    }
}

impl ScopeRequirement {
    /// `scope_name` with `Exists`.
    pub fn exists(scope_name: &str) -> Self {
        ScopeRequirement {
            scope_name: scope_name.to_string(),
            operator: "Exists".to_string(),
            values: Vec::new(),
        }
    }

    /// A `{scopeName, operator, values}` object.
    pub fn from_json(value: &Value) -> Self {
        let text = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        ScopeRequirement {
            scope_name: text("scopeName"),
            operator: text("operator"),
            values: value
                .get("values")
                .and_then(Value::as_array)
                .map(|v| {
                    v.iter()
                        .filter_map(|s| s.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
}

/// The scope requirements of a quota: `spec.scopes` as `Exists`, then
/// `spec.scopeSelector.matchExpressions` (upstream `getScopeSelectorsFromQuota`).
pub fn quota_scope_requirements(quota: &Value) -> Vec<ScopeRequirement> {
    let mut out: Vec<ScopeRequirement> = quota
        .pointer("/spec/scopes")
        .and_then(Value::as_array)
        .map(|s| {
            s.iter()
                .filter_map(Value::as_str)
                .map(ScopeRequirement::exists)
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Array(exprs)) = quota.pointer("/spec/scopeSelector/matchExpressions") {
        out.extend(exprs.iter().map(ScopeRequirement::from_json));
    }
    out
}

/// The object-count resource name of a group-resource: `count/<resource>[.<group>]`.
pub fn object_count_name(group: &str, resource: &str) -> String {
    if group.is_empty() {
        format!("count/{resource}")
    } else {
        format!("count/{resource}.{group}")
    }
}

/// The suffix of per-storage-class PVC resources.
const STORAGE_CLASS_SUFFIX: &str = ".storageclass.storage.k8s.io/";

/// Which evaluator measures a resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Evaluator {
    /// Core pods: object counts and compute resources.
    Pods,
    /// Core services: counts, node ports and load balancers.
    Services,
    /// Core persistent volume claims: counts and storage, also per storage class.
    PersistentVolumeClaims,
    /// Any other resource: its object count (and its legacy name for configmaps, secrets,
    /// replicationcontrollers and resourcequotas).
    ObjectCount {
        /// API group (empty for core).
        group: String,
        /// Resource (plural).
        resource: String,
    },
}

const POD_RESOURCES: &[&str] = &[
    "count/pods",
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
];

const SERVICE_RESOURCES: &[&str] = &[
    "count/services",
    "services",
    "services.nodeports",
    "services.loadbalancers",
];

const PVC_RESOURCES: &[&str] = &[
    "persistentvolumeclaims",
    "count/persistentvolumeclaims",
    "requests.storage",
];

/// Resources whose requests a quota on cpu or memory requires every container to state
/// (upstream's `validationSet`).
const REQUIRED_PER_CONTAINER: &[&str] = &[
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
];

fn legacy_count_name(group: &str, resource: &str) -> Option<&'static str> {
    if !group.is_empty() {
        return None;
    }
    match resource {
        "configmaps" => Some("configmaps"),
        "secrets" => Some("secrets"),
        "replicationcontrollers" => Some("replicationcontrollers"),
        "resourcequotas" => Some("resourcequotas"),
        _ => None,
    }
}

/// upstream `helper.IsNativeResource`: unprefixed or in `kubernetes.io/`.
fn is_native_resource(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// upstream `helper.IsExtendedResourceName`.
fn is_extended_resource_name(name: &str) -> bool {
    !is_native_resource(name) && !name.starts_with("requests.")
}

fn one() -> Quantity {
    Quantity::from_units(1)
}

impl Evaluator {
    /// The evaluator of `group`/`resource`.
    pub fn for_resource(group: &str, resource: &str) -> Self {
        match (group, resource) {
            ("", "pods") => Evaluator::Pods,
            ("", "services") => Evaluator::Services,
            ("", "persistentvolumeclaims") => Evaluator::PersistentVolumeClaims,
            _ => Evaluator::ObjectCount {
                group: group.to_string(),
                resource: resource.to_string(),
            },
        }
    }

    /// The group and resource measured.
    pub fn group_resource(&self) -> (&str, &str) {
        match self {
            Evaluator::Pods => ("", "pods"),
            Evaluator::Services => ("", "services"),
            Evaluator::PersistentVolumeClaims => ("", "persistentvolumeclaims"),
            Evaluator::ObjectCount { group, resource } => (group, resource),
        }
    }

    /// Whether a request with `operation` (`CREATE`, `UPDATE`, ...) can change usage.
    pub fn handles(&self, operation: &str) -> bool {
        match self {
            Evaluator::Pods | Evaluator::ObjectCount { .. } => operation == "CREATE",
            Evaluator::Services | Evaluator::PersistentVolumeClaims => {
                operation == "CREATE" || operation == "UPDATE"
            }
        }
    }

    /// The names among `input` this evaluator measures (upstream `MatchingResources`).
    pub fn matching_resources(&self, input: &[String]) -> Vec<String> {
        let among = |known: &[&str]| -> Vec<String> {
            input
                .iter()
                .filter(|name| known.contains(&name.as_str()))
                .cloned()
                .collect()
        };
        match self {
            Evaluator::Pods => {
                let mut out = among(POD_RESOURCES);
                for name in input {
                    if name.starts_with("hugepages-")
                        || name.starts_with("requests.hugepages-")
                        || (!is_native_resource(name) && name.starts_with("requests."))
                    {
                        out.push(name.clone());
                    }
                }
                out
            }
            Evaluator::Services => among(SERVICE_RESOURCES),
            Evaluator::PersistentVolumeClaims => {
                let mut out = among(PVC_RESOURCES);
                for name in input {
                    if let Some((_, rest)) = name.split_once(STORAGE_CLASS_SUFFIX)
                        && (rest == "requests.storage" || rest == "persistentvolumeclaims")
                    {
                        out.push(name.clone());
                    }
                }
                out
            }
            Evaluator::ObjectCount { group, resource } => {
                let count = object_count_name(group, resource);
                let legacy = legacy_count_name(group, resource);
                input
                    .iter()
                    .filter(|n| **n == count || Some(n.as_str()) == legacy)
                    .cloned()
                    .collect()
            }
        }
    }

    /// Whether `obj` is in the scope `selector` (only pods have scopes; upstream
    /// `podMatchesScopeFunc`, `MatchesNoScopeFunc` for the rest).
    pub fn matches_scope(&self, selector: &ScopeRequirement, obj: &Value) -> bool {
        if *self != Evaluator::Pods {
            return false;
        }
        match selector.scope_name.as_str() {
            "Terminating" => is_terminating(obj),
            "NotTerminating" => !is_terminating(obj),
            "BestEffort" => is_best_effort(obj),
            "NotBestEffort" => !is_best_effort(obj),
            "PriorityClass" => {
                let class = obj
                    .pointer("/spec/priorityClassName")
                    .and_then(Value::as_str)
                    .filter(|c| !c.is_empty());
                match selector.operator.as_str() {
                    "Exists" => class.is_some(),
                    "DoesNotExist" => class.is_none(),
                    "In" => class.is_some_and(|c| selector.values.iter().any(|v| v == c)),
                    "NotIn" => !class.is_some_and(|c| selector.values.iter().any(|v| v == c)),
                    _ => false,
                }
            }
            "CrossNamespacePodAffinity" => uses_cross_namespace_pod_affinity(obj),
            _ => false,
        }
    }

    /// The requirements among `selectors` that `obj` is in (upstream `MatchingScopes`).
    pub fn matching_scopes(
        &self,
        obj: &Value,
        selectors: &[ScopeRequirement],
    ) -> Vec<ScopeRequirement> {
        selectors
            .iter()
            .filter(|s| self.matches_scope(s, obj))
            .cloned()
            .collect()
    }

    /// The limited scopes no quota scope of the same name covers (upstream
    /// `UncoveredQuotaScopes`; only pods have scopes).
    pub fn uncovered_quota_scopes(
        &self,
        limited: &[ScopeRequirement],
        matched: &[ScopeRequirement],
    ) -> Vec<ScopeRequirement> {
        if *self != Evaluator::Pods {
            return Vec::new();
        }
        limited
            .iter()
            .filter(|l| !matched.iter().any(|m| m.scope_name == l.scope_name))
            .cloned()
            .collect()
    }

    /// Whether a quota limiting `hard` with the scope requirements `scopes` governs `obj`:
    /// it limits something this evaluator measures and `obj` is in all its scopes (upstream
    /// `generic.Matches`).
    pub fn matches(&self, hard: &ResourceList, scopes: &[ScopeRequirement], obj: &Value) -> bool {
        let hard: Vec<String> = hard.keys().cloned().collect();
        !self.matching_resources(&hard).is_empty()
            && scopes.iter().all(|s| self.matches_scope(s, obj))
    }

    /// What `obj` uses (upstream `Usage`); `now` decides whether a deleted pod's grace
    /// period is over.
    pub fn usage(&self, obj: &Value, now: jiff::Timestamp) -> ResourceList {
        match self {
            Evaluator::Pods => pod_usage(obj, now),
            Evaluator::Services => service_usage(obj),
            Evaluator::PersistentVolumeClaims => pvc_usage(obj),
            Evaluator::ObjectCount { group, resource } => {
                let mut out = ResourceList::new();
                out.insert(object_count_name(group, resource), one());
                if let Some(legacy) = legacy_count_name(group, resource) {
                    out.insert(legacy.to_string(), one());
                }
                out
            }
        }
    }

    /// Checks that `obj` states what `required` (the resources a matching quota limits)
    /// needs: a pod's containers must each request cpu and memory when those are limited
    /// (upstream `Constraints`).
    pub fn constraints(&self, required: &[String], obj: &Value) -> Result<(), String> {
        if *self != Evaluator::Pods {
            return Ok(());
        }
        let required: BTreeSet<&str> = required
            .iter()
            .map(String::as_str)
            .filter(|r| REQUIRED_PER_CONTAINER.contains(r))
            .collect();
        let mut missing: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for list in ["/spec/containers", "/spec/initContainers"] {
            for container in obj
                .pointer(list)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let usage = compute_usage(
                    &resources::from_json(container.pointer("/resources/requests")),
                    &resources::from_json(container.pointer("/resources/limits")),
                );
                let name = container
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                for resource in &required {
                    if !usage.contains_key(*resource) {
                        missing
                            .entry(resource.to_string())
                            .or_default()
                            .insert(name.to_string());
                    }
                }
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        let parts: Vec<String> = missing
            .iter()
            .map(|(resource, names)| {
                format!(
                    "{resource} for: {}",
                    names.iter().cloned().collect::<Vec<_>>().join(",")
                )
            })
            .collect();
        Err(format!("must specify {}", parts.join("; ")))
    }
}

/// upstream `podComputeUsageHelper`.
fn compute_usage(requests: &ResourceList, limits: &ResourceList) -> ResourceList {
    let mut out = ResourceList::new();
    out.insert("pods".into(), one());
    for resource in ["cpu", "memory", "ephemeral-storage"] {
        if let Some(request) = requests.get(resource) {
            out.insert(resource.into(), *request);
            out.insert(format!("requests.{resource}"), *request);
        }
        if let Some(limit) = limits.get(resource) {
            out.insert(format!("limits.{resource}"), *limit);
        }
    }
    for (resource, request) in requests {
        if resource.starts_with("hugepages-") {
            out.insert(resource.clone(), *request);
            out.insert(format!("requests.{resource}"), *request);
        }
        if is_extended_resource_name(resource) {
            out.insert(format!("requests.{resource}"), *request);
        }
    }
    out
}

fn max_into(target: &mut ResourceList, other: &ResourceList) {
    for (k, v) in other {
        match target.get(k) {
            Some(existing) if existing >= v => {}
            _ => {
                target.insert(k.clone(), *v);
            }
        }
    }
}

/// A pod's effective requests or limits (`field`): its containers summed, at least each
/// init container (sidecars, `restartPolicy: Always`, run alongside and add up), plus the
/// overhead (upstream `resourcehelper.PodRequests` / `PodLimits`).
pub(super) fn pod_resources(pod: &Value, field: &str) -> ResourceList {
    let of = |c: &Value| resources::from_json(c.pointer(&format!("/resources/{field}")));
    let mut total = ResourceList::new();
    for c in pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        total = resources::add(&total, &of(c));
    }
    let mut sidecars = ResourceList::new();
    let mut init_max = ResourceList::new();
    for c in pod
        .pointer("/spec/initContainers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let own = of(c);
        let effective = if c.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
            total = resources::add(&total, &own);
            sidecars = resources::add(&sidecars, &own);
            sidecars.clone()
        } else {
            resources::add(&own, &sidecars)
        };
        max_into(&mut init_max, &effective);
    }
    max_into(&mut total, &init_max);
    let overhead = resources::from_json(pod.pointer("/spec/overhead"));
    if !overhead.is_empty() {
        total = resources::add(&total, &overhead);
    }
    total
}

/// Whether a pod still counts: not terminal, and not past its deletion grace period
/// (upstream `QuotaV1Pod`).
pub fn pod_counts(pod: &Value, now: jiff::Timestamp) -> bool {
    let phase = pod.pointer("/status/phase").and_then(Value::as_str);
    if matches!(phase, Some("Failed" | "Succeeded")) {
        return false;
    }
    let deleted = pod
        .pointer("/metadata/deletionTimestamp")
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<jiff::Timestamp>().ok());
    let grace = pod
        .pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64);
    if let (Some(deleted), Some(grace)) = (deleted, grace)
        && let Ok(deadline) = deleted.checked_add(jiff::SignedDuration::from_secs(grace))
        && now > deadline
    {
        return false;
    }
    true
}

fn pod_usage(pod: &Value, now: jiff::Timestamp) -> ResourceList {
    let mut out = ResourceList::new();
    out.insert("count/pods".into(), one());
    if !pod_counts(pod, now) {
        return out;
    }
    let usage = compute_usage(
        &pod_resources(pod, "requests"),
        &pod_resources(pod, "limits"),
    );
    resources::add(&out, &usage)
}

fn is_terminating(pod: &Value) -> bool {
    pod.pointer("/spec/activeDeadlineSeconds")
        .and_then(Value::as_i64)
        .is_some_and(|s| s >= 0)
}

/// A pod with no cpu or memory request or limit in any container (upstream `GetPodQOS`).
fn is_best_effort(pod: &Value) -> bool {
    let stated = |c: &Value| {
        ["requests", "limits"].iter().any(|field| {
            let list = resources::from_json(c.pointer(&format!("/resources/{field}")));
            ["cpu", "memory"]
                .iter()
                .any(|r| list.get(*r).is_some_and(|q| *q > Quantity::zero()))
        })
    };
    let pod_level = ["requests", "limits"].iter().any(|field| {
        let list = resources::from_json(pod.pointer(&format!("/spec/resources/{field}")));
        ["cpu", "memory"]
            .iter()
            .any(|r| list.get(*r).is_some_and(|q| *q > Quantity::zero()))
    });
    !pod_level
        && !["/spec/containers", "/spec/initContainers"]
            .iter()
            .flat_map(|p| {
                pod.pointer(p)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
            })
            .any(stated)
}

fn uses_cross_namespace_pod_affinity(pod: &Value) -> bool {
    let cross = |term: &Value| {
        term.get("namespaces")
            .and_then(Value::as_array)
            .is_some_and(|n| !n.is_empty())
            || term.get("namespaceSelector").is_some_and(|s| !s.is_null())
    };
    ["podAffinity", "podAntiAffinity"].iter().any(|kind| {
        let Some(affinity) = pod.pointer(&format!("/spec/affinity/{kind}")) else {
            return false;
        };
        let required = affinity
            .get("requiredDuringSchedulingIgnoredDuringExecution")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(cross);
        let preferred = affinity
            .get("preferredDuringSchedulingIgnoredDuringExecution")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|w| w.get("podAffinityTerm"))
            .any(cross);
        required || preferred
    })
}

fn service_usage(svc: &Value) -> ResourceList {
    let ports = svc
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut out = ResourceList::new();
    out.insert("count/services".into(), one());
    out.insert("services".into(), one());
    let mut node_ports = 0i64;
    let mut load_balancers = 0i64;
    match svc.pointer("/spec/type").and_then(Value::as_str) {
        Some("NodePort") => node_ports = ports.len() as i64,
        Some("LoadBalancer") => {
            load_balancers = 1;
            let allocate = svc
                .pointer("/spec/allocateLoadBalancerNodePorts")
                .and_then(Value::as_bool)
                .unwrap_or(true);
            node_ports = if allocate {
                ports.len() as i64
            } else {
                ports
                    .iter()
                    .filter(|p| p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0)
                    .count() as i64
            };
        }
        _ => {}
    }
    out.insert(
        "services.nodeports".into(),
        Quantity::from_units(node_ports),
    );
    out.insert(
        "services.loadbalancers".into(),
        Quantity::from_units(load_balancers),
    );
    out
}

fn pvc_usage(pvc: &Value) -> ResourceList {
    let mut out = ResourceList::new();
    out.insert("count/persistentvolumeclaims".into(), one());
    out.insert("persistentvolumeclaims".into(), one());
    let class = pvc
        .pointer("/spec/storageClassName")
        .and_then(Value::as_str)
        .or_else(|| {
            pvc.pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class")
                .and_then(Value::as_str)
        })
        .filter(|c| !c.is_empty());
    if let Some(class) = class {
        out.insert(
            format!("{class}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"),
            one(),
        );
    }
    let requested = resources::from_json(pvc.pointer("/spec/resources/requests"))
        .get("storage")
        .copied();
    let allocated = resources::from_json(pvc.pointer("/status/allocatedResources"))
        .get("storage")
        .copied();
    let storage = match (requested, allocated) {
        (Some(r), Some(a)) => Some(r.max(a)),
        (r, a) => r.or(a),
    };
    if let Some(storage) = storage {
        out.insert("requests.storage".into(), storage);
        if let Some(class) = class {
            out.insert(
                format!("{class}{STORAGE_CLASS_SUFFIX}requests.storage"),
                storage,
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn now() -> jiff::Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn pod_usage_sums_containers_and_takes_the_largest_init_container() {
        let pod = json!({"spec": {
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m"}}},
                {"name": "b", "resources": {"requests": {"cpu": "200m", "hugepages-2Mi": "2Mi", "example.com/gpu": "1"}}}
            ],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "1"}}}]
        }});
        let usage = resources::to_json(&Evaluator::Pods.usage(&pod, now()));
        assert_eq!(
            usage,
            json!({"count/pods": "1", "pods": "1", "cpu": "1", "requests.cpu": "1",
                   "memory": "64Mi", "requests.memory": "64Mi", "limits.cpu": "200m",
                   "hugepages-2Mi": "2Mi", "requests.hugepages-2Mi": "2Mi",
                   "requests.example.com/gpu": "1"})
        );
    }

    #[test]
    fn terminal_pods_only_count_as_objects() {
        let pod =
            json!({"spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Succeeded"}});
        assert_eq!(
            resources::to_json(&Evaluator::Pods.usage(&pod, now())),
            json!({"count/pods": "1"})
        );
        let expired = json!({"metadata": {"deletionTimestamp": "2025-12-31T23:59:00Z",
                                          "deletionGracePeriodSeconds": 30},
                             "spec": {"containers": [{"name": "a"}]}});
        assert!(!pod_counts(&expired, now()));
    }

    #[test]
    fn must_specify_lists_resources_then_containers() {
        let pod = json!({"spec": {"containers": [
            {"name": "b", "resources": {}},
            {"name": "a", "resources": {"requests": {"cpu": "1"}}}
        ]}});
        let err = Evaluator::Pods
            .constraints(&names(&["requests.cpu", "limits.memory", "pods"]), &pod)
            .unwrap_err();
        assert_eq!(
            err,
            "must specify limits.memory for: a,b; requests.cpu for: b"
        );
    }

    #[test]
    fn pod_scopes() {
        let best_effort = json!({"spec": {"containers": [{"name": "a"}]}});
        let burstable = json!({"spec": {"priorityClassName": "high", "activeDeadlineSeconds": 5,
            "containers": [{"name": "a", "resources": {"requests": {"memory": "1Mi"}}}]}});
        let e = Evaluator::Pods;
        let scope = |n: &str| ScopeRequirement::exists(n);
        assert!(e.matches_scope(&scope("BestEffort"), &best_effort));
        assert!(!e.matches_scope(&scope("BestEffort"), &burstable));
        assert!(e.matches_scope(&scope("NotBestEffort"), &burstable));
        assert!(e.matches_scope(&scope("Terminating"), &burstable));
        assert!(e.matches_scope(&scope("NotTerminating"), &best_effort));
        let class_in = ScopeRequirement {
            scope_name: "PriorityClass".into(),
            operator: "In".into(),
            values: names(&["high"]),
        };
        assert!(e.matches_scope(&class_in, &burstable));
        assert!(!e.matches_scope(&class_in, &best_effort));
        let not_in = ScopeRequirement {
            operator: "NotIn".into(),
            ..class_in
        };
        assert!(e.matches_scope(&not_in, &best_effort));
        // Scoped quotas never govern other resources.
        assert!(!Evaluator::Services.matches_scope(&scope("BestEffort"), &json!({})));
    }

    #[test]
    fn services_and_claims_usage() {
        let svc = json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80}, {"port": 443}]}});
        assert_eq!(
            resources::to_json(&Evaluator::Services.usage(&svc, now())),
            json!({"count/services": "1", "services": "1", "services.nodeports": "2",
                   "services.loadbalancers": "1"})
        );
        let pvc = json!({"spec": {"storageClassName": "gold",
            "resources": {"requests": {"storage": "1Gi"}}}});
        assert_eq!(
            resources::to_json(&Evaluator::PersistentVolumeClaims.usage(&pvc, now())),
            json!({"count/persistentvolumeclaims": "1", "persistentvolumeclaims": "1",
                   "gold.storageclass.storage.k8s.io/persistentvolumeclaims": "1",
                   "gold.storageclass.storage.k8s.io/requests.storage": "1Gi",
                   "requests.storage": "1Gi"})
        );
        assert_eq!(
            Evaluator::PersistentVolumeClaims.matching_resources(&names(&[
                "gold.storageclass.storage.k8s.io/requests.storage",
                "pods"
            ])),
            names(&["gold.storageclass.storage.k8s.io/requests.storage"])
        );
    }

    #[test]
    fn object_counts_with_legacy_names() {
        let cm = Evaluator::for_resource("", "configmaps");
        assert_eq!(
            resources::to_json(&cm.usage(&json!({}), now())),
            json!({"count/configmaps": "1", "configmaps": "1"})
        );
        let widgets = Evaluator::for_resource("example.com", "widgets");
        assert_eq!(
            widgets.matching_resources(&names(&["count/widgets.example.com", "pods"])),
            names(&["count/widgets.example.com"])
        );
        assert!(widgets.handles("CREATE") && !widgets.handles("UPDATE"));
    }
}
