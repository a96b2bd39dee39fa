//! Resolves the request's [`RequestInfo`] and whether it is long-running (upstream
//! `WithRequestInfo`, with the long-running decision made once here for every later filter).

use std::future::Future;

use http::StatusCode;

use super::{Filter, Next};
use crate::body::{Request, Response, go_http_error};
use crate::request::LongRunning;
use crate::request::requestinfo::{LongRunningRequestCheck, RequestInfoResolver};

/// Inserts [`crate::request::RequestInfo`] and [`LongRunning`] into the request's extensions.
#[derive(Debug, Clone)]
pub struct RequestInfoFilter {
    resolver: RequestInfoResolver,
    long_running: LongRunningRequestCheck,
}

impl RequestInfoFilter {
    /// A filter resolving with `resolver` and classifying with `long_running`.
    pub fn new(resolver: RequestInfoResolver, long_running: LongRunningRequestCheck) -> Self {
        RequestInfoFilter {
            resolver,
            long_running,
        }
    }
}

impl Filter for RequestInfoFilter {
    fn call(
        &self,
        mut req: Request,
        next: Next,
    ) -> impl Future<Output = Response> + Send + 'static {
        let resolved = self.resolver.resolve(req.method(), req.uri());
        let result = resolved.map(|info| {
            let long_running = self.long_running.is_long_running(&info);
            (info, long_running)
        });
        async move {
            match result {
                Ok((info, long_running)) => {
                    req.extensions_mut().insert(info);
                    req.extensions_mut().insert(LongRunning(long_running));
                    next.run(req).await
                }
                Err(err) => internal_error(&req, &format!("failed to create RequestInfo: {err}")),
            }
        }
    }
}

/// Upstream's `responsewriters.InternalError`: a Go `http.Error` 500 with
/// `Internal Server Error: "<request URI>": <message>`, HTML-significant characters escaped.
pub fn internal_error(req: &Request, message: &str) -> Response {
    let uri = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/");
    let text = format!("Internal Server Error: {}: {}", go_quote(uri), message);
    let sanitized = text
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    go_http_error(StatusCode::INTERNAL_SERVER_ERROR, &sanitized)
}

/// Go's `%q` for the printable-ASCII strings a request URI consists of.
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;
    use tower::{Layer, ServiceExt};

    use super::*;
    use crate::body::full;
    use crate::filters::{FilterLayer, service_fn};
    use crate::request::RequestInfo;

    fn filter() -> FilterLayer<RequestInfoFilter> {
        FilterLayer::new(RequestInfoFilter::new(
            RequestInfoResolver::default(),
            LongRunningRequestCheck::basic(&["watch"], &[]),
        ))
    }

    #[tokio::test]
    async fn inserts_request_info_and_long_running() {
        let svc = filter().layer(service_fn(|req: Request| async move {
            let info = req.extensions().get::<RequestInfo>().unwrap().clone();
            let lr = *req.extensions().get::<LongRunning>().unwrap();
            http::Response::new(full(format!("{} {} {}", info.verb, info.resource, lr.0)))
        }));
        for (uri, expected) in [
            ("/api/v1/pods?watch=1", "watch pods true"),
            ("/api/v1/namespaces/a/pods/b", "get pods false"),
            ("/healthz", "get  false"),
        ] {
            let req = http::Request::get(uri).body(full("")).unwrap();
            let resp = svc.clone().oneshot(req).await.unwrap();
            let body = resp.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(body, expected);
        }
    }

    #[tokio::test]
    async fn resolver_error_is_500_text() {
        let svc = filter().layer(service_fn(|_req: Request| async move {
            http::Response::new(full("inner"))
        }));
        let req = http::Request::get("/api/v1/watch").body(full("")).unwrap();
        let resp = svc.oneshot(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(resp.headers()["content-type"], "text/plain; charset=utf-8");
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(
            body,
            "Internal Server Error: \"/api/v1/watch\": failed to create RequestInfo: unable to determine kind and namespace from url, /api/v1/watch\n"
        );
    }
}
