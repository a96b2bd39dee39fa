//! Black-box tests of certificate handling through the full server (spec §3.2–§3.4): serving
//! certificate reload, client CA reload, SNI selection, and plain HTTP on the TLS port.

mod common;

use std::time::Duration;

use apiserver::server::serving::SniCertKey;
use common::*;
use http::{Method, StatusCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const DEADLINE: Duration = Duration::from_secs(30);
const REFRESH: Duration = Duration::from_millis(100);

async fn served_cert(client: &Client) -> Vec<u8> {
    client.peer_certificate().await.expect("handshake")
}

/// Replaces a key pair's files: key first, then certificate.
fn write_pair(dir: &std::path::Path, pem: &Pem) {
    std::fs::write(dir.join("serving.key"), &pem.key).unwrap();
    std::fs::write(dir.join("serving.crt"), &pem.cert).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serving_certificate_reloads_keeps_open_connections_and_ignores_broken_files() {
    let mut server = TestServerBuilder::new()
        .configure(|c, _| {
            c.secure_serving.as_mut().unwrap().cert_refresh_interval = REFRESH;
        })
        .start()
        .await;
    let client = server.admin_client();
    let original = served_cert(&client).await;
    let mut open = client.connect(Proto::H2).await.unwrap();
    let mut open_h1 = client.connect(Proto::H1).await.unwrap();

    // A new valid pair is picked up by new handshakes.
    let second = server
        .ca
        .serving("localhost-2", &["localhost", "127.0.0.1"]);
    write_pair(server.dir.path(), &second);
    let want = second.cert_der();
    eventually(DEADLINE, "the new serving certificate", || {
        let client = client.clone();
        let want = want.clone();
        async move { client.peer_certificate().await.ok() == Some(want) }
    })
    .await;
    assert_ne!(original, want);
    // Connections opened before the change keep working.
    for conn in [&mut open, &mut open_h1] {
        let reply = conn
            .send(client.request(Method::GET, "/healthz", ""))
            .await
            .unwrap();
        assert_eq!((reply.status, reply.body.as_str()), (StatusCode::OK, "ok"));
    }
    let reply = client.get(Proto::H2, "/version").await.unwrap();
    assert_eq!(reply.status, StatusCode::OK);

    // A broken replacement keeps the previous certificate: observe several refresh periods.
    std::fs::write(server.dir.path().join("serving.crt"), "not a certificate").unwrap();
    let observe_until = tokio::time::Instant::now() + REFRESH * 10;
    while tokio::time::Instant::now() < observe_until {
        assert_eq!(served_cert(&client).await, want);
        tokio::time::sleep(REFRESH / 2).await;
    }
    // An empty file is rejected as well.
    std::fs::write(server.dir.path().join("serving.crt"), "").unwrap();
    let observe_until = tokio::time::Instant::now() + REFRESH * 5;
    while tokio::time::Instant::now() < observe_until {
        assert_eq!(served_cert(&client).await, want);
        tokio::time::sleep(REFRESH / 2).await;
    }

    // Fixing the file is picked up again.
    let third = server
        .ca
        .serving("localhost-3", &["localhost", "127.0.0.1"]);
    write_pair(server.dir.path(), &third);
    let want = third.cert_der();
    eventually(DEADLINE, "the third serving certificate", || {
        let client = client.clone();
        let want = want.clone();
        async move { client.peer_certificate().await.ok() == Some(want) }
    })
    .await;
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_signed_by_new_ca_is_rejected_until_the_client_ca_file_includes_it() {
    let mut server = TestServerBuilder::new()
        .anonymous(false)
        .configure(|c, _| {
            c.secure_serving.as_mut().unwrap().cert_refresh_interval = REFRESH;
        })
        .start()
        .await;
    let new_ca = Ca::new("new-client-ca");
    let carol = new_ca.client("carol", &["team"]);
    let carol_client = server.client().with_identity(&carol.cert, &carol.key);
    for proto in [Proto::H1, Proto::H2] {
        let reply = carol_client.get(proto, "/version").await.unwrap();
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    }

    let bundle = format!("{}{}", server.ca.pem.cert, new_ca.pem.cert);
    std::fs::write(server.dir.path().join("client-ca.crt"), bundle).unwrap();
    eventually(DEADLINE, "the new client CA to be trusted", || {
        let client = carol_client.clone();
        async move {
            matches!(client.get(Proto::H1, "/version").await, Ok(r) if r.status == StatusCode::OK)
        }
    })
    .await;
    let reply = carol_client.get(Proto::H2, "/version").await.unwrap();
    assert_eq!(reply.status, StatusCode::OK);
    // The old CA is still in the bundle.
    let reply = server
        .admin_client()
        .get(Proto::H2, "/version")
        .await
        .unwrap();
    assert_eq!(reply.status, StatusCode::OK);

    // Dropping the old CA from the file makes its clients anonymous, i.e. 401 here.
    std::fs::write(server.dir.path().join("client-ca.crt"), &new_ca.pem.cert).unwrap();
    let admin = server.admin_client();
    eventually(DEADLINE, "the old client CA to be dropped", || {
        let client = admin.clone();
        async move {
            matches!(client.get(Proto::H1, "/version").await,
                Ok(r) if r.status == StatusCode::UNAUTHORIZED)
        }
    })
    .await;
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sni_certificates_are_selected_by_server_name() {
    let ca = std::sync::Arc::new(Ca::new("sni-ca"));
    let derived = ca.serving(
        "sni.example.com",
        &["sni.example.com", "*.wild.example.com"],
    );
    let explicit = ca.serving("explicit", &["alias.test", "other.test"]);
    let (derived_der, explicit_der) = (derived.cert_der(), explicit.cert_der());
    let mut server = TestServerBuilder::new()
        .configure(move |c, pki| {
            let write = |name: &str, pem: &Pem| {
                let cert = pki.dir.path().join(format!("{name}.crt"));
                let key = pki.dir.path().join(format!("{name}.key"));
                std::fs::write(&cert, &pem.cert).unwrap();
                std::fs::write(&key, &pem.key).unwrap();
                (cert, key)
            };
            let (cert, key) = write("derived", &derived);
            let derived = SniCertKey {
                cert,
                key,
                names: vec![],
            };
            let (cert, key) = write("explicit", &explicit);
            let explicit = SniCertKey {
                cert,
                key,
                names: vec!["alias.test".into()],
            };
            c.secure_serving.as_mut().unwrap().sni_certs = vec![derived, explicit];
        })
        .start()
        .await;
    let default_der = served_cert(&server.client()).await;
    let sni_client = |name: &str| {
        Client::new(server.addr, &ca.pem.cert, name)
            .with_identity(&server.admin.cert, &server.admin.key)
    };

    assert_eq!(
        served_cert(&sni_client("sni.example.com")).await,
        derived_der
    );
    assert_eq!(
        served_cert(&sni_client("SNI.Example.COM")).await,
        derived_der
    );
    assert_eq!(
        served_cert(&sni_client("a.wild.example.com")).await,
        derived_der
    );
    assert_eq!(served_cert(&sni_client("alias.test")).await, explicit_der);
    // Explicit names replace the derived ones: `other.test` is not served by that certificate
    // (it gets the default one, which this client does not trust).
    assert!(sni_client("other.test").peer_certificate().await.is_err());
    let fallback = server.client().with_server_name("localhost");
    assert_eq!(served_cert(&fallback).await, default_der);
    assert_ne!(default_der, derived_der);

    // Requests work over the SNI certificate, on both protocols.
    for proto in [Proto::H1, Proto::H2] {
        let reply = sni_client("sni.example.com")
            .get(proto, "/version")
            .await
            .unwrap();
        assert_eq!(reply.status, StatusCode::OK);
    }
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_on_the_tls_port_gets_the_go_400_text() {
    let mut server = TestServerBuilder::new().start().await;
    let mut tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    tcp.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(DEADLINE, tcp.read_to_end(&mut response))
        .await
        .expect("the server closes the connection")
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&response),
        "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
    );
    // The server keeps serving TLS.
    let reply = server.client().get(Proto::H2, "/healthz").await.unwrap();
    assert_eq!(reply.status, StatusCode::OK);
    server.shutdown().await.unwrap();
}
