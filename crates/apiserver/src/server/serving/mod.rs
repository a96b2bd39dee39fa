//! Secure (TLS) and insecure serving: the listener, TLS with dynamically reloaded certificates,
//! SNI, client-certificate requests, HTTP/1.1 + HTTP/2 and graceful shutdown
//! (upstream `pkg/server/secure_serving.go`, `deprecated_insecure_serving.go` and
//! `pkg/server/dynamiccertificates`).
//!
//! Entry points: [`serve`] (TLS) and [`serve_insecure`] (plain HTTP/1.1). Both return a
//! [`ServingHandle`]. [`selfsigned::ensure_pki`] and [`kubeconfig::write_admin_kubeconfig`]
//! provide the embedded default PKI.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

mod accept;
mod conn;
pub(crate) mod dynamic_certs;
mod insecure;
pub mod kubeconfig;
mod linger;
pub mod selfsigned;
mod server;
mod sni;
mod tls;

#[cfg(test)]
mod tests;

pub use accept::{ListenerError, ServingHandle};
pub use dynamic_certs::DynamicClientCa;
pub use insecure::{InsecureHandle, serve_insecure};
pub use server::serve;
pub use tls::TlsVersion;

/// Go's `MaxHeaderBytes` of the apiserver (`1 << 20`).
pub const MAX_HEADER_BYTES: usize = 1 << 20;
/// Go's `ReadHeaderTimeout` of the apiserver.
pub const READ_HEADER_TIMEOUT: Duration = Duration::from_secs(32);
/// Go's `IdleTimeout` of the apiserver.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// The TCP keep-alive period of upstream's `tcpKeepAliveListener`.
pub const TCP_KEEPALIVE: Duration = Duration::from_secs(180);
/// HTTP/2 streams per connection when `--http2-max-streams-per-connection` is 0.
pub const DEFAULT_HTTP2_MAX_STREAMS: u32 = 100;
/// How often certificate files are re-read even without a file-system event.
pub const DEFAULT_CERT_REFRESH: Duration = Duration::from_secs(60);
/// One deadline for reading the ClientHello and completing the TLS handshake: Go's server
/// uses its `ReadHeaderTimeout` there.
pub const TLS_HANDSHAKE_TIMEOUT: Duration = READ_HEADER_TIMEOUT;

/// Where to listen.
#[derive(Debug)]
pub enum BindAddress {
    /// Bind this address (port 0 picks a free port).
    Addr(SocketAddr),
    /// An already bound listener (tests bind port 0 and learn the port first).
    Listener(std::net::TcpListener),
}

/// A certificate chain and its private key, as PEM files on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertKeyFiles {
    /// PEM certificate chain, leaf first.
    pub cert: PathBuf,
    /// PEM private key (PKCS#1, PKCS#8 or SEC1).
    pub key: PathBuf,
}

/// One `--tls-sni-cert-key cert,key[:name1,name2]` value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SniCertKey {
    /// PEM certificate chain, leaf first.
    pub cert: PathBuf,
    /// PEM private key.
    pub key: PathBuf,
    /// Explicit SNI names; when empty, names are derived from the certificate (CN + DNS SANs).
    pub names: Vec<String>,
}

impl SniCertKey {
    /// Parses the `--tls-sni-cert-key` syntax `cert,key` or `cert,key:name1,name2`.
    pub fn parse(value: &str) -> Result<Self, ServeError> {
        let invalid = || ServeError::InvalidSniCertKey(value.to_string());
        let (files, names) = match value.split_once(':') {
            Some((files, names)) => (files, names),
            None => (value, ""),
        };
        let (cert, key) = files.split_once(',').ok_or_else(invalid)?;
        let (cert, key) = (cert.trim(), key.trim());
        if cert.is_empty() || key.is_empty() || key.contains(',') {
            return Err(invalid());
        }
        let names = names
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .collect();
        Ok(SniCertKey {
            cert: PathBuf::from(cert),
            key: PathBuf::from(key),
            names,
        })
    }
}

/// An SNI certificate held in memory (upstream's static SNI provider), e.g. the loopback
/// certificate served for `apiserver-loopback-client`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaticSniCert {
    /// PEM certificate chain, leaf first.
    pub cert_pem: Vec<u8>,
    /// PEM private key.
    pub key_pem: Vec<u8>,
    /// Explicit SNI names; when empty, names are derived from the certificate.
    pub names: Vec<String>,
}

