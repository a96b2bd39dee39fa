//! End-to-end tests: a real server on 127.0.0.1:0, certificates from rcgen in a tempdir, and
//! hyper / h2 clients over tokio-rustls.

use std::net::{SocketAddr, TcpListener as StdTcpListener};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Request as HttpRequest, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, SignatureScheme};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tokio_util::sync::CancellationToken;

use super::dynamic_certs::DynamicCertificates;
use super::tls::TlsBase;
use super::*;
use crate::authn::ClientCaSource;
use crate::body::{Request, Response};
use crate::filters::{HttpService, service_fn};
use crate::request::ConnectionInfo;
use crate::util::webhook::tls::SkipServerVerification;

const DEADLINE: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------------
// certificates

struct TestCa {
    issuer: Issuer<'static, KeyPair>,
    pem: String,
    der: CertificateDer<'static>,
}

impl TestCa {
    fn new(cn: &str) -> Self {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key).unwrap();
        TestCa {
            pem: cert.pem(),
            der: cert.der().clone(),
            issuer: Issuer::new(params, key),
        }
    }

    /// (cert PEM, key PEM) for a leaf with `cn` and `sans`.
    fn issue(&self, cn: &str, sans: &[&str], client: bool) -> (String, String) {
        let key = KeyPair::generate().unwrap();
        let sans: Vec<String> = sans.iter().map(|s| s.to_string()).collect();
        let mut params = CertificateParams::new(sans).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        params.extended_key_usages = vec![if client {
            ExtendedKeyUsagePurpose::ClientAuth
        } else {
            ExtendedKeyUsagePurpose::ServerAuth
        }];
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    fn write_leaf(&self, dir: &Path, name: &str, cn: &str, sans: &[&str]) -> CertKeyFiles {
        let (cert, key) = self.issue(cn, sans, false);
        let files = CertKeyFiles {
            cert: dir.join(format!("{name}.crt")),
            key: dir.join(format!("{name}.key")),
        };
        std::fs::write(&files.cert, cert).unwrap();
        std::fs::write(&files.key, key).unwrap();
        files
    }
}

fn leaf_cn(der: &[u8]) -> String {
    let (_, cert) = x509_parser::parse_x509_certificate(der).unwrap();
    cert.subject()
        .iter_common_name()
        .next()
        .unwrap()
        .as_str()
        .unwrap()
        .to_string()
}

fn subject_raw(der: &[u8]) -> Vec<u8> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).unwrap();
    cert.subject().as_raw().to_vec()
}

// ---------------------------------------------------------------------------------------------
// server side

/// What the test handler reports and how tests steer it.
#[derive(Clone, Default)]
struct Steering {
    started: Arc<Notify>,
    release: Arc<Notify>,
}

fn handler(steer: Steering) -> HttpService {
    service_fn(move |req: Request| {
        let steer = steer.clone();
        async move {
            let info = req
                .extensions()
                .get::<ConnectionInfo>()
                .cloned()
                .expect("ConnectionInfo");
            let mut extra = None;
            match req.uri().path() {
                "/slow" => {
                    steer.started.notify_one();
                    steer.release.notified().await;
                }
                "/close" => info.close_connection.cancel(),
                "/connection-close" => extra = Some(HeaderValue::from_static("close")),
                _ => {}
            }
            let text = format!(
                "{:?} tls={} certs={}",
                req.version(),
                info.tls,
                info.peer_certificates.map(|c| c.len()).unwrap_or(0)
            );
            let mut response = Response::new(crate::body::full(text));
            if let Some(v) = extra {
                response.headers_mut().insert(http::header::CONNECTION, v);
            }
            response
        }
    })
}

fn bound() -> BindAddress {
    BindAddress::Listener(StdTcpListener::bind("127.0.0.1:0").unwrap())
}

struct Fixture {
    dir: tempfile::TempDir,
    ca: TestCa,
    serving: CertKeyFiles,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("test-ca");
    let serving = ca.write_leaf(
        dir.path(),
        "serving",
        "default",
        &["localhost", "127.0.0.1"],
    );
    Fixture { dir, ca, serving }
}

async fn start(info: SecureServingInfo) -> (ServingHandle, CancellationToken, Steering) {
    let stop = CancellationToken::new();
    let steer = Steering::default();
    let handle = serve(
        info,
        handler(steer.clone()),
        stop.clone(),
        Duration::from_secs(20),
    )
    .await
    .unwrap();
    (handle, stop, steer)
}

// ---------------------------------------------------------------------------------------------
// client side

/// Presents a fixed client certificate and records the CA hints the server sent.
#[derive(Debug)]
struct RecordingClientCert {
    key: Arc<rustls::sign::CertifiedKey>,
    hints: Mutex<Vec<Vec<u8>>>,
}

