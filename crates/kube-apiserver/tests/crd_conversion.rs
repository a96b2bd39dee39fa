//! CRD conversion webhooks end to end: the real binary calls a conversion webhook written here
//! (TLS with a test CA passed as `caBundle`; v1 keeps `spec.foo`, v2 calls it `spec.bar`) for
//! every read, write, list and watch of the version that is not stored, and kubectl 1.35 reads
//! and watches both versions. A webhook given by `url` speaks ConversionReview v1; one given as
//! a Service (an ExternalName to localhost, verified as `<name>.<namespace>.svc`) speaks
//! v1beta1 when only that is listed. A webhook that is down fails requests needing it with
//! upstream's message while the stored version stays readable.

mod common;

#[path = "../../apiserver/tests/common/pki.rs"]
#[allow(dead_code)]
mod pki;

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use bytes::Bytes;
use common::client::Proto;
use common::{ApiServer, DEADLINE, ToolOutput, eventually, run_tool, tool};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use pki::Ca;
use serde_json::{Value, json};

const KUBECTL: &str = "kubectl-1.35";

/// One request the webhook got: path, query and body.
type Recorded = (String, String, Value);

/// How the webhook misbehaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Misbehave {
    /// Converts correctly.
    No,
    /// Answers with another uid.
    WrongUid,
    /// Renames the objects it converts.
    Rename,
}

/// A TLS conversion webhook: v1 `spec.foo` ↔ v2 `spec.bar`, answering in the review version
/// it was asked in. Stopping it closes the listener and every connection.
struct ConversionWebhook {
    port: u16,
    requests: Arc<Mutex<Vec<Recorded>>>,
    tasks: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
    misbehave: Arc<Mutex<Misbehave>>,
}

/// The webhook's conversion of one review.
fn convert_review(review: &Value, misbehave: Misbehave) -> Value {
    let desired = review["request"]["desiredAPIVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let to_v2 = desired.ends_with("/v2");
    let converted: Vec<Value> = review["request"]["objects"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut obj| {
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                let (from, to) = if to_v2 {
                    ("foo", "bar")
                } else {
                    ("bar", "foo")
                };
                if let Some(v) = spec.remove(from) {
                    spec.insert(to.into(), v);
                }
            }
            obj["apiVersion"] = json!(desired);
            if misbehave == Misbehave::Rename {
                obj["metadata"]["name"] = json!("renamed");
            }
            obj
        })
        .collect();
    let uid = match misbehave {
        Misbehave::WrongUid => json!("not-the-request-uid"),
        _ => review["request"]["uid"].clone(),
    };
    json!({
        "apiVersion": review["apiVersion"],
        "kind": "ConversionReview",
        "response": {
            "uid": uid,
            "convertedObjects": converted,
            "result": {"status": "Success"},
        },
    })
}

