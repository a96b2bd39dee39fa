//! The `scale` subresource (`autoscaling/v1` `Scale`) of deployments, replicasets,
//! statefulsets and replicationcontrollers: a view of the parent's `spec.replicas`,
//! `status.replicas` and selector; updates change only `spec.replicas`.

use apiserver::registry::rest::{
    BoxFuture, GetOptions, RequestContext, RestStorage, UpdateFunc, UpdateOptions,
};
use apiserver::registry::store::Store;
use apiserver::registry::{FieldError, ResourceInfo, invalid};
use apiserver::status::ApiError;
use serde_json::{Map, Value, json};

/// The resources served with a scale subresource, as `(group, resource)`.
pub const SCALED: [(&str, &str); 4] = [
    ("apps", "deployments"),
    ("apps", "replicasets"),
    ("apps", "statefulsets"),
    ("", "replicationcontrollers"),
];

/// `<resource>/scale` over the parent's store.
pub struct ScaleStorage {
    store: Store,
    info: ResourceInfo,
}

impl ScaleStorage {
    /// The scale subresource of `store`'s resource.
    pub fn new(store: Store) -> Self {
        let parent = store.info();
        let info = ResourceInfo {
            group: "autoscaling".into(),
            version: "v1".into(),
            kind: "Scale".into(),
            list_kind: "ScaleList".into(),
            resource: parent.resource.clone(),
            singular: String::new(),
            namespaced: parent.namespaced,
            short_names: Vec::new(),
            categories: Vec::new(),
        };
        ScaleStorage { store, info }
    }

    async fn update_inner(
        &self,
        ctx: &RequestContext,
        name: &str,
        update: UpdateFunc,
        opts: &UpdateOptions,
    ) -> Result<(Value, bool), ApiError> {
        let mut update = update;
        let scale_info = self.info.clone();
        let parent_resource = self.store.info().resource.clone();
        let name_owned = name.to_string();
        let parent_update: UpdateFunc = Box::new(move |cur: Option<&Value>| {
            let cur = cur.ok_or_else(|| {
                ApiError::not_found(&scale_info.group, &parent_resource, &name_owned)
            })?;
            let scale = to_scale(cur);
            let new_scale = update(Some(&scale))?;
            let replicas = validate(&scale_info, &name_owned, &new_scale)?;
            let mut parent = cur.clone();
            if let Some(rv) = new_scale
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .filter(|rv| !rv.is_empty())
                && let Some(meta) = parent.get_mut("metadata").and_then(Value::as_object_mut)
            {
                meta.insert("resourceVersion".into(), json!(rv));
            }
            let spec = parent
                .as_object_mut()
                .ok_or_else(|| ApiError::internal("object is not a map"))?
                .entry("spec")
                .or_insert_with(|| json!({}));
            if let Some(spec) = spec.as_object_mut() {
                spec.insert("replicas".into(), json!(replicas));
            }
            Ok(parent)
        });
        let (parent, _) = self
            .store
            .update(ctx, name, parent_update, opts, false)
            .await?;
        Ok((to_scale(&parent), false))
    }
}

/// `spec.replicas` of the new Scale, validated as upstream (`>= 0`).
fn validate(info: &ResourceInfo, name: &str, scale: &Value) -> Result<i64, ApiError> {
    let replicas = scale
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if replicas < 0 {
        return Err(invalid(
            info,
            name,
            &[FieldError::invalid(
                "spec.replicas",
                replicas,
                "must be greater than or equal to 0",
            )],
        ));
    }
    Ok(replicas)
}

/// The Scale of a parent object (upstream `scaleFromDeployment` and friends).
pub fn to_scale(parent: &Value) -> Value {
    let mut meta = Map::new();
    for field in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = parent.pointer(&format!("/metadata/{field}")) {
            meta.insert(field.into(), v.clone());
        }
    }
    let mut spec = Map::new();
    // ScaleSpec.replicas is omitempty.
    if let Some(r) = parent
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .filter(|r| *r != 0)
    {
        spec.insert("replicas".into(), json!(r));
    }
    let mut status = Map::new();
    status.insert(
        "replicas".into(),
        json!(
            parent
                .pointer("/status/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(0)
        ),
    );
    let selector = selector_string(parent.pointer("/spec/selector"));
    if !selector.is_empty() {
        status.insert("selector".into(), json!(selector));
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": meta,
        "spec": spec,
        "status": status,
    })
}

