//! The aggregation layer end to end: the real kube-apiserver binary proxies an APIService to a
//! second server built only from the `apiserver` crate (the wardle example: flunders in
//! `wardle.example.com/v1alpha1`, embedded storage in a temp dir, front-proxy authentication
//! trusting the front-proxy CA, loopback TLS), reached with kubectl; the chain's local
//! APIServices and merged health checks; a stopped backend gets 503 and Available=False while
//! everything else keeps working.

mod common;

#[path = "../../apiserver/tests/common/pki.rs"]
#[allow(dead_code)]
mod pki;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use apiserver::authn::requestheader::{RequestHeaderConfig, RequestHeaderNames};
use apiserver::authn::{AuthenticatorOptions, StaticClientCa, build_authenticator};
use apiserver::authz::{AuthorizationMode, build_authorizer};
use apiserver::endpoints::openapi::OpenApiService;
use apiserver::registry::rest::{
    BoxFuture, CreateOptions, DeleteOptions, GetOptions, ListOptions, ObjectWatch, RequestContext,
    RestStorage, UpdateFunc, UpdateOptions,
};
use apiserver::registry::store::Store;
use apiserver::registry::{ResourceInfo, Strategy};
use apiserver::request::UserInfo;
use apiserver::server::apis::{ApiGroupInfo, ApiGroupVersion};
use apiserver::server::serving::{BindAddress, CertKeyFiles, DynamicClientCa, SecureServingInfo};
use apiserver::server::{Config, EmptyDelegate};
use apiserver::status::ApiError;
use apiserver::storage::factory::{StorageBackend, StorageOptions};
use base64::Engine;
use common::client::Proto;
use common::{ApiServer, DEADLINE, run_tool};
use http::Method;
use http_body_util::BodyExt;
use pki::Ca;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The flunders of the wardle example.
struct FlunderStrategy(ResourceInfo);

impl Strategy for FlunderStrategy {
    fn info(&self) -> &ResourceInfo {
        &self.0
    }
}

/// The flunder storage, recording who asked (the identity the aggregator passed on).
struct Recording {
    store: Store,
    users: Arc<Mutex<Vec<UserInfo>>>,
}

impl Recording {
    fn record(&self, ctx: &RequestContext) {
        if let Some(user) = &ctx.user {
            self.users.lock().unwrap().push((**user).clone());
        }
    }
}

impl RestStorage for Recording {
    fn info(&self) -> &ResourceInfo {
        self.store.info()
    }
    fn verbs(&self) -> Vec<&'static str> {
        self.store.verbs()
    }
    fn get<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        opts: &'a GetOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        self.record(ctx);
        self.store.get(ctx, name, opts)
    }
    fn list<'a>(
        &'a self,
        ctx: &'a RequestContext,
        opts: &'a ListOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        self.record(ctx);
        self.store.list(ctx, opts)
    }
    fn watch<'a>(
        &'a self,
        ctx: &'a RequestContext,
        opts: &'a ListOptions,
    ) -> BoxFuture<'a, Result<ObjectWatch, ApiError>> {
        self.store.watch(ctx, opts)
    }
    fn create<'a>(
        &'a self,
        ctx: &'a RequestContext,
        obj: Value,
        opts: &'a CreateOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        self.record(ctx);
        self.store.create(ctx, obj, opts)
    }
    fn update<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        update: UpdateFunc,
        opts: &'a UpdateOptions,
        force_allow_create: bool,
    ) -> BoxFuture<'a, Result<(Value, bool), ApiError>> {
        self.store
            .update(ctx, name, update, opts, force_allow_create)
    }
    fn delete<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        opts: &'a DeleteOptions,
    ) -> BoxFuture<'a, Result<(Value, bool), ApiError>> {
        self.store.delete(ctx, name, opts)
    }
    fn strategy(&self) -> Option<&dyn Strategy> {
        self.store.strategy()
    }
}

/// The wardle server: built from the `apiserver` crate only.
struct Wardle {
    addr: SocketAddr,
    stop: CancellationToken,
    run: tokio::task::JoinHandle<()>,
    users: Arc<Mutex<Vec<UserInfo>>>,
    _storage: StorageBackend,
}

