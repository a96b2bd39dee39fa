//! A watch through the REST installer on a real server over TLS: each event arrives as its own
//! JSON line as soon as the storage produces it, over HTTP/1.1 and HTTP/2, and the stream ends
//! cleanly at `timeoutSeconds`.

mod common;

use std::sync::{Arc, Mutex};

use apiserver::registry::ResourceInfo;
use apiserver::registry::rest::{
    BoxFuture, ListOptions, ObjectEvent, ObjectWatch, RequestContext, RestStorage,
};
use apiserver::server::{ApiGroupInfo, ApiGroupVersion};
use apiserver::status::ApiError;
use common::lifecycle::within;
use common::*;
use http::{Method, StatusCode};
use http_body_util::BodyExt;
use serde_json::json;
use tokio::sync::mpsc;

/// A storage whose watches emit what the test sends.
struct Pushed {
    info: ResourceInfo,
    feeds: Mutex<Vec<mpsc::UnboundedReceiver<ObjectEvent>>>,
}

impl RestStorage for Pushed {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    fn verbs(&self) -> Vec<&'static str> {
        vec!["list", "watch"]
    }

    fn watch<'a>(
        &'a self,
        _ctx: &'a RequestContext,
        _opts: &'a ListOptions,
    ) -> BoxFuture<'a, Result<ObjectWatch, ApiError>> {
        let feed = self.feeds.lock().unwrap().pop();
        Box::pin(async move {
            let feed = feed.ok_or_else(|| ApiError::internal("no feed"))?;
            let stream = futures::stream::unfold(feed, |mut rx| async move {
                rx.recv().await.map(|event| (event, rx))
            });
            let stream: ObjectWatch = Box::pin(stream);
            Ok(stream)
        })
    }
}

fn cm(name: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_events_stream_over_h1_and_h2() {
    let (tx1, rx1) = mpsc::unbounded_channel();
    let (tx2, rx2) = mpsc::unbounded_channel();
    let storage = Arc::new(Pushed {
        info: ResourceInfo {
            version: "v1".into(),
            kind: "ConfigMap".into(),
            list_kind: "ConfigMapList".into(),
            resource: "configmaps".into(),
            singular: "configmap".into(),
            namespaced: true,
            ..Default::default()
        },
        // Popped from the back: the first watch (HTTP/1.1) gets rx1.
        feeds: Mutex::new(vec![rx2, rx1]),
    });
    let mut server = TestServerBuilder::new()
        .install(move |server| {
            let core = ApiGroupInfo {
                group: String::new(),
                versions: vec![ApiGroupVersion::new("v1", vec![storage])],
            };
            server.install_legacy_api_group("/api", core).unwrap();
        })
        .start()
        .await;
    server.wait_ready().await;
    let client = server.admin_client();
    for (proto, tx) in [(Proto::H1, tx1), (Proto::H2, tx2)] {
        let mut conn = client.connect(proto).await.unwrap();
        let response = within(
            "watch response head",
            conn.send_head(client.request(
                Method::GET,
                "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=2",
                "",
            )),
        )
        .await
        .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{proto:?}");
        assert_eq!(response.headers()["content-type"], "application/json");
        let mut body = response.into_body();
        for name in ["a", "b"] {
            tx.send(ObjectEvent::Added(cm(name))).unwrap();
            let frame = within("watch event", body.frame())
                .await
                .expect("a frame")
                .expect("frame read")
                .into_data()
                .expect("data");
            let line = String::from_utf8(frame.to_vec()).unwrap();
            assert!(
                line.starts_with("{\"type\":\"ADDED\",\"object\":{") && line.ends_with("}\n"),
                "{proto:?}: {line}"
            );
            assert!(line.contains(&format!("\"name\":\"{name}\"")), "{line}");
        }
        // timeoutSeconds=2 ends the stream without an error.
        let rest = within("watch end", body.collect())
            .await
            .unwrap()
            .to_bytes();
        assert!(rest.is_empty(), "{proto:?}: {rest:?}");
    }
    server.shutdown().await.unwrap();
}
