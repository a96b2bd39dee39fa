//! The request timeout (upstream `WithTimeoutForNonLongRunningRequests`): when a request's
//! deadline passes before its handler produced a response, the client gets a 504; when it passes
//! while the response body is still streaming, the response is aborted. The handler itself is
//! never cancelled: it runs on in the background (it may be mid-way through a storage write).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use http_body::{Body as HttpBody, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use super::panic_recovery::AbortHandler;
use super::warning::recorder_for;
use super::{Filter, Next};
use crate::body::{Body, BoxError, Request, Response, TEXT_PLAIN_UTF8, boxed, full};
use crate::request::{LongRunning, RequestDeadline};
use crate::status::{Status, StatusDetails, reason};

/// The 504 body: a Status without kind and apiVersion (upstream encodes the bare struct).
pub fn timeout_response() -> Response {
    let status = Status {
        status: "Failure".into(),
        message: "Timeout: request did not complete within the allotted timeout".into(),
        reason: reason::TIMEOUT.into(),
        details: Some(StatusDetails::default()),
        code: 504,
        ..Default::default()
    };
    let mut response = http::Response::new(full(status.to_json_line()));
    *response.status_mut() = StatusCode::GATEWAY_TIMEOUT;
    // Upstream sets no content type; Go sniffs this body as text.
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(TEXT_PLAIN_UTF8),
    );
    response
}

/// Enforces [`RequestDeadline`] on non-long-running requests.
#[derive(Debug, Clone, Default)]
pub struct TimeoutFilter;

impl TimeoutFilter {
    /// The filter.
    pub fn new() -> Self {
        TimeoutFilter
    }
}

impl Filter for TimeoutFilter {
    fn call(
        &self,
        mut req: Request,
        next: Next,
    ) -> impl Future<Output = Response> + Send + 'static {
        let long_running = req.extensions().get::<LongRunning>().is_some_and(|l| l.0);
        let deadline = req.extensions().get::<RequestDeadline>().copied();
        async move {
            let Some(deadline) = deadline.filter(|_| !long_running) else {
                return next.run(req).await;
            };
            let deadline = Instant::from_std(deadline.0);
            // Created here so it can be closed on timeout: warnings added afterwards by the
            // still-running handler are dropped instead of racing the response.
            let recorder = recorder_for(&mut req);
            // The handler is polled in place; only when the deadline wins is it moved to a
            // task of its own, so it runs on to completion as upstream's goroutine does
            // without costing a task per request.
            let mut handler = next.run(req);
            let sleep = tokio::time::sleep_until(deadline);
            tokio::pin!(sleep);
            tokio::select! {
                biased;
                response = &mut handler => with_body_deadline(response, deadline),
                _ = &mut sleep => {
                    recorder.close();
                    tokio::spawn(handler);
                    timeout_response()
                }
            }
        }
    }
}

fn with_body_deadline(response: Response, deadline: Instant) -> Response {
    if response.body().is_end_stream() {
        return response;
    }
    let (parts, inner) = response.into_parts();
    let body = DeadlineBody {
        inner,
        sleep: Box::pin(tokio::time::sleep_until(deadline)),
    };
    Response::from_parts(parts, boxed(body))
}

/// Fails with [`AbortHandler`] if the deadline passes before the body ended (upstream panics
/// with `http.ErrAbortHandler` when the deadline hits after the handler started writing).
struct DeadlineBody {
    inner: Body,
    sleep: Pin<Box<Sleep>>,
}

