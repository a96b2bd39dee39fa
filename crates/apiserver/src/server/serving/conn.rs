//! Serving HTTP on one accepted connection: hyper settings matching Go's `http.Server` of the
//! apiserver, the request adaptation (body boxing, [`ConnectionInfo`]), the idle timeout, and
//! graceful close on server stop or when a handler asks for it.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{CONNECTION, HeaderValue};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{IDLE_TIMEOUT, MAX_HEADER_BYTES, READ_HEADER_TIMEOUT};
use crate::body::{Body, BoxError};
use crate::filters::HttpService;
use crate::request::ConnectionInfo;

/// The HTTP protocol of a connection, from ALPN (never sniffed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// HTTP/1.1.
    Http1,
    /// HTTP/2.
    Http2,
}

/// hyper's 256 KiB settings of the apiserver's HTTP/2 server.
const H2_FRAME_AND_STREAM_WINDOW: u32 = 256 << 10;

/// Everything connection tasks share.
pub(crate) struct ConnShared {
    pub(crate) handler: HttpService,
    /// Fired when the server stops: connections close gracefully.
    pub(crate) stop: CancellationToken,
    h1: auto::Builder<TokioExecutor>,
    h2: auto::Builder<TokioExecutor>,
    idle_timeout: Duration,
}

impl ConnShared {
    /// Builders for both protocols with the apiserver's limits.
    pub(crate) fn new(handler: HttpService, stop: CancellationToken, h2_max_streams: u32) -> Self {
        let mut h1 = auto::Builder::new(TokioExecutor::new()).http1_only();
        h1.http1()
            .timer(TokioTimer::new())
            .header_read_timeout(READ_HEADER_TIMEOUT)
            .max_buf_size(MAX_HEADER_BYTES)
            // Go limits header bytes, not their count; hyper's default of 100 is too low for
            // requests with many impersonation extras.
            .max_headers(512)
            .keep_alive(true);
        let mut h2 = auto::Builder::new(TokioExecutor::new()).http2_only();
        h2.http2()
            .timer(TokioTimer::new())
            .max_concurrent_streams(h2_max_streams)
            .max_frame_size(H2_FRAME_AND_STREAM_WINDOW)
            .initial_stream_window_size(H2_FRAME_AND_STREAM_WINDOW)
            .initial_connection_window_size(
                H2_FRAME_AND_STREAM_WINDOW.saturating_mul(h2_max_streams),
            )
            .max_header_list_size(MAX_HEADER_BYTES as u32)
            // Rapid-reset (CVE-2023-44487) guards.
            .max_pending_accept_reset_streams(Some(h2_max_streams as usize))
            .max_local_error_reset_streams(Some(1024));
        ConnShared {
            handler,
            stop,
            h1,
            h2,
            idle_timeout: IDLE_TIMEOUT,
        }
    }

    #[cfg(test)]
    pub(crate) fn with_idle_timeout(mut self, idle: Duration) -> Self {
        self.idle_timeout = idle;
        self
    }
}

/// Counts requests in flight on a connection and when it last became idle (Go's IdleTimeout).
#[derive(Debug)]
struct Activity {
    active: AtomicUsize,
    idle_since: Mutex<Instant>,
    changed: Notify,
}

impl Activity {
    fn start(self: &Arc<Self>) -> ActivityGuard {
        self.active.fetch_add(1, Ordering::SeqCst);
        ActivityGuard(self.clone())
    }

    /// When the connection may be closed as idle, `None` while requests are in flight.
    fn idle_deadline(&self, idle: Duration) -> Option<Instant> {
        if self.active.load(Ordering::SeqCst) > 0 {
            return None;
        }
        let since = self
            .idle_since
            .lock()
            .map(|g| *g)
            .unwrap_or_else(|p| *p.into_inner());
        Some(since + idle)
    }
}

/// Held by a request until its response body is finished or dropped.
struct ActivityGuard(Arc<Activity>);

