//! The aggregator at the head of an in-process chain built from the library (apiextensions-like
//! ← kube-like ← aggregator): paths fall through, local APIServices follow the delegates'
//! group-versions (also ones appearing and going while serving), health checks merge along the
//! chain, and destroy runs along the whole chain.

#[path = "../../apiserver/tests/common/client.rs"]
#[allow(dead_code)]
mod client;
#[path = "../../apiserver/tests/common/pki.rs"]
#[allow(dead_code)]
mod pki;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use apiserver::authn::{AuthenticatorOptions, build_authenticator};
use apiserver::authz::{AuthorizationMode, build_authorizer};
use apiserver::body::with_content_type;
use apiserver::endpoints::discovery::{Addresses, DiscoveryManager};
use apiserver::filters::service_fn;
use apiserver::registry::store::Store;
use apiserver::registry::{ResourceInfo, Strategy};
use apiserver::server::apis::{ApiGroupInfo, ApiGroupVersion};
use apiserver::server::healthz::named_check;
use apiserver::server::serving::{BindAddress, CertKeyFiles, DynamicClientCa, SecureServingInfo};
use apiserver::server::{Config, EmptyDelegate, GenericApiServer};
use apiserver::storage::factory::{StorageBackend, StorageOptions};
use client::{Client, Proto};
use kube_aggregator::{AggregatorConfig, LocalApis};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

const DEADLINE: Duration = Duration::from_secs(30);

struct Plain(ResourceInfo);

impl Strategy for Plain {
    fn info(&self) -> &ResourceInfo {
        &self.0
    }
}

fn info(group: &str, kind: &str, resource: &str, namespaced: bool) -> ResourceInfo {
    ResourceInfo {
        group: group.into(),
        version: "v1".into(),
        kind: kind.into(),
        list_kind: format!("{kind}List"),
        resource: resource.into(),
        singular: kind.to_lowercase(),
        namespaced,
        ..Default::default()
    }
}

fn delegate_server(
    name: &str,
    delegate: Arc<dyn apiserver::server::DelegationTarget>,
) -> GenericApiServer {
    let mut config = Config::new(None);
    config.systemd_notify = false;
    config.complete().new(name, delegate).unwrap()
}

