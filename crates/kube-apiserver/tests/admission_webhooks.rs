//! Admission webhooks end to end: the real binary calls webhook servers written here over TLS
//! (certificates from a test CA, trusted through `caBundle`), with kubectl as the client:
//! rejections with the webhook's message, mutations and their reinvocation, failure policies
//! while a webhook is down, timeouts, selectors, match conditions, dry runs, bad patches,
//! wrong uids and warnings.

mod common;

#[path = "../../apiserver/tests/common/pki.rs"]
#[allow(dead_code)]
mod pki;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use common::{ApiServer, ToolOutput, eventually, free_port, run_tool};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use pki::Ca;
use serde_json::{Value, json};

/// What a webhook answers.
enum Reply {
    /// An AdmissionReview (or any JSON) with status 200.
    Json(Value),
    /// Never answers (the server must cut the call off).
    Hang,
    /// Answers once every party of the barrier has arrived.
    AfterBarrier(Arc<tokio::sync::Barrier>, Value),
}

/// Answers a review sent to a path.
type Handler = Arc<dyn Fn(&str, &Value) -> Reply + Send + Sync>;

/// A TLS webhook server recording every review it gets, by path.
struct WebhookServer {
    /// `https://127.0.0.1:<port>`.
    url: String,
    /// The CA bundle (base64 PEM) that verifies it.
    ca_bundle: String,
    requests: Arc<Mutex<Vec<Received>>>,
}

/// One review a webhook server got.
#[derive(Clone, Debug)]
struct Received {
    path: String,
    /// The request target as sent (origin form `/path?query`, or the absolute form).
    target: String,
    body: Value,
    authorization: Option<String>,
}

impl WebhookServer {
    async fn start(ca: &Ca, handler: Handler) -> WebhookServer {
        let serving = ca.serving("webhook", &["127.0.0.1", "localhost", "hook.webhooks.svc"]);
        Self::start_with(&serving.cert, &serving.key, &ca.pem.cert, handler).await
    }

    /// A server presenting `cert_pem`, trusted through a caBundle of `bundle_pem`.
    async fn start_with(
        cert_pem: &str,
        key_pem: &str,
        bundle_pem: &str,
        handler: Handler,
    ) -> WebhookServer {
        use rustls::pki_types::pem::PemObject;
        let certs = rustls::pki_types::CertificateDer::pem_slice_iter(cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).unwrap();
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("https://{}", listener.local_addr().unwrap());
        let requests: Arc<Mutex<Vec<Received>>> = Arc::default();
        let recorded = requests.clone();
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let (acceptor, handler, recorded) =
                    (acceptor.clone(), handler.clone(), recorded.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(
                        move |req: http::Request<hyper::body::Incoming>| {
                            let (handler, recorded) = (handler.clone(), recorded.clone());
                            async move {
                                let path = req.uri().path().to_string();
                                let target = req.uri().to_string();
                                let authorization = req
                                    .headers()
                                    .get("authorization")
                                    .and_then(|v| v.to_str().ok())
                                    .map(str::to_string);
                                let body = req.into_body().collect().await?.to_bytes();
                                let body: Value =
                                    serde_json::from_slice(&body).unwrap_or(Value::Null);
                                recorded.lock().unwrap().push(Received {
                                    path: path.clone(),
                                    target,
                                    body: body.clone(),
                                    authorization,
                                });
                                let answer = match handler(&path, &body) {
                                    Reply::Json(v) => v,
                                    Reply::Hang => std::future::pending().await,
                                    Reply::AfterBarrier(barrier, v) => {
                                        barrier.wait().await;
                                        v
                                    }
                                };
                                Ok::<_, hyper::Error>(
                                    http::Response::builder()
                                        .header("Content-Type", "application/json")
                                        .body(Full::new(Bytes::from(answer.to_string())))
                                        .unwrap(),
                                )
                            }
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        WebhookServer {
            url,
            ca_bundle: STANDARD.encode(bundle_pem),
            requests,
        }
    }

    /// The reviews received on `path`.
    fn reviews(&self, path: &str) -> Vec<Value> {
        self.received(path).into_iter().map(|r| r.body).collect()
    }

    /// Everything received on `path`.
    fn received(&self, path: &str) -> Vec<Received> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.path == path)
            .cloned()
            .collect()
    }
}

/// An AdmissionReview v1 answer to `review`, with `response` fields added to the uid.
fn answer(review: &Value, response: Value) -> Value {
    let mut r = json!({"uid": review["request"]["uid"]});
    r.as_object_mut()
        .unwrap()
        .extend(response.as_object().unwrap().clone());
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": r})
}

/// An answer with a JSON patch.
fn patched(review: &Value, ops: Value) -> Value {
    answer(
        review,
        json!({"allowed": true, "patchType": "JSONPatch", "patch": STANDARD.encode(ops.to_string())}),
    )
}

/// A kubectl 1.35 session against the server.
struct Kubectl {
    kubeconfig: String,
    home: tempfile::TempDir,
}

impl Kubectl {
    fn new(server: &ApiServer) -> Self {
        Kubectl {
            kubeconfig: server.kubeconfig().display().to_string(),
            home: tempfile::tempdir().unwrap(),
        }
    }

    async fn run(&self, args: &[&str]) -> ToolOutput {
        let mut all = vec!["--kubeconfig", self.kubeconfig.as_str()];
        all.extend_from_slice(args);
        run_tool("kubectl-1.35", self.home.path(), &all).await
    }

    async fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args).await;
        assert_eq!(out.code, Some(0), "kubectl {args:?}: {out:?}");
        out.stdout
    }

    fn file(&self, name: &str, content: &Value) -> PathBuf {
        let path = self.home.path().join(name);
        std::fs::write(&path, content.to_string()).unwrap();
        path
    }

    async fn apply(&self, name: &str, content: &Value) -> String {
        let path = self.file(name, content);
        self.ok(&["apply", "-f", &path.display().to_string()]).await
    }

    async fn create(&self, name: &str, content: &Value) -> ToolOutput {
        let path = self.file(name, content);
        self.run(&["create", "-f", &path.display().to_string()])
            .await
    }
}

