//! Probabilistic GOAWAY (upstream `WithProbabilisticGoaway`, `--goaway-chance`): now and then
//! an HTTP/2 connection is asked to close after a response, so long-lived client connections
//! rebalance across servers behind a load balancer. HTTP/1 requests are unaffected.

use std::future::Future;
use std::sync::Arc;

use http::Version;

use super::{Filter, Next};
use crate::body::{Request, Response};
use crate::request::ConnectionInfo;

/// Decides per request whether to send a GOAWAY.
pub trait GoawayDecider: Send + Sync + std::fmt::Debug {
    /// Whether the connection of this request should be closed after it.
    fn goaway(&self, req: &Request) -> bool;
}

/// Decides at random with probability `chance` (0 never, 1 always).
#[derive(Debug, Clone, Copy)]
pub struct ProbabilisticGoawayDecider {
    chance: f64,
}

impl ProbabilisticGoawayDecider {
    /// A decider with the given probability.
    pub fn new(chance: f64) -> Self {
        ProbabilisticGoawayDecider { chance }
    }
}

impl GoawayDecider for ProbabilisticGoawayDecider {
    fn goaway(&self, _req: &Request) -> bool {
        // random() is in [0, 1), so chance 1 always and chance 0 never decides to close.
        rand::random::<f64>() < self.chance
    }
}

/// Cancels the connection's close token for some HTTP/2 requests (the serving layer turns that
/// into a graceful GOAWAY once in-flight streams finish).
#[derive(Debug, Clone)]
pub struct ProbabilisticGoaway {
    decider: Arc<dyn GoawayDecider>,
}

impl ProbabilisticGoaway {
    /// A filter closing HTTP/2 connections with probability `chance`.
    pub fn new(chance: f64) -> Self {
        Self::with_decider(Arc::new(ProbabilisticGoawayDecider::new(chance)))
    }

    /// A filter with a custom decider (tests).
    pub fn with_decider(decider: Arc<dyn GoawayDecider>) -> Self {
        ProbabilisticGoaway { decider }
    }
}

impl Filter for ProbabilisticGoaway {
    fn call(&self, req: Request, next: Next) -> impl Future<Output = Response> + Send + 'static {
        if req.version() == Version::HTTP_2
            && self.decider.goaway(&req)
            && let Some(conn) = req.extensions().get::<ConnectionInfo>()
        {
            conn.close_connection.cancel();
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

    fn request(version: Version) -> (Request, ConnectionInfo) {
        let conn = ConnectionInfo::local();
        let mut req = http::Request::get("/").body(full("")).unwrap();
        *req.version_mut() = version;
        req.extensions_mut().insert(conn.clone());
        (req, conn)
    }

    #[test]
    fn probabilistic_goaway_decider() {
        let (req, _) = request(Version::HTTP_2);
        let never = ProbabilisticGoawayDecider::new(0.0);
        let always = ProbabilisticGoawayDecider::new(1.0);
        for _ in 0..1000 {
            assert!(!never.goaway(&req));
            assert!(always.goaway(&req));
        }
    }

    #[tokio::test]
    async fn only_http2_connections_are_closed() {
        let svc = FilterLayer::new(ProbabilisticGoaway::new(1.0)).layer(service_fn(
            |_r: Request| async { http::Response::new(full("")) },
        ));
        let (req, conn) = request(Version::HTTP_2);
        svc.clone().oneshot(req).await.unwrap();
        assert!(conn.close_connection.is_cancelled());

        let (req, conn) = request(Version::HTTP_11);
        let resp = svc.clone().oneshot(req).await.unwrap();
        assert!(!conn.close_connection.is_cancelled());
        assert!(resp.headers().get("connection").is_none());

        let svc = FilterLayer::new(ProbabilisticGoaway::new(0.0)).layer(service_fn(
            |_r: Request| async { http::Response::new(full("")) },
        ));
        let (req, conn) = request(Version::HTTP_2);
        svc.oneshot(req).await.unwrap();
        assert!(!conn.close_connection.is_cancelled());
    }
}
