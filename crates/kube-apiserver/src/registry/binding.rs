//! Binding a pod to a node (upstream `BindingREST`): what both the `pods/binding` subresource
//! and the top-level core `bindings` resource (upstream `LegacyBindingREST`, create only) do.
//!
//! A binding sets the pod's `spec.nodeName`, merges the binding's annotations into the pod's and
//! sets the `PodScheduled` condition, directly in storage (the pod strategy's update rules,
//! which forbid changing `spec.nodeName`, do not apply). [`assign_pod`] is the shared logic;
//! [`BindingsStorage`] serves `bindings`.

use apiserver::registry::rest::{BoxFuture, CreateOptions, RequestContext, RestStorage};
use apiserver::registry::store::Store;
use apiserver::registry::store::meta::now_rfc3339;
use apiserver::registry::{FieldError, ResourceInfo, SharedStrategy, Strategy, invalid};
use apiserver::status::ApiError;
use apiserver::storage::errors::Operation;
use apiserver::storage::{self, Object, StorageError};
use bytes::Bytes;
use serde_json::{Map, Value, json};

/// Upstream `ValidatePodBinding`: `target.kind` is `Node` or empty, `target.name` is set.
pub fn validate_binding(binding: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let target = |field: &str| {
        binding
            .pointer(&format!("/target/{field}"))
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    if !target("kind").is_empty() && target("kind") != "Node" {
        errs.push(FieldError::not_supported(
            "target.kind",
            target("kind"),
            &["Node", "<empty>"],
        ));
    }
    if target("name").is_empty() {
        errs.push(FieldError::required("target.name", ""));
    }
    errs
}

/// The `Success` Status a binding answers with.
pub fn success_status() -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    })
}

/// Why a binding was refused, before it is worded as upstream's 409.
fn refusal(message: String) -> StorageError {
    StorageError::Internal(message)
}

