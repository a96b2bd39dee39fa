//! Helpers for life-cycle tests: loopback clients, a watch route whose stream ends on the
//! request's shutdown signal, slow requests, and the recorded shutdown sequence.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use apiserver::body::{Request, boxed, with_content_type};
use apiserver::filters::{HttpService, service_fn};
use apiserver::request::ServerShutdownSignal;
use apiserver::server::lifecycle::SignalRecorder;
use apiserver::server::loopback::LoopbackClientConfig;
use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Client, Conn, Proto};

/// A list path whose `?watch=true` variant has verb `watch` (a long-running request).
pub const PODS: &str = "/api/v1/namespaces/default/pods";
/// The watch request.
pub const WATCH_PODS: &str = "/api/v1/namespaces/default/pods?watch=true";
/// The first event every watch stream sends.
pub const WATCH_EVENT: &str = "{\"type\":\"ADDED\"}\n";

/// A client for the loopback configuration `loopback` of the server listening on `addr`
/// (`host` is only filled in for post-start hooks; pre-shutdown hooks pass the address).
pub fn loopback_client(addr: SocketAddr, loopback: &LoopbackClientConfig) -> Client {
    let ca = loopback.ca_pem.as_deref().expect("loopback CA");
    let name = loopback
        .server_name
        .as_deref()
        .expect("loopback server name");
    Client::new(addr, ca, name).with_bearer(&loopback.bearer_token)
}

/// A client built only from a complete loopback configuration (`https://host:port`).
pub fn client_from_loopback(loopback: &LoopbackClientConfig) -> Client {
    let addr: SocketAddr = loopback
        .host
        .strip_prefix("https://")
        .expect("https loopback host")
        .parse()
        .expect("loopback host is an address");
    loopback_client(addr, loopback)
}

/// What a watch does once its shutdown signal fired: tell the test, then wait for it.
#[derive(Clone, Default)]
pub struct WatchHold {
    /// Cancelled when the watch saw its shutdown signal.
    pub saw_shutdown: CancellationToken,
    /// The watch ends its stream once this is cancelled.
    pub release: CancellationToken,
}

/// The `/api/v1` route: a watch (`?watch=true`) sends [`WATCH_EVENT`] and ends its stream
/// cleanly when the request's [`ServerShutdownSignal`] fires (after `hold`, if given); any
/// other request answers 200 `{}`.
pub fn api_v1_route(hold: Option<WatchHold>) -> HttpService {
    service_fn(move |req: Request| {
        let hold = hold.clone();
        async move {
            let is_watch = req.uri().query().is_some_and(|q| q.contains("watch=true"));
            let signal = req.extensions().get::<ServerShutdownSignal>().cloned();
            let Some(ServerShutdownSignal(shutdown)) = signal.filter(|_| is_watch) else {
                return with_content_type(StatusCode::OK, "application/json", "{}");
            };
            let stream = futures::stream::unfold(false, move |sent| {
                let shutdown = shutdown.clone();
                let hold = hold.clone();
                async move {
                    if !sent {
                        let frame = Frame::data(Bytes::from_static(WATCH_EVENT.as_bytes()));
                        return Some((Ok::<_, Infallible>(frame), true));
                    }
                    shutdown.cancelled().await;
                    if let Some(hold) = hold {
                        hold.saw_shutdown.cancel();
                        hold.release.cancelled().await;
                    }
                    None
                }
            });
            let mut response = http::Response::new(boxed(StreamBody::new(stream)));
            response.headers_mut().insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/json"),
            );
            response
        }
    })
}

/// An open watch stream whose first event was read.
pub struct Watch {
    body: Incoming,
    _conn: Conn,
}

impl Watch {
    /// Opens a watch on a new connection and reads its first event.
    pub async fn open(client: &Client, proto: Proto) -> Watch {
        let mut conn = client.connect(proto).await.expect("connect for watch");
        let response = conn
            .send_head(client.request(Method::GET, WATCH_PODS, ""))
            .await
            .expect("watch response");
        assert_eq!(response.status(), StatusCode::OK, "watch status");
        let mut body = response.into_body();
        let first = body
            .frame()
            .await
            .expect("a first watch frame")
            .expect("first watch frame read")
            .into_data()
            .expect("data frame");
        assert_eq!(&first[..], WATCH_EVENT.as_bytes());
        Watch { body, _conn: conn }
    }

    /// Reads the rest of the stream; `Ok` when it ended cleanly, with what was left.
    pub async fn end(self) -> Result<String, String> {
        match self.body.collect().await {
            Ok(rest) => Ok(String::from_utf8_lossy(&rest.to_bytes()).into_owned()),
            Err(err) => Err(err.to_string()),
        }
    }
}

/// A handler that reports each request on `started`, waits for `release`, then answers 200
/// `done` (a slow, non-long-running request).
pub fn slow_handler(started: mpsc::UnboundedSender<()>, release: CancellationToken) -> HttpService {
    service_fn(move |_req: Request| {
        let started = started.clone();
        let release = release.clone();
        async move {
            let _ = started.send(());
            release.cancelled().await;
            with_content_type(StatusCode::OK, "text/plain", "done")
        }
    })
}

/// The recorded shutdown signals in order, without the start-up ones.
pub fn shutdown_sequence(recorder: &Arc<SignalRecorder>) -> Vec<&'static str> {
    recorder
        .names()
        .into_iter()
        .filter(|n| *n != "MuxAndDiscoveryComplete" && *n != "HasBeenReady")
        .collect()
}

/// GET `path` on `conn`.
pub async fn get_on(client: &Client, conn: &mut Conn, path: &str) -> std::io::Result<super::Reply> {
    conn.send(client.request(Method::GET, path, "")).await
}

/// Waits until `conn` can no longer take requests (closed, or GOAWAY received).
pub async fn wait_unusable(conn: &mut Conn, what: &str) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    while within(what, conn.is_usable()).await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Awaits `fut`, failing the test with `what` if it takes longer than 20 s.
pub async fn within<F: std::future::Future>(what: &str, fut: F) -> F::Output {
    match tokio::time::timeout(std::time::Duration::from_secs(20), fut).await {
        Ok(output) => output,
        Err(_) => panic!("timed out waiting for {what}"),
    }
}
