//! HTTP Strict Transport Security (upstream `WithHSTS`, `--strict-transport-security-directives`).

use std::future::Future;

use http::{HeaderValue, header};

use super::{Filter, Next};
use crate::body::{Request, Response};

/// Sets `Strict-Transport-Security: <directives joined by "; ">` unless the handler set it.
#[derive(Debug, Clone)]
pub struct Hsts {
    value: Option<HeaderValue>,
}

impl Hsts {
    /// A filter sending `directives` (e.g. `["max-age=31536000", "includeSubDomains"]`).
    /// Directives that are not valid header text disable the filter.
    pub fn new(directives: &[String]) -> Self {
        let joined = directives.join("; ");
        let value = if joined.is_empty() {
            None
        } else {
            HeaderValue::from_str(&joined).ok()
        };
        Hsts { value }
    }
}

impl Filter for Hsts {
    fn call(&self, req: Request, next: Next) -> impl Future<Output = Response> + Send + 'static {
        let value = self.value.clone();
        async move {
            let mut response = next.run(req).await;
            if let Some(value) = value {
                // Upstream sets it before the handler runs, so a handler's own value wins.
                response
                    .headers_mut()
                    .entry(header::STRICT_TRANSPORT_SECURITY)
                    .or_insert(value);
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
    async fn sets_header_unless_present() {
        let svc = FilterLayer::new(Hsts::new(&[
            "max-age=31536000".to_string(),
            "includeSubDomains".to_string(),
            "preload".to_string(),
        ]))
        .layer(service_fn(|req: Request| async move {
            let mut r = http::Response::new(full(""));
            if req.uri().path() == "/own" {
                r.headers_mut().insert(
                    header::STRICT_TRANSPORT_SECURITY,
                    HeaderValue::from_static("max-age=1"),
                );
            }
            r
        }));
        let req = http::Request::get("/").body(full("")).unwrap();
        let resp = svc.clone().oneshot(req).await.unwrap();
        assert_eq!(
            resp.headers()["strict-transport-security"],
            "max-age=31536000; includeSubDomains; preload"
        );
        let req = http::Request::get("/own").body(full("")).unwrap();
        let resp = svc.oneshot(req).await.unwrap();
        assert_eq!(resp.headers()["strict-transport-security"], "max-age=1");
    }
}
