//! Whether a request fits the quotas of its namespace, and what their usage becomes if it is
//! admitted (upstream `CheckRequest` in
//! `k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go`).

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;

use super::config::LimitedResource;
use super::evaluator::{Evaluator, ScopeRequirement, quota_scope_requirements};
use super::resources::{self, ResourceList};

/// A ResourceQuota as admission sees it.
#[derive(Clone, Debug)]
pub struct Quota {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.resourceVersion`.
    pub resource_version: String,
    /// `status.hard`.
    pub hard: ResourceList,
    /// `status.used`.
    pub used: ResourceList,
    /// `spec.scopes` and `spec.scopeSelector`.
    pub scopes: Vec<ScopeRequirement>,
}

impl Quota {
    /// The quota `object`.
    pub fn from_object(object: Arc<Value>) -> Self {
        let text = |path: &str| {
            object
                .pointer(path)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        Quota {
            name: text("/metadata/name"),
            namespace: text("/metadata/namespace"),
            resource_version: text("/metadata/resourceVersion"),
            hard: resources::from_json(object.pointer("/status/hard")),
            used: resources::from_json(object.pointer("/status/used")),
            scopes: quota_scope_requirements(&object),
        }
    }

    /// The resource version as a number, for telling the newer of two copies apart.
    pub fn version(&self) -> u64 {
        self.resource_version.parse().unwrap_or(0)
    }
}

/// The request being checked.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// `CREATE`, `UPDATE`, ...
    pub operation: &'a str,
    /// The subresource (empty for the resource itself).
    pub subresource: &'a str,
    /// The resource's API group.
    pub group: &'a str,
    /// The resource.
    pub resource: &'a str,
    /// The new object.
    pub object: &'a Value,
    /// The stored object of an update.
    pub old_object: Option<&'a Value>,
}

/// Whether every hard limit among `interesting` has a usage recorded (upstream
/// `hasUsageStats`).
fn has_usage_stats(quota: &Quota, interesting: &[String]) -> bool {
    quota
        .hard
        .keys()
        .filter(|name| interesting.contains(name))
        .all(|name| quota.used.contains_key(name))
}

/// The names of `usage` with a positive amount that a limited resource's `matchContains`
/// names (upstream `limitedByDefault`).
fn limited_by_default(usage: &ResourceList, limited: &[&LimitedResource]) -> Vec<String> {
    let mut out = Vec::new();
    for resource in limited {
        for (name, amount) in usage {
            if amount.is_zero() || amount.is_negative() {
                continue;
            }
            if resource
                .match_contains
                .iter()
                .any(|m| name.contains(m.as_str()))
            {
                out.push(name.clone());
            }
        }
    }
    out
}

/// Checks `request` against `quotas` (all of its namespace). `Ok` holds the quotas with the
/// usage they would have once the request is admitted (the same quotas when it changes
/// none); `Err` is the message of the 403 (upstream's texts).
pub fn check_request(
    quotas: &[Quota],
    request: &Request,
    evaluator: &Evaluator,
    limited: &[LimitedResource],
    now: jiff::Timestamp,
) -> Result<Vec<Quota>, String> {
    if !evaluator.handles(request.operation) {
        return Ok(quotas.to_vec());
    }
    let object = request.object;
    let limited_scopes: Vec<ScopeRequirement> = limited
        .iter()
        .flat_map(|l| evaluator.matching_scopes(object, &l.match_scopes))
        .collect();
    let for_resource: Vec<&LimitedResource> = limited
        .iter()
        .filter(|l| l.api_group == request.group && l.resource == request.resource)
        .collect();
    let limited_names: BTreeSet<String> = if for_resource.is_empty() {
        BTreeSet::new()
    } else {
        limited_by_default(&evaluator.usage(object, now), &for_resource)
            .into_iter()
            .collect()
    };

    let mut interesting: Vec<usize> = Vec::new();
    let mut restricted_names: BTreeSet<String> = BTreeSet::new();
    let mut restricted_scopes: Vec<ScopeRequirement> = Vec::new();
    for (i, quota) in quotas.iter().enumerate() {
        restricted_scopes.extend(evaluator.matching_scopes(object, &quota.scopes));
        if !evaluator.matches(&quota.hard, &quota.scopes, object) {
            continue;
        }
        let hard_names: Vec<String> = quota.hard.keys().cloned().collect();
        let restricted = evaluator.matching_resources(&hard_names);
        evaluator
            .constraints(&restricted, object)
            .map_err(|err| format!("failed quota: {}: {err}", quota.name))?;
        if !has_usage_stats(quota, &restricted) {
            return Err(format!(
                "status unknown for quota: {}, resources: {}",
                quota.name,
                resources::pretty_print_names(&restricted)
            ));
        }
        interesting.push(i);
        restricted_names.extend(restricted);
    }

    let input_usage = evaluator.usage(object, now);
    let negative = resources::negative_names(&input_usage);
    if !negative.is_empty() {
        return Err(format!(
            "quota usage is negative for resource(s): {}",
            resources::pretty_print_names(&negative)
        ));
    }

    let mut deltas: Vec<(usize, ResourceList)> = interesting
        .iter()
        .map(|i| (*i, input_usage.clone()))
        .collect();
    let mut delta_without_quota = if request.operation == "CREATE" && interesting.is_empty() {
        input_usage.clone()
    } else {
        ResourceList::new()
    };
    if request.operation == "UPDATE" {
        let old = request.old_object.ok_or_else(|| {
            "unable to get previous usage since prior version of object was not found".to_string()
        })?;
        let old_version = old
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !old_version.is_empty() {
            let delta = resources::subtract_non_negative(&input_usage, &evaluator.usage(old, now));
            if interesting.is_empty() {
                delta_without_quota = delta.clone();
            }
            for (i, quota_delta) in &mut deltas {
                let quota = &quotas[*i];
                if evaluator.matches(&quota.hard, &quota.scopes, old) {
                    *quota_delta = delta.clone();
                }
            }
        } else if interesting.is_empty() {
            delta_without_quota = input_usage.clone();
        }
    }
    let deltas: Vec<(usize, ResourceList)> = deltas
        .into_iter()
        .map(|(i, d)| (i, resources::remove_zeros(&d)))
        .filter(|(_, d)| !d.is_empty())
        .collect();
    if interesting.is_empty() {
        if resources::remove_zeros(&delta_without_quota).is_empty() {
            return Ok(quotas.to_vec());
        }
    } else if deltas.is_empty() {
        return Ok(quotas.to_vec());
    }

    let uncovered: Vec<&String> = limited_names.difference(&restricted_names).collect();
    if !uncovered.is_empty() {
        return Err(format!(
            "insufficient quota to consume: {}",
            uncovered
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(",")
        ));
    }
    let uncovered_scopes = evaluator.uncovered_quota_scopes(&limited_scopes, &restricted_scopes);
    if !uncovered_scopes.is_empty() {
        return Err(format!(
            "insufficient quota to match these scopes: [{}]",
            uncovered_scopes
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    if interesting.is_empty() {
        return Ok(quotas.to_vec());
    }

    let mut out = quotas.to_vec();
    for (i, delta) in deltas {
        let quota = &quotas[i];
        let requested = resources::mask(&delta, quota.hard.keys());
        let new_used = resources::add(&quota.used, &requested);
        if request.subresource != "status" {
            let checked = resources::mask(&new_used, requested.keys());
            let (allowed, exceeded) = resources::less_than_or_equal(&checked, &quota.hard);
            if !allowed {
                return Err(format!(
                    "exceeded quota: {}, requested: {}, used: {}, limited: {}",
                    quota.name,
                    resources::pretty_print(&resources::mask(&requested, &exceeded)),
                    resources::pretty_print(&resources::mask(&quota.used, &exceeded)),
                    resources::pretty_print(&resources::mask(&quota.hard, &exceeded)),
                ));
            }
        }
        out[i].used = new_used;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn now() -> jiff::Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    fn quota(name: &str, spec: Value, hard: Value, used: Value) -> Quota {
        Quota::from_object(Arc::new(json!({
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": "5"},
            "spec": spec, "status": {"hard": hard, "used": used}
        })))
    }

    fn create<'a>(resource: &'a str, object: &'a Value) -> Request<'a> {
        Request {
            operation: "CREATE",
            subresource: "",
            group: "",
            resource,
            object,
            old_object: None,
        }
    }

    fn pod(requests: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "c", "resources": {"requests": requests}}]}})
    }

    #[test]
    fn a_pod_over_the_count_is_refused_with_upstreams_message() {
        let quotas = [quota(
            "q",
            json!({}),
            json!({"pods": "2"}),
            json!({"pods": "2"}),
        )];
        let p = pod(json!({}));
        let err =
            check_request(&quotas, &create("pods", &p), &Evaluator::Pods, &[], now()).unwrap_err();
        assert_eq!(
            err,
            "exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2"
        );
    }

    #[test]
    fn an_admitted_pod_is_charged_to_every_matching_quota() {
        let quotas = [
            quota(
                "a",
                json!({}),
                json!({"pods": "2", "requests.cpu": "1"}),
                json!({"pods": "0", "requests.cpu": "0"}),
            ),
            quota(
                "b",
                json!({"scopes": ["BestEffort"]}),
                json!({"pods": "1"}),
                json!({"pods": "0"}),
            ),
            quota(
                "c",
                json!({}),
                json!({"services": "1"}),
                json!({"services": "0"}),
            ),
        ];
        let p = pod(json!({"cpu": "250m"}));
        let out =
            check_request(&quotas, &create("pods", &p), &Evaluator::Pods, &[], now()).unwrap();
        assert_eq!(
            resources::to_json(&out[0].used),
            json!({"pods": "1", "requests.cpu": "250m"})
        );
        assert_eq!(resources::to_json(&out[1].used), json!({"pods": "0"}));
        assert_eq!(resources::to_json(&out[2].used), json!({"services": "0"}));
    }

    #[test]
    fn a_cpu_quota_needs_requests_and_a_known_status() {
        let quotas = [quota(
            "compute",
            json!({}),
            json!({"requests.cpu": "1"}),
            json!({}),
        )];
        let p = pod(json!({}));
        let err =
            check_request(&quotas, &create("pods", &p), &Evaluator::Pods, &[], now()).unwrap_err();
        assert_eq!(
            err,
            "failed quota: compute: must specify requests.cpu for: c"
        );
        let p = pod(json!({"cpu": "1"}));
        let err =
            check_request(&quotas, &create("pods", &p), &Evaluator::Pods, &[], now()).unwrap_err();
        assert_eq!(
            err,
            "status unknown for quota: compute, resources: requests.cpu"
        );
    }

    #[test]
    fn updates_are_charged_the_difference() {
        let quotas = [quota(
            "q",
            json!({}),
            json!({"services.nodeports": "2"}),
            json!({"services.nodeports": "1"}),
        )];
        let old = json!({"metadata": {"resourceVersion": "3"},
            "spec": {"type": "NodePort", "ports": [{"port": 1}]}});
        let new = json!({"metadata": {"resourceVersion": "3"},
            "spec": {"type": "NodePort", "ports": [{"port": 1}, {"port": 2}, {"port": 3}]}});
        let request = Request {
            operation: "UPDATE",
            old_object: Some(&old),
            ..create("services", &new)
        };
        let err = check_request(&quotas, &request, &Evaluator::Services, &[], now()).unwrap_err();
        assert_eq!(
            err,
            "exceeded quota: q, requested: services.nodeports=2, used: services.nodeports=1, limited: services.nodeports=2"
        );
    }

    #[test]
    fn limited_resources_need_a_covering_quota() {
        let limited = [LimitedResource {
            api_group: String::new(),
            resource: "pods".into(),
            match_contains: vec!["requests.cpu".into()],
            match_scopes: vec![],
        }];
        let p = pod(json!({"cpu": "1"}));
        let err =
            check_request(&[], &create("pods", &p), &Evaluator::Pods, &limited, now()).unwrap_err();
        assert_eq!(err, "insufficient quota to consume: requests.cpu");
        let scoped = [LimitedResource {
            api_group: String::new(),
            resource: "pods".into(),
            match_contains: vec![],
            match_scopes: vec![ScopeRequirement {
                scope_name: "PriorityClass".into(),
                operator: "In".into(),
                values: vec!["high".into()],
            }],
        }];
        let mut p = pod(json!({}));
        p["spec"]["priorityClassName"] = json!("high");
        let err =
            check_request(&[], &create("pods", &p), &Evaluator::Pods, &scoped, now()).unwrap_err();
        assert_eq!(
            err,
            "insufficient quota to match these scopes: [{PriorityClass In [high]}]"
        );
    }
}
