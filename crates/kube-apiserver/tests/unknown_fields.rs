//! Fields a built-in type does not declare are never stored: not on create, update, or any
//! patch type; `fieldValidation` decides only whether the client hears about them (`Warn`, the
//! default, sends a 299 warning per field; `Strict` refuses; `Ignore` says nothing).
//! Server-side apply refuses undeclared fields naming the object, and managedFields never
//! list a dropped field.

mod common;

use common::ApiServer;
use common::client::{Client, Proto, Reply};
use http::Method;
use serde_json::{Value, json};

const BASE: &str = "/apis/apps/v1/namespaces/default/deployments";

async fn send(
    client: &Client,
    method: Method,
    path: &str,
    body: &str,
    content_type: &str,
) -> Reply {
    let mut req = client.request(method, path, body);
    req.headers_mut()
        .insert("content-type", content_type.parse().unwrap());
    client.send(Proto::H2, req).await.unwrap()
}

fn deployment(name: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
        }
    })
}

fn warnings(reply: &Reply) -> Vec<String> {
    reply
        .headers
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect()
}

/// The stored object, as a GET returns it.
async fn stored(client: &Client, name: &str) -> Value {
    let reply = client
        .get(Proto::H2, &format!("{BASE}/{name}"))
        .await
        .unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
    serde_json::from_str(&reply.body).unwrap()
}

