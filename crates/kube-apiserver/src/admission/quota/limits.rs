//! What the LimitRanger plugin does to and checks on pods and claims for one LimitRange
//! (upstream `plugin/pkg/admission/limitranger/admission.go`): default requests and limits
//! for containers, and the min, max and max limit/request ratio of `Container`, `Pod` and
//! `PersistentVolumeClaim` items, with upstream's messages.

use serde_json::{Map, Value};

use super::evaluator::pod_resources;
use super::resources::{self, ResourceList};
use crate::apis::quantity::Quantity;

/// The annotation that says which defaults LimitRanger set.
pub const ANNOTATION: &str = "kubernetes.io/limit-ranger";

/// A LimitRange item with upstream's defaulting applied (`SetDefaults_LimitRangeItem`: a
/// container's default limit is its max, its default request its default limit, else its
/// min), so ranges stored without defaults behave as upstream's defaulted ones.
struct Item {
    kind: String,
    min: ResourceList,
    max: ResourceList,
    default_limit: ResourceList,
    default_request: ResourceList,
    ratio: ResourceList,
}

fn items(limit_range: &Value) -> Vec<Item> {
    limit_range
        .pointer("/spec/limits")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|item| {
            let list = |key: &str| resources::from_json(item.get(key));
            let kind = item
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let mut default_limit = list("default");
            let mut default_request = list("defaultRequest");
            let min = list("min");
            let max = list("max");
            if kind == "Container" {
                for (k, v) in &max {
                    default_limit.entry(k.clone()).or_insert(*v);
                }
                for (k, v) in &default_limit {
                    default_request.entry(k.clone()).or_insert(*v);
                }
                for (k, v) in &min {
                    default_request.entry(k.clone()).or_insert(*v);
                }
            }
            Item {
                kind,
                min,
                max,
                default_limit,
                default_request,
                ratio: list("maxLimitRequestRatio"),
            }
        })
        .collect()
}

