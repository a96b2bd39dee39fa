//! Refused requests answer upstream's Status (code, reason, message) through the real binary;
//! `--version` and the start-up log say what upstream's would; custom-resource ages read as
//! kubectl shows them.

mod common;

use std::time::{Duration, Instant};

use common::client::{Client, Proto};
use common::{ApiServer, run_to_exit, run_tool};
use http::Method;
use serde_json::Value;

/// Sends `body` with `content_type`; returns the status code and the decoded answer.
async fn send(
    client: &Client,
    method: Method,
    path: &str,
    content_type: &str,
    body: &str,
) -> (u16, Value) {
    let mut req = client.request(method, path, body);
    req.headers_mut()
        .insert("content-type", content_type.parse().unwrap());
    let reply = client.send(Proto::H1, req).await.unwrap();
    let value =
        serde_json::from_str(&reply.body).unwrap_or_else(|e| panic!("{path}: {e}: {}", reply.body));
    (reply.status.as_u16(), value)
}

/// Asserts a Status with this code, reason and message.
fn assert_status(answer: &(u16, Value), code: u16, reason: &str, message: &str) {
    let (status, body) = answer;
    assert_eq!(*status, code, "{body}");
    assert_eq!(body["kind"], "Status", "{body}");
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["reason"], reason, "{body}");
    assert_eq!(body["message"], message, "{body}");
}

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn version_flag_prints_the_kubernetes_version_and_exits() {
    let out = run_to_exit(&["--version"]).await;
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Kubernetes v1.35.0\n");
    let raw = run_to_exit(&["--version=raw"]).await;
    assert!(raw.status.success(), "{raw:?}");
    let text = String::from_utf8_lossy(&raw.stdout);
    assert!(
        text.starts_with("version.Info{Major:\"1\", Minor:\"35\",")
            && text.contains("GitVersion:\"v1.35.0\""),
        "{text}"
    );
}

#[tokio::test]
async fn malformed_bodies_answer_upstream_statuses() {
    let server = ApiServer::start(&[]).await;
    let admin = server.admin_client();

    // A metav1.Time that does not parse: the decoder's 400.
    let answer = send(
        &admin,
        Method::POST,
        CONFIGMAPS,
        "application/json",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"t","creationTimestamp":"x"}}"#,
    )
    .await;
    assert_status(
        &answer,
        400,
        "BadRequest",
        r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006""#,
    );

    // A Content-Type that is no media type: 415, for create and for update.
    let unsupported = "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf";
    for content_type in [";;;garbage", "application/json; charset"] {
        let answer = send(
            &admin,
            Method::POST,
            CONFIGMAPS,
            content_type,
            r#"{"metadata":{"name":"c"}}"#,
        )
        .await;
        assert_status(&answer, 415, "UnsupportedMediaType", unsupported);
    }
    let answer = send(
        &admin,
        Method::PUT,
        &format!("{CONFIGMAPS}/c"),
        "application/json; a=b; a=c",
        r#"{"metadata":{"name":"c"}}"#,
    )
    .await;
    assert_status(&answer, 415, "UnsupportedMediaType", unsupported);

    // Invalid owner references: 422 with every cause.
    let answer = send(
        &admin,
        Method::POST,
        CONFIGMAPS,
        "application/json",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"o","ownerReferences":[{"apiVersion":"","kind":"","name":"","uid":""}]}}"#,
    )
    .await;
    assert_status(
        &answer,
        422,
        "Invalid",
        r#"ConfigMap "o" is invalid: [metadata.ownerReferences.apiVersion: Invalid value: "": version must not be empty, metadata.ownerReferences.kind: Invalid value: "": must not be empty, metadata.ownerReferences.name: Invalid value: "": must not be empty, metadata.ownerReferences.uid: Invalid value: "": must not be empty]"#,
    );
    let causes = answer.1["details"]["causes"].as_array().unwrap();
    assert_eq!(causes.len(), 4, "{}", answer.1);
    assert_eq!(causes[0]["field"], "metadata.ownerReferences.apiVersion");
    // Two controllers: 422 too.
    let (code, body) = send(
        &admin,
        Method::POST,
        "/apis/apps/v1/namespaces/default/deployments",
        "application/json",
        r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","ownerReferences":[
            {"apiVersion":"v1","kind":"A","name":"a","uid":"1","controller":true},
            {"apiVersion":"v1","kind":"B","name":"b","uid":"2","controller":true}]},
          "spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},
          "spec":{"containers":[{"name":"c","image":"i"}]}}}}"#,
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains(
            r#"Only one reference can have Controller set to true. Found "true" in references for A/a and B/b"#
        ),
        "{body}"
    );

    // Server-side apply bodies must name the endpoint's group, version and kind.
    let apply = "application/apply-patch+yaml";
    let answer = send(
        &admin,
        Method::PATCH,
        &format!("{CONFIGMAPS}/x?fieldManager=m"),
        apply,
        "metadata:\n  name: x\n",
    )
    .await;
    assert_status(&answer, 400, "BadRequest", "invalid object type: /, Kind=");
    let answer = send(
        &admin,
        Method::PATCH,
        "/apis/apps/v1/namespaces/default/deployments/x?fieldManager=m",
        apply,
        "apiVersion: apps/v1beta1\nkind: Deployment\nmetadata:\n  name: x\n",
    )
    .await;
    assert_status(
        &answer,
        400,
        "BadRequest",
        "invalid object type: apps/v1beta1, Kind=Deployment",
    );
    let answer = send(
        &admin,
        Method::PATCH,
        &format!("{CONFIGMAPS}/x?fieldManager=m"),
        apply,
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\n",
    )
    .await;
    assert_status(
        &answer,
        400,
        "BadRequest",
        "invalid object type: /v1, Kind=Secret",
    );
    // …and a correct one still applies.
    let (code, body) = send(
        &admin,
        Method::PATCH,
        &format!("{CONFIGMAPS}/x?fieldManager=m"),
        apply,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
    )
    .await;
    assert_eq!(code, 201, "{body}");
}