/// No `bogus` key anywhere in the object (managedFields included: a dropped field is never
/// listed as `f:bogus`).
fn assert_no_bogus(obj: &Value) {
    let text = obj.to_string();
    assert!(
        !text.contains("bogus"),
        "an unknown field was stored: {text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_fields_are_dropped_on_create_update_and_every_patch_type() {
    let mut server = ApiServer::start(&[]).await;
    let admin = server.admin_client();

    // Create, top level and nested, with the default (Warn).
    let mut body = deployment("web");
    body["bogusTop"] = json!(1);
    body["spec"]["template"]["spec"]["containers"][0]["bogusNested"] = json!("x");
    let reply = send(
        &admin,
        Method::POST,
        BASE,
        &body.to_string(),
        "application/json",
    )
    .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    assert_eq!(
        warnings(&reply),
        vec![
            r#"299 - "unknown field \"bogusTop\"""#,
            r#"299 - "unknown field \"spec.template.spec.containers[0].bogusNested\"""#
        ]
    );
    assert_no_bogus(&serde_json::from_str(&reply.body).unwrap());
    assert_no_bogus(&stored(&admin, "web").await);

    // Update (PUT) with Ignore: dropped silently.
    let mut current = stored(&admin, "web").await;
    current["spec"]["bogusSpec"] = json!(true);
    current["spec"]["replicas"] = json!(2);
    let reply = send(
        &admin,
        Method::PUT,
        &format!("{BASE}/web?fieldValidation=Ignore"),
        &current.to_string(),
        "application/json",
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(warnings(&reply).is_empty(), "{:?}", warnings(&reply));
    let now = stored(&admin, "web").await;
    assert_no_bogus(&now);
    assert_eq!(now["spec"]["replicas"], 2);

    // Every patch type.
    let patches = [
        (
            "application/json-patch+json",
            json!([{"op": "add", "path": "/spec/bogusJson", "value": 1},
                   {"op": "replace", "path": "/spec/replicas", "value": 3}]),
            "spec.bogusJson",
        ),
        (
            "application/merge-patch+json",
            json!({"spec": {"bogusMerge": 1, "replicas": 4}}),
            "spec.bogusMerge",
        ),
        (
            "application/strategic-merge-patch+json",
            json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "bogusSmp": 1}]}}, "replicas": 5}}),
            "spec.template.spec.containers[0].bogusSmp",
        ),
    ];
    for (i, (content_type, patch, field)) in patches.iter().enumerate() {
        let reply = send(
            &admin,
            Method::PATCH,
            &format!("{BASE}/web"),
            &patch.to_string(),
            content_type,
        )
        .await;
        assert_eq!(reply.status, 200, "{content_type}: {}", reply.body);
        assert_eq!(
            warnings(&reply),
            vec![format!(r#"299 - "unknown field \"{field}\"""#)],
            "{content_type}"
        );
        let now = stored(&admin, "web").await;
        assert_no_bogus(&now);
        assert_eq!(now["spec"]["replicas"], 3 + i, "{content_type}");
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn strict_validation_refuses_unknown_and_duplicate_fields_with_upstreams_messages() {
    let mut server = ApiServer::start(&[]).await;
    let admin = server.admin_client();
    let mut body = deployment("strict");
    body["spec"]["bogus"] = json!(1);
    let reply = send(
        &admin,
        Method::POST,
        &format!("{BASE}?fieldValidation=Strict"),
        &body.to_string(),
        "application/json",
    )
    .await;
    assert_eq!(reply.status, 400, "{}", reply.body);
    let status: Value = serde_json::from_str(&reply.body).unwrap();
    assert_eq!(status["reason"], "BadRequest");
    assert_eq!(
        status["message"],
        r#"Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: unknown field "spec.bogus""#
    );
    // Duplicate fields, as the JSON decoder sees them.
    let duplicated = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"dup","name":"dup"},"spec":{"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}"#;
    let reply = send(
        &admin,
        Method::POST,
        &format!("{BASE}?fieldValidation=Strict"),
        duplicated,
        "application/json",
    )
    .await;
    assert_eq!(reply.status, 400, "{}", reply.body);
    assert!(
        reply
            .body
            .contains(r#"strict decoding error: duplicate field \"metadata.name\""#),
        "{}",
        reply.body
    );
    // Nothing was created by either.
    for name in ["strict", "dup"] {
        let reply = admin
            .get(Proto::H1, &format!("{BASE}/{name}"))
            .await
            .unwrap();
        assert_eq!(reply.status, 404, "{name}: {}", reply.body);
    }
    // A strict merge patch is refused as upstream words it.
    let reply = send(
        &admin,
        Method::POST,
        BASE,
        &deployment("p").to_string(),
        "application/json",
    )
    .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let reply = send(
        &admin,
        Method::PATCH,
        &format!("{BASE}/p?fieldValidation=Strict"),
        r#"{"spec":{"bogus":1}}"#,
        "application/merge-patch+json",
    )
    .await;
    assert_eq!(reply.status, 422, "{}", reply.body);
    assert!(
        reply
            .body
            .contains(r#"strict decoding error: unknown field \"spec.bogus\""#),
        "{}",
        reply.body
    );
    assert_no_bogus(&stored(&admin, "p").await);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn server_side_apply_of_an_undeclared_field_fails_naming_the_object() {
    let mut server = ApiServer::start(&[]).await;
    let admin = server.admin_client();
    // As kubectl sends it: with the namespace.
    let mut body = deployment("applied");
    body["metadata"]["namespace"] = json!("default");
    body["spec"]["bogus"] = json!(1);
    let reply = send(
        &admin,
        Method::PATCH,
        &format!("{BASE}/applied?fieldManager=test"),
        &body.to_string(),
        "application/apply-patch+yaml",
    )
    .await;
    assert_eq!(reply.status, 400, "{}", reply.body);
    let status: Value = serde_json::from_str(&reply.body).unwrap();
    assert_eq!(
        status["message"],
        "failed to create typed patch object (default/applied; apps/v1, Kind=Deployment): .spec.bogus: field not declared in schema"
    );
    // Without it the apply works, and managedFields list only declared fields.
    body["spec"].as_object_mut().unwrap().remove("bogus");
    let reply = send(
        &admin,
        Method::PATCH,
        &format!("{BASE}/applied?fieldManager=test"),
        &body.to_string(),
        "application/apply-patch+yaml",
    )
    .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    assert_no_bogus(&stored(&admin, "applied").await);
    server.stop().await;
}
