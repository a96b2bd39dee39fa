//! Encryption at rest through the real binary over TLS, with kubectl 1.35 writing and reading
//! and the stored bytes read behind the server's back: the embedded store's file opened with
//! redb after the server stopped, or etcd's keys read with `etcdctl` while it runs.
//!
//! Each test starts its own server(s) with its own `--encryption-provider-config`.

mod common;

use std::path::{Path, PathBuf};

use base64::Engine;
use common::etcd::EtcdServer;
use common::{ApiServer, ToolOutput, eventually, free_port, run_to_exit, run_tool};

/// 32-byte keys, base64 (distinct).
const KEY1: &str = "c2VjcmV0IGlzIHNlY3VyZSwgSSB0aGluayBzbywgb2s=";
const KEY2: &str = "YW5vdGhlciBzZWNyZXQga2V5IG9mIDMyIGJ5dGVzIS4=";
/// A 16-byte key.
const KEY16: &str = "c2VjcmV0IGlzIHNlY3VyZQ==";

/// The value stored in the test secrets; its base64 form is what the secret's JSON holds.
const PLAIN: &str = "hunter2-plaintext-marker";

fn plain_b64() -> String {
    base64::engine::general_purpose::STANDARD.encode(PLAIN)
}

/// An `EncryptionConfiguration` with one entry: `resources` stored by `providers` (YAML list
/// items, already indented by two spaces).
fn config(resources: &str, providers: &str) -> String {
    format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: {resources}\n  providers:\n{providers}"
    )
}

fn aescbc(keys: &[(&str, &str)]) -> String {
    provider("aescbc", keys)
}

fn provider(kind: &str, keys: &[(&str, &str)]) -> String {
    let mut out = format!("  - {kind}:\n      keys:\n");
    for (name, secret) in keys {
        out.push_str(&format!("      - name: {name}\n        secret: {secret}\n"));
    }
    out
}

/// Where the server keeps its objects.
enum Backend {
    Embedded,
    Etcd(EtcdServer),
}

impl Backend {
    async fn start(etcd: bool) -> Backend {
        if etcd {
            Backend::Etcd(EtcdServer::start().await)
        } else {
            Backend::Embedded
        }
    }

    fn args(&self) -> Vec<String> {
        match self {
            Backend::Embedded => Vec::new(),
            Backend::Etcd(etcd) => vec![format!("--etcd-servers={}", etcd.url())],
        }
    }
}

/// A server's lasting state across restarts: data dir (PKI, kubeconfig, embedded store), port
/// and the encryption configuration file.
struct Cluster {
    _tmp: tempfile::TempDir,
    data: PathBuf,
    config: PathBuf,
    home: tempfile::TempDir,
    port: u16,
    backend: Backend,
}

impl Cluster {
    async fn new(etcd: bool, config_text: &str) -> Cluster {
        let tmp = tempfile::tempdir().unwrap();
        let cluster = Cluster {
            data: tmp.path().join("data"),
            config: tmp.path().join("encryption.yaml"),
            home: tempfile::tempdir().unwrap(),
            port: free_port(),
            backend: Backend::start(etcd).await,
            _tmp: tmp,
        };
        cluster.write_config(config_text);
        cluster
    }

