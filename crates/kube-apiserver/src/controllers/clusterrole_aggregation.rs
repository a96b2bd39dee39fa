//! The ClusterRole aggregation controller (upstream `pkg/controller/clusterroleaggregation`,
//! which runs in kube-controller-manager; there is none here, so kube-apiserver starts it once
//! the `rbac/bootstrap-roles` hook has written the default roles): the rules of a ClusterRole with an `aggregationRule` are the union of
//! the rules of the ClusterRoles its selectors match, kept current as roles change.

use std::sync::Arc;

use apiserver::registry::informer::{Informer, InformerEvent};
use apiserver::registry::rest::{ListOptions, RequestContext, RestStorage, UpdateOptions};
use apiserver::registry::store::Store;
use apiserver::storage::selection::LabelSelector;
use k8s_openapi::api::rbac::v1::PolicyRule;
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::apis::table::format_label_selector;

/// A rule as upstream compares them (semantic equality: an empty list is an absent one).
fn normalized(rule: &Value) -> Option<PolicyRule> {
    let mut rule: PolicyRule = serde_json::from_value(rule.clone()).ok()?;
    for list in [
        &mut rule.api_groups,
        &mut rule.resources,
        &mut rule.resource_names,
        &mut rule.non_resource_urls,
    ] {
        if list.as_ref().is_some_and(Vec::is_empty) {
            *list = None;
        }
    }
    Some(rule)
}

fn rules_of(role: &Value) -> Vec<PolicyRule> {
    role.get("rules")
        .and_then(Value::as_array)
        .map(|rules| rules.iter().filter_map(normalized).collect())
        .unwrap_or_default()
}

