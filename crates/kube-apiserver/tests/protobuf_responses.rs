//! End-to-end: responses in `application/vnd.kubernetes.protobuf` from the real binary over TLS,
//! decoded with k8s-pb (prost messages generated from upstream's `generated.proto`, an
//! independent decoder) and compared with the JSON answers: GET, LIST, create, delete, watch
//! (length-prefixed `WatchEvent` frames), `Status` errors, custom resources (406 for a
//! protobuf-only `Accept`, JSON for a mixed one, protobuf `PartialObjectMetadata`), and Table
//! (never protobuf: JSON when the client also accepts it, else 406).

mod common;

use std::time::Instant;

use common::client::{Client, Proto};
use common::{ApiServer, DEADLINE, eventually};
use http::{Method, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use k8s_pb::api::apps::v1 as apps;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::Unknown;
use prost::Message as _;
use serde_json::{Value, json};

const PB: &str = "application/vnd.kubernetes.protobuf";

struct RawReply {
    status: StatusCode,
    content_type: String,
    body: Bytes,
}

/// Sends `req` and reads the body as bytes (the shared client reads text).
async fn send(client: &Client, req: http::Request<Full<Bytes>>) -> RawReply {
    let mut conn = client.connect(Proto::H2).await.unwrap();
    let response = conn.send_head(req).await.unwrap();
    let (parts, body) = response.into_parts();
    RawReply {
        status: parts.status,
        content_type: parts
            .headers
            .get(http::header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default(),
        body: body.collect().await.unwrap().to_bytes(),
    }
}

async fn call(client: &Client, method: Method, path: &str, accept: &str, body: &str) -> RawReply {
    let mut req = client.request(method, path, body);
    req.headers_mut()
        .insert(http::header::ACCEPT, accept.parse().unwrap());
    if !body.is_empty() {
        req.headers_mut().insert(
            http::header::CONTENT_TYPE,
            "application/json".parse().unwrap(),
        );
    }
    send(client, req).await
}

async fn json(client: &Client, method: Method, path: &str, body: &str) -> Value {
    let reply = call(client, method, path, "application/json", body).await;
    assert!(
        reply.status.is_success(),
        "{path}: {reply:?}",
        reply = reply.status
    );
    serde_json::from_slice(&reply.body).unwrap()
}

/// The `(apiVersion, kind, raw)` of a protobuf body: magic, then `runtime.Unknown`.
fn unwrap(body: &[u8]) -> (String, String, Vec<u8>) {
    let rest = body
        .strip_prefix(b"k8s\0")
        .unwrap_or_else(|| panic!("no magic: {:?}", String::from_utf8_lossy(body)));
    let unknown = Unknown::decode(rest).unwrap();
    let type_meta = unknown.type_meta.unwrap();
    assert_eq!(unknown.content_encoding.as_deref(), Some(""));
    assert_eq!(unknown.content_type.as_deref(), Some(""));
    (
        type_meta.api_version.unwrap(),
        type_meta.kind.unwrap(),
        unknown.raw.unwrap(),
    )
}

fn decode<T: prost::Message + Default>(reply: &RawReply, api_version: &str, kind: &str) -> T {
    assert_eq!(
        reply.content_type,
        PB,
        "{:?}",
        String::from_utf8_lossy(&reply.body)
    );
    let (v, k, raw) = unwrap(&reply.body);
    assert_eq!((v.as_str(), k.as_str()), (api_version, kind));
    T::decode(raw.as_slice()).unwrap()
}

/// Every scalar leaf of the JSON answer appears in prost's message, in a field of the same name
/// (Debug output): the two encodings carry the same object. Times are compared as seconds.
fn assert_same(json: &Value, prost_debug: &str, path: &str) {
    match json {
        Value::Object(map) => {
            for (key, value) in map {
                // The envelope carries the object's apiVersion and kind; list items carry none
                // in protobuf (the JSON list writes them, see the README).
                let top = path.is_empty() || (path.starts_with(".items[") && path.ends_with(']'));
                if top && (key == "apiVersion" || key == "kind") {
                    continue;
                }
                assert_same(value, prost_debug, &format!("{path}.{key}"));
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                assert_same(item, prost_debug, &format!("{path}[{i}]"));
            }
        }
        Value::String(s) => {
            let needle = match s.parse::<jiff::Timestamp>() {
                Ok(ts) if s.len() == 20 => format!("seconds: Some({})", ts.as_second()),
                _ => format!("{s:?}"),
            };
            assert!(
                prost_debug.contains(&needle),
                "{path}: {needle} not in {prost_debug}"
            );
        }
        Value::Number(n) => {
            assert!(prost_debug.contains(&format!("Some({n})")), "{path}: {n}");
        }
        Value::Bool(b) => {
            assert!(prost_debug.contains(&format!("Some({b})")), "{path}: {b}");
        }
        Value::Null => {}
    }
}

const DEPLOYMENT: &str = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"app":"web","empty":""},"annotations":{"note":"x"}},"spec":{"replicas":0,"selector":{"matchLabels":{"app":"web"}},"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":"25%","maxUnavailable":1}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx:1.27","ports":[{"containerPort":8080}],"resources":{"limits":{"cpu":"500m","memory":"128Mi"}},"readinessProbe":{"httpGet":{"path":"/","port":"http"}}}]}}}}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_list_create_and_delete_in_protobuf_equal_the_json_answers() {
    let server = ApiServer::start(&[]).await;
    let client = server.admin_client();
    let base = "/apis/apps/v1/namespaces/default/deployments";

    // Create with a protobuf Accept: 201 in protobuf, equal to the JSON GET after it.
    let created = call(&client, Method::POST, base, PB, DEPLOYMENT).await;
    assert_eq!(created.status, StatusCode::CREATED);
    let created: apps::Deployment = decode(&created, "apps/v1", "Deployment");
    let as_json = json(&client, Method::GET, &format!("{base}/web"), "").await;
    let meta = created.metadata.as_ref().unwrap();
    assert_eq!(meta.uid.as_deref(), as_json["metadata"]["uid"].as_str());
    assert_eq!(
        meta.resource_version.as_deref(),
        as_json["metadata"]["resourceVersion"].as_str()
    );

    // GET: the same object as the JSON answer, pointer zeros kept (replicas: 0).
    let got = call(&client, Method::GET, &format!("{base}/web"), PB, "").await;
    assert_eq!(got.status, StatusCode::OK);
    let got: apps::Deployment = decode(&got, "apps/v1", "Deployment");
    assert_same(&as_json, &format!("{got:?}"), "");
    assert_eq!(got.spec.as_ref().unwrap().replicas, Some(0));
    assert_eq!(got.metadata.as_ref().unwrap().labels["empty"], "");

    // client-go's Accept picks protobuf too.
    let preferred = call(
        &client,
        Method::GET,
        &format!("{base}/web"),
        "application/vnd.kubernetes.protobuf, application/json",
        "",
    )
    .await;
    assert_eq!(preferred.content_type, PB);
    assert_eq!(
        preferred.body,
        got_bytes(&client, &format!("{base}/web")).await
    );

    // LIST of several kinds: ListMeta and items, as the JSON list.
    for i in 0..3 {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": format!("cm-{i}")}, "data": {"k": format!("v{i}")}});
        json(
            &client,
            Method::POST,
            "/api/v1/namespaces/default/configmaps",
            &cm.to_string(),
        )
        .await;
    }
    let path = "/api/v1/namespaces/default/configmaps?labelSelector=&limit=2";
    let as_json = json(&client, Method::GET, path, "").await;
    let list = call(&client, Method::GET, path, PB, "").await;
    let list: core::ConfigMapList = decode(&list, "v1", "ConfigMapList");
    assert_eq!(list.items.len(), 2);
    assert_same(&as_json, &format!("{list:?}"), "");
    let list_meta = list.metadata.unwrap();
    assert_eq!(
        list_meta.r#continue.as_deref(),
        as_json["metadata"]["continue"].as_str()
    );
    assert!(list_meta.remaining_item_count.is_some());
    for rv in ["0", ""] {
        let path = format!("/api/v1/namespaces/default/configmaps?resourceVersion={rv}");
        let list = call(&client, Method::GET, &path, PB, "").await;
        let list: core::ConfigMapList = decode(&list, "v1", "ConfigMapList");
        // kube-root-ca.crt is not created here; only the three configmaps.
        let names: Vec<_> = list
            .items
            .iter()
            .map(|c| c.metadata.as_ref().unwrap().name.clone().unwrap())
            .collect();
        assert!(names.starts_with(&["cm-0".to_string(), "cm-1".into(), "cm-2".into()]));
    }

    // DELETE with a protobuf Accept: the deleted object (or a Status) in protobuf.
    let deleted = call(&client, Method::DELETE, &format!("{base}/web"), PB, "").await;
    assert_eq!(deleted.status, StatusCode::OK);
    let (_, kind, _) = unwrap(&deleted.body);
    match kind.as_str() {
        "Deployment" => {
            let d: apps::Deployment = decode(&deleted, "apps/v1", "Deployment");
            assert_eq!(d.metadata.unwrap().name.as_deref(), Some("web"));
        }
        "Status" => {
            let s: meta::Status = decode(&deleted, "v1", "Status");
            assert_eq!(s.status.as_deref(), Some("Success"));
        }
        other => panic!("delete answered {other}"),
    }

    // A collection delete answers the deleted list.
    let gone = call(
        &client,
        Method::DELETE,
        "/api/v1/namespaces/default/configmaps?labelSelector=",
        PB,
        "",
    )
    .await;
    assert_eq!(gone.status, StatusCode::OK);
    let gone: core::ConfigMapList = decode(&gone, "v1", "ConfigMapList");
    assert!(gone.items.len() >= 3);
}