impl rustls::client::ResolvesClientCert for RecordingClientCert {
    fn resolve(
        &self,
        root_hint_subjects: &[&[u8]],
        _: &[SignatureScheme],
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        *self.hints.lock().unwrap() = root_hint_subjects.iter().map(|h| h.to_vec()).collect();
        Some(self.key.clone())
    }

    fn has_certs(&self) -> bool {
        true
    }
}

fn client_cert(cert_pem: &str, key_pem: &str) -> Arc<RecordingClientCert> {
    use rustls::pki_types::pem::PemObject;
    let chain = vec![CertificateDer::from_pem_slice(cert_pem.as_bytes()).unwrap()];
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).unwrap();
    let provider = rustls::crypto::ring::default_provider();
    let key = rustls::sign::CertifiedKey::from_der(chain, key, &provider).unwrap();
    Arc::new(RecordingClientCert {
        key: Arc::new(key),
        hints: Mutex::new(Vec::new()),
    })
}

struct ClientOpts {
    alpn: Vec<&'static [u8]>,
    versions: Vec<&'static rustls::SupportedProtocolVersion>,
    roots: Option<CertificateDer<'static>>,
    client_cert: Option<Arc<RecordingClientCert>>,
}

impl Default for ClientOpts {
    fn default() -> Self {
        ClientOpts {
            alpn: vec![b"h2", b"http/1.1"],
            versions: vec![&rustls::version::TLS13, &rustls::version::TLS12],
            roots: None,
            client_cert: None,
        }
    }
}

fn client_config(opts: &ClientOpts) -> Arc<ClientConfig> {
    let builder =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_protocol_versions(&opts.versions)
            .unwrap();
    let builder = match &opts.roots {
        Some(root) => {
            let mut store = rustls::RootCertStore::empty();
            store.add(root.clone()).unwrap();
            builder.with_root_certificates(store)
        }
        None => builder.dangerous().with_custom_certificate_verifier(
            // Any server certificate (SNI tests look at which one was served); handshake
            // signatures are still checked.
            Arc::new(SkipServerVerification(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))),
        ),
    };
    let mut config = match &opts.client_cert {
        Some(resolver) => builder.with_client_cert_resolver(resolver.clone()),
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = opts.alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

async fn tls_connect(
    addr: SocketAddr,
    server_name: &str,
    opts: &ClientOpts,
) -> std::io::Result<TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(addr).await?;
    let name = ServerName::try_from(server_name.to_string()).unwrap();
    TlsConnector::from(client_config(opts))
        .connect(name, tcp)
        .await
}

fn served_cn(tls: &TlsStream<TcpStream>) -> String {
    leaf_cn(tls.get_ref().1.peer_certificates().unwrap()[0].as_ref())
}

fn alpn(tls: &TlsStream<TcpStream>) -> Option<Vec<u8>> {
    tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec)
}

fn get(path: &str) -> HttpRequest<Empty<Bytes>> {
    HttpRequest::builder()
        .uri(format!("https://localhost{path}"))
        .body(Empty::new())
        .unwrap()
}

async fn h1(tls: TlsStream<TcpStream>) -> hyper::client::conn::http1::SendRequest<Empty<Bytes>> {
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    sender
}

