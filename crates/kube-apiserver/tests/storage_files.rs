//! What the binary writes to disk and keeps there: private modes, certificates it finds are
//! used and never replaced, no admin kubeconfig that cannot authenticate, nothing written to
//! the current directory on etcd, and an embedded store whose history is compacted.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Instant;

use apiserver::server::serving::selfsigned::{new_ca, new_client_cert};
use common::client::{Client, Proto, Reply};
use common::{ApiServer, eventually};
use http::Method;
use serde_json::{Value, json};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

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

#[tokio::test(flavor = "multi_thread")]
async fn data_dir_is_private_and_the_store_and_keys_are_owner_only() {
    let mut server = ApiServer::start(&[]).await;
    assert_eq!(mode(&server.data_dir), 0o700);
    assert_eq!(mode(&server.data_dir.join("storage.redb")), 0o600);
    assert_eq!(mode(&server.kubeconfig()), 0o600);
    for key in [
        "ca.key",
        "apiserver.key",
        "admin.key",
        "front-proxy-client.key",
    ] {
        assert_eq!(mode(&server.pki().join(key)), 0o600, "{key}");
    }
    assert_eq!(mode(&server.pki().join("ca.crt")), 0o644);
    // No temporary file is left behind by the atomic writes.
    for dir in [&server.data_dir, &server.pki()] {
        for entry in std::fs::read_dir(dir).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            assert!(!name.contains(".tmp-"), "{name} left in {}", dir.display());
        }
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_existing_serving_pair_in_the_cert_dir_is_served_and_never_overwritten() {
    // Another server's serving pair (signed by its own CA) stands in for one made by hand.
    let mut other = ApiServer::start(&[]).await;
    let their_cert = std::fs::read_to_string(other.pki().join("apiserver.crt")).unwrap();
    let their_key = std::fs::read_to_string(other.pki().join("apiserver.key")).unwrap();
    let their_ca = std::fs::read_to_string(other.pki().join("ca.crt")).unwrap();
    other.stop().await;

    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(data.join("pki")).unwrap();
    std::fs::write(data.join("pki/apiserver.crt"), &their_cert).unwrap();
    std::fs::write(data.join("pki/apiserver.key"), &their_key).unwrap();
    let mut server = ApiServer::builder()
        .data_dir(&data)
        .no_ready_wait()
        .start()
        .await;
    assert_eq!(
        std::fs::read_to_string(data.join("pki/apiserver.crt")).unwrap(),
        their_cert
    );
    assert_eq!(
        std::fs::read_to_string(data.join("pki/apiserver.key")).unwrap(),
        their_key
    );
    // The served certificate is theirs; the generated admin identity authenticates.
    let admin_cert = std::fs::read_to_string(server.pki().join("admin.crt")).unwrap();
    let admin_key = std::fs::read_to_string(server.pki().join("admin.key")).unwrap();
    let client =
        Client::new(server.addr, &their_ca, "127.0.0.1").with_identity(&admin_cert, &admin_key);
    ready(&client).await;
    server.stop().await;
}

/// Waits until `/readyz` answers 200 to `client`.
async fn ready(client: &Client) {
    eventually("/readyz", || {
        let client = client.clone();
        async move {
            let reply = client.get(Proto::H2, "/readyz").await.ok()?;
            (reply.status == 200).then_some(())
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_ca_that_does_not_trust_the_generated_ca_gets_no_admin_kubeconfig() {
    let dir = tempfile::tempdir().unwrap();
    let theirs = new_ca("their-client-ca").unwrap();
    let ca_file = dir.path().join("client-ca.crt");
    std::fs::write(&ca_file, &theirs.cert_pem).unwrap();
    let mut server = ApiServer::builder()
        .args([format!("--client-ca-file={}", ca_file.display())])
        .no_ready_wait()
        .start()
        .await;
    let line = server.stdout.wait_for("no admin kubeconfig written").await;
    assert!(line.contains(&ca_file.display().to_string()), "{line}");
    assert!(!server.kubeconfig().exists());
    assert!(server.stdout.find("kubectl --kubeconfig").is_none());
    // Their certificates authenticate; the generated admin's do not.
    let user = new_client_cert(&theirs.issuer, "ops", Some("system:masters")).unwrap();
    let ca = std::fs::read_to_string(server.pki().join("ca.crt")).unwrap();
    let theirs_client =
        Client::new(server.addr, &ca, "127.0.0.1").with_identity(&user.cert_pem, &user.key_pem);
    ready(&theirs_client).await;
    let reply = server
        .admin_client()
        .get(Proto::H1, "/version")
        .await
        .unwrap();
    assert_eq!(reply.status, 401, "{}", reply.body);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn on_etcd_with_a_cert_dir_nothing_is_written_to_the_current_directory() {
    let etcd = common::etcd::EtcdServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("cwd");
    let certs = dir.path().join("certs");
    std::fs::create_dir_all(&cwd).unwrap();
    let mut server = ApiServer::builder()
        .without_data_dir_flag(&certs)
        .current_dir(&cwd)
        .cert_dir(&certs)
        .args([format!("--etcd-servers={}", etcd.url())])
        .start()
        .await;
    assert!(certs.join("admin.kubeconfig").is_file());
    assert!(certs.join("ca.crt").is_file());
    server.stop().await;
    let left: Vec<_> = std::fs::read_dir(&cwd).unwrap().collect();
    assert!(
        left.is_empty(),
        "written to the current directory: {left:?}"
    );
}

/// The size of the embedded store file.
fn store_size(server: &ApiServer) -> u64 {
    std::fs::metadata(server.data_dir.join("storage.redb"))
        .unwrap()
        .len()
}

/// Creates configmap `c` with a 32 KiB value and updates it `updates` times; returns the
/// resourceVersion it was created at and the largest size `storage.redb` reached.
async fn steady_updates(server: &ApiServer, updates: usize) -> (String, u64) {
    let admin = server.admin_client();
    let base = "/api/v1/namespaces/default/configmaps";
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                    "data": {"n": "0", "filler": "x".repeat(32 * 1024)}});
    let reply = send(
        &admin,
        Method::POST,
        base,
        &cm.to_string(),
        "application/json",
    )
    .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let created: Value = serde_json::from_str(&reply.body).unwrap();
    let first_rv = created["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let mut largest = 0;
    for n in 1..=updates {
        let patch = json!({"data": {"n": n.to_string()}}).to_string();
        let reply = send(
            &admin,
            Method::PATCH,
            &format!("{base}/c"),
            &patch,
            "application/merge-patch+json",
        )
        .await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        largest = largest.max(store_size(server));
    }
    (first_rv, largest)
}

#[tokio::test(flavor = "multi_thread")]
async fn embedded_store_compacts_old_revisions_to_410_and_its_file_stays_bounded() {
    // The same steady update load (every update stores another ~32 KiB revision) on a server
    // that never compacts and on one that compacts every second.
    let updates = 400;
    let mut uncompacted = ApiServer::start(&["--etcd-compaction-interval=0"]).await;
    let (_, without) = steady_updates(&uncompacted, updates).await;
    uncompacted.stop().await;
    let mut server = ApiServer::start(&["--etcd-compaction-interval=1s"]).await;
    let started = Instant::now();
    let (first_rv, with) = steady_updates(&server, updates).await;
    eprintln!(
        "storage.redb at most {with} bytes compacted, {without} uncompacted, over {updates} updates in {:?}",
        started.elapsed()
    );
    // Uncompacted the file keeps every revision (~50 MiB); compacted it stays at a few MiB
    // (redb grows its file in regions and reuses the pages compaction frees).
    assert!(
        with < without / 2,
        "storage.redb reached {with} bytes compacted, {without} uncompacted"
    );
    let admin = server.admin_client();
    let base = "/api/v1/namespaces/default/configmaps";

    // The first revision is compacted: an exact LIST at it is 410 Expired. (A watch from it
    // is still served from the watch cache's event window, as upstream's cacher does.)
    let path = format!("{base}?resourceVersion={first_rv}&resourceVersionMatch=Exact");
    let reply = eventually("the first revision to be compacted", || {
        let admin = admin.clone();
        let path = path.clone();
        async move {
            let reply = admin.get(Proto::H2, &path).await.unwrap();
            (reply.status == 410).then_some(reply)
        }
    })
    .await;
    let status: Value = serde_json::from_str(&reply.body).unwrap();
    assert_eq!(status["reason"], "Expired", "{}", reply.body);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn x509_v1_client_certificates_authenticate_and_unverifiable_ones_get_401_not_a_failed_handshake()
 {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/x509-v1");
    let read = |name: &str| std::fs::read_to_string(data.join(name)).unwrap();
    let mut server = ApiServer::builder()
        .args([format!(
            "--client-ca-file={}",
            data.join("ca.crt").display()
        )])
        .no_ready_wait()
        .start()
        .await;
    let ca = std::fs::read_to_string(server.pki().join("ca.crt")).unwrap();
    let v1_admin = Client::new(server.addr, &ca, "127.0.0.1")
        .with_identity(&read("admin.crt"), &read("admin.key"));
    ready(&v1_admin).await;
    for proto in [Proto::H1, Proto::H2] {
        let reply = v1_admin.get(proto, "/api/v1/namespaces").await.unwrap();
        assert_eq!(reply.status, 200, "{}", reply.body);
    }
    // Signed by a CA the server does not trust: the handshake completes, the request is 401.
    let stranger = Client::new(server.addr, &ca, "127.0.0.1")
        .with_identity(&read("stranger.crt"), &read("stranger.key"));
    for proto in [Proto::H1, Proto::H2] {
        let reply = stranger.get(proto, "/api/v1/namespaces").await.unwrap();
        assert_eq!(reply.status, 401, "{}", reply.body);
    }
    server.stop().await;
}