    fn write_config(&self, text: &str) {
        // Replaced as a whole (as editors and config management do), never seen half-written.
        let tmp = self.config.with_extension("tmp");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, &self.config).unwrap();
    }

    async fn start(&self, extra: &[&str]) -> ApiServer {
        ApiServer::builder()
            .data_dir(&self.data)
            .args(self.backend.args())
            .args([
                format!("--secure-port={}", self.port),
                format!("--encryption-provider-config={}", self.config.display()),
            ])
            .args(extra.iter().copied())
            .start()
            .await
    }

    async fn kubectl(&self, args: &[&str]) -> ToolOutput {
        let kubeconfig = self.data.join("admin.kubeconfig").display().to_string();
        let mut all = vec!["--kubeconfig", kubeconfig.as_str()];
        all.extend_from_slice(args);
        run_tool("kubectl-1.35", self.home.path(), &all).await
    }

    async fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args).await;
        assert_eq!(out.code, Some(0), "kubectl {args:?}: {out:?}");
        out.stdout
    }

    async fn create_secret(&self, name: &str) {
        self.kubectl_ok(&[
            "create",
            "secret",
            "generic",
            name,
            &format!("--from-literal=password={PLAIN}"),
        ])
        .await;
    }

    /// The secret read back through the API holds the value written.
    async fn assert_readable(&self, name: &str) {
        let yaml = self
            .kubectl_ok(&["get", "secret", name, "-o", "yaml"])
            .await;
        assert!(
            yaml.contains(&format!("password: {}", plain_b64())),
            "{name}: {yaml}"
        );
    }

    /// The stored bytes of `key` (under `/registry`): from etcd while the server runs, or from
    /// the embedded store's file (the server must be stopped: the file is locked while open).
    async fn raw(&self, key: &str) -> Vec<u8> {
        match &self.backend {
            Backend::Embedded => raw_from_redb(&self.data, key),
            Backend::Etcd(etcd) => raw_from_etcd(&etcd.url(), key).await,
        }
    }
}

fn raw_from_redb(data: &Path, key: &str) -> Vec<u8> {
    use apiserver::storage::backends::embedded::layout::{HISTORY, LATEST, Record};
    use redb::ReadableDatabase;
    let db = redb::Database::open(data.join("storage.redb")).expect("open storage.redb");
    let txn = db.begin_read().unwrap();
    let latest = txn.open_table(LATEST).unwrap();
    let rev = latest
        .get(key)
        .unwrap()
        .unwrap_or_else(|| panic!("{key} is not stored"))
        .value();
    let history = txn.open_table(HISTORY).unwrap();
    let record = history.get((key, rev)).unwrap().unwrap();
    Record::decode(record.value()).unwrap().value.unwrap()
}

async fn raw_from_etcd(url: &str, key: &str) -> Vec<u8> {
    let out = tokio::process::Command::new("etcdctl")
        .args([&format!("--endpoints={url}"), "get", key, "-w", "json"])
        .env("ETCDCTL_API", "3")
        .output()
        .await
        .expect("etcdctl (apt-get install etcd-client)");
    assert!(out.status.success(), "{out:?}");
    let reply: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let value = reply["kvs"][0]["value"]
        .as_str()
        .unwrap_or_else(|| panic!("{key} is not in etcd: {reply}"));
    base64::engine::general_purpose::STANDARD
        .decode(value)
        .unwrap()
}

fn secret_key(name: &str) -> String {
    format!("/registry/secrets/default/{name}")
}

/// The stored bytes carry `prefix` and nothing of the plain object.
fn assert_encrypted(raw: &[u8], prefix: &str) {
    assert!(
        raw.starts_with(prefix.as_bytes()),
        "expected {prefix}, stored: {}",
        String::from_utf8_lossy(&raw[..raw.len().min(60)])
    );
    let text = String::from_utf8_lossy(raw);
    assert!(!text.contains(&plain_b64()), "the value is stored in clear");
    assert!(!text.contains("\"kind\""), "the object is stored in clear");
}

