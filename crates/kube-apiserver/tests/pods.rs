//! Pods as kube-apiserver v1.35 serves them without a kubelet, through the real binary over
//! TLS: DELETE answers (the object or a Status), graceful deletion of bound pods, and the
//! subresources `binding`, `eviction`, `log`, `exec`/`attach`/`portforward` and
//! `ephemeralcontainers`, with kubectl 1.35 (and 1.20 where cheap).

mod common;

use common::client::{Client, Proto};
use common::{ApiServer, run_tool};
use http::{Method, StatusCode};
use serde_json::{Value, json};

const PODS: &str = "/api/v1/namespaces/default/pods";

struct Api {
    client: Client,
}

impl Api {
    async fn call_with(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> (StatusCode, String, http::HeaderMap) {
        let text = body.map(|b| b.to_string()).unwrap_or_default();
        let mut req = self.client.request(method, path, &text);
        if !text.is_empty() {
            req.headers_mut()
                .insert("content-type", "application/json".parse().unwrap());
        }
        for (name, value) in headers {
            req.headers_mut().insert(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value.parse().unwrap(),
            );
        }
        let reply = self.client.send(Proto::H1, req).await.unwrap();
        (reply.status, reply.body, reply.headers)
    }
}

impl Api {
    async fn json(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let (status, text, _) = self.call_with(method, path, body, &[]).await;
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, value)
    }
}

fn pod(name: &str, node: Option<&str>, containers: &[&str]) -> Value {
    let containers: Vec<Value> = containers
        .iter()
        .map(|c| json!({"name": c, "image": "busybox"}))
        .collect();
    let mut spec = json!({"containers": containers, "terminationGracePeriodSeconds": 30});
    if let Some(node) = node {
        spec["nodeName"] = json!(node);
    }
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}}, "spec": spec})
}

async fn create_pod(api: &Api, obj: Value) -> Value {
    let (status, created) = api.json(Method::POST, PODS, Some(obj)).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    created
}

/// Asserts a Failure Status with `code`, `reason` and `message`.
fn assert_status(body: &Value, code: u16, reason: &str, message: &str) {
    assert_eq!(body["kind"], "Status", "{body}");
    assert_eq!(body["status"], "Failure", "{body}");
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["reason"].as_str().unwrap_or(""), reason, "{body}");
    assert_eq!(body["message"], message, "{body}");
}

