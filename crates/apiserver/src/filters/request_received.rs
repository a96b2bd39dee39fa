//! Records when the request arrived (upstream `WithRequestReceivedTimestamp`): the start of the
//! request deadline and the audit `requestReceivedTimestamp`.

use std::future::Future;

use super::{Filter, Next};
use crate::body::{Request, Response};
use crate::request::ReceivedTimestamp;

/// Inserts [`ReceivedTimestamp::now`] unless a timestamp is already present.
#[derive(Debug, Clone, Default)]
pub struct RequestReceivedTimestamp;

impl RequestReceivedTimestamp {
    /// The filter.
    pub fn new() -> Self {
        RequestReceivedTimestamp
    }
}

impl Filter for RequestReceivedTimestamp {
    fn call(
        &self,
        mut req: Request,
        next: Next,
    ) -> impl Future<Output = Response> + Send + 'static {
        if req.extensions().get::<ReceivedTimestamp>().is_none() {
            req.extensions_mut().insert(ReceivedTimestamp::now());
        }
        next.run(req)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use tower::{Layer, ServiceExt};

    use super::*;
    use crate::body::full;
    use crate::filters::{FilterLayer, service_fn};

    #[tokio::test]
    async fn stores_now_and_keeps_existing() {
        let before = Instant::now();
        let svc = FilterLayer::new(RequestReceivedTimestamp::new()).layer(service_fn(
            |req: Request| async move {
                let ts = req
                    .extensions()
                    .get::<ReceivedTimestamp>()
                    .copied()
                    .unwrap();
                let mut resp = http::Response::new(full(""));
                resp.extensions_mut().insert(ts);
                resp
            },
        ));
        let req = http::Request::get("/").body(full("")).unwrap();
        let resp = svc.clone().oneshot(req).await.unwrap();
        let ts = resp.extensions().get::<ReceivedTimestamp>().unwrap();
        assert!(ts.instant >= before && ts.instant <= Instant::now());

        let existing = ReceivedTimestamp::now();
        let mut req = http::Request::get("/").body(full("")).unwrap();
        req.extensions_mut().insert(existing);
        let resp = svc.oneshot(req).await.unwrap();
        let ts = resp.extensions().get::<ReceivedTimestamp>().unwrap();
        assert_eq!(ts.instant, existing.instant);
    }
}