#[tokio::test]
async fn start_up_and_openapi_log_only_what_is_true() {
    let server = ApiServer::start(&[]).await;
    let admin = server.admin_client();
    // Every group-version document is built (each on first request).
    for path in [
        "/openapi/v3/api/v1",
        "/openapi/v3/apis/apps/v1",
        "/openapi/v2",
    ] {
        let reply = admin.get(Proto::H1, path).await.unwrap();
        assert_eq!(reply.status, 200, "{path}");
    }
    // The x509 authenticator authenticates: no claim that nothing does.
    let log = server.stderr.snapshot().join("\n");
    assert!(!log.contains("no authenticator configured"), "{log}");
    assert!(!log.contains("no schema for this resource"), "{log}");
}

#[tokio::test]
async fn custom_resource_age_column_is_a_human_duration_in_kubectl() {
    let server = ApiServer::start(&[]).await;
    let kubeconfig = server.kubeconfig().display().to_string();
    let kubectl = |args: Vec<&str>| {
        let mut all = vec!["--kubeconfig", kubeconfig.as_str()];
        all.extend(args);
        let all: Vec<String> = all.into_iter().map(str::to_string).collect();
        let home = server.data_dir.clone();
        async move {
            let args: Vec<&str> = all.iter().map(String::as_str).collect();
            run_tool("kubectl-1.35", &home, &args).await
        }
    };
    let crd = server.data_dir.join("crd.yaml");
    std::fs::write(
        &crd,
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
",
    )
    .unwrap();
    let out = kubectl(vec!["apply", "-f", crd.to_str().unwrap()]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    let out = kubectl(vec![
        "wait",
        "--for=condition=Established",
        "crd/widgets.example.com",
        "--timeout=60s",
    ])
    .await;
    assert_eq!(out.code, Some(0), "{out:?}");
    let cr = server.data_dir.join("cr.yaml");
    std::fs::write(
        &cr,
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n",
    )
    .unwrap();
    // Discovery of the new group can lag establishment by a moment: retry with a deadline.
    let deadline = Instant::now() + common::DEADLINE;
    loop {
        let out = kubectl(vec!["apply", "-f", cr.to_str().unwrap()]).await;
        if out.code == Some(0) {
            break;
        }
        assert!(Instant::now() < deadline, "{out:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let out = kubectl(vec!["get", "widgets", "w"]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", out.stdout);
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(header, ["NAME", "AGE"], "{}", out.stdout);
    let row: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(row[0], "w");
    // Seconds (or minutes on a very slow machine), never a raw timestamp.
    let age = row[1];
    let (number, unit) = age.split_at(age.len() - 1);
    assert!(
        matches!(unit, "s" | "m")
            && number.chars().all(|c| c.is_ascii_digit())
            && !number.is_empty(),
        "AGE {age:?} in {}",
        out.stdout
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_object_over_the_storage_request_limit_is_a_413_not_a_500() {
    let mut server = ApiServer::start(&[]).await;
    let admin = server.admin_client();
    // 100k labels: the body fits the 3 MiB request limit, the stored object (with its
    // managedFields) does not fit the storage's 1.5 MiB.
    let labels: serde_json::Map<String, Value> = (0..100_000)
        .map(|i| (format!("l{i:06}"), Value::from("v")))
        .collect();
    let body = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "many-labels", "labels": labels},
    });
    let answer = send(
        &admin,
        Method::POST,
        CONFIGMAPS,
        "application/json",
        &body.to_string(),
    )
    .await;
    assert_status(
        &answer,
        413,
        "RequestEntityTooLarge",
        "etcdserver: request is too large",
    );
    let reply = admin
        .get(Proto::H2, &format!("{CONFIGMAPS}/many-labels"))
        .await
        .unwrap();
    assert_eq!(reply.status, 404, "{}", reply.body);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn patch_bodies_that_do_not_parse_get_go_json_decoder_texts() {
    let mut server = ApiServer::start(&[]).await;
    let admin = server.admin_client();
    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p"}}"#;
    let (status, body) = send(&admin, Method::POST, CONFIGMAPS, "application/json", cm).await;
    assert_eq!(status, 201, "{body}");
    let path = format!("{CONFIGMAPS}/p");
    for (content_type, patch, message) in [
        (
            "application/merge-patch+json",
            "{bad",
            "error decoding patch: invalid character 'b' looking for beginning of object key string",
        ),
        (
            "application/json-patch+json",
            r#"[{"op":"add"} {"op":"add"}]"#,
            "error decoding patch: invalid character '{' after array element",
        ),
        (
            "application/strategic-merge-patch+json",
            r#"{"data":{"a":"1",}}"#,
            "invalid character '}' looking for beginning of object key string",
        ),
        (
            "application/merge-patch+json",
            r#"{"data":"#,
            "error decoding patch: unexpected end of JSON input",
        ),
    ] {
        let answer = send(&admin, Method::PATCH, &path, content_type, patch).await;
        assert_status(&answer, 400, "BadRequest", message);
    }
    server.stop().await;
}
