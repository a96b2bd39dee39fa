//! A small HTTPS client for black-box tests: HTTP/1.1 or HTTP/2 (chosen by ALPN) over rustls,
//! with an optional client certificate, on connections the test controls (reused or fresh).

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode, Version};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, pem::PemObject};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// Which protocol to offer in ALPN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    /// Offer only `http/1.1`.
    H1,
    /// Offer only `h2`.
    H2,
}

/// A response read in full.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
    pub version: Version,
}

/// Presents one client certificate to every server that asks.
#[derive(Debug)]
struct FixedClientCert(Arc<rustls::sign::CertifiedKey>);

impl rustls::client::ResolvesClientCert for FixedClientCert {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[rustls::SignatureScheme],
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        Some(self.0.clone())
    }

    fn has_certs(&self) -> bool {
        true
    }
}

/// How to reach a test server.
#[derive(Clone)]
pub struct Client {
    pub addr: SocketAddr,
    pub server_name: String,
    roots: Arc<rustls::RootCertStore>,
    identity: Option<(Vec<CertificateDer<'static>>, Arc<PrivateKeyDer<'static>>)>,
    pub user_agent: Option<String>,
    pub bearer: Option<String>,
}

/// An open connection.
pub enum Conn {
    H1(http1::SendRequest<Full<Bytes>>),
    H2(http2::SendRequest<Full<Bytes>>),
}

impl Client {
    /// A client trusting `ca_pem`, connecting to `addr` with SNI `server_name`.
    pub fn new(addr: SocketAddr, ca_pem: &str, server_name: &str) -> Self {
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
            roots.add(cert.expect("ca pem")).expect("add root");
        }
        Client {
            addr,
            server_name: server_name.to_string(),
            roots: Arc::new(roots),
            identity: None,
            user_agent: None,
            bearer: None,
        }
    }

    /// Presents this client certificate.
    pub fn with_identity(mut self, cert_pem: &str, key_pem: &str) -> Self {
        let certs = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .expect("cert pem");
        let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).expect("key pem");
        self.identity = Some((certs, Arc::new(key)));
        self
    }

    /// Sends this bearer token.
    pub fn with_bearer(mut self, token: &str) -> Self {
        self.bearer = Some(token.to_string());
        self
    }

    fn tls_config(&self, proto: Proto) -> rustls::ClientConfig {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_root_certificates(self.roots.clone());
        let mut config = match &self.identity {
            // A resolver rather than `with_client_auth_cert`, which parses the certificate
            // with webpki to match it with the key and so refuses X.509 v1 certificates.
            Some((certs, key)) => {
                let signer =
                    rustls::crypto::ring::sign::any_supported_type(key).expect("client key");
                let certified = rustls::sign::CertifiedKey::new(certs.clone(), signer);
                builder.with_client_cert_resolver(Arc::new(FixedClientCert(Arc::new(certified))))
            }
            None => builder.with_no_client_auth(),
        };
        config.alpn_protocols = match proto {
            Proto::H1 => vec![b"http/1.1".to_vec()],
            Proto::H2 => vec![b"h2".to_vec()],
        };
        config
    }

    /// Opens a TLS connection offering `proto` in ALPN (for raw HTTP in tests).
    pub async fn connect_tls(
        &self,
        proto: Proto,
    ) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
        let tcp = TcpStream::connect(self.addr).await?;
        let connector = TlsConnector::from(Arc::new(self.tls_config(proto)));
        let name = ServerName::try_from(self.server_name.clone())
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        connector.connect(name, tcp).await
    }

    /// Opens a new connection.
    pub async fn connect(&self, proto: Proto) -> std::io::Result<Conn> {
        let io = TokioIo::new(self.connect_tls(proto).await?);
        match proto {
            Proto::H1 => {
                let (sender, conn) = http1::handshake(io).await.map_err(std::io::Error::other)?;
                tokio::spawn(async move {
                    let _ = conn.await;
                });
                Ok(Conn::H1(sender))
            }
            Proto::H2 => {
                let (sender, conn) = http2::handshake(TokioExecutor::new(), io)
                    .await
                    .map_err(std::io::Error::other)?;
                tokio::spawn(async move {
                    let _ = conn.await;
                });
                Ok(Conn::H2(sender))
            }
        }
    }

    /// Completes a TLS handshake and returns the server's leaf certificate (DER).
    pub async fn peer_certificate(&self) -> std::io::Result<Vec<u8>> {
        let tcp = TcpStream::connect(self.addr).await?;
        let connector = TlsConnector::from(Arc::new(self.tls_config(Proto::H1)));
        let name = ServerName::try_from(self.server_name.clone())
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let tls = connector.connect(name, tcp).await?;
        let (_, session) = tls.get_ref();
        session
            .peer_certificates()
            .and_then(|certs| certs.first())
            .map(|cert| cert.as_ref().to_vec())
            .ok_or_else(|| std::io::Error::other("no peer certificate"))
    }

    /// A copy connecting with SNI `server_name`.
    pub fn with_server_name(mut self, server_name: &str) -> Self {
        self.server_name = server_name.to_string();
        self
    }

    /// Builds a request with the client's default headers.
    pub fn request(&self, method: Method, path: &str, body: &str) -> Request<Full<Bytes>> {
        let mut builder = Request::builder()
            .method(method)
            .uri(format!("https://{}{}", self.server_name, path));
        if let Some(ua) = &self.user_agent {
            builder = builder.header("user-agent", ua);
        }
        if let Some(token) = &self.bearer {
            builder = builder.header("authorization", format!("Bearer {token}"));
        }
        builder
            .body(Full::new(Bytes::from(body.to_string())))
            .expect("request")
    }

    /// Sends `req` on a fresh connection.
    ///
    /// On HTTP/2 a request the server answered can still fail in hyper's client with the
    /// server's graceful GOAWAY (hyperium/hyper#2500: after handing the request to h2, the
    /// dispatcher checks the connection again and fails the request if a GOAWAY arrived in
    /// between). The server sends one after every anonymous request, as upstream does, so a
    /// fresh-connection request that fails that way is sent once more on another connection.
    pub async fn send(&self, proto: Proto, req: Request<Full<Bytes>>) -> std::io::Result<Reply> {
        let retry = (proto == Proto::H2).then(|| copy_request(&req));
        let mut conn = self.connect(proto).await?;
        match (conn.send(req).await, retry) {
            (Err(e), Some(again)) if is_graceful_goaway(&e) => {
                self.connect(proto).await?.send(again).await
            }
            (result, _) => result,
        }
    }

    /// A request with the client's default headers plus `headers`.
    pub fn request_with(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
    ) -> Request<Full<Bytes>> {
        let mut req = self.request(method, path, "");
        for (name, value) in headers {
            req.headers_mut().append(
                http::HeaderName::from_bytes(name.as_bytes()).expect("header name"),
                value.parse().expect("header value"),
            );
        }
        req
    }

    /// GET `path` on a fresh connection.
    pub async fn get(&self, proto: Proto, path: &str) -> std::io::Result<Reply> {
        self.send(proto, self.request(Method::GET, path, "")).await
    }
}

