//! Moving keep-alive clients off a server that is shutting down: once ShutdownInitiated fired,
//! every response closes its connection (`Connection: close` on HTTP/1.1, GOAWAY on HTTP/2).
//!
//! Not an upstream filter (installed with `Config::close_connections_during_shutdown`, which
//! kube-apiserver sets). Behind a load balancer that follows `/readyz`, the shutdown delay
//! keeps new connections away, but a keep-alive connection opened before stays on this server
//! until the listener closes (or, with `--shutdown-send-retry-after`, until the drain ends); a
//! request the client writes at the moment the server closes that idle connection is lost
//! (Go's transport and client-go retry it only for GETs). Closing each connection after its
//! next response during the delay sends busy clients to another replica before then, so a
//! rolling restart fails no request (`tests/rolling_restart.rs`). A client connected to this
//! server directly just reconnects to it while it still listens.

use std::future::Future;

use http::{HeaderValue, Version, header};

use super::{Filter, Next};
use crate::body::{Request, Response};
use crate::request::ConnectionInfo;
use crate::server::lifecycle::Signal;

/// Closes each connection after its response once `shutdown_initiated` fired.
#[derive(Debug, Clone)]
pub struct ShutdownConnectionClose {
    shutdown_initiated: Signal,
}

impl ShutdownConnectionClose {
    /// A filter observing the ShutdownInitiated signal.
    pub fn new(shutdown_initiated: Signal) -> Self {
        ShutdownConnectionClose { shutdown_initiated }
    }
}

impl Filter for ShutdownConnectionClose {
    fn call(&self, req: Request, next: Next) -> impl Future<Output = Response> + Send + 'static {
        let signal = self.shutdown_initiated.clone();
        let h2 = req.version() == Version::HTTP_2;
        let close_token = req
            .extensions()
            .get::<ConnectionInfo>()
            .map(|conn| conn.close_connection.clone());
        async move {
            let mut response = next.run(req).await;
            // Checked when the response is ready: a request in flight at SIGTERM closes too.
            if signal.signaled() {
                if h2 {
                    // The serving layer sends GOAWAY once this response is done.
                    if let Some(token) = close_token {
                        token.cancel();
                    }
                } else {
                    response
                        .headers_mut()
                        .insert(header::CONNECTION, HeaderValue::from_static("close"));
                }
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

    fn ok() -> crate::filters::HttpService {
        service_fn(|_r: Request| async { http::Response::new(full("ok")) })
    }

    #[tokio::test]
    async fn closes_http1_connections_only_once_shutdown_initiated() {
        let signal = Signal::new("ShutdownInitiated");
        let svc = FilterLayer::new(ShutdownConnectionClose::new(signal.clone())).layer(ok());
        let req = || http::Request::get("/api").body(full("")).unwrap();
        let before = svc.clone().oneshot(req()).await.unwrap();
        assert!(before.headers().get("connection").is_none());
        signal.fire();
        let after = svc.oneshot(req()).await.unwrap();
        assert_eq!(after.headers()["connection"], "close");
    }

    #[tokio::test]
    async fn closes_http2_connections_with_goaway_once_shutdown_initiated() {
        let signal = Signal::new("ShutdownInitiated");
        signal.fire();
        let svc = FilterLayer::new(ShutdownConnectionClose::new(signal)).layer(ok());
        let info = ConnectionInfo::local();
        let token = info.close_connection.clone();
        let mut req = http::Request::get("/api").body(full("")).unwrap();
        *req.version_mut() = Version::HTTP_2;
        req.extensions_mut().insert(info);
        let response = svc.oneshot(req).await.unwrap();
        assert!(response.headers().get("connection").is_none());
        assert!(token.is_cancelled());
    }
}
