//! `pods/{name}/eviction` (upstream `EvictionREST` in `pkg/registry/core/pod/storage`): a
//! delete that respects the PodDisruptionBudget selecting the pod. A budget with no
//! disruptions left refuses with 429; a granted eviction takes one disruption from the budget
//! (recording the pod in `status.disruptedPods`), marks the pod `DisruptionTarget` and deletes
//! it as a DELETE would (gracefully for pods on a node).

use std::collections::BTreeMap;
use std::time::Duration;

use apiserver::registry::ResourceInfo;
use apiserver::registry::rest::{
    BoxFuture, CreateOptions, DeleteOptions, GetOptions, ListOptions, Preconditions,
    RequestContext, RestStorage, UpdateFunc, UpdateOptions,
};
use apiserver::registry::store::{StatusStore, Store};
use apiserver::status::{ApiError, StatusCause, StatusDetails, reason};
use apiserver::storage::LabelSelector;
use http::StatusCode;
use serde_json::{Map, Value, json};

use super::pod::StoreCell;
use super::scale::selector_string;
use crate::apis::json::{array_at, i64_at, str_at};

/// Upstream `MaxDisruptedPodSize`.
const MAX_DISRUPTED_PODS: usize = 2000;
/// Attempts on conflicts (upstream `EvictionsRetry`: 20 steps).
const RETRIES: usize = 20;
/// The pause between attempts (upstream: 500 ms with jitter; shorter here, the conflicts
/// are local).
const RETRY_PAUSE: Duration = Duration::from_millis(50);
/// Upstream's refusal.
const VIOLATES_BUDGET: &str = "Cannot evict pod as it would violate the pod's disruption budget.";

/// 429 with a `DisruptionBudget` cause (upstream `NewTooManyRequests` plus the cause).
fn too_many_requests(retry_after: i32, cause: String) -> ApiError {
    ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        reason::TOO_MANY_REQUESTS,
        VIOLATES_BUDGET,
    )
    .with_details(StatusDetails {
        retry_after_seconds: retry_after,
        causes: vec![StatusCause {
            reason: "DisruptionBudget".into(),
            message: cause,
            ..Default::default()
        }],
        ..Default::default()
    })
}

/// Upstream `createTooManyRequestsError`.
fn budget_in_progress(pdb: &str) -> ApiError {
    too_many_requests(
        10,
        format!("The disruption budget {pdb} is still being processed by the server."),
    )
}

fn forbidden(pdb: &str, why: &str) -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        reason::FORBIDDEN,
        format!("poddisruptionbudget.policy {pdb:?} is forbidden: {why}"),
    )
    .with_details(StatusDetails {
        name: pdb.into(),
        group: "policy".into(),
        kind: "poddisruptionbudget".into(),
        ..Default::default()
    })
}

fn phase(pod: &Value) -> &str {
    str_at(pod, "status.phase").unwrap_or_default()
}

fn is_deleting(pod: &Value) -> bool {
    pod.pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

/// Upstream `canIgnorePDB`: terminal, pending and terminating pods are deleted without
/// asking their budget.
fn can_ignore_pdb(pod: &Value) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed" | "Pending") || is_deleting(pod)
}

/// Upstream `shouldEnforceResourceVersion`.
fn should_enforce_resource_version(pod: &Value) -> bool {
    !matches!(phase(pod), "Succeeded" | "Failed") && !is_deleting(pod)
}

/// Upstream `IsPodReady`.
fn is_ready(pod: &Value) -> bool {
    array_at(pod, "status.conditions")
        .iter()
        .any(|c| str_at(c, "type") == Some("Ready") && str_at(c, "status") == Some("True"))
}

/// Whether the budget's selector (`metav1.LabelSelectorAsSelector`) selects the pod: a
/// missing selector selects nothing, an empty one everything; an invalid one nothing.
fn selects(pdb: &Value, pod: &Value) -> bool {
    let Some(selector) = pdb.pointer("/spec/selector").filter(|s| !s.is_null()) else {
        return false;
    };
    let Ok(parsed) = LabelSelector::parse(&selector_string(Some(selector))) else {
        return false;
    };
    let labels: BTreeMap<String, String> = pod
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default();
    parsed.matches(&labels)
}

