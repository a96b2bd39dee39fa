//! Secure serving of the real binary: `--disable-http2-serving` (ALPN offers only HTTP/1.1,
//! kubectl still works) and `apiserver_tls_handshake_errors_total`, counted for every failed
//! handshake as upstream counts Go's `http: TLS handshake error` lines.

mod common;

use common::client::Proto;
use common::{ApiServer, eventually, run_tool};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The value of `apiserver_tls_handshake_errors_total` on `/metrics`.
async fn handshake_errors(server: &ApiServer) -> u64 {
    let reply = server
        .admin_client()
        .get(Proto::H1, "/metrics")
        .await
        .unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply
        .body
        .lines()
        .find_map(|l| l.strip_prefix("apiserver_tls_handshake_errors_total "))
        .unwrap_or_else(|| panic!("no handshake error counter in {}", reply.body))
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn failed_tls_handshakes_are_counted_and_http2_can_be_disabled() {
    let mut server = ApiServer::start(&["--disable-http2-serving", "--goaway-chance=0.02"]).await;
    let before = handshake_errors(&server).await;

    // 1. Connected and closed without a byte (a load balancer's TCP probe): Go's "EOF".
    drop(TcpStream::connect(server.addr).await.unwrap());
    // 2. Plain HTTP on the TLS port: Go's 400, and a handshake error.
    let mut plain = TcpStream::connect(server.addr).await.unwrap();
    plain
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    plain.read_to_string(&mut answer).await.unwrap();
    assert_eq!(
        answer,
        "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
    );
    // 3. Not TLS at all.
    let mut garbage = TcpStream::connect(server.addr).await.unwrap();
    garbage
        .write_all(b"\x00\x01\x02\x03\x04\x05")
        .await
        .unwrap();
    let _ = garbage.read(&mut [0u8; 16]).await;
    // 4. A client that only speaks HTTP/2, refused in ALPN with HTTP/2 disabled.
    let admin = server.admin_client();
    assert!(admin.connect_tls(Proto::H2).await.is_err());

    eventually("4 more handshake errors", || {
        let server = &server;
        async move { (handshake_errors(server).await == before + 4).then_some(()) }
    })
    .await;

    // HTTP/1.1 is served, and client-go (offering h2 and http/1.1) settles on it.
    let reply = admin.get(Proto::H1, "/version").await.unwrap();
    assert_eq!(reply.status, 200);
    assert_eq!(reply.version, http::Version::HTTP_11);
    let home = tempfile::tempdir().unwrap();
    let kubeconfig = server.kubeconfig();
    let out = run_tool(
        "kubectl-1.35",
        home.path(),
        &[
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "get",
            "--raw",
            "/version",
        ],
    )
    .await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stdout.contains("\"gitVersion\""), "{}", out.stdout);
    // Successful handshakes are not counted.
    assert_eq!(handshake_errors(&server).await, before + 4);
    server.stop().await;
}
