//! The binary as a drop-in `kube-apiserver` for controller-runtime's envtest and for kubeadm:
//! started with exactly the argv they build, with the certificates laid out as they lay them
//! out, checked for readiness the way they check it, then driven by a kube-rs controller.
//!
//! - envtest (`pkg/internal/testing/controlplane`): a temporary cert dir with `apiserver.crt`
//!   and `apiserver.key` from a throw-away CA, `sa-signer.crt`/`sa-signer.key`, a client CA
//!   in `client-cert-auth-ca.crt` whose client certificates are the users (the admin in
//!   `system:masters`), a real etcd over plain HTTP, readiness by polling `/healthz` without
//!   credentials, then `default` namespace must exist. Both its current argument set and the
//!   deprecated `APIServerDefaultArgs` one (with `--advertise-address`), plus the flags users
//!   commonly add (`--feature-gates`, `--enable-priority-and-fairness=false`).
//! - kubeadm (`getAPIServerCommand`): the `/etc/kubernetes/pki` layout in a temp dir, a real
//!   etcd with TLS and client certificates, `--authorization-mode=Node,RBAC`, NodeRestriction,
//!   bootstrap tokens, the front proxy, the kubelet client flags; readiness by polling
//!   `/livez` and `/readyz` without credentials (the static pod's probes); `admin.conf` in
//!   `kubeadm:cluster-admins` bound to `cluster-admin` with `super-admin.conf`, as `kubeadm
//!   init` does.
//!
//! Go is not on the build machines, so envtest itself is not run: these tests do what it
//! does (README, "Using it as envtest's kube-apiserver").

mod common;
#[path = "common/widgets.rs"]
mod widgets;

use std::fs::File;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use http::Method;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::Api;
use kube::config::{KubeConfigOptions, Kubeconfig};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use serde_json::{Value, json};

use common::client::{Client, Proto};
use common::etcd::EtcdServer;
use common::{DEADLINE, binary, free_port};
use widgets::{create_widget, create_widget_crd, reconciled, resize_widget, run_controller};

// ---------------------------------------------------------------- certificates

/// A CA made the way envtest's `TinyCA` and kubeadm's `certs` phase make them (P-256 keys;
/// kubeadm's `encryptionAlgorithm: ECDSA-P256`).
struct Ca {
    cert_pem: String,
    key_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

/// A certificate and its PKCS#8 key, PEM.
struct Pair {
    cert_pem: String,
    key_pem: String,
}

fn new_ca(cn: &str, org: Option<&str>) -> Ca {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(DnType::CommonName, cn);
    if let Some(org) = org {
        params
            .distinguished_name
            .push(DnType::OrganizationName, org);
    }
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    let cert = params.self_signed(&key).unwrap();
    Ca {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        issuer: Issuer::new(params, key),
    }
}

impl Ca {
    /// A leaf certificate: `cn`, organizations, DNS and IP names, server and/or client use.
    fn leaf(&self, cn: &str, orgs: &[&str], names: &[&str], server: bool, client: bool) -> Pair {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        for org in orgs {
            params
                .distinguished_name
                .push(DnType::OrganizationName, *org);
        }
        for name in names {
            params.subject_alt_names.push(match name.parse() {
                Ok(ip) => SanType::IpAddress(ip),
                Err(_) => SanType::DnsName((*name).try_into().unwrap()),
            });
        }
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        if server {
            params
                .extended_key_usages
                .push(ExtendedKeyUsagePurpose::ServerAuth);
        }
        if client {
            params
                .extended_key_usages
                .push(ExtendedKeyUsagePurpose::ClientAuth);
        }
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        Pair {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }
}

fn write(path: &Path, contents: &str) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(path, contents).unwrap();
}

fn write_pair(dir: &Path, name: &str, pair: &Pair) {
    write(&dir.join(format!("{name}.crt")), &pair.cert_pem);
    write(&dir.join(format!("{name}.key")), &pair.key_pem);
}

/// A kubeconfig for `server` trusting `ca_pem`, with a client certificate or a token (what
/// envtest's `KubeConfigFromREST` and kubeadm's `admin.conf` hold).
fn kubeconfig(server: &str, ca_pem: &str, user: &Value) -> String {
    use base64::Engine as _;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {
            "server": server, "certificate-authority-data": b64(ca_pem)}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    })
    .to_string()
}

