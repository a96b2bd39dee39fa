//! The deadline of non-long-running requests (upstream `WithRequestDeadline`): the server's
//! request timeout (60 s), or a shorter `?timeout=` given by the client.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::StatusCode;

use super::{Filter, Next};
use crate::audit::Auditor;
use crate::body::{Request, Response, go_http_error};
use crate::request::requestinfo::parse_query;
use crate::request::{LongRunning, ReceivedTimestamp, RequestDeadline, RequestInfo};
use crate::status::ApiError;
use crate::util::duration::parse_signed;

/// The default of `--request-timeout`.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Inserts [`RequestDeadline`] into non-long-running requests.
#[derive(Debug, Clone)]
pub struct RequestDeadlineFilter {
    request_timeout: Duration,
    auditor: Option<Arc<Auditor>>,
}

impl RequestDeadlineFilter {
    /// A filter with the server's `request_timeout` (the upper bound of `?timeout=`).
    pub fn new(request_timeout: Duration) -> Self {
        RequestDeadlineFilter {
            request_timeout,
            auditor: None,
        }
    }

    /// Audits the 400 of an invalid `?timeout=` (the filter runs before the audit filter, so
    /// upstream audits that failure itself).
    pub fn with_auditor(mut self, auditor: Option<Arc<Auditor>>) -> Self {
        self.auditor = auditor;
        self
    }
}

/// The `?timeout=` of a request: `Ok(None)` when absent or empty, the parse error message
/// otherwise. Negative values parse (as Go's `time.ParseDuration` does) and count as unset.
fn parse_timeout(req: &Request) -> Result<Option<Duration>, String> {
    let query = parse_query(req.uri().query().unwrap_or(""));
    let Some((_, value)) = query.iter().find(|(k, _)| k == "timeout") else {
        return Ok(None);
    };
    if value.is_empty() {
        return Ok(None);
    }
    match parse_signed(value) {
        Ok((true, _)) => Ok(Some(Duration::ZERO)),
        Ok((false, d)) => Ok(Some(d)),
        Err(err) => Err(format!(
            "invalid timeout specified in the request URL - {err}"
        )),
    }
}

impl Filter for RequestDeadlineFilter {
    fn call(
        &self,
        mut req: Request,
        next: Next,
    ) -> impl Future<Output = Response> + Send + 'static {
        let default_timeout = self.request_timeout;
        let auditor = self.auditor.clone();
        async move {
            if req.extensions().get::<RequestInfo>().is_none() {
                return go_http_error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "no RequestInfo found in context, handler chain must be wrong",
                );
            }
            if req.extensions().get::<LongRunning>().is_some_and(|l| l.0) {
                return next.run(req).await;
            }
            let user_timeout = match parse_timeout(&req) {
                Ok(t) => t,
                Err(message) => {
                    tracing::error!(uri = %req.uri(), "Error - {message}");
                    if let Some(auditor) = auditor {
                        let (parts, _body) = req.into_parts();
                        auditor.audit_failed_request(&parts, 400, &message);
                    }
                    return ApiError::bad_request(message).0.into_response();
                }
            };
            // A zero timeout means "none of the client's own"; larger than the server's is
            // capped by the server's.
            let timeout = match user_timeout {
                Some(t) if !t.is_zero() && t < default_timeout => t,
                _ => default_timeout,
            };
            let started = req
                .extensions()
                .get::<ReceivedTimestamp>()
                .map_or_else(Instant::now, |t| t.instant);
            req.extensions_mut()
                .insert(RequestDeadline(started + timeout));
            next.run(req).await
        }
    }
}

#[cfg(test)]
mod tests {
    use tower::{Layer, ServiceExt};

    use super::*;
    use crate::body::{full, read_limited};
    use crate::filters::{FilterLayer, service_fn};