impl ConversionWebhook {
    /// Starts the webhook on 127.0.0.1 with a certificate from `ca` for `names`.
    async fn start(ca: &Ca, names: &[&str]) -> ConversionWebhook {
        use rustls::pki_types::pem::PemObject;
        let serving = ca.serving("conversion-webhook", names);
        let certs = rustls::pki_types::CertificateDer::pem_slice_iter(serving.cert.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(serving.key.as_bytes()).unwrap();
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
        let port = listener.local_addr().unwrap().port();
        let requests: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let tasks: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>> = Arc::default();
        let misbehave = Arc::new(Mutex::new(Misbehave::No));
        let recorded = requests.clone();
        let connections = tasks.clone();
        let mode = misbehave.clone();
        let accept = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let acceptor = acceptor.clone();
                let recorded = recorded.clone();
                let mode = mode.clone();
                let conn = tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(
                        move |req: http::Request<hyper::body::Incoming>| {
                            let recorded = recorded.clone();
                            let misbehave = *mode.lock().unwrap();
                            async move {
                                let path = req.uri().path().to_string();
                                let query = req.uri().query().unwrap_or_default().to_string();
                                let body = req.into_body().collect().await?.to_bytes();
                                let review: Value =
                                    serde_json::from_slice(&body).unwrap_or(Value::Null);
                                let answer = convert_review(&review, misbehave);
                                recorded.lock().unwrap().push((path, query, review));
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
                connections.lock().unwrap().push(conn);
            }
        });
        tasks.lock().unwrap().push(accept);
        ConversionWebhook {
            port,
            requests,
            tasks,
            misbehave,
        }
    }

    /// Makes the webhook misbehave (or behave again).
    fn set(&self, misbehave: Misbehave) {
        *self.misbehave.lock().unwrap() = misbehave;
    }

    /// The reviews received so far.
    fn reviews(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// Closes the listener and every open connection.
    fn stop(&self) {
        for task in self.tasks.lock().unwrap().drain(..) {
            task.abort();
        }
    }
}

impl Drop for ConversionWebhook {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The CRD `gadgets.conv.example.com`: v1 (stored, `spec.foo`) and v2 (`spec.bar`), each
/// printing its field, converted by the webhook of `client_config` (YAML lines indented for
/// `clientConfig`) speaking `review_versions`.
fn crd(client_config: &str, review_versions: &str) -> String {
    crd_stored_in("v1", client_config, review_versions)
}

/// [`crd`] with `storage_version` as the storage version.
fn crd_stored_in(storage_version: &str, client_config: &str, review_versions: &str) -> String {
    let version = |name: &str, storage: bool, field: &str| {
        format!(
            r#"  - name: {name}
    served: true
    storage: {storage}
    additionalPrinterColumns:
    - name: Value
      type: string
      jsonPath: .spec.{field}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              {field}:
                type: string
"#
        )
    };
    format!(
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.conv.example.com
spec:
  group: conv.example.com
  scope: Namespaced
  names:
    plural: gadgets
    singular: gadget
    kind: Gadget
  versions:
{}{}  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: {review_versions}
      clientConfig:
{client_config}"#,
        version("v1", storage_version == "v1", "foo"),
        version("v2", storage_version == "v2", "bar"),
    )
}

/// A gadget in `version` with its field set to `value`.
fn gadget(name: &str, version: &str, value: &str) -> String {
    let field = if version == "v1" { "foo" } else { "bar" };
    format!(
        "apiVersion: conv.example.com/{version}\nkind: Gadget\nmetadata:\n  name: {name}\n  namespace: default\n  labels:\n    made-in: {version}\nspec:\n  {field}: {value}\n"
    )
}

struct Kubectl {
    kubeconfig: String,
    home: tempfile::TempDir,
}

type SharedLines = Arc<Mutex<Vec<String>>>;

fn collect_lines(stream: impl Read + Send + 'static) -> SharedLines {
    let lines = SharedLines::default();
    let sink = lines.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            sink.lock().unwrap().push(line);
        }
    });
    lines
}

/// A kubectl running in the background (killed, by its own handle, on drop).
struct Background {
    child: Child,
    stdout: SharedLines,
    stderr: SharedLines,
}

