//! The max-in-flight limit (upstream `WithMaxInFlightLimit`, used when API Priority and Fairness
//! is off): separate caps for read-only and mutating requests; over the cap the request is
//! rejected at once with 429 (no queuing), except for `system:masters`.

use std::future::Future;
use std::sync::Arc;

use http::{HeaderValue, StatusCode, header};
use tokio::sync::Semaphore;

use super::body_guard::hold_until_body_end;
use super::{Filter, Next};
use crate::body::{Request, Response, go_http_error};
use crate::request::{LongRunning, RequestInfo, RequestUser, names};

/// Verbs counted against the non-mutating limit; everything else is mutating.
const NON_MUTATING_VERBS: [&str; 3] = ["get", "list", "watch"];

/// One class of requests (non-mutating or mutating); `None` when its limit is 0.
#[derive(Debug)]
struct Class {
    limit: usize,
    semaphore: Arc<Semaphore>,
}

impl Class {
    fn new(limit: usize) -> Option<Arc<Self>> {
        (limit > 0).then(|| {
            Arc::new(Class {
                limit,
                semaphore: Arc::new(Semaphore::new(limit)),
            })
        })
    }

    fn in_flight(&self) -> usize {
        self.limit
            .saturating_sub(self.semaphore.available_permits())
    }
}

/// Caps concurrent requests. Cloning shares the counters, so a clone can report
/// [`MaxInFlight::in_flight`] (the `apiserver_current_inflight_requests` gauge).
#[derive(Debug, Clone)]
pub struct MaxInFlight {
    non_mutating: Option<Arc<Class>>,
    mutating: Option<Arc<Class>>,
}

/// The current number of requests holding a slot, per class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InFlight {
    /// Read-only requests (`get`, `list`, `watch`).
    pub read_only: usize,
    /// Mutating requests.
    pub mutating: usize,
}

impl MaxInFlight {
    /// Limits (`--max-requests-inflight`, `--max-mutating-requests-inflight`); 0 disables
    /// that class.
    pub fn new(non_mutating_limit: usize, mutating_limit: usize) -> Self {
        MaxInFlight {
            non_mutating: Class::new(non_mutating_limit),
            mutating: Class::new(mutating_limit),
        }
    }

    /// The requests currently in flight, per class.
    pub fn in_flight(&self) -> InFlight {
        InFlight {
            read_only: self.non_mutating.as_ref().map_or(0, |c| c.in_flight()),
            mutating: self.mutating.as_ref().map_or(0, |c| c.in_flight()),
        }
    }
}

