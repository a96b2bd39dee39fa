//! The connection to a remote API server: TLS verified against the APIService's `caBundle`
//! for the name `<service>.<namespace>.svc` (or not verified with `insecureSkipTLSVerify`),
//! presenting the proxy client certificate, speaking HTTP/1.1 (so upgrades can be spliced).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use apiserver::body::Body;
use apiserver::util::webhook::tls::SkipServerVerification;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore};

/// How long dialing and the TLS handshake may take (upstream's dialer timeout).
const DIAL_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a transport could not be built or a connection not be made.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// The proxy client certificate or key could not be loaded.
    #[error("loading the proxy client certificate: {0}")]
    ClientCert(String),
    /// The caBundle holds no usable certificate.
    #[error("invalid caBundle: {0}")]
    CaBundle(String),
    /// rustls refused the configuration.
    #[error("{0}")]
    Tls(String),
    /// Dialing failed (Go's wording: `dial tcp <addr>: connect: connection refused`).
    #[error("dial tcp {addr}: {reason}")]
    Dial {
        /// `host:port`.
        addr: String,
        /// Why.
        reason: String,
    },
    /// The TLS handshake or the HTTP handshake failed.
    #[error("{0}")]
    Handshake(String),
}

/// The files of `--proxy-client-cert-file` and `--proxy-client-key-file`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProxyClientCertFiles {
    /// The certificate (chain), PEM.
    pub cert: PathBuf,
    /// The private key, PEM.
    pub key: PathBuf,
}

type Identity = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

fn load_identity(files: &ProxyClientCertFiles) -> Result<Identity, TransportError> {
    let err = |e: &dyn std::fmt::Display| TransportError::ClientCert(e.to_string());
    let certs = CertificateDer::pem_file_iter(&files.cert)
        .map_err(|e| err(&e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| err(&e))?;
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| err(&e))?;
    Ok((certs, key))
}

/// The TLS client configuration for one APIService.
pub fn client_config(
    ca_bundle: &[u8],
    insecure_skip_tls_verify: bool,
    client_cert: Option<&ProxyClientCertFiles>,
) -> Result<Arc<ClientConfig>, TransportError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TransportError::Tls(e.to_string()))?;
    let builder = if insecure_skip_tls_verify {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(SkipServerVerification(provider)))
    } else {
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(ca_bundle) {
            let cert = cert.map_err(|e| TransportError::CaBundle(e.to_string()))?;
            roots
                .add(cert)
                .map_err(|e| TransportError::CaBundle(e.to_string()))?;
        }
        builder.with_root_certificates(roots)
    };
    let mut config = match client_cert {
        Some(files) => {
            let (certs, key) = load_identity(files)?;
            builder
                .with_client_auth_cert(certs, key)
                .map_err(|e| TransportError::ClientCert(e.to_string()))?
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Go's wording of a dial error.
fn dial_reason(err: &std::io::Error) -> String {
    match err.kind() {
        std::io::ErrorKind::ConnectionRefused => "connect: connection refused".into(),
        std::io::ErrorKind::TimedOut => "i/o timeout".into(),
        _ => err.to_string(),
    }
}

/// Opens an HTTP/1.1 connection over TLS to `host:port`, verifying the server as
/// `server_name`. The connection is driven by a spawned task (with upgrades enabled).
pub async fn connect(
    host: &str,
    port: u16,
    tls: Arc<ClientConfig>,
    server_name: &str,
) -> Result<SendRequest<Body>, TransportError> {
    let addr = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let dial = |reason: String| TransportError::Dial {
        addr: addr.clone(),
        reason,
    };
    let tcp = tokio::time::timeout(DIAL_TIMEOUT, tokio::net::TcpStream::connect((host, port)))
        .await
        .map_err(|_| dial("i/o timeout".into()))?
        .map_err(|e| dial(dial_reason(&e)))?;
    let _ = tcp.set_nodelay(true);
    let name = ServerName::try_from(server_name.to_string())
        .map_err(|e| TransportError::Handshake(e.to_string()))?;
    let stream = tokio::time::timeout(
        DIAL_TIMEOUT,
        tokio_rustls::TlsConnector::from(tls).connect(name, tcp),
    )
    .await
    .map_err(|_| TransportError::Handshake("net/http: TLS handshake timeout".into()))?
    .map_err(|e| TransportError::Handshake(format!("tls: {e}")))?;
    let (sender, conn) = hyper::client::conn::http1::Builder::new()
        .handshake::<_, Body>(TokioIo::new(stream))
        .await
        .map_err(|e| TransportError::Handshake(e.to_string()))?;
    tokio::spawn(async move {
        if let Err(err) = conn.with_upgrades().await {
            tracing::debug!("connection to an aggregated API server ended: {err}");
        }
    });
    Ok(sender)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs() {
        assert!(client_config(b"", true, None).is_ok());
        assert!(client_config(b"", false, None).is_ok());
        assert!(matches!(
            client_config(
                b"-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n",
                false,
                None
            ),
            Err(TransportError::CaBundle(_))
        ));
        let missing = ProxyClientCertFiles {
            cert: "/nonexistent/cert".into(),
            key: "/nonexistent/key".into(),
        };
        assert!(matches!(
            client_config(b"", true, Some(&missing)),
            Err(TransportError::ClientCert(_))
        ));
    }

    #[tokio::test]
    async fn dial_errors_read_like_go() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let tls = client_config(b"", true, None).unwrap();
        let err = connect("127.0.0.1", port, tls, "api.ns.svc")
            .await
            .err()
            .unwrap();
        assert_eq!(
            err.to_string(),
            format!("dial tcp 127.0.0.1:{port}: connect: connection refused")
        );
    }
}