/// Starts the wardle server trusting the front proxy's CA `front_proxy_ca_pem`.
async fn start_wardle(dir: &Path, serving: &pki::Pem, front_proxy_ca_pem: &str) -> Wardle {
    let cert = dir.join("wardle.crt");
    let key = dir.join("wardle.key");
    std::fs::write(&cert, &serving.cert).unwrap();
    std::fs::write(&key, &serving.key).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let mut config = Config::new(None);
    config.systemd_notify = false;
    let mut info =
        SecureServingInfo::new(BindAddress::Listener(listener), CertKeyFiles { cert, key });
    // Ask for client certificates: the front proxy's.
    let ca_file = dir.join("wardle-front-proxy-ca.crt");
    std::fs::write(&ca_file, front_proxy_ca_pem).unwrap();
    info.client_ca = Some(DynamicClientCa::new(ca_file));
    config.secure_serving = Some(info);
    let ca_der = {
        use rustls::pki_types::pem::PemObject;
        rustls::pki_types::CertificateDer::from_pem_slice(front_proxy_ca_pem.as_bytes()).unwrap()
    };
    config.authenticator = build_authenticator(&AuthenticatorOptions {
        request_header: Some(RequestHeaderConfig {
            names: RequestHeaderNames::standard(),
            client_ca: Arc::new(StaticClientCa(Arc::new(vec![ca_der]))),
            allowed_names: vec!["front-proxy-client".into()],
        }),
        ..Default::default()
    })
    .unwrap();
    config.authorizer = Some(build_authorizer(&[AuthorizationMode::AlwaysAllow]).unwrap());
    let server = config
        .complete()
        .new("wardle-server", Arc::new(EmptyDelegate::new()))
        .unwrap();
    let storage = StorageBackend::open(&StorageOptions {
        data_dir: dir.join("wardle-data"),
        ..Default::default()
    })
    .await
    .unwrap();
    let info = ResourceInfo {
        group: "wardle.example.com".into(),
        version: "v1alpha1".into(),
        kind: "Flunder".into(),
        list_kind: "FlunderList".into(),
        resource: "flunders".into(),
        singular: "flunder".into(),
        namespaced: true,
        ..Default::default()
    };
    let root = format!("{}/wardle.example.com/flunders", storage.prefix);
    let store = Store::new(
        Arc::new(FlunderStrategy(info)),
        storage.storage.clone(),
        &root,
    );
    let users = Arc::new(Mutex::new(Vec::new()));
    server
        .install_api_groups(&[ApiGroupInfo {
            group: "wardle.example.com".into(),
            versions: vec![ApiGroupVersion::new(
                "v1alpha1",
                vec![Arc::new(Recording {
                    store,
                    users: users.clone(),
                })],
            )],
        }])
        .unwrap();
    // Its OpenAPI documents, which the aggregator merges into its own.
    let openapi = OpenApiService::new();
    let flunder_schema = json!({
        "type": "object",
        "description": "A flunder of the wardle example.",
        "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                       "metadata": {"type": "object"}},
        "x-kubernetes-group-version-kind": [
            {"group": "wardle.example.com", "version": "v1alpha1", "kind": "Flunder"}
        ]
    });
    openapi.set_v2(&json!({
        "swagger": "2.0",
        "info": {"title": "wardle", "version": "v0"},
        "paths": {"/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders": {}},
        "definitions": {"com.example.wardle.v1alpha1.Flunder": flunder_schema},
    }));
    openapi.set_v3(
        "apis/wardle.example.com/v1alpha1",
        &json!({
            "openapi": "3.0.0",
            "info": {"title": "wardle", "version": "v0"},
            "paths": {"/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders": {}},
            "components": {"schemas": {"com.example.wardle.v1alpha1.Flunder": flunder_schema}},
        }),
    );
    openapi.install(&server.handler().non_api_mux).unwrap();
    let stop = CancellationToken::new();
    let prepared = server.prepare_run();
    let token = stop.clone();
    let run = tokio::spawn(async move {
        let _ = prepared.run(token).await;
    });
    Wardle {
        addr,
        stop,
        run,
        users,
        _storage: storage,
    }
}