impl HttpBody for DeadlineBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(frame);
        }
        match self.sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(AbortHandler)))),
            Poll::Pending => Poll::Pending,
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
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use futures::FutureExt;
    use http_body_util::BodyExt;
    use tokio::sync::{Notify, mpsc};
    use tower::{Layer, ServiceExt};

    use super::*;
    use crate::body::read_limited;
    use crate::filters::cache_control::CacheControl;
    use crate::filters::warning::WarningFilter;
    use crate::filters::{FilterLayer, HttpService, service_fn};
    use crate::request::warning::{WarningRecorder, add_warning};

    const TIMEOUT_BODY: &str = "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"Timeout: request did not complete within the allotted timeout\",\"reason\":\"Timeout\",\"details\":{},\"code\":504}\n";

    fn request(timeout: Duration) -> Request {
        let mut req = http::Request::get("/api/v1/pods").body(full("")).unwrap();
        req.extensions_mut()
            .insert(RequestDeadline((Instant::now() + timeout).into_std()));
        req.extensions_mut().insert(LongRunning(false));
        req
    }

    fn with_timeout(inner: HttpService) -> HttpService {
        FilterLayer::new(TimeoutFilter::new()).layer(inner)
    }

    #[tokio::test(start_paused = true)]
    async fn completes_normally_before_deadline() {
        let svc = with_timeout(service_fn(|_r: Request| async {
            let mut r = http::Response::new(full("ok"));
            r.headers_mut()
                .insert("x-inner", HeaderValue::from_static("1"));
            r
        }));
        let resp = svc.oneshot(request(Duration::from_secs(1))).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(resp.headers()["x-inner"], "1");
        assert_eq!(
            read_limited(resp.into_body(), 0).await.unwrap().unwrap(),
            "ok"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn timeout_writes_504_and_handler_runs_on() {
        let release = Arc::new(Notify::new());
        let (done_tx, mut done_rx) = mpsc::unbounded_channel::<()>();
        let recorder_slot: Arc<Mutex<Option<Arc<WarningRecorder>>>> = Arc::default();
        let inner = {
            let (release, slot) = (release.clone(), recorder_slot.clone());
            service_fn(move |req: Request| {
                let (release, done_tx, slot) = (release.clone(), done_tx.clone(), slot.clone());
                async move {
                    *slot.lock().unwrap() = req.extensions().get::<Arc<WarningRecorder>>().cloned();
                    release.notified().await;
                    // Late warnings are dropped safely.
                    add_warning(req.extensions(), "", "too late");
                    done_tx.send(()).unwrap();
                    let mut r = http::Response::new(full("late"));
                    r.headers_mut()
                        .insert("x-inner", HeaderValue::from_static("1"));
                    r
                }
            })
        };
        // Outer filter headers are kept on the 504, inner handler headers are not.
        let svc = FilterLayer::new(CacheControl::new()).layer(with_timeout(
            FilterLayer::new(WarningFilter::new()).layer(inner),
        ));
        let resp = svc.oneshot(request(Duration::from_secs(1))).await.unwrap();
        assert_eq!(resp.status(), StatusCode::GATEWAY_TIMEOUT);
        assert_eq!(resp.headers()["content-type"], "text/plain; charset=utf-8");
        assert_eq!(resp.headers()["cache-control"], "no-cache, private");
        assert!(resp.headers().get("x-inner").is_none());
        assert!(resp.headers().get("warning").is_none());
        let body = read_limited(resp.into_body(), 0).await.unwrap().unwrap();
        assert_eq!(body, TIMEOUT_BODY);

        // The handler was not cancelled: it completes in the background.
        release.notify_one();
        done_rx.recv().await.unwrap();
        let recorder = recorder_slot.lock().unwrap().clone().unwrap();
        assert!(recorder.header_values().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn body_still_streaming_at_deadline_is_aborted() {
        let svc = with_timeout(service_fn(|_r: Request| async {
            let (mut tx, body) = http_body_util::channel::Channel::<Bytes, BoxError>::new(1);
            tokio::spawn(async move {
                tx.send_data(Bytes::from_static(b"partial")).await.unwrap();
                // Never finishes; keep the sender alive.
                std::future::pending::<()>().await;
            });
            http::Response::new(boxed(body))
        }));
        let resp = svc.oneshot(request(Duration::from_secs(1))).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        let mut body = resp.into_body();
        let first = body.frame().await.unwrap().unwrap();
        assert_eq!(first.into_data().unwrap(), "partial");
        let err = body.frame().await.unwrap().unwrap_err();
        assert!(err.downcast_ref::<AbortHandler>().is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn panics_propagate() {
        let svc = with_timeout(service_fn(|_r: Request| async {
            if true {
                panic!("inner panic");
            }
            http::Response::new(full(""))
        }));
        let result = std::panic::AssertUnwindSafe(svc.oneshot(request(Duration::from_secs(1))))
            .catch_unwind()
            .await;
        let payload = result.unwrap_err();
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"inner panic"));
    }

    #[tokio::test(start_paused = true)]
    async fn long_running_and_no_deadline_pass_through() {
        let svc = with_timeout(service_fn(|_r: Request| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            http::Response::new(full("watch"))
        }));
        let mut req = request(Duration::from_secs(1));
        req.extensions_mut().insert(LongRunning(true));
        let resp = svc.clone().oneshot(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);

        let req = http::Request::get("/").body(full("")).unwrap();
        let resp = svc.oneshot(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
    }
}