/// A selector as a label selector string: a `LabelSelector` (matchLabels and
/// matchExpressions) or a replication controller's plain map, requirements sorted by key.
pub(crate) fn selector_string(selector: Option<&Value>) -> String {
    let Some(Value::Object(sel)) = selector else {
        return String::new();
    };
    let is_label_selector = sel.contains_key("matchLabels") || sel.contains_key("matchExpressions");
    let mut reqs: Vec<(String, String)> = Vec::new();
    let labels = if is_label_selector {
        sel.get("matchLabels").and_then(Value::as_object)
    } else {
        Some(sel)
    };
    for (k, v) in labels.into_iter().flatten() {
        reqs.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or_default())));
    }
    for expr in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = expr.get("key").and_then(Value::as_str).unwrap_or_default();
        let mut values: Vec<&str> = expr
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        let text = match expr.get("operator").and_then(Value::as_str) {
            Some("In") => format!("{key} in ({})", values.join(",")),
            Some("NotIn") => format!("{key} notin ({})", values.join(",")),
            Some("Exists") => key.to_string(),
            Some("DoesNotExist") => format!("!{key}"),
            _ => continue,
        };
        reqs.push((key.to_string(), text));
    }
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    reqs.into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(",")
}

impl RestStorage for ScaleStorage {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }
    fn verbs(&self) -> Vec<&'static str> {
        vec!["get", "patch", "update"]
    }
    fn get<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        opts: &'a GetOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(async move { Ok(to_scale(&self.store.get(ctx, name, opts).await?)) })
    }
    fn update<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        update: UpdateFunc,
        opts: &'a UpdateOptions,
        _force_allow_create: bool,
    ) -> BoxFuture<'a, Result<(Value, bool), ApiError>> {
        Box::pin(self.update_inner(ctx, name, update, opts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::apps::deployments;
    use apiserver::registry::rest::CreateOptions;
    use apiserver::storage::Storage;
    use apiserver::storage::backends::EmbeddedStorage;
    use std::sync::Arc;

    fn ctx() -> RequestContext {
        RequestContext {
            namespace: "default".into(),
            ..Default::default()
        }
    }

    async fn fixture() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let backend: Arc<dyn Storage> = Arc::new(EmbeddedStorage::open(dir.path()).unwrap());
        let store = Store::new(deployments().strategy, backend, "/registry/deployments");
        store
            .create(
                &ctx(),
                json!({
                    "apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "web"},
                    "spec": {
                        "replicas": 1,
                        "selector": {"matchLabels": {"app": "web"},
                            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}]},
                        "template": {"metadata": {"labels": {"app": "web", "tier": "a"}},
                            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
                    }
                }),
                &CreateOptions::default(),
            )
            .await
            .unwrap();
        (dir, store)
    }

    #[tokio::test]
    async fn get_returns_scale_view() {
        let (_dir, store) = fixture().await;
        let scale = ScaleStorage::new(store);
        let v = scale
            .get(&ctx(), "web", &GetOptions::default())
            .await
            .unwrap();
        assert_eq!(v["kind"], "Scale");
        assert_eq!(v["apiVersion"], "autoscaling/v1");
        assert_eq!(v["spec"], json!({"replicas": 1}));
        assert_eq!(
            v["status"],
            json!({"replicas": 0, "selector": "app=web,tier in (a,b)"})
        );
        assert_eq!(v["metadata"]["name"], "web");
        assert!(v["metadata"]["uid"].is_string());
        assert_eq!(scale.info().kind, "Scale");
    }

    #[tokio::test]
    async fn update_changes_only_replicas() {
        let (_dir, store) = fixture().await;
        let scale = ScaleStorage::new(store.clone());
        let (v, created) = scale
            .update(
                &ctx(),
                "web",
                Box::new(|cur| {
                    let mut v = cur.cloned().unwrap();
                    v["spec"]["replicas"] = json!(3);
                    v["status"]["replicas"] = json!(9);
                    Ok(v)
                }),
                &UpdateOptions::default(),
                false,
            )
            .await
            .unwrap();
        assert!(!created);
        assert_eq!(v["spec"]["replicas"], 3);
        let d = store
            .get(&ctx(), "web", &GetOptions::default())
            .await
            .unwrap();
        assert_eq!(d["spec"]["replicas"], 3);
        assert!(d.pointer("/status/replicas").is_none_or(|r| r == 0));
    }

    #[tokio::test]
    async fn negative_replicas_are_invalid() {
        let (_dir, store) = fixture().await;
        let scale = ScaleStorage::new(store);
        let err = scale
            .update(
                &ctx(),
                "web",
                Box::new(|cur| {
                    let mut v = cur.cloned().unwrap();
                    v["spec"]["replicas"] = json!(-1);
                    Ok(v)
                }),
                &UpdateOptions::default(),
                false,
            )
            .await
            .unwrap_err();
        assert_eq!(err.code(), http::StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(
            err.to_string(),
            r#"Scale.autoscaling "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"#
        );
    }

    #[test]
    fn replication_controller_selector_is_a_map() {
        let rc = json!({"metadata": {"name": "r"}, "spec": {"replicas": 0, "selector": {"b": "2", "a": "1"}}});
        let v = to_scale(&rc);
        assert_eq!(v["spec"], json!({}));
        assert_eq!(v["status"]["selector"], "a=1,b=2");
    }
}
