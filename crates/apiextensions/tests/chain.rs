//! The apiextensions server in a chain (a front server delegating to it, it delegating to the
//! not-found handler): custom-resource paths answer 503 with Retry-After until the CRD
//! controllers have served the existing CRDs; then they are served through the front server's
//! handler chain while unknown paths still fall through to the not-found handler; hooks and the
//! mux-complete signal are merged into the front server.

use std::sync::Arc;

use apiextensions::controller::CrdController;
use apiextensions::{NoOpenApi, Seams, install};
use apiserver::body::{Request, full, read_limited};
use apiserver::filters::Next;
use apiserver::registry::rest::{CreateOptions, RequestContext, RestStorage};
use apiserver::server::routes::notfound::not_found_handler;
use apiserver::server::{Config, DelegationTarget, EmptyDelegate, GenericApiServer};
use apiserver::storage::Storage;
use apiserver::storage::backends::EmbeddedStorage;
use serde_json::{Value, json};

fn crd() -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Cluster",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]}})
}

async fn get(server: &GenericApiServer, path: &str) -> (u16, Option<String>, String) {
    let req: Request = http::Request::get(path).body(full("")).unwrap();
    let resp = Next::new(server.handler().full_handler_chain.clone())
        .run(req)
        .await;
    let status = resp.status().as_u16();
    let retry = resp
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    let body = read_limited(resp.into_body(), 0).await.unwrap().unwrap();
    (status, retry, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resource_paths_wait_for_the_crds_then_fall_through() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(EmbeddedStorage::open(dir.path()).unwrap());
    let apiextensions = Config::new(None)
        .complete()
        .new(
            "apiextensions-apiserver",
            Arc::new(EmptyDelegate::with_handler(not_found_handler())),
        )
        .unwrap();
    let handle = install(
        &apiextensions,
        storage,
        "/registry",
        Arc::new(NoOpenApi),
        Seams::default(),
    )
    .unwrap();
    let front = Config::new(None)
        .complete()
        .new("front", Arc::new(apiextensions.clone()))
        .unwrap();

    // The front server carries the apiextensions hooks and signal.
    let hooks = front.post_start_hooks();
    for hook in [
        "start-apiextensions-informers",
        "start-apiextensions-controllers",
        "crd-informer-synced",
    ] {
        assert!(hooks.contains_key(hook), "{hook}: {:?}", hooks.keys());
    }
    assert!(
        front
            .mux_and_discovery_complete_signals()
            .contains_key("CRDInformerHasNotSynced")
    );

    // An existing CRD, not yet served: 503 with Retry-After, not 404.
    handle
        .crds
        .create(&RequestContext::default(), crd(), &CreateOptions::default())
        .await
        .unwrap();
    let (status, retry, body) = get(&front, "/apis/example.com/v1/widgets").await;
    assert_eq!(status, 503, "{body}");
    assert!(retry.is_some());
    assert!(!handle.synced.signaled());

    // One controller pass serves it and fires the signal.
    let controller = CrdController::new(
        handle.crds.clone(),
        handle.serving.clone(),
        handle.synced.clone(),
    );
    controller.pass().await.unwrap();
    controller.pass().await.unwrap();
    assert!(handle.synced.signaled());
    let (status, _, body) = get(&front, "/apis/example.com/v1/widgets").await;
    assert_eq!(status, 200, "{body}");
    let list: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(list["kind"], "WidgetList");
    // The CRD group itself is served by the apiextensions server too.
    let (status, _, _) = get(
        &front,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    )
    .await;
    assert_eq!(status, 200);
    // Unknown paths fall through the whole chain to the not-found handler.
    let (status, _, _) = get(&front, "/apis/nope.example.com/v1/things").await;
    assert_eq!(
        status, 503,
        "the front server has not run: the mux is incomplete"
    );
    let crd_obj = handle
        .crds
        .get(
            &RequestContext::default(),
            "widgets.example.com",
            &Default::default(),
        )
        .await
        .unwrap();
    assert_eq!(crd_obj["status"]["acceptedNames"]["kind"], "Widget");

    // Deleting the CRD: the finalizer controller deletes the instances (one holds it with a
    // finalizer of its own: creates are refused meanwhile), then the CRD goes and its routes
    // with it.
    let ctx = RequestContext::default();
    let widgets = handle.serving.store_of("widgets.example.com").unwrap();
    for (name, finalizers) in [("w", json!([])), ("held", json!(["example.com/hold"]))] {
        widgets
            .create(
                &ctx,
                json!({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"name": name, "finalizers": finalizers}}),
                &CreateOptions::default(),
            )
            .await
            .unwrap();
    }
    handle
        .crds
        .delete(&ctx, "widgets.example.com", &Default::default())
        .await
        .unwrap();
    assert!(controller.pass().await.is_ok());
    let crd_obj = handle
        .crds
        .get(&ctx, "widgets.example.com", &Default::default())
        .await
        .unwrap();
    let terminating = crd_obj["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Terminating")
        .unwrap()
        .clone();
    assert_eq!(terminating["reason"], "InstanceDeletionInProgress");
    let req: Request = http::Request::post("/apis/example.com/v1/widgets")
        .header("content-type", "application/json")
        .body(full(
            r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"late"}}"#,
        ))
        .unwrap();
    let resp = Next::new(front.handler().full_handler_chain.clone())
        .run(req)
        .await;
    assert_eq!(resp.status(), 405);
    let body = read_limited(resp.into_body(), 0).await.unwrap().unwrap();
    assert!(
        String::from_utf8_lossy(&body)
            .contains("create not allowed while custom resource definition is terminating")
    );
    // The holder lets go; the next pass finishes.
    let release = Box::new(|current: Option<&Value>| {
        let mut obj = current.cloned().unwrap();
        obj["metadata"]["finalizers"] = json!([]);
        Ok(obj)
    });
    widgets
        .update(&ctx, "held", release, &Default::default(), false)
        .await
        .unwrap();
    controller.pass().await.unwrap();
    controller.pass().await.unwrap();
    let (status, _, body) = get(&front, "/apis/example.com/v1/widgets").await;
    assert_eq!(status, 503, "{body}");
    assert!(
        handle
            .crds
            .get(&ctx, "widgets.example.com", &Default::default())
            .await
            .is_err()
    );
    assert!(
        widgets.list(&ctx, &Default::default()).await.unwrap()["items"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    // destroy runs along the whole chain: the front server's reaches the apiextensions
    // server's and stops its controllers.
    assert!(!handle.destroyed.is_cancelled());
    front.clone().prepare_run().destroy();
    assert!(handle.destroyed.is_cancelled());
}