/// The configuration of the secure (TLS) listener (upstream `SecureServingInfo`).
#[derive(Debug)]
pub struct SecureServingInfo {
    /// Where to listen.
    pub bind: BindAddress,
    /// The default serving certificate (used when no SNI certificate matches). With none, the
    /// first SNI certificate is the fallback, as upstream.
    pub serving_cert: Option<CertKeyFiles>,
    /// In-memory SNI certificates. They come before `sni_certs` (upstream prepends the
    /// loopback certificate), so they win for the same name.
    pub static_sni_certs: Vec<StaticSniCert>,
    /// SNI certificates, in flag order (earlier ones win for the same name).
    pub sni_certs: Vec<SniCertKey>,
    /// The client CA bundle: when set, TLS requests (never requires) a client certificate and
    /// advertises these CAs; the handle is kept up to date as the file changes.
    pub client_ca: Option<DynamicClientCa>,
    /// Minimum TLS version (TLS 1.2 by default).
    pub min_tls_version: TlsVersion,
    /// Go/IANA cipher suite names for TLS 1.2 (empty = defaults; TLS 1.3 suites are always on).
    pub cipher_suites: Vec<String>,
    /// HTTP/2 `MaxConcurrentStreams`; 0 means [`DEFAULT_HTTP2_MAX_STREAMS`].
    pub http2_max_streams_per_connection: u32,
    /// Offer only `http/1.1` in ALPN.
    pub disable_http2: bool,
    /// How often certificate files are re-read besides file-system events.
    pub cert_refresh_interval: Duration,
}

impl SecureServingInfo {
    /// A configuration with upstream defaults serving `serving_cert` on `bind`.
    pub fn new(bind: BindAddress, serving_cert: CertKeyFiles) -> Self {
        SecureServingInfo {
            bind,
            serving_cert: Some(serving_cert),
            static_sni_certs: Vec::new(),
            sni_certs: Vec::new(),
            client_ca: None,
            min_tls_version: TlsVersion::default(),
            cipher_suites: Vec::new(),
            http2_max_streams_per_connection: 0,
            disable_http2: false,
            cert_refresh_interval: DEFAULT_CERT_REFRESH,
        }
    }

    /// The effective HTTP/2 stream limit.
    pub fn http2_max_streams(&self) -> u32 {
        if self.http2_max_streams_per_connection > 0 {
            self.http2_max_streams_per_connection
        } else {
            DEFAULT_HTTP2_MAX_STREAMS
        }
    }
}

/// Why serving could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Binding the listener failed.
    #[error("failed to listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Another I/O error while setting up the listener.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// Neither a serving certificate nor an SNI certificate is configured.
    #[error("no serving certificate configured")]
    NoCertificate,
    /// A certificate, key or CA file could not be loaded.
    #[error("{name}: {message}")]
    Certificate {
        /// The provider name, e.g. `serving-cert::a.crt::a.key`.
        name: String,
        /// What went wrong.
        message: String,
    },
    /// A cipher suite name that is not a TLS cipher suite name at all.
    #[error("unknown cipher suite {0:?}")]
    UnknownCipherSuite(String),
    /// A cipher suite known to Go that this server's TLS implementation cannot offer
    /// (CBC, RC4, 3DES and RSA key exchange suites).
    #[error(
        "cipher suite {0} is not supported by this server (only AEAD suites with ECDHE key exchange are available)"
    )]
    UnsupportedCipherSuite(String),
    /// A TLS version name that is unknown or below TLS 1.2.
    #[error("unsupported TLS version {0:?} (supported: VersionTLS12, VersionTLS13)")]
    UnsupportedTlsVersion(String),
    /// A malformed `--tls-sni-cert-key` value.
    #[error("invalid --tls-sni-cert-key value {0:?}: expected cert,key[:name,...]")]
    InvalidSniCertKey(String),
    /// rustls rejected the configuration.
    #[error("TLS configuration: {0}")]
    Tls(#[from] rustls::Error),
}

#[cfg(test)]
mod sni_flag_tests {
    use super::*;

    #[test]
    fn parses_sni_cert_key_flag() {
        let v = SniCertKey::parse("a.crt,a.key").unwrap();
        assert_eq!(v.cert, PathBuf::from("a.crt"));
        assert_eq!(v.key, PathBuf::from("a.key"));
        assert!(v.names.is_empty());
        let v = SniCertKey::parse("a.crt,a.key:foo.com,*.bar.com").unwrap();
        assert_eq!(v.names, vec!["foo.com", "*.bar.com"]);
        assert!(SniCertKey::parse("a.crt").is_err());
        assert!(SniCertKey::parse("a.crt,b,c").is_err());
        assert!(SniCertKey::parse(",a.key").is_err());
    }
}