async fn h2(tls: TlsStream<TcpStream>) -> hyper::client::conn::http2::SendRequest<Empty<Bytes>> {
    let (sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
            .await
            .unwrap();
    tokio::spawn(conn);
    sender
}

async fn body_text(response: http::Response<hyper::body::Incoming>) -> String {
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// Polls `check` until it returns true or the deadline passes.
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        if check().await {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

// ---------------------------------------------------------------------------------------------
// tests

#[tokio::test]
async fn alpn_negotiates_h2_and_http11_on_one_port() {
    let f = fixture();
    let (handle, stop, _) = start(SecureServingInfo::new(bound(), f.serving.clone())).await;
    let addr = handle.local_addr();
    let roots = Some(f.ca.der.clone());

    let tls = tls_connect(
        addr,
        "localhost",
        &ClientOpts {
            alpn: vec![b"h2", b"http/1.1"],
            roots: roots.clone(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(alpn(&tls).as_deref(), Some(&b"h2"[..]));
    let mut sender = h2(tls).await;
    let response = sender.send_request(get("/")).await.unwrap();
    assert_eq!(response.version(), http::Version::HTTP_2);
    assert_eq!(body_text(response).await, "HTTP/2.0 tls=true certs=0");

    let tls = tls_connect(
        addr,
        "localhost",
        &ClientOpts {
            alpn: vec![b"http/1.1"],
            roots: roots.clone(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(alpn(&tls).as_deref(), Some(&b"http/1.1"[..]));
    let mut sender = h1(tls).await;
    let response = sender.send_request(get("/")).await.unwrap();
    assert_eq!(body_text(response).await, "HTTP/1.1 tls=true certs=0");

    // No ALPN at all: HTTP/1.1, never sniffed into HTTP/2.
    let tls = tls_connect(
        addr,
        "localhost",
        &ClientOpts {
            alpn: vec![],
            roots,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(alpn(&tls), None);
    let mut sender = h1(tls).await;
    let response = sender.send_request(get("/")).await.unwrap();
    assert_eq!(body_text(response).await, "HTTP/1.1 tls=true certs=0");
    stop.cancel();
    handle.shutdown_complete().await;
}

#[tokio::test]
async fn disable_http2_offers_only_http11() {
    let f = fixture();
    let mut info = SecureServingInfo::new(bound(), f.serving.clone());
    info.disable_http2 = true;
    let (handle, stop, _) = start(info).await;
    let tls = tls_connect(
        handle.local_addr(),
        "localhost",
        &ClientOpts {
            roots: Some(f.ca.der.clone()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(alpn(&tls).as_deref(), Some(&b"http/1.1"[..]));
    stop.cancel();
}

#[tokio::test]
async fn tls_versions() {
    let f = fixture();
    let (handle, stop, _) = start(SecureServingInfo::new(bound(), f.serving.clone())).await;
    let addr = handle.local_addr();
    // TLS 1.2 works by default.
    let tls12 = ClientOpts {
        versions: vec![&rustls::version::TLS12],
        ..Default::default()
    };
    let tls = tls_connect(addr, "localhost", &tls12).await.unwrap();
    assert_eq!(
        tls.get_ref().1.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_2)
    );

    // A TLS 1.1 ClientHello is refused: no ServerHello comes back.
    let mut body = vec![0x03, 0x02];
    body.extend_from_slice(&[7u8; 32]);
    body.extend_from_slice(&[0x00, 0x00, 0x02, 0x00, 0x2f, 0x01, 0x00]);
    let mut handshake = vec![0x01, 0x00, (body.len() >> 8) as u8, body.len() as u8];
    handshake.extend_from_slice(&body);
    let mut record = vec![
        0x16,
        0x03,
        0x01,
        (handshake.len() >> 8) as u8,
        handshake.len() as u8,
    ];
    record.extend_from_slice(&handshake);
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(&record).await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(DEADLINE, tcp.read_to_end(&mut answer))
        .await
        .unwrap();
    assert_ne!(
        answer.first(),
        Some(&0x16),
        "server must not answer with a handshake"
    );
    stop.cancel();

    // Minimum TLS 1.3 refuses TLS 1.2 clients.
    let mut info = SecureServingInfo::new(bound(), f.serving.clone());
    info.min_tls_version = TlsVersion::Tls13;
    let (handle, stop, _) = start(info).await;
    assert!(
        tls_connect(handle.local_addr(), "localhost", &tls12)
            .await
            .is_err()
    );
    let tls = tls_connect(handle.local_addr(), "localhost", &ClientOpts::default())
        .await
        .unwrap();
    assert_eq!(
        tls.get_ref().1.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_3)
    );
    stop.cancel();
}

#[tokio::test]
async fn restricted_cipher_suites_are_honoured() {
    let f = fixture();
    let mut info = SecureServingInfo::new(bound(), f.serving.clone());
    info.cipher_suites = vec!["TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384".to_string()];
    let (handle, stop, _) = start(info).await;
    let tls12 = ClientOpts {
        versions: vec![&rustls::version::TLS12],
        ..Default::default()
    };
    let tls = tls_connect(handle.local_addr(), "localhost", &tls12)
        .await
        .unwrap();
    assert_eq!(
        tls.get_ref().1.negotiated_cipher_suite().unwrap().suite(),
        rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
    );
    stop.cancel();

    let mut info = SecureServingInfo::new(bound(), f.serving.clone());
    info.cipher_suites = vec!["TLS_RSA_WITH_AES_128_CBC_SHA".to_string()];
    let err = serve(
        info,
        handler(Steering::default()),
        CancellationToken::new(),
        Duration::from_secs(1),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, ServeError::UnsupportedCipherSuite(_)),
        "{err}"
    );
}

#[tokio::test]
async fn plain_http_on_tls_port_gets_gos_answer() {
    let f = fixture();
    let (handle, stop, _) = start(SecureServingInfo::new(bound(), f.serving.clone())).await;
    let mut tcp = TcpStream::connect(handle.local_addr()).await.unwrap();
    tcp.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(DEADLINE, tcp.read_to_end(&mut answer))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        answer,
        b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
    );
    stop.cancel();
}

#[tokio::test]
async fn sni_selection() {
    let f = fixture();
    let dir = f.dir.path();
    let wild = f.ca.write_leaf(
        dir,
        "wild",
        "wild",
        &["a.example.com", "*.wild.example.com"],
    );
    let explicit =
        f.ca.write_leaf(dir, "explicit", "explicit", &["b.example.com"]);
    let by_ip = f.ca.write_leaf(dir, "ip", "by-ip", &["ip.example.com"]);
    let mut info = SecureServingInfo::new(bound(), f.serving.clone());
    info.sni_certs = vec![
        SniCertKey {
            cert: wild.cert,
            key: wild.key,
            names: vec![],
        },
        SniCertKey {
            cert: explicit.cert,
            key: explicit.key,
            names: vec!["a.example.com".to_string()],
        },
        SniCertKey {
            cert: by_ip.cert,
            key: by_ip.key,
            names: vec!["127.0.0.1".to_string()],
        },
    ];
    let (handle, stop, _) = start(info).await;
    let addr = handle.local_addr();
    let opts = ClientOpts::default();
    for (name, expected) in [
        ("a.example.com", "explicit"),  // explicit name beats the derived one
        ("A.Example.COM", "explicit"),  // case-insensitive
        ("x.wild.example.com", "wild"), // wildcard of the first label
        ("b.example.com", "default"),   // explicit names suppress derived ones
        ("ip.example.com", "default"),  // explicit names suppress derived ones
        ("wild", "wild"),               // derived from the CN
        ("unknown.example.com", "default"), // fallback
        ("127.0.0.1", "by-ip"),         // no SNI (IP server name): local IP key
    ] {
        let tls = tls_connect(addr, name, &opts).await.unwrap();
        assert_eq!(served_cn(&tls), expected, "{name}");
    }
    stop.cancel();
}

#[tokio::test]
async fn loopback_certificate_is_served_for_its_sni_name() {
    use rustls::pki_types::pem::PemObject;
    let f = fixture();
    let loopback = super::selfsigned::loopback_cert().unwrap();
    // A file SNI certificate claiming the same name loses against the static one.
    let rival =
        f.ca.write_leaf(f.dir.path(), "rival", "rival", &["other.example.com"]);
    let mut info = SecureServingInfo::new(bound(), f.serving.clone());
    info.static_sni_certs = vec![loopback.sni_cert()];
    info.sni_certs = vec![SniCertKey {
        cert: rival.cert,
        key: rival.key,
        names: vec![super::selfsigned::LOOPBACK_SERVER_NAME.to_string()],
    }];
    let (handle, stop, _) = start(info).await;
    let ca = CertificateDer::from_pem_slice(loopback.ca_pem.as_bytes()).unwrap();
    let opts = ClientOpts {
        roots: Some(ca),
        ..Default::default()
    };
    let tls = tls_connect(
        handle.local_addr(),
        super::selfsigned::LOOPBACK_SERVER_NAME,
        &opts,
    )
    .await
    .unwrap();
    assert!(served_cn(&tls).starts_with("apiserver-loopback-client@"));
    // Other names still get the default certificate.
    let tls = tls_connect(handle.local_addr(), "localhost", &ClientOpts::default())
        .await
        .unwrap();
    assert_eq!(served_cn(&tls), "default");
    stop.cancel();
}

#[tokio::test]
async fn serving_cert_reloads_on_file_change_and_open_connections_survive() {
    let f = fixture();
    let mut info = SecureServingInfo::new(bound(), f.serving.clone());
    // Only file-system events can trigger the reload in this test.
    info.cert_refresh_interval = Duration::from_secs(3600);
    let (handle, stop, _) = start(info).await;
    let addr = handle.local_addr();
    let opts = ClientOpts {
        alpn: vec![b"http/1.1"],
        ..Default::default()
    };
    let tls = tls_connect(addr, "localhost", &opts).await.unwrap();
    assert_eq!(served_cn(&tls), "default");
    let mut old = h1(tls).await;
    assert_eq!(
        old.send_request(get("/")).await.unwrap().status(),
        StatusCode::OK
    );

    let (cert, key) = f.ca.issue("second", &["localhost"], false);
    std::fs::write(&f.serving.key, key).unwrap();
    std::fs::write(&f.serving.cert, cert).unwrap();
    eventually("the new serving certificate", || async {
        let tls = tls_connect(addr, "localhost", &opts).await.unwrap();
        served_cn(&tls) == "second"
    })
    .await;
    // The connection opened before the reload still works.
    let response = old.send_request(get("/")).await.unwrap();
    assert_eq!(body_text(response).await, "HTTP/1.1 tls=true certs=0");
    stop.cancel();
}

/// A kubelet-style version directory `<root>/<version>` with a `tls.crt`/`tls.key` pair for
/// `cn`, signed by `ca`.
#[cfg(unix)]
fn write_data_version(root: &std::path::Path, ca: &TestCa, version: &str, cn: &str) {
    let vdir = root.join(version);
    std::fs::create_dir(&vdir).unwrap();
    let (cert, key) = ca.issue(cn, &["localhost"], false);
    std::fs::write(vdir.join("tls.crt"), cert).unwrap();
    std::fs::write(vdir.join("tls.key"), key).unwrap();
}

#[cfg(unix)]
#[tokio::test]
async fn serving_cert_reloads_on_kubernetes_data_symlink_swap() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ca = TestCa::new("test-ca");
    let write_version = |version: &str, cn: &str| write_data_version(root, &ca, version, cn);
    write_version("..2026_v1", "v1");
    symlink("..2026_v1", root.join("..data")).unwrap();
    symlink("..data/tls.crt", root.join("tls.crt")).unwrap();
    symlink("..data/tls.key", root.join("tls.key")).unwrap();
    let files = CertKeyFiles {
        cert: root.join("tls.crt"),
        key: root.join("tls.key"),
    };
    let mut info = SecureServingInfo::new(bound(), files);
    info.cert_refresh_interval = Duration::from_secs(3600);
    let (handle, stop, _) = start(info).await;
    let addr = handle.local_addr();
    let opts = ClientOpts::default();
    assert_eq!(
        served_cn(&tls_connect(addr, "localhost", &opts).await.unwrap()),
        "v1"
    );

    // What the kubelet does: new version dir, temporary symlink, atomic rename over `..data`.
    write_version("..2026_v2", "v2");
    symlink("..2026_v2", root.join("..data_tmp")).unwrap();
    std::fs::rename(root.join("..data_tmp"), root.join("..data")).unwrap();
    std::fs::remove_dir_all(root.join("..2026_v1")).unwrap();
    eventually("the swapped certificate", || async {
        served_cn(&tls_connect(addr, "localhost", &opts).await.unwrap()) == "v2"
    })
    .await;
    stop.cancel();
}

/// The files named through the `..data` link itself (`<dir>/..data/tls.crt`): the swap happens
/// in `<dir>`, which is watched because a link on the way to the files lives there. The old
/// version directory stays, so only the swap can tell the server.
#[cfg(unix)]
#[tokio::test]
async fn serving_cert_named_through_data_link_reloads_within_seconds_of_the_swap() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ca = TestCa::new("test-ca");
    let write_version = |version: &str, cn: &str| write_data_version(root, &ca, version, cn);
    write_version("..2026_v1", "v1");
    symlink("..2026_v1", root.join("..data")).unwrap();
    let files = CertKeyFiles {
        cert: root.join("..data").join("tls.crt"),
        key: root.join("..data").join("tls.key"),
    };
    let mut info = SecureServingInfo::new(bound(), files);
    info.cert_refresh_interval = Duration::from_secs(3600);
    let (handle, stop, _) = start(info).await;
    let addr = handle.local_addr();
    let opts = ClientOpts::default();
    assert_eq!(
        served_cn(&tls_connect(addr, "localhost", &opts).await.unwrap()),
        "v1"
    );
    for (version, cn) in [("..2026_v2", "v2"), ("..2026_v3", "v3")] {
        write_version(version, cn);
        symlink(version, root.join("..data_tmp")).unwrap();
        std::fs::rename(root.join("..data_tmp"), root.join("..data")).unwrap();
        let swapped = std::time::Instant::now();
        eventually("the swapped certificate", || async {
            served_cn(&tls_connect(addr, "localhost", &opts).await.unwrap()) == cn
        })
        .await;
        assert!(swapped.elapsed() < Duration::from_secs(5));
    }
    stop.cancel();
}

#[test]
fn reading_files_is_not_a_change_but_writing_renaming_and_removing_are() {
    use notify::EventKind;
    use notify::event::{AccessKind, AccessMode, CreateKind, ModifyKind, RemoveKind, RenameMode};
    let is_change = super::dynamic_certs::is_change;
    assert!(!is_change(&EventKind::Access(AccessKind::Open(
        AccessMode::Any
    ))));
    assert!(!is_change(&EventKind::Access(AccessKind::Close(
        AccessMode::Read
    ))));
    assert!(is_change(&EventKind::Access(AccessKind::Close(
        AccessMode::Write
    ))));
    assert!(is_change(&EventKind::Create(CreateKind::File)));
    assert!(is_change(&EventKind::Modify(ModifyKind::Name(
        RenameMode::To
    ))));
    assert!(is_change(&EventKind::Remove(RemoveKind::Folder)));
}

#[tokio::test]
async fn broken_files_keep_the_previous_certificate() {
    let f = fixture();
    let base = TlsBase::new(TlsVersion::Tls12, &[], false).unwrap();
    let certs =
        DynamicCertificates::load(Some(f.serving.clone()), vec![], vec![], None, base).unwrap();
    let served =
        |certs: &DynamicCertificates| leaf_cn(certs.default_cert().unwrap().cert[0].as_ref());
    assert_eq!(served(&certs), "default");
    let good_cert = std::fs::read(&f.serving.cert).unwrap();

    // Unparsable certificate, empty certificate, key of another pair: all rejected.
    std::fs::write(
        &f.serving.cert,
        b"-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    assert!(!certs.reload());
    std::fs::write(&f.serving.cert, b"").unwrap();
    assert!(!certs.reload());
    let (_, other_key) = f.ca.issue("other", &["localhost"], false);
    std::fs::write(&f.serving.cert, &good_cert).unwrap();
    std::fs::write(&f.serving.key, other_key).unwrap();
    assert!(!certs.reload());
    assert_eq!(served(&certs), "default");

    // A matching new pair is picked up; unchanged content is a no-op.
    let (cert, key) = f.ca.issue("fixed", &["localhost"], false);
    std::fs::write(&f.serving.cert, cert).unwrap();
    std::fs::write(&f.serving.key, key).unwrap();
    assert!(certs.reload());
    assert_eq!(served(&certs), "fixed");
    assert!(!certs.reload());
}

#[tokio::test]
async fn broken_file_keeps_serving_old_certificate_end_to_end() {
    let f = fixture();
    let mut info = SecureServingInfo::new(bound(), f.serving.clone());
    info.cert_refresh_interval = Duration::from_millis(50);
    let (handle, stop, _) = start(info).await;
    let addr = handle.local_addr();
    std::fs::write(&f.serving.cert, b"garbage").unwrap();
    // Several refresh periods with the broken file: the old certificate keeps being served.
    for _ in 0..5 {
        let tls = tls_connect(addr, "localhost", &ClientOpts::default())
            .await
            .unwrap();
        assert_eq!(served_cn(&tls), "default");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.cancel();
}

#[tokio::test]
async fn client_ca_reload_is_seen_by_the_authenticator_and_advertised() {
    let f = fixture();
    let ca1 = TestCa::new("client-ca-1");
    let ca2 = TestCa::new("client-ca-2");
    let ca_file = f.dir.path().join("client-ca.crt");
    std::fs::write(&ca_file, &ca1.pem).unwrap();
    let source = DynamicClientCa::new(&ca_file);
    assert!(
        source.ca_certificates().is_none(),
        "nothing loaded before serving"
    );
    let mut info = SecureServingInfo::new(bound(), f.serving.clone());
    info.client_ca = Some(source.clone());
    info.cert_refresh_interval = Duration::from_millis(100);
    let (handle, stop, _) = start(info).await;
    let addr = handle.local_addr();
    assert_eq!(
        source.ca_certificates().unwrap().as_slice(),
        std::slice::from_ref(&ca1.der)
    );
    assert!(handle.client_ca().is_some());

    // A client certificate from an untrusted CA still completes the handshake; the handler
    // sees it, and the server advertised the configured CA.
    let untrusted = TestCa::new("untrusted");
    let (cert, key) = untrusted.issue("someone", &[], true);
    let resolver = client_cert(&cert, &key);
    let opts = ClientOpts {
        alpn: vec![b"http/1.1"],
        client_cert: Some(resolver.clone()),
        ..Default::default()
    };
    let tls = tls_connect(addr, "localhost", &opts).await.unwrap();
    assert_eq!(*resolver.hints.lock().unwrap(), vec![subject_raw(&ca1.der)]);
    let mut sender = h1(tls).await;
    let response = sender.send_request(get("/")).await.unwrap();
    assert_eq!(body_text(response).await, "HTTP/1.1 tls=true certs=1");

    std::fs::write(&ca_file, &ca2.pem).unwrap();
    eventually("the reloaded client CA", || async {
        source.ca_certificates().unwrap().as_slice() == [ca2.der.clone()]
    })
    .await;
    tls_connect(addr, "localhost", &opts).await.unwrap();
    assert_eq!(*resolver.hints.lock().unwrap(), vec![subject_raw(&ca2.der)]);
    stop.cancel();
}

#[tokio::test]
async fn graceful_stop_sends_goaway_and_completes_in_flight_requests() {
    let f = fixture();
    let (handle, stop, steer) = start(SecureServingInfo::new(bound(), f.serving.clone())).await;
    let addr = handle.local_addr();
    let tls = tls_connect(
        addr,
        "localhost",
        &ClientOpts {
            alpn: vec![b"h2"],
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let (client, conn) = h2::client::handshake(tls).await.unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut client = client.ready().await.unwrap();
    let (slow, _) = client
        .send_request(
            http::Request::get("https://localhost/slow")
                .body(())
                .unwrap(),
            true,
        )
        .unwrap();
    steer.started.notified().await;

    // An idle HTTP/1.1 connection is closed by the shutdown.
    let tls = tls_connect(
        addr,
        "localhost",
        &ClientOpts {
            alpn: vec![b"http/1.1"],
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let (mut idle_h1, idle_conn) =
        hyper::client::conn::http1::handshake::<_, Empty<Bytes>>(TokioIo::new(tls))
            .await
            .unwrap();
    let idle_task = tokio::spawn(idle_conn);
    assert_eq!(
        idle_h1.send_request(get("/")).await.unwrap().status(),
        StatusCode::OK
    );

    stop.cancel();
    assert!(handle.listener_stopped().await.is_ok());
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "new connections are refused"
    );

    // New streams are refused with GOAWAY.
    eventually("GOAWAY", || {
        let client = client.clone();
        async move {
            match client.ready().await {
                Err(e) => e.is_go_away(),
                Ok(mut c) => match c.send_request(
                    http::Request::get("https://localhost/").body(()).unwrap(),
                    true,
                ) {
                    Err(e) => e.is_go_away(),
                    Ok((resp, _)) => match resp.await {
                        Err(e) => e.is_go_away() || e.reason() == Some(h2::Reason::REFUSED_STREAM),
                        Ok(_) => false,
                    },
                },
            }
        }
    })
    .await;

    // The in-flight request still completes.
    steer.release.notify_one();
    let response = tokio::time::timeout(DEADLINE, slow).await.unwrap().unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body();
    let mut text = Vec::new();
    while let Some(chunk) = body.data().await {
        text.extend_from_slice(&chunk.unwrap());
    }
    assert_eq!(text, b"HTTP/2.0 tls=true certs=0");
    tokio::time::timeout(DEADLINE, handle.shutdown_complete())
        .await
        .unwrap();
    tokio::time::timeout(DEADLINE, idle_task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn shutdown_timeout_ends_the_wait_but_leaves_active_requests_as_gos_shutdown() {
    let f = fixture();
    let stop = CancellationToken::new();
    let steer = Steering::default();
    let info = SecureServingInfo::new(bound(), f.serving.clone());
    let handle = serve(
        info,
        handler(steer.clone()),
        stop.clone(),
        Duration::from_millis(200),
    )
    .await
    .unwrap();
    let tls = tls_connect(
        handle.local_addr(),
        "localhost",
        &ClientOpts {
            alpn: vec![b"http/1.1"],
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let mut sender = h1(tls).await;
    let pending = tokio::spawn(async move { sender.send_request(get("/slow")).await });
    steer.started.notified().await;
    stop.cancel();
    tokio::time::timeout(DEADLINE, handle.shutdown_complete())
        .await
        .unwrap();
    // The listener is closed, the request still runs; released, it completes.
    assert!(TcpStream::connect(handle.local_addr()).await.is_err());
    assert!(!pending.is_finished());
    steer.release.notify_one();
    let response = tokio::time::timeout(DEADLINE, pending)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test]
async fn close_connection_token_and_connection_close_header_send_goaway_on_h2() {
    let f = fixture();
    let (handle, stop, _) = start(SecureServingInfo::new(bound(), f.serving.clone())).await;
    for path in ["/close", "/connection-close"] {
        let tls = tls_connect(
            handle.local_addr(),
            "localhost",
            &ClientOpts {
                alpn: vec![b"h2"],
                ..Default::default()
            },
        )
        .await
        .unwrap();
        let (client, conn) = h2::client::handshake(tls).await.unwrap();
        let conn_task = tokio::spawn(conn);
        let mut ready = client.clone().ready().await.unwrap();
        let (resp, _) = ready
            .send_request(
                http::Request::get(format!("https://localhost{path}"))
                    .body(())
                    .unwrap(),
                true,
            )
            .unwrap();
        let resp = resp.await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK, "{path}");
        assert!(
            resp.headers().get(http::header::CONNECTION).is_none(),
            "{path}"
        );
        // The server closes the connection gracefully: the client connection ends cleanly.
        tokio::time::timeout(DEADLINE, conn_task)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let err = match client.ready().await {
            Err(e) => e,
            Ok(mut c) => c
                .send_request(
                    http::Request::get("https://localhost/").body(()).unwrap(),
                    true,
                )
                .expect_err("no new streams after GOAWAY"),
        };
        assert!(
            err.is_go_away() || err.is_io() || err.to_string().contains("closed"),
            "{path}: {err}"
        );
    }
    stop.cancel();
}

#[tokio::test]
async fn insecure_serving() {
    let stop = CancellationToken::new();
    let handle = serve_insecure(
        bound(),
        handler(Steering::default()),
        stop.clone(),
        Duration::from_secs(5),
    )
    .await
    .unwrap();
    let tcp = TcpStream::connect(handle.local_addr()).await.unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake::<_, Empty<Bytes>>(TokioIo::new(tcp))
            .await
            .unwrap();
    tokio::spawn(conn);
    let response = sender.send_request(get("/")).await.unwrap();
    assert_eq!(body_text(response).await, "HTTP/1.1 tls=false certs=0");
    stop.cancel();
    assert!(handle.listener_stopped().await.is_ok());
    tokio::time::timeout(DEADLINE, handle.shutdown_complete())
        .await
        .unwrap();
}

#[tokio::test]
async fn startup_errors_are_returned_before_serving() {
    let dir = tempfile::tempdir().unwrap();
    let missing = CertKeyFiles {
        cert: dir.path().join("nope.crt"),
        key: dir.path().join("nope.key"),
    };
    let err = serve(
        SecureServingInfo::new(bound(), missing),
        handler(Steering::default()),
        CancellationToken::new(),
        Duration::from_secs(1),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ServeError::Certificate { .. }), "{err}");

    let f = fixture();
    let taken = StdTcpListener::bind("127.0.0.1:0").unwrap();
    let info = SecureServingInfo::new(
        BindAddress::Addr(taken.local_addr().unwrap()),
        f.serving.clone(),
    );
    let err = serve(
        info,
        handler(Steering::default()),
        CancellationToken::new(),
        Duration::from_secs(1),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ServeError::Bind { .. }), "{err}");
}

/// Serves one HTTP/1 connection over an in-memory pipe with short timeouts.
fn h1_over_pipe(
    idle: Duration,
    read_header: Duration,
) -> (tokio::io::DuplexStream, tokio::task::JoinHandle<()>) {
    let shared = Arc::new(
        super::conn::ConnShared::new(handler(Steering::default()), CancellationToken::new(), 100)
            .with_timeouts(idle, read_header),
    );
    let (client_io, server_io) = tokio::io::duplex(64 << 10);
    let server = tokio::spawn(super::conn::serve_connection(
        server_io,
        super::conn::Protocol::Http1,
        ConnectionInfo::local(),
        shared,
    ));
    (client_io, server)
}

#[tokio::test(start_paused = true)]
async fn idle_http1_connections_are_closed_after_the_idle_timeout_not_the_header_timeout() {
    let (client_io, server) = h1_over_pipe(Duration::from_secs(90), Duration::from_secs(32));
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake::<_, Empty<Bytes>>(TokioIo::new(client_io))
            .await
            .unwrap();
    let client = tokio::spawn(conn);
    assert_eq!(
        sender.send_request(get("/")).await.unwrap().status(),
        StatusCode::OK
    );
    // Idle for longer than the header timeout (virtual time): still usable.
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(
        sender.send_request(get("/")).await.unwrap().status(),
        StatusCode::OK
    );
    let idle_from = tokio::time::Instant::now();
    // With no request in flight, the server closes the connection after the idle timeout.
    server.await.unwrap();
    client.await.unwrap().unwrap();
    let idle_for = idle_from.elapsed();
    assert!(
        idle_for >= Duration::from_secs(90) && idle_for < Duration::from_secs(91),
        "{idle_for:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn slow_request_heads_are_cut_off() {
    // The first request head must arrive within the header timeout of the connection start.
    let (mut client_io, server) = h1_over_pipe(Duration::from_secs(90), Duration::from_secs(32));
    let started = tokio::time::Instant::now();
    client_io
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    server.await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_secs(32) && started.elapsed() < Duration::from_secs(33)
    );

    // After an idle period, the timer starts with the first byte of the next head.
    let (mut client_io, server) = h1_over_pipe(Duration::from_secs(90), Duration::from_secs(32));
    client_io
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = vec![0u8; 4096];
    let n = client_io.read(&mut buf).await.unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200 OK"));
    tokio::time::sleep(Duration::from_secs(60)).await;
    let partial_at = tokio::time::Instant::now();
    client_io.write_all(b"GET / HT").await.unwrap();
    server.await.unwrap();
    let waited = partial_at.elapsed();
    assert!(
        waited >= Duration::from_secs(32) && waited < Duration::from_secs(33),
        "{waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_silent_tls_client_is_cut_off_at_the_read_header_timeout_of_32s() {
    let f = fixture();
    let certs = DynamicCertificates::load(
        Some(f.serving.clone()),
        Vec::new(),
        Vec::new(),
        None,
        TlsBase::new(TlsVersion::default(), &[], false).unwrap(),
    )
    .unwrap();
    let shared = Arc::new(super::conn::ConnShared::new(
        handler(Steering::default()),
        CancellationToken::new(),
        100,
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let local = listener.local_addr().unwrap();
    // Connected, and then not a byte: neither a ClientHello nor a close.
    let _client = TcpStream::connect(local).await.unwrap();
    let (stream, remote) = listener.accept().await.unwrap();
    let started = tokio::time::Instant::now();
    super::server::serve_tls_connection(stream, remote, local, certs, shared).await;
    let waited = started.elapsed();
    assert!(
        waited >= READ_HEADER_TIMEOUT && waited < READ_HEADER_TIMEOUT + Duration::from_secs(1),
        "{waited:?}"
    );
    assert_eq!(TLS_HANDSHAKE_TIMEOUT, Duration::from_secs(32));
}
