//! A kube-rs `Controller` for the black-box tests (shared by `kube_rs.rs` and `envtest.rs`):
//! a `widgets` custom resource whose controller applies a child ConfigMap (server-side apply,
//! owner reference) and records the size and generation in the widget's status.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
};
use kube::runtime::controller::Action;
use kube::runtime::{Controller, watcher};
use serde_json::json;
use tokio::task::JoinHandle;

use crate::common::eventually;

/// The widgets' API group.
pub const GROUP: &str = "kube-rs.example.com";

/// The widgets' resource.
pub fn widgets_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, "v1", "Widget"), "widgets")
}

/// Creates the `widgets` CRD through the API and waits until it is served.
pub async fn create_widget_crd(client: &kube::Client) {
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("widgets.{GROUP}")},
        "spec": {
            "group": GROUP,
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                        "status": {"type": "object", "properties": {
                            "observedGeneration": {"type": "integer"},
                            "size": {"type": "integer"},
                        }},
                    },
                }},
            }],
        },
    }))
    .unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &crd).await.unwrap();
    let widgets: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &widgets_resource());
    eventually("the widgets CRD is served", || {
        let widgets = widgets.clone();
        async move { widgets.list(&ListParams::default()).await.ok().map(|_| ()) }
    })
    .await;
}

struct Ctx {
    client: kube::Client,
}

#[derive(Debug, thiserror::Error)]
#[error(transparent)]
struct ReconcileError(#[from] kube::Error);

/// Applies a `<name>-child` ConfigMap with the widget's size (server-side apply), then records
/// the size and generation in the widget's status.
async fn reconcile(widget: Arc<DynamicObject>, ctx: Arc<Ctx>) -> Result<Action, ReconcileError> {
    let name = widget.metadata.name.clone().unwrap_or_default();
    let namespace = widget.metadata.namespace.clone().unwrap_or_default();
    let size = widget.data["spec"]["size"].as_i64().unwrap_or(0);
    let children: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &namespace);
    let child = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": format!("{name}-child"),
            "ownerReferences": [{
                "apiVersion": format!("{GROUP}/v1"), "kind": "Widget", "name": name,
                "uid": widget.metadata.uid.clone().unwrap_or_default(), "controller": true,
            }],
        },
        "data": {"size": size.to_string()},
    });
    children
        .patch(
            &format!("{name}-child"),
            &PatchParams::apply("widget-controller").force(),
            &Patch::Apply(child),
        )
        .await?;
    let widgets: Api<DynamicObject> =
        Api::namespaced_with(ctx.client.clone(), &namespace, &widgets_resource());
    widgets
        .patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "observedGeneration": widget.metadata.generation,
                "size": size,
            }})),
        )
        .await?;
    Ok(Action::await_change())
}

fn error_policy(_: Arc<DynamicObject>, _: &ReconcileError, _: Arc<Ctx>) -> Action {
    Action::requeue(Duration::from_millis(200))
}

/// Runs the widget controller (watching widgets and their child configmaps).
pub fn run_controller(client: kube::Client) -> JoinHandle<()> {
    let widgets: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &widgets_resource());
    let children: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let ctx = Arc::new(Ctx { client });
    tokio::spawn(async move {
        Controller::new_with(widgets, watcher::Config::default(), widgets_resource())
            .owns(children, watcher::Config::default())
            .run(reconcile, error_policy, ctx)
            .for_each(|_| futures::future::ready(()))
            .await;
    })
}

/// Waits until widget `name` has `size` in its status and its child configmap.
pub async fn reconciled(client: &kube::Client, name: &str, size: i64) {
    let widgets: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &widgets_resource());
    let children: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    eventually(&format!("widget {name} reconciled at size {size}"), || {
        let (widgets, children) = (widgets.clone(), children.clone());
        async move {
            let w = widgets.get(name).await.ok()?;
            let status = &w.data["status"];
            let current = status["observedGeneration"].as_i64() == w.metadata.generation
                && status["size"].as_i64() == Some(size);
            let child = children.get(&format!("{name}-child")).await.ok()?;
            let child_size = child.data?.get("size").cloned();
            (current && child_size == Some(size.to_string())).then_some(())
        }
    })
    .await;
}

/// Creates widget `name` of `size` in `default`.
pub async fn create_widget(client: &kube::Client, name: &str, size: i64) {
    let widgets: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &widgets_resource());
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{GROUP}/v1"),
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"size": size},
    }))
    .unwrap();
    widgets.create(&PostParams::default(), &obj).await.unwrap();
}

/// Sets widget `name`'s size (a merge patch, a new generation).
pub async fn resize_widget(client: &kube::Client, name: &str, size: i64) {
    let widgets: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &widgets_resource());
    widgets
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": size}})),
        )
        .await
        .unwrap();
}
