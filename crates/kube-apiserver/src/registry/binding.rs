//! Binding a pod to a node (upstream `BindingREST` in `pkg/registry/core/pod/storage`):
//! `POST pods/{name}/binding` here, and shared with the top-level core `bindings` resource
//! (upstream `LegacyBindingREST`), which calls [`bind`] with the name of the Binding object.

use apiserver::registry::rest::{BoxFuture, CreateOptions, RequestContext, RestStorage};
use apiserver::registry::store::Store;
use apiserver::registry::{FieldError, ResourceInfo, SharedStrategy, Strategy};
use apiserver::status::ApiError;
use apiserver::storage::{self, Operation, StorageError};
use bytes::Bytes;
use serde_json::{Map, Value, json};

use crate::apis::json::{array_at, str_at};

/// Upstream `ValidatePodBinding`. Upstream returns the aggregate as a plain error, which its
/// API renders as a 500; bad input is a 422 Invalid here (see the README's decisions).
fn validate_binding(binding: &Value) -> Result<(), ApiError> {
    let mut errs = Vec::new();
    if let Some(kind) = str_at(binding, "target.kind").filter(|k| !k.is_empty() && *k != "Node") {
        errs.push(FieldError::not_supported(
            "target.kind",
            kind,
            &["Node", "<empty>"],
        ));
    }
    if str_at(binding, "target.name")
        .unwrap_or_default()
        .is_empty()
    {
        errs.push(FieldError::required("target.name", ""));
    }
    if errs.is_empty() {
        return Ok(());
    }
    let name = str_at(binding, "metadata.name").unwrap_or_default();
    Err(ApiError::invalid(
        "",
        "Binding",
        name,
        errs.iter().map(FieldError::to_cause).collect(),
    ))
}

/// upstream `assignPod`'s wrapping of a refusal: 409 on `pods/binding`.
fn refused(pod: &str, why: String) -> ApiError {
    ApiError::conflict("", "pods/binding", pod, &why)
}

/// Upstream `podutil.UpdatePodCondition` for `PodScheduled=True`: the transition time
/// changes only when the status does.
fn set_scheduled(pod: &mut Value) -> Result<(), ApiError> {
    let now = apiserver::registry::store::meta::now_rfc3339();
    let top = pod
        .as_object_mut()
        .ok_or_else(|| ApiError::internal("the pod is not an object"))?;
    let status = top
        .entry("status")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(status) = status.as_object_mut() else {
        return Err(ApiError::internal("the pod status is not an object"));
    };
    let conditions = status
        .entry("conditions")
        .or_insert_with(|| Value::Array(Vec::new()));
    let Some(conditions) = conditions.as_array_mut() else {
        return Err(ApiError::internal("the pod conditions are not a list"));
    };
    let fresh = json!({
        "type": "PodScheduled",
        "status": "True",
        "lastProbeTime": null,
        "lastTransitionTime": now,
    });
    match conditions
        .iter_mut()
        .find(|c| c.get("type") == Some(&json!("PodScheduled")))
    {
        Some(existing) => {
            let mut updated = fresh;
            if existing.get("status") == Some(&json!("True"))
                && let Some(t) = existing.get("lastTransitionTime")
            {
                updated["lastTransitionTime"] = t.clone();
            }
            *existing = updated;
        }
        None => conditions.push(fresh),
    }
    Ok(())
}

/// The pod bound to `node` with the binding's annotations, or why it cannot be.
fn bound_pod(
    mut pod: Value,
    pod_name: &str,
    node: &str,
    annotations: &Map<String, Value>,
) -> Result<Value, ApiError> {
    if pod
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
    {
        return Err(refused(
            pod_name,
            format!("pod {pod_name} is being deleted, cannot be assigned to a host"),
        ));
    }
    if let Some(current) = str_at(&pod, "spec.nodeName").filter(|n| !n.is_empty()) {
        return Err(refused(
            pod_name,
            format!("pod {pod_name} is already assigned to node {current:?}"),
        ));
    }
    if !array_at(&pod, "spec.schedulingGates").is_empty() {
        return Err(refused(
            pod_name,
            format!("pod {pod_name} has non-empty .spec.schedulingGates"),
        ));
    }
    let spec = pod
        .get_mut("spec")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| ApiError::internal("the pod has no spec"))?;
    spec.insert("nodeName".into(), json!(node));
    let meta = pod
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| ApiError::internal("the pod has no metadata"))?;
    let merged = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if !merged.is_object() {
        *merged = Value::Object(Map::new());
    }
    if let Some(merged) = merged.as_object_mut() {
        for (k, v) in annotations {
            merged.insert(k.clone(), v.clone());
        }
    }
    set_scheduled(&mut pod)?;
    Ok(pod)
}