impl Conn {
    /// Sends a request and reads the whole response.
    pub async fn send(&mut self, req: Request<Full<Bytes>>) -> std::io::Result<Reply> {
        let response = self.send_head(req).await?;
        let (parts, body) = response.into_parts();
        let bytes = body
            .collect()
            .await
            .map_err(std::io::Error::other)?
            .to_bytes();
        Ok(Reply {
            status: parts.status,
            headers: parts.headers,
            body: String::from_utf8_lossy(&bytes).into_owned(),
            version: parts.version,
        })
    }

    /// Sends a request and returns as soon as the response head arrived (for streams).
    pub async fn send_head(
        &mut self,
        mut req: Request<Full<Bytes>>,
    ) -> std::io::Result<http::Response<hyper::body::Incoming>> {
        match self {
            Conn::H1(sender) => {
                // HTTP/1.1 wants an origin-form target and a Host header.
                let host = req.uri().host().unwrap_or("localhost").to_string();
                let path = req
                    .uri()
                    .path_and_query()
                    .map(|p| p.as_str().to_string())
                    .unwrap_or_else(|| "/".into());
                *req.uri_mut() = path.parse().map_err(std::io::Error::other)?;
                req.headers_mut()
                    .insert("host", host.parse().map_err(std::io::Error::other)?);
                sender.ready().await.map_err(std::io::Error::other)?;
                sender
                    .send_request(req)
                    .await
                    .map_err(std::io::Error::other)
            }
            Conn::H2(sender) => {
                sender.ready().await.map_err(std::io::Error::other)?;
                sender
                    .send_request(req)
                    .await
                    .map_err(std::io::Error::other)
            }
        }
    }

    /// Whether the connection can still take requests (false after GOAWAY / close).
    pub async fn is_usable(&mut self) -> bool {
        match self {
            Conn::H1(sender) => sender.ready().await.is_ok(),
            Conn::H2(sender) => sender.ready().await.is_ok(),
        }
    }
}

impl Conn {
    /// Another handle on the same HTTP/2 connection (HTTP/1.1 connections have only one).
    pub fn h2_handle(&self) -> Option<Conn> {
        match self {
            Conn::H1(_) => None,
            Conn::H2(sender) => Some(Conn::H2(sender.clone())),
        }
    }
}

/// A copy of `req` (head and body) for sending it again.
fn copy_request(req: &Request<Full<Bytes>>) -> Request<Full<Bytes>> {
    let mut copy = Request::new(req.body().clone());
    *copy.method_mut() = req.method().clone();
    *copy.uri_mut() = req.uri().clone();
    *copy.version_mut() = req.version();
    *copy.headers_mut() = req.headers().clone();
    copy
}

/// Whether `err` is hyper reporting the server's graceful (NO_ERROR) GOAWAY.
fn is_graceful_goaway(err: &std::io::Error) -> bool {
    let Some(hyper_err) = err.get_ref().and_then(|e| e.downcast_ref::<hyper::Error>()) else {
        return false;
    };
    std::error::Error::source(hyper_err)
        .and_then(|e| e.downcast_ref::<h2::Error>())
        .is_some_and(|e| {
            e.is_go_away() && e.is_remote() && e.reason() == Some(h2::Reason::NO_ERROR)
        })
}
