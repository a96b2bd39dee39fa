//! The admission chain of the real binary: `--enable-admission-plugins`,
//! `--disable-admission-plugins`, `--admission-control` and unknown names; every write path
//! (create, update, patch, delete, deletecollection, status, scale, a subresource create)
//! passes through it; the admission metrics.

mod common;

use common::client::{Client, Proto};
use common::{ApiServer, run_to_exit};
use http::{Method, StatusCode};
use serde_json::{Value, json};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";

async fn call(
    client: &Client,
    method: Method,
    path: &str,
    body: Option<Value>,
    content_type: &str,
) -> (StatusCode, Value) {
    let text = body.map(|b| b.to_string()).unwrap_or_default();
    let mut req = client.request(method, path, &text);
    if !text.is_empty() {
        req.headers_mut()
            .insert("content-type", content_type.parse().unwrap());
    }
    let reply = client.send(Proto::H1, req).await.unwrap();
    let value = serde_json::from_str(&reply.body).unwrap_or(Value::String(reply.body));
    (reply.status, value)
}

async fn json_call(
    client: &Client,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    call(client, method, path, body, "application/json").await
}

fn configmap(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "1"}})
}

fn deployment(name: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}
            }
        }
    })
}

/// Every write path, as `(what, method, path, body, content type)`, against objects that
/// exist (`cm-1`, `web`, pod `p`).
fn writes() -> Vec<(&'static str, Method, String, Option<Value>, &'static str)> {
    let mut cm = configmap("cm-1");
    cm["data"]["a"] = json!("2");
    let scale = json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
        "metadata": {"name": "web", "namespace": "default"}, "spec": {"replicas": 3}});
    let binding = json!({"apiVersion": "v1", "kind": "Binding",
        "metadata": {"name": "p"}, "target": {"kind": "Node", "name": "node-1"}});
    vec![
        (
            "create",
            Method::POST,
            CMS.to_string(),
            Some(configmap("cm-2")),
            "application/json",
        ),
        (
            "update",
            Method::PUT,
            format!("{CMS}/cm-1"),
            Some(cm),
            "application/json",
        ),
        (
            "patch",
            Method::PATCH,
            format!("{CMS}/cm-1"),
            Some(json!({"data": {"b": "3"}})),
            "application/merge-patch+json",
        ),
        (
            "status",
            Method::PATCH,
            format!("{DEPLOYS}/web/status"),
            Some(json!({"status": {"observedGeneration": 1}})),
            "application/merge-patch+json",
        ),
        (
            "scale",
            Method::PUT,
            format!("{DEPLOYS}/web/scale"),
            Some(scale),
            "application/json",
        ),
        (
            "binding",
            Method::POST,
            "/api/v1/namespaces/default/pods/p/binding".to_string(),
            Some(binding),
            "application/json",
        ),
        ("delete", Method::DELETE, format!("{CMS}/cm-1"), None, ""),
        (
            "deletecollection",
            Method::DELETE,
            CMS.to_string(),
            None,
            "",
        ),
    ]
}

