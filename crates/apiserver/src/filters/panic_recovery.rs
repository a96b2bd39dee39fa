//! Panic recovery (upstream `WithPanicRecovery`). A panicking handler must not take the server
//! down, and, as upstream re-raises the panic so net/http aborts the connection, the client
//! observes a transport error rather than a response: here the response body fails at once,
//! which makes hyper reset the HTTP/2 stream or close the HTTP/1 connection.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::FutureExt;
use http_body::{Body as HttpBody, Frame, SizeHint};

use super::{Filter, Next};
use crate::body::{Body, BoxError, Request, Response, boxed};

/// The analogue of Go's `http.ErrAbortHandler`: a deliberate abort of the response (the timeout
/// filter uses it when the deadline passes while a body is streaming). It is both the error an
/// aborting body yields and a panic payload recognised by [`PanicRecovery`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("net/http: abort Handler")]
pub struct AbortHandler;

/// A body whose first poll fails with [`AbortHandler`].
struct AbortingBody;

impl HttpBody for AbortingBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        Poll::Ready(Some(Err(Box::new(AbortHandler))))
    }
}

/// A body that fails immediately, so the client sees the connection (HTTP/1) or stream
/// (HTTP/2) aborted instead of a response.
pub fn aborting_body() -> Body {
    boxed(AbortingBody)
}

/// A response that aborts the connection or stream (see [`aborting_body`]).
pub fn aborting_response() -> Response {
    http::Response::new(aborting_body())
}

thread_local! {
    /// How many request scopes this thread is polling in (the chain can nest them).
    static REQUEST_SCOPES: Cell<u32> = const { Cell::new(0) };
    /// Where the last panic inside a request scope happened, for the filter's log line.
    static LAST_LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

static HOOK: std::sync::Once = std::sync::Once::new();

/// Installs (once per process) a panic hook that keeps panics caught by [`PanicRecovery`]
/// quiet: inside a request it only records where the panic happened, for the filter's single
/// log line. Rust's default hook prints several lines per panic and, with `RUST_BACKTRACE`
/// set, captures and symbolises a backtrace, which loads the debug information into memory
/// (hundreds of MiB) — neither belongs on a request path. Panics anywhere else go to the
/// hook that was installed before.
pub fn install_panic_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if REQUEST_SCOPES.with(Cell::get) > 0 {
                let location = info
                    .location()
                    .map(|l| format!("{}:{}", l.file(), l.line()));
                LAST_LOCATION.with(|last| *last.borrow_mut() = location);
            } else {
                previous(info);
            }
        }));
    });
}

/// Runs `f` as part of a request: a panic inside it is recovered by the chain.
fn in_request_scope<T>(f: impl FnOnce() -> T) -> T {
    struct Exit;
    impl Drop for Exit {
        fn drop(&mut self) {
            REQUEST_SCOPES.with(|n| n.set(n.get().saturating_sub(1)));
        }
    }
    REQUEST_SCOPES.with(|n| n.set(n.get() + 1));
    let _exit = Exit;
    f()
}

/// Catches panics of the rest of the chain (while producing the response head and while
/// streaming the body), logs them in one line, and aborts the response.
#[derive(Debug, Clone)]
pub struct PanicRecovery;

impl Default for PanicRecovery {
    fn default() -> Self {
        Self::new()
    }
}

impl PanicRecovery {
    /// The filter; installs the quiet panic hook ([`install_panic_hook`]).
    pub fn new() -> Self {
        install_panic_hook();
        PanicRecovery
    }
}

impl Filter for PanicRecovery {
    fn call(&self, req: Request, next: Next) -> impl Future<Output = Response> + Send + 'static {
        let method = req.method().clone();
        let uri = req.uri().clone();
        async move {
            let mut handler = std::pin::pin!(next.run(req));
            let scoped = std::future::poll_fn(|cx| in_request_scope(|| handler.as_mut().poll(cx)));
            match AssertUnwindSafe(scoped).catch_unwind().await {
                Ok(response) => {
                    let (parts, body) = response.into_parts();
                    let body = boxed(CatchUnwindBody {
                        inner: body,
                        method: method.clone(),
                        uri: uri.clone(),
                    });
                    Response::from_parts(parts, body)
                }
                Err(payload) => {
                    log_panic(&method, &uri, payload.as_ref());
                    aborting_response()
                }
            }
        }
    }
}

