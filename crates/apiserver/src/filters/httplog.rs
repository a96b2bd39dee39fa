//! Per-request access logging (upstream `httplog.WithLogging`): verb, URI, latency, user agent,
//! audit ID and status. No effect on the HTTP exchange.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use http::StatusCode;

use super::{Filter, Next};
use crate::audit::AuditContext;
use crate::body::{Request, Response};
use crate::request::{ReceivedTimestamp, RequestInfo};

/// Logs every request at debug level; server errors at warn, except timeouts (504), which
/// upstream also keeps out of its error logging.
#[derive(Debug, Clone, Default)]
pub struct HttpLog;

impl HttpLog {
    /// The filter.
    pub fn new() -> Self {
        HttpLog
    }
}

impl Filter for HttpLog {
    fn call(&self, req: Request, next: Next) -> impl Future<Output = Response> + Send + 'static {
        let started = req
            .extensions()
            .get::<ReceivedTimestamp>()
            .map_or_else(Instant::now, |t| t.instant);
        let verb = req.extensions().get::<RequestInfo>().map_or_else(
            || req.method().as_str().to_string(),
            |i| i.verb.to_uppercase(),
        );
        let uri = req.uri().to_string();
        let user_agent = req
            .headers()
            .get(http::header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let audit_id = req
            .extensions()
            .get::<Arc<AuditContext>>()
            .map(|a| a.audit_id.clone())
            .unwrap_or_default();
        async move {
            let response = next.run(req).await;
            let status = response.status();
            let latency = started.elapsed();
            if status.is_server_error() && status != StatusCode::GATEWAY_TIMEOUT {
                tracing::warn!(
                    verb,
                    uri,
                    ?latency,
                    user_agent,
                    audit_id,
                    status = status.as_u16(),
                    "HTTP"
                );
            } else {
                tracing::debug!(
                    verb,
                    uri,
                    ?latency,
                    user_agent,
                    audit_id,
                    status = status.as_u16(),
                    "HTTP"
                );
            }
            response
        }
    }
}

#[cfg(test)]
mod tests {
    use tower::{Layer, ServiceExt};

    use super::*;
    use crate::body::full;
    use crate::filters::{FilterLayer, service_fn};

    #[tokio::test]
    async fn passes_response_through() {
        let svc = FilterLayer::new(HttpLog::new()).layer(service_fn(|_r: Request| async {
            let mut r = http::Response::new(full("x"));
            *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            r
        }));
        let req = http::Request::get("/x").body(full("")).unwrap();
        let resp = svc.oneshot(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
    }
}