/// Binds the pod the `binding` names (in `ctx.namespace`) to its target node: sets
/// `spec.nodeName`, merges the binding's annotations into the pod's and marks it
/// `PodScheduled`, under the binding's uid and resourceVersion as preconditions. Answers the
/// `Success` Status upstream's create returns (code 201).
pub async fn bind(
    pods: &Store,
    ctx: &RequestContext,
    binding: &Value,
    dry_run: bool,
) -> Result<Value, ApiError> {
    validate_binding(binding)?;
    let pod_name = str_at(binding, "metadata.name")
        .unwrap_or_default()
        .to_string();
    let node = str_at(binding, "target.name")
        .unwrap_or_default()
        .to_string();
    let annotations = binding
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let key = pods.key(&ctx.namespace, &pod_name)?;
    let text = |field: &str| {
        str_at(binding, &format!("metadata.{field}"))
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    let (uid, resource_version) = (text("uid"), text("resourceVersion"));
    let preconditions =
        (uid.is_some() || resource_version.is_some()).then_some(storage::Preconditions {
            uid,
            resource_version,
        });
    let decode = |o: &storage::Object| -> Result<Value, ApiError> {
        serde_json::from_slice(&o.value).map_err(ApiError::internal)
    };
    let to_api = |e: StorageError| match e {
        StorageError::Api(err) => err,
        other => other.to_api_error(Operation::Update, "", "pods", &pod_name),
    };
    if dry_run {
        let current = pods
            .storage()
            .get(&key, storage::GetOptions::default())
            .await
            .map_err(to_api)?
            .ok_or_else(|| ApiError::not_found("", "pods", &pod_name))?;
        if let Some(p) = &preconditions {
            p.check(&key, &current).map_err(to_api)?;
        }
        bound_pod(decode(&current)?, &pod_name, &node, &annotations)?;
    } else {
        let mut run = |cur: Option<&storage::Object>| -> storage::Result<Bytes> {
            let cur =
                cur.ok_or_else(|| StorageError::Api(ApiError::not_found("", "pods", &pod_name)))?;
            let pod = decode(cur).map_err(StorageError::Api)?;
            let bound =
                bound_pod(pod, &pod_name, &node, &annotations).map_err(StorageError::Api)?;
            serde_json::to_vec(&bound)
                .map(Bytes::from)
                .map_err(StorageError::internal)
        };
        pods.storage()
            .guaranteed_update(&key, false, preconditions, &mut run)
            .await
            .map_err(to_api)?;
    }
    Ok(json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    }))
}

/// `pods/{name}/binding` (create only).
pub struct BindingStorage {
    pods: Store,
    info: ResourceInfo,
}

impl BindingStorage {
    /// The binding subresource over the pods' store.
    pub fn new(pods: Store) -> Self {
        let info = ResourceInfo {
            version: "v1".into(),
            kind: "Binding".into(),
            resource: pods.info().resource.clone(),
            namespaced: true,
            ..Default::default()
        };
        BindingStorage { pods, info }
    }

    async fn create_inner(
        &self,
        ctx: &RequestContext,
        binding: Value,
        opts: &CreateOptions,
    ) -> Result<Value, ApiError> {
        if str_at(&binding, "metadata.name").unwrap_or_default() != ctx.name {
            return Err(ApiError::bad_request(
                "name in URL does not match name in Binding object",
            ));
        }
        bind(&self.pods, ctx, &binding, opts.is_dry_run()).await
    }
}

impl RestStorage for BindingStorage {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    fn verbs(&self) -> Vec<&'static str> {
        vec!["create"]
    }

    fn create<'a>(
        &'a self,
        ctx: &'a RequestContext,
        obj: Value,
        opts: &'a CreateOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(self.create_inner(ctx, obj, opts))
    }
}

/// The top-level core `bindings` resource (upstream `LegacyBindingREST`): create only, the
/// Binding's own name naming the pod.
pub struct BindingsStorage {
    strategy: SharedStrategy,
    pods: Store,
}

impl BindingsStorage {
    /// `bindings` (described by `strategy`) over the pods store.
    pub fn new(strategy: SharedStrategy, pods: Store) -> Self {
        BindingsStorage { strategy, pods }
    }
}

impl RestStorage for BindingsStorage {
    /// Not stored (upstream's REST for it is no `StorageVersionProvider`): discovery gives no
    /// `storageVersionHash`.
    fn is_stored(&self) -> bool {
        false
    }

    fn info(&self) -> &ResourceInfo {
        self.strategy.info()
    }

    fn verbs(&self) -> Vec<&'static str> {
        vec!["create"]
    }

    fn strategy(&self) -> Option<&dyn Strategy> {
        Some(self.strategy.as_ref())
    }

    fn create<'a>(
        &'a self,
        ctx: &'a RequestContext,
        obj: Value,
        opts: &'a CreateOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(async move { bind(&self.pods, ctx, &obj, opts.is_dry_run()).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invalid_binding_is_refused_as_invalid_with_each_field() {
        let err = validate_binding(&json!({"metadata": {"name": "p"}, "target": {"kind": "Pod"}}))
            .unwrap_err();
        assert_eq!(err.code(), http::StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(err.reason(), "Invalid");
        assert_eq!(
            err.0.message,
            "Binding \"p\" is invalid: [target.kind: Unsupported value: \"Pod\": supported values: \"Node\", \"<empty>\", target.name: Required value]"
        );
        assert!(validate_binding(&json!({"target": {"name": "n1"}})).is_ok());
    }

    #[test]
    fn a_bound_pod_is_refused_with_upstreams_conflict() {
        let pod = json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n0"}});
        let err = bound_pod(pod, "p", "n1", &Map::new()).unwrap_err();
        assert_eq!(err.code(), http::StatusCode::CONFLICT);
        assert_eq!(
            err.0.message,
            "Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to node \"n0\""
        );
    }

    #[test]
    fn binding_sets_node_annotations_and_scheduled_condition() {
        let pod = json!({"metadata": {"name": "p", "annotations": {"a": "1"}}, "spec": {},
            "status": {"phase": "Pending"}});
        let annotations = json!({"b": "2"}).as_object().cloned().unwrap();
        let bound = bound_pod(pod, "p", "n1", &annotations).unwrap();
        assert_eq!(bound["spec"]["nodeName"], "n1");
        assert_eq!(
            bound["metadata"]["annotations"],
            json!({"a": "1", "b": "2"})
        );
        assert_eq!(bound["status"]["conditions"][0]["type"], "PodScheduled");
        assert_eq!(bound["status"]["conditions"][0]["status"], "True");
    }
}