fn too_many_requests() -> Response {
    let mut response = go_http_error(
        StatusCode::TOO_MANY_REQUESTS,
        "Too many requests, please try again later.",
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

impl Filter for MaxInFlight {
    fn call(&self, req: Request, next: Next) -> impl Future<Output = Response> + Send + 'static {
        let this = self.clone();
        async move {
            let Some(info) = req.extensions().get::<RequestInfo>() else {
                return go_http_error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "no RequestInfo found in context, handler chain must be wrong",
                );
            };
            if req.extensions().get::<LongRunning>().is_some_and(|l| l.0) {
                return next.run(req).await;
            }
            let class = if NON_MUTATING_VERBS.contains(&info.verb.as_str()) {
                this.non_mutating
            } else {
                this.mutating
            };
            let Some(class) = class else {
                return next.run(req).await;
            };
            match class.semaphore.clone().try_acquire_owned() {
                Ok(permit) => {
                    let response = next.run(req).await;
                    hold_until_body_end(response, permit)
                }
                Err(_) => {
                    let is_master = req
                        .extensions()
                        .get::<RequestUser>()
                        .is_some_and(|u| u.0.in_group(names::SYSTEM_MASTERS));
                    if is_master {
                        next.run(req).await
                    } else {
                        too_many_requests()
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::sync::{Notify, mpsc};
    use tower::{Layer, ServiceExt};

    use super::*;
    use crate::body::{full, read_limited};
    use crate::filters::{FilterLayer, HttpService, service_fn};
    use crate::request::UserInfo;

    /// A service whose handlers block until `release` is notified; `started` reports each.
    fn blocking(
        filter: &MaxInFlight,
        release: Arc<Notify>,
    ) -> (HttpService, mpsc::UnboundedReceiver<()>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let svc = FilterLayer::new(filter.clone()).layer(service_fn(move |req: Request| {
            let (release, tx) = (release.clone(), tx.clone());
            async move {
                if req.uri().path() == "/block" {
                    tx.send(()).unwrap();
                    release.notified().await;
                }
                http::Response::new(full("ok"))
            }
        }));
        (svc, rx)
    }

    fn request(path: &str, verb: &str, long_running: bool, groups: &[&str]) -> Request {
        let mut req = http::Request::get(path).body(full("")).unwrap();
        req.extensions_mut().insert(RequestInfo {
            is_resource_request: true,
            verb: verb.to_string(),
            ..Default::default()
        });
        req.extensions_mut().insert(LongRunning(long_running));
        req.extensions_mut().insert(RequestUser(Arc::new(UserInfo {
            name: "user".into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        })));
        req
    }

    async fn check_class(verb: &str, other_verb: &str, filter: MaxInFlight, limit: usize) {
        let release = Arc::new(Notify::new());
        let (svc, mut started) = blocking(&filter, release.clone());
        let mut blocked = Vec::new();
        for _ in 0..limit {
            let svc = svc.clone();
            let req = request("/block", verb, false, &[]);
            // Next::run boxes the call, so the spawned future is provably Send.
            let call = crate::filters::Next::new(svc).run(req);
            blocked.push(tokio::spawn(async move {
                let resp = call.await;
                read_limited(resp.into_body(), 0).await.unwrap();
            }));
            started.recv().await.unwrap();
        }
        let counts = filter.in_flight();
        let counted = if NON_MUTATING_VERBS.contains(&verb) {
            counts.read_only
        } else {
            counts.mutating
        };
        assert_eq!(counted, limit);

        // Full: rejected with 429.
        let resp = svc
            .clone()
            .oneshot(request("/x", verb, false, &[]))
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(resp.headers()["retry-after"], "1");
        let body = read_limited(resp.into_body(), 0).await.unwrap().unwrap();
        assert_eq!(body, "Too many requests, please try again later.\n");

        // Long-running requests are not counted, the other class is independent, and
        // system:masters is never throttled.
        for (v, long_running, groups) in [
            (verb, true, &[][..]),
            (other_verb, false, &[][..]),
            (verb, false, &["system:masters"][..]),
        ] {
            let resp = svc
                .clone()
                .oneshot(request("/x", v, long_running, groups))
                .await
                .unwrap();
            assert_eq!(
                resp.status(),
                StatusCode::OK,
                "{v} {long_running} {groups:?}"
            );
        }

        // Recovery once the blocked requests finished.
        for _ in 0..limit {
            release.notify_one();
        }
        for b in blocked {
            b.await.unwrap();
        }
        assert_eq!(
            filter.in_flight(),
            InFlight {
                read_only: 0,
                mutating: 0
            }
        );
        let resp = svc.oneshot(request("/x", verb, false, &[])).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn max_in_flight_non_mutating() {
        check_class("list", "create", MaxInFlight::new(3, 1), 3).await;
        check_class("get", "update", MaxInFlight::new(2, 0), 2).await;
    }

    #[tokio::test]
    async fn max_in_flight_mutating() {
        check_class("create", "get", MaxInFlight::new(1, 2), 2).await;
        check_class("delete", "watch", MaxInFlight::new(0, 1), 1).await;
    }

    #[tokio::test]
    async fn permit_held_until_body_sent() {
        let filter = MaxInFlight::new(1, 1);
        let svc = FilterLayer::new(filter.clone()).layer(service_fn(|_r: Request| async {
            http::Response::new(full("ok"))
        }));
        let resp = svc
            .clone()
            .oneshot(request("/x", "get", false, &[]))
            .await
            .unwrap();
        assert_eq!(filter.in_flight().read_only, 1);
        let resp2 = svc
            .clone()
            .oneshot(request("/x", "get", false, &[]))
            .await
            .unwrap();
        assert_eq!(resp2.status(), StatusCode::TOO_MANY_REQUESTS);
        read_limited(resp.into_body(), 0).await.unwrap();
        assert_eq!(filter.in_flight().read_only, 0);
    }

    #[tokio::test]
    async fn no_request_info_is_500() {
        let svc = FilterLayer::new(MaxInFlight::new(1, 1)).layer(service_fn(|_r: Request| async {
            http::Response::new(full(""))
        }));
        let req = http::Request::get("/").body(full("")).unwrap();
        let resp = svc.oneshot(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
    }
}
