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

/// How long an HTTP/2 connection a handler asked to close waits for its busy streams before
/// the GOAWAY goes out anyway.
const CLOSE_AFTER_RESPONSE_LIMIT: Duration = Duration::from_secs(1);

/// hyper's 256 KiB settings of the apiserver's HTTP/2 server.
const H2_FRAME_AND_STREAM_WINDOW: u32 = 256 << 10;

/// Everything connection tasks share.
pub(crate) struct ConnShared {
    pub(crate) handler: HttpService,
    /// Fired when the server stops: connections close gracefully.
    pub(crate) stop: CancellationToken,
    h1: auto::Builder<TokioExecutor>,
    h2: auto::Builder<TokioExecutor>,
    timeouts: Timeouts,
}

/// Go's `IdleTimeout` and `ReadHeaderTimeout`.
#[derive(Clone, Copy, Debug)]
struct Timeouts {
    idle: Duration,
    read_header: Duration,
}

impl ConnShared {
    /// Builders for both protocols with the apiserver's limits.
    pub(crate) fn new(handler: HttpService, stop: CancellationToken, h2_max_streams: u32) -> Self {
        let mut h1 = auto::Builder::new(TokioExecutor::new()).http1_only();
        h1.http1()
            .timer(TokioTimer::new())
            // hyper's header timer also runs while a keep-alive connection waits for its next
            // request, which would cut idle connections at 32s instead of Go's 90s; the
            // connection driver below implements both timeouts the Go way instead.
            .header_read_timeout(None)
            .max_buf_size(MAX_HEADER_BYTES)
            // Go limits header bytes, not their count. hyper keeps up to 100 headers on the
            // stack and allocates a large array per request above that, which costs about 5%
            // of HTTP/1.1 throughput; we keep its default of 100 (more headers get 431).
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
            timeouts: Timeouts {
                idle: IDLE_TIMEOUT,
                read_header: READ_HEADER_TIMEOUT,
            },
        }
    }

    /// Go's `ReadHeaderTimeout`, also the TLS handshake's deadline (Go's server takes the
    /// shortest of its read, read-header and write timeouts for the handshake).
    pub(crate) fn read_header_timeout(&self) -> Duration {
        self.timeouts.read_header
    }

    #[cfg(test)]
    pub(crate) fn with_timeouts(mut self, idle: Duration, read_header: Duration) -> Self {
        self.timeouts = Timeouts { idle, read_header };
        self
    }
}

/// When the connection's timers run out.
#[derive(Debug)]
struct Timers {
    /// When the last request finished (or the connection opened).
    idle_since: Instant,
    /// Set while an HTTP/1 request head is expected: from the connection start, and from the
    /// first byte after an idle period, until the request reaches the handler.
    head_deadline: Option<Instant>,
}

/// Counts requests in flight on a connection and drives the idle and header timeouts.
#[derive(Debug)]
struct Activity {
    active: AtomicUsize,
    timers: Mutex<Timers>,
    changed: Notify,
    timeouts: Timeouts,
}

/// What the connection driver waits for next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Deadline {
    /// The request head did not arrive in time: drop the connection (Go closes it silently).
    Head(Instant),
    /// No request for the idle timeout: close gracefully.
    Idle(Instant),
}

impl Activity {
    fn new(timeouts: Timeouts, expect_head: bool) -> Self {
        let now = Instant::now();
        Activity {
            active: AtomicUsize::new(0),
            timers: Mutex::new(Timers {
                idle_since: now,
                head_deadline: expect_head.then(|| now + timeouts.read_header),
            }),
            changed: Notify::new(),
            timeouts,
        }
    }

    fn timers(&self) -> std::sync::MutexGuard<'_, Timers> {
        self.timers.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn start(self: &Arc<Self>) -> ActivityGuard {
        self.active.fetch_add(1, Ordering::SeqCst);
        self.timers().head_deadline = None;
        ActivityGuard(self.clone())
    }

    /// Bytes arrived: on an idle HTTP/1 connection they begin the next request head.
    fn bytes_read(&self) {
        if self.active.load(Ordering::SeqCst) > 0 {
            return;
        }
        let mut timers = self.timers();
        if timers.head_deadline.is_none() {
            timers.head_deadline = Some(Instant::now() + self.timeouts.read_header);
            drop(timers);
            self.changed.notify_one();
        }
    }

    fn next_deadline(&self) -> Option<Deadline> {
        let timers = self.timers();
        if let Some(at) = timers.head_deadline {
            return Some(Deadline::Head(at));
        }
        if self.active.load(Ordering::SeqCst) > 0 {
            return None;
        }
        Some(Deadline::Idle(timers.idle_since + self.timeouts.idle))
    }
}

