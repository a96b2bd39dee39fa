//! Rejecting new requests once the server stopped accepting them (upstream `WithRetryAfter`,
//! shutdown mode "send Retry-After"): 429 with `Retry-After: 5` and a closed connection, so the
//! client retries against another server.

use std::future::Future;

use http::{HeaderValue, StatusCode, Version, header};

use super::{Filter, Next};
use crate::body::{Request, Response, go_http_error};
use crate::request::ConnectionInfo;
use crate::server::lifecycle::Signal;

/// Path prefixes that are always served during shutdown (health and metrics), so load
/// balancers and monitoring keep seeing the truth.
const EXEMPT_PATH_PREFIXES: [&str; 4] = ["/readyz", "/livez", "/healthz", "/metrics"];

/// The message of the shutdown 429.
pub const SHUTTING_DOWN_MESSAGE: &str = "The apiserver is shutting down, please try again later.";

/// Whether a request is served even while shutting down (upstream
/// `isRequestExemptFromRetryAfter`): health/metrics paths and requests from other
/// kube-apiservers (User-Agent `kube-apiserver/…`). Also used by the wait-group filter.
pub fn is_request_exempt_from_retry_after(req: &Request) -> bool {
    let path = req.uri().path();
    if EXEMPT_PATH_PREFIXES.iter().any(|p| path.starts_with(p)) {
        return true;
    }
    req.headers()
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ua| ua.starts_with("kube-apiserver/"))
}

/// Asks the connection a request arrived on to close after this response. HTTP/2 cannot carry
/// `Connection: close`, so for it the connection's close token is cancelled (the serving layer
/// then sends GOAWAY); HTTP/1 gets the header.
pub(crate) fn request_connection_close(req: &Request, response: &mut Response) {
    if req.version() == Version::HTTP_2 {
        if let Some(conn) = req.extensions().get::<ConnectionInfo>() {
            conn.close_connection.cancel();
        }
    } else {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
}

/// Answers 429 to non-exempt requests once NotAcceptingNewRequest fired.
#[derive(Debug, Clone)]
pub struct RetryAfter {
    not_accepting_new_requests: Option<Signal>,
}

impl RetryAfter {
    /// A filter observing the NotAcceptingNewRequest signal; `None` disables it.
    pub fn new(not_accepting_new_requests: Option<Signal>) -> Self {
        RetryAfter {
            not_accepting_new_requests,
        }
    }
}

impl Filter for RetryAfter {
    fn call(&self, req: Request, next: Next) -> impl Future<Output = Response> + Send + 'static {
        let reject = self
            .not_accepting_new_requests
            .as_ref()
            .is_some_and(Signal::signaled)
            && !is_request_exempt_from_retry_after(&req);
        async move {
            if !reject {
                return next.run(req).await;
            }
            let mut response = go_http_error(StatusCode::TOO_MANY_REQUESTS, SHUTTING_DOWN_MESSAGE);
            request_connection_close(&req, &mut response);
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            response
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tower::{Layer, ServiceExt};

    use super::*;
    use crate::body::{full, read_limited};
    use crate::filters::{FilterLayer, service_fn};
    use crate::server::waitgroup::SafeWaitGroup;

    fn request(path: &str, user_agent: Option<&str>) -> Request {
        let mut b = http::Request::get(path);
        if let Some(ua) = user_agent {
            b = b.header("User-Agent", ua);
        }
        b.body(full("")).unwrap()
    }

    #[tokio::test]
    #[allow(clippy::type_complexity)] // a test table
    async fn with_retry_after() {
        let fired = Signal::new("NotAcceptingNewRequest");
        fired.fire();
        let unfired = Signal::new("NotAcceptingNewRequest");
        // (name, signal, path, user agent, handler invoked, 429 expected)
        let cases: Vec<(&str, Option<Signal>, &str, Option<&str>, bool)> = vec![
            ("disabled", Some(unfired), "/api/v1/namespaces", None, false),
            (
                "enabled, not exempt",
                Some(fired.clone()),
                "/api/v1/namespaces",
                None,
                true,
            ),
            (
                "enabled, /metrics",
                Some(fired.clone()),
                "/metrics",
                None,
                false,
            ),
            (
                "enabled, /livez",
                Some(fired.clone()),
                "/livez",
                None,
                false,
            ),
            (
                "enabled, /readyz",
                Some(fired.clone()),
                "/readyz",
                None,
                false,
            ),
            (
                "enabled, /healthz",
                Some(fired.clone()),
                "/healthz",
                None,
                false,
            ),
            (
                "enabled, /readyz/ping",
                Some(fired.clone()),
                "/readyz/ping",
                None,
                false,
            ),
            (
                "enabled, kube-apiserver agent",
                Some(fired.clone()),
                "/api/v1/namespaces",
                Some("kube-apiserver/v1.35.0 (linux/amd64) kubernetes/abc"),
                false,
            ),
            (
                "enabled, other agent",
                Some(fired.clone()),
                "/api/v1/namespaces",
                Some("kubectl/v1.35.0"),
                true,
            ),
            ("no signal", None, "/api/v1/namespaces", None, false),
        ];
        for (name, signal, path, ua, rejected) in cases {
            let invoked = Arc::new(AtomicUsize::new(0));
            let counter = invoked.clone();
            let svc =
                FilterLayer::new(RetryAfter::new(signal)).layer(service_fn(move |_r: Request| {
                    let counter = counter.clone();
                    async move {
                        counter.fetch_add(1, Ordering::SeqCst);
                        http::Response::new(full("ok"))
                    }
                }));
            let resp = svc.oneshot(request(path, ua)).await.unwrap();
            if rejected {
                assert_eq!(invoked.load(Ordering::SeqCst), 0, "{name}");
                assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS, "{name}");
                assert_eq!(resp.headers()["retry-after"], "5", "{name}");
                assert_eq!(resp.headers()["connection"], "close", "{name}");
                assert_eq!(resp.headers()["x-content-type-options"], "nosniff");
                let body = read_limited(resp.into_body(), 0).await.unwrap().unwrap();
                assert_eq!(
                    body,
                    "The apiserver is shutting down, please try again later.\n"
                );
            } else {
                assert_eq!(invoked.load(Ordering::SeqCst), 1, "{name}");
                assert_eq!(resp.status(), StatusCode::OK, "{name}");
                assert!(resp.headers().get("retry-after").is_none(), "{name}");
            }
        }
    }

    #[tokio::test]
    async fn http2_rejection_cancels_connection_instead_of_header() {
        let fired = Signal::new("NotAcceptingNewRequest");
        fired.fire();
        let conn = ConnectionInfo::local();
        let mut req = request("/api/v1/pods", None);
        *req.version_mut() = Version::HTTP_2;
        req.extensions_mut().insert(conn.clone());
        let svc =
            FilterLayer::new(RetryAfter::new(Some(fired))).layer(service_fn(|_r: Request| async {
                http::Response::new(full(""))
            }));
        let resp = svc.oneshot(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
        assert!(resp.headers().get("connection").is_none());
        assert!(conn.close_connection.is_cancelled());
    }

    #[tokio::test]
    async fn exempt_request_passes_while_wait_group_waits() {
        let wg = SafeWaitGroup::new();
        wg.wait().await;
        assert!(wg.add().is_err());
        assert!(is_request_exempt_from_retry_after(&request(
            "/readyz", None
        )));
    }
}