impl Background {
    /// Waits (polling, with [`DEADLINE`]) for a stdout line that satisfies `pred`.
    async fn wait_line(&self, what: &str, pred: impl Fn(&str) -> bool) {
        let start = Instant::now();
        loop {
            if self.stdout.lock().unwrap().iter().any(|l| pred(l)) {
                return;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "{what}: not within {DEADLINE:?}; stdout:\n{}\nstderr:\n{}",
                self.stdout.lock().unwrap().join("\n"),
                self.stderr.lock().unwrap().join("\n"),
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A table row whose first column is `name` and last is `value`.
fn row(line: &str, name: &str, value: &str) -> bool {
    let cols: Vec<&str> = line.split_whitespace().collect();
    cols.first() == Some(&name) && cols.last() == Some(&value)
}

impl Kubectl {
    fn new(server: &ApiServer) -> Kubectl {
        Kubectl {
            kubeconfig: server.kubeconfig().display().to_string(),
            home: tempfile::tempdir().unwrap(),
        }
    }

    async fn run(&self, args: &[&str]) -> ToolOutput {
        let mut all = vec!["--kubeconfig", self.kubeconfig.as_str()];
        all.extend_from_slice(args);
        run_tool(KUBECTL, self.home.path(), &all).await
    }

    async fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args).await;
        assert_eq!(out.code, Some(0), "kubectl {args:?}: {out:?}");
        out.stdout
    }

    async fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        serde_json::from_str(&self.ok(&all).await).unwrap()
    }

    async fn apply(&self, name: &str, manifest: &str) {
        let path = self.home.path().join(name);
        std::fs::write(&path, manifest).unwrap();
        self.ok(&["apply", "-f", &path.display().to_string()]).await;
    }

    fn spawn(&self, args: &[&str]) -> Background {
        let mut all = vec!["--kubeconfig", self.kubeconfig.as_str()];
        all.extend_from_slice(args);
        let mut child = Command::new(tool(KUBECTL))
            .args(&all)
            .env("HOME", self.home.path())
            .env("KUBECONFIG", self.home.path().join("no-such-kubeconfig"))
            .env("KUBECACHEDIR", self.home.path().join("kube-cache"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {KUBECTL}: {e}"));
        let stdout = collect_lines(child.stdout.take().unwrap());
        let stderr = collect_lines(child.stderr.take().unwrap());
        Background {
            child,
            stdout,
            stderr,
        }
    }
}

/// Waits until both versions of the gadgets are served.
async fn wait_served(server: &ApiServer) {
    let client = server.admin_client();
    for version in ["v1", "v2"] {
        eventually("gadgets are served", || async {
            let reply = client
                .get(
                    Proto::H1,
                    &format!("/apis/conv.example.com/{version}/namespaces/default/gadgets"),
                )
                .await
                .ok()?;
            (reply.status == 200).then_some(())
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_converts_every_read_write_list_and_watch_of_the_unstored_version() {
    let ca = Ca::new("conversion-ca");
    let webhook = ConversionWebhook::start(&ca, &["127.0.0.1"]).await;
    let server = ApiServer::start(&[]).await;
    let k = Kubectl::new(&server);
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(&ca.pem.cert);
    let url = format!("https://127.0.0.1:{}/convert", webhook.port);
    k.apply(
        "crd.yaml",
        &crd(
            &format!("        url: {url}\n        caBundle: {ca_bundle}\n"),
            "[\"v1\"]",
        ),
    )
    .await;
    wait_served(&server).await;

    // Written in v1 (the storage version: no conversion), read in v2.
    k.apply("one.yaml", &gadget("one", "v1", "alpha")).await;
    let one = k.json(&["get", "gadgets.v2.conv.example.com", "one"]).await;
    assert_eq!(one["apiVersion"], "conv.example.com/v2");
    assert_eq!(one["spec"], json!({"bar": "alpha"}));
    assert_eq!(one["metadata"]["labels"]["made-in"], "v1");
    let uid = one["metadata"]["uid"].clone();
    assert!(uid.is_string(), "{one}");

    // Written in v2: stored in v1, so the webhook converts it to v1 first.
    k.apply("two.yaml", &gadget("two", "v2", "beta")).await;
    let to_v1 = webhook.reviews().into_iter().any(|(_, _, review)| {
        review["request"]["desiredAPIVersion"] == "conv.example.com/v1"
            && review["request"]["objects"][0]["metadata"]["name"] == "two"
            && review["request"]["objects"][0]["spec"] == json!({"bar": "beta"})
    });
    assert!(to_v1, "no conversion of the new v2 object to v1");
    let two = k.json(&["get", "gadgets.v1.conv.example.com", "two"]).await;
    assert_eq!(two["apiVersion"], "conv.example.com/v1");
    assert_eq!(two["spec"], json!({"foo": "beta"}));

    // Lists in both versions, every item converted.
    let v2 = k.json(&["get", "gadgets.v2.conv.example.com"]).await;
    let bars: Vec<&Value> = v2["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["spec"]["bar"])
        .collect();
    assert_eq!(bars, vec!["alpha", "beta"], "{v2}");
    assert!(
        v2["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["apiVersion"] == "conv.example.com/v2")
    );
    let v1 = k.json(&["get", "gadgets.v1.conv.example.com"]).await;
    let foos: Vec<&Value> = v1["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["spec"]["foo"])
        .collect();
    assert_eq!(foos, vec!["alpha", "beta"], "{v1}");
    // The printer columns of each version read the converted objects.
    let table = k.ok(&["get", "gadgets.v2.conv.example.com"]).await;
    assert!(table.lines().any(|l| row(l, "two", "beta")), "{table}");

    // An update through v2 lands in storage as v1.
    k.ok(&[
        "patch",
        "gadgets.v2.conv.example.com",
        "one",
        "--type=merge",
        "-p",
        r#"{"spec":{"bar":"changed"}}"#,
    ])
    .await;
    let one_v1 = k.json(&["get", "gadgets.v1.conv.example.com", "one"]).await;
    assert_eq!(one_v1["spec"], json!({"foo": "changed"}));
    assert_eq!(one_v1["metadata"]["uid"], uid);

    // Watches in both versions see objects written in the other one, converted.
    let watch_v2 = k.spawn(&["get", "gadgets.v2.conv.example.com", "-w"]);
    let watch_v1 = k.spawn(&["get", "gadgets.v1.conv.example.com", "-w"]);
    watch_v2
        .wait_line("v2 initial list", |l| row(l, "two", "beta"))
        .await;
    watch_v1
        .wait_line("v1 initial list", |l| row(l, "two", "beta"))
        .await;
    k.apply("three.yaml", &gadget("three", "v1", "gamma")).await;
    k.apply("four.yaml", &gadget("four", "v2", "delta")).await;
    watch_v2
        .wait_line("v2 event for a v1 write", |l| row(l, "three", "gamma"))
        .await;
    watch_v1
        .wait_line("v1 event for a v2 write", |l| row(l, "four", "delta"))
        .await;
    drop(watch_v2);
    drop(watch_v1);

    // Every review was a v1 ConversionReview to the configured path with client-go's timeout.
    let reviews = webhook.reviews();
    assert!(
        reviews
            .iter()
            .all(|(path, query, review)| path == "/convert"
                && query == "timeout=30s"
                && review["apiVersion"] == "apiextensions.k8s.io/v1")
    );
    let metrics = server
        .admin_client()
        .get(Proto::H1, "/metrics")
        .await
        .unwrap()
        .body;
    assert!(
        metrics.lines().any(|l| l.starts_with(
            "apiserver_conversion_webhook_request_total{failure_type=\"\",result=\"success\"}"
        )),
        "no success count in /metrics"
    );

    // A v1 review answered with another uid is refused.
    webhook.set(Misbehave::WrongUid);
    let out = k.run(&["get", "gadgets.v2.conv.example.com", "one"]).await;
    assert_ne!(out.code, Some(0));
    assert!(
        out.stderr.starts_with(
            "Error from server: conversion webhook for conv.example.com/v1, Kind=Gadget failed: expected response.uid="
        ) && out.stderr.trim_end().ends_with(r#"got "not-the-request-uid""#),
        "{out:?}"
    );
    webhook.set(Misbehave::No);

    // The webhook goes down: the stored version still reads; v2 fails as upstream does.
    webhook.stop();
    let expected = format!(
        "conversion webhook for conv.example.com/v1, Kind=Gadget failed: Post \"{url}?timeout=30s\": dial tcp 127.0.0.1:{}: connect: connection refused",
        webhook.port
    );
    let failed = eventually("reads of v2 fail once the webhook is down", || async {
        let out = k.run(&["get", "gadgets.v2.conv.example.com", "one"]).await;
        (out.code != Some(0) && out.stderr.contains("connection refused")).then_some(out)
    })
    .await;
    assert_eq!(
        failed.stderr.trim(),
        format!("Error from server: {expected}")
    );
    let reply = server
        .admin_client()
        .get(
            Proto::H1,
            "/apis/conv.example.com/v2/namespaces/default/gadgets",
        )
        .await
        .unwrap();
    assert_eq!(reply.status, 500, "{}", reply.body);
    let status: Value = serde_json::from_str(&reply.body).unwrap();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["message"], expected);
    assert!(status.get("reason").is_none_or(|r| r == ""), "{status}");
    let one = k.json(&["get", "gadgets.v1.conv.example.com", "one"]).await;
    assert_eq!(one["spec"], json!({"foo": "changed"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_behind_a_service_speaks_v1beta1_when_only_that_is_listed() {
    let ca = Ca::new("conversion-ca");
    // Reached through the Service, the webhook is verified as <name>.<namespace>.svc.
    let webhook = ConversionWebhook::start(&ca, &["convert.hooks.svc"]).await;
    let server = ApiServer::start(&[]).await;
    let k = Kubectl::new(&server);
    k.apply(
        "service.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: hooks\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: convert\n  namespace: hooks\nspec:\n  type: ExternalName\n  externalName: localhost\n",
    )
    .await;
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(&ca.pem.cert);
    k.apply(
        "crd.yaml",
        &crd(
            &format!(
                "        service:\n          namespace: hooks\n          name: convert\n          path: /v1beta1/convert\n          port: {}\n        caBundle: {ca_bundle}\n",
                webhook.port
            ),
            "[\"v1beta1\"]",
        ),
    )
    .await;
    wait_served(&server).await;
    k.apply("one.yaml", &gadget("one", "v2", "alpha")).await;
    let one = k.json(&["get", "gadgets.v1.conv.example.com", "one"]).await;
    assert_eq!(one["spec"], json!({"foo": "alpha"}));
    let v2 = k.json(&["get", "gadgets.v2.conv.example.com"]).await;
    assert_eq!(v2["items"][0]["spec"], json!({"bar": "alpha"}));
    // v1beta1 answers are not checked for the uid, as upstream.
    webhook.set(Misbehave::WrongUid);
    let one = k.json(&["get", "gadgets.v2.conv.example.com", "one"]).await;
    assert_eq!(one["spec"], json!({"bar": "alpha"}));
    // A webhook renaming what it converts is refused, in lists as for one object.
    webhook.set(Misbehave::Rename);
    let out = k.run(&["get", "gadgets.v2.conv.example.com", "one"]).await;
    assert_eq!(
        out.stderr.trim(),
        "Error from server: conversion webhook for conv.example.com/v1, Kind=Gadget returned invalid object: must have the same name: one != renamed",
        "{out:?}"
    );
    let out = k.run(&["get", "gadgets.v2.conv.example.com"]).await;
    assert!(
        out.stderr
            .contains("returned invalid object: must have the same name: one != renamed"),
        "{out:?}"
    );
    webhook.set(Misbehave::No);

    // 150 more gadgets stored in v1: a v2 list converts them in reviews of at most 100.
    let client = server.admin_client();
    for i in 0..150 {
        let body = json!({"apiVersion": "conv.example.com/v1", "kind": "Gadget",
            "metadata": {"name": format!("g{i:03}")}, "spec": {"foo": format!("v{i}")}});
        let mut create = client.request(
            http::Method::POST,
            "/apis/conv.example.com/v1/namespaces/default/gadgets",
            &body.to_string(),
        );
        create
            .headers_mut()
            .insert("content-type", "application/json".parse().unwrap());
        let reply = client.send(Proto::H1, create).await.unwrap();
        assert_eq!(reply.status, 201, "{}", reply.body);
    }
    let before = webhook.reviews().len();
    let v2 = k.json(&["get", "gadgets.v2.conv.example.com"]).await;
    let items = v2["items"].as_array().unwrap();
    assert_eq!(items.len(), 151);
    assert!(
        items
            .iter()
            .all(|i| i["apiVersion"] == "conv.example.com/v2" && i["spec"]["bar"].is_string())
    );
    let sizes: Vec<usize> = webhook.reviews()[before..]
        .iter()
        .map(|(_, _, r)| r["request"]["objects"].as_array().map_or(0, Vec::len))
        .collect();
    assert_eq!(sizes, vec![100, 51]);

    let reviews = webhook.reviews();
    assert!(!reviews.is_empty());
    assert!(
        reviews
            .iter()
            .all(|(path, _, review)| path == "/v1beta1/convert"
                && review["apiVersion"] == "apiextensions.k8s.io/v1beta1"),
        "{reviews:?}"
    );
}

/// The `storageVersionHash` discovery gives gadgets.
async fn storage_version_hash(server: &ApiServer) -> Option<String> {
    let reply = server
        .admin_client()
        .get(Proto::H1, "/apis/conv.example.com/v1")
        .await
        .ok()?;
    let list: Value = serde_json::from_str(&reply.body).ok()?;
    list["resources"]
        .as_array()?
        .iter()
        .find(|r| r["name"] == "gadgets")?["storageVersionHash"]
        .as_str()
        .map(str::to_string)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_storage_version_stores_new_writes_and_converts_old_objects() {
    let ca = Ca::new("conversion-ca");
    let webhook = ConversionWebhook::start(&ca, &["127.0.0.1"]).await;
    let server = ApiServer::start(&[]).await;
    let k = Kubectl::new(&server);
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(&ca.pem.cert);
    let client_config = format!(
        "        url: https://127.0.0.1:{}/convert\n        caBundle: {ca_bundle}\n",
        webhook.port
    );
    k.apply("crd.yaml", &crd(&client_config, "[\"v1\"]")).await;
    wait_served(&server).await;
    k.apply("old.yaml", &gadget("old", "v1", "before")).await;
    let v1_hash = eventually("discovery lists gadgets", || storage_version_hash(&server)).await;

    // v2 becomes the storage version: the CRD records both stored versions and the served
    // versions are rebuilt on the new one.
    k.apply("crd.yaml", &crd_stored_in("v2", &client_config, "[\"v1\"]"))
        .await;
    let crd = eventually("v2 is recorded as a stored version", || async {
        let crd = k.json(&["get", "crd", "gadgets.conv.example.com"]).await;
        (crd["status"]["storedVersions"] == json!(["v1", "v2"])).then_some(crd)
    })
    .await;
    assert_eq!(crd["spec"]["versions"][1]["storage"], true);
    eventually(
        "the served versions use the new storage version",
        || async {
            let hash = storage_version_hash(&server).await?;
            (hash != v1_hash).then_some(())
        },
    )
    .await;

    // A v1 write is converted to v2 for storage; the old v1 object converts when read in v2.
    // (The discovery hash of v1 changes a moment before v1's new route is in place: a write
    // in that moment is still stored as v1, so a fresh object is written until one is not.)
    let attempt = std::sync::atomic::AtomicUsize::new(0);
    let new = eventually("a v1 write is stored as v2", || async {
        let name = format!(
            "new{}",
            attempt.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        );
        let before = webhook.reviews().len();
        k.apply(&format!("{name}.yaml"), &gadget(&name, "v1", "after"))
            .await;
        webhook.reviews()[before..]
            .iter()
            .any(|(_, _, r)| {
                r["request"]["desiredAPIVersion"] == "conv.example.com/v2"
                    && r["request"]["objects"][0]["metadata"]["name"] == name.as_str()
            })
            .then_some(name)
    })
    .await;
    let old = k.json(&["get", "gadgets.v2.conv.example.com", "old"]).await;
    assert_eq!(old["spec"], json!({"bar": "before"}));
    let new = k.json(&["get", "gadgets.v1.conv.example.com", &new]).await;
    assert_eq!(new["spec"], json!({"foo": "after"}));
    let v2 = k.json(&["get", "gadgets.v2.conv.example.com"]).await;
    let items = v2["items"].as_array().unwrap();
    assert!(
        items.iter().any(|i| i["spec"] == json!({"bar": "before"}))
            && items
                .iter()
                .all(|i| i["apiVersion"] == "conv.example.com/v2" && i["spec"]["bar"].is_string()),
        "{v2}"
    );
}