fn configmap(name: &str, namespace: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": namespace, "labels": labels},
           "data": {"k": "v"}})
}

/// A webhook entry for configmap creates at `url`.
fn hook(name: &str, url: &str, ca_bundle: &str) -> Value {
    json!({
        "name": name,
        "clientConfig": {"url": url, "caBundle": ca_bundle},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    })
}

fn validating(name: &str, hooks: Vec<Value>) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
           "metadata": {"name": name}, "webhooks": hooks})
}

fn mutating(name: &str, hooks: Vec<Value>) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
           "metadata": {"name": name}, "webhooks": hooks})
}

/// Waits until a dry-run create of `probe` fails with a message containing `needle`
/// (the configuration was picked up).
async fn wait_until_refused(k: &Kubectl, probe: &Value, needle: &str) -> String {
    let path = k.file("probe.json", probe);
    let path = path.display().to_string();
    eventually("the webhook configuration to take effect", || async {
        let out = k.run(&["create", "--dry-run=server", "-f", &path]).await;
        (out.code != Some(0) && out.stderr.contains(needle)).then_some(out.stderr)
    })
    .await
}

fn deny_named_forbidden() -> Handler {
    Arc::new(|_path, review| {
        let name = review["request"]["name"].as_str().unwrap_or_default();
        Reply::Json(if name.starts_with("forbidden-") {
            answer(
                review,
                json!({"allowed": false, "status": {"code": 403, "reason": "Forbidden",
                       "message": "configmaps named forbidden-* are not allowed"}}),
            )
        } else {
            answer(review, json!({"allowed": true}))
        })
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validating_webhook_rejects_a_configmap_with_its_message_and_code() {
    let server = ApiServer::start(&[]).await;
    let k = Kubectl::new(&server);
    let ca = Ca::new("webhook-ca");
    let hookd = WebhookServer::start(&ca, deny_named_forbidden()).await;
    let created = k
        .apply(
            "vwc.json",
            &validating(
                "deny-forbidden",
                vec![hook(
                    "deny.example.com",
                    &format!("{}/validate", hookd.url),
                    &hookd.ca_bundle,
                )],
            ),
        )
        .await;
    assert!(
        created.contains(
            "validatingwebhookconfiguration.admissionregistration.k8s.io/deny-forbidden created"
        ),
        "{created}"
    );
    let table = k.ok(&["get", "validatingwebhookconfigurations"]).await;
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "WEBHOOKS", "AGE"], "{table}");
    assert!(table.contains("deny-forbidden"), "{table}");

    let probe = configmap("forbidden-probe", "default", json!({}));
    wait_until_refused(&k, &probe, "denied the request").await;
    let out = k
        .create("cm.json", &configmap("forbidden-one", "default", json!({})))
        .await;
    assert_ne!(out.code, Some(0));
    assert!(
        out.stderr.contains("Error from server (Forbidden): error when creating")
            && out.stderr.contains(
                "admission webhook \"deny.example.com\" denied the request: configmaps named forbidden-* are not allowed"
            ),
        "{out:?}"
    );
    // Other names pass, and the webhook saw an AdmissionReview v1 for them.
    k.ok(&["create", "configmap", "allowed-one"]).await;
    let reviews = hookd.reviews("/validate");
    let review = reviews
        .iter()
        .find(|r| r["request"]["name"] == "allowed-one")
        .expect("a review for allowed-one");
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
    let request = &review["request"];
    assert_eq!(request["operation"], "CREATE");
    assert_eq!(request["namespace"], "default");
    assert_eq!(
        request["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(
        request["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(request["object"]["metadata"]["name"], "allowed-one");
    assert_eq!(request["oldObject"], Value::Null);
    assert_eq!(request["options"]["kind"], "CreateOptions");
    assert!(
        request["userInfo"]["groups"]
            .as_array()
            .is_some_and(|g| g.contains(&json!("system:masters"))),
        "{request}"
    );
    assert_eq!(request["dryRun"], false);
    assert!(k.run(&["get", "configmap", "forbidden-one"]).await.code != Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutating_webhook_adds_a_label_and_is_reinvoked_after_a_later_webhook_changes_the_object() {
    let tmp = tempfile::tempdir().unwrap();
    let policy = tmp.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Request\n  resources: [{group: \"\", resources: [configmaps]}]\n- level: Metadata\n",
    )
    .unwrap();
    let log = tmp.path().join("audit.log");
    let server = ApiServer::start(&[
        &format!("--audit-policy-file={}", policy.display()),
        &format!("--audit-log-path={}", log.display()),
    ])
    .await;
    let k = Kubectl::new(&server);
    let ca = Ca::new("webhook-ca");
    // /label adds `labeled=yes` when missing; /annotate adds the `annotated` annotation when
    // missing (a change, so IfNeeded webhooks called before it run again).
    let hookd = WebhookServer::start(
        &ca,
        Arc::new(|path, review| {
            let object = &review["request"]["object"];
            let metadata = &object["metadata"];
            let ops = match path {
                "/label" if metadata["labels"]["labeled"].is_string() => json!([]),
                "/label" if metadata["labels"].is_object() => {
                    json!([{"op": "add", "path": "/metadata/labels/labeled", "value": "yes"}])
                }
                "/label" => json!([{"op": "add", "path": "/metadata/labels", "value": {"labeled": "yes"}}]),
                "/annotate"
                    if metadata["annotations"]["annotated"].is_null() && metadata["name"] != "probe" =>
                {
                    json!([{"op": "add", "path": "/metadata/annotations", "value": {"annotated": "yes"}}])
                }
                _ => json!([]),
            };
            Reply::Json(if ops == json!([]) {
                answer(review, json!({"allowed": true}))
            } else {
                patched(review, ops)
            })
        }),
    )
    .await;
    let mut labeler = hook(
        "label.example.com",
        &format!("{}/label", hookd.url),
        &hookd.ca_bundle,
    );
    labeler["reinvocationPolicy"] = json!("IfNeeded");
    k.apply("a.json", &mutating("a-labeler", vec![labeler]))
        .await;
    // Wait until the labeler acts (the probe comes back labeled from a dry run).
    let probe = k.file("probe.json", &configmap("probe", "default", json!({})));
    let probe = probe.display().to_string();
    eventually("the labeler to take effect", || async {
        let out = k
            .run(&["create", "--dry-run=server", "-o", "json", "-f", &probe])
            .await;
        let obj: Value = serde_json::from_str(&out.stdout).ok()?;
        (obj["metadata"]["labels"]["labeled"] == "yes").then_some(())
    })
    .await;
    // The second configuration (sorted after the first) adds an annotation.
    let annotator = hook(
        "annotate.example.com",
        &format!("{}/annotate", hookd.url),
        &hookd.ca_bundle,
    );
    k.apply("b.json", &mutating("b-annotator", vec![annotator]))
        .await;
    eventually("the annotator to take effect", || async {
        let out = k
            .run(&["create", "--dry-run=server", "-o", "json", "-f", &probe])
            .await;
        let obj: Value = serde_json::from_str(&out.stdout).ok()?;
        let seen = hookd
            .reviews("/annotate")
            .iter()
            .any(|r| r["request"]["name"] == "probe");
        (seen && obj["metadata"]["labels"]["labeled"] == "yes").then_some(())
    })
    .await;

    let out = k
        .create(
            "cm.json",
            &configmap("mutated", "default", json!({"app": "demo"})),
        )
        .await;
    assert_eq!(out.code, Some(0), "{out:?}");
    let stored: Value =
        serde_json::from_str(&k.ok(&["get", "configmap", "mutated", "-o", "json"]).await).unwrap();
    assert_eq!(
        stored["metadata"]["labels"],
        json!({"app": "demo", "labeled": "yes"})
    );
    assert_eq!(stored["metadata"]["annotations"]["annotated"], "yes");
    // The labeler ran twice: first, then again after the annotator changed the object; the
    // second time it saw the annotation. The annotator (Never) ran once.
    let label_calls: Vec<Value> = hookd
        .reviews("/label")
        .into_iter()
        .filter(|r| r["request"]["name"] == "mutated")
        .collect();
    assert_eq!(label_calls.len(), 2, "{label_calls:#?}");
    assert!(label_calls[0]["request"]["object"]["metadata"]["annotations"].is_null());
    assert_eq!(
        label_calls[1]["request"]["object"]["metadata"]["annotations"]["annotated"],
        "yes"
    );
    let annotate_calls = hookd
        .reviews("/annotate")
        .into_iter()
        .filter(|r| r["request"]["name"] == "mutated")
        .count();
    assert_eq!(annotate_calls, 1);
    // The audit event of the create names each mutating call, by round and index.
    let event = eventually("the create's audit event", || async {
        let text = std::fs::read_to_string(&log).ok()?;
        // Only the create of "mutated" had a reinvocation round.
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| {
                e["verb"] == "create"
                    && e["stage"] == "ResponseComplete"
                    && e["annotations"]["mutation.webhook.admission.k8s.io/round_1_index_0"]
                        .is_string()
            })
    })
    .await;
    let annotations = &event["annotations"];
    let mutation = |key: &str| -> Value {
        serde_json::from_str(annotations[key].as_str().unwrap_or("null")).unwrap_or(Value::Null)
    };
    assert_eq!(
        mutation("mutation.webhook.admission.k8s.io/round_0_index_0"),
        json!({"configuration": "a-labeler", "webhook": "label.example.com", "mutated": true}),
        "{event}"
    );
    assert_eq!(
        mutation("mutation.webhook.admission.k8s.io/round_0_index_1"),
        json!({"configuration": "b-annotator", "webhook": "annotate.example.com", "mutated": true}),
        "{event}"
    );
    assert_eq!(
        mutation("mutation.webhook.admission.k8s.io/round_1_index_0"),
        json!({"configuration": "a-labeler", "webhook": "label.example.com", "mutated": false}),
        "{event}"
    );
    // At level Request the event also carries each applied patch, in upstream's field order.
    assert_eq!(
        annotations["patch.webhook.admission.k8s.io/round_0_index_0"],
        r#"{"configuration":"a-labeler","webhook":"label.example.com","patch":[{"op":"add","path":"/metadata/labels/labeled","value":"yes"}],"patchType":"JSONPatch"}"#,
        "{event}"
    );
    assert!(
        annotations["patch.webhook.admission.k8s.io/round_1_index_0"].is_null(),
        "{event}"
    );
    // The webhook metrics count the calls.
    let metrics = k.ok(&["get", "--raw", "/metrics"]).await;
    assert!(
        metrics.lines().any(|l| l.starts_with(
            "apiserver_admission_webhook_request_total{code=\"200\",name=\"label.example.com\",operation=\"CREATE\",rejected=\"false\",type=\"admit\"}"
        )),
        "no request count for the labeler"
    );
    assert!(metrics.contains("apiserver_admission_webhook_admission_duration_seconds_bucket{name=\"annotate.example.com\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failure_policy_fail_refuses_and_ignore_admits_while_the_webhook_is_down() {
    let server = ApiServer::start(&[]).await;
    let k = Kubectl::new(&server);
    let ca = Ca::new("webhook-ca");
    let port = free_port();
    let url = format!("https://127.0.0.1:{port}/down");
    let mut down = hook("down.example.com", &url, &STANDARD.encode(&ca.pem.cert));
    down["failurePolicy"] = json!("Fail");
    k.apply("vwc.json", &validating("down", vec![down.clone()]))
        .await;
    let refused = wait_until_refused(
        &k,
        &configmap("probe", "default", json!({})),
        "failed calling webhook",
    )
    .await;
    assert!(
        refused.contains(&format!(
            "Internal error occurred: failed calling webhook \"down.example.com\": failed to call webhook: Post \"{url}?timeout=10s\": dial tcp 127.0.0.1:{port}: connect: connection refused"
        )),
        "{refused}"
    );
    let out = k
        .create("cm.json", &configmap("while-down", "default", json!({})))
        .await;
    assert!(
        out.stderr.contains("Error from server (InternalError)"),
        "{out:?}"
    );

    down["failurePolicy"] = json!("Ignore");
    k.apply("vwc.json", &validating("down", vec![down])).await;
    let path = k.file("cm.json", &configmap("while-down", "default", json!({})));
    let path = path.display().to_string();
    eventually("Ignore to take effect", || async {
        (k.run(&["create", "-f", &path]).await.code == Some(0)).then_some(())
    })
    .await;
    k.ok(&["get", "configmap", "while-down"]).await;
    let metrics = k.ok(&["get", "--raw", "/metrics"]).await;
    assert!(
        metrics.contains("apiserver_admission_webhook_fail_open_count{name=\"down.example.com\",type=\"validating\"}"),
        "no fail-open count"
    );
    assert!(metrics.contains("apiserver_admission_webhook_rejection_count{error_type=\"calling_webhook_error\",name=\"down.example.com\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_slower_than_its_timeout_is_cut_off_with_upstreams_error() {
    let server = ApiServer::start(&[]).await;
    let k = Kubectl::new(&server);
    let ca = Ca::new("webhook-ca");
    let hookd = WebhookServer::start(&ca, Arc::new(|_, _| Reply::Hang)).await;
    let mut slow = hook(
        "slow.example.com",
        &format!("{}/slow", hookd.url),
        &hookd.ca_bundle,
    );
    slow["timeoutSeconds"] = json!(1);
    k.apply("vwc.json", &validating("slow", vec![slow])).await;
    let refused = wait_until_refused(
        &k,
        &configmap("probe", "default", json!({})),
        "context deadline exceeded",
    )
    .await;
    assert!(
        refused.contains(&format!(
            "Internal error occurred: failed calling webhook \"slow.example.com\": failed to call webhook: Post \"{}/slow?timeout=1s\": context deadline exceeded",
            hookd.url
        )),
        "{refused}"
    );
    let started = Instant::now();
    let out = k
        .create("cm.json", &configmap("slow-one", "default", json!({})))
        .await;
    assert_ne!(out.code, Some(0));
    assert!(out.stderr.contains("context deadline exceeded"), "{out:?}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the call was not cut off at 1s"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_and_object_selectors_choose_the_requests_a_webhook_sees() {
    let server = ApiServer::start(&[]).await;
    let k = Kubectl::new(&server);
    let ca = Ca::new("webhook-ca");
    let hookd = WebhookServer::start(
        &ca,
        Arc::new(|_, review| {
            Reply::Json(answer(
                review,
                json!({"allowed": false, "status": {"code": 403, "message": "selected"}}),
            ))
        }),
    )
    .await;
    k.ok(&["create", "namespace", "guarded"]).await;
    k.ok(&["label", "namespace", "guarded", "webhooks=on"])
        .await;
    k.ok(&["create", "namespace", "open"]).await;
    let mut selective = hook(
        "select.example.com",
        &format!("{}/select", hookd.url),
        &hookd.ca_bundle,
    );
    selective["namespaceSelector"] = json!({"matchLabels": {"webhooks": "on"}});
    selective["objectSelector"] =
        json!({"matchExpressions": [{"key": "skip-webhooks", "operator": "DoesNotExist"}]});
    k.apply("vwc.json", &validating("selective", vec![selective]))
        .await;
    wait_until_refused(&k, &configmap("probe", "guarded", json!({})), "selected").await;

    let out = k
        .create("a.json", &configmap("in-guarded", "guarded", json!({})))
        .await;
    assert!(
        out.stderr
            .contains("admission webhook \"select.example.com\" denied the request: selected"),
        "{out:?}"
    );
    let out = k
        .create("b.json", &configmap("in-open", "open", json!({})))
        .await;
    assert_eq!(out.code, Some(0), "{out:?}");
    let out = k
        .create(
            "c.json",
            &configmap("skipping", "guarded", json!({"skip-webhooks": "yes"})),
        )
        .await;
    assert_eq!(out.code, Some(0), "{out:?}");
    let seen: Vec<String> = hookd
        .reviews("/select")
        .iter()
        .map(|r| {
            r["request"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert!(
        !seen.contains(&"in-open".to_string()) && !seen.contains(&"skipping".to_string()),
        "{seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn match_conditions_skip_requests_and_fail_closed_on_errors() {
    let server = ApiServer::start(&[]).await;
    let k = Kubectl::new(&server);
    let ca = Ca::new("webhook-ca");
    let hookd = WebhookServer::start(
        &ca,
        Arc::new(|_, review| {
            Reply::Json(answer(
                review,
                json!({"allowed": false, "status": {"message": "checked and refused"}}),
            ))
        }),
    )
    .await;
    let mut conditional = hook(
        "cond.example.com",
        &format!("{}/cond", hookd.url),
        &hookd.ca_bundle,
    );
    conditional["matchConditions"] = json!([
        {"name": "checked-only", "expression": "object.metadata.name.startsWith('checked-')"},
        {"name": "not-admin-excluded", "expression": "request.userInfo.username != 'nobody'"}
    ]);
    k.apply(
        "vwc.json",
        &validating("conditional", vec![conditional.clone()]),
    )
    .await;
    wait_until_refused(
        &k,
        &configmap("checked-probe", "default", json!({})),
        "checked and refused",
    )
    .await;
    let out = k
        .create("a.json", &configmap("checked-one", "default", json!({})))
        .await;
    // A status without a code or reason: 400 without a reason, so kubectl names none.
    assert!(
        out.stderr
            .contains("Error from server: error when creating")
            && out.stderr.contains(
                "admission webhook \"cond.example.com\" denied the request: checked and refused"
            ),
        "{out:?}"
    );
    let out = k
        .create("b.json", &configmap("unchecked-one", "default", json!({})))
        .await;
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        hookd
            .reviews("/cond")
            .iter()
            .all(|r| r["request"]["name"] != "unchecked-one")
    );

    // A condition that errors fails the request (failurePolicy Fail) with upstream's 403.
    conditional["matchConditions"] =
        json!([{"name": "needs-data", "expression": "object.data.missing == 'x'"}]);
    k.apply("vwc.json", &validating("conditional", vec![conditional]))
        .await;
    let refused = wait_until_refused(
        &k,
        &configmap("any-probe", "default", json!({})),
        "resulted in error",
    )
    .await;
    assert!(
        refused.contains("Error from server (Forbidden)")
            && refused.contains("configmaps \"any-probe\" is forbidden: expression 'object.data.missing == 'x'' resulted in error"),
        "{refused}"
    );

    // A condition that does not compile is refused when the configuration is written.
    let bad = validating(
        "bad-condition",
        vec![{
            let mut h = hook(
                "bad.example.com",
                &format!("{}/cond", hookd.url),
                &hookd.ca_bundle,
            );
            h["matchConditions"] =
                json!([{"name": "broken", "expression": "object.metadata.name =="}]);
            h
        }],
    );
    let out = k.create("bad.json", &bad).await;
    assert!(
        out.stderr.contains("webhooks[0].matchConditions[0].expression: Invalid value: \"object.metadata.name ==\": compilation failed"),
        "{out:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_requests_reach_side_effect_free_webhooks_and_side_effects_are_refused_in_v1() {
    let server = ApiServer::start(&[]).await;
    let k = Kubectl::new(&server);
    let ca = Ca::new("webhook-ca");
    let hookd = WebhookServer::start(
        &ca,
        Arc::new(|_, review| Reply::Json(answer(review, json!({"allowed": true})))),
    )
    .await;
    let h = hook(
        "dry.example.com",
        &format!("{}/dry", hookd.url),
        &hookd.ca_bundle,
    );
    k.apply("vwc.json", &validating("dry", vec![h.clone()]))
        .await;
    let probe = k.file("probe.json", &configmap("dry-one", "default", json!({})));
    let probe = probe.display().to_string();
    eventually("the dry-run review to arrive", || async {
        k.ok(&["create", "--dry-run=server", "-f", &probe]).await;
        hookd
            .reviews("/dry")
            .into_iter()
            .find(|r| r["request"]["name"] == "dry-one")
    })
    .await;
    let review = hookd
        .reviews("/dry")
        .into_iter()
        .find(|r| r["request"]["name"] == "dry-one")
        .unwrap();
    assert_eq!(review["request"]["dryRun"], true);
    assert_eq!(review["request"]["options"]["dryRun"], json!(["All"]));
    assert!(k.run(&["get", "configmap", "dry-one"]).await.code != Some(0));

    // v1 only takes side-effect-free webhooks.
    let mut some = h;
    some["sideEffects"] = json!("Some");
    let out = k.create("some.json", &validating("some", vec![some])).await;
    assert!(
        out.stderr.contains("webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\""),
        "{out:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_patches_wrong_uids_malformed_or_too_large_answers_and_warnings_are_handled_as_upstream()
 {
    let server = ApiServer::start(&[]).await;
    let k = Kubectl::new(&server);
    let ca = Ca::new("webhook-ca");
    let hookd = WebhookServer::start(
        &ca,
        Arc::new(|_, review| {
            let name = review["request"]["name"].as_str().unwrap_or_default();
            Reply::Json(match name {
                n if n.starts_with("bad-patch") => patched(
                    review,
                    json!([{"op": "replace", "path": "/metadata/labels/missing", "value": "x"}]),
                ),
                n if n.starts_with("wrong-uid") => json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                                        "response": {"uid": "not-the-request", "allowed": true}}),
                n if n.starts_with("garbage") => json!("not a review"),
                // More than the 3 MiB an answer may have.
                n if n.starts_with("too-large") => answer(
                    review,
                    json!({"allowed": true, "warnings": ["x".repeat(4 << 20)]}),
                ),
                _ => answer(review, json!({"allowed": true, "warnings": ["careful: this configmap is watched"]})),
            })
        }),
    )
    .await;
    k.apply(
        "mwc.json",
        &mutating(
            "checks",
            vec![hook(
                "check.example.com",
                &format!("{}/check", hookd.url),
                &hookd.ca_bundle,
            )],
        ),
    )
    .await;
    let refused = wait_until_refused(
        &k,
        &configmap("bad-patch-probe", "default", json!({"present": "yes"})),
        "does not apply",
    )
    .await;
    assert!(
        refused.contains("Error from server (InternalError)")
            && refused.contains("Internal error occurred: replace operation does not apply: doc is missing key: /metadata/labels/missing: missing value"),
        "{refused}"
    );
    let out = k
        .create("w.json", &configmap("wrong-uid", "default", json!({})))
        .await;
    assert!(
        out.stderr.contains("Internal error occurred: failed calling webhook \"check.example.com\": received invalid webhook response: expected response.uid=")
            && out.stderr.contains("got \"not-the-request\""),
        "{out:?}"
    );
    let out = k
        .create("g.json", &configmap("garbage", "default", json!({})))
        .await;
    assert!(
        out.stderr.contains("Internal error occurred: failed calling webhook \"check.example.com\": failed to call webhook:"),
        "{out:?}"
    );
    let out = k
        .create("big.json", &configmap("too-large", "default", json!({})))
        .await;
    assert!(
        out.stderr.contains(&format!(
            "Internal error occurred: failed calling webhook \"check.example.com\": failed to call webhook: Post \"{}/check?timeout=10s\": length limit exceeded",
            hookd.url
        )),
        "{out:?}"
    );
    let out = k
        .create("ok.json", &configmap("watched", "default", json!({})))
        .await;
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stderr
            .contains("Warning: careful: this configmap is watched"),
        "{out:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_configurations_are_validated_defaulted_and_explained_as_upstream_for_kubectl_1_35_and_1_20()
 {
    let server = ApiServer::start(&[]).await;
    let k = Kubectl::new(&server);
    let bad = validating(
        "invalid",
        vec![
            json!({"name": "short.name", "clientConfig": {"url": "http://example.com/x"},
                   "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
                   "sideEffects": "None", "admissionReviewVersions": ["v1"]}),
            json!({"name": "dup.example.com", "clientConfig": {"url": "https://example.com/x"},
                   "sideEffects": "None", "admissionReviewVersions": ["v1"]}),
            json!({"name": "dup.example.com", "clientConfig": {"url": "https://example.com/x", "service": {"namespace": "a", "name": "b"}},
                   "sideEffects": "None", "admissionReviewVersions": ["v1"]}),
        ],
    );
    let out = k.create("bad.json", &bad).await;
    assert_ne!(out.code, Some(0));
    for needle in [
        "The ValidatingWebhookConfiguration \"invalid\" is invalid",
        "webhooks[0].name: Invalid value: \"short.name\": should be a domain with at least three segments separated by dots",
        "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
        "webhooks[2].clientConfig: Required value: exactly one of url or service is required",
        "webhooks[2].name: Duplicate value: \"dup.example.com\"",
    ] {
        assert!(out.stderr.contains(needle), "{needle}\n{out:?}");
    }
    // Defaults as upstream's v1.
    let ok = mutating(
        "defaults",
        vec![
            json!({"name": "d.example.com", "clientConfig": {"service": {"namespace": "ns", "name": "svc"}},
                    "sideEffects": "None", "admissionReviewVersions": ["v1"],
                    "rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"]}]}),
        ],
    );
    let out = k.create("ok.json", &ok).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    let stored: Value = serde_json::from_str(
        &k.ok(&[
            "get",
            "mutatingwebhookconfiguration",
            "defaults",
            "-o",
            "json",
        ])
        .await,
    )
    .unwrap();
    let h = &stored["webhooks"][0];
    assert_eq!(
        (
            &h["failurePolicy"],
            &h["matchPolicy"],
            &h["timeoutSeconds"],
            &h["reinvocationPolicy"],
            &h["rules"][0]["scope"],
            &h["clientConfig"]["service"]["port"],
            &h["namespaceSelector"],
            &h["objectSelector"],
        ),
        (
            &json!("Fail"),
            &json!("Equivalent"),
            &json!(10),
            &json!("Never"),
            &json!("*"),
            &json!(443),
            &json!({}),
            &json!({}),
        )
    );
    // kubectl explain reads the OpenAPI schema.
    let explain = k
        .ok(&[
            "explain",
            "validatingwebhookconfigurations.webhooks.failurePolicy",
        ])
        .await;
    assert!(explain.contains("FIELD: failurePolicy"), "{explain}");
    // kubectl 1.20 (OpenAPI v2, protobuf) lists and explains them too.
    let mut old = vec!["--kubeconfig", k.kubeconfig.as_str()];
    old.extend(["get", "mutatingwebhookconfigurations"]);
    let listed = run_tool("kubectl-1.20", k.home.path(), &old).await;
    assert_eq!(listed.code, Some(0), "{listed:?}");
    let header: Vec<&str> = listed
        .stdout
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "WEBHOOKS", "AGE"], "{listed:?}");
    assert!(listed.stdout.contains("defaults"), "{listed:?}");
    let mut explain_old = vec!["--kubeconfig", k.kubeconfig.as_str()];
    explain_old.extend([
        "explain",
        "mutatingwebhookconfigurations.webhooks.reinvocationPolicy",
    ]);
    let explained = run_tool("kubectl-1.20", k.home.path(), &explain_old).await;
    assert!(
        explained.stdout.contains("FIELD:    reinvocationPolicy"),
        "{explained:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_webhooks_are_reached_through_their_endpoints_with_the_admission_kubeconfigs_credentials()
 {
    let tmp = tempfile::tempdir().unwrap();
    let kubeconfig = tmp.path().join("webhooks.kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nusers:\n- name: '*.webhooks.svc'\n  user:\n    token: secret-hook-token\n",
    )
    .unwrap();
    let admission = tmp.path().join("admission.yaml");
    std::fs::write(
        &admission,
        format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: ValidatingAdmissionWebhook\n  configuration:\n    apiVersion: apiserver.config.k8s.io/v1\n    kind: WebhookAdmissionConfiguration\n    kubeConfigFile: {}\n",
            kubeconfig.display()
        ),
    )
    .unwrap();
    let server = ApiServer::start(&[
        "--enable-aggregator-routing",
        &format!("--admission-control-config-file={}", admission.display()),
    ])
    .await;
    let k = Kubectl::new(&server);
    let ca = Ca::new("webhook-ca");
    let hookd = WebhookServer::start(&ca, deny_named_forbidden()).await;
    let port = hookd.url.rsplit(':').next().unwrap().to_string();
    k.ok(&["create", "namespace", "webhooks"]).await;
    k.apply(
        "svc.json",
        &json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "hook", "namespace": "webhooks"},
                "spec": {"ports": [{"name": "https", "port": 443, "targetPort": 9443}]}}),
    )
    .await;
    k.apply(
        "ep.json",
        &json!({"apiVersion": "v1", "kind": "Endpoints",
                "metadata": {"name": "hook", "namespace": "webhooks"},
                "subsets": [{"addresses": [{"ip": "127.0.0.1"}],
                             "ports": [{"name": "https", "port": port.parse::<u16>().unwrap()}]}]}),
    )
    .await;
    let mut service_hook = hook("svc.example.com", "https://unused", &hookd.ca_bundle);
    service_hook["clientConfig"] = json!({
        "service": {"namespace": "webhooks", "name": "hook", "path": "/svc"},
        "caBundle": hookd.ca_bundle,
    });
    k.apply("vwc.json", &validating("by-service", vec![service_hook]))
        .await;
    wait_until_refused(
        &k,
        &configmap("forbidden-probe", "default", json!({})),
        "admission webhook \"svc.example.com\" denied the request: configmaps named forbidden-* are not allowed",
    )
    .await;
    let received = hookd.received("/svc");
    assert!(!received.is_empty());
    assert!(
        received
            .iter()
            .all(|r| r.authorization.as_deref() == Some("Bearer secret-hook-token")),
        "{received:?}"
    );
    // Without endpoints the call fails (failurePolicy Fail) with the resolver's reason.
    k.ok(&["delete", "endpoints", "-n", "webhooks", "hook"])
        .await;
    wait_until_refused(
        &k,
        &configmap("any-probe", "default", json!({})),
        "failed calling webhook \"svc.example.com\": failed to call webhook: Post \"https://hook.webhooks.svc:443/svc?timeout=10s\": cannot find endpoints for service/hook in \"webhooks\"",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validating_webhooks_of_a_request_are_called_in_parallel() {
    let server = ApiServer::start(&[]).await;
    let k = Kubectl::new(&server);
    let ca = Ca::new("webhook-ca");
    // Each answer waits until the other webhook has been called too: called one after the
    // other, the first would wait until its timeout and the request would fail.
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let hookd = WebhookServer::start(
        &ca,
        Arc::new(move |_, review| {
            Reply::AfterBarrier(barrier.clone(), answer(review, json!({"allowed": true})))
        }),
    )
    .await;
    let mut first = hook(
        "first.example.com",
        &format!("{}/first", hookd.url),
        &hookd.ca_bundle,
    );
    let mut second = hook(
        "second.example.com",
        &format!("{}/second", hookd.url),
        &hookd.ca_bundle,
    );
    first["timeoutSeconds"] = json!(5);
    second["timeoutSeconds"] = json!(5);
    k.apply("vwc.json", &validating("pair", vec![first, second]))
        .await;
    let probe = k.file("probe.json", &configmap("pair-probe", "default", json!({})));
    let probe = probe.display().to_string();
    eventually("both webhooks to see the probe", || async {
        let out = k.run(&["create", "--dry-run=server", "-f", &probe]).await;
        let seen = |path: &str| {
            hookd
                .reviews(path)
                .iter()
                .any(|r| r["request"]["name"] == "pair-probe")
        };
        (out.code == Some(0) && seen("/first") && seen("/second")).then_some(())
    })
    .await;
    // One after the other, the first call would time out and fail the request.
    let out = k
        .create("cm.json", &configmap("paired", "default", json!({})))
        .await;
    assert_eq!(out.code, Some(0), "{out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn match_policy_equivalent_calls_a_v2_webhook_for_an_autoscaling_v1_request_and_exact_does_not()
 {
    let server = ApiServer::start(&[]).await;
    let k = Kubectl::new(&server);
    let ca = Ca::new("webhook-ca");
    let hookd = WebhookServer::start(
        &ca,
        Arc::new(|_, review| {
            Reply::Json(patched(
                review,
                json!([{"op": "add", "path": "/metadata/labels", "value": {"seen-as": "v2"}}]),
            ))
        }),
    )
    .await;
    let v2_rule = json!([{"operations": ["CREATE"], "apiGroups": ["autoscaling"], "apiVersions": ["v2"],
                          "resources": ["horizontalpodautoscalers"]}]);
    let mut equivalent = hook(
        "eq.example.com",
        &format!("{}/eq", hookd.url),
        &hookd.ca_bundle,
    );
    equivalent["rules"] = v2_rule.clone();
    equivalent["objectSelector"] = json!({"matchLabels": {"policy": "equivalent"}});
    let mut exact = hook(
        "exact.example.com",
        &format!("{}/exact", hookd.url),
        &hookd.ca_bundle,
    );
    exact["rules"] = v2_rule;
    exact["matchPolicy"] = json!("Exact");
    exact["objectSelector"] = json!({"matchLabels": {"policy": "exact"}});
    k.apply("mwc.json", &mutating("versions", vec![equivalent, exact]))
        .await;
    let hpa = |name: &str, policy: &str| {
        json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
               "metadata": {"name": name, "namespace": "default", "labels": {"policy": policy}},
               "spec": {"maxReplicas": 3, "targetCPUUtilizationPercentage": 50,
                        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}})
    };
    let probe = k.file("probe.json", &hpa("probe", "equivalent"));
    let probe = probe.display().to_string();
    eventually("the equivalent webhook to take effect", || async {
        let out = k
            .run(&["create", "--dry-run=server", "-o", "json", "-f", &probe])
            .await;
        let obj: Value = serde_json::from_str(&out.stdout).ok()?;
        (obj["metadata"]["labels"]["seen-as"] == "v2").then_some(())
    })
    .await;
    let out = k
        .create("eq.json", &hpa("by-equivalent", "equivalent"))
        .await;
    assert_eq!(out.code, Some(0), "{out:?}");
    let review = hookd
        .reviews("/eq")
        .into_iter()
        .find(|r| r["request"]["name"] == "by-equivalent")
        .expect("the equivalent webhook was called");
    let request = &review["request"];
    assert_eq!(
        request["kind"],
        json!({"group": "autoscaling", "version": "v2", "kind": "HorizontalPodAutoscaler"})
    );
    assert_eq!(
        request["requestKind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "HorizontalPodAutoscaler"})
    );
    assert_eq!(request["object"]["apiVersion"], "autoscaling/v2");
    assert_eq!(
        request["object"]["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        50
    );
    let stored: Value =
        serde_json::from_str(&k.ok(&["get", "hpa", "by-equivalent", "-o", "json"]).await).unwrap();
    assert_eq!(stored["metadata"]["labels"]["seen-as"], "v2", "{stored}");
    assert_eq!(
        stored["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], 50,
        "{stored}"
    );

    let out = k.create("exact.json", &hpa("by-exact", "exact")).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(hookd.reviews("/exact").is_empty());
    let stored: Value =
        serde_json::from_str(&k.ok(&["get", "hpa", "by-exact", "-o", "json"]).await).unwrap();
    assert!(
        stored["metadata"]["labels"]["seen-as"].is_null(),
        "{stored}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_self_signed_webhook_labels_a_raw_generate_name_create_without_apiversion_or_kind() {
    let server = ApiServer::start(&[]).await;
    let client = server.admin_client();
    // The webhook's certificate is a self-signed CA certificate, given as its own caBundle
    // (what `openssl req -x509` makes; Go accepts it as the server certificate).
    let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap().pem();
    let hookd = WebhookServer::start_with(
        &cert,
        &key.serialize_pem(),
        &cert,
        Arc::new(|_path, review| {
            Reply::Json(patched(
                review,
                json!([{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}]),
            ))
        }),
    )
    .await;
    let configuration = mutating(
        "labeler",
        vec![hook(
            "label.example.com",
            &format!("{}/label", hookd.url),
            &hookd.ca_bundle,
        )],
    );
    let registrations = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
    let req = client.request(
        http::Method::POST,
        registrations,
        &configuration.to_string(),
    );
    let reply = client.send(common::client::Proto::H1, req).await.unwrap();
    assert_eq!(reply.status.as_u16(), 201, "{}", reply.body);
    // A raw create as scripts send it: no apiVersion, no kind, a generated name.
    let body = json!({"metadata": {"generateName": "probe-"}, "data": {"k": "v"}}).to_string();
    let created = eventually("the webhook's label on a created configmap", || async {
        let req = client.request(
            http::Method::POST,
            "/api/v1/namespaces/default/configmaps",
            &body,
        );
        let reply = client.send(common::client::Proto::H1, req).await.ok()?;
        let obj: Value = serde_json::from_str(&reply.body).ok()?;
        (obj["metadata"]["labels"]["mutated"] == "yes").then_some(obj)
    })
    .await;
    let name = created["metadata"]["name"].as_str().unwrap().to_string();
    assert!(name.starts_with("probe-"), "{created}");
    // The label was stored, not only returned.
    let path = format!("/api/v1/namespaces/default/configmaps/{name}");
    let stored: Value = serde_json::from_str(
        &client
            .get(common::client::Proto::H1, &path)
            .await
            .unwrap()
            .body,
    )
    .unwrap();
    assert_eq!(stored["metadata"]["labels"], json!({"mutated": "yes"}));
    // Called with an origin-form target, as Go's client (a Python or Go server does not route
    // an absolute-form one).
    let received = &hookd.received("/label")[0];
    assert_eq!(received.target, "/label?timeout=10s");
    let review = &hookd.reviews("/label")[0];
    assert_eq!(review["request"]["object"]["kind"], "ConfigMap");
    assert_eq!(review["request"]["object"]["apiVersion"], "v1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_match_condition_asks_the_authorizer_about_the_requesting_user() {
    let server = ApiServer::start(&["--authorization-mode=RBAC"]).await;
    let k = Kubectl::new(&server);
    // alice may create configmaps in default, not delete them.
    k.ok(&[
        "create",
        "role",
        "cm-creator",
        "-n",
        "default",
        "--verb=create",
        "--resource=configmaps",
    ])
    .await;
    k.ok(&[
        "create",
        "rolebinding",
        "alice-cm-creator",
        "-n",
        "default",
        "--role=cm-creator",
        "--user=alice",
    ])
    .await;
    let ca = Ca::new("webhook-ca");
    let hookd = WebhookServer::start(
        &ca,
        Arc::new(|_, review| {
            Reply::Json(answer(
                review,
                json!({"allowed": false, "status": {"code": 403, "reason": "Forbidden", "message": "non-deleters are refused"}}),
            ))
        }),
    )
    .await;
    let mut conditional = hook(
        "deleters.example.com",
        &format!("{}/deleters", hookd.url),
        &hookd.ca_bundle,
    );
    conditional["matchConditions"] = json!([{
        "name": "cannot-delete",
        "expression": "!authorizer.group('').resource('configmaps').namespace('default').check('delete').allowed()"
    }]);
    k.apply("vwc.json", &validating("deleters", vec![conditional]))
        .await;
    let path = k
        .file("probe.json", &configmap("probe", "default", json!({})))
        .display()
        .to_string();
    eventually("the webhook to refuse alice", || async {
        let out = k
            .run(&["--as=alice", "create", "--dry-run=server", "-f", &path])
            .await;
        (out.code != Some(0) && out.stderr.contains("non-deleters are refused")).then_some(())
    })
    .await;
    // The admin may delete: the condition is false and the webhook is not called.
    k.ok(&["create", "configmap", "by-admin", "-n", "default"])
        .await;
    assert!(
        hookd
            .reviews("/deleters")
            .iter()
            .all(|r| r["request"]["userInfo"]["username"] == "alice"),
        "the webhook was called for someone other than alice"
    );
}
