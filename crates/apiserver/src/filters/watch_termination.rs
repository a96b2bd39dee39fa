//! Tracking watches so shutdown can end them gracefully (upstream
//! `WithWatchTerminationDuringShutdown`, enabled by `--shutdown-watch-termination-grace-period`):
//! each watch joins the rate-limited wait group and carries the NotAcceptingNewRequest signal,
//! on which the watch handler ends its stream.

use std::future::Future;

use super::body_guard::hold_until_body_end;
use super::request_info::internal_error;
use super::waitgroup::shutting_down_response;
use super::{Filter, Next};
use crate::body::{Request, Response};
use crate::request::{RequestInfo, ServerShutdownSignal};
use crate::server::lifecycle::Signal;
use crate::server::waitgroup::RateLimitedSafeWaitGroup;
use tokio_util::sync::CancellationToken;

/// Adds `watch` requests to the watch wait group until their response stream ended.
#[derive(Debug, Clone)]
pub struct WatchTermination {
    wait_group: RateLimitedSafeWaitGroup,
    shutdown: CancellationToken,
}

impl WatchTermination {
    /// A filter tracking watches in `wait_group` and handing them `not_accepting_new_requests`
    /// as their [`ServerShutdownSignal`].
    pub fn new(wait_group: RateLimitedSafeWaitGroup, not_accepting_new_requests: Signal) -> Self {
        Self::with_token(wait_group, not_accepting_new_requests.token())
    }

    /// A filter handing watches `shutdown` as their [`ServerShutdownSignal`]. With a
    /// shutdown watch grace period of 0 the server uses a wait group it never waits on and a
    /// token cancelled when the HTTP server stops, so watches end with the server instead of
    /// holding its shutdown until the request timeout.
    pub fn with_token(wait_group: RateLimitedSafeWaitGroup, shutdown: CancellationToken) -> Self {
        WatchTermination {
            wait_group,
            shutdown,
        }
    }
}

impl Filter for WatchTermination {
    fn call(
        &self,
        mut req: Request,
        next: Next,
    ) -> impl Future<Output = Response> + Send + 'static {
        let wait_group = self.wait_group.clone();
        let token = self.shutdown.clone();
        async move {
            let Some(info) = req.extensions().get::<RequestInfo>() else {
                return internal_error(&req, "no RequestInfo found in the context");
            };
            if info.verb != "watch" {
                return next.run(req).await;
            }
            let Ok(guard) = wait_group.add() else {
                return shutting_down_response();
            };
            req.extensions_mut().insert(ServerShutdownSignal(token));
            let response = next.run(req).await;
            hold_until_body_end(response, guard)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use http::StatusCode;
    use tower::{Layer, ServiceExt};

    use super::*;
    use crate::body::{full, read_limited};
    use crate::filters::{FilterLayer, HttpService, service_fn};

    fn svc(wg: &RateLimitedSafeWaitGroup, signal: &Signal) -> HttpService {
        FilterLayer::new(WatchTermination::new(wg.clone(), signal.clone())).layer(service_fn(
            |req: Request| async move {
                let has_signal = req.extensions().get::<ServerShutdownSignal>().is_some();
                http::Response::new(full(has_signal.to_string()))
            },
        ))
    }

    fn request(verb: Option<&str>) -> Request {
        let mut req = http::Request::get("/api/v1/pods").body(full("")).unwrap();
        if let Some(verb) = verb {
            req.extensions_mut().insert(RequestInfo {
                is_resource_request: true,
                verb: verb.to_string(),
                ..Default::default()
            });
        }
        req
    }

    #[tokio::test]
    async fn with_watch_termination_during_shutdown() {
        let signal = Signal::new("NotAcceptingNewRequest");

        // no RequestInfo → 500
        let wg = RateLimitedSafeWaitGroup::new();
        let resp = svc(&wg, &signal).oneshot(request(None)).await.unwrap();
        assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);

        // non-watch: untracked, no signal
        let resp = svc(&wg, &signal)
            .oneshot(request(Some("list")))
            .await
            .unwrap();
        assert_eq!(wg.count(), 0);
        let body = read_limited(resp.into_body(), 0).await.unwrap().unwrap();
        assert_eq!(body, "false");

        // watch accepted: tracked until the stream ends, signal attached
        let resp = svc(&wg, &signal)
            .oneshot(request(Some("watch")))
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(wg.count(), 1);
        let body = read_limited(resp.into_body(), 0).await.unwrap().unwrap();
        assert_eq!(body, "true");
        assert_eq!(wg.count(), 0);

        // watch while the group waits → 503 Retry-After: 1
        let (before, after, result) = wg.wait(Duration::from_secs(1)).await;
        assert_eq!((before, after, result), (0, 0, Ok(())));
        let resp = svc(&wg, &signal)
            .oneshot(request(Some("watch")))
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(resp.headers()["retry-after"], "1");
        let body = read_limited(resp.into_body(), 0).await.unwrap().unwrap();
        assert!(body.ends_with(b"\"code\":503}\n\n"));
        // non-watch still passes
        let resp = svc(&wg, &signal)
            .oneshot(request(Some("get")))
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
    }
}