fn name_of(role: &Value) -> &str {
    role.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn labels_of(role: &Value) -> std::collections::BTreeMap<String, String> {
    role.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// The rules `role` aggregates from `roles` (upstream `syncClusterRole`): for each selector
/// in turn, the matching roles by name, each of their rules once, in order. `None` when the
/// role aggregates nothing (it has no aggregation rule).
pub fn aggregated_rules(role: &Value, roles: &[Arc<Value>]) -> Option<Vec<PolicyRule>> {
    let selectors = role
        .pointer("/aggregationRule/clusterRoleSelectors")
        .and_then(Value::as_array)?;
    let mut sorted: Vec<&Value> = roles.iter().map(Arc::as_ref).collect();
    sorted.sort_by(|a, b| name_of(a).cmp(name_of(b)));
    let mut rules: Vec<PolicyRule> = Vec::new();
    for selector in selectors {
        // An invalid selector selects nothing (validation refuses them on write).
        let text = format_label_selector(Some(selector));
        let parsed = if text == "<none>" {
            // An empty selector selects everything (`LabelSelectorAsSelector`).
            Ok(LabelSelector::everything())
        } else {
            LabelSelector::parse(&text)
        };
        let Ok(selector) = parsed else {
            continue;
        };
        for other in &sorted {
            if name_of(other) == name_of(role) || !selector.matches(&labels_of(other)) {
                continue;
            }
            for rule in rules_of(other) {
                if !rules.contains(&rule) {
                    rules.push(rule);
                }
            }
        }
    }
    Some(rules)
}

fn rules_value(rules: &[PolicyRule]) -> Value {
    if rules.is_empty() {
        // Upstream writes no rules as `null`.
        return Value::Null;
    }
    serde_json::to_value(rules).unwrap_or(Value::Null)
}

/// How many passes one sync makes at most: aggregated roles that aggregate others (`admin`
/// takes `edit`, which takes `view`) settle one level a pass.
const MAX_PASSES: usize = 8;

/// Brings every aggregating role among `roles` up to date, pass after pass until nothing
/// changes, so roles aggregating aggregated roles settle in one sync.
async fn sync_all(roles: &[Arc<Value>], store: &Store) {
    let mut roles = roles.to_vec();
    for _ in 0..MAX_PASSES {
        let mut changed = false;
        for i in 0..roles.len() {
            let Some(rules) = aggregated_rules(&roles[i], &roles) else {
                continue;
            };
            if rules == rules_of(&roles[i]) {
                continue;
            }
            if let Some(updated) = write_rules(store, name_of(&roles[i]), &rules).await {
                roles[i] = Arc::new(updated);
                changed = true;
            }
        }
        if !changed {
            return;
        }
    }
}

/// Sets the rules of the stored role `name`; the updated role, `None` when that failed.
async fn write_rules(store: &Store, name: &str, rules: &[PolicyRule]) -> Option<Value> {
    let wanted = rules_value(rules);
    let update = Box::new(move |current: Option<&Value>| {
        let mut role = current.cloned().ok_or_else(|| {
            apiserver::status::ApiError::not_found("rbac.authorization.k8s.io", "clusterroles", "")
        })?;
        role["rules"] = wanted.clone();
        Ok(role)
    });
    match store
        .update(
            &RequestContext::default(),
            name,
            update,
            &UpdateOptions::default(),
            false,
        )
        .await
    {
        Ok((updated, _)) => Some(updated),
        Err(err) => {
            // A role deleted meanwhile; anything else is retried on the next change.
            tracing::warn!("unable to aggregate clusterrole {name}: {err}");
            None
        }
    }
}

/// Every ClusterRole as stored now (a consistent read, once at start, so the first pass sees
/// what the bootstrap policy just wrote even if the informer has not yet).
async fn stored_roles(store: &Store) -> Vec<Arc<Value>> {
    match store
        .list(&RequestContext::default(), &ListOptions::default())
        .await
    {
        Ok(list) => list
            .get("items")
            .and_then(Value::as_array)
            .map(|items| items.iter().cloned().map(Arc::new).collect())
            .unwrap_or_default(),
        Err(err) => {
            tracing::warn!("unable to list clusterroles to aggregate: {err}");
            Vec::new()
        }
    }
}

/// Starts the controller: aggregates what is stored now, then again after every change
/// `informer` (over ClusterRoles) sees, until `stop`.
pub async fn start(informer: Informer, store: Store, stop: CancellationToken) {
    let changed = Arc::new(Notify::new());
    let notify = changed.clone();
    // Any change can change what any aggregating role selects: all are synced again.
    informer.add_handler(Arc::new(move |_event: &InformerEvent| {
        notify.notify_one();
    }));
    sync_all(&stored_roles(&store).await, &store).await;
    tokio::spawn(async move {
        informer.wait_synced().await;
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = changed.notified() => sync_all(&informer.list(), &store).await,
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn role(name: &str, labels: Value, rules: Value) -> Arc<Value> {
        Arc::new(json!({"metadata": {"name": name, "labels": labels}, "rules": rules}))
    }

    fn aggregating(name: &str, labels: &[&str]) -> Value {
        let selectors: Vec<Value> = labels
            .iter()
            .map(|l| json!({"matchLabels": {*l: "true"}}))
            .collect();
        json!({"metadata": {"name": name},
               "aggregationRule": {"clusterRoleSelectors": selectors}})
    }

    #[test]
    fn rules_of_matching_roles_are_united_by_selector_then_name() {
        let pods = json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]});
        let jobs = json!({"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get"]});
        let cms = json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]});
        let roles = vec![
            role("b", json!({"x": "true"}), json!([jobs, pods])),
            role("a", json!({"x": "true"}), json!([pods])),
            role("c", json!({"y": "true"}), json!([cms])),
            role("d", json!({}), json!([cms])),
        ];
        let rules = aggregated_rules(&aggregating("agg", &["y", "x"]), &roles).unwrap();
        let resources: Vec<String> = rules
            .iter()
            .map(|r| r.resources.clone().unwrap_or_default().join(","))
            .collect();
        assert_eq!(resources, ["configmaps", "pods", "jobs"]);
    }

    #[test]
    fn a_role_without_an_aggregation_rule_aggregates_nothing() {
        assert_eq!(
            aggregated_rules(&json!({"metadata": {"name": "r"}}), &[]),
            None
        );
        assert_eq!(
            aggregated_rules(&aggregating("agg", &["x"]), &[]),
            Some(Vec::new())
        );
    }

    #[test]
    fn a_role_does_not_aggregate_itself() {
        let mut me = aggregating("agg", &["x"]);
        me["metadata"]["labels"] = json!({"x": "true"});
        me["rules"] = json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]);
        let roles = vec![Arc::new(me.clone())];
        assert_eq!(aggregated_rules(&me, &roles), Some(Vec::new()));
    }

    #[test]
    fn empty_lists_and_absent_ones_are_the_same_rule() {
        let a = json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "resourceNames": []});
        let b = json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]});
        assert_eq!(normalized(&a), normalized(&b));
    }
}