async fn start() -> (ApiServer, Api) {
    let server = ApiServer::start(&[]).await;
    let api = Api {
        client: server.admin_client(),
    };
    (server, api)
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_answers_with_the_object_or_a_status_as_upstream() {
    let (mut server, api) = start().await;
    // Pods return the deleted object (unbound: deleted at once, marked first).
    create_pod(&api, pod("gone", None, &["app"])).await;
    let (status, body) = api
        .json(Method::DELETE, &format!("{PODS}/gone"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["kind"], "Pod", "{body}");
    assert_eq!(body["metadata"]["deletionGracePeriodSeconds"], 0, "{body}");
    let (status, _) = api.json(Method::GET, &format!("{PODS}/gone"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // ConfigMaps answer with a Success Status naming group, resource and uid.
    let (_, cm) = api
        .json(
            Method::POST,
            "/api/v1/namespaces/default/configmaps",
            Some(json!({"metadata": {"name": "c"}})),
        )
        .await;
    let (status, body) = api
        .json(
            Method::DELETE,
            "/api/v1/namespaces/default/configmaps/c",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": {"name": "c", "kind": "configmaps", "uid": cm["metadata"]["uid"]}})
    );

    // Services and service accounts return the object too.
    for (path, obj) in [
        (
            "/api/v1/namespaces/default/serviceaccounts",
            json!({"metadata": {"name": "sa"}}),
        ),
        (
            "/api/v1/namespaces/default/services",
            json!({"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}}),
        ),
    ] {
        let (status, created) = api.json(Method::POST, path, Some(obj)).await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        let name = created["metadata"]["name"].as_str().unwrap().to_string();
        let (status, body) = api
            .json(Method::DELETE, &format!("{path}/{name}"), None)
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(
            body["metadata"]["uid"], created["metadata"]["uid"],
            "{body}"
        );
        assert_ne!(body["kind"], "Status", "{body}");
    }

    // A pod kept by a grace period with orphanDependents=false: 202 with the object.
    create_pod(&api, pod("kept", Some("n1"), &["app"])).await;
    let (status, body) = api
        .json(
            Method::DELETE,
            &format!("{PODS}/kept"),
            Some(json!({"kind": "DeleteOptions", "apiVersion": "v1", "orphanDependents": false})),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body["kind"], "Pod");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bound_pod_terminates_gracefully_and_a_shorter_grace_period_wins() {
    let (mut server, api) = start().await;
    create_pod(&api, pod("web", Some("n1"), &["app"])).await;
    let (status, marked) = api.json(Method::DELETE, &format!("{PODS}/web"), None).await;
    assert_eq!(status, StatusCode::OK, "{marked}");
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 30);
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    let (status, still) = api.json(Method::GET, &format!("{PODS}/web"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(still, marked);

    // A longer period changes nothing.
    let (_, again) = api
        .json(
            Method::DELETE,
            &format!("{PODS}/web?gracePeriodSeconds=60"),
            None,
        )
        .await;
    assert_eq!(again, marked);
    // A shorter one shortens it.
    let (_, shorter) = api
        .json(
            Method::DELETE,
            &format!("{PODS}/web?gracePeriodSeconds=5"),
            None,
        )
        .await;
    assert_eq!(shorter["metadata"]["deletionGracePeriodSeconds"], 5);
    // Zero removes it.
    let (status, _) = api
        .json(
            Method::DELETE,
            &format!("{PODS}/web?gracePeriodSeconds=0"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = api.json(Method::GET, &format!("{PODS}/web"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Terminated pods go at once even when bound.
    let created = create_pod(&api, pod("done", Some("n1"), &["app"])).await;
    let mut done = created.clone();
    done["status"]["phase"] = json!("Succeeded");
    let (status, body) = api
        .json(Method::PUT, &format!("{PODS}/done/status"), Some(done))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    api.json(Method::DELETE, &format!("{PODS}/done"), None)
        .await;
    let (status, _) = api.json(Method::GET, &format!("{PODS}/done"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn binding_assigns_a_node_once_with_annotations() {
    let (mut server, api) = start().await;
    create_pod(&api, pod("web", None, &["app"])).await;
    let binding = |name: &str, node: &str| {
        json!({"apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": name, "annotations": {"scheduler/by": "test"}},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
    };
    let (status, body) = api
        .json(
            Method::POST,
            &format!("{PODS}/web/binding"),
            Some(binding("web", "n1")),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(
        body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
    );
    let (_, bound) = api.json(Method::GET, &format!("{PODS}/web"), None).await;
    assert_eq!(bound["spec"]["nodeName"], "n1");
    assert_eq!(bound["metadata"]["annotations"]["scheduler/by"], "test");
    assert_eq!(bound["status"]["conditions"][0]["type"], "PodScheduled");

    let (status, body) = api
        .json(
            Method::POST,
            &format!("{PODS}/web/binding"),
            Some(binding("web", "n2")),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_status(
        &body,
        409,
        "Conflict",
        "Operation cannot be fulfilled on pods/binding \"web\": pod web is already assigned to node \"n1\"",
    );
    let (status, body) = api
        .json(
            Method::POST,
            &format!("{PODS}/web/binding"),
            Some(binding("other", "n2")),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_status(
        &body,
        400,
        "BadRequest",
        "name in URL does not match name in Binding object",
    );
    let (status, body) = api
        .json(
            Method::POST,
            &format!("{PODS}/missing/binding"),
            Some(binding("missing", "n2")),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_status(&body, 404, "NotFound", "pods \"missing\" not found");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn log_exec_attach_and_portforward_of_an_unscheduled_pod_answer_as_upstream() {
    let (mut server, api) = start().await;
    create_pod(&api, pod("one", None, &["app"])).await;
    create_pod(&api, pod("two", None, &["a", "b"])).await;

    // The log of a pod without a node is upstream's null stream: 204 without a body.
    let (status, text, _) = api
        .call_with(Method::GET, &format!("{PODS}/one/log"), None, &[])
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(text, "");
    let (status, body) = api
        .json(Method::GET, &format!("{PODS}/two/log"), None)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_status(
        &body,
        400,
        "BadRequest",
        "a container name must be specified for pod two, choose one of: [a b]",
    );
    let (_, body) = api
        .json(Method::GET, &format!("{PODS}/one/log?container=zz"), None)
        .await;
    assert_status(
        &body,
        400,
        "BadRequest",
        "container zz is not valid for pod one",
    );
    let (_, body) = api
        .json(Method::GET, &format!("{PODS}/one/log?tailLines=-1"), None)
        .await;
    assert_status(
        &body,
        422,
        "Invalid",
        "PodLogOptions \"one\" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0",
    );

    // exec, attach, portforward: GET and POST, with and without an upgrade.
    for sub in [
        "exec?command=ls&stdout=true",
        "attach?stdout=true",
        "portforward?ports=80",
    ] {
        for method in [Method::GET, Method::POST] {
            for headers in [
                &[][..],
                &[("connection", "Upgrade"), ("upgrade", "SPDY/3.1")][..],
                &[
                    ("connection", "Upgrade"),
                    ("upgrade", "websocket"),
                    ("sec-websocket-version", "13"),
                    ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
                    ("sec-websocket-protocol", "v5.channel.k8s.io"),
                ][..],
            ] {
                let (status, text, _) = api
                    .call_with(method.clone(), &format!("{PODS}/one/{sub}"), None, headers)
                    .await;
                assert_eq!(status, StatusCode::BAD_REQUEST, "{sub} {method} {text}");
                let body: Value = serde_json::from_str(&text).unwrap();
                assert_status(
                    &body,
                    400,
                    "BadRequest",
                    "pod one does not have a host assigned",
                );
            }
        }
    }
    let (_, body) = api
        .json(
            Method::POST,
            &format!("{PODS}/missing/exec?command=ls"),
            None,
        )
        .await;
    assert_status(&body, 404, "NotFound", "pods \"missing\" not found");
    // Bound to a node that does not exist: upstream's node lookup fails.
    create_pod(&api, pod("bound", Some("n9"), &["app"])).await;
    let (_, body) = api
        .json(Method::GET, &format!("{PODS}/bound/log"), None)
        .await;
    assert_status(&body, 404, "NotFound", "nodes \"n9\" not found");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn ephemeral_containers_are_added_only_through_their_subresource() {
    let (mut server, api) = start().await;
    create_pod(&api, pod("web", None, &["app"])).await;
    let patch = json!({"spec": {"ephemeralContainers": [
        {"name": "debugger", "image": "busybox", "targetContainerName": "app",
         "stdin": true, "tty": true}]}});
    let (status, text, _) = api
        .call_with(
            Method::PATCH,
            &format!("{PODS}/web/ephemeralcontainers"),
            Some(patch.clone()),
            &[("content-type", "application/strategic-merge-patch+json")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let patched: Value = serde_json::from_str(&text).unwrap();
    let added = &patched["spec"]["ephemeralContainers"][0];
    assert_eq!(added["name"], "debugger");
    assert_eq!(added["imagePullPolicy"], "Always");
    assert_eq!(added["terminationMessagePolicy"], "File");

    // The main resource refuses the change; the subresource refuses removal and bad fields.
    let (status, _, _) = api
        .call_with(
            Method::PATCH,
            &format!("{PODS}/web"),
            Some(json!({"spec": {"ephemeralContainers": null}})),
            &[("content-type", "application/merge-patch+json")],
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (_, text, _) = api
        .call_with(
            Method::PATCH,
            &format!("{PODS}/web/ephemeralcontainers"),
            Some(json!({"spec": {"ephemeralContainers": [
                {"name": "debugger", "image": "busybox", "targetContainerName": "app", "stdin": true, "tty": true},
                {"name": "two", "image": "busybox", "ports": [{"containerPort": 80}]}]}})),
            &[("content-type", "application/merge-patch+json")],
        )
        .await;
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_status(
        &body,
        422,
        "Invalid",
        "Pod \"web\" is invalid: spec.ephemeralContainers[1].ports: Forbidden: cannot be set for an Ephemeral Container",
    );
    server.stop().await;
}

fn pdb(allowed: i64) -> Value {
    json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "budget"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        "status": {"disruptionsAllowed": allowed, "currentHealthy": 2, "desiredHealthy": 1,
            "expectedPods": 2, "observedGeneration": 1}})
}

/// Creates the budget and sets its status as the disruption controller would.
async fn create_budget(api: &Api, allowed: i64) {
    let path = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";
    let (status, created) = api.json(Method::POST, path, Some(pdb(allowed))).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let mut with_status = created.clone();
    with_status["status"] = pdb(allowed)["status"].clone();
    let (status, body) = api
        .json(
            Method::PUT,
            &format!("{path}/budget/status"),
            Some(with_status),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

async fn running_pod(api: &Api, name: &str) {
    let created = create_pod(api, pod(name, Some("n1"), &["app"])).await;
    let mut running = created;
    running["status"] = json!({"phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}]});
    let (status, body) = api
        .json(Method::PUT, &format!("{PODS}/{name}/status"), Some(running))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

fn eviction(name: &str, version: &str) -> Value {
    json!({"apiVersion": format!("policy/{version}"), "kind": "Eviction",
        "metadata": {"name": name, "namespace": "default"}})
}

#[tokio::test(flavor = "multi_thread")]
async fn eviction_respects_the_disruption_budget() {
    let (mut server, api) = start().await;
    running_pod(&api, "web-1").await;
    running_pod(&api, "web-2").await;
    create_budget(&api, 1).await;

    let (status, body) = api
        .json(
            Method::POST,
            &format!("{PODS}/web-1/eviction"),
            Some(eviction("web-1", "v1")),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["status"], "Success");
    // Bound: the pod terminates gracefully, marked as a disruption target.
    let (_, evicted) = api.json(Method::GET, &format!("{PODS}/web-1"), None).await;
    assert_eq!(
        evicted["metadata"]["deletionGracePeriodSeconds"], 30,
        "{evicted}"
    );
    let conditions = evicted["status"]["conditions"].as_array().unwrap();
    assert!(
        conditions
            .iter()
            .any(|c| c["type"] == "DisruptionTarget" && c["reason"] == "EvictionByEvictionAPI"),
        "{evicted}"
    );
    let (_, budget) = api
        .json(
            Method::GET,
            "/apis/policy/v1/namespaces/default/poddisruptionbudgets/budget",
            None,
        )
        .await;
    assert_eq!(budget["status"]["disruptionsAllowed"], 0, "{budget}");
    assert!(
        budget["status"]["disruptedPods"]["web-1"].is_string(),
        "{budget}"
    );

    // No disruption left: 429 (policy/v1beta1 bodies are accepted too).
    let (status, text, headers) = api
        .call_with(
            Method::POST,
            &format!("{PODS}/web-2/eviction"),
            Some(eviction("web-2", "v1beta1")),
            &[],
        )
        .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{text}");
    assert!(headers.get("retry-after").is_none());
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_status(
        &body,
        429,
        "TooManyRequests",
        "Cannot evict pod as it would violate the pod's disruption budget.",
    );
    assert_eq!(
        body["details"]["causes"],
        json!([{"reason": "DisruptionBudget",
            "message": "The disruption budget budget needs 1 healthy pods and has 2 currently"}])
    );
    let (status, _) = api.json(Method::GET, &format!("{PODS}/web-2"), None).await;
    assert_eq!(status, StatusCode::OK);

    // A second budget selecting the pod: upstream's 500.
    let mut second = pdb(1);
    second["metadata"]["name"] = json!("second");
    api.json(
        Method::POST,
        "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
        Some(second),
    )
    .await;
    let (status, body) = api
        .json(
            Method::POST,
            &format!("{PODS}/web-2/eviction"),
            Some(eviction("web-2", "v1")),
        )
        .await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_status(
        &body,
        500,
        "",
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
    );

    // Pending pods skip budgets and go at once (unbound).
    create_pod(&api, pod("pending", None, &["app"])).await;
    let (status, _) = api
        .json(
            Method::POST,
            &format!("{PODS}/pending/eviction"),
            Some(eviction("pending", "v1")),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _) = api
        .json(Method::GET, &format!("{PODS}/pending"), None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = api
        .json(
            Method::POST,
            &format!("{PODS}/web-2/eviction"),
            Some(eviction("other", "v1")),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_status(
        &body,
        400,
        "BadRequest",
        "name in URL does not match name in Eviction object",
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn discovery_lists_the_pod_subresources_with_upstreams_kinds_and_verbs() {
    let (mut server, api) = start().await;
    let (_, list) = api.json(Method::GET, "/api/v1", None).await;
    let find = |name: &str| {
        list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} missing"))
    };
    for (name, kind, verbs) in [
        ("pods/attach", "PodAttachOptions", json!(["create", "get"])),
        ("pods/binding", "Binding", json!(["create"])),
        (
            "pods/ephemeralcontainers",
            "Pod",
            json!(["get", "patch", "update"]),
        ),
        ("pods/exec", "PodExecOptions", json!(["create", "get"])),
        ("pods/log", "Pod", json!(["get"])),
        (
            "pods/portforward",
            "PodPortForwardOptions",
            json!(["create", "get"]),
        ),
        ("pods/status", "Pod", json!(["get", "patch", "update"])),
    ] {
        let r = find(name);
        assert_eq!(r["kind"], kind, "{r}");
        assert_eq!(r["verbs"], verbs, "{r}");
    }
    let eviction = find("pods/eviction");
    assert_eq!(eviction["group"], "policy");
    assert_eq!(eviction["version"], "v1");
    assert_eq!(eviction["kind"], "Eviction");
    assert_eq!(eviction["verbs"], json!(["create"]));
    server.stop().await;
}

/// `kubectl <args>` with the admin kubeconfig.
async fn kubectl(tool: &str, server: &ApiServer, args: &[&str]) -> common::ToolOutput {
    let kubeconfig = server.kubeconfig().display().to_string();
    let mut all = vec!["--kubeconfig", kubeconfig.as_str()];
    all.extend_from_slice(args);
    run_tool(tool, &server.data_dir, &all).await
}

async fn kubectl_pod_lifecycle(tool: &str) {
    let (mut server, api) = start().await;
    create_pod(&api, pod("bound", Some("n1"), &["app"])).await;
    create_pod(&api, pod("pending", None, &["app"])).await;

    // A bound pod is left Terminating.
    let out = kubectl(tool, &server, &["delete", "pod", "bound", "--wait=false"]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(out.stdout.contains("pod \"bound\" deleted"), "{out:?}");
    let out = kubectl(tool, &server, &["get", "pod", "bound"]).await;
    assert!(out.stdout.contains("Terminating"), "{out:?}");
    // Forced: gone.
    let out = kubectl(
        tool,
        &server,
        &["delete", "pod", "bound", "--grace-period=0", "--force"],
    )
    .await;
    assert_eq!(out.code, Some(0), "{out:?}");
    let out = kubectl(tool, &server, &["get", "pod", "bound"]).await;
    assert!(out.stderr.contains("pods \"bound\" not found"), "{out:?}");

    // Logs of an unscheduled pod are empty; exec explains why it cannot run.
    let out = kubectl(tool, &server, &["logs", "pending"]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.stdout, "");
    let out = kubectl(tool, &server, &["exec", "pending", "--", "ls"]).await;
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr
            .contains("Error from server (BadRequest): pod pending does not have a host assigned"),
        "{out:?}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_1_35_deletes_logs_and_execs_pods_as_upstream() {
    kubectl_pod_lifecycle("kubectl-1.35").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_1_20_deletes_logs_and_execs_pods_as_upstream() {
    kubectl_pod_lifecycle("kubectl-1.20").await;
}

async fn kubectl_drain(tool: &str) {
    let (mut server, api) = start().await;
    let (status, body) = api
        .json(
            Method::POST,
            "/api/v1/nodes",
            Some(json!({"metadata": {"name": "n1"}})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    running_pod(&api, "web-1").await;
    create_budget(&api, 1).await;
    let out = kubectl(
        tool,
        &server,
        &[
            "drain",
            "n1",
            "--force",
            "--timeout=60s",
            "--grace-period=0",
        ],
    )
    .await;
    // Evicted through the eviction API; the pod is gone (grace period 0).
    assert!(
        out.stdout.contains("pod/web-1 evicted") || out.stderr.contains("pod/web-1 evicted"),
        "{out:?}"
    );
    let (status, _) = api.json(Method::GET, &format!("{PODS}/web-1"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, node) = api.json(Method::GET, "/api/v1/nodes/n1", None).await;
    assert_eq!(node["spec"]["unschedulable"], true, "{node}");

    // With no disruption left, kubectl's eviction (create --raw) gets the 429.
    running_pod(&api, "web-2").await;
    let eviction = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(eviction.path(), eviction_body("web-2").to_string()).unwrap();
    let path = eviction.path().display().to_string();
    let out = kubectl(
        tool,
        &server,
        &[
            "create",
            "--raw",
            "/api/v1/namespaces/default/pods/web-2/eviction",
            "-f",
            &path,
        ],
    )
    .await;
    assert_ne!(out.code, Some(0), "{out:?}");
    assert!(
        out.stderr
            .contains("Cannot evict pod as it would violate the pod's disruption budget"),
        "{out:?}"
    );
    server.stop().await;
}

fn eviction_body(name: &str) -> Value {
    eviction(name, "v1")
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_1_35_drains_a_node_through_the_eviction_api() {
    kubectl_drain("kubectl-1.35").await;
}
