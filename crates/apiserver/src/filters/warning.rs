//! Warning headers (upstream `WithWarningRecorder`): handlers add warnings to the request's
//! [`WarningRecorder`]; they are sent as `Warning: 299 <agent> "<text>"` response headers.

use std::future::Future;
use std::sync::Arc;

use http::{HeaderValue, header};

use super::{Filter, Next};
use crate::body::{Request, Response};
use crate::request::warning::WarningRecorder;

/// Returns the request's recorder, inserting a new one if it has none. The timeout filter
/// (outside this one) creates it first so it can close it when the request times out.
pub fn recorder_for(req: &mut Request) -> Arc<WarningRecorder> {
    if let Some(recorder) = req.extensions().get::<Arc<WarningRecorder>>() {
        return recorder.clone();
    }
    let recorder = WarningRecorder::new();
    req.extensions_mut().insert(recorder.clone());
    recorder
}

/// Gives every request a warning recorder and writes its warnings into the response head.
#[derive(Debug, Clone, Default)]
pub struct WarningFilter;

impl WarningFilter {
    /// The filter.
    pub fn new() -> Self {
        WarningFilter
    }
}

impl Filter for WarningFilter {
    fn call(
        &self,
        mut req: Request,
        next: Next,
    ) -> impl Future<Output = Response> + Send + 'static {
        let recorder = recorder_for(&mut req);
        async move {
            let mut response = next.run(req).await;
            let headers = response.headers_mut();
            for value in recorder.header_values() {
                if let Ok(value) = HeaderValue::from_bytes(value.as_bytes()) {
                    headers.append(header::WARNING, value);
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
    use crate::request::warning::add_warning;

    #[tokio::test]
    async fn warnings_become_headers() {
        let svc =
            FilterLayer::new(WarningFilter::new()).layer(service_fn(|req: Request| async move {
                add_warning(req.extensions(), "", "first");
                add_warning(req.extensions(), "agent", "second \"quoted\"");
                add_warning(req.extensions(), "", "first");
                add_warning(req.extensions(), "", "ünïcode");
                http::Response::new(full(""))
            }));
        let req = http::Request::get("/").body(full("")).unwrap();
        let resp = svc.oneshot(req).await.unwrap();
        let values: Vec<_> = resp
            .headers()
            .get_all("warning")
            .iter()
            .map(|v| String::from_utf8(v.as_bytes().to_vec()).unwrap())
            .collect();
        assert_eq!(
            values,
            vec![
                r#"299 - "first""#,
                r#"299 agent "second \"quoted\"""#,
                r#"299 - "ünïcode""#
            ]
        );
    }

    #[tokio::test]
    async fn existing_recorder_is_reused() {
        let recorder = WarningRecorder::new();
        recorder.add("", "from outside");
        let svc = FilterLayer::new(WarningFilter::new()).layer(service_fn(|_r: Request| async {
            http::Response::new(full(""))
        }));
        let mut req = http::Request::get("/").body(full("")).unwrap();
        req.extensions_mut().insert(recorder);
        let resp = svc.oneshot(req).await.unwrap();
        assert_eq!(resp.headers()["warning"], r#"299 - "from outside""#);
    }
}