    async fn run(uri: &str, long_running: bool) -> (Response, Option<Duration>) {
        let received = ReceivedTimestamp::now();
        let svc = FilterLayer::new(RequestDeadlineFilter::new(DEFAULT_REQUEST_TIMEOUT)).layer(
            service_fn(|req: Request| async move {
                let mut resp = http::Response::new(full("ok"));
                if let Some(d) = req.extensions().get::<RequestDeadline>() {
                    resp.extensions_mut().insert(*d);
                }
                resp
            }),
        );
        let mut req = http::Request::get(uri).body(full("")).unwrap();
        req.extensions_mut().insert(RequestInfo::default());
        req.extensions_mut().insert(LongRunning(long_running));
        req.extensions_mut().insert(received);
        let resp = svc.oneshot(req).await.unwrap();
        let timeout = resp
            .extensions()
            .get::<RequestDeadline>()
            .map(|d| d.0 - received.instant);
        (resp, timeout)
    }

    #[tokio::test]
    async fn with_request_deadline() {
        let cases = [
            ("/api/v1/namespaces", Some(60)),
            ("/api/v1/namespaces?timeout=10s", Some(10)),
            ("/api/v1/namespaces?timeout=0s", Some(60)),
            ("/api/v1/namespaces?timeout=2m", Some(60)),
            ("/api/v1/namespaces?timeout=-5s", Some(60)),
            ("/api/v1/namespaces?timeout=", Some(60)),
        ];
        for (uri, expected) in cases {
            let (resp, timeout) = run(uri, false).await;
            assert_eq!(resp.status(), StatusCode::OK, "{uri}");
            assert_eq!(timeout, expected.map(Duration::from_secs), "{uri}");
        }
        let (resp, timeout) = run("/api/v1/namespaces?timeout=500ms", false).await;
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(timeout, Some(Duration::from_millis(500)));

        let (resp, timeout) = run("/api/v1/namespaces?watch=true&timeout=10s", true).await;
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(timeout, None);
    }

    #[tokio::test]
    async fn malformed_timeout_is_400() {
        let (resp, timeout) = run("/api/v1/namespaces?timeout=foo", false).await;
        assert_eq!(timeout, None);
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
        let body = read_limited(resp.into_body(), 0).await.unwrap().unwrap();
        assert_eq!(
            body,
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"invalid timeout specified in the request URL - time: invalid duration \\\"foo\\\"\",\"reason\":\"BadRequest\",\"code\":400}\n"
        );
    }

    #[tokio::test]
    async fn no_request_info_is_500() {
        let svc = FilterLayer::new(RequestDeadlineFilter::new(DEFAULT_REQUEST_TIMEOUT)).layer(
            service_fn(|_r: Request| async { http::Response::new(full("")) }),
        );
        let req = http::Request::get("/").body(full("")).unwrap();
        let resp = svc.oneshot(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
    }

    #[tokio::test]
    async fn malformed_timeout_is_audited_at_response_started() {
        use crate::audit::buffered::tests::MemoryBackend;
        use crate::audit::level::{Level, Stage};
        use crate::audit::policy::{Policy, PolicyRule};
        use crate::audit::{AuditContext, Auditor};

        let memory = Arc::new(MemoryBackend::default());
        let policy = Policy {
            rules: vec![PolicyRule {
                level: Some(Level::Metadata),
                ..Default::default()
            }],
            ..Default::default()
        };
        let auditor = Auditor::new(policy, memory.clone());
        let svc = FilterLayer::new(
            RequestDeadlineFilter::new(DEFAULT_REQUEST_TIMEOUT).with_auditor(Some(auditor)),
        )
        .layer(service_fn(|_req: Request| async {
            http::Response::new(full("ok"))
        }));
        let mut req = http::Request::get("/api/v1/pods?timeout=foo")
            .body(full(""))
            .unwrap();
        req.extensions_mut().insert(RequestInfo::default());
        req.extensions_mut()
            .insert(AuditContext::new("id-1".into()));
        let resp = svc.oneshot(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
        let events = memory.events();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].stage, Stage::ResponseStarted);
        let status = events[0].response_status.as_ref().unwrap();
        assert_eq!(status.code, 400);
        assert_eq!(
            status.message,
            "invalid timeout specified in the request URL - time: invalid duration \"foo\""
        );
    }
}
