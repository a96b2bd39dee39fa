//! Request latency tracking (upstream `WithLatencyTrackers` plus the endpoint
//! instrumentation): when the response is complete, `apiserver_request_total` and
//! `apiserver_request_duration_seconds` are recorded for the request's verb, resource and code.

use std::future::Future;
use std::time::Instant;

use super::body_guard::hold_until_body_end;
use super::{Filter, Next};
use crate::body::{Request, Response};
use crate::metrics::{RequestMetricLabels, observe_request_labels};
use crate::request::{ReceivedTimestamp, RequestInfo};

/// Records request metrics once the response body has been sent (or dropped).
#[derive(Debug, Clone, Default)]
pub struct LatencyTracker;

impl LatencyTracker {
    /// A new tracker.
    pub fn new() -> Self {
        LatencyTracker
    }
}

struct Observation {
    labels: Option<RequestMetricLabels>,
    started: Instant,
    code: u16,
}

impl Drop for Observation {
    fn drop(&mut self) {
        if let Some(labels) = self.labels.take() {
            observe_request_labels(&labels, self.code, self.started.elapsed());
        }
    }
}

impl Filter for LatencyTracker {
    fn call(&self, req: Request, next: Next) -> impl Future<Output = Response> + Send + 'static {
        let started = req
            .extensions()
            .get::<ReceivedTimestamp>()
            .map(|t| t.instant)
            .unwrap_or_else(Instant::now);
        let (parts, body) = req.into_parts();
        let labels = parts
            .extensions
            .get::<RequestInfo>()
            .map(|info| RequestMetricLabels::from_request(info, &parts));
        let req = Request::from_parts(parts, body);
        async move {
            let response = next.run(req).await;
            let code = response.status().as_u16();
            // Long-running requests (watches) are recorded when their stream ends, as
            // upstream records them when the handler returns.
            hold_until_body_end(
                response,
                Observation {
                    labels,
                    started,
                    code,
                },
            )
        }
    }
}
