//! The etcd flags through the real binary against real etcd 3.4 processes: TLS with client
//! certificates (`--etcd-cafile`, `--etcd-certfile`, `--etcd-keyfile`), several
//! `--etcd-servers` with failover, `--etcd-servers-overrides` with their health checks,
//! `--storage-backend`, and the watch-cache flags (`--watch-cache`, `--watch-cache-sizes`,
//! the deprecated `--default-watch-cache-size`). Keys are read back with `etcdctl`.

mod common;

use std::path::{Path, PathBuf};

use apiserver::server::serving::selfsigned::{new_ca, new_client_cert};
use common::client::{Client, Proto};
use common::etcd::{EtcdOptions, EtcdServer, EtcdTls};
use common::{ApiServer, DEADLINE, eventually, free_port, run_to_exit};
use http::Method;
use http_body_util::BodyExt;
use serde_json::{Value, json};

/// `etcdctl` flags reaching an etcd (with the client identity when it needs one).
struct EtcdctlTarget {
    flags: Vec<String>,
}

impl EtcdctlTarget {
    fn plain(etcd: &EtcdServer) -> Self {
        EtcdctlTarget {
            flags: vec![format!("--endpoints={}", etcd.url())],
        }
    }

    /// The keys under `prefix`.
    async fn keys(&self, prefix: &str) -> Vec<String> {
        let out = tokio::time::timeout(
            DEADLINE,
            tokio::process::Command::new("etcdctl")
                .args(&self.flags)
                .args(["get", prefix, "--prefix", "--keys-only"])
                .env("ETCDCTL_API", "3")
                .kill_on_drop(true)
                .output(),
        )
        .await
        .expect("etcdctl did not finish")
        .expect("etcdctl (apt-get install etcd-client)");
        assert!(out.status.success(), "etcdctl: {out:?}");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect()
    }
}

/// POSTs `body` to `path` as the admin and returns the status and the decoded reply.
async fn post(client: &Client, path: &str, body: &Value) -> (u16, Value) {
    let mut req = client.request(Method::POST, path, &body.to_string());
    req.headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    let reply = tokio::time::timeout(DEADLINE, client.send(Proto::H2, req))
        .await
        .expect("POST did not finish")
        .unwrap();
    (
        reply.status.as_u16(),
        serde_json::from_str(&reply.body).unwrap_or(Value::Null),
    )
}

/// GETs `path` as the admin, bounded by [`DEADLINE`]; `None` when the connection fails.
async fn get(client: &Client, path: &str) -> Option<(u16, String)> {
    let reply = tokio::time::timeout(DEADLINE, client.get(Proto::H2, path))
        .await
        .expect("GET did not finish")
        .ok()?;
    Some((reply.status.as_u16(), reply.body))
}

fn configmap(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "default"}, "data": {"k": "v"}})
}

async fn create_configmap(client: &Client, name: &str) {
    let (status, reply) = post(
        client,
        "/api/v1/namespaces/default/configmaps",
        &configmap(name),
    )
    .await;
    assert_eq!(status, 201, "{reply}");
}

/// A CA, an etcd serving pair for 127.0.0.1 and a client pair, written to `dir`.
struct EtcdPki {
    ca: PathBuf,
    server_cert: PathBuf,
    server_key: PathBuf,
    client_cert: PathBuf,
    client_key: PathBuf,
}