fn log_panic(method: &http::Method, uri: &http::Uri, payload: &(dyn Any + Send)) {
    if payload.is::<AbortHandler>() {
        tracing::debug!(%method, %uri, "Timeout or abort while handling");
        return;
    }
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "<non-string panic payload>".to_string());
    let location = LAST_LOCATION
        .with(|last| last.borrow_mut().take())
        .unwrap_or_else(|| "unknown location".to_string());
    tracing::error!(%method, %uri, panic = %message, %location, "apiserver panic'd");
}

/// Turns a panic while polling the body into a logged abort.
struct CatchUnwindBody {
    inner: Body,
    method: http::Method,
    uri: http::Uri,
}

impl HttpBody for CatchUnwindBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        let inner = &mut this.inner;
        match std::panic::catch_unwind(AssertUnwindSafe(|| {
            in_request_scope(|| Pin::new(inner).poll_frame(cx))
        })) {
            Ok(polled) => polled,
            Err(payload) => {
                log_panic(&this.method, &this.uri, payload.as_ref());
                Poll::Ready(Some(Err(Box::new(AbortHandler))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;
    use tower::{Layer, ServiceExt};

    use super::*;
    use crate::body::full;
    use crate::filters::{FilterLayer, service_fn};

    fn get() -> Request {
        http::Request::get("/api/v1/pods").body(full("")).unwrap()
    }

    #[tokio::test]
    async fn passes_normal_responses() {
        let svc = FilterLayer::new(PanicRecovery::new()).layer(service_fn(|_r: Request| async {
            http::Response::new(full("ok"))
        }));
        let resp = svc.oneshot(get()).await.unwrap();
        assert_eq!(resp.into_body().collect().await.unwrap().to_bytes(), "ok");
    }

    #[tokio::test]
    async fn handler_panic_becomes_transport_error() {
        let svc = FilterLayer::new(PanicRecovery::new()).layer(service_fn(|_r: Request| async {
            if true {
                panic!("boom");
            }
            http::Response::new(full("unreachable"))
        }));
        let resp = svc.oneshot(get()).await.unwrap();
        let err = resp.into_body().collect().await.unwrap_err();
        assert!(err.downcast_ref::<AbortHandler>().is_some());
    }

    #[tokio::test]
    async fn abort_handler_panic_is_recognised() {
        let svc = FilterLayer::new(PanicRecovery::new()).layer(service_fn(|_r: Request| async {
            if true {
                std::panic::panic_any(AbortHandler);
            }
            http::Response::new(full("unreachable"))
        }));
        let resp = svc.oneshot(get()).await.unwrap();
        assert!(resp.into_body().collect().await.is_err());
    }

    struct PanickingBody;
    impl HttpBody for PanickingBody {
        type Data = Bytes;
        type Error = BoxError;
        fn poll_frame(
            self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
            panic!("body boom")
        }
    }

    #[tokio::test]
    async fn body_panic_becomes_transport_error() {
        let svc = FilterLayer::new(PanicRecovery::new()).layer(service_fn(|_r: Request| async {
            http::Response::new(boxed(PanickingBody))
        }));
        let resp = svc.oneshot(get()).await.unwrap();
        assert!(resp.into_body().collect().await.is_err());
    }

    /// Like upstream's `TestPropogatingPanic`: over a real HTTP/1.1 connection the client sees
    /// a transport error, not a response it could mistake for success.
    #[tokio::test]
    async fn client_observes_transport_error_over_http1() {
        use hyper_util::rt::TokioIo;
        use hyper_util::service::TowerToHyperService;

        let svc = FilterLayer::new(PanicRecovery::new()).layer(service_fn(|_r: Request| async {
            if true {
                panic!("boom");
            }
            http::Response::new(full("unreachable"))
        }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // Served in this task (joined below) rather than spawned: the boxed service's
        // connection future is not provably Send to rustc.
        let server = async move {
            let (stream, _) = listener.accept().await.unwrap();
            let service = TowerToHyperService::new(svc.map_request(
                |req: http::Request<hyper::body::Incoming>| req.map(crate::body::boxed),
            ));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        };
        let client = async move {
            let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
            let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .unwrap();
            tokio::spawn(conn);
            let req = http::Request::get("/api/v1/pods")
                .header("host", "localhost")
                .body(http_body_util::Empty::<Bytes>::new())
                .unwrap();
            match sender.send_request(req).await {
                Err(_) => Err(()),
                Ok(resp) => resp.into_body().collect().await.map(|_| ()).map_err(|_| ()),
            }
        };
        let ((), outcome) = tokio::join!(server, client);
        assert!(outcome.is_err(), "client must observe a transport error");
    }
}
