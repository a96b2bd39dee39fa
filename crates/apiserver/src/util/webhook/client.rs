//! The HTTP client of a webhook (upstream `util/webhook.GenericWebhook`): POSTs a JSON
//! review to the kubeconfig's server URL over TLS (or plain HTTP when the URL says so),
//! with a per-attempt timeout, keep-alive connections reused, and upstream's exponential
//! backoff on transient failures (connection resets, 429, 500, 504 or a `Retry-After`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use serde_json::Value;

use super::kubeconfig::WebhookKubeconfig;
use super::tls::client_tls;

/// The `User-Agent` webhook requests carry.
pub const USER_AGENT: &str = "kube-apiserver/v1.35.0 (linux/amd64) kubernetes";

/// Upstream's default per-request timeout of a webhook client.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// How large a webhook answer may be.
const MAX_RESPONSE_BYTES: usize = 3 * 1024 * 1024;

/// Idle connections kept per webhook.
const MAX_IDLE: usize = 8;

/// Upstream's retry backoff for webhooks (`DefaultRetryBackoffWithInitialDelay`): the
/// first retry after `initial`, each later one 1.5 times longer, ±20% jitter, at most
/// `steps` attempts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Backoff {
    /// The wait before the first retry.
    pub initial: Duration,
    /// The growth factor.
    pub factor: f64,
    /// The jitter fraction.
    pub jitter: f64,
    /// Attempts in all.
    pub steps: u32,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            initial: Duration::from_millis(500),
            factor: 1.5,
            jitter: 0.2,
            steps: 5,
        }
    }
}

/// Why a webhook call failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    /// The connection could not be made or broke (`Post "<url>": <reason>`).
    #[error("{method} \"{url}\": {reason}")]
    Transport {
        /// `Post` or `Get`, as Go's `url.Error` names the method.
        method: &'static str,
        /// The webhook URL.
        url: String,
        /// Why.
        reason: String,
        /// Whether the failure is a reset worth retrying.
        reset: bool,
    },
    /// The attempt took longer than the timeout (method and URL).
    #[error(
        "{0} \"{1}\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
    )]
    Timeout(&'static str, String),
    /// The webhook answered with a non-2xx status.
    #[error("{message}")]
    Status {
        /// The HTTP status code.
        code: u16,
        /// client-go's text for it.
        message: String,
        /// Whether the answer asked for a retry (`Retry-After`).
        retry_after: bool,
    },
    /// The answer was not the JSON expected.
    #[error("{0}")]
    Decode(String),
}

impl WebhookError {
    /// upstream `DefaultShouldRetry`: connection resets, internal errors, timeouts, 429
    /// and anything that suggests a client delay.
    pub fn should_retry(&self) -> bool {
        match self {
            WebhookError::Transport { reset, .. } => *reset,
            WebhookError::Status {
                code, retry_after, ..
            } => *retry_after || matches!(code, 429 | 500 | 504),
            _ => false,
        }
    }
}

/// Go's spelling of the request method in a `url.Error`.
fn go_method(post: bool) -> &'static str {
    if post { "Post" } else { "Get" }
}

/// client-go's message for a non-2xx answer: the `Status` message when the body is one,
/// otherwise its generic text for the code.
fn status_message(code: u16, body: &[u8]) -> String {
    if let Ok(v) = serde_json::from_slice::<Value>(body)
        && v.get("kind").and_then(Value::as_str) == Some("Status")
        && let Some(m) = v.get("message").and_then(Value::as_str)
        && !m.is_empty()
    {
        return m.to_string();
    }
    let text = String::from_utf8_lossy(body).trim().to_string();
    match code {
        401 => "Unauthorized".into(),
        403 => format!("forbidden: {text}"),
        404 => "the server could not find the requested resource".into(),
        429 => "the server has received too many requests and has asked us to try again later".into(),
        500 => format!("an error on the server ({text:?}) has prevented the request from succeeding"),
        503 => "the server is currently unable to handle the request".into(),
        504 => "the server was unable to return a response in the time allotted, but may still be processing the request".into(),
        _ => format!("the server responded with the status code {code} but did not return more information"),
    }
}

/// A webhook endpoint: where to POST, how to connect, and the idle connections to it.
pub struct WebhookClient {
    url: String,
    uri: http::Uri,
    host: String,
    port: u16,
    server_name: String,
    tls: Option<Arc<ClientConfig>>,
    token: Option<String>,
    timeout: Duration,
    backoff: Backoff,
    idle: Mutex<Vec<SendRequest<Full<Bytes>>>>,
    /// Where to connect instead of the URL's host and port (a Service's resolved address).
    dial: Option<(String, u16)>,
    /// Retry every failure, not only the transient ones (the audit webhook's rule).
    retry_every_error: bool,
}

