//! Auditing end to end through the real binary: the webhook backend posting `EventList`s over
//! TLS (client certificate, CA from the kubeconfig) to a webhook written here that fails on
//! purpose, batches flushed by size, by max wait and at shutdown; the log backend in the
//! legacy format and batch mode, gzip-compressed rotation and truncation of oversized events;
//! `blocking-strict` against `blocking` when the log cannot be written; bad flags.

mod common;

#[path = "../../apiserver/tests/common/pki.rs"]
#[allow(dead_code)]
mod pki;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use common::client::{Client, Proto, Reply};
use common::{ApiServer, eventually, run_to_exit};
use http::Method;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use pki::Ca;
use serde_json::Value;

/// Audits GETs of `/version` at Metadata and configmap creations at Request, once each
/// (at ResponseComplete); nothing else, so the harness's own probes stay out of the way.
const POLICY: &str = "\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  nonResourceURLs: [/version]
- level: Request
  verbs: [create]
  resources: [{group: \"\", resources: [configmaps]}]
- level: None
";

fn write_policy(dir: &Path) -> PathBuf {
    let path = dir.join("policy.yaml");
    std::fs::write(&path, POLICY).unwrap();
    path
}

/// [`POLICY`] with every stage: `RequestReceived` is the one `blocking-strict` checks.
fn write_policy_with_all_stages(dir: &Path) -> PathBuf {
    let path = dir.join("policy-all-stages.yaml");
    std::fs::write(&path, POLICY.replace("omitStages: [RequestReceived]\n", "")).unwrap();
    path
}

/// One POST the webhook received.
#[derive(Clone, Debug)]
struct Post {
    at: Instant,
    accepted: bool,
    content_type: String,
    body: Value,
}

/// An audit webhook over TLS that requires a client certificate of the test CA and answers
/// the first `fail_first` POSTs with 500.
struct AuditSink {
    url: String,
    posts: Arc<Mutex<Vec<Post>>>,
}

impl AuditSink {
    async fn start(ca: &Ca, fail_first: usize) -> AuditSink {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let serving = ca.serving("audit-sink", &["127.0.0.1"]);
        let certs = CertificateDer::pem_slice_iter(serving.cert.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_slice(serving.key.as_bytes()).unwrap();
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(ca.pem.cert.as_bytes()) {
            roots.add(cert.unwrap()).unwrap();
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            provider.clone(),
        )
        .build()
        .unwrap();
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_client_cert_verifier(verifier)
            .with_single_cert(certs, key)
            .unwrap();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("https://{}/audit", listener.local_addr().unwrap());
        let posts: Arc<Mutex<Vec<Post>>> = Arc::default();
        let recorded = posts.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                let recorded = recorded.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(
                        move |req: http::Request<hyper::body::Incoming>| {
                            let recorded = recorded.clone();
                            async move {
                                let content_type = req
                                    .headers()
                                    .get("content-type")
                                    .and_then(|v| v.to_str().ok())
                                    .unwrap_or("")
                                    .to_string();
                                let body = req.into_body().collect().await?.to_bytes();
                                let mut posts = recorded.lock().unwrap();
                                let accepted = posts.len() >= fail_first;
                                posts.push(Post {
                                    at: Instant::now(),
                                    accepted,
                                    content_type,
                                    body: serde_json::from_slice(&body).unwrap_or(Value::Null),
                                });
                                Ok::<_, hyper::Error>(
                                    http::Response::builder()
                                        .status(if accepted { 200 } else { 500 })
                                        .body(Full::new(Bytes::new()))
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
        AuditSink { url, posts }
    }

    fn posts(&self) -> Vec<Post> {
        self.posts.lock().unwrap().clone()
    }

    /// The audit IDs of each accepted batch, in order.
    fn accepted_batches(&self) -> Vec<Vec<String>> {
        self.posts()
            .iter()
            .filter(|p| p.accepted)
            .map(|p| audit_ids(&p.body))
            .collect()
    }
}

fn audit_ids(event_list: &Value) -> Vec<String> {
    event_list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|e| e["auditID"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// A kubeconfig for `url` trusting `ca`, authenticating with a client certificate of `ca`.
fn webhook_kubeconfig(dir: &Path, url: &str, ca: &Ca) -> PathBuf {
    let client = ca.client("kube-apiserver-audit", &[]);
    let path = dir.join("audit-webhook.kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: sink\n  cluster:\n    server: {url}\n    certificate-authority-data: {}\nusers:\n- name: apiserver\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\ncontexts:\n- name: sink\n  context:\n    cluster: sink\n    user: apiserver\ncurrent-context: sink\n",
            STANDARD.encode(&ca.pem.cert),
            STANDARD.encode(&client.cert),
            STANDARD.encode(&client.key),
        ),
    )
    .unwrap();
    path
}

/// GET `/version?probe=<probe>` as the admin with `Audit-ID: <probe>`.
async fn get_version(client: &Client, probe: &str) -> Reply {
    let req = client.request_with(
        Method::GET,
        &format!("/version?probe={probe}"),
        &[("audit-id", probe), ("user-agent", "audit-test/1.0")],
    );
    client.send(Proto::H1, req).await.unwrap()
}

/// The value of `name{labels}` in `/metrics` (0 when absent).
async fn metric(client: &Client, series: &str) -> f64 {
    let reply = client.get(Proto::H1, "/metrics").await.unwrap();
    assert_eq!(reply.status, 200);
    reply
        .body
        .lines()
        .find_map(|line| {
            line.strip_prefix(series)?
                .strip_prefix(' ')?
                .trim()
                .parse()
                .ok()
        })
        .unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_gets_event_lists_over_tls_in_batches_of_max_size_retried_with_backoff_and_flushed_at_shutdown()
 {
    let ca = Ca::new("audit-test-ca");
    let sink = AuditSink::start(&ca, 2).await;
    let dir = tempfile::tempdir().unwrap();
    let policy = write_policy(dir.path());
    let kubeconfig = webhook_kubeconfig(dir.path(), &sink.url, &ca);
    let mut server = ApiServer::start(&[
        &format!("--audit-policy-file={}", policy.display()),
        &format!("--audit-webhook-config-file={}", kubeconfig.display()),
        "--audit-webhook-batch-max-size=3",
        "--audit-webhook-batch-max-wait=10m",
        "--audit-webhook-initial-backoff=200ms",
    ])
    .await;
    let admin = server.admin_client();
    for probe in ["size-1", "size-2", "size-3", "size-4"] {
        assert_eq!(get_version(&admin, probe).await.status, 200);
    }
    let batches = eventually("the first batch accepted", || async {
        let batches = sink.accepted_batches();
        (!batches.is_empty()).then_some(batches)
    })
    .await;
    assert_eq!(
        batches,
        [["size-1", "size-2", "size-3"]],
        "three events, not waiting 10m"
    );

    // Two 500s, each retried after the backoff (200 ms, then 1.5 times that; jitter only adds).
    let posts = sink.posts();
    assert_eq!(posts.len(), 3, "{posts:?}");
    assert_eq!(
        posts.iter().map(|p| p.accepted).collect::<Vec<_>>(),
        [false, false, true]
    );
    assert!(
        posts
            .iter()
            .all(|p| audit_ids(&p.body) == ["size-1", "size-2", "size-3"])
    );
    let gap = |i: usize| posts[i].at.duration_since(posts[i - 1].at);
    assert!(
        gap(1) >= Duration::from_millis(200),
        "first retry after {:?}",
        gap(1)
    );
    assert!(
        gap(2) >= Duration::from_millis(300),
        "second retry after {:?}",
        gap(2)
    );
    let list = &posts[2].body;
    assert_eq!(posts[2].content_type, "application/json");
    assert_eq!(list["kind"], "EventList");
    assert_eq!(list["apiVersion"], "audit.k8s.io/v1");
    let event = &list["items"][0];
    assert_eq!(event["kind"], "Event");
    assert_eq!(event["level"], "Metadata");
    assert_eq!(event["stage"], "ResponseComplete");
    assert_eq!(event["requestURI"], "/version?probe=size-1");
    assert_eq!(event["user"]["username"], "admin");
    assert_eq!(event["responseStatus"]["code"], 200);

    assert!(metric(&admin, "apiserver_audit_event_total").await >= 4.0);
    assert!(metric(&admin, "apiserver_audit_level_total{level=\"Metadata\"}").await >= 4.0);
    assert_eq!(
        metric(&admin, "apiserver_audit_error_total{plugin=\"webhook\"}").await,
        0.0,
        "retried until delivered"
    );

    // The fourth event waits for the batch to fill up; shutdown sends it.
    server.stop().await;
    assert_eq!(
        sink.accepted_batches(),
        [vec!["size-1", "size-2", "size-3"], vec!["size-4"]]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_batch_goes_after_max_wait_and_the_log_writes_legacy_lines_in_batch_mode() {
    let ca = Ca::new("audit-test-ca");
    let sink = AuditSink::start(&ca, 0).await;
    let dir = tempfile::tempdir().unwrap();
    let policy = write_policy(dir.path());
    let kubeconfig = webhook_kubeconfig(dir.path(), &sink.url, &ca);
    let log = dir.path().join("audit.log");
    let server = ApiServer::start(&[
        &format!("--audit-policy-file={}", policy.display()),
        &format!("--audit-webhook-config-file={}", kubeconfig.display()),
        "--audit-webhook-batch-max-size=100",
        "--audit-webhook-batch-max-wait=300ms",
        &format!("--audit-log-path={}", log.display()),
        "--audit-log-format=legacy",
        "--audit-log-mode=batch",
        "--audit-log-batch-max-size=10",
        "--audit-log-batch-max-wait=200ms",
    ])
    .await;
    let admin = server.admin_client();
    assert_eq!(get_version(&admin, "legacy-1").await.status, 200);
    // One event of a possible hundred: only the max wait sends it while the server runs.
    eventually("the partial batch after the max wait", || async {
        (sink.accepted_batches() == [["legacy-1"]]).then_some(())
    })
    .await;

    let line = eventually("the legacy line", || async {
        std::fs::read_to_string(&log)
            .ok()?
            .lines()
            .find(|l| l.contains("id=\"legacy-1\""))
            .map(str::to_string)
    })
    .await;
    let (stamp, rest) = line.split_once(" AUDIT: ").unwrap();
    assert_eq!(
        rest,
        r#"id="legacy-1" stage="ResponseComplete" ip="127.0.0.1" method="get" user="admin" groups="\"system:masters\",\"system:authenticated\"" as="<self>" asgroups="<lookup>" user-agent="audit-test/1.0" namespace="<none>" uri="/version?probe=legacy-1" response="200""#
    );
    // Go's RFC3339Nano: fractional seconds without trailing zeros, UTC as `Z`.
    let (seconds, fraction) = stamp
        .strip_suffix('Z')
        .unwrap()
        .split_once('.')
        .unwrap_or((stamp, ""));
    assert_eq!(seconds.len(), "2006-01-02T15:04:05".len(), "{stamp}");
    assert!(fraction.len() <= 9 && !fraction.ends_with('0'), "{stamp}");
}

/// Creates a configmap with one value of `size` bytes.
async fn create_configmap(client: &Client, name: &str, size: usize) {
    let body = serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"v": "x".repeat(size)},
    })
    .to_string();
    let mut req = client.request(Method::POST, "/api/v1/namespaces/default/configmaps", &body);
    req.headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    let reply = client.send(Proto::H1, req).await.unwrap();
    assert_eq!(reply.status, 201, "{}", reply.body);
}

fn events(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:.200}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_rotates_into_gzipped_backups_and_truncates_oversized_events() {
    let dir = tempfile::tempdir().unwrap();
    let policy = write_policy(dir.path());
    let logs = dir.path().join("logs");
    let log = logs.join("audit.log");
    let server = ApiServer::start(&[
        &format!("--audit-policy-file={}", policy.display()),
        &format!("--audit-log-path={}", log.display()),
        "--audit-log-maxsize=1",
        "--audit-log-compress",
        "--audit-log-truncate-enabled",
        "--audit-log-truncate-max-event-size=716800",
    ])
    .await;
    let admin = server.admin_client();
    // Two 600 kB events fill more than the 1 MB file: the second starts a new one.
    create_configmap(&admin, "first", 600_000).await;
    create_configmap(&admin, "second", 600_000).await;
    // A 900 kB request is over the 700 kB event limit: it is logged without its object.
    create_configmap(&admin, "huge", 900_000).await;

    let backup = eventually("one compressed backup", || async {
        let names: Vec<String> = std::fs::read_dir(&logs)
            .ok()?
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "audit.log")
            .collect();
        match names.as_slice() {
            [one] if one.starts_with("audit-") && one.ends_with(".log.gz") => Some(logs.join(one)),
            _ => None,
        }
    })
    .await;
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&backup).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let rotated = events(&text);
    assert_eq!(rotated.len(), 1);
    assert_eq!(rotated[0]["requestObject"]["metadata"]["name"], "first");
    assert_eq!(
        rotated[0]["requestObject"]["data"]["v"]
            .as_str()
            .unwrap()
            .len(),
        600_000
    );

    let current = events(&std::fs::read_to_string(&log).unwrap());
    assert_eq!(current.len(), 2);
    assert_eq!(current[0]["requestObject"]["metadata"]["name"], "second");
    assert!(current[0]["requestObject"].is_object());
    assert!(
        current[0]["annotations"]
            .get("audit.k8s.io/truncated")
            .is_none()
    );
    assert!(current[1].get("requestObject").is_none(), "truncated");
    assert_eq!(current[1]["annotations"]["audit.k8s.io/truncated"], "true");
    assert_eq!(current[1]["level"], "Request");
    assert_eq!(current[1]["responseStatus"]["code"], 201);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocking_strict_refuses_requests_whose_event_cannot_be_written_and_blocking_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let policy = write_policy_with_all_stages(dir.path());
    // Every write to /dev/full fails with ENOSPC.
    let start = |mode: &'static str| {
        let policy = policy.clone();
        async move {
            ApiServer::start(&[
                &format!("--audit-policy-file={}", policy.display()),
                "--audit-log-path=/dev/full",
                &format!("--audit-log-mode={mode}"),
            ])
            .await
        }
    };
    let (strict, blocking) = tokio::join!(start("blocking-strict"), start("blocking"));

    let admin = strict.admin_client();
    let reply = get_version(&admin, "strict").await;
    assert_eq!(reply.status, 500);
    assert_eq!(
        reply.body,
        "Internal Server Error: \"/version?probe=strict\": failed to store audit event\n"
    );
    assert_eq!(
        metric(&admin, "apiserver_audit_requests_rejected_total").await,
        1.0
    );
    assert!(metric(&admin, "apiserver_audit_error_total{plugin=\"log\"}").await >= 1.0);

    let admin = blocking.admin_client();
    assert_eq!(get_version(&admin, "blocking").await.status, 200);
    assert_eq!(
        metric(&admin, "apiserver_audit_requests_rejected_total").await,
        0.0
    );
    assert!(metric(&admin, "apiserver_audit_error_total{plugin=\"log\"}").await >= 1.0);
    blocking
        .stderr
        .wait_for("Error in audit plugin 'log' affecting 1 audit events: write /dev/full: no space left on device")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_audit_flags_and_webhook_kubeconfig_exit_1_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let policy = write_policy(dir.path());
    let policy_flag = format!("--audit-policy-file={}", policy.display());
    let missing = format!(
        "--audit-webhook-config-file={}",
        dir.path().join("missing.kubeconfig").display()
    );
    for (args, want) in [
        (
            vec!["--audit-log-path=-", "--audit-log-mode=async"],
            r#"Error: invalid audit log mode async, allowed modes are "batch,blocking,blocking-strict""#,
        ),
        (
            vec![
                "--audit-webhook-config-file=x",
                "--audit-webhook-version=audit.k8s.io/v1beta1",
            ],
            r#"Error: invalid group version, allowed versions are ["audit.k8s.io/v1"]"#,
        ),
        (
            vec![policy_flag.as_str(), missing.as_str()],
            "Error: audit: initializing audit webhook: failed to read",
        ),
    ] {
        let out = run_to_exit(&args).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        let errors: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("Error: "))
            .collect();
        assert_eq!(errors.len(), 1, "{args:?}: {stderr}");
        assert!(errors[0].starts_with(want), "{args:?}: {stderr}");
    }
}