async fn seed(client: &Client) {
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
    for (path, body) in [
        (CMS, configmap("cm-1")),
        (DEPLOYS, deployment("web")),
        ("/api/v1/namespaces/default/pods", pod),
    ] {
        let (status, body) = json_call(client, Method::POST, path, Some(body)).await;
        assert_eq!(status, StatusCode::CREATED, "{path}: {body}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn always_deny_refuses_every_write_path_with_upstreams_message() {
    // Objects are created first with the default chain, then the server restarts with
    // AlwaysDeny on the same data directory.
    let mut server = ApiServer::start(&[]).await;
    seed(&server.admin_client()).await;
    let dir = server.data_dir.clone();
    server.stop().await;
    let server = ApiServer::builder()
        .data_dir(&dir)
        .args(["--enable-admission-plugins=AlwaysDeny"])
        .start()
        .await;
    let client = server.admin_client();
    for (what, method, path, body, content_type) in writes() {
        let (status, body) = call(&client, method, &path, body, content_type).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{what}: {body}");
        assert_eq!(body["reason"], "Forbidden", "{what}: {body}");
        let message = body["message"].as_str().unwrap_or_default();
        assert!(
            message.ends_with("is forbidden: admission control is denying all modifications"),
            "{what}: {message}"
        );
    }
    let (_, body) = json_call(&client, Method::POST, CMS, Some(configmap("cm-9"))).await;
    assert_eq!(
        body["message"],
        "configmaps \"cm-9\" is forbidden: admission control is denying all modifications"
    );
    // Reads are not admitted; nothing was written.
    let (status, cm) = json_call(&client, Method::GET, &format!("{CMS}/cm-1"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(cm["data"], json!({"a": "1"}));
    let (_, scale) = json_call(&client, Method::GET, &format!("{DEPLOYS}/web/scale"), None).await;
    assert_eq!(scale["spec"]["replicas"], 1);
    // The metrics name the plugin, the phase and the outcome.
    let metrics = client.get(Proto::H1, "/metrics").await.unwrap().body;
    for series in [
        "apiserver_admission_controller_admission_duration_seconds_count{name=\"AlwaysDeny\",operation=\"CREATE\",rejected=\"true\",type=\"admit\"}",
        "apiserver_admission_step_admission_duration_seconds_count{operation=\"DELETE\",rejected=\"true\",type=\"admit\"}",
    ] {
        assert!(metrics.contains(series), "missing {series}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_write_path_succeeds_through_an_admitting_chain() {
    let server = ApiServer::start(&["--enable-admission-plugins=AlwaysAdmit"]).await;
    let client = server.admin_client();
    seed(&client).await;
    for (what, method, path, body, content_type) in writes() {
        let (status, body) = call(&client, method, &path, body, content_type).await;
        assert!(status.is_success(), "{what}: {status} {body}");
    }
    let (_, scale) = json_call(&client, Method::GET, &format!("{DEPLOYS}/web/scale"), None).await;
    assert_eq!(scale["spec"]["replicas"], 3);
    let (_, pod) = json_call(
        &client,
        Method::GET,
        "/api/v1/namespaces/default/pods/p",
        None,
    )
    .await;
    assert_eq!(pod["spec"]["nodeName"], "node-1");
    let (_, list) = json_call(&client, Method::GET, CMS, None).await;
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    // deletecollection removed everything (kube-root-ca.crt too, re-created later).
    assert!(
        !names.contains(&"cm-1") && !names.contains(&"cm-2"),
        "{names:?}"
    );
    // A conditional update with a stale resourceVersion is still a conflict.
    let (_, created) = json_call(&client, Method::POST, CMS, Some(configmap("cm-3"))).await;
    let mut stale = created.clone();
    stale["metadata"]["resourceVersion"] = json!("1");
    let (status, _) = json_call(&client, Method::PUT, &format!("{CMS}/cm-3"), Some(stale)).await;
    assert_eq!(status, StatusCode::CONFLICT);
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_or_conflicting_admission_plugins_are_one_line_start_errors() {
    for (args, expected) in [
        (
            vec!["--enable-admission-plugins=NoSuchPlugin"],
            "enable-admission-plugins plugin \"NoSuchPlugin\" is unknown",
        ),
        (
            vec![
                "--enable-admission-plugins=AlwaysDeny",
                "--disable-admission-plugins=AlwaysDeny",
            ],
            "[AlwaysDeny] in enable-admission-plugins and disable-admission-plugins overlapped",
        ),
        (
            vec!["--admission-control=Bogus"],
            "admission-control plugin \"Bogus\" is unknown",
        ),
    ] {
        let out = run_to_exit(&args).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: not one line: {stderr:?}");
        assert!(lines[0].starts_with("Error: "), "{stderr:?}");
        assert!(lines[0].contains(expected), "{args:?}: {stderr:?}");
    }
}
