//! Secure serving (upstream `SecureServingInfo.Serve` + `RunServer`): TLS per connection with
//! the current dynamic configuration, ALPN-selected HTTP version, Go's answer to plain HTTP.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::LazyConfigAcceptor;
use tokio_util::sync::CancellationToken;

use super::accept::{self, ConnectionFn, ServingHandle};
use super::conn::{ConnShared, Protocol, serve_connection};
use super::dynamic_certs::DynamicCertificates;
use super::tls::TlsBase;
use super::{SecureServingInfo, ServeError};
use crate::filters::HttpService;
use crate::request::ConnectionInfo;
use crate::util::klog::V5;

/// What Go's TLS server writes when the first bytes look like an HTTP request.
const PLAIN_HTTP_RESPONSE: &[u8] =
    b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";

/// The first five bytes Go recognises as HTTP (`tlsRecordHeaderLooksLikeHTTP`).
fn looks_like_http(header: &[u8]) -> bool {
    matches!(header, b"GET /" | b"HEAD " | b"POST " | b"PUT /" | b"OPTIO")
}

/// Starts secure serving: loads the certificates (errors here are returned before anything is
/// served), binds, and runs the accept loop in the background until `stop` fires. Then the
/// listener closes, connections are shut down gracefully (HTTP/2 GOAWAY, idle HTTP/1 closed,
/// in-flight requests complete) and whatever is left at `shutdown_timeout` is cut off.
pub async fn serve(
    info: SecureServingInfo,
    handler: HttpService,
    stop: CancellationToken,
    shutdown_timeout: Duration,
) -> Result<ServingHandle, ServeError> {
    let h2_max_streams = info.http2_max_streams();
    let base = TlsBase::new(
        info.min_tls_version,
        &info.cipher_suites,
        info.disable_http2,
    )?;
    let certs = DynamicCertificates::load(
        info.serving_cert,
        info.static_sni_certs,
        info.sni_certs,
        info.client_ca,
        base,
    )?;
    let listener = accept::bind(info.bind).await?;
    certs.spawn_reloader(info.cert_refresh_interval, stop.clone());
    let shared = Arc::new(ConnShared::new(handler, stop.clone(), h2_max_streams));
    let client_ca = certs.client_ca();
    let on_connection: ConnectionFn = Arc::new(move |stream, remote, local| {
        Box::pin(serve_tls_connection(
            stream,
            remote,
            local,
            certs.clone(),
            shared.clone(),
        ))
    });
    accept::spawn(listener, on_connection, stop, shutdown_timeout, client_ca)
}

/// A failed handshake, as Go's server reports it (`http: TLS handshake error from …`): upstream
/// logs these lines at V(5) only and counts them in `apiserver_tls_handshake_errors_total`.
fn handshake_error(remote: SocketAddr, reason: &dyn std::fmt::Display) {
    tracing::info!(target: V5, "http: TLS handshake error from {remote}: {reason}");
    crate::metrics::tls_handshake_error();
}

pub(super) async fn serve_tls_connection(
    stream: TcpStream,
    remote: SocketAddr,
    local: SocketAddr,
    certs: Arc<DynamicCertificates>,
    shared: Arc<ConnShared>,
) {
    // Go's server gives the handshake its shortest read/write timeout: ReadHeaderTimeout.
    let deadline = Instant::now() + shared.read_header_timeout();
    let tls = tokio::time::timeout_at(deadline, handshake(stream, local, &certs)).await;
    let tls = match tls {
        Ok(Ok(tls)) => tls,
        Ok(Err(reason)) => return handshake_error(remote, &reason),
        // Go's error for a deadline hit while reading the ClientHello or handshaking.
        Err(_) => {
            let reason = format!("read tcp {local}->{remote}: i/o timeout");
            return handshake_error(remote, &reason);
        }
    };
    let (_, session) = tls.get_ref();
    let protocol = match session.alpn_protocol() {
        Some(b"h2") => Protocol::Http2,
        _ => Protocol::Http1,
    };
    let peer_certificates = session.peer_certificates().map(|c| Arc::new(c.to_vec()));
    let info = ConnectionInfo {
        remote_addr: Some(remote),
        local_addr: Some(local),
        tls: true,
        peer_certificates,
        close_connection: CancellationToken::new(),
    };
    serve_connection(tls, protocol, info, shared).await;
}

/// Why a handshake failed, worded as Go's handshake errors are.
#[derive(Debug, thiserror::Error)]
enum HandshakeError {
    /// The peer closed before a complete ClientHello.
    #[error("EOF")]
    Eof,
    /// Plain HTTP on the TLS port (answered with Go's 400 first).
    #[error("client sent an HTTP request to an HTTPS server")]
    PlainHttp,
    /// Something else than TLS.
    #[error("tls: first record does not look like a TLS handshake")]
    NotTls,
    /// The TLS handshake itself failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Reads the ClientHello and completes the handshake with the current configuration.
async fn handshake(
    stream: TcpStream,
    local: SocketAddr,
    certs: &DynamicCertificates,
) -> Result<tokio_rustls::server::TlsStream<TcpStream>, HandshakeError> {
    let mut first = [0u8; 1];
    if stream.peek(&mut first).await? == 0 {
        return Err(HandshakeError::Eof);
    }
    // 0x16: a TLS handshake record.
    if first[0] != 0x16 {
        return Err(reject_plain(stream).await);
    }
    let start = LazyConfigAcceptor::new(rustls::server::Acceptor::default(), stream)
        .await
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => HandshakeError::Eof,
            _ => HandshakeError::Io(e),
        })?;
    let config = certs.config_for(Some(local.ip()));
    Ok(start.into_stream(config).await?)
}

/// Answers a plain-HTTP request on the TLS port like Go does, then closes.
async fn reject_plain(mut stream: TcpStream) -> HandshakeError {
    let mut header = [0u8; 5];
    if stream.read_exact(&mut header).await.is_err() {
        return HandshakeError::Eof;
    }
    if !looks_like_http(&header) {
        return HandshakeError::NotTls;
    }
    if stream.write_all(PLAIN_HTTP_RESPONSE).await.is_err() {
        return HandshakeError::PlainHttp;
    }
    let _ = stream.shutdown().await;
    // Drain what the client still sends so closing does not reset the connection before
    // the client has read the answer.
    let mut sink = [0u8; 4096];
    let drain = async {
        while let Ok(n) = stream.read(&mut sink).await {
            if n == 0 {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), drain).await;
    HandshakeError::PlainHttp
}
