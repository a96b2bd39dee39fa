//! Webhook token authentication, webhook authorization, JWT (OIDC) authentication and the
//! structured authentication/authorization configuration files, end to end: the real binary
//! talks over TLS to webhook servers and an OIDC issuer written here (signed with a test CA;
//! the issuer serves discovery and its key set and the test signs tokens with its own keys),
//! and kubectl is the client.

mod common;

#[path = "../../apiserver/tests/common/pki.rs"]
#[allow(dead_code)]
mod pki;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use bytes::Bytes;
use common::{ApiServer, ToolOutput, eventually, run_to_exit, run_tool};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use pki::Ca;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};

/// Answers a request (path and JSON body, `null` for a GET) with a status and JSON.
type Handler = Arc<dyn Fn(&str, &Value) -> (u16, Value) + Send + Sync>;

/// A TLS server answering JSON, recording every request.
struct JsonServer {
    url: String,
    requests: Arc<Mutex<Vec<(String, Value)>>>,
}

impl JsonServer {
    async fn start(ca: &Ca, handler: Handler) -> JsonServer {
        let serving = ca.serving("test-server", &["127.0.0.1", "localhost"]);
        let certs = {
            use rustls::pki_types::pem::PemObject;
            rustls::pki_types::CertificateDer::pem_slice_iter(serving.cert.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .unwrap()
        };
        let key = {
            use rustls::pki_types::pem::PemObject;
            rustls::pki_types::PrivateKeyDer::from_pem_slice(serving.key.as_bytes()).unwrap()
        };
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
        let requests: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
        let recorded = requests.clone();
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let acceptor = acceptor.clone();
                let handler = handler.clone();
                let recorded = recorded.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(
                        move |req: http::Request<hyper::body::Incoming>| {
                            let handler = handler.clone();
                            let recorded = recorded.clone();
                            async move {
                                let path = req.uri().path().to_string();
                                let body = req.into_body().collect().await?.to_bytes();
                                let body: Value =
                                    serde_json::from_slice(&body).unwrap_or(Value::Null);
                                recorded.lock().unwrap().push((path.clone(), body.clone()));
                                let (status, answer) = handler(&path, &body);
                                Ok::<_, hyper::Error>(
                                    http::Response::builder()
                                        .status(status)
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
        JsonServer { url, requests }
    }

    fn count(&self, path: &str) -> usize {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|(p, _)| p == path)
            .count()
    }

    fn bodies(&self, path: &str) -> Vec<Value> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, b)| b.clone())
            .collect()
    }
}

/// A kubeconfig pointing at `server` (full URL), trusting `ca`.
fn webhook_kubeconfig(dir: &Path, name: &str, server: &str, ca: &Ca) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: hook\n  cluster:\n    server: {server}\n    certificate-authority-data: {}\nusers:\n- name: apiserver\n  user:\n    token: webhook-caller-token\ncontexts:\n- name: hook\n  context:\n    cluster: hook\n    user: apiserver\ncurrent-context: hook\n",
            STANDARD.encode(&ca.pem.cert)
        ),
    )
    .unwrap();
    path
}

/// kubectl 1.35 against `server` with a bearer token.
async fn kubectl_as(server: &ApiServer, home: &Path, token: &str, args: &[&str]) -> ToolOutput {
    let url = format!("https://{}", server.addr);
    let ca = server.pki().join("ca.crt");
    let ca = ca.display().to_string();
    let mut all = vec![
        "--server",
        url.as_str(),
        "--certificate-authority",
        ca.as_str(),
        "--token",
        token,
    ];
    all.extend_from_slice(args);
    run_tool("kubectl-1.35", home, &all).await
}

const UNAUTHORIZED: &str = "error: You must be logged in to the server (Unauthorized)";

/// The server's `/metrics` text.
async fn metrics_text(server: &ApiServer) -> String {
    let reply = server
        .admin_client()
        .get(common::client::Proto::H1, "/metrics")
        .await
        .unwrap();
    assert_eq!(reply.status, 200);
    reply.body
}

/// The value of the series of `name` carrying all `labels` (in any order), if any.
fn metric(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?;
        let (label_set, value) = match rest.strip_prefix('{') {
            Some(inner) => inner.split_once("} ")?,
            None => ("", rest.strip_prefix(' ')?),
        };
        labels
            .iter()
            .all(|(k, v)| {
                label_set
                    .split(',')
                    .any(|pair| pair == format!("{k}=\"{v}\""))
            })
            .then(|| value.trim().parse().ok())
            .flatten()
    })
}

/// `sha256:<hex>`, as upstream's metrics label hashed identities, issuers and files.
fn sha256_label(data: &[u8]) -> String {
    use sha2::Digest;
    format!("sha256:{:x}", sha2::Sha256::digest(data))
}

