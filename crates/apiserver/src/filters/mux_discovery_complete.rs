//! Marks requests that arrived before every API path and discovery document was installed
//! (upstream `WithMuxAndDiscoveryComplete`); the not-found handler then answers 503 instead of
//! 404 so clients retry rather than conclude a resource does not exist.

use std::future::Future;

use super::{Filter, Next};
use crate::body::{Request, Response};
use crate::request::MuxAndDiscoveryIncomplete;
use crate::server::lifecycle::Signal;

/// Inserts [`MuxAndDiscoveryIncomplete`] while `signal` (MuxAndDiscoveryComplete) has not fired.
#[derive(Debug, Clone)]
pub struct MuxAndDiscoveryComplete {
    signal: Signal,
}

impl MuxAndDiscoveryComplete {
    /// A filter observing the MuxAndDiscoveryComplete `signal`.
    pub fn new(signal: Signal) -> Self {
        MuxAndDiscoveryComplete { signal }
    }
}

impl Filter for MuxAndDiscoveryComplete {
    fn call(
        &self,
        mut req: Request,
        next: Next,
    ) -> impl Future<Output = Response> + Send + 'static {
        if !self.signal.signaled() {
            req.extensions_mut().insert(MuxAndDiscoveryIncomplete);
        }
        next.run(req)
    }
}

#[cfg(test)]
mod tests {
    use tower::{Layer, ServiceExt};

    use super::*;
    use crate::body::full;
    use crate::filters::{FilterLayer, service_fn};

    #[tokio::test]
    async fn key_present_only_while_signal_open() {
        let signal = Signal::new("MuxAndDiscoveryComplete");
        let svc = FilterLayer::new(MuxAndDiscoveryComplete::new(signal.clone())).layer(service_fn(
            |req: Request| async move {
                let present = req
                    .extensions()
                    .get::<MuxAndDiscoveryIncomplete>()
                    .is_some();
                http::Response::new(full(present.to_string()))
            },
        ));
        let call = |svc: crate::filters::HttpService| async move {
            let req = http::Request::get("/").body(full("")).unwrap();
            let resp = svc.oneshot(req).await.unwrap();
            crate::body::read_limited(resp.into_body(), 0)
                .await
                .unwrap()
                .unwrap()
        };
        assert_eq!(call(svc.clone()).await, "true");
        signal.fire();
        assert_eq!(call(svc).await, "false");
    }
}
