//! `WithAuditInit`: gives every request an audit ID and an [`AuditContext`], and echoes the ID
//! in the `Audit-ID` response header (sent by Go as `Audit-Id`) on every response.

use std::future::Future;

use http::HeaderValue;

use super::{Filter, Next};
use crate::audit::AuditContext;
use crate::body::{Request, Response};

/// The request and response header carrying the audit ID.
pub const AUDIT_ID_HEADER: &str = "audit-id";

/// The audit-init filter (outermost in the default chain).
#[derive(Clone, Debug, Default)]
pub struct AuditInitFilter;

impl AuditInitFilter {
    /// The filter.
    pub fn new() -> Self {
        AuditInitFilter
    }
}

impl Filter for AuditInitFilter {
    fn call(
        &self,
        mut req: Request,
        next: Next,
    ) -> impl Future<Output = Response> + Send + 'static {
        // A client-supplied ID is kept verbatim (untruncated), as upstream does.
        let supplied = req
            .headers()
            .get(AUDIT_ID_HEADER)
            .filter(|v| !v.as_bytes().is_empty())
            .cloned();
        let (audit_id, header) = match supplied {
            Some(value) => (
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
                value,
            ),
            None => {
                let id = uuid::Uuid::new_v4().to_string();
                let header = HeaderValue::from_str(&id).unwrap_or(HeaderValue::from_static(""));
                (id, header)
            }
        };
        req.extensions_mut().insert(AuditContext::new(audit_id));
        async move {
            let mut response = next.run(req).await;
            if !response.headers().contains_key(AUDIT_ID_HEADER) {
                response.headers_mut().insert(AUDIT_ID_HEADER, header);
            }
            response
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::empty;
    use crate::filters::{FilterLayer, service_fn};
    use std::sync::{Arc, Mutex};
    use tower::{Layer, ServiceExt};

    async fn call(
        request_id: Option<&str>,
        handler_sets: Option<&'static str>,
    ) -> (Response, Option<String>) {
        let seen = Arc::new(Mutex::new(None));
        let seen2 = seen.clone();
        let handler = service_fn(move |req: Request| {
            let seen = seen2.clone();
            async move {
                let ctx = req.extensions().get::<Arc<AuditContext>>().unwrap();
                *seen.lock().unwrap() = Some(ctx.audit_id.clone());
                let mut resp = http::Response::new(empty());
                if let Some(v) = handler_sets {
                    resp.headers_mut()
                        .insert(AUDIT_ID_HEADER, HeaderValue::from_static(v));
                }
                resp
            }
        });
        let svc = FilterLayer::new(AuditInitFilter::new()).layer(handler);
        let mut req = http::Request::builder().uri("/api");
        if let Some(id) = request_id {
            req = req.header("Audit-ID", id);
        }
        let resp = svc.oneshot(req.body(empty()).unwrap()).await.unwrap();
        let seen = seen.lock().unwrap().clone();
        (resp, seen)
    }

    #[tokio::test]
    async fn with_audit_id() {
        // Supplied ID echoed.
        let (resp, seen) = call(Some("foo-bar-baz"), None).await;
        assert_eq!(resp.headers()[AUDIT_ID_HEADER], "foo-bar-baz");
        assert_eq!(seen.as_deref(), Some("foo-bar-baz"));

        // Not supplied (or empty): a UUID is generated.
        for supplied in [None, Some("")] {
            let (resp, seen) = call(supplied, None).await;
            let header = resp.headers()[AUDIT_ID_HEADER]
                .to_str()
                .unwrap()
                .to_string();
            assert!(uuid::Uuid::parse_str(&header).is_ok(), "{header}");
            assert_eq!(seen.as_deref(), Some(header.as_str()));
        }

        // A header already set downstream is not overwritten.
        let (resp, _) = call(Some("foo"), Some("set-by-handler")).await;
        assert_eq!(resp.headers()[AUDIT_ID_HEADER], "set-by-handler");
    }
}