/// Binds the pod named by `binding.metadata.name` in `namespace` to `binding.target.name`
/// (upstream `BindingREST.Create` after its name check): validates the binding, then updates
/// the pod in storage unless `dry_run`. Errors as upstream: 422 for an invalid binding, 404 for
/// a missing pod, 409 `pods/binding` when the pod is being deleted, already bound, gated, or
/// its UID or resourceVersion differ from the binding's.
pub async fn assign_pod(
    pods: &Store,
    namespace: &str,
    binding: &Value,
    dry_run: bool,
) -> Result<(), ApiError> {
    let pod_name = binding
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let errs = validate_binding(binding);
    if !errs.is_empty() {
        let info = ResourceInfo {
            kind: "Binding".into(),
            ..Default::default()
        };
        return Err(invalid(&info, &pod_name, &errs));
    }
    let meta_str = |field: &str| {
        binding
            .pointer(&format!("/metadata/{field}"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let (uid, resource_version) = (meta_str("uid"), meta_str("resourceVersion"));
    let node = binding
        .pointer("/target/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let annotations = binding
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let key = pods.key(namespace, &pod_name)?;
    let now = now_rfc3339();
    let mut run = |cur: Option<&Object>| -> storage::Result<Bytes> {
        let cur = cur.ok_or_else(|| StorageError::KeyNotFound {
            key: String::new(),
            resource_version: 0,
        })?;
        let mut pod: Value = serde_json::from_slice(&cur.value)
            .map_err(|e| StorageError::Internal(e.to_string()))?;
        bind(
            &mut pod,
            &pod_name,
            uid.as_deref(),
            resource_version.as_deref(),
            &node,
            &annotations,
            &now,
        )
        .map_err(refusal)?;
        serde_json::to_vec(&pod)
            .map(Bytes::from)
            .map_err(|e| StorageError::Internal(e.to_string()))
    };
    let result = if dry_run {
        match pods
            .storage()
            .get(&key, storage::GetOptions::default())
            .await
        {
            Ok(Some(cur)) => run(Some(&cur)).map(|_| ()),
            Ok(None) => run(None).map(|_| ()),
            Err(e) => Err(e),
        }
    } else {
        pods.storage()
            .guaranteed_update(&key, false, None, &mut run)
            .await
            .map(|_| ())
    };
    result.map_err(|err| match err {
        StorageError::Internal(message) => {
            ApiError::conflict("", "pods/binding", &pod_name, &message)
        }
        other => other.to_api_error(Operation::Update, "", "pods", &pod_name),
    })
}

/// The change a binding makes to a stored pod (upstream `setPodNodeNameAndMetadata`).
fn bind(
    pod: &mut Value,
    name: &str,
    uid: Option<&str>,
    resource_version: Option<&str>,
    node: &str,
    annotations: &Map<String, Value>,
    now: &str,
) -> Result<(), String> {
    let meta_str = |pod: &Value, field: &str| {
        pod.pointer(&format!("/metadata/{field}"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    if pod
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
    {
        return Err(format!(
            "pod {name} is being deleted, cannot be assigned to a host"
        ));
    }
    if let Some(uid) = uid
        && meta_str(pod, "uid") != uid
    {
        return Err(format!(
            "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
            meta_str(pod, "uid")
        ));
    }
    if let Some(rv) = resource_version
        && meta_str(pod, "resourceVersion") != rv
    {
        return Err(format!(
            "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
            meta_str(pod, "resourceVersion")
        ));
    }
    let bound = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !bound.is_empty() {
        return Err(format!("pod {name} is already assigned to node {bound:?}"));
    }
    if pod
        .pointer("/spec/schedulingGates")
        .and_then(Value::as_array)
        .is_some_and(|g| !g.is_empty())
    {
        return Err(format!("pod {name} has non-empty .spec.schedulingGates"));
    }
    let Some(top) = pod.as_object_mut() else {
        return Err("the stored pod is not an object".into());
    };
    let spec = top.entry("spec").or_insert_with(|| json!({}));
    if let Some(spec) = spec.as_object_mut() {
        spec.insert("nodeName".into(), json!(node));
    }
    if !annotations.is_empty() {
        let meta = top.entry("metadata").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            let pod_annotations = meta.entry("annotations").or_insert_with(|| json!({}));
            if !pod_annotations.is_object() {
                *pod_annotations = json!({});
            }
            if let Some(map) = pod_annotations.as_object_mut() {
                for (k, v) in annotations {
                    map.insert(k.clone(), v.clone());
                }
            }
        }
    }
    set_scheduled(top, now);
    Ok(())
}

/// Upstream `UpdatePodCondition` with `PodScheduled=True`: a new condition gets the transition
/// time now; an existing one keeps it unless its status changes.
fn set_scheduled(pod: &mut Map<String, Value>, now: &str) {
    let status = pod.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    let Some(status) = status.as_object_mut() else {
        return;
    };
    let conditions = status.entry("conditions").or_insert_with(|| json!([]));
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Some(conditions) = conditions.as_array_mut() else {
        return;
    };
    match conditions
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("PodScheduled"))
    {
        Some(existing) => {
            if existing.get("status").and_then(Value::as_str) != Some("True") {
                existing["lastTransitionTime"] = json!(now);
            }
            existing["status"] = json!("True");
            if let Some(c) = existing.as_object_mut() {
                c.remove("reason");
                c.remove("message");
            }
        }
        None => conditions.push(json!({
            "type": "PodScheduled",
            "status": "True",
            "lastProbeTime": null,
            "lastTransitionTime": now,
        })),
    }
}

/// The top-level core `bindings` resource: create only, the binding's own name naming the pod.
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
        Box::pin(async move {
            assign_pod(&self.pods, &ctx.namespace, &obj, opts.is_dry_run()).await?;
            Ok(success_status())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod() -> Value {
        json!({"metadata": {"name": "p", "uid": "u1", "resourceVersion": "5"},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
            "status": {"phase": "Pending"}})
    }

    #[test]
    fn binding_sets_node_annotations_and_condition() {
        let mut p = pod();
        let mut ann = Map::new();
        ann.insert("a".into(), json!("b"));
        bind(
            &mut p,
            "p",
            Some("u1"),
            None,
            "n1",
            &ann,
            "2024-01-01T00:00:00Z",
        )
        .unwrap();
        assert_eq!(p["spec"]["nodeName"], "n1");
        assert_eq!(p["metadata"]["annotations"], json!({"a": "b"}));
        assert_eq!(
            p["status"]["conditions"],
            json!([{"type": "PodScheduled", "status": "True", "lastProbeTime": null,
                "lastTransitionTime": "2024-01-01T00:00:00Z"}])
        );
        assert_eq!(
            bind(&mut p, "p", None, None, "n2", &Map::new(), "t").unwrap_err(),
            "pod p is already assigned to node \"n1\""
        );
    }

    #[test]
    fn binding_refusals_as_upstream() {
        let mut p = pod();
        assert!(
            bind(&mut p, "p", Some("other"), None, "n", &Map::new(), "t")
                .unwrap_err()
                .starts_with("Precondition failed: UID in precondition: other")
        );
        let mut gated = pod();
        gated["spec"]["schedulingGates"] = json!([{"name": "g"}]);
        assert_eq!(
            bind(&mut gated, "p", None, None, "n", &Map::new(), "t").unwrap_err(),
            "pod p has non-empty .spec.schedulingGates"
        );
        let errs = validate_binding(&json!({"metadata": {"name": "p"}, "target": {"kind": "Pod"}}));
        assert_eq!(
            errs.iter().map(ToString::to_string).collect::<Vec<_>>(),
            vec![
                "target.kind: Unsupported value: \"Pod\": supported values: \"Node\", \"<empty>\"",
                "target.name: Required value"
            ]
        );
    }
}