impl std::fmt::Debug for WebhookClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookClient")
            .field("url", &self.url)
            .finish()
    }
}

impl WebhookClient {
    /// A client for the endpoint of `config`, each attempt limited to `timeout`.
    pub fn new(
        config: &WebhookKubeconfig,
        timeout: Duration,
        backoff: Backoff,
    ) -> Result<Self, String> {
        let uri: http::Uri = config
            .server
            .parse()
            .map_err(|e| format!("invalid server URL {:?}: {e}", config.server))?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(format!("invalid server URL {:?}", config.server)),
        };
        let host = uri
            .host()
            .ok_or_else(|| format!("invalid server URL {:?}: no host", config.server))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let tls = if https {
            Some(client_tls(config)?)
        } else {
            None
        };
        let server_name = config
            .tls_server_name
            .clone()
            .unwrap_or_else(|| host.clone());
        ServerName::try_from(server_name.clone())
            .map_err(|e| format!("invalid server name {server_name:?}: {e}"))?;
        Ok(WebhookClient {
            url: config.server.clone(),
            uri,
            host,
            port,
            server_name,
            tls,
            token: config.token.clone(),
            timeout,
            backoff,
            idle: Mutex::new(Vec::new()),
            dial: None,
            retry_every_error: false,
        })
    }

    /// Retries every failure with the backoff, whatever it is (upstream's audit webhook
    /// replaces `DefaultShouldRetry` so that no event is dropped for a non-transient error).
    pub fn retrying_every_error(mut self) -> Self {
        self.retry_every_error = true;
        self
    }

    /// Connects to `host:port` instead of the URL's host and port, still naming the URL's
    /// host in `Host` and (unless the kubeconfig names another) in TLS server verification:
    /// upstream's dialer for webhooks behind a Service.
    pub fn dial_to(mut self, host: &str, port: u16) -> Self {
        self.dial = Some((
            host.trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            port,
        ));
        self
    }

    /// The URL requests go to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// POSTs `body` as JSON and decodes the JSON answer, retrying transient failures with
    /// the backoff.
    pub async fn post_json(&self, body: &Value) -> Result<Value, WebhookError> {
        let bytes = Bytes::from(
            serde_json::to_vec(body)
                .map_err(|e| WebhookError::Decode(format!("encoding the webhook request: {e}")))?,
        );
        decode(&self.with_backoff(Some(bytes)).await?)
    }

    /// POSTs an encoded JSON body and returns the answer's bytes, whatever they are,
    /// retrying failures with the backoff.
    pub async fn post_bytes(&self, body: Bytes) -> Result<Bytes, WebhookError> {
        self.with_backoff(Some(body)).await
    }

    /// GETs the URL and decodes the JSON answer (discovery documents, key sets), retrying
    /// transient failures with the backoff.
    pub async fn get_json(&self) -> Result<Value, WebhookError> {
        decode(&self.with_backoff(None).await?)
    }

    async fn with_backoff(&self, body: Option<Bytes>) -> Result<Bytes, WebhookError> {
        let mut delay = self.backoff.initial;
        let mut attempt = 1;
        loop {
            let result = match tokio::time::timeout(self.timeout, self.attempt(body.clone())).await
            {
                Ok(r) => r,
                Err(_) => Err(WebhookError::Timeout(
                    go_method(body.is_some()),
                    self.url.clone(),
                )),
            };
            match result {
                Err(e)
                    if (self.retry_every_error || e.should_retry())
                        && attempt < self.backoff.steps =>
                {
                    let jitter = 1.0 + rand::random::<f64>() * self.backoff.jitter;
                    tokio::time::sleep(delay.mul_f64(jitter)).await;
                    delay = delay.mul_f64(self.backoff.factor);
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    fn transport(&self, post: bool, reason: impl std::fmt::Display, reset: bool) -> WebhookError {
        WebhookError::Transport {
            method: go_method(post),
            url: self.url.clone(),
            reason: reason.to_string(),
            reset,
        }
    }

    /// An idle kept-alive connection, if one is still open. A connection released right after
    /// its response may not report ready until its task has run once, so an open one is
    /// awaited (briefly) rather than dropped.
    async fn pooled(&self) -> Option<SendRequest<Full<Bytes>>> {
        loop {
            let mut sender = {
                let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
                idle.pop()?
            };
            if sender.is_closed() {
                continue;
            }
            if sender.is_ready() {
                return Some(sender);
            }
            if let Ok(Ok(())) =
                tokio::time::timeout(std::time::Duration::from_millis(50), sender.ready()).await
            {
                return Some(sender);
            }
        }
    }

    fn release(&self, sender: SendRequest<Full<Bytes>>) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < MAX_IDLE {
            idle.push(sender);
        }
    }

    async fn connect(&self, post: bool) -> Result<SendRequest<Full<Bytes>>, WebhookError> {
        let (host, port) = match &self.dial {
            Some((host, port)) => (host.as_str(), *port),
            None => (self.host.as_str(), self.port),
        };
        let tcp = tokio::net::TcpStream::connect((host, port))
            .await
            .map_err(|e| {
                let addr = if host.contains(':') {
                    format!("[{host}]:{port}")
                } else {
                    format!("{host}:{port}")
                };
                let reason = match e.kind() {
                    std::io::ErrorKind::ConnectionRefused => "connect: connection refused".into(),
                    _ => e.to_string(),
                };
                self.transport(post, format!("dial tcp {addr}: {reason}"), false)
            })?;
        let _ = tcp.set_nodelay(true);
        let handshake_err = |e: hyper::Error| self.transport(post, e, false);
        match &self.tls {
            Some(tls) => {
                let name = ServerName::try_from(self.server_name.clone())
                    .map_err(|e| self.transport(post, e, false))?;
                let stream = tokio_rustls::TlsConnector::from(tls.clone())
                    .connect(name, tcp)
                    .await
                    .map_err(|e| self.transport(post, format!("tls: {e}"), false))?;
                let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                    .await
                    .map_err(handshake_err)?;
                tokio::spawn(async move {
                    let _ = conn.await;
                });
                Ok(sender)
            }
            None => {
                let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
                    .await
                    .map_err(handshake_err)?;
                tokio::spawn(async move {
                    let _ = conn.await;
                });
                Ok(sender)
            }
        }
    }

    async fn attempt(&self, body: Option<Bytes>) -> Result<Bytes, WebhookError> {
        let post = body.is_some();
        let (mut sender, reused) = match self.pooled().await {
            Some(s) => (s, true),
            None => (self.connect(post).await?, false),
        };
        let method = if body.is_some() {
            http::Method::POST
        } else {
            http::Method::GET
        };
        // Origin-form request target (`/path?query`), as Go's client sends to a server;
        // the absolute form is for proxies, and servers that do not expect it misroute it.
        let target = self.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
        let mut builder = http::Request::builder()
            .method(method)
            .uri(target)
            .header(http::header::ACCEPT, "application/json, */*")
            .header(http::header::USER_AGENT, USER_AGENT);
        if body.is_some() {
            builder = builder.header(http::header::CONTENT_TYPE, "application/json");
        }
        if let Some(authority) = self.uri.authority() {
            builder = builder.header(http::header::HOST, authority.as_str());
        }
        if let Some(token) = &self.token {
            builder = builder.header(http::header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let request = builder
            .body(Full::new(body.unwrap_or_default()))
            .map_err(|e| self.transport(post, e, false))?;
        let response = match sender.send_request(request).await {
            Ok(r) => r,
            // A kept-alive connection the server closed meanwhile: a reset worth a retry.
            Err(e) => {
                let reset = reused || e.is_incomplete_message();
                return Err(self.transport(post, e, reset));
            }
        };
        let (parts, body) = response.into_parts();
        let body = Limited::new(body, MAX_RESPONSE_BYTES)
            .collect()
            .await
            .map_err(|e| self.transport(post, e, true))?
            .to_bytes();
        self.release(sender);
        if !parts.status.is_success() {
            return Err(WebhookError::Status {
                code: parts.status.as_u16(),
                message: status_message(parts.status.as_u16(), &body),
                retry_after: parts.headers.contains_key(http::header::RETRY_AFTER),
            });
        }
        Ok(body)
    }
}

/// The JSON of a webhook's answer.
fn decode(body: &[u8]) -> Result<Value, WebhookError> {
    serde_json::from_slice(body).map_err(|e| WebhookError::Decode(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_rules_follow_upstream() {
        let status = |code, retry_after| WebhookError::Status {
            code,
            message: String::new(),
            retry_after,
        };
        assert!(status(500, false).should_retry());
        assert!(status(504, false).should_retry());
        assert!(status(429, false).should_retry());
        assert!(status(503, true).should_retry());
        assert!(!status(503, false).should_retry());
        assert!(!status(400, false).should_retry());
        assert!(!WebhookError::Timeout("Post", "u".into()).should_retry());
    }

    #[test]
    fn status_messages_read_like_client_go() {
        assert_eq!(
            status_message(403, br#"{"kind":"Status","message":"nope"}"#),
            "nope"
        );
        assert_eq!(
            status_message(500, b"boom"),
            "an error on the server (\"boom\") has prevented the request from succeeding"
        );
    }

    /// A plain-HTTP server answering each request with the next of `statuses` (the last
    /// one repeated), counting requests.
    async fn scripted_server(statuses: Vec<u16>) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/review", listener.local_addr().unwrap());
        let count = Arc::new(AtomicUsize::new(0));
        let seen = count.clone();
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let seen = seen.clone();
                let statuses = statuses.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |_req| {
                        let n = seen.fetch_add(1, Ordering::SeqCst);
                        let status = statuses[n.min(statuses.len() - 1)];
                        async move {
                            Ok::<_, hyper::Error>(
                                http::Response::builder()
                                    .status(status)
                                    .body(Full::new(Bytes::from_static(b"{\"ok\":true}")))
                                    .unwrap(),
                            )
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tcp), service)
                        .await;
                });
            }
        });
        (url, count)
    }

    fn quick_backoff() -> Backoff {
        Backoff {
            initial: Duration::from_millis(1),
            ..Backoff::default()
        }
    }

    #[tokio::test]
    async fn internal_errors_are_retried_until_success() {
        use std::sync::atomic::Ordering;
        let (url, count) = scripted_server(vec![500, 504, 200]).await;
        let config = WebhookKubeconfig {
            server: url,
            ..Default::default()
        };
        let client = WebhookClient::new(&config, DEFAULT_REQUEST_TIMEOUT, quick_backoff()).unwrap();
        assert_eq!(
            client.post_json(&Value::Null).await.unwrap(),
            serde_json::json!({"ok": true})
        );
        assert_eq!(count.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn retries_stop_after_five_attempts_and_client_errors_are_not_retried() {
        use std::sync::atomic::Ordering;
        let (url, count) = scripted_server(vec![500]).await;
        let config = WebhookKubeconfig {
            server: url,
            ..Default::default()
        };
        let client = WebhookClient::new(&config, DEFAULT_REQUEST_TIMEOUT, quick_backoff()).unwrap();
        let err = client.post_json(&Value::Null).await.unwrap_err();
        assert!(
            matches!(err, WebhookError::Status { code: 500, .. }),
            "{err:?}"
        );
        assert_eq!(count.load(Ordering::SeqCst), 5);

        let (url, count) = scripted_server(vec![403]).await;
        let config = WebhookKubeconfig {
            server: url,
            ..Default::default()
        };
        let client = WebhookClient::new(&config, DEFAULT_REQUEST_TIMEOUT, quick_backoff()).unwrap();
        assert!(client.post_json(&Value::Null).await.is_err());
        assert_eq!(count.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn refused_connection_is_a_transport_error_not_retried() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let config = WebhookKubeconfig {
            server: format!("http://127.0.0.1:{port}/review"),
            ..Default::default()
        };
        let client =
            WebhookClient::new(&config, DEFAULT_REQUEST_TIMEOUT, Backoff::default()).unwrap();
        let err = client.post_json(&Value::Null).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "Post \"http://127.0.0.1:{port}/review\": dial tcp 127.0.0.1:{port}: connect: connection refused"
            )
        );
    }

    #[tokio::test]
    async fn sequential_calls_reuse_one_kept_alive_connection() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/review", listener.local_addr().unwrap());
        let connections = Arc::new(AtomicUsize::new(0));
        let accepted = connections.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                accepted.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(|_req| async {
                        Ok::<_, hyper::Error>(http::Response::new(Full::new(Bytes::from_static(
                            b"{}",
                        ))))
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tcp), service)
                        .await;
                });
            }
        });
        let config = WebhookKubeconfig {
            server: url,
            ..Default::default()
        };
        let client = WebhookClient::new(&config, DEFAULT_REQUEST_TIMEOUT, quick_backoff()).unwrap();
        for _ in 0..20 {
            client.post_json(&Value::Null).await.unwrap();
        }
        assert_eq!(connections.load(Ordering::SeqCst), 1);
    }
}