impl Drop for ActivityGuard {
    fn drop(&mut self) {
        if self.0.active.fetch_sub(1, Ordering::SeqCst) == 1 {
            if let Ok(mut since) = self.0.idle_since.lock() {
                *since = Instant::now();
            }
            self.0.changed.notify_one();
        }
    }
}

/// A response body that keeps its request counted as active until it is done.
struct TrackedBody {
    inner: Body,
    _guard: ActivityGuard,
}

impl http_body::Body for TrackedBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, BoxError>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Runs the handler. A separate non-async function keeps the handler's future type out of the
/// connection's service future (whose `Send` proof otherwise fails on higher-ranked lifetimes).
fn dispatch(handler: HttpService, req: crate::body::Request) -> crate::filters::ResponseFuture {
    let mut handler = handler;
    Box::pin(async move {
        let ready = std::future::poll_fn(|cx| tower::Service::poll_ready(&mut handler, cx)).await;
        let result = match ready {
            Ok(()) => tower::Service::call(&mut handler, req).await,
            Err(never) => match never {},
        };
        match result {
            Ok(response) => response,
            Err(never) => match never {},
        }
    })
}

/// Whether a `Connection` header asks to close the connection.
fn asks_close(value: &HeaderValue) -> bool {
    value
        .to_str()
        .map(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case("close")))
        .unwrap_or(false)
}

/// Serves HTTP on `io` until the connection ends. Returns when the peer closed, the server
/// stopped (after in-flight requests finished) or the connection was idle too long.
pub(crate) async fn serve_connection<I>(
    io: I,
    protocol: Protocol,
    info: ConnectionInfo,
    shared: Arc<ConnShared>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let activity = Arc::new(Activity {
        active: AtomicUsize::new(0),
        idle_since: Mutex::new(Instant::now()),
        changed: Notify::new(),
    });
    let close = info.close_connection.clone();
    let handler = shared.handler.clone();
    let svc_activity = activity.clone();
    let is_h2 = protocol == Protocol::Http2;
    let service = hyper::service::service_fn(move |req: http::Request<Incoming>| {
        let guard = svc_activity.start();
        let handler = handler.clone();
        let info = info.clone();
        async move {
            let close = info.close_connection.clone();
            let (parts, body) = req.into_parts();
            let mut req = http::Request::from_parts(parts, crate::body::boxed(body));
            req.extensions_mut().insert(info);
            let response = dispatch(handler, req).await;
            let (mut parts, body) = response.into_parts();
            // HTTP/2 has no `Connection` header (hyper would strip it with a warning); Go turns
            // `Connection: close` on an h2 response into a GOAWAY, so do that instead.
            if is_h2
                && let Some(value) = parts.headers.remove(CONNECTION)
                && asks_close(&value)
            {
                close.cancel();
            }
            Ok::<_, Infallible>(http::Response::from_parts(
                parts,
                TrackedBody {
                    inner: body,
                    _guard: guard,
                },
            ))
        }
    });
    let builder = match protocol {
        Protocol::Http1 => &shared.h1,
        Protocol::Http2 => &shared.h2,
    };
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), service);
    tokio::pin!(conn);
    let mut closing = false;
    loop {
        let idle_at = activity.idle_deadline(shared.idle_timeout);
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!("connection ended with error: {e}");
                }
                return;
            }
            _ = shared.stop.cancelled(), if !closing => {
                conn.as_mut().graceful_shutdown();
                closing = true;
            }
            _ = close.cancelled(), if !closing => {
                conn.as_mut().graceful_shutdown();
                closing = true;
            }
            _ = activity.changed.notified(), if !closing => {}
            _ = tokio::time::sleep_until(idle_at.unwrap_or_else(Instant::now)), if !closing && idle_at.is_some() => {
                if activity.idle_deadline(shared.idle_timeout).is_some_and(|at| at <= Instant::now()) {
                    conn.as_mut().graceful_shutdown();
                    closing = true;
                }
            }
        }
    }
}