fn cert_user(pair: &Pair) -> Value {
    use base64::Engine as _;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    json!({"client-certificate-data": b64(&pair.cert_pem), "client-key-data": b64(&pair.key_pem)})
}

async fn kube_client(kubeconfig_yaml: &str) -> kube::Client {
    let kubeconfig = Kubeconfig::from_yaml(kubeconfig_yaml).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kube config");
    kube::Client::try_from(config).expect("kube client")
}

// ---------------------------------------------------------------- processes

/// A process started with an exact argv, its output in a file, killed on drop.
struct Process {
    child: Child,
    log: PathBuf,
    name: &'static str,
}

impl Process {
    fn spawn(name: &'static str, program: &Path, args: &[String], log: PathBuf) -> Process {
        let out = File::create(&log).unwrap();
        let child = Command::new(program)
            .args(args)
            .env_remove("NOTIFY_SOCKET")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", program.display()));
        Process { child, log, name }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Fails the test with the log when the process has exited.
    fn assert_running(&mut self) {
        if let Some(status) = self.child.try_wait().unwrap() {
            panic!("{} exited with {status}:\n{}", self.name, self.log());
        }
    }

    /// SIGTERM, then a clean exit within the deadline (as envtest's `Stop`).
    async fn stop(&mut self) {
        // SAFETY: kill(2) on the pid of a child this test spawned and has not reaped.
        let rc = unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        assert_eq!(rc, 0);
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "{} exited with {status}", self.name);
                return;
            }
            assert!(start.elapsed() < DEADLINE, "{} did not stop", self.name);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Polls `path` without credentials until it answers 200 (envtest's `pollURLUntilOK`; the
/// kubelet's probes of kubeadm's static pod), failing with the server's log if it exits.
async fn wait_for_ok(server: &mut Process, client: &Client, path: &str) {
    let start = Instant::now();
    loop {
        server.assert_running();
        if let Ok(reply) = client.get(Proto::H1, path).await
            && reply.status == 200
        {
            return;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "{path} not 200 within {DEADLINE:?}:\n{}",
            server.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Creates widgets and resizes one; the kube-rs controller reconciles each (server-side
/// apply of a child ConfigMap, a status patch).
async fn controller_reconciles(client: &kube::Client) {
    create_widget_crd(client).await;
    let controller = run_controller(client.clone());
    create_widget(client, "one", 1).await;
    reconciled(client, "one", 1).await;
    resize_widget(client, "one", 4).await;
    reconciled(client, "one", 4).await;
    create_widget(client, "two", 2).await;
    reconciled(client, "two", 2).await;
    controller.abort();
}

// ---------------------------------------------------------------- envtest

/// What envtest writes into its cert dir before starting the API server.
struct EnvtestDir {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    serving_ca: Ca,
    admin: Pair,
}

fn envtest_cert_dir() -> EnvtestDir {
    let tmp = tempfile::Builder::new()
        .prefix("k8s_test_framework_")
        .tempdir()
        .unwrap();
    let dir = tmp.path().to_path_buf();
    // populateAPIServerCerts: a serving certificate for localhost and the listen address.
    let serving_ca = new_ca("envtest-environment", Some("envtest"));
    let serving = serving_ca.leaf(
        "localhost",
        &["envtest"],
        &["localhost", "127.0.0.1", "::1", "127.0.0.1"],
        true,
        false,
    );
    write_pair(&dir, "apiserver", &serving);
    // The service-account signer: a CA's certificate and its key.
    let sa = new_ca("envtest-environment", Some("envtest"));
    write(&dir.join("sa-signer.crt"), &sa.cert_pem);
    write(&dir.join("sa-signer.key"), &sa.key_pem);
    // CertAuthn: the client CA, and the admin user envtest.Environment adds.
    let client_ca = new_ca("envtest-environment", Some("envtest"));
    write(&dir.join("client-cert-auth-ca.crt"), &client_ca.cert_pem);
    let admin = client_ca.leaf("admin", &["system:masters"], &[], false, true);
    EnvtestDir {
        _tmp: tmp,
        dir,
        serving_ca,
        admin,
    }
}

/// `--key=value` for each pair, sorted by key, as envtest's `Arguments.AsStrings` renders them.
fn sorted_argv(mut args: Vec<(&str, String)>) -> Vec<String> {
    args.sort_by(|a, b| a.0.cmp(b.0));
    args.into_iter()
        .map(|(k, v)| format!("--{k}={v}"))
        .collect()
}

/// envtest's argv: `defaultArgs()` plus `client-ca-file` from the cert authenticator (no
/// `--insecure-port=0`: envtest's `CheckFlag` adds it only when `--help` lists the flag, and
/// ours, as kube-apiserver 1.35's, does not).
fn envtest_argv(dir: &Path, etcd: &str, port: u16) -> Vec<String> {
    let d = |name: &str| dir.join(name).display().to_string();
    sorted_argv(vec![
        ("allow-privileged", "true".into()),
        ("authorization-mode", "RBAC".into()),
        ("bind-address", "127.0.0.1".into()),
        ("cert-dir", dir.display().to_string()),
        ("client-ca-file", d("client-cert-auth-ca.crt")),
        ("disable-admission-plugins", "ServiceAccount".into()),
        ("etcd-servers", etcd.into()),
        ("secure-port", port.to_string()),
        (
            "service-account-issuer",
            format!("https://127.0.0.1:{port}/"),
        ),
        ("service-account-key-file", d("sa-signer.crt")),
        ("service-account-signing-key-file", d("sa-signer.key")),
        ("service-cluster-ip-range", "10.0.0.0/24".into()),
    ])
}

/// Starts the binary with `argv` on `port`, waits as envtest does (`/healthz`, then the
/// `default` namespace), runs the controller, and stops the server as envtest does.
async fn run_as_envtest(env: &EnvtestDir, argv: Vec<String>, port: u16) {
    let mut server = Process::spawn(
        "kube-apiserver",
        &binary(),
        &argv,
        env.dir.join("kube-apiserver.log"),
    );
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let anonymous = Client::new(addr, &env.serving_ca.cert_pem, "localhost");
    wait_for_ok(&mut server, &anonymous, "/healthz").await;

    let config = kubeconfig(
        &format!("https://127.0.0.1:{port}"),
        &env.serving_ca.cert_pem,
        &cert_user(&env.admin),
    );
    let client = kube_client(&config).await;
    // waitForDefaultNamespace: 50 ms polls for 5 s.
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let start = Instant::now();
    while namespaces.get("default").await.is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "no default namespace within 5s:\n{}",
            server.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    controller_reconciles(&client).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn envtest_argv_serves_a_kube_rs_controller_on_etcd() {
    let etcd = EtcdServer::start().await;
    let env = envtest_cert_dir();
    let port = free_port();
    run_as_envtest(&env, envtest_argv(&env.dir, &etcd.url(), port), port).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn envtest_legacy_default_args_with_common_additions_serve_a_kube_rs_controller() {
    let etcd = EtcdServer::start().await;
    let env = envtest_cert_dir();
    let port = free_port();
    let d = |name: &str| env.dir.join(name).display().to_string();
    // APIServerDefaultArgs (the deprecated Args path), RBAC and the service-account flags
    // envtest adds, and what users commonly Configure() on top.
    let argv = vec![
        "--advertise-address=127.0.0.1".to_string(),
        format!("--etcd-servers={}", etcd.url()),
        format!("--cert-dir={}", env.dir.display()),
        format!("--secure-port={port}"),
        "--disable-admission-plugins=ServiceAccount".to_string(),
        "--service-cluster-ip-range=10.0.0.0/24".to_string(),
        "--allow-privileged=true".to_string(),
        "--authorization-mode=RBAC".to_string(),
        "--bind-address=127.0.0.1".to_string(),
        format!("--client-ca-file={}", d("client-cert-auth-ca.crt")),
        format!("--service-account-issuer=https://127.0.0.1:{port}/"),
        format!("--service-account-key-file={}", d("sa-signer.crt")),
        format!("--service-account-signing-key-file={}", d("sa-signer.key")),
        "--enable-priority-and-fairness=false".to_string(),
        "--feature-gates=MutatingAdmissionPolicy=true,WatchList=true".to_string(),
        "--runtime-config=admissionregistration.k8s.io/v1beta1=true".to_string(),
    ];
    run_as_envtest(&env, argv, port).await;
}

// ---------------------------------------------------------------- kubeadm

/// `/etc/kubernetes` as `kubeadm init` leaves it (certs phase and kubeconfig phase).
struct KubeadmPki {
    _tmp: tempfile::TempDir,
    pki: PathBuf,
    ca: Ca,
    front_proxy_ca_client: Pair,
    admin: Pair,
    super_admin: Pair,
}

fn kubeadm_pki() -> KubeadmPki {
    let tmp = tempfile::tempdir().unwrap();
    let pki = tmp.path().join("etc/kubernetes/pki");
    let host = "control-plane";
    let ca = new_ca("kubernetes", None);
    write(&pki.join("ca.crt"), &ca.cert_pem);
    write(&pki.join("ca.key"), &ca.key_pem);
    let apiserver = ca.leaf(
        "kube-apiserver",
        &[],
        &[
            host,
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
            "10.96.0.1",
            "127.0.0.1",
        ],
        true,
        false,
    );
    write_pair(&pki, "apiserver", &apiserver);
    let kubelet_client = ca.leaf(
        "kube-apiserver-kubelet-client",
        &["kubeadm:cluster-admins"],
        &[],
        false,
        true,
    );
    write_pair(&pki, "apiserver-kubelet-client", &kubelet_client);
    let front_proxy_ca = new_ca("front-proxy-ca", None);
    write(&pki.join("front-proxy-ca.crt"), &front_proxy_ca.cert_pem);
    write(&pki.join("front-proxy-ca.key"), &front_proxy_ca.key_pem);
    let front_proxy_client = front_proxy_ca.leaf("front-proxy-client", &[], &[], false, true);
    write_pair(&pki, "front-proxy-client", &front_proxy_client);
    let etcd_ca = new_ca("etcd-ca", None);
    write(&pki.join("etcd/ca.crt"), &etcd_ca.cert_pem);
    write(&pki.join("etcd/ca.key"), &etcd_ca.key_pem);
    let etcd_server = etcd_ca.leaf(
        host,
        &[],
        &[host, "localhost", "127.0.0.1", "::1"],
        true,
        true,
    );
    write_pair(&pki.join("etcd"), "server", &etcd_server);
    let etcd_client = etcd_ca.leaf("kube-apiserver-etcd-client", &[], &[], false, true);
    write_pair(&pki, "apiserver-etcd-client", &etcd_client);
    // The service-account key pair: sa.key and its public key sa.pub.
    let sa = KeyPair::generate().unwrap();
    write(&pki.join("sa.key"), &sa.serialize_pem());
    write(&pki.join("sa.pub"), &sa.public_key_pem());
    KubeadmPki {
        admin: ca.leaf(
            "kubernetes-admin",
            &["kubeadm:cluster-admins"],
            &[],
            false,
            true,
        ),
        super_admin: ca.leaf(
            "kubernetes-super-admin",
            &["system:masters"],
            &[],
            false,
            true,
        ),
        _tmp: tmp,
        pki,
        ca,
        front_proxy_ca_client: front_proxy_client,
    }
}

/// etcd as kubeadm's local etcd static pod runs it: TLS with client certificates.
fn start_tls_etcd(pki: &Path, client_port: u16) -> Process {
    let etcd_dir = pki.join("../../etcd-data");
    std::fs::create_dir_all(&etcd_dir).unwrap();
    let peer_port = free_port();
    let d = |name: &str| pki.join(name).display().to_string();
    let client_url = format!("https://127.0.0.1:{client_port}");
    let peer_url = format!("http://127.0.0.1:{peer_port}");
    let args = vec![
        "--name=control-plane".to_string(),
        format!("--data-dir={}", etcd_dir.display()),
        format!("--listen-client-urls={client_url}"),
        format!("--advertise-client-urls={client_url}"),
        format!("--listen-peer-urls={peer_url}"),
        format!("--initial-advertise-peer-urls={peer_url}"),
        format!("--initial-cluster=control-plane={peer_url}"),
        format!("--cert-file={}", d("etcd/server.crt")),
        format!("--key-file={}", d("etcd/server.key")),
        format!("--trusted-ca-file={}", d("etcd/ca.crt")),
        "--client-cert-auth=true".to_string(),
        "--experimental-watch-progress-notify-interval=5s".to_string(),
        "--log-level=error".to_string(),
        "--logger=zap".to_string(),
    ];
    Process::spawn(
        "etcd",
        Path::new("/usr/bin/etcd"),
        &args,
        etcd_dir.join("../etcd.log"),
    )
}

/// Waits until etcd answers over TLS with the API server's client certificate.
async fn wait_for_tls_etcd(etcd: &mut Process, pki: &Path, client_port: u16) {
    let d = |name: &str| pki.join(name).display().to_string();
    let start = Instant::now();
    loop {
        etcd.assert_running();
        let healthy = tokio::process::Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .arg(format!("--endpoints=https://127.0.0.1:{client_port}"))
            .arg(format!("--cacert={}", d("etcd/ca.crt")))
            .arg(format!("--cert={}", d("apiserver-etcd-client.crt")))
            .arg(format!("--key={}", d("apiserver-etcd-client.key")))
            .args(["--command-timeout=2s", "endpoint", "health"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .await
            .is_ok_and(|s| s.success());
        if healthy {
            return;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "etcd not healthy:\n{}",
            etcd.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// kubeadm's `getAPIServerCommand` for a local etcd, with `bind-address` from
/// `apiServer.extraArgs` (the tests listen on loopback only), sorted as `ArgumentsToCommand`
/// sorts them.
fn kubeadm_argv(pki: &Path, port: u16, etcd_port: u16) -> Vec<String> {
    let d = |name: &str| pki.join(name).display().to_string();
    sorted_argv(vec![
        ("advertise-address", "127.0.0.1".into()),
        ("allow-privileged", "true".into()),
        ("authorization-mode", "Node,RBAC".into()),
        ("bind-address", "127.0.0.1".into()),
        ("client-ca-file", d("ca.crt")),
        ("enable-admission-plugins", "NodeRestriction".into()),
        ("enable-bootstrap-token-auth", "true".into()),
        ("etcd-cafile", d("etcd/ca.crt")),
        ("etcd-certfile", d("apiserver-etcd-client.crt")),
        ("etcd-keyfile", d("apiserver-etcd-client.key")),
        ("etcd-servers", format!("https://127.0.0.1:{etcd_port}")),
        (
            "kubelet-client-certificate",
            d("apiserver-kubelet-client.crt"),
        ),
        ("kubelet-client-key", d("apiserver-kubelet-client.key")),
        (
            "kubelet-preferred-address-types",
            "InternalIP,ExternalIP,Hostname".into(),
        ),
        ("proxy-client-cert-file", d("front-proxy-client.crt")),
        ("proxy-client-key-file", d("front-proxy-client.key")),
        ("requestheader-allowed-names", "front-proxy-client".into()),
        ("requestheader-client-ca-file", d("front-proxy-ca.crt")),
        (
            "requestheader-extra-headers-prefix",
            "X-Remote-Extra-".into(),
        ),
        ("requestheader-group-headers", "X-Remote-Group".into()),
        ("requestheader-username-headers", "X-Remote-User".into()),
        ("secure-port", port.to_string()),
        (
            "service-account-issuer",
            "https://kubernetes.default.svc.cluster.local".into(),
        ),
        ("service-account-key-file", d("sa.pub")),
        ("service-account-signing-key-file", d("sa.key")),
        ("service-cluster-ip-range", "10.96.0.0/12".into()),
        ("tls-cert-file", d("apiserver.crt")),
        ("tls-private-key-file", d("apiserver.key")),
    ])
}

/// POSTs `body` and returns the reply's status and JSON.
async fn post(client: &Client, path: &str, body: &Value, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut req = client.request_with(Method::POST, path, headers);
    *req.body_mut() = http_body_util::Full::new(bytes::Bytes::from(body.to_string()));
    req.headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    let reply = client.send(Proto::H1, req).await.unwrap();
    let json = serde_json::from_str(&reply.body).unwrap_or(Value::Null);
    (reply.status.as_u16(), json)
}

/// Who the server says the caller is (`kubectl auth whoami`).
async fn whoami(client: &Client, headers: &[(&str, &str)]) -> Value {
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let (status, body) = post(
        client,
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        &review,
        headers,
    )
    .await;
    assert_eq!(status, 201, "{body}");
    body["status"]["userInfo"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn kubeadm_argv_with_tls_etcd_serves_rbac_bootstrap_tokens_the_front_proxy_and_a_kube_rs_controller()
 {
    let pki = kubeadm_pki();
    let etcd_port = free_port();
    let mut etcd = start_tls_etcd(&pki.pki, etcd_port);
    wait_for_tls_etcd(&mut etcd, &pki.pki, etcd_port).await;

    let port = free_port();
    let mut server = Process::spawn(
        "kube-apiserver",
        &binary(),
        &kubeadm_argv(&pki.pki, port, etcd_port),
        pki.pki.join("../kube-apiserver.log"),
    );
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    // The static pod's startup and liveness probes (/livez), then its readiness probe.
    let anonymous = Client::new(addr, &pki.ca.cert_pem, "127.0.0.1");
    wait_for_ok(&mut server, &anonymous, "/livez").await;
    wait_for_ok(&mut server, &anonymous, "/readyz").await;

    // kubeadm init: super-admin.conf binds kubeadm:cluster-admins to cluster-admin.
    let super_admin = anonymous
        .clone()
        .with_identity(&pki.super_admin.cert_pem, &pki.super_admin.key_pem);
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "kubeadm:cluster-admins"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "kubeadm:cluster-admins"}],
    });
    let (status, body) = post(
        &super_admin,
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        &binding,
        &[],
    )
    .await;
    assert_eq!(status, 201, "{body}");

    // --enable-bootstrap-token-auth: kubeadm's bootstrap token secret authenticates.
    let token_secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "bootstrap-token-abcdef", "namespace": "kube-system"},
        "type": "bootstrap.kubernetes.io/token",
        "stringData": {
            "token-id": "abcdef", "token-secret": "0123456789abcdef",
            "usage-bootstrap-authentication": "true", "usage-bootstrap-signing": "true",
            "auth-extra-groups": "system:bootstrappers:kubeadm:default-node-token",
        },
    });
    let (status, body) = post(
        &super_admin,
        "/api/v1/namespaces/kube-system/secrets",
        &token_secret,
        &[],
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let bootstrapper = anonymous.clone().with_bearer("abcdef.0123456789abcdef");
    let user = whoami(&bootstrapper, &[]).await;
    assert_eq!(user["username"], "system:bootstrap:abcdef", "{user}");
    let groups = user["groups"].to_string();
    assert!(
        groups.contains("system:bootstrappers:kubeadm:default-node-token")
            && groups.contains("\"system:bootstrappers\""),
        "{groups}"
    );

    // --requestheader-*: the front proxy's client certificate asserts the user.
    let front_proxy = anonymous.clone().with_identity(
        &pki.front_proxy_ca_client.cert_pem,
        &pki.front_proxy_ca_client.key_pem,
    );
    let user = whoami(
        &front_proxy,
        &[
            ("X-Remote-User", "alice"),
            ("X-Remote-Group", "team"),
            ("X-Remote-Extra-Scopes", "read"),
        ],
    )
    .await;
    assert_eq!(user["username"], "alice", "{user}");
    assert_eq!(user["extra"]["scopes"], json!(["read"]), "{user}");

    // --allow-privileged=true: privileged containers are admitted.
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "priv", "namespace": "kube-system"},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                 "securityContext": {"privileged": true}}]},
    });
    let (status, body) = post(
        &super_admin,
        "/api/v1/namespaces/kube-system/pods",
        &pod,
        &[],
    )
    .await;
    assert_eq!(status, 201, "{body}");

    // admin.conf (kubeadm:cluster-admins, through RBAC) runs the controller.
    let config = kubeconfig(
        &format!("https://127.0.0.1:{port}"),
        &pki.ca.cert_pem,
        &cert_user(&pki.admin),
    );
    controller_reconciles(&kube_client(&config).await).await;
    server.stop().await;
    assert!(
        server.log().contains("kubelet client certificates loaded"),
        "{}",
        server.log()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn privileged_containers_are_refused_without_allow_privileged() {
    let server = common::ApiServer::start(&[]).await;
    let admin = server.admin_client();
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "priv"},
        "spec": {"initContainers": [{"name": "i", "image": "busybox"}],
                 "containers": [{"name": "c", "image": "busybox",
                                 "securityContext": {"privileged": true}}]},
    });
    let (status, body) = post(&admin, "/api/v1/namespaces/default/pods", &pod, &[]).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["message"],
        "Pod \"priv\" is invalid: spec.containers[0].securityContext.privileged: Forbidden: disallowed by cluster policy",
        "{body}"
    );
    // Pod templates are held to it too.
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"a": "b"}},
                 "template": {"metadata": {"labels": {"a": "b"}},
                              "spec": {"containers": [{"name": "c", "image": "busybox",
                                                       "securityContext": {"privileged": true}}]}}},
    });
    let (status, body) = post(
        &admin,
        "/apis/apps/v1/namespaces/default/deployments",
        &deployment,
        &[],
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("spec.template.spec.containers[0].securityContext.privileged: Forbidden: disallowed by cluster policy"),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_and_locked_gates_half_kubelet_client_flags_and_unsafe_to_ignore_flags_stop_the_start()
 {
    for (args, expected) in [
        (
            vec!["--feature-gates=NoSuchGate=true"],
            "Error: unrecognized feature gate: NoSuchGate",
        ),
        (
            vec!["--feature-gates=kube:ConsistentListFromCache=false"],
            "Error: cannot set feature gate ConsistentListFromCache to false, feature is locked to true",
        ),
        (
            vec!["--kubelet-client-certificate=/nonexistent.crt"],
            "Error: --kubelet-client-certificate and --kubelet-client-key must be given together",
        ),
        (
            vec!["--egress-selector-config-file=/etc/kubernetes/egress.yaml"],
            "Error: --egress-selector-config-file is not supported by this server: its outgoing connections cannot go through the configured egress proxies",
        ),
        (
            vec!["--emulated-version=1.33"],
            "Error: --emulated-version=kube=1.33: this server emulates kube 1.35 only",
        ),
    ] {
        let out = common::run_to_exit(&args).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.lines().any(|l| l == expected), "{args:?}: {stderr}");
    }
}