fn set_condition(list: &mut Vec<Value>, fresh: Value) {
    let kind = fresh.get("type").cloned();
    match list.iter_mut().find(|c| c.get("type") == kind.as_ref()) {
        Some(existing) => {
            let mut updated = fresh;
            if existing.get("status") == updated.get("status")
                && let Some(t) = existing.get("lastTransitionTime")
            {
                updated["lastTransitionTime"] = t.clone();
            }
            *existing = updated;
        }
        None => list.push(fresh),
    }
}

/// Upstream `checkAndDecrement` on a budget: refuses, or returns the budget with one
/// disruption taken (and the pod recorded unless `dry_run`).
fn check_and_decrement(pdb: &Value, pod_name: &str, dry_run: bool) -> Result<Value, ApiError> {
    let name = str_at(pdb, "metadata.name").unwrap_or_default();
    let observed = i64_at(pdb, "status.observedGeneration").unwrap_or(0);
    if observed < i64_at(pdb, "metadata.generation").unwrap_or(0) {
        return Err(budget_in_progress(name));
    }
    let allowed = i64_at(pdb, "status.disruptionsAllowed").unwrap_or(0);
    if allowed < 0 {
        return Err(forbidden(name, "pdb disruptions allowed is negative"));
    }
    let disrupted = pdb
        .pointer("/status/disruptedPods")
        .and_then(Value::as_object)
        .map_or(0, Map::len);
    if disrupted > MAX_DISRUPTED_PODS {
        return Err(forbidden(
            name,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if allowed == 0 {
        return Err(too_many_requests(
            0,
            format!(
                "The disruption budget {name} needs {} healthy pods and has {} currently",
                i64_at(pdb, "status.desiredHealthy").unwrap_or(0),
                i64_at(pdb, "status.currentHealthy").unwrap_or(0)
            ),
        ));
    }
    let mut pdb = pdb.clone();
    let now = apiserver::registry::store::meta::now_rfc3339();
    let status = pdb
        .as_object_mut()
        .ok_or_else(|| ApiError::internal("the budget is not an object"))?
        .entry("status")
        .or_insert_with(|| json!({}));
    let status = status
        .as_object_mut()
        .ok_or_else(|| ApiError::internal("the budget status is not an object"))?;
    status.insert("disruptionsAllowed".into(), json!(allowed - 1));
    if allowed - 1 == 0 {
        // Upstream `UpdateDisruptionAllowedCondition`.
        let conditions = status.entry("conditions").or_insert_with(|| json!([]));
        if let Some(list) = conditions.as_array_mut() {
            set_condition(
                list,
                json!({
                    "type": "DisruptionAllowed",
                    "status": "False",
                    "observedGeneration": observed,
                    "lastTransitionTime": now,
                    "reason": "InsufficientPods",
                    "message": "",
                }),
            );
        }
    }
    if !dry_run {
        let pods = status.entry("disruptedPods").or_insert_with(|| json!({}));
        if !pods.is_object() {
            *pods = json!({});
        }
        if let Some(pods) = pods.as_object_mut() {
            pods.insert(pod_name.into(), json!(now));
        }
    }
    Ok(pdb)
}

fn is_conflict(err: &ApiError) -> bool {
    err.code() == StatusCode::CONFLICT
}

/// `pods/{name}/eviction` (create with a `policy/v1` or `policy/v1beta1` Eviction).
pub struct EvictionStorage {
    pods: Store,
    pod_status: StatusStore,
    pdbs: StoreCell,
    info: ResourceInfo,
}

impl EvictionStorage {
    /// The eviction subresource over the pods' store, with the budgets' store once installed.
    pub fn new(pods: Store, pdbs: StoreCell) -> Self {
        let info = ResourceInfo {
            group: "policy".into(),
            version: "v1".into(),
            kind: "Eviction".into(),
            resource: pods.info().resource.clone(),
            namespaced: true,
            ..Default::default()
        };
        EvictionStorage {
            pod_status: StatusStore::new(&pods),
            pods,
            pdbs,
            info,
        }
    }

    /// Upstream `propagateDryRun`: the eviction's delete options with the request's dry run.
    fn delete_options(eviction: &Value, opts: &CreateOptions) -> Result<DeleteOptions, ApiError> {
        let mut delete: DeleteOptions = match eviction.get("deleteOptions") {
            Some(v) if !v.is_null() => serde_json::from_value(v.clone())
                .map_err(|e| ApiError::bad_request(format!("invalid deleteOptions: {e}")))?,
            _ => DeleteOptions::default(),
        };
        if delete.dry_run.is_empty() {
            delete.dry_run = opts.dry_run.clone();
        } else if !opts.dry_run.is_empty() && opts.dry_run != delete.dry_run {
            return Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "",
                format!(
                    "Non-matching dry-run options in request and content: [{}] and [{}]",
                    opts.dry_run.join(" "),
                    delete.dry_run.join(" ")
                ),
            ));
        }
        Ok(delete)
    }

    /// Upstream `addConditionAndDeletePod`: the `DisruptionTarget` condition (checked
    /// against the options' preconditions), then the delete.
    async fn add_condition_and_delete(
        &self,
        ctx: &RequestContext,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<(), ApiError> {
        let mut opts = opts.clone();
        if !opts.is_dry_run() {
            let preconditions = opts.preconditions.clone().unwrap_or_default();
            let pod_name = name.to_string();
            let update: UpdateFunc = Box::new(move |cur: Option<&Value>| {
                let mut pod = cur
                    .cloned()
                    .ok_or_else(|| ApiError::not_found("", "pods", &pod_name))?;
                let conflict = |why: String| ApiError::conflict("", "Pod", &pod_name, &why);
                let have_uid = str_at(&pod, "metadata.uid").unwrap_or_default().to_string();
                if let Some(uid) = preconditions.uid.as_ref().filter(|u| !u.is_empty())
                    && *uid != have_uid
                {
                    return Err(conflict(format!(
                        "the UID in the precondition ({uid}) does not match the UID in record ({have_uid}). The object might have been deleted and then recreated"
                    )));
                }
                let have_rv = str_at(&pod, "metadata.resourceVersion")
                    .unwrap_or_default()
                    .to_string();
                if let Some(rv) = preconditions
                    .resource_version
                    .as_ref()
                    .filter(|r| !r.is_empty())
                    && *rv != have_rv
                {
                    return Err(conflict(format!(
                        "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({have_rv}). The object might have been modified"
                    )));
                }
                let now = apiserver::registry::store::meta::now_rfc3339();
                let status = pod
                    .as_object_mut()
                    .ok_or_else(|| ApiError::internal("the pod is not an object"))?
                    .entry("status")
                    .or_insert_with(|| json!({}));
                let conditions = status
                    .as_object_mut()
                    .ok_or_else(|| ApiError::internal("the pod status is not an object"))?
                    .entry("conditions")
                    .or_insert_with(|| json!([]));
                if let Some(list) = conditions.as_array_mut() {
                    set_condition(
                        list,
                        json!({
                            "type": "DisruptionTarget",
                            "status": "True",
                            "lastProbeTime": null,
                            "lastTransitionTime": now,
                            "reason": "EvictionByEvictionAPI",
                            "message": "Eviction API: evicting",
                        }),
                    );
                }
                Ok(pod)
            });
            let (updated, _) = self
                .pod_status
                .update(ctx, name, update, &UpdateOptions::default(), false)
                .await?;
            // The condition moved the resourceVersion the caller's precondition named.
            if let Some(p) = opts.preconditions.as_mut()
                && p.resource_version.is_some()
            {
                p.resource_version = Some(
                    str_at(&updated, "metadata.resourceVersion")
                        .unwrap_or_default()
                        .into(),
                );
            }
        }
        self.pods.delete(ctx, name, &opts).await.map(|_| ())
    }

    /// The budgets of the pod's namespace that select it.
    async fn budgets(&self, ctx: &RequestContext, pod: &Value) -> Result<Vec<Value>, ApiError> {
        let Some(store) = self.pdbs.get() else {
            return Ok(Vec::new());
        };
        let list = store.list(ctx, &ListOptions::default()).await?;
        Ok(array_at(&list, "items")
            .iter()
            .filter(|pdb| selects(pdb, pod))
            .cloned()
            .collect())
    }

    /// Takes one disruption from the budget, re-reading it after conflicts.
    async fn decrement(
        &self,
        ctx: &RequestContext,
        pdb: Value,
        pod_name: &str,
        dry_run: bool,
    ) -> Result<(), ApiError> {
        let Some(store) = self.pdbs.get() else {
            return Ok(());
        };
        let status_store = StatusStore::new(store);
        let name = str_at(&pdb, "metadata.name")
            .unwrap_or_default()
            .to_string();
        let mut current = pdb;
        for attempt in 0..RETRIES {
            if attempt > 0 {
                tokio::time::sleep(RETRY_PAUSE).await;
                current = store.get(ctx, &name, &GetOptions::default()).await?;
            }
            let updated = check_and_decrement(&current, pod_name, dry_run)?;
            if dry_run {
                return Ok(());
            }
            let replace: UpdateFunc = Box::new(move |_| Ok(updated.clone()));
            match status_store
                .update(ctx, &name, replace, &UpdateOptions::default(), false)
                .await
            {
                Err(err) if is_conflict(&err) => continue,
                other => return other.map(|_| ()),
            }
        }
        Err(ApiError::timeout(
            &format!("couldn't update PodDisruptionBudget {name:?} due to conflicts"),
            10,
        ))
    }

    async fn evict(
        &self,
        ctx: &RequestContext,
        eviction: Value,
        opts: &CreateOptions,
    ) -> Result<Value, ApiError> {
        let name = str_at(&eviction, "metadata.name")
            .unwrap_or_default()
            .to_string();
        if name != ctx.name {
            return Err(ApiError::bad_request(
                "name in URL does not match name in Eviction object",
            ));
        }
        let original = Self::delete_options(&eviction, opts)?;
        let rv_unset = original
            .preconditions
            .as_ref()
            .is_none_or(|p| p.resource_version.is_none());
        let success = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Success", "code": 201,
        });

        // Pods whose budget does not matter are deleted right away; conflicts are retried
        // unless the caller pinned a resourceVersion.
        let mut attempt = 0;
        let pod = loop {
            let pod = self.pods.get(ctx, &name, &GetOptions::default()).await?;
            if !can_ignore_pdb(&pod) {
                break pod;
            }
            let mut delete = original.clone();
            if should_enforce_resource_version(&pod) && rv_unset {
                delete.preconditions = Some(Preconditions {
                    resource_version: str_at(&pod, "metadata.resourceVersion").map(Into::into),
                    ..delete.preconditions.unwrap_or_default()
                });
            }
            match self.add_condition_and_delete(ctx, &name, &delete).await {
                Ok(()) => return Ok(success),
                Err(err) if is_conflict(&err) && rv_unset && attempt + 1 < RETRIES => {
                    attempt += 1;
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
                Err(err) => return Err(err),
            }
        };

        let budgets = self.budgets(ctx, &pod).await?;
        if budgets.len() > 1 {
            return Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "",
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            ));
        }
        let mut pin_resource_version = false;
        let mut budget_name = String::new();
        if let Some(pdb) = budgets.into_iter().next() {
            budget_name = str_at(&pdb, "metadata.name")
                .unwrap_or_default()
                .to_string();
            let unhealthy_ok = !is_ready(&pod)
                && (str_at(&pdb, "spec.unhealthyPodEvictionPolicy") == Some("AlwaysAllow") || {
                    let desired = i64_at(&pdb, "status.desiredHealthy").unwrap_or(0);
                    i64_at(&pdb, "status.currentHealthy").unwrap_or(0) >= desired && desired > 0
                });
            if unhealthy_ok {
                // An unready pod does not count as healthy: deleting it takes nothing from
                // the budget, as long as it does not become ready meanwhile.
                pin_resource_version = true;
            } else {
                self.decrement(ctx, pdb, &name, original.is_dry_run())
                    .await?;
            }
        }
        let mut delete = original.clone();
        if pin_resource_version {
            delete.preconditions = Some(Preconditions {
                resource_version: str_at(&pod, "metadata.resourceVersion").map(Into::into),
                ..delete.preconditions.unwrap_or_default()
            });
        }
        match self.add_condition_and_delete(ctx, &name, &delete).await {
            Ok(()) => Ok(success),
            Err(err) if is_conflict(&err) && pin_resource_version && rv_unset => {
                Err(budget_in_progress(&budget_name))
            }
            Err(err) => Err(err),
        }
    }
}