/// Held by a request until its response body is finished or dropped.
struct ActivityGuard(Arc<Activity>);

impl Drop for ActivityGuard {
    fn drop(&mut self) {
        if self.0.active.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.timers().idle_since = Instant::now();
            self.0.changed.notify_one();
        }
    }
}

/// The connection's IO, reporting reads to [`Activity`] (HTTP/1 only).
struct TimedIo<I> {
    inner: I,
    activity: Option<Arc<Activity>>,
}

impl<I: AsyncRead + Unpin> AsyncRead for TimedIo<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let result = Pin::new(&mut this.inner).poll_read(cx, buf);
        if buf.filled().len() > before
            && let Some(activity) = &this.activity
        {
            activity.bytes_read();
        }
        result
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for TimedIo<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
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

/// Whether a `Connection` header asks to close the connection.
fn asks_close(value: &HeaderValue) -> bool {
    value
        .to_str()
        .map(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case("close")))
        .unwrap_or(false)
}

/// Whether the driver must wake at `deadline` (an idle deadline no longer matters once the
/// connection is closing).
fn armed(deadline: Option<Deadline>, closing: bool) -> bool {
    match deadline {
        Some(Deadline::Head(_)) => true,
        Some(Deadline::Idle(_)) => !closing,
        None => false,
    }
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
    let is_h1 = protocol == Protocol::Http1;
    // Go's ReadHeaderTimeout only concerns HTTP/1 request heads; IdleTimeout both protocols.
    let activity = Arc::new(Activity::new(shared.timeouts, is_h1));
    let close = info.close_connection.clone();
    let is_h2 = protocol == Protocol::Http2;
    // hyper calls this on the connection's task (for HTTP/2, one task for every stream), so the
    // call itself only clones one Arc; the per-request work runs in the request's own future.
    let per_request = Arc::new((shared.handler.clone(), info, activity.clone()));
    let service = hyper::service::service_fn(move |req: http::Request<Incoming>| {
        let per_request = per_request.clone();
        async move {
            let (handler, info, svc_activity) = &*per_request;
            let guard = svc_activity.start();
            let handler = handler.clone();
            let info = info.clone();
            let close = info.close_connection.clone();
            let (parts, body) = req.into_parts();
            let mut req = http::Request::from_parts(parts, crate::body::boxed(body));
            req.extensions_mut().insert(info);
            let response = crate::filters::Next::new(handler).run(req).await;
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
    let io = TimedIo {
        inner: super::linger::LingeringClose::new(io),
        activity: is_h1.then(|| activity.clone()),
    };
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), service);
    tokio::pin!(conn);
    let mut closing = false;
    // HTTP/2: when a handler asked to close the connection. The GOAWAY goes out once that
    // request's response is done (as Go's server sends it after the handler's response), or
    // after CLOSE_AFTER_RESPONSE_LIMIT if other streams stay busy.
    let mut close_asked: Option<Instant> = None;
    loop {
        if let Some(asked) = close_asked
            && !closing
            && (activity.active.load(Ordering::SeqCst) == 0
                || asked.elapsed() >= CLOSE_AFTER_RESPONSE_LIMIT)
        {
            conn.as_mut().graceful_shutdown();
            closing = true;
        }
        let deadline = activity.next_deadline();
        let wake_at = match deadline {
            Some(Deadline::Head(at) | Deadline::Idle(at)) => at,
            None => Instant::now(),
        };
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
            _ = close.cancelled(), if !closing && close_asked.is_none() => {
                if is_h2 {
                    close_asked = Some(Instant::now());
                } else {
                    conn.as_mut().graceful_shutdown();
                    closing = true;
                }
            }
            _ = tokio::time::sleep_until(
                close_asked.map_or_else(Instant::now, |at| at + CLOSE_AFTER_RESPONSE_LIMIT)
            ), if close_asked.is_some() && !closing => {}
            _ = activity.changed.notified() => {}
            _ = tokio::time::sleep_until(wake_at), if armed(deadline, closing) => {
                match activity.next_deadline() {
                    Some(Deadline::Head(at)) if at <= Instant::now() => {
                        tracing::debug!("closing connection: request header not received in time");
                        return;
                    }
                    Some(Deadline::Idle(at)) if at <= Instant::now() && !closing => {
                        conn.as_mut().graceful_shutdown();
                        closing = true;
                    }
                    _ => {}
                }
            }
        }
    }
}
