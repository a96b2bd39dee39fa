//! Default `Cache-Control` (upstream `WithCacheControl`): API responses are private and must be
//! revalidated, unless a handler says otherwise (aggregated discovery, hashed OpenAPI v3).

use std::future::Future;

use http::{HeaderValue, header};

use super::{Filter, Next};
use crate::body::{Request, Response};

/// Sets `Cache-Control: no-cache, private` unless the handler set `Cache-Control`.
#[derive(Debug, Clone, Default)]
pub struct CacheControl;

impl CacheControl {
    /// The filter.
    pub fn new() -> Self {
        CacheControl
    }
}

impl Filter for CacheControl {
    fn call(&self, req: Request, next: Next) -> impl Future<Output = Response> + Send + 'static {
        let response = next.run(req);
        async move {
            let mut response = response.await;
            // Upstream sets the default before calling the handler, which may overwrite it;
            // filling it in afterwards when absent is the same.
            response
                .headers_mut()
                .entry(header::CACHE_CONTROL)
                .or_insert(HeaderValue::from_static("no-cache, private"));
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
    async fn cache_control() {
        let svc =
            FilterLayer::new(CacheControl::new()).layer(service_fn(|req: Request| async move {
                let mut r = http::Response::new(full(""));
                if req.uri().path() == "/public" {
                    r.headers_mut()
                        .insert(header::CACHE_CONTROL, HeaderValue::from_static("public"));
                }
                r
            }));
        for (path, expected) in [("/", "no-cache, private"), ("/public", "public")] {
            let req = http::Request::get(path).body(full("")).unwrap();
            let resp = svc.clone().oneshot(req).await.unwrap();
            assert_eq!(resp.headers()["cache-control"], expected, "{path}");
        }
    }
}