impl RestStorage for EvictionStorage {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    fn verbs(&self) -> Vec<&'static str> {
        vec!["create"]
    }

    fn accepts_group_version(&self, api_version: &str) -> bool {
        matches!(api_version, "policy/v1" | "policy/v1beta1")
    }

    fn create<'a>(
        &'a self,
        ctx: &'a RequestContext,
        obj: Value,
        opts: &'a CreateOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(self.evict(ctx, obj, opts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pdb(allowed: i64) -> Value {
        json!({"metadata": {"name": "budget", "generation": 1},
            "spec": {"selector": {"matchLabels": {"app": "web"}}},
            "status": {"observedGeneration": 1, "disruptionsAllowed": allowed,
                "desiredHealthy": 2, "currentHealthy": 2, "expectedPods": 2}})
    }

    #[test]
    fn a_budget_without_disruptions_refuses_with_upstreams_429() {
        let err = check_and_decrement(&pdb(0), "p", false).unwrap_err();
        assert_eq!(err.code(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(err.0.message, VIOLATES_BUDGET);
        let details = err.0.details.clone().unwrap();
        assert_eq!(details.causes[0].reason, "DisruptionBudget");
        assert_eq!(
            details.causes[0].message,
            "The disruption budget budget needs 2 healthy pods and has 2 currently"
        );
        let mut stale = pdb(1);
        stale["metadata"]["generation"] = json!(2);
        let err = check_and_decrement(&stale, "p", false).unwrap_err();
        assert_eq!(err.0.details.unwrap().retry_after_seconds, 10);
        let err = check_and_decrement(&pdb(-1), "p", false).unwrap_err();
        assert_eq!(
            err.0.message,
            "poddisruptionbudget.policy \"budget\" is forbidden: pdb disruptions allowed is negative"
        );
    }

    #[test]
    fn a_granted_eviction_takes_one_disruption_and_records_the_pod() {
        let taken = check_and_decrement(&pdb(1), "p", false).unwrap();
        assert_eq!(taken["status"]["disruptionsAllowed"], 0);
        assert!(taken["status"]["disruptedPods"]["p"].is_string());
        assert_eq!(
            taken["status"]["conditions"][0]["reason"],
            "InsufficientPods"
        );
        let dry = check_and_decrement(&pdb(2), "p", true).unwrap();
        assert_eq!(dry["status"]["disruptionsAllowed"], 1);
        assert!(dry["status"].get("disruptedPods").is_none());
    }

    #[test]
    fn budgets_select_pods_as_upstream() {
        let pod = json!({"metadata": {"labels": {"app": "web"}}});
        assert!(selects(&pdb(1), &pod));
        assert!(!selects(
            &pdb(1),
            &json!({"metadata": {"labels": {"app": "db"}}})
        ));
        // An empty selector selects every pod, a missing one none.
        assert!(selects(&json!({"spec": {"selector": {}}}), &pod));
        assert!(!selects(&json!({"spec": {}}), &pod));
    }

    #[test]
    fn pending_and_terminating_pods_skip_the_budget() {
        assert!(can_ignore_pdb(&json!({"status": {"phase": "Pending"}})));
        assert!(can_ignore_pdb(
            &json!({"metadata": {"deletionTimestamp": "x"}, "status": {"phase": "Running"}})
        ));
        assert!(!can_ignore_pdb(&json!({"status": {"phase": "Running"}})));
    }
}