async fn aescbc_secret_is_unreadable_in_the_store_and_readable_through_kubectl(etcd: bool) {
    let cluster = Cluster::new(etcd, &config("[secrets]", &aescbc(&[("key1", KEY1)]))).await;
    let mut server = cluster.start(&[]).await;
    cluster.create_secret("s1").await;
    cluster
        .kubectl_ok(&[
            "create",
            "configmap",
            "c1",
            "--from-literal=k=visible-value",
        ])
        .await;
    cluster.assert_readable("s1").await;
    // Listing and watching go through the watch cache, which holds the decrypted objects.
    let list = cluster.kubectl_ok(&["get", "secrets", "-o", "name"]).await;
    assert!(list.contains("secret/s1"), "{list}");
    server.stop().await;

    assert_encrypted(
        &cluster.raw(&secret_key("s1")).await,
        "k8s:enc:aescbc:v1:key1:",
    );
    // Resources the configuration does not name are stored as they are.
    let cm = cluster.raw("/registry/configmaps/default/c1").await;
    assert!(String::from_utf8_lossy(&cm).contains("visible-value"));

    // A restart reads everything back.
    let mut server = cluster.start(&[]).await;
    cluster.assert_readable("s1").await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn aescbc_secret_is_unreadable_in_redb_and_readable_through_kubectl() {
    aescbc_secret_is_unreadable_in_the_store_and_readable_through_kubectl(false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn aescbc_secret_is_unreadable_in_etcd_and_readable_through_kubectl() {
    aescbc_secret_is_unreadable_in_the_store_and_readable_through_kubectl(true).await;
}

/// upstream's rotation procedure: add the new key first, restart, rewrite every secret
/// (`kubectl get secrets -o json | kubectl replace -f -`), drop the old key, restart.
async fn key_rotation(etcd: bool) {
    let cluster = Cluster::new(etcd, &config("[secrets]", &aescbc(&[("key1", KEY1)]))).await;
    let mut server = cluster.start(&[]).await;
    cluster.create_secret("s1").await;
    cluster.create_secret("s2").await;
    server.stop().await;
    assert_encrypted(
        &cluster.raw(&secret_key("s1")).await,
        "k8s:enc:aescbc:v1:key1:",
    );

    cluster.write_config(&config(
        "[secrets]",
        &aescbc(&[("key2", KEY2), ("key1", KEY1)]),
    ));
    let mut server = cluster.start(&[]).await;
    cluster.assert_readable("s1").await;
    cluster.assert_readable("s2").await;
    cluster.create_secret("s3").await;
    let all = cluster.kubectl_ok(&["get", "secrets", "-o", "json"]).await;
    let file = cluster.home.path().join("secrets.json");
    std::fs::write(&file, all).unwrap();
    // The objects are unchanged: only the stale encryption makes the update write.
    let replaced = cluster
        .kubectl_ok(&["replace", "-f", &file.display().to_string()])
        .await;
    assert!(replaced.contains("secret/s1 replaced"), "{replaced}");
    server.stop().await;
    for name in ["s1", "s2", "s3"] {
        assert_encrypted(
            &cluster.raw(&secret_key(name)).await,
            "k8s:enc:aescbc:v1:key2:",
        );
    }

    cluster.write_config(&config("[secrets]", &aescbc(&[("key2", KEY2)])));
    let mut server = cluster.start(&[]).await;
    for name in ["s1", "s2", "s3"] {
        cluster.assert_readable(name).await;
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn key_rotation_rewrites_secrets_with_the_new_key_on_embedded() {
    key_rotation(false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn key_rotation_rewrites_secrets_with_the_new_key_on_etcd() {
    key_rotation(true).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn aesgcm_and_secretbox_round_trip_per_resource_on_etcd() {
    let text = format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n{}- resources: [configmaps]\n  providers:\n{}",
        provider("aesgcm", &[("gcmkey", KEY16)]),
        provider("secretbox", &[("boxkey", KEY1)]),
    );
    let cluster = Cluster::new(true, &text).await;
    let mut server = cluster.start(&[]).await;
    cluster.create_secret("s1").await;
    cluster
        .kubectl_ok(&[
            "create",
            "configmap",
            "c1",
            &format!("--from-literal=k={PLAIN}"),
        ])
        .await;
    assert_encrypted(
        &cluster.raw(&secret_key("s1")).await,
        "k8s:enc:aesgcm:v1:gcmkey:",
    );
    let cm = cluster.raw("/registry/configmaps/default/c1").await;
    assert!(cm.starts_with(b"k8s:enc:secretbox:v1:boxkey:"));
    assert!(!String::from_utf8_lossy(&cm).contains(PLAIN));
    cluster.assert_readable("s1").await;
    let cm_yaml = cluster
        .kubectl_ok(&["get", "configmap", "c1", "-o", "yaml"])
        .await;
    assert!(cm_yaml.contains(&format!("k: {PLAIN}")), "{cm_yaml}");
    // Updates and deletes of encrypted objects work.
    cluster
        .kubectl_ok(&["label", "secret", "s1", "rotated=yes"])
        .await;
    let labels = cluster
        .kubectl_ok(&[
            "get",
            "secret",
            "s1",
            "-o",
            "jsonpath={.metadata.labels.rotated}",
        ])
        .await;
    assert_eq!(labels, "yes");
    cluster.kubectl_ok(&["delete", "configmap", "c1"]).await;
    server.stop().await;
    let mut server = cluster.start(&[]).await;
    cluster.assert_readable("s1").await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn identity_first_reads_encrypted_data_and_writes_in_clear() {
    let cluster = Cluster::new(false, &config("[secrets]", &aescbc(&[("key1", KEY1)]))).await;
    let mut server = cluster.start(&[]).await;
    cluster.create_secret("old").await;
    server.stop().await;

    let identity_first = format!("  - identity: {{}}\n{}", aescbc(&[("key1", KEY1)]));
    cluster.write_config(&config("[secrets]", &identity_first));
    let mut server = cluster.start(&[]).await;
    cluster.assert_readable("old").await;
    cluster.create_secret("new").await;
    server.stop().await;
    assert_encrypted(
        &cluster.raw(&secret_key("old")).await,
        "k8s:enc:aescbc:v1:key1:",
    );
    let new = cluster.raw(&secret_key("new")).await;
    assert!(new.starts_with(b"{"), "stored in clear");

    // Without identity, the value stored in clear is not readable: upstream's internal error.
    cluster.write_config(&config("[secrets]", &aescbc(&[("key1", KEY1)])));
    let mut server = cluster.start(&[]).await;
    cluster.assert_readable("old").await;
    let out = cluster.kubectl(&["get", "secret", "new"]).await;
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains(
            "Error from server (InternalError): Internal error occurred: no matching prefix found"
        ),
        "{out:?}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn data_no_key_decrypts_is_an_internal_error_naming_the_transformer_failure() {
    let cluster = Cluster::new(false, &config("[secrets]", &aescbc(&[("key1", KEY1)]))).await;
    let mut server = cluster.start(&[]).await;
    cluster.create_secret("s1").await;
    server.stop().await;
    cluster.write_config(&config("[secrets]", &aescbc(&[("key2", KEY2)])));
    let mut server = cluster.start(&[]).await;
    let out = cluster.kubectl(&["get", "secret", "s1"]).await;
    assert!(
        out.stderr.contains(
            "Internal error occurred: no matching key was found for the provided AES transformer"
        ),
        "{out:?}"
    );
    let out = cluster.kubectl(&["get", "secrets"]).await;
    assert!(
        out.stderr.contains(&format!(
            "Internal error occurred: unable to transform key \"{}\": no matching key was found for the provided AES transformer",
            secret_key("s1")
        )),
        "{out:?}"
    );
    // A key with the right name but other bytes: the padding check fails.
    cluster.write_config(&config("[secrets]", &aescbc(&[("key1", KEY2)])));
    server.stop().await;
    let mut server = cluster.start(&[]).await;
    let out = cluster.kubectl(&["get", "secret", "s1"]).await;
    assert!(out.stderr.contains("Internal error occurred: "), "{out:?}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn automatic_reload_applies_a_new_key_without_restart_and_keeps_the_old_config_on_errors() {
    let cluster = Cluster::new(true, &config("[secrets]", &aescbc(&[("key1", KEY1)]))).await;
    let server = cluster
        .start(&["--encryption-provider-config-automatic-reload"])
        .await;
    cluster.create_secret("s1").await;
    assert_encrypted(
        &cluster.raw(&secret_key("s1")).await,
        "k8s:enc:aescbc:v1:key1:",
    );
    let readyz = server
        .admin_client()
        .get(common::client::Proto::H1, "/readyz?verbose")
        .await
        .unwrap();
    assert!(
        readyz
            .body
            .contains("[+]poststarthook/start-encryption-provider-config-automatic-reload ok"),
        "{}",
        readyz.body
    );
    assert!(
        readyz.body.contains("[+]kms-providers ok"),
        "{}",
        readyz.body
    );

    // A broken file is refused; writes keep using key1.
    cluster.write_config(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources: []\n",
    );
    let metrics = eventually("the failed reload is counted", || {
        let client = server.admin_client();
        async move {
            let text = client
                .get(common::client::Proto::H1, "/metrics")
                .await
                .ok()?
                .body;
            text.contains(
                "apiserver_encryption_config_controller_automatic_reloads_total{apiserver_id_hash=",
            )
            .then_some(text)
        }
    })
    .await;
    assert!(metrics.contains("status=\"failure\""), "{metrics}");
    server
        .stderr
        .wait_for("error processing encryption config file")
        .await;
    cluster.create_secret("s2").await;
    assert_encrypted(
        &cluster.raw(&secret_key("s2")).await,
        "k8s:enc:aescbc:v1:key1:",
    );

    // key2 first: new writes use it, old data stays readable.
    cluster.write_config(&config(
        "[secrets]",
        &aescbc(&[("key2", KEY2), ("key1", KEY1)]),
    ));
    let mut n = 0;
    eventually("a secret written after the reload carries key2", || {
        n += 1;
        let name = format!("probe{n}");
        let cluster = &cluster;
        async move {
            cluster.create_secret(&name).await;
            let raw = cluster.raw(&secret_key(&name)).await;
            raw.starts_with(b"k8s:enc:aescbc:v1:key2:").then_some(())
        }
    })
    .await;
    cluster.assert_readable("s1").await;
    cluster.assert_readable("s2").await;
    let metrics = server
        .admin_client()
        .get(common::client::Proto::H1, "/metrics")
        .await
        .unwrap()
        .body;
    assert!(metrics.contains("status=\"success\""), "{metrics}");
    assert!(
        metrics.contains("apiserver_storage_transformation_operations_total{resource=\"secrets\",status=\"OK\",transformation_type=\"to_storage\",transformer_prefix=\"k8s:enc:aescbc:v1:\"}"),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_encryption_configs_exit_1_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, String, String)> = vec![
        (
            "unknown provider",
            config("[secrets]", "  - rot13: {}\n"),
            "strict decoding error: unknown field \"resources[0].providers[0].rot13\"".into(),
        ),
        (
            "wrong key length",
            config("[secrets]", &aescbc(&[("key1", "c2hvcnQ=")])),
            "resources[0].providers[0].aescbc.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the expected length, got 5, expected one of [16 24 32]".into(),
        ),
        (
            "not base64",
            config("[secrets]", &aescbc(&[("key1", "not*base64")])),
            "secrets must be base64 encoded".into(),
        ),
        (
            "no providers",
            config("[secrets]", "    []\n"),
            "resources[0].providers: Required value: at least one resources[0].providers is required".into(),
        ),
        (
            "duplicate resources",
            config("[secrets, secrets]", "  - identity: {}\n"),
            "the same resource cannot be specified multiple times".into(),
        ),
        (
            "unknown kind",
            "apiVersion: apiserver.config.k8s.io/v1\nkind: Encryption\nresources: []\n".into(),
            "no kind \"Encryption\" is registered for version \"apiserver.config.k8s.io/v1\"".into(),
        ),
        (
            "unknown apiVersion",
            "apiVersion: apiserver.config.k8s.io/v2\nkind: EncryptionConfiguration\nresources: []\n".into(),
            "no kind \"EncryptionConfiguration\" is registered for version \"apiserver.config.k8s.io/v2\"".into(),
        ),
    ];
    for (what, text, expected) in cases {
        let path = dir.path().join(format!("{}.yaml", what.replace(' ', "-")));
        std::fs::write(&path, &text).unwrap();
        let flag = format!("--encryption-provider-config={}", path.display());
        let out = run_to_exit(&[&flag]).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{what}: not one line: {stderr:?}");
        assert!(
            lines[0].starts_with("Error: error while parsing file: "),
            "{what}: {stderr:?}"
        );
        assert!(lines[0].contains(&expected), "{what}: {stderr:?}");
        assert!(
            !stderr.contains(KEY1),
            "{what}: a key in the error: {stderr:?}"
        );
    }
    let missing = dir.path().join("missing.yaml");
    let out = run_to_exit(&[&format!(
        "--encryption-provider-config={}",
        missing.display()
    )])
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr:?}");
    assert!(stderr.contains("no such file or directory"), "{stderr}");
    let out = run_to_exit(&["--encryption-provider-config-automatic-reload"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        "Error: --encryption-provider-config-automatic-reload must be set with --encryption-provider-config"
    );
}

const GIZMO_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: gizmos
    singular: gizmo
    kind: Gizmo
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#;

#[tokio::test(flavor = "multi_thread")]
async fn group_and_any_wildcards_cover_built_in_and_custom_resources_on_etcd() {
    // Earlier entries win: apps resources by aescbc, everything else (custom resources
    // included) by secretbox, events left in clear.
    let text = format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [events]\n  providers:\n  - identity: {{}}\n- resources: ['*.apps']\n  providers:\n{}- resources: ['*.*']\n  providers:\n{}",
        aescbc(&[("appskey", KEY1)]),
        provider("secretbox", &[("anykey", KEY2)]),
    );
    let cluster = Cluster::new(true, &text).await;
    let mut server = cluster.start(&[]).await;
    cluster
        .kubectl_ok(&[
            "create",
            "deployment",
            "d1",
            "--image=registry.k8s.io/pause:3.10",
        ])
        .await;
    cluster
        .kubectl_ok(&[
            "create",
            "configmap",
            "c1",
            &format!("--from-literal=k={PLAIN}"),
        ])
        .await;
    let crd = cluster.home.path().join("crd.yaml");
    std::fs::write(&crd, GIZMO_CRD).unwrap();
    cluster
        .kubectl_ok(&["apply", "-f", &crd.display().to_string()])
        .await;
    cluster
        .kubectl_ok(&[
            "wait",
            "--for=condition=Established",
            "crd/gizmos.example.com",
            "--timeout=60s",
        ])
        .await;
    let gizmo = cluster.home.path().join("gizmo.yaml");
    std::fs::write(
        &gizmo,
        format!(
            "apiVersion: example.com/v1\nkind: Gizmo\nmetadata:\n  name: g1\n  namespace: default\nspec:\n  secret: {PLAIN}\n"
        ),
    )
    .unwrap();
    eventually("the gizmo is created", || {
        let cluster = &cluster;
        let gizmo = gizmo.display().to_string();
        async move {
            let out = cluster.kubectl(&["create", "-f", &gizmo]).await;
            (out.code == Some(0)).then_some(())
        }
    })
    .await;

    assert_encrypted(
        &cluster.raw("/registry/deployments/default/d1").await,
        "k8s:enc:aescbc:v1:appskey:",
    );
    let cm = cluster.raw("/registry/configmaps/default/c1").await;
    assert!(cm.starts_with(b"k8s:enc:secretbox:v1:anykey:"));
    assert!(!String::from_utf8_lossy(&cm).contains(PLAIN));
    let crd_raw = cluster
        .raw("/registry/apiextensions.k8s.io/customresourcedefinitions/gizmos.example.com")
        .await;
    assert!(crd_raw.starts_with(b"k8s:enc:secretbox:v1:anykey:"));
    let cr = cluster.raw("/registry/example.com/gizmos/default/g1").await;
    assert!(cr.starts_with(b"k8s:enc:secretbox:v1:anykey:"));
    assert!(!String::from_utf8_lossy(&cr).contains(PLAIN));

    let got = cluster
        .kubectl_ok(&["get", "gizmo", "g1", "-o", "jsonpath={.spec.secret}"])
        .await;
    assert_eq!(got, PLAIN);
    let got = cluster
        .kubectl_ok(&["get", "deployment", "d1", "-o", "jsonpath={.metadata.name}"])
        .await;
    assert_eq!(got, "d1");
    server.stop().await;
}