async fn poll<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<String>>,
{
    let start = Instant::now();
    loop {
        match check().await {
            None => return,
            Some(last) => assert!(
                start.elapsed() < DEADLINE,
                "{what} not within {DEADLINE:?}; last: {last}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn api_service_names(client: &Client) -> Result<Vec<(String, Value)>, String> {
    let reply = client
        .get(Proto::H2, "/apis/apiregistration.k8s.io/v1/apiservices")
        .await
        .map_err(|e| e.to_string())?;
    let list: Value =
        serde_json::from_str(&reply.body).map_err(|e| format!("{e}: {}", reply.body))?;
    Ok(list["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|i| (i["metadata"]["name"].as_str().unwrap_or("").to_string(), i))
        .collect())
}

/// A remote API server for `upgrade.example.com/v1` over TLS: its discovery document, and an
/// `echo` protocol upgrade echoing bytes back. Records the front-proxy user it saw.
async fn start_echo_server(serving: &pki::Pem, users: Arc<Mutex<Vec<String>>>) -> u16 {
    use hyper::service::service_fn as hyper_service;
    use hyper_util::rt::TokioIo;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};

    let certs = CertificateDer::pem_slice_iter(serving.cert.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_slice(serving.key.as_bytes()).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            let users = users.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper_service(
                    move |mut req: http::Request<hyper::body::Incoming>| {
                        let users = users.clone();
                        async move {
                            if let Some(user) = req.headers().get("x-remote-user") {
                                users
                                    .lock()
                                    .unwrap()
                                    .push(user.to_str().unwrap_or("").to_string());
                            }
                            let response = if req.uri().path() == "/apis/upgrade.example.com/v1" {
                                http::Response::new(http_body_util::Full::new(bytes::Bytes::from(
                                    r#"{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"upgrade.example.com/v1","resources":[{"name":"echoes","singularName":"echo","namespaced":false,"kind":"Echo","verbs":["get"]}]}"#,
                                )))
                            } else if req.uri().path() == "/apis/upgrade.example.com/v1/redirect" {
                                http::Response::builder()
                                    .status(302)
                                    .header("location", "https://example.com/")
                                    .body(http_body_util::Full::new(bytes::Bytes::new()))
                                    .unwrap()
                            } else if req.headers().get("upgrade").is_some() {
                                let upgrade = hyper::upgrade::on(&mut req);
                                tokio::spawn(async move {
                                    if let Ok(upgraded) = upgrade.await {
                                        let (mut r, mut w) =
                                            tokio::io::split(TokioIo::new(upgraded));
                                        let _ = tokio::io::copy(&mut r, &mut w).await;
                                    }
                                });
                                http::Response::builder()
                                    .status(101)
                                    .header("connection", "Upgrade")
                                    .header("upgrade", "echo")
                                    .body(http_body_util::Full::new(bytes::Bytes::new()))
                                    .unwrap()
                            } else {
                                http::Response::builder()
                                    .status(404)
                                    .body(http_body_util::Full::new(bytes::Bytes::new()))
                                    .unwrap()
                            };
                            Ok::<_, std::convert::Infallible>(response)
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service)
                    .with_upgrades()
                    .await;
            });
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_aggregator_heads_a_chain() {
    let tmp = tempfile::tempdir().unwrap();
    let backend = StorageBackend::open(&StorageOptions {
        data_dir: tmp.path().join("data"),
        ..Default::default()
    })
    .await
    .unwrap();
    let destroyed = Arc::new(Mutex::new(Vec::new()));
    let discovery = DiscoveryManager::new(Addresses::new("127.0.0.1:443"));

    // The apiextensions-like end of the chain: example.com/v1 widgets.
    let apiextensions = delegate_server("apiextensions-apiserver", Arc::new(EmptyDelegate::new()));
    apiextensions.share_discovery(discovery.clone());
    let widgets = Store::new(
        Arc::new(Plain(info("example.com", "Widget", "widgets", false))),
        backend.storage.clone(),
        "/registry/example.com/widgets",
    );
    apiextensions
        .install_api_groups(&[ApiGroupInfo {
            group: "example.com".into(),
            versions: vec![ApiGroupVersion::new("v1", vec![Arc::new(widgets)])],
        }])
        .unwrap();
    apiextensions
        .add_health_checks(vec![named_check("apiextensions-check", |_| Ok(()))])
        .unwrap();
    let record = |name: &'static str| {
        let destroyed = destroyed.clone();
        move || destroyed.lock().unwrap().push(name)
    };
    apiextensions.register_destroy_fn(record("apiextensions"));

    // The kube-like server: core v1 services.
    let kube = delegate_server("kube-apiserver", Arc::new(apiextensions.clone()));
    kube.share_discovery(discovery.clone());
    let services = Store::new(
        Arc::new(Plain(info("", "Service", "services", true))),
        backend.storage.clone(),
        "/registry/services",
    );
    kube.install_legacy_api_group(
        "/api",
        ApiGroupInfo {
            group: String::new(),
            versions: vec![ApiGroupVersion::new("v1", vec![Arc::new(services.clone())])],
        },
    )
    .unwrap();
    kube.add_health_checks(vec![named_check("kube-check", |_| Ok(()))])
        .unwrap();
    kube.register_destroy_fn(record("kube"));

    // The aggregator, the one that serves.
    let ca = pki::Ca::new("test-ca");
    let serving = ca.serving("localhost", &["localhost", "127.0.0.1"]);
    let admin = ca.client("admin", &["system:masters"]);
    let write = |name: &str, text: &str| {
        let path = tmp.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let mut info = SecureServingInfo::new(
        BindAddress::Listener(listener),
        CertKeyFiles {
            cert: write("serving.crt", &serving.cert),
            key: write("serving.key", &serving.key),
        },
    );
    let client_ca = DynamicClientCa::new(write("ca.crt", &ca.pem.cert));
    info.client_ca = Some(client_ca.clone());
    let mut config = Config::new(None);
    config.systemd_notify = false;
    config.secure_serving = Some(info);
    config.authenticator = build_authenticator(&AuthenticatorOptions {
        client_ca: Some(Arc::new(client_ca)),
        ..Default::default()
    })
    .unwrap();
    config.authorizer = Some(build_authorizer(&[AuthorizationMode::AlwaysAllow]).unwrap());
    let aggregator = config
        .complete()
        .new("kube-aggregator", Arc::new(kube.clone()))
        .unwrap();
    aggregator.share_discovery(discovery);
    aggregator.register_destroy_fn(record("aggregator"));
    kube_aggregator::install(
        &aggregator,
        AggregatorConfig {
            storage: backend.storage.clone(),
            prefix: backend.prefix.clone(),
            services: Arc::new(services),
            endpoints: None,
            enable_aggregator_routing: false,
            reject_forwarding_redirects: true,
            proxy_client_cert: None,
            local: LocalApis {
                builtin: vec![kube.handler().api_routes.clone()],
                custom: vec![apiextensions.handler().api_routes.clone()],
                own: Vec::new(),
            },
            resync_interval: Duration::from_secs(30),
            openapi_delegate: Some(kube.handler().director.clone()),
        },
    )
    .unwrap();
    let prepared = aggregator.prepare_run();
    let stop = CancellationToken::new();
    let run = tokio::spawn(prepared.run(stop.clone()));
    let client =
        Client::new(addr, &ca.pem.cert, "localhost").with_identity(&admin.cert, &admin.key);

    // Ready: the health checks of every server of the chain, merged.
    poll("readyz", || {
        let client = client.clone();
        async move {
            match client.get(Proto::H1, "/readyz?verbose").await {
                Ok(r) if r.status == 200 => {
                    let wanted = [
                        "[+]apiextensions-check ok",
                        "[+]kube-check ok",
                        "[+]autoregister-completion ok",
                        "[+]poststarthook/apiservice-registration-controller ok",
                    ];
                    (!wanted.iter().all(|w| r.body.contains(w))).then_some(r.body)
                }
                other => Some(format!("{other:?}")),
            }
        }
    })
    .await;

    // Paths fall through the chain.
    for (path, server) in [
        ("/api/v1/namespaces/default/services", "kube"),
        ("/apis/example.com/v1/widgets", "apiextensions"),
        ("/apis/apiregistration.k8s.io/v1/apiservices", "aggregator"),
    ] {
        let reply = client.get(Proto::H2, path).await.unwrap();
        assert_eq!(reply.status, 200, "{path} ({server}): {}", reply.body);
    }
    let missing = client
        .get(Proto::H2, "/apis/nowhere.example.com/v1")
        .await
        .unwrap();
    assert_eq!(missing.status, 404);

    // Local APIServices: built-in ones `onstart`, the apiextensions server's `true`.
    let items = api_service_names(&client).await.unwrap();
    let label = |name: &str| {
        items.iter().find(|(n, _)| n == name).map(|(_, i)| {
            i["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"].clone()
        })
    };
    assert_eq!(label("v1."), Some(Value::from("onstart")));
    assert_eq!(label("v1.example.com"), Some(Value::from("true")));
    assert_eq!(
        label("v1.apiregistration.k8s.io"),
        Some(Value::from("onstart"))
    );
    let core = &items.iter().find(|(n, _)| n == "v1.").unwrap().1;
    assert_eq!(core["spec"]["groupPriorityMinimum"], 18000);
    assert_eq!(core["status"]["conditions"][0]["reason"], "Local");

    // A group-version appearing on the apiextensions server while serving gets its
    // APIService, and loses it when it goes.
    apiextensions.handler().api_routes.register(
        "/apis/later.example.com/v1",
        service_fn(|_req| async {
            with_content_type(http::StatusCode::OK, "application/json", "{}")
        }),
    );
    poll("v1.later.example.com", || {
        let client = client.clone();
        async move {
            match api_service_names(&client).await {
                Ok(items) if items.iter().any(|(n, _)| n == "v1.later.example.com") => None,
                other => Some(format!("{other:?}")),
            }
        }
    })
    .await;
    apiextensions
        .handler()
        .api_routes
        .unregister("/apis/later.example.com/v1");
    poll("v1.later.example.com deleted", || {
        let client = client.clone();
        async move {
            match api_service_names(&client).await {
                Ok(items) if !items.iter().any(|(n, _)| n == "v1.later.example.com") => None,
                other => Some(format!("{other:?}")),
            }
        }
    })
    .await;

    // A remote APIService: protocol upgrades are spliced through the proxy.
    let echo_users = Arc::new(Mutex::new(Vec::new()));
    let echo_serving = ca.serving("echo.default.svc", &["echo.default.svc"]);
    let echo_port = start_echo_server(&echo_serving, echo_users.clone()).await;
    let create = |path: &str, body: String| {
        let client = client.clone();
        let path = path.to_string();
        async move {
            let req = client.request(http::Method::POST, &path, &body);
            let reply = client
                .connect(Proto::H1)
                .await
                .unwrap()
                .send(req)
                .await
                .unwrap();
            assert_eq!(reply.status, 201, "{path}: {}", reply.body);
        }
    };
    create(
        "/api/v1/namespaces/default/services",
        r#"{"apiVersion":"v1","kind":"Service","metadata":{"name":"echo","namespace":"default"},"spec":{"type":"ExternalName","externalName":"localhost"}}"#.to_string(),
    )
    .await;
    create(
        "/apis/apiregistration.k8s.io/v1/apiservices",
        format!(
            r#"{{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{{"name":"v1.upgrade.example.com"}},"spec":{{"group":"upgrade.example.com","version":"v1","groupPriorityMinimum":1000,"versionPriority":15,"insecureSkipTLSVerify":true,"service":{{"namespace":"default","name":"echo","port":{echo_port}}}}}}}"#
        ),
    )
    .await;
    poll("v1.upgrade.example.com available", || {
        let client = client.clone();
        async move {
            let items = api_service_names(&client).await.ok()?;
            let obj = items.iter().find(|(n, _)| n == "v1.upgrade.example.com")?;
            (obj.1["status"]["conditions"][0]["status"] != "True").then(|| obj.1.to_string())
        }
    })
    .await;
    {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut tls = client.connect_tls(Proto::H1).await.unwrap();
        tls.write_all(
            b"GET /apis/upgrade.example.com/v1/echoes/x HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n",
        )
        .await
        .unwrap();
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            let mut byte = [0u8; 1];
            let n = tokio::time::timeout(DEADLINE, tls.read(&mut byte))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(n, 1, "closed after {:?}", String::from_utf8_lossy(&head));
            head.push(byte[0]);
        }
        let head = String::from_utf8_lossy(&head).to_string();
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        tls.write_all(b"ping").await.unwrap();
        let mut echoed = [0u8; 4];
        tokio::time::timeout(DEADLINE, tls.read_exact(&mut echoed))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&echoed, b"ping");
    }
    // Redirects from the remote server are not forwarded.
    let redirect = client
        .get(Proto::H2, "/apis/upgrade.example.com/v1/redirect")
        .await
        .unwrap();
    assert_eq!(redirect.status, 502);
    assert_eq!(
        redirect.body,
        "the backend attempted to redirect this request, which is not permitted"
    );
    assert!(
        echo_users.lock().unwrap().iter().any(|u| u == "admin"),
        "{:?}",
        echo_users.lock().unwrap()
    );

    // Stop: destroy runs along the whole chain, the running server first.
    stop.cancel();
    tokio::time::timeout(DEADLINE, run)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(
        *destroyed.lock().unwrap(),
        ["aggregator", "kube", "apiextensions"]
    );
}
