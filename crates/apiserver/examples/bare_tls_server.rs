//! The baseline of `scripts/bench.sh`: a bare hyper server (HTTP/1.1 and HTTP/2 chosen by
//! ALPN) behind tokio-rustls that answers `ok` to every request, with none of the API
//! server's filters.
//!
//! Usage: `bare_tls_server <cert.pem> <key.pem> [addr]` (addr defaults to `127.0.0.1:0`);
//! prints `listening on <addr>` once it accepts connections.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn tls_config(cert: &str, key: &str) -> Result<rustls::ServerConfig, BoxError> {
    let certs = CertificateDer::pem_file_iter(cert)?.collect::<Result<Vec<_>, _>>()?;
    let key = PrivateKeyDer::from_pem_file(key)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(cert), Some(key)) = (args.get(1), args.get(2)) else {
        return Err("usage: bare_tls_server <cert.pem> <key.pem> [addr]".into());
    };
    let addr = args.get(3).map(String::as_str).unwrap_or("127.0.0.1:0");
    let acceptor = TlsAcceptor::from(Arc::new(tls_config(cert, key)?));
    let listener = TcpListener::bind(addr).await?;
    println!("listening on {}", listener.local_addr()?);

    loop {
        let (tcp, _) = listener.accept().await?;
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(tcp).await else {
                return;
            };
            let service = service_fn(|_req| async {
                Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::from_static(b"ok"))))
            });
            let _ = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(tls), service)
                .await;
        });
    }
}