fn etcd_pki(dir: &Path) -> EtcdPki {
    use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, KeyPair};
    let ca = new_ca("etcd-ca").unwrap();
    let key = KeyPair::generate().unwrap();
    let mut params =
        CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
    params.distinguished_name.push(DnType::CommonName, "etcd");
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let server = params.signed_by(&key, &ca.issuer).unwrap();
    let client = new_client_cert(&ca.issuer, "kube-apiserver-etcd-client", None).unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    EtcdPki {
        ca: write("ca.crt", &ca.cert_pem),
        server_cert: write("server.crt", &server.pem()),
        server_key: write("server.key", &key.serialize_pem()),
        client_cert: write("client.crt", &client.cert_pem),
        client_key: write("client.key", &client.key_pem),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn etcd_over_tls_with_client_certificates_stores_and_serves_objects() {
    let dir = tempfile::tempdir().unwrap();
    let pki = etcd_pki(dir.path());
    let etcd = EtcdServer::start_with(EtcdOptions {
        tls: Some(EtcdTls {
            cert_file: pki.server_cert.clone(),
            key_file: pki.server_key.clone(),
            client_ca_file: pki.ca.clone(),
        }),
        ..Default::default()
    })
    .await;
    assert!(etcd.url().starts_with("https://"), "{}", etcd.url());
    let server = ApiServer::start(&[
        &format!("--etcd-servers={}", etcd.url()),
        &format!("--etcd-cafile={}", pki.ca.display()),
        &format!("--etcd-certfile={}", pki.client_cert.display()),
        &format!("--etcd-keyfile={}", pki.client_key.display()),
    ])
    .await;
    let client = server.admin_client();
    create_configmap(&client, "over-tls").await;
    let (status, readyz) = get(&client, "/readyz?verbose").await.unwrap();
    assert_eq!(status, 200, "{readyz}");
    assert!(
        readyz.contains("[+]etcd ok\n") && readyz.contains("[+]etcd-readiness ok\n"),
        "{readyz}"
    );
    let etcdctl = EtcdctlTarget {
        flags: vec![
            format!("--endpoints={}", etcd.url()),
            format!("--cacert={}", pki.ca.display()),
            format!("--cert={}", pki.client_cert.display()),
            format!("--key={}", pki.client_key.display()),
        ],
    };
    assert_eq!(
        etcdctl.keys("/registry/configmaps/default/over-tls").await,
        vec!["/registry/configmaps/default/over-tls".to_string()]
    );

    // The etcd really insists on the client certificate: without it even etcdctl is refused.
    let out = tokio::time::timeout(
        DEADLINE,
        tokio::process::Command::new("etcdctl")
            .args([
                format!("--endpoints={}", etcd.url()),
                format!("--cacert={}", pki.ca.display()),
                "--dial-timeout=2s".to_string(),
                "--command-timeout=3s".to_string(),
                "get".to_string(),
                "/registry/".to_string(),
                "--prefix".to_string(),
                "--keys-only".to_string(),
            ])
            .env("ETCDCTL_API", "3")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("etcdctl did not finish")
    .unwrap();
    assert!(
        !out.status.success(),
        "etcd served a client without a certificate: {out:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_fail_over_to_the_etcd_endpoint_still_answering() {
    // One etcd on two client URLs; a third address refuses connections from the start.
    let mut etcd = EtcdServer::start_with(EtcdOptions {
        extra_client_urls: 1,
        ..Default::default()
    })
    .await;
    let urls = etcd.urls();
    let refused = format!("http://127.0.0.1:{}", free_port());
    let server =
        ApiServer::start(&[&format!("--etcd-servers={refused},{},{}", urls[0], urls[1])]).await;
    let client = server.admin_client();
    for i in 0..10 {
        create_configmap(&client, &format!("before-{i}")).await;
    }

    // etcd comes back listening on the second URL only: the first refuses too.
    etcd.stop();
    etcd.drop_first_client_url();
    etcd.start_again().await;
    assert_eq!(etcd.urls(), vec![urls[1].clone()]);
    eventually("a write through the remaining endpoint", || {
        let client = client.clone();
        async move {
            let (status, _) = post(
                &client,
                "/api/v1/namespaces/default/configmaps",
                &configmap("after-0"),
            )
            .await;
            (status == 201).then_some(())
        }
    })
    .await;
    // From then on every request succeeds: the client stays on the endpoint that answers.
    for i in 1..20 {
        create_configmap(&client, &format!("after-{i}")).await;
        let (status, body) = get(
            &client,
            &format!("/api/v1/namespaces/default/configmaps/before-{}", i % 10),
        )
        .await
        .unwrap();
        assert_eq!(status, 200, "{body}");
    }
    let keys = EtcdctlTarget::plain(&etcd)
        .keys("/registry/configmaps/default/")
        .await;
    assert_eq!(keys.len(), 30, "{keys:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn events_are_stored_in_the_override_etcd_and_everything_else_in_the_main_one() {
    let main = EtcdServer::start().await;
    let events = EtcdServer::start().await;
    let server = ApiServer::start(&[
        &format!("--etcd-servers={}", main.url()),
        &format!("--etcd-servers-overrides=/events#{}", events.url()),
    ])
    .await;
    let client = server.admin_client();
    create_configmap(&client, "c1").await;
    let (status, reply) = post(
        &client,
        "/api/v1/namespaces/default/events",
        &json!({"apiVersion": "v1", "kind": "Event",
                "metadata": {"name": "core-event", "namespace": "default"},
                "involvedObject": {"kind": "ConfigMap", "name": "c1", "namespace": "default"},
                "reason": "Tested", "message": "stored in the events etcd", "type": "Normal",
                "source": {"component": "etcd-options-test"}}),
    )
    .await;
    assert_eq!(status, 201, "{reply}");
    // events.k8s.io Events live with the core ones (upstream's cohabitating resources).
    let (status, reply) = post(
        &client,
        "/apis/events.k8s.io/v1/namespaces/default/events",
        &json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
                "metadata": {"name": "new-event", "namespace": "default"},
                "eventTime": "2026-01-01T00:00:00.000000Z",
                "reportingController": "example.com/etcd-options-test",
                "reportingInstance": "test-1", "action": "Test", "reason": "Tested",
                "type": "Normal",
                "regarding": {"kind": "ConfigMap", "name": "c1", "namespace": "default"}}),
    )
    .await;
    assert_eq!(status, 201, "{reply}");

    let (main_keys, event_keys) = (
        EtcdctlTarget::plain(&main).keys("/registry/").await,
        EtcdctlTarget::plain(&events).keys("/registry/").await,
    );
    assert!(
        main_keys.contains(&"/registry/configmaps/default/c1".to_string()),
        "{main_keys:?}"
    );
    assert!(
        !main_keys.iter().any(|k| k.starts_with("/registry/events")),
        "events in the main etcd: {main_keys:?}"
    );
    assert!(
        event_keys.contains(&"/registry/events/default/core-event".to_string())
            && event_keys.iter().any(|k| k.ends_with("/default/new-event")),
        "{event_keys:?}"
    );
    assert!(
        event_keys.iter().all(|k| k.starts_with("/registry/events")),
        "other objects in the events etcd: {event_keys:?}"
    );
    // Served back from where they are.
    let (status, list) = get(&client, "/api/v1/namespaces/default/events")
        .await
        .unwrap();
    assert_eq!(status, 200, "{list}");
    assert!(list.contains("core-event"), "{list}");

    // Each etcd has its checks, named as upstream names them.
    let (_, readyz) = get(&client, "/readyz?verbose").await.unwrap();
    for line in [
        "[+]etcd ok",
        "[+]etcd-readiness ok",
        "[+]etcd-override-0 ok",
        "[+]etcd-override-readiness-0 ok",
    ] {
        assert!(readyz.contains(line), "{line}:\n{readyz}");
    }
    let (_, livez) = get(&client, "/livez?verbose").await.unwrap();
    assert!(
        livez.contains("[+]etcd-override-0 ok") && !livez.contains("readiness"),
        "{livez}"
    );
}

/// Lists `resource` at resourceVersion 0 (servable from a watch cache) while etcd is gone.
async fn list_at_rv0(client: &Client, path: &str) -> (u16, String) {
    get(client, &format!("{path}?resourceVersion=0"))
        .await
        .expect("the server itself answers")
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_cache_sizes_of_zero_send_reads_to_etcd_and_the_rest_stay_cached() {
    let mut etcd = EtcdServer::start().await;
    let server = ApiServer::start(&[
        &format!("--etcd-servers={}", etcd.url()),
        "--watch-cache-sizes=configmaps#0,secrets#100",
        "--default-watch-cache-size=50",
    ])
    .await;
    server
        .stderr
        .wait_for("Flag --default-watch-cache-size has been deprecated")
        .await;
    server
        .stderr
        .wait_for("Dropping watch-cache-size for secrets - watchCache size is now dynamic")
        .await;
    let client = server.admin_client();
    create_configmap(&client, "c1").await;
    let (status, reply) = post(
        &client,
        "/api/v1/namespaces/default/secrets",
        &json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "s1", "namespace": "default"}}),
    )
    .await;
    assert_eq!(status, 201, "{reply}");
    // The secrets cache has caught up with the write.
    eventually("the secret in the watch cache", || {
        let client = client.clone();
        async move {
            let (status, body) = list_at_rv0(&client, "/api/v1/namespaces/default/secrets").await;
            (status == 200 && body.contains("\"s1\"")).then_some(())
        }
    })
    .await;

    etcd.stop();
    let (status, body) = list_at_rv0(&client, "/api/v1/namespaces/default/secrets").await;
    assert_eq!(status, 200, "cached secrets: {body}");
    assert!(body.contains("\"s1\""), "{body}");
    for uncached in [
        // --watch-cache-sizes=configmaps#0
        "/api/v1/namespaces/default/configmaps",
        // kube-apiserver's default: events have no watch cache.
        "/api/v1/namespaces/default/events",
    ] {
        let (status, body) = list_at_rv0(&client, uncached).await;
        assert!(
            status >= 500,
            "{uncached} answered without etcd: {status} {body}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn without_the_watch_cache_reads_and_watches_go_to_etcd() {
    let mut etcd = EtcdServer::start().await;
    let server = ApiServer::start(&[
        &format!("--etcd-servers={}", etcd.url()),
        "--watch-cache=false",
    ])
    .await;
    let client = server.admin_client();
    // A watch straight from etcd sees a create.
    let mut conn = client.connect(Proto::H2).await.unwrap();
    let watch = conn
        .send_head(client.request(
            Method::GET,
            "/api/v1/namespaces/default/configmaps?watch=1",
            "",
        ))
        .await
        .unwrap();
    assert_eq!(watch.status(), 200);
    let mut body = watch.into_body();
    create_configmap(&client, "watched").await;
    let mut seen = String::new();
    while !(seen.contains("\"ADDED\"") && seen.contains("\"watched\"")) {
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
    let (status, body) = list_at_rv0(&client, "/api/v1/namespaces/default/configmaps").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"watched\""), "{body}");

    // Nothing is cached: with etcd gone even resourceVersion=0 reads fail.
    etcd.stop();
    for path in [
        "/api/v1/namespaces/default/configmaps",
        "/api/v1/namespaces/default/secrets",
        "/api/v1/namespaces",
    ] {
        let (status, body) = list_at_rv0(&client, path).await;
        assert!(
            status >= 500,
            "{path} answered without etcd: {status} {body}"
        );
    }
}

#[tokio::test]
async fn bad_storage_flags_are_one_line_startup_errors() {
    for (args, expected) in [
        (
            vec!["--storage-backend=etcd2"],
            "Error: --storage-backend invalid, allowed values: etcd3. If not specified, it will default to 'etcd3'",
        ),
        (
            vec![
                "--etcd-servers=http://127.0.0.1:1",
                "--etcd-servers-overrides=events#http://127.0.0.1:2",
            ],
            "Error: --etcd-servers-overrides invalid, must be of format: group/resource#servers, where servers are URLs, semicolon separated",
        ),
        (
            vec!["--etcd-servers-overrides=/events#http://127.0.0.1:2"],
            "Error: --etcd-servers-overrides needs --etcd-servers (the embedded store takes no overrides)",
        ),
        (
            vec!["--watch-cache-sizes=pods#-1"],
            "Error: watch cache size cannot be negative: pods#-1",
        ),
        (
            vec!["--watch-cache-sizes=pods"],
            "Error: invalid value of watch cache size: pods",
        ),
    ] {
        let out = run_to_exit(&args).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end(), expected, "{args:?}");
    }
    // etcd3 is the one accepted value (here with the embedded store: no --etcd-servers).
    let mut server = ApiServer::start(&["--storage-backend=etcd3"]).await;
    server.stop().await;
}