/// `kubectl-1.35 <args>` with the admin kubeconfig.
async fn kubectl(server: &ApiServer, args: &[&str]) -> common::ToolOutput {
    let kubeconfig = server.kubeconfig().display().to_string();
    let mut all = vec!["--kubeconfig", kubeconfig.as_str()];
    all.extend_from_slice(args);
    run_tool("kubectl-1.35", &server.data_dir, &all).await
}

async fn kubectl_ok(server: &ApiServer, args: &[&str]) -> String {
    let out = kubectl(server, args).await;
    assert_eq!(out.code, Some(0), "kubectl {args:?}: {out:?}");
    out.stdout
}

/// Polls `kubectl <args>` until its stdout satisfies `ok`, within [`DEADLINE`].
async fn poll_kubectl(server: &ApiServer, args: &[&str], what: &str, ok: impl Fn(&str) -> bool) {
    let start = Instant::now();
    loop {
        let out = kubectl(server, args).await;
        if out.code == Some(0) && ok(&out.stdout) {
            return;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "{what} not within {DEADLINE:?}; last: {out:?}\nserver log:\n{}",
            server.stderr.snapshot().join("\n")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The freshness of `group`/`version` in the aggregated `/apis` document (`None` if absent).
async fn aggregated_freshness(server: &ApiServer, group: &str, version: &str) -> Option<String> {
    let client = server.admin_client();
    let req = client.request_with(
        Method::GET,
        "/apis",
        &[(
            "accept",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        )],
    );
    let reply = client.send(Proto::H2, req).await.ok()?;
    let doc: Value = serde_json::from_str(&reply.body).ok()?;
    let group = doc["items"]
        .as_array()?
        .iter()
        .find(|g| g["metadata"]["name"] == group)?;
    let version = group["versions"]
        .as_array()?
        .iter()
        .find(|v| v["version"] == version)?;
    Some(
        version["freshness"]
            .as_str()
            .unwrap_or("Current")
            .to_string(),
    )
}

/// The Available condition as `<status> <reason>: <message>`.
const AVAILABLE: &str = "jsonpath={.status.conditions[?(@.type==\"Available\")].status} {.status.conditions[?(@.type==\"Available\")].reason}: {.status.conditions[?(@.type==\"Available\")].message}";

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_reaches_an_aggregated_api_through_the_aggregator() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();

    // The front proxy's CA and the aggregator's client certificate.
    let front_proxy_ca = Ca::new("front-proxy-ca");
    let proxy_client = front_proxy_ca.client("front-proxy-client", &[]);
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let front_proxy_ca_file = write("front-proxy-ca.crt", &front_proxy_ca.pem.cert);
    let proxy_cert = write("front-proxy-client.crt", &proxy_client.cert);
    let proxy_key = write("front-proxy-client.key", &proxy_client.key);
    // The wardle server's serving certificate, for the name the aggregator verifies.
    let wardle_ca = Ca::new("wardle-ca");
    let serving = wardle_ca.serving("api.wardle.svc", &["api.wardle.svc"]);
    let mut wardle = start_wardle(dir, &serving, &front_proxy_ca.pem.cert).await;

    let server = ApiServer::start(&[
        &format!("--proxy-client-cert-file={proxy_cert}"),
        &format!("--proxy-client-key-file={proxy_key}"),
        &format!("--requestheader-client-ca-file={front_proxy_ca_file}"),
        "--requestheader-allowed-names=front-proxy-client",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
    ])
    .await;

    // Local APIServices for the chain's group-versions, with upstream's priorities.
    poll_kubectl(
        &server,
        &["get", "apiservices"],
        "local APIServices",
        |out| {
            out.lines().any(|l| {
                l.split_whitespace().take(3).collect::<Vec<_>>() == ["v1.apps", "Local", "True"]
            }) && out.contains("v1.apiregistration.k8s.io")
        },
    )
    .await;
    let core = kubectl_ok(
        &server,
        &[
            "get",
            "apiservice",
            "v1.",
            "-o",
            "jsonpath={.spec.groupPriorityMinimum}/{.spec.versionPriority}",
        ],
    )
    .await;
    assert_eq!(core, "18000/1");
    let explained = kubectl_ok(&server, &["explain", "apiservices.spec"]).await;
    assert!(
        explained.contains("KIND:       APIService") && explained.contains("groupPriorityMinimum"),
        "{explained}"
    );

    // The merged health checks of the chain.
    let readyz = kubectl_ok(&server, &["get", "--raw", "/readyz?verbose"]).await;
    for check in [
        "[+]etcd ok",
        "[+]poststarthook/bootstrap-controller ok",
        "[+]poststarthook/apiservice-registration-controller ok",
        "[+]poststarthook/kube-apiserver-autoregistration ok",
        "[+]autoregister-completion ok",
    ] {
        assert!(readyz.contains(check), "{check} missing:\n{readyz}");
    }

    // Register the wardle server.
    let port = wardle.addr.port();
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(&wardle_ca.pem.cert);
    let manifest = format!(
        r#"apiVersion: v1
kind: Namespace
metadata:
  name: wardle
---
apiVersion: v1
kind: Service
metadata:
  name: api
  namespace: wardle
spec:
  type: ExternalName
  externalName: localhost
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1alpha1.wardle.example.com
spec:
  group: wardle.example.com
  version: v1alpha1
  groupPriorityMinimum: 1000
  versionPriority: 15
  caBundle: {ca_bundle}
  service:
    namespace: wardle
    name: api
    port: {port}
"#
    );
    let manifest_file = write("wardle.yaml", &manifest);
    kubectl_ok(&server, &["apply", "-f", &manifest_file]).await;
    poll_kubectl(
        &server,
        &[
            "get",
            "apiservice",
            "v1alpha1.wardle.example.com",
            "-o",
            AVAILABLE,
        ],
        "Available=True",
        |out| out.starts_with("True Passed"),
    )
    .await;
    let row = kubectl_ok(
        &server,
        &["get", "apiservice", "v1alpha1.wardle.example.com"],
    )
    .await;
    assert!(row.contains("wardle/api") && row.contains("True"), "{row}");

    // kubectl get and create through the aggregator.
    poll_kubectl(
        &server,
        &["api-resources", "--api-group=wardle.example.com"],
        "discovery of flunders",
        |out| out.contains("flunders") && out.contains("Flunder"),
    )
    .await;
    let empty = kubectl(&server, &["get", "flunders", "-n", "wardle"]).await;
    assert_eq!(empty.code, Some(0), "{empty:?}");
    assert!(empty.stderr.contains("No resources found"), "{empty:?}");
    let flunder = write(
        "flunder.yaml",
        "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata:\n  name: my-flunder\n  namespace: wardle\n",
    );
    let created = kubectl_ok(&server, &["create", "-f", &flunder]).await;
    assert_eq!(
        created.trim(),
        "flunder.wardle.example.com/my-flunder created"
    );
    let listed = kubectl_ok(&server, &["get", "flunders", "-n", "wardle"]).await;
    assert!(listed.contains("my-flunder"), "{listed}");
    {
        let users = wardle.users.lock().unwrap();
        let admin = users
            .iter()
            .find(|u| u.name == "admin")
            .unwrap_or_else(|| panic!("the backend never saw admin: {users:?}"));
        assert!(
            admin.groups.iter().any(|g| g == "system:masters"),
            "{admin:?}"
        );
    }

    assert_eq!(
        aggregated_freshness(&server, "wardle.example.com", "v1alpha1")
            .await
            .as_deref(),
        Some("Current")
    );

    // The aggregated OpenAPI documents include the wardle server's.
    let v2 = kubectl_ok(&server, &["get", "--raw", "/openapi/v2"]).await;
    assert!(
        v2.contains("com.example.wardle.v1alpha1.Flunder"),
        "v2 lacks Flunder"
    );
    assert!(
        v2.contains("io.k8s.api.core.v1.Pod"),
        "v2 lost the built-in types"
    );
    let v3 = kubectl_ok(&server, &["get", "--raw", "/openapi/v3"]).await;
    assert!(v3.contains("apis/wardle.example.com/v1alpha1"), "{v3}");
    assert!(v3.contains("\"api/v1\""), "{v3}");
    let doc = kubectl_ok(
        &server,
        &[
            "get",
            "--raw",
            "/openapi/v3/apis/wardle.example.com/v1alpha1",
        ],
    )
    .await;
    assert!(doc.contains("A flunder of the wardle example."), "{doc}");

    // HTTP/1.1 and HTTP/2 clients are proxied alike; a watch streams through the proxy.
    let flunders = "/apis/wardle.example.com/v1alpha1/namespaces/wardle/flunders";
    let client = server.admin_client();
    for proto in [Proto::H1, Proto::H2] {
        let reply = client.get(proto, flunders).await.unwrap();
        assert_eq!(reply.status, 200, "{proto:?}: {reply:?}");
        assert!(reply.body.contains("\"kind\":\"FlunderList\""), "{reply:?}");
        assert!(reply.body.contains("my-flunder"), "{reply:?}");
    }
    let mut conn = client.connect(Proto::H2).await.unwrap();
    let watch = conn
        .send_head(client.request(Method::GET, &format!("{flunders}?watch=1"), ""))
        .await
        .unwrap();
    assert_eq!(watch.status(), 200);
    let mut body = watch.into_body();
    let second = write(
        "second.yaml",
        "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata:\n  name: second\n  namespace: wardle\n",
    );
    kubectl_ok(&server, &["create", "-f", &second, "--validate=false"]).await;
    let mut seen = String::new();
    while !(seen.contains("\"ADDED\"") && seen.contains("second")) {
        let frame = tokio::time::timeout(DEADLINE, body.frame())
            .await
            .unwrap_or_else(|_| panic!("no watch event within {DEADLINE:?}; got {seen}"))
            .unwrap_or_else(|| panic!("watch ended; got {seen}"))
            .unwrap();
        if let Ok(data) = frame.into_data() {
            seen.push_str(&String::from_utf8_lossy(&data));
        }
    }
    drop(body);

    // The backend goes away: its paths get 503, the APIService turns unavailable, and the
    // rest of the server keeps working.
    wardle.stop.cancel();
    let _ = tokio::time::timeout(DEADLINE, &mut wardle.run).await;
    let down = kubectl(&server, &["get", "flunders", "-n", "wardle"]).await;
    assert_ne!(down.code, Some(0), "{down:?}");
    assert!(
        down.stderr.contains("ServiceUnavailable")
            || down
                .stderr
                .contains("the server is currently unable to handle the request"),
        "{down:?}"
    );
    poll_kubectl(
        &server,
        &[
            "get",
            "apiservice",
            "v1alpha1.wardle.example.com",
            "-o",
            AVAILABLE,
        ],
        "Available=False",
        |out| {
            out.starts_with(
                "False FailedDiscoveryCheck: failing or missing response from https://localhost:",
            )
        },
    )
    .await;
    let reason = kubectl_ok(
        &server,
        &[
            "get",
            "apiservice",
            "v1alpha1.wardle.example.com",
            "-o",
            "jsonpath={.status.conditions[0].reason}",
        ],
    )
    .await;
    assert_eq!(reason, "FailedDiscoveryCheck");
    // Aggregated discovery keeps the last document, marked stale.
    let start = Instant::now();
    loop {
        let freshness = aggregated_freshness(&server, "wardle.example.com", "v1alpha1").await;
        if freshness.as_deref() == Some("Stale") {
            break;
        }
        assert!(start.elapsed() < DEADLINE, "not stale: {freshness:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let raw = kubectl(
        &server,
        &[
            "get",
            "--raw",
            "/apis/wardle.example.com/v1alpha1/namespaces/wardle/flunders",
        ],
    )
    .await;
    assert!(
        raw.stderr.contains("ServiceUnavailable") || raw.stderr.contains("503"),
        "{raw:?}"
    );
    let namespaces = kubectl_ok(&server, &["get", "namespaces"]).await;
    assert!(namespaces.contains("wardle"), "{namespaces}");
    kubectl_ok(&server, &["get", "--raw", "/api/v1/namespaces/default"]).await;

    // Deleting the APIService removes the proxy: the path falls through to the chain (404).
    kubectl_ok(
        &server,
        &["delete", "apiservice", "v1alpha1.wardle.example.com"],
    )
    .await;
    poll_kubectl(
        &server,
        &["get", "--raw", "/apis", "-v=0"],
        "the group gone from /apis",
        |out| !out.contains("wardle.example.com"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn generated_front_proxy_identity_and_endpoint_routing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // No front-proxy flags: the first-start PKI makes the aggregator's identity, and the
    // extension-apiserver-authentication ConfigMap tells aggregated servers whom to trust.
    let server = ApiServer::start(&["--enable-aggregator-routing"]).await;
    let mut front_proxy_ca = String::new();
    let start = Instant::now();
    while front_proxy_ca.is_empty() {
        let out = kubectl(
            &server,
            &[
                "get",
                "configmap",
                "-n",
                "kube-system",
                "extension-apiserver-authentication",
                "-o",
                "jsonpath={.data.requestheader-client-ca-file}",
            ],
        )
        .await;
        if out.code == Some(0) {
            front_proxy_ca = out.stdout;
        } else {
            assert!(
                start.elapsed() < DEADLINE,
                "no authentication ConfigMap: {out:?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    let names = kubectl_ok(
        &server,
        &[
            "get",
            "configmap",
            "-n",
            "kube-system",
            "extension-apiserver-authentication",
            "-o",
            "jsonpath={.data.requestheader-allowed-names}",
        ],
    )
    .await;
    assert_eq!(names, "[\"front-proxy-client\"]");

    let wardle_ca = Ca::new("wardle-ca");
    let serving = wardle_ca.serving("api.wardle.svc", &["api.wardle.svc"]);
    let wardle = start_wardle(dir, &serving, &front_proxy_ca).await;
    let port = wardle.addr.port();
    // A ClusterIP service whose endpoints point at the wardle server; the aggregator routes to
    // the endpoint (TLS not verified this time).
    let manifest = format!(
        r#"apiVersion: v1
kind: Namespace
metadata:
  name: wardle
---
apiVersion: v1
kind: Service
metadata:
  name: api
  namespace: wardle
spec:
  ports:
  - name: https
    port: 443
    targetPort: {port}
---
apiVersion: v1
kind: Endpoints
metadata:
  name: api
  namespace: wardle
subsets:
- addresses:
  - ip: 127.0.0.1
  ports:
  - name: https
    port: {port}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1alpha1.wardle.example.com
spec:
  group: wardle.example.com
  version: v1alpha1
  groupPriorityMinimum: 1000
  versionPriority: 15
  insecureSkipTLSVerify: true
  service:
    namespace: wardle
    name: api
"#
    );
    let file = dir.join("wardle.yaml");
    std::fs::write(&file, manifest).unwrap();
    kubectl_ok(&server, &["apply", "-f", &file.display().to_string()]).await;
    poll_kubectl(
        &server,
        &[
            "get",
            "apiservice",
            "v1alpha1.wardle.example.com",
            "-o",
            AVAILABLE,
        ],
        "Available=True",
        |out| out.starts_with("True Passed"),
    )
    .await;
    let listed = kubectl(&server, &["get", "flunders", "-A"]).await;
    assert_eq!(listed.code, Some(0), "{listed:?}");
    assert!(listed.stderr.contains("No resources found"), "{listed:?}");
    assert!(
        wardle
            .users
            .lock()
            .unwrap()
            .iter()
            .any(|u| u.name == "admin"),
        "the backend never saw admin"
    );

    // Endpoints without the port: MissingEndpoints.
    let patch =
        r#"{"subsets":[{"addresses":[{"ip":"127.0.0.1"}],"ports":[{"name":"other","port":1}]}]}"#;
    kubectl_ok(
        &server,
        &[
            "patch",
            "endpoints",
            "-n",
            "wardle",
            "api",
            "--type=merge",
            "-p",
            patch,
        ],
    )
    .await;
    // The proxy notices at once on the next request; the periodic check would too.
    let _ = kubectl(&server, &["get", "flunders", "-A"]).await;
    poll_kubectl(
        &server,
        &["get", "apiservice", "v1alpha1.wardle.example.com", "-o", AVAILABLE],
        "Available=False MissingEndpoints",
        |out| {
            out == "False MissingEndpoints: endpoints for service/api in \"wardle\" have no addresses with port name \"https\""
        },
    )
    .await;
    wardle.stop.cancel();
}