/// Sets the missing requests and limits of `resources` (a container's) from the defaults;
/// the names set, sorted, as `(requests, limits)`.
fn merge_defaults(
    resources_value: &mut Map<String, Value>,
    requests: &ResourceList,
    limits: &ResourceList,
) -> (Vec<String>, Vec<String>) {
    let mut set = |field: &str, defaults: &ResourceList| {
        let entry = resources_value
            .entry(field.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        let mut names = Vec::new();
        if let Value::Object(map) = entry {
            for (name, quantity) in defaults {
                if !map.contains_key(name) {
                    map.insert(name.clone(), Value::String(quantity.to_string()));
                    names.push(name.clone());
                }
            }
        }
        names
    };
    let limits_set = set("limits", limits);
    let requests_set = set("requests", requests);
    (requests_set, limits_set)
}

/// Applies the container defaults of `limit_range` to every container and init container of
/// `pod`, and records what it set in the `kubernetes.io/limit-ranger` annotation (upstream
/// `PodMutateLimitFunc`).
pub fn apply_defaults(pod: &mut Value, limit_range: &Value) {
    let mut requests = ResourceList::new();
    let mut limits = ResourceList::new();
    for item in items(limit_range)
        .into_iter()
        .filter(|i| i.kind == "Container")
    {
        requests.extend(item.default_request);
        limits.extend(item.default_limit);
    }
    let mut notes: Vec<String> = Vec::new();
    for (list, prefix) in [
        ("containers", "container"),
        ("initContainers", "init container"),
    ] {
        let Some(Value::Array(containers)) = pod.pointer_mut(&format!("/spec/{list}")) else {
            continue;
        };
        for container in containers.iter_mut() {
            let name = container
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let Some(map) = container.as_object_mut() else {
                continue;
            };
            let resources_value = map
                .entry("resources".to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if !resources_value.is_object() {
                *resources_value = Value::Object(Map::new());
            }
            let Value::Object(resources_map) = resources_value else {
                continue;
            };
            let (set_requests, set_limits) = merge_defaults(resources_map, &requests, &limits);
            if !set_requests.is_empty() {
                notes.push(format!(
                    "{} request for {prefix} {name}",
                    set_requests.join(", ")
                ));
            }
            if !set_limits.is_empty() {
                notes.push(format!(
                    "{} limit for {prefix} {name}",
                    set_limits.join(", ")
                ));
            }
        }
    }
    if notes.is_empty() {
        return;
    }
    let Some(metadata) = pod.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let annotations = metadata
        .entry("annotations".to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if !annotations.is_object() {
        *annotations = Value::Object(Map::new());
    }
    if let Value::Object(annotations) = annotations {
        annotations.insert(
            ANNOTATION.to_string(),
            Value::String(format!("LimitRanger plugin set: {}", notes.join("; "))),
        );
    }
}

fn min_constraint(
    kind: &str,
    resource: &str,
    enforced: &Quantity,
    requests: &ResourceList,
    limits: &ResourceList,
) -> Option<String> {
    let Some(request) = requests.get(resource) else {
        return Some(format!(
            "minimum {resource} usage per {kind} is {enforced}.  No request is specified"
        ));
    };
    if request.milli_value() < enforced.milli_value() {
        return Some(format!(
            "minimum {resource} usage per {kind} is {enforced}, but request is {request}"
        ));
    }
    match limits.get(resource) {
        Some(limit) if limit.milli_value() < enforced.milli_value() => Some(format!(
            "minimum {resource} usage per {kind} is {enforced}, but limit is {limit}"
        )),
        _ => None,
    }
}

fn max_constraint(
    kind: &str,
    resource: &str,
    enforced: &Quantity,
    requests: &ResourceList,
    limits: &ResourceList,
) -> Option<String> {
    let Some(limit) = limits.get(resource) else {
        return Some(format!(
            "maximum {resource} usage per {kind} is {enforced}.  No limit is specified"
        ));
    };
    if limit.milli_value() > enforced.milli_value() {
        return Some(format!(
            "maximum {resource} usage per {kind} is {enforced}, but limit is {limit}"
        ));
    }
    match requests.get(resource) {
        Some(request) if request.milli_value() > enforced.milli_value() => Some(format!(
            "maximum {resource} usage per {kind} is {enforced}, but request is {request}"
        )),
        _ => None,
    }
}

/// The max of a claim's request (claims have no limits).
fn max_request_constraint(
    kind: &str,
    resource: &str,
    enforced: &Quantity,
    requests: &ResourceList,
) -> Option<String> {
    let Some(request) = requests.get(resource) else {
        return Some(format!(
            "maximum {resource} usage per {kind} is {enforced}.  No request is specified"
        ));
    };
    (request.milli_value() > enforced.milli_value()).then(|| {
        format!("maximum {resource} usage per {kind} is {enforced}, but request is {request}")
    })
}

fn ratio_constraint(
    kind: &str,
    resource: &str,
    enforced: &Quantity,
    requests: &ResourceList,
    limits: &ResourceList,
) -> Option<String> {
    let request = requests.get(resource).filter(|q| !q.is_zero());
    let Some(request) = request else {
        return Some(format!(
            "{resource} max limit to request ratio per {kind} is {enforced}, but no request is specified or request is 0"
        ));
    };
    let limit = limits.get(resource).filter(|q| !q.is_zero());
    let Some(limit) = limit else {
        return Some(format!(
            "{resource} max limit to request ratio per {kind} is {enforced}, but no limit is specified or limit is 0"
        ));
    };
    let observed = limit.milli_value() as f64 / request.milli_value() as f64;
    (observed * 1000.0 > enforced.milli_value() as f64).then(|| {
        format!(
            "{resource} max limit to request ratio per {kind} is {enforced}, but provided ratio is {observed:.6}"
        )
    })
}

/// upstream `utilerrors.NewAggregate(...).Error()`.
fn aggregate(errors: Vec<String>) -> Result<(), String> {
    let mut unique: Vec<String> = Vec::new();
    for e in errors {
        if !unique.contains(&e) {
            unique.push(e);
        }
    }
    match unique.len() {
        0 => Ok(()),
        1 => Err(unique.remove(0)),
        _ => Err(format!("[{}]", unique.join(", "))),
    }
}

fn check_all(
    item: &Item,
    requests: &ResourceList,
    limits: &ResourceList,
    unchanged: &dyn Fn(&str) -> bool,
    errors: &mut Vec<String>,
) {
    let kind = item.kind.as_str();
    for (resource, enforced) in &item.min {
        if !unchanged(resource) {
            errors.extend(min_constraint(kind, resource, enforced, requests, limits));
        }
    }
    for (resource, enforced) in &item.max {
        if !unchanged(resource) {
            errors.extend(max_constraint(kind, resource, enforced, requests, limits));
        }
    }
    for (resource, enforced) in &item.ratio {
        if !unchanged(resource) {
            errors.extend(ratio_constraint(kind, resource, enforced, requests, limits));
        }
    }
}

fn container_lists(container: &Value) -> (ResourceList, ResourceList) {
    (
        resources::from_json(container.pointer("/resources/requests")),
        resources::from_json(container.pointer("/resources/limits")),
    )
}

fn same(resource: &str, a: &ResourceList, b: &ResourceList) -> bool {
    a.get(resource) == b.get(resource)
}

/// Checks `pod` against the `Container` and `Pod` items of `limit_range` (upstream
/// `PodValidateLimitFunc`); on an update, values the stored pod (`old`) already had are not
/// checked again.
pub fn validate_pod(limit_range: &Value, pod: &Value, old: Option<&Value>) -> Result<(), String> {
    let mut errors = Vec::new();
    for item in items(limit_range) {
        if item.kind == "Container" {
            for list in ["containers", "initContainers"] {
                let path = format!("/spec/{list}");
                for container in pod
                    .pointer(&path)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let (requests, limits) = container_lists(container);
                    let name = container.get("name");
                    let old_lists = old
                        .and_then(|o| o.pointer(&path))
                        .and_then(Value::as_array)
                        .and_then(|cs| cs.iter().find(|c| c.get("name") == name))
                        .map(container_lists);
                    let unchanged = |r: &str| {
                        old_lists
                            .as_ref()
                            .is_some_and(|(old_requests, old_limits)| {
                                same(r, &requests, old_requests) && same(r, &limits, old_limits)
                            })
                    };
                    check_all(&item, &requests, &limits, &unchanged, &mut errors);
                }
            }
        }
        if item.kind == "Pod" {
            let requests = pod_resources(pod, "requests");
            let limits = pod_resources(pod, "limits");
            let old_lists = old.map(|o| (pod_resources(o, "requests"), pod_resources(o, "limits")));
            let unchanged = |r: &str| {
                old_lists
                    .as_ref()
                    .is_some_and(|(old_requests, old_limits)| {
                        same(r, &requests, old_requests) && same(r, &limits, old_limits)
                    })
            };
            check_all(&item, &requests, &limits, &unchanged, &mut errors);
        }
    }
    aggregate(errors)
}

/// Checks the storage requests of `claim` against the `PersistentVolumeClaim` items of
/// `limit_range` (upstream `PersistentVolumeClaimValidateLimitFunc`); requests an update
/// leaves as they were are not checked again.
pub fn validate_claim(
    limit_range: &Value,
    claim: &Value,
    old: Option<&Value>,
) -> Result<(), String> {
    let requests = resources::from_json(claim.pointer("/spec/resources/requests"));
    let old_requests = old
        .map(|o| resources::from_json(o.pointer("/spec/resources/requests")))
        .unwrap_or_default();
    let unchanged = |r: &str| {
        requests
            .get(r)
            .is_some_and(|q| old_requests.get(r) == Some(q))
    };
    let mut errors = Vec::new();
    for item in items(limit_range)
        .into_iter()
        .filter(|i| i.kind == "PersistentVolumeClaim")
    {
        for (resource, enforced) in &item.min {
            if !unchanged(resource) {
                errors.extend(min_constraint(
                    &item.kind,
                    resource,
                    enforced,
                    &requests,
                    &ResourceList::new(),
                ));
            }
        }
        for (resource, enforced) in &item.max {
            if !unchanged(resource) {
                errors.extend(max_request_constraint(
                    &item.kind, resource, enforced, &requests,
                ));
            }
        }
    }
    aggregate(errors)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn range(limits: Value) -> Value {
        json!({"metadata": {"name": "lr", "namespace": "ns"}, "spec": {"limits": limits}})
    }

    #[test]
    fn defaults_fill_missing_requests_and_limits_and_are_annotated() {
        let lr = range(json!([{"type": "Container",
            "default": {"cpu": "500m", "memory": "128Mi"}, "defaultRequest": {"cpu": "250m"}}]));
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {
            "containers": [{"name": "app", "resources": {"limits": {"memory": "64Mi"}}}],
            "initContainers": [{"name": "init"}]}});
        apply_defaults(&mut pod, &lr);
        assert_eq!(
            pod["spec"]["containers"][0]["resources"],
            json!({"limits": {"cpu": "500m", "memory": "64Mi"},
                   "requests": {"cpu": "250m", "memory": "128Mi"}})
        );
        assert_eq!(
            pod["metadata"]["annotations"][ANNOTATION],
            "LimitRanger plugin set: cpu, memory request for container app; cpu limit for container app; \
             cpu, memory request for init container init; cpu, memory limit for init container init"
        );
    }

    #[test]
    fn max_min_and_ratio_messages_are_upstreams() {
        let lr = range(
            json!([{"type": "Container", "max": {"cpu": "1"}, "min": {"memory": "1Mi"},
            "maxLimitRequestRatio": {"cpu": "2"}}]),
        );
        let pod = json!({"spec": {"containers": [{"name": "x", "resources": {
            "requests": {"cpu": "500m", "memory": "10Mi"}, "limits": {"cpu": "2", "memory": "10Mi"}}}]}});
        assert_eq!(
            validate_pod(&lr, &pod, None).unwrap_err(),
            "[maximum cpu usage per Container is 1, but limit is 2, \
             cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000]"
        );
        let small = json!({"spec": {"containers": [{"name": "x", "resources": {
            "requests": {"cpu": "500m"}, "limits": {"cpu": "1"}}}]}});
        assert_eq!(
            validate_pod(&lr, &small, None).unwrap_err(),
            "minimum memory usage per Container is 1Mi.  No request is specified"
        );
        // An update that leaves a value as stored is not checked again.
        assert!(validate_pod(&lr, &pod, Some(&pod)).is_ok());
    }

    #[test]
    fn pod_and_claim_items() {
        let lr = range(json!([{"type": "Pod", "max": {"memory": "1Gi"}},
                              {"type": "PersistentVolumeClaim", "max": {"storage": "2Gi"}, "min": {"storage": "1Gi"}}]));
        let pod = json!({"spec": {"containers": [
            {"name": "a", "resources": {"limits": {"memory": "768Mi"}}},
            {"name": "b", "resources": {"limits": {"memory": "512Mi"}}}]}});
        assert_eq!(
            validate_pod(&lr, &pod, None).unwrap_err(),
            "maximum memory usage per Pod is 1Gi, but limit is 1280Mi"
        );
        let claim = json!({"spec": {"resources": {"requests": {"storage": "5Gi"}}}});
        assert_eq!(
            validate_claim(&lr, &claim, None).unwrap_err(),
            "maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 5Gi"
        );
        let claim = json!({"spec": {"resources": {"requests": {"storage": "1536Mi"}}}});
        assert!(validate_claim(&lr, &claim, None).is_ok());
    }
}