/// A TokenReview webhook: `good-token` is `webhook-user` in `webhook-group`; `error-token`
/// gets `status.error`; anything else is not authenticated.
fn token_review_handler() -> Handler {
    Arc::new(|_path, body| {
        let token = body["spec"]["token"].as_str().unwrap_or("");
        let status = match token {
            "good-token" => json!({
                "authenticated": true,
                "user": {"username": "webhook-user", "uid": "w-1", "groups": ["webhook-group"], "extra": {"scopes": ["read"]}}
            }),
            "error-token" => {
                json!({"authenticated": false, "error": "backend says this token is broken"})
            }
            _ => json!({"authenticated": false}),
        };
        (
            200,
            json!({"apiVersion": body["apiVersion"], "kind": "TokenReview", "status": status}),
        )
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_token_authentication_accepts_rejects_and_caches() {
    let tmp = tempfile::tempdir().unwrap();
    let ca = Ca::new("webhook-ca");
    let hook = JsonServer::start(&ca, token_review_handler()).await;
    let kubeconfig = webhook_kubeconfig(
        tmp.path(),
        "authn.kubeconfig",
        &format!("{}/authenticate", hook.url),
        &ca,
    );
    let server = ApiServer::start(&[
        &format!(
            "--authentication-token-webhook-config-file={}",
            kubeconfig.display()
        ),
        "--authentication-token-webhook-cache-ttl=1h",
    ])
    .await;

    for _ in 0..2 {
        let out = kubectl_as(
            &server,
            tmp.path(),
            "good-token",
            &["get", "namespaces", "-o", "name"],
        )
        .await;
        assert_eq!(out.code, Some(0), "{out:?}");
        assert!(out.stdout.contains("namespace/default"), "{out:?}");
    }
    // Both answers came from one review: the cache keeps the success.
    assert_eq!(hook.count("/authenticate"), 1);
    let review = &hook.bodies("/authenticate")[0];
    assert_eq!(review["apiVersion"], "authentication.k8s.io/v1");
    assert_eq!(review["kind"], "TokenReview");
    assert_eq!(review["spec"]["token"], "good-token");

    for _ in 0..2 {
        let out = kubectl_as(&server, tmp.path(), "bad-token", &["get", "namespaces"]).await;
        assert_eq!(out.code, Some(1), "{out:?}");
        assert!(out.stderr.contains(UNAUTHORIZED), "{out:?}");
    }
    // Rejections are cached too.
    assert_eq!(hook.count("/authenticate"), 2);

    // A review with status.error is a 401 whose body says no more than upstream's.
    let reply = server
        .anonymous_client()
        .with_bearer("error-token")
        .get(common::client::Proto::H1, "/api")
        .await
        .unwrap();
    assert_eq!(reply.status, 401);
    let body = reply.body.clone();
    assert!(!body.contains("broken"), "{body}");
    assert!(body.contains("\"message\":\"Unauthorized\""), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_token_authentication_v1beta1_without_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let ca = Ca::new("webhook-ca");
    let hook = JsonServer::start(&ca, token_review_handler()).await;
    let kubeconfig = webhook_kubeconfig(
        tmp.path(),
        "authn.kubeconfig",
        &format!("{}/tr", hook.url),
        &ca,
    );
    let server = ApiServer::start(&[
        &format!(
            "--authentication-token-webhook-config-file={}",
            kubeconfig.display()
        ),
        "--authentication-token-webhook-version=v1beta1",
        "--authentication-token-webhook-cache-ttl=0s",
    ])
    .await;
    let out = kubectl_as(
        &server,
        tmp.path(),
        "good-token",
        &["get", "namespaces", "-o", "name"],
    )
    .await;
    assert_eq!(out.code, Some(0), "{out:?}");
    // Without the webhook's cache every rejection asks the webhook again (the server's own
    // cache in front of all token authenticators keeps successes only, as upstream's).
    let mut asked = hook.count("/tr");
    for _ in 0..2 {
        let out = kubectl_as(&server, tmp.path(), "bad-token", &["get", "namespaces"]).await;
        assert_eq!(out.code, Some(1), "{out:?}");
        assert!(hook.count("/tr") > asked);
        asked = hook.count("/tr");
    }
    assert!(
        hook.bodies("/tr")
            .iter()
            .all(|r| r["apiVersion"] == "authentication.k8s.io/v1beta1")
    );
}

/// A SubjectAccessReview webhook: non-resource paths (discovery) and configmaps in
/// `allowed` are allowed, configmaps in `denied` denied with a reason; anything else gets no
/// opinion with a reason.
fn sar_handler() -> Handler {
    Arc::new(|_path, body| {
        let ra = &body["spec"]["resourceAttributes"];
        let non_resource = body["spec"].get("nonResourceAttributes").is_some();
        let status = match (ra["resource"].as_str(), ra["namespace"].as_str()) {
            _ if non_resource => json!({"allowed": true}),
            (Some("configmaps"), Some("allowed")) => {
                json!({"allowed": true, "reason": "webhook allows"})
            }
            (Some("configmaps"), Some("denied")) => {
                json!({"allowed": false, "denied": true, "reason": "webhook says no"})
            }
            _ => json!({"allowed": false, "reason": "no opinion here"}),
        };
        (
            200,
            json!({"apiVersion": body["apiVersion"], "kind": "SubjectAccessReview", "status": status}),
        )
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_authorization_allow_deny_no_opinion_in_kubectl() {
    let tmp = tempfile::tempdir().unwrap();
    let ca = Ca::new("webhook-ca");
    let hook = JsonServer::start(&ca, sar_handler()).await;
    let kubeconfig = webhook_kubeconfig(
        tmp.path(),
        "authz.kubeconfig",
        &format!("{}/authorize", hook.url),
        &ca,
    );
    let tokens = tmp.path().join("tokens.csv");
    std::fs::write(&tokens, "jane-token,jane,1001,\"devs,qa\"\n").unwrap();
    let server = ApiServer::start(&[
        &format!("--token-auth-file={}", tokens.display()),
        "--authorization-mode=Webhook",
        &format!(
            "--authorization-webhook-config-file={}",
            kubeconfig.display()
        ),
        "--authorization-webhook-cache-authorized-ttl=1h",
        "--authorization-webhook-cache-unauthorized-ttl=1h",
    ])
    .await;

    let allowed = kubectl_as(
        &server,
        tmp.path(),
        "jane-token",
        &["get", "configmaps", "-n", "allowed"],
    )
    .await;
    assert_eq!(allowed.code, Some(0), "{allowed:?}");
    let denied = kubectl_as(
        &server,
        tmp.path(),
        "jane-token",
        &["get", "configmaps", "-n", "denied"],
    )
    .await;
    assert_eq!(denied.code, Some(1), "{denied:?}");
    assert!(
        denied.stderr.contains(
            "Error from server (Forbidden): configmaps is forbidden: User \"jane\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"denied\": webhook says no"
        ),
        "{denied:?}"
    );
    let no_opinion = kubectl_as(
        &server,
        tmp.path(),
        "jane-token",
        &["get", "secrets", "-n", "allowed"],
    )
    .await;
    assert_eq!(no_opinion.code, Some(1), "{no_opinion:?}");
    assert!(
        no_opinion.stderr.contains("User \"jane\" cannot list resource \"secrets\" in API group \"\" in the namespace \"allowed\": no opinion here"),
        "{no_opinion:?}"
    );

    // The review carried the user and the request; answers were cached.
    let reviews = hook.bodies("/authorize");
    let review = reviews
        .iter()
        .find(|r| r["spec"]["resourceAttributes"]["namespace"] == "denied")
        .expect("a review for the denied namespace");
    assert_eq!(review["apiVersion"], "authorization.k8s.io/v1");
    assert_eq!(review["spec"]["user"], "jane");
    assert_eq!(review["spec"]["uid"], "1001");
    assert_eq!(
        review["spec"]["groups"],
        json!(["devs", "qa", "system:authenticated"])
    );
    assert_eq!(review["spec"]["resourceAttributes"]["verb"], "list");
    assert_eq!(review["spec"]["resourceAttributes"]["version"], "v1");
    // Selectors reach the webhook as requirements.
    let selected = kubectl_as(
        &server,
        tmp.path(),
        "jane-token",
        &[
            "get",
            "configmaps",
            "-n",
            "allowed",
            "--field-selector",
            "metadata.name=one",
            "-l",
            "app=web",
        ],
    )
    .await;
    assert_eq!(selected.code, Some(0), "{selected:?}");
    let reviews = hook.bodies("/authorize");
    let review = reviews
        .iter()
        .find(|r| {
            r["spec"]["resourceAttributes"]
                .get("fieldSelector")
                .is_some()
        })
        .expect("a review with a field selector");
    assert_eq!(
        review["spec"]["resourceAttributes"]["fieldSelector"],
        json!({"requirements": [{"key": "metadata.name", "operator": "In", "values": ["one"]}]})
    );
    assert_eq!(
        review["spec"]["resourceAttributes"]["labelSelector"],
        json!({"requirements": [{"key": "app", "operator": "In", "values": ["web"]}]})
    );

    let configmap_reviews = || {
        hook.bodies("/authorize")
            .iter()
            .filter(|r| r["spec"]["resourceAttributes"]["resource"] == "configmaps")
            .count()
    };
    let before = configmap_reviews();
    let again = kubectl_as(
        &server,
        tmp.path(),
        "jane-token",
        &["get", "configmaps", "-n", "denied"],
    )
    .await;
    assert_eq!(again.code, Some(1));
    let again = kubectl_as(
        &server,
        tmp.path(),
        "jane-token",
        &["get", "configmaps", "-n", "allowed"],
    )
    .await;
    assert_eq!(again.code, Some(0));
    assert_eq!(
        configmap_reviews(),
        before,
        "cached answers asked the webhook again"
    );

    // Each round-trip is counted.
    let metrics = server
        .admin_client()
        .get(common::client::Proto::H1, "/metrics")
        .await
        .unwrap();
    assert!(
        metrics.body.contains(
            "apiserver_authorization_webhook_evaluations_total{name=\"webhook\",result=\"success\"}"
        ),
        "{}",
        metrics.body
    );
}

/// An OIDC issuer: discovery, and a key set the test can rotate.
struct Issuer {
    server: JsonServer,
    keys: Arc<Mutex<Vec<Value>>>,
}

/// A P-256 key with its id.
struct SigningKey {
    kid: String,
    pair: EcdsaKeyPair,
}

impl SigningKey {
    fn new(kid: &str) -> Self {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        SigningKey {
            kid: kid.into(),
            pair,
        }
    }

    fn jwk(&self) -> Value {
        let public = self.pair.public_key().as_ref();
        json!({
            "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": self.kid,
            "x": URL_SAFE_NO_PAD.encode(&public[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&public[33..65]),
        })
    }

    fn sign(&self, claims: &Value) -> String {
        let header = URL_SAFE_NO_PAD
            .encode(json!({"alg": "ES256", "typ": "JWT", "kid": self.kid}).to_string());
        let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
        let input = format!("{header}.{payload}");
        let sig = self
            .pair
            .sign(&SystemRandom::new(), input.as_bytes())
            .unwrap();
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

impl Issuer {
    async fn start(ca: &Ca, first: &SigningKey) -> Issuer {
        Issuer::start_with_key(ca, first.jwk()).await
    }

    /// An issuer publishing `jwk` (of any type).
    async fn start_with_key(ca: &Ca, jwk: Value) -> Issuer {
        let keys = Arc::new(Mutex::new(vec![jwk]));
        let url_cell: Arc<Mutex<String>> = Arc::default();
        let (k, u) = (keys.clone(), url_cell.clone());
        let server = JsonServer::start(
            ca,
            Arc::new(move |path, _| {
                let url = u.lock().unwrap().clone();
                match path {
                    "/.well-known/openid-configuration" | "/custom/openid-configuration" => (
                        200,
                        json!({"issuer": url, "jwks_uri": format!("{url}/keys"), "id_token_signing_alg_values_supported": ["ES256"]}),
                    ),
                    "/keys" => (200, json!({"keys": k.lock().unwrap().clone()})),
                    _ => (404, json!({})),
                }
            }),
        )
        .await;
        *url_cell.lock().unwrap() = server.url.clone();
        Issuer { server, keys }
    }

    fn url(&self) -> &str {
        &self.server.url
    }

    fn token(&self, key: &SigningKey, extra: Value) -> String {
        key.sign(&self.claims(extra))
    }

    /// Upstream-shaped claims of this issuer for `alice`, with `extra` added or replaced.
    fn claims(&self, extra: Value) -> Value {
        let mut claims = json!({
            "iss": self.url(), "aud": "k8s", "sub": "alice",
            "iat": now(), "exp": now() + 600,
        });
        for (k, v) in extra.as_object().unwrap() {
            claims[k] = v.clone();
        }
        claims
    }
}

/// An authorization webhook that allows everything and records who asked.
fn allow_all_handler() -> Handler {
    Arc::new(|_path, body| {
        (
            200,
            json!({"apiVersion": body["apiVersion"], "kind": "SubjectAccessReview", "status": {"allowed": true}}),
        )
    })
}

/// The users (name, groups) the recording authorization webhook saw.
fn users_seen(hook: &JsonServer) -> Vec<(String, Value)> {
    hook.bodies("/authorize")
        .iter()
        .map(|b| {
            (
                b["spec"]["user"].as_str().unwrap_or("").to_string(),
                b["spec"]["groups"].clone(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oidc_flags_map_prefixed_users_and_pick_up_key_rotation() {
    let tmp = tempfile::tempdir().unwrap();
    let ca = Ca::new("oidc-ca");
    let first = SigningKey::new("key-1");
    let issuer = Issuer::start(&ca, &first).await;
    let ca_file = tmp.path().join("oidc-ca.crt");
    std::fs::write(&ca_file, &ca.pem.cert).unwrap();
    let hook = JsonServer::start(&ca, allow_all_handler()).await;
    let authz = webhook_kubeconfig(
        tmp.path(),
        "authz.kubeconfig",
        &format!("{}/authorize", hook.url),
        &ca,
    );
    let server = ApiServer::start(&[
        &format!("--oidc-issuer-url={}", issuer.url()),
        "--oidc-client-id=k8s",
        &format!("--oidc-ca-file={}", ca_file.display()),
        "--oidc-signing-algs=ES256",
        "--oidc-username-prefix=oidc:",
        "--oidc-groups-claim=groups",
        "--oidc-groups-prefix=og:",
        "--oidc-required-claim=tenant=acme",
        "--authorization-mode=Webhook",
        &format!("--authorization-webhook-config-file={}", authz.display()),
        "--authorization-webhook-cache-authorized-ttl=0s",
    ])
    .await;

    let token = issuer.token(&first, json!({"groups": ["dev", "ops"], "tenant": "acme"}));
    // Discovery runs in the background after start, as upstream's does.
    eventually("an OIDC token accepted", || async {
        let out = kubectl_as(
            &server,
            tmp.path(),
            &token,
            &["get", "namespaces", "-o", "name"],
        )
        .await;
        (out.code == Some(0)).then_some(())
    })
    .await;
    assert!(
        users_seen(&hook).contains(&(
            "oidc:alice".to_string(),
            json!(["og:dev", "og:ops", "system:authenticated"])
        )),
        "{:?}",
        users_seen(&hook)
    );

    // Rejected: a wrong audience, an expired token, a failing required claim, a token
    // signed by a key the issuer does not publish.
    let stranger = SigningKey::new("key-1");
    for (what, bad) in [
        (
            "audience",
            issuer.token(&first, json!({"aud": "other", "tenant": "acme"})),
        ),
        (
            "expired",
            issuer.token(&first, json!({"exp": now() - 3600, "tenant": "acme"})),
        ),
        (
            "required claim",
            issuer.token(&first, json!({"tenant": "evil"})),
        ),
        ("forged", issuer.token(&stranger, json!({"tenant": "acme"}))),
    ] {
        let out = kubectl_as(&server, tmp.path(), &bad, &["get", "namespaces"]).await;
        assert_eq!(out.code, Some(1), "{what}: {out:?}");
        assert!(out.stderr.contains(UNAUTHORIZED), "{what}: {out:?}");
    }

    // The issuer rotates to a new key: tokens signed with it are accepted (the unknown key id
    // makes the server fetch the key set again), tokens of the retired key no longer are.
    let second = SigningKey::new("key-2");
    *issuer.keys.lock().unwrap() = vec![second.jwk()];
    let rotated = issuer.token(&second, json!({"sub": "bob", "tenant": "acme"}));
    let out = kubectl_as(
        &server,
        tmp.path(),
        &rotated,
        &["get", "namespaces", "-o", "name"],
    )
    .await;
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(users_seen(&hook).iter().any(|(u, _)| u == "oidc:bob"));
    // (A fresh token: the server caches successes for 10 s, as upstream does.)
    let retired_token = issuer.token(&first, json!({"sub": "carol", "tenant": "acme"}));
    let retired = kubectl_as(&server, tmp.path(), &retired_token, &["get", "namespaces"]).await;
    assert_eq!(retired.code, Some(1), "{retired:?}");

    // Metrics: the webhook of --authorization-mode is named "webhook"; the JWT authenticator's
    // latency by result and hashed issuer, and its key set fetches.
    let text = metrics_text(&server).await;
    let allowed = metric(
        &text,
        "apiserver_authorization_decisions_total",
        &[
            ("type", "Webhook"),
            ("name", "webhook"),
            ("decision", "allowed"),
        ],
    );
    assert!(allowed.is_some_and(|v| v >= 2.0), "{allowed:?}");
    let issuer_hash = sha256_label(issuer.url().as_bytes());
    for result in ["success", "failure"] {
        let count = metric(
            &text,
            "apiserver_authentication_jwt_authenticator_latency_seconds_count",
            &[("result", result), ("jwt_issuer_hash", &issuer_hash)],
        );
        assert!(count.is_some_and(|v| v >= 1.0), "{result}: {count:?}");
    }
    let fetched = metric(
        &text,
        "apiserver_authentication_jwt_authenticator_jwks_fetch_last_timestamp_seconds",
        &[("result", "success"), ("jwt_issuer_hash", &issuer_hash)],
    );
    assert!(fetched.is_some_and(|t| t > 1.0e9), "{fetched:?}");
    let key_sets = text
        .lines()
        .filter(|l| {
            l.starts_with(
                "apiserver_authentication_jwt_authenticator_jwks_fetch_last_key_set_info{",
            ) && l.contains(&issuer_hash)
        })
        .count();
    assert_eq!(key_sets, 1, "{text}");
}

/// A P-521 key made and used by OpenSSL (through jwtk), so the server's ES512 verification
/// is checked against another implementation's signatures.
struct Es512Key {
    kid: String,
    key: jwtk::ecdsa::EcdsaPrivateKey,
}

impl Es512Key {
    fn new(kid: &str) -> Self {
        Es512Key {
            kid: kid.into(),
            key: jwtk::ecdsa::EcdsaPrivateKey::generate(jwtk::ecdsa::EcdsaAlgorithm::ES512)
                .unwrap(),
        }
    }

    fn jwk(&self) -> Value {
        use jwtk::PublicKeyToJwk;
        let mut jwk = serde_json::to_value(self.key.public_key_to_jwk().unwrap()).unwrap();
        jwk["kid"] = json!(self.kid);
        jwk["alg"] = json!("ES512");
        jwk
    }

    fn sign(&self, claims: &Value) -> String {
        use jwtk::SigningKey as _;
        let header = URL_SAFE_NO_PAD
            .encode(json!({"alg": "ES512", "typ": "JWT", "kid": self.kid}).to_string());
        let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
        let input = format!("{header}.{payload}");
        let sig = self.key.sign(input.as_bytes()).unwrap();
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(&sig))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oidc_accepts_es512_tokens_of_a_p521_key_with_their_jti_as_credential_id() {
    let tmp = tempfile::tempdir().unwrap();
    let ca = Ca::new("oidc-ca");
    let key = Es512Key::new("p521");
    let jwk = key.jwk();
    assert_eq!(jwk["crv"], "P-521", "{jwk}");
    let issuer = Issuer::start_with_key(&ca, jwk).await;
    let ca_file = tmp.path().join("oidc-ca.crt");
    std::fs::write(&ca_file, &ca.pem.cert).unwrap();
    let server = ApiServer::start(&[
        &format!("--oidc-issuer-url={}", issuer.url()),
        "--oidc-client-id=k8s",
        &format!("--oidc-ca-file={}", ca_file.display()),
        "--oidc-signing-algs=ES512",
        "--oidc-username-prefix=oidc:",
        // SelfSubjectReview is open to every authenticated user (system:basic-user).
        "--authorization-mode=RBAC",
    ])
    .await;

    let token = key.sign(&issuer.claims(json!({"jti": "es512-token-1"})));
    // Discovery runs in the background after start, as upstream's does.
    let stdout = eventually("the ES512 token accepted", || async {
        let out = kubectl_as(
            &server,
            tmp.path(),
            &token,
            &["auth", "whoami", "-o", "json"],
        )
        .await;
        (out.code == Some(0)).then_some(out.stdout)
    })
    .await;
    let review: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        review["status"]["userInfo"]["username"], "oidc:alice",
        "{review}"
    );
    // The token's jti is its credential ID (upstream since 1.32).
    assert_eq!(
        review["status"]["userInfo"]["extra"]["authentication.kubernetes.io/credential-id"],
        json!(["JTI=es512-token-1"]),
        "{review}"
    );

    // Another P-521 key with the same key id, and a changed payload, are refused.
    let stranger = Es512Key::new("p521");
    let forged = stranger.sign(&issuer.claims(json!({"sub": "mallory"})));
    let mut parts: Vec<String> = token.split('.').map(str::to_string).collect();
    parts[1] = URL_SAFE_NO_PAD.encode(issuer.claims(json!({"sub": "root"})).to_string());
    let tampered = parts.join(".");
    for (what, bad) in [("forged", forged), ("tampered", tampered)] {
        let out = kubectl_as(&server, tmp.path(), &bad, &["auth", "whoami"]).await;
        assert_eq!(out.code, Some(1), "{what}: {out:?}");
        assert!(out.stderr.contains(UNAUTHORIZED), "{what}: {out:?}");
    }
    // RBAC of --authorization-mode allowed the review, counted under the name "rbac".
    let text = metrics_text(&server).await;
    let allowed = metric(
        &text,
        "apiserver_authorization_decisions_total",
        &[("type", "RBAC"), ("name", "rbac"), ("decision", "allowed")],
    );
    assert!(allowed.is_some_and(|v| v >= 1.0), "{text}");
}

fn authn_config(issuer: &Issuer, ca: &Ca, username_expression: &str) -> String {
    let ca_pem: String = ca
        .pem
        .cert
        .lines()
        .map(|l| format!("      {l}\n"))
        .collect();
    format!(
        "apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: {url}
    discoveryURL: {url}/custom/openid-configuration
    audiences: [k8s, other]
    audienceMatchPolicy: MatchAny
    certificateAuthority: |
{ca_pem}  claimValidationRules:
  - expression: \"claims.tier == 'gold'\"
    message: only gold tier
  claimMappings:
    username:
      expression: \"{username_expression}\"
    groups:
      expression: \"claims.roles.map(r, 'role:' + r)\"
    extra:
    - key: example.com/tier
      valueExpression: claims.tier
  userValidationRules:
  - expression: \"!user.username.startsWith('system:')\"
    message: no system users
anonymous:
  enabled: true
  conditions:
  - path: /livez
",
        url = issuer.url()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authentication_config_cel_mappings_rules_and_reload() {
    let tmp = tempfile::tempdir().unwrap();
    let ca = Ca::new("oidc-ca");
    let key = SigningKey::new("k");
    let issuer = Issuer::start(&ca, &key).await;
    let hook = JsonServer::start(&ca, allow_all_handler()).await;
    let authz = webhook_kubeconfig(
        tmp.path(),
        "authz.kubeconfig",
        &format!("{}/authorize", hook.url),
        &ca,
    );
    let config = tmp.path().join("authn.yaml");
    std::fs::write(&config, authn_config(&issuer, &ca, "'cel:' + claims.sub")).unwrap();
    let server = ApiServer::start(&[
        &format!("--authentication-config={}", config.display()),
        "--authorization-mode=Webhook",
        &format!("--authorization-webhook-config-file={}", authz.display()),
        "--authorization-webhook-cache-authorized-ttl=0s",
    ])
    .await;

    let gold = issuer.token(
        &key,
        json!({"sub": "bob", "tier": "gold", "roles": ["admin", "dev"], "aud": ["other"]}),
    );
    eventually("a gold-tier token accepted", || async {
        let out = kubectl_as(
            &server,
            tmp.path(),
            &gold,
            &["get", "namespaces", "-o", "name"],
        )
        .await;
        (out.code == Some(0)).then_some(())
    })
    .await;
    // Discovery used the configured discovery URL.
    assert!(issuer.server.count("/custom/openid-configuration") >= 1);
    assert_eq!(issuer.server.count("/.well-known/openid-configuration"), 0);
    let reviews = hook.bodies("/authorize");
    let review = reviews
        .iter()
        .find(|r| r["spec"]["user"] == "cel:bob")
        .expect("a review for cel:bob");
    assert_eq!(
        review["spec"]["groups"],
        json!(["role:admin", "role:dev", "system:authenticated"])
    );
    assert_eq!(review["spec"]["extra"]["example.com/tier"], json!(["gold"]));

    // The file's anonymous settings: anonymous requests only for /livez.
    let anonymous = server.anonymous_client();
    let livez = anonymous
        .get(common::client::Proto::H1, "/livez")
        .await
        .unwrap();
    assert_eq!(livez.status, 200, "{livez:?}");
    let api = anonymous
        .get(common::client::Proto::H1, "/api")
        .await
        .unwrap();
    assert_eq!(api.status, 401, "{api:?}");

    // The claim validation rule refuses other tiers; the user validation rule refuses
    // system: names.
    let silver = issuer.token(&key, json!({"sub": "bob", "tier": "silver", "roles": []}));
    let out = kubectl_as(&server, tmp.path(), &silver, &["get", "namespaces"]).await;
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stderr.contains(UNAUTHORIZED), "{out:?}");

    // A new mapping is picked up without a restart.
    let v2 = authn_config(&issuer, &ca, "'v2:' + claims.sub");
    std::fs::write(&config, &v2).unwrap();
    // A token the server has not seen (it caches successes for 10 s, as upstream does).
    let gold = issuer.token(
        &key,
        json!({"sub": "bob", "tier": "gold", "roles": ["admin"], "nonce": "after-reload"}),
    );
    eventually("the reloaded username mapping", || async {
        let out = kubectl_as(
            &server,
            tmp.path(),
            &gold,
            &["get", "namespaces", "-o", "name"],
        )
        .await;
        (out.code == Some(0)
            && hook
                .bodies("/authorize")
                .iter()
                .any(|r| r["spec"]["user"] == "v2:bob"))
        .then_some(())
    })
    .await;

    // An invalid file is refused and the running configuration kept.
    std::fs::write(&config, "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n- issuer:\n    url: http://insecure\n").unwrap();
    server
        .stderr
        .wait_for("reloading authentication config failed")
        .await;
    let out = kubectl_as(
        &server,
        tmp.path(),
        &gold,
        &["get", "namespaces", "-o", "name"],
    )
    .await;
    assert_eq!(out.code, Some(0), "{out:?}");

    // The anonymous section is not reloaded: a file changing it is refused, as upstream
    // refuses it, and anonymous requests keep the start-up settings.
    let wider = v2.replace(
        "  - path: /livez\n",
        "  - path: /livez\n  - path: /readyz\n",
    );
    assert_ne!(wider, v2);
    std::fs::write(&config, &wider).unwrap();
    server
        .stderr
        .wait_for("anonymous: Forbidden: changed from initial configuration file")
        .await;
    let readyz = anonymous
        .get(common::client::Proto::H1, "/readyz")
        .await
        .unwrap();
    assert_eq!(readyz.status, 401, "{readyz:?}");

    // Reloads are counted by status; the configuration in force is still v2.
    let text = metrics_text(&server).await;
    let id = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("apiserver_authentication_config_controller_last_config_info{")
        })
        .expect("last_config_info");
    assert!(
        id.contains(&format!("hash=\"{}\"", sha256_label(v2.as_bytes()))),
        "{id}"
    );
    let success = metric(
        &text,
        "apiserver_authentication_config_controller_automatic_reloads_total",
        &[("status", "success")],
    );
    // (At least: a write the watcher reads half-done counts as one more reload.)
    assert!(success.is_some_and(|v| v >= 1.0), "{text}");
    let failure = metric(
        &text,
        "apiserver_authentication_config_controller_automatic_reloads_total",
        &[("status", "failure")],
    );
    assert!(failure.is_some_and(|v| v >= 2.0), "{text}");
    let when = metric(
        &text,
        "apiserver_authentication_config_controller_automatic_reload_last_timestamp_seconds",
        &[("status", "failure")],
    );
    assert!(when.is_some_and(|t| t > 1.0e9), "{when:?}");
}

fn authz_config(webhook: &Path, dead: &Path, last: &str) -> String {
    format!(
        "apiVersion: apiserver.config.k8s.io/v1
kind: AuthorizationConfiguration
authorizers:
- type: Webhook
  name: hooked
  webhook:
    timeout: 5s
    subjectAccessReviewVersion: v1
    matchConditionSubjectAccessReviewVersion: v1
    failurePolicy: NoOpinion
    authorizedTTL: 1ms
    unauthorizedTTL: 1ms
    connectionInfo:
      type: KubeConfigFile
      kubeConfigFile: {webhook}
    matchConditions:
    - expression: \"!has(request.resourceAttributes) || request.resourceAttributes.namespace == 'hooked'\"
- type: Webhook
  name: broken
  webhook:
    timeout: 2s
    subjectAccessReviewVersion: v1
    matchConditionSubjectAccessReviewVersion: v1
    failurePolicy: Deny
    connectionInfo:
      type: KubeConfigFile
      kubeConfigFile: {dead}
    matchConditions:
    - expression: has(request.resourceAttributes) && request.resourceAttributes.namespace == 'broken'
- type: {last}
  name: last
",
        webhook = webhook.display(),
        dead = dead.display(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authorization_config_match_conditions_failure_policy_and_reload() {
    let tmp = tempfile::tempdir().unwrap();
    let ca = Ca::new("webhook-ca");
    let hook = JsonServer::start(&ca, allow_all_handler()).await;
    let webhook = webhook_kubeconfig(
        tmp.path(),
        "hooked.kubeconfig",
        &format!("{}/authorize", hook.url),
        &ca,
    );
    let dead_port = common::free_port();
    let dead = webhook_kubeconfig(
        tmp.path(),
        "dead.kubeconfig",
        &format!("https://127.0.0.1:{dead_port}/authorize"),
        &ca,
    );
    let tokens = tmp.path().join("tokens.csv");
    std::fs::write(&tokens, "jane-token,jane,1001\n").unwrap();
    let config = tmp.path().join("authz.yaml");
    std::fs::write(&config, authz_config(&webhook, &dead, "AlwaysDeny")).unwrap();
    let server = ApiServer::start(&[
        &format!("--token-auth-file={}", tokens.display()),
        &format!("--authorization-config={}", config.display()),
    ])
    .await;

    let hooked = kubectl_as(
        &server,
        tmp.path(),
        "jane-token",
        &["get", "configmaps", "-n", "hooked"],
    )
    .await;
    assert_eq!(hooked.code, Some(0), "{hooked:?}");
    let asked_for = |ns: &str| {
        hook.bodies("/authorize")
            .iter()
            .filter(|r| r["spec"]["resourceAttributes"]["namespace"] == ns)
            .count()
    };
    assert!(asked_for("hooked") >= 1);
    // Other namespaces do not match the webhook's conditions: it is not asked, and the last
    // authorizer (AlwaysDeny) leaves the request forbidden.
    let other = kubectl_as(
        &server,
        tmp.path(),
        "jane-token",
        &["get", "configmaps", "-n", "other"],
    )
    .await;
    assert_eq!(other.code, Some(1), "{other:?}");
    assert!(
        other
            .stderr
            .contains("User \"jane\" cannot list resource \"configmaps\""),
        "{other:?}"
    );
    assert_eq!(asked_for("other"), 0);
    // The unreachable webhook with failurePolicy Deny denies.
    let broken = kubectl_as(
        &server,
        tmp.path(),
        "jane-token",
        &["get", "configmaps", "-n", "broken"],
    )
    .await;
    assert_eq!(broken.code, Some(1), "{broken:?}");
    // The error comes with the decision, which upstream's authorization filter answers with
    // a 500 naming it.
    assert!(
        broken.stderr.contains("Error from server (InternalError)"),
        "{broken:?}"
    );
    assert!(
        broken.stderr.contains("connect: connection refused"),
        "{broken:?}"
    );

    // Decisions are counted per configured authorizer, by its type and name; AlwaysDeny
    // has no opinion, which is not counted.
    let text = metrics_text(&server).await;
    let decisions = |text: &str, type_: &str, name: &str, decision: &str| {
        metric(
            text,
            "apiserver_authorization_decisions_total",
            &[("type", type_), ("name", name), ("decision", decision)],
        )
    };
    assert!(decisions(&text, "Webhook", "hooked", "allowed").is_some_and(|v| v >= 1.0));
    assert!(decisions(&text, "Webhook", "broken", "denied").is_some_and(|v| v >= 1.0));
    assert!(!text.contains("name=\"last\""), "{text}");
    // The match conditions: "hooked" excluded the requests outside its namespace, and each
    // evaluation is timed.
    let excluded = metric(
        &text,
        "apiserver_authorization_match_condition_exclusions_total",
        &[("type", "Webhook"), ("name", "hooked")],
    );
    assert!(excluded.is_some_and(|v| v >= 1.0), "{text}");
    let timed = metric(
        &text,
        "apiserver_authorization_match_condition_evaluation_seconds_count",
        &[("type", "Webhook"), ("name", "hooked")],
    );
    assert!(timed.is_some_and(|v| v >= 2.0), "{text}");

    // The chain is reloaded when the file changes.
    let allow_last = authz_config(&webhook, &dead, "AlwaysAllow");
    std::fs::write(&config, &allow_last).unwrap();
    eventually("the reloaded chain allows", || async {
        let out = kubectl_as(
            &server,
            tmp.path(),
            "jane-token",
            &["get", "configmaps", "-n", "other"],
        )
        .await;
        (out.code == Some(0)).then_some(())
    })
    .await;
    // A broken file keeps the running chain.
    std::fs::write(&config, "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers: []\n").unwrap();
    server
        .stderr
        .wait_for("reloading authorization config failed")
        .await;
    let out = kubectl_as(
        &server,
        tmp.path(),
        "jane-token",
        &["get", "configmaps", "-n", "other"],
    )
    .await;
    assert_eq!(out.code, Some(0), "{out:?}");

    let text = metrics_text(&server).await;
    assert!(decisions(&text, "AlwaysAllow", "last", "allowed").is_some_and(|v| v >= 2.0));
    for status in ["success", "failure"] {
        let count = metric(
            &text,
            "apiserver_authorization_config_controller_automatic_reloads_total",
            &[("status", status)],
        );
        assert!(count.is_some_and(|v| v >= 1.0), "{status}: {text}");
    }
    let info = text
        .lines()
        .find(|l| l.starts_with("apiserver_authorization_config_controller_last_config_info{"))
        .expect("last_config_info");
    assert!(
        info.contains(&format!("hash=\"{}\"", sha256_label(allow_last.as_bytes()))),
        "{info}"
    );
    assert!(info.contains("apiserver_id_hash=\"sha256:"), "{info}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_webhook_and_oidc_configuration_exits_1_with_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let bad_authn = tmp.path().join("authn.yaml");
    std::fs::write(&bad_authn, "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n- issuer:\n    url: http://issuer\n    audiences: [a]\n  claimMappings:\n    username:\n      claim: sub\n      prefix: ''\n").unwrap();
    let bad_cel = tmp.path().join("cel.yaml");
    std::fs::write(&bad_cel, "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n- issuer:\n    url: https://issuer\n    audiences: [a]\n  claimMappings:\n    username:\n      expression: 'claims.sub +'\n").unwrap();
    let bad_authz = tmp.path().join("authz.yaml");
    std::fs::write(&bad_authz, "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n- type: Webhook\n  name: w\n").unwrap();
    let garbage_yaml = tmp.path().join("garbage.yaml");
    std::fs::write(&garbage_yaml, "jwt: [").unwrap();
    let garbage = tmp.path().join("garbage.kubeconfig");
    std::fs::write(&garbage, "clusters: [").unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![format!(
                "--authentication-config={}",
                garbage_yaml.display()
            )],
            "yaml: line 1 column 6: unclosed bracket",
        ),
        (
            vec![format!("--authorization-config={}", garbage_yaml.display())],
            "yaml: line 1 column 6: unclosed bracket",
        ),
        (
            vec![format!("--authentication-config={}", bad_authn.display())],
            "URL scheme must be https",
        ),
        (
            vec![format!("--authentication-config={}", bad_cel.display())],
            "compilation failed",
        ),
        (
            vec![format!("--authorization-config={}", bad_authz.display())],
            "authorizers[0].webhook: Required value: required when type=Webhook",
        ),
        (
            vec![
                format!("--authorization-config={}", bad_authz.display()),
                "--authorization-mode=AlwaysDeny".into(),
            ],
            "--authorization-config can not be specified when --authorization-mode or --authorization-webhook-* flags are defined",
        ),
        (
            vec![
                format!("--authentication-config={}", bad_authn.display()),
                "--oidc-issuer-url=https://x".into(),
                "--oidc-client-id=y".into(),
            ],
            "authentication-config file and oidc-* flags are mutually exclusive",
        ),
        (
            vec!["--oidc-issuer-url=https://x".into()],
            "oidc-issuer-url and oidc-client-id should be specified together",
        ),
        (
            vec!["--authorization-mode=Webhook".into()],
            "authorization-mode Webhook's authorization config file not passed",
        ),
        (
            vec![format!(
                "--authentication-token-webhook-config-file={}",
                garbage.display()
            )],
            "error loading config file",
        ),
        (
            vec![
                "--authentication-token-webhook-version=v2".into(),
                format!(
                    "--authentication-token-webhook-config-file={}",
                    garbage.display()
                ),
            ],
            "unsupported authentication webhook version \"v2\"",
        ),
    ];
    for (args, needle) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run_to_exit(&args).await;
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let errors: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("Error: "))
            .collect();
        assert_eq!(errors.len(), 1, "{args:?}: {stderr}");
        // The error is the last line: nothing of it spills onto further lines.
        assert_eq!(stderr.lines().last(), Some(errors[0]), "{args:?}: {stderr}");
        assert!(
            errors[0].contains(needle),
            "{args:?}: {needle} not in {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