async fn got_bytes(client: &Client, path: &str) -> Bytes {
    call(client, Method::GET, path, PB, "").await.body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_errors_are_protobuf_for_protobuf_clients() {
    let server = ApiServer::start(&[]).await;
    let client = server.admin_client();
    let missing = call(
        &client,
        Method::GET,
        "/api/v1/namespaces/default/pods/nope",
        "application/vnd.kubernetes.protobuf, application/json",
        "",
    )
    .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    let status: meta::Status = decode(&missing, "v1", "Status");
    assert_eq!(status.status.as_deref(), Some("Failure"));
    assert_eq!(status.reason.as_deref(), Some("NotFound"));
    assert_eq!(status.code, Some(404));
    assert_eq!(status.message.as_deref(), Some("pods \"nope\" not found"));
    let details = status.details.unwrap();
    assert_eq!(details.name.as_deref(), Some("nope"));
    assert_eq!(details.kind.as_deref(), Some("pods"));

    // A validation failure carries its causes.
    let invalid = call(
        &client,
        Method::POST,
        "/api/v1/namespaces/default/configmaps",
        PB,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"}}"#,
    )
    .await;
    assert_eq!(invalid.status, StatusCode::UNPROCESSABLE_ENTITY);
    let status: meta::Status = decode(&invalid, "v1", "Status");
    assert_eq!(status.reason.as_deref(), Some("Invalid"));
    assert!(!status.details.unwrap().causes.is_empty());

    // JSON clients still get JSON.
    let reply = call(
        &client,
        Method::GET,
        "/api/v1/namespaces/default/pods/nope",
        "application/json",
        "",
    )
    .await;
    assert_eq!(reply.content_type, "application/json");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_streams_length_prefixed_watch_events() {
    let server = ApiServer::start(&[]).await;
    let client = server.admin_client();
    let first = json(
        &client,
        Method::POST,
        "/api/v1/namespaces/default/configmaps",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w0"},"data":{"a":"b"}}"#,
    )
    .await;
    let rv = first["metadata"]["resourceVersion"].as_str().unwrap();
    let mut req = client.request(
        Method::GET,
        &format!("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=30"),
        "",
    );
    req.headers_mut().insert(
        http::header::ACCEPT,
        "application/vnd.kubernetes.protobuf, application/json"
            .parse()
            .unwrap(),
    );
    let mut conn = client.connect(Proto::H2).await.unwrap();
    let response = conn.send_head(req).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()[http::header::CONTENT_TYPE],
        "application/vnd.kubernetes.protobuf;stream=watch"
    );
    let mut body = response.into_body();

    let created = json(
        &client,
        Method::POST,
        "/api/v1/namespaces/default/configmaps",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w1","labels":{"x":"y"}},"data":{"k":"v"}}"#,
    )
    .await;
    json(
        &client,
        Method::DELETE,
        "/api/v1/namespaces/default/configmaps/w1",
        "",
    )
    .await;

    // Frames: 4-byte big-endian length, then a WatchEvent whose object is the encoded
    // ConfigMap (magic and envelope included).
    let mut buf: Vec<u8> = Vec::new();
    let mut events = Vec::new();
    let start = Instant::now();
    while events.len() < 2 {
        assert!(start.elapsed() < DEADLINE, "events so far: {events:?}");
        while buf.len() >= 4 {
            let len = u32::from_be_bytes(buf[..4].try_into().unwrap()) as usize;
            if buf.len() < 4 + len {
                break;
            }
            let event = meta::WatchEvent::decode(&buf[4..4 + len]).unwrap();
            buf.drain(..4 + len);
            let kind = event.r#type.unwrap();
            if kind == "BOOKMARK" {
                continue;
            }
            let raw = event.object.unwrap().raw.unwrap();
            let (v, k, object) = unwrap(&raw);
            assert_eq!((v.as_str(), k.as_str()), ("v1", "ConfigMap"));
            events.push((kind, core::ConfigMap::decode(object.as_slice()).unwrap()));
        }
        if events.len() >= 2 {
            break;
        }
        let frame = tokio::time::timeout(DEADLINE, body.frame())
            .await
            .expect("a watch frame in time")
            .expect("the watch stays open")
            .unwrap();
        if let Ok(data) = frame.into_data() {
            buf.extend_from_slice(&data);
        }
    }
    assert_eq!(events[0].0, "ADDED");
    assert_same(&created, &format!("{:?}", events[0].1), "");
    assert_eq!(events[1].0, "DELETED");
    assert_eq!(
        events[1].1.metadata.as_ref().unwrap().name.as_deref(),
        Some("w1")
    );
}

const CRD: &str = r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}}}]}}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources_and_tables_fall_back_as_upstream() {
    let server = ApiServer::start(&[]).await;
    let client = server.admin_client();

    // The CRD itself is a built-in kind: protobuf.
    let crd = call(
        &client,
        Method::POST,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        PB,
        CRD,
    )
    .await;
    assert_eq!(crd.status, StatusCode::CREATED);
    let _: k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition =
        decode(&crd, "apiextensions.k8s.io/v1", "CustomResourceDefinition");
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    eventually("widgets served", || async {
        let reply = call(&client, Method::GET, widgets, "application/json", "").await;
        (reply.status == StatusCode::OK).then_some(())
    })
    .await;
    json(
        &client,
        Method::POST,
        widgets,
        r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":3}}"#,
    )
    .await;

    // Protobuf only: 406, the Status itself in protobuf (upstream's ErrorNegotiated).
    for path in [widgets.to_string(), format!("{widgets}/w")] {
        let refused = call(&client, Method::GET, &path, PB, "").await;
        assert_eq!(refused.status, StatusCode::NOT_ACCEPTABLE, "{path}");
        let status: meta::Status = decode(&refused, "v1", "Status");
        assert_eq!(status.reason.as_deref(), Some("NotAcceptable"));
        assert_eq!(
            status.message.as_deref(),
            Some(
                "only the following media types are accepted: application/json, \
                 application/yaml, application/vnd.kubernetes.protobuf"
            )
        );
    }
    let watch = call(
        &client,
        Method::GET,
        &format!("{widgets}?watch=true"),
        PB,
        "",
    )
    .await;
    assert_eq!(watch.status, StatusCode::NOT_ACCEPTABLE);

    // client-go's mixed Accept: JSON.
    let mixed = call(
        &client,
        Method::GET,
        &format!("{widgets}/w"),
        "application/vnd.kubernetes.protobuf, application/json",
        "",
    )
    .await;
    assert_eq!(mixed.status, StatusCode::OK);
    assert_eq!(mixed.content_type, "application/json");
    let w: Value = serde_json::from_slice(&mixed.body).unwrap();
    assert_eq!(w["spec"]["size"], 3);

    // PartialObjectMetadata works in protobuf for custom resources too (metadata informers).
    let pom = call(
        &client,
        Method::GET,
        widgets,
        "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
        "",
    )
    .await;
    assert_eq!(pom.status, StatusCode::OK);
    let pom: meta::PartialObjectMetadataList =
        decode(&pom, "meta.k8s.io/v1", "PartialObjectMetadataList");
    assert_eq!(
        pom.items[0].metadata.as_ref().unwrap().name.as_deref(),
        Some("w")
    );

    // Table is never protobuf: JSON when also accepted, else 406 (raw JSON, as upstream).
    let table_pb = "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1";
    let table = call(
        &client,
        Method::GET,
        "/api/v1/namespaces",
        &format!("{table_pb}, application/json;as=Table;g=meta.k8s.io;v=v1"),
        "",
    )
    .await;
    assert_eq!(table.status, StatusCode::OK);
    assert_eq!(table.content_type, "application/json");
    let table: Value = serde_json::from_slice(&table.body).unwrap();
    assert_eq!(table["kind"], "Table");
    let refused = call(&client, Method::GET, "/api/v1/namespaces", table_pb, "").await;
    assert_eq!(refused.status, StatusCode::NOT_ACCEPTABLE);
    assert_eq!(refused.content_type, "application/json");
}
