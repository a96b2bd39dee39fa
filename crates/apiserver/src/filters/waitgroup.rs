//! Tracking non-long-running requests so shutdown can drain them (upstream `WithWaitGroup`).
//! Once draining began, new non-exempt requests get a 503 asking for a quick retry, since the
//! client most likely reaches another server.

use std::future::Future;

use http::{HeaderValue, StatusCode, header};

use super::body_guard::hold_until_body_end;
use super::request_info::internal_error;
use super::retry_after::is_request_exempt_from_retry_after;
use super::{Filter, Next};
use crate::body::{Request, Response, full};
use crate::request::{LongRunning, RequestInfo};
use crate::server::waitgroup::SafeWaitGroup;
use crate::status::{Status, reason};

/// The 503 sent once a wait group refuses new members: `Retry-After: 1`, JSON Status
/// `apiserver is shutting down`, with an extra newline after the encoder's (upstream prints
/// the encoded object with `Fprintln`).
pub fn shutting_down_response() -> Response {
    let status = Status::failure(
        StatusCode::SERVICE_UNAVAILABLE,
        reason::SERVICE_UNAVAILABLE,
        "apiserver is shutting down",
    );
    let mut body = status.to_json_line();
    body.push(b'\n');
    let mut response = http::Response::new(full(body));
    *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    let headers = response.headers_mut();
    headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// Adds every non-long-running request to the wait group until its response body was sent.
#[derive(Debug, Clone)]
pub struct WaitGroupFilter {
    wait_group: SafeWaitGroup,
}

impl WaitGroupFilter {
    /// A filter tracking requests in `wait_group` (the server's non-long-running group).
    pub fn new(wait_group: SafeWaitGroup) -> Self {
        WaitGroupFilter { wait_group }
    }
}

impl Filter for WaitGroupFilter {
    fn call(&self, req: Request, next: Next) -> impl Future<Output = Response> + Send + 'static {
        let wait_group = self.wait_group.clone();
        async move {
            if req.extensions().get::<RequestInfo>().is_none() {
                return internal_error(&req, "no RequestInfo found in the context");
            }
            if req.extensions().get::<LongRunning>().is_some_and(|l| l.0) {
                return next.run(req).await;
            }
            match wait_group.add() {
                Ok(guard) => {
                    let response = next.run(req).await;
                    hold_until_body_end(response, guard)
                }
                Err(_) if is_request_exempt_from_retry_after(&req) => next.run(req).await,
                Err(_) => shutting_down_response(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::sync::oneshot;
    use tower::{Layer, ServiceExt};

    use super::*;
    use crate::body::read_limited;
    use crate::filters::{FilterLayer, HttpService, service_fn};

    fn svc(wg: &SafeWaitGroup) -> HttpService {
        FilterLayer::new(WaitGroupFilter::new(wg.clone())).layer(service_fn(|_r: Request| async {
            http::Response::new(full("ok"))
        }))
    }

    fn request(path: &str, long_running: bool, info: bool) -> Request {
        let mut req = http::Request::get(path).body(full("")).unwrap();
        if info {
            req.extensions_mut().insert(RequestInfo::default());
        }
        req.extensions_mut().insert(LongRunning(long_running));
        req
    }

    #[tokio::test]
    async fn no_request_info_is_500() {
        let wg = SafeWaitGroup::new();
        let resp = svc(&wg).oneshot(request("/x", false, false)).await.unwrap();
        assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = read_limited(resp.into_body(), 0).await.unwrap().unwrap();
        assert_eq!(
            body,
            "Internal Server Error: \"/x\": no RequestInfo found in the context\n"
        );
    }

    #[tokio::test]
    async fn tracked_until_body_sent() {
        let wg = SafeWaitGroup::new();
        let resp = svc(&wg).oneshot(request("/x", false, true)).await.unwrap();
        assert_eq!(wg.count(), 1);
        let body = read_limited(resp.into_body(), 0).await.unwrap().unwrap();
        assert_eq!(body, "ok");
        assert_eq!(wg.count(), 0);
    }

    #[tokio::test]
    async fn long_running_untracked() {
        let wg = SafeWaitGroup::new();
        let (tx, rx) = oneshot::channel::<usize>();
        let wg2 = wg.clone();
        let tx = std::sync::Arc::new(std::sync::Mutex::new(Some(tx)));
        let svc = FilterLayer::new(WaitGroupFilter::new(wg.clone())).layer(service_fn(
            move |_r: Request| {
                let (wg2, tx) = (wg2.clone(), tx.clone());
                async move {
                    if let Some(tx) = tx.lock().unwrap().take() {
                        tx.send(wg2.count()).unwrap();
                    }
                    http::Response::new(full("ok"))
                }
            },
        ));
        let resp = svc.oneshot(request("/x", true, true)).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(rx.await.unwrap(), 0);
    }

    #[tokio::test]
    async fn after_wait_rejects_non_exempt_with_503() {
        let wg = SafeWaitGroup::new();
        wg.wait().await;
        let resp = svc(&wg)
            .oneshot(request("/api/v1/pods", false, true))
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(resp.headers()["retry-after"], "1");
        assert_eq!(resp.headers()["content-type"], "application/json");
        assert_eq!(resp.headers()["x-content-type-options"], "nosniff");
        let body = read_limited(resp.into_body(), 0).await.unwrap().unwrap();
        assert_eq!(
            body,
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"apiserver is shutting down\",\"reason\":\"ServiceUnavailable\",\"code\":503}\n\n"
        );

        // Exempt requests pass untracked.
        let resp = svc(&wg)
            .oneshot(request("/readyz", false, true))
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        let mut req = request("/api/v1/pods", false, true);
        req.headers_mut().insert(
            "user-agent",
            HeaderValue::from_static("kube-apiserver/1.35"),
        );
        let resp = svc(&wg).oneshot(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(wg.count(), 0);
    }

    #[tokio::test]
    async fn wait_waits_for_in_flight_response_body() {
        let wg = SafeWaitGroup::new();
        let resp = svc(&wg).oneshot(request("/x", false, true)).await.unwrap();
        let waiter = {
            let wg = wg.clone();
            tokio::spawn(async move { wg.wait().await })
        };
        while !wg.is_waiting() {
            tokio::task::yield_now().await;
        }
        assert!(!waiter.is_finished());
        read_limited(resp.into_body(), 0).await.unwrap();
        waiter.await.unwrap();
    }
}
