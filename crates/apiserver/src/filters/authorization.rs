//! The authorization filter (`endpoints/filters/authorization.go`) and the forbidden /
//! internal-error writers it shares with impersonation (`handlers/responsewriters/errors.go`).

use std::future::Future;
use std::sync::Arc;

use http::{HeaderValue, StatusCode, header};

use super::{Filter, Next};
use crate::audit::AuditContext;
use crate::authz::{Attributes, Authorizer, Decision};
use crate::body::{Request, Response, go_http_error};
use crate::request::{RequestInfo, RequestUser};
use crate::status::{Status, StatusDetails, qualified_resource, reason};

/// The audit annotation recording the decision (`allow` / `forbid`).
pub const DECISION_ANNOTATION_KEY: &str = "authorization.k8s.io/decision";
/// The audit annotation recording the authorizer's reason.
pub const REASON_ANNOTATION_KEY: &str = "authorization.k8s.io/reason";

/// Authorizes every request with the configured authorizer: `Allow` continues, an error
/// without `Allow` is a 500, anything else a 403 Status.
pub struct AuthorizationFilter {
    authorizer: Arc<dyn Authorizer>,
}

impl AuthorizationFilter {
    /// A filter asking `authorizer`.
    pub fn new(authorizer: Arc<dyn Authorizer>) -> Self {
        AuthorizationFilter { authorizer }
    }
}

/// The authorizer attributes of a request: its [`RequestUser`] (if any) and [`RequestInfo`]
/// (required; `None` when missing).
pub fn request_attributes(req: &http::request::Parts) -> Option<Attributes> {
    let info = req.extensions.get::<RequestInfo>()?;
    let user = req.extensions.get::<RequestUser>().map(|u| u.0.clone());
    Some(Attributes::from_request(user, info))
}

impl Filter for AuthorizationFilter {
    fn call(&self, req: Request, next: Next) -> impl Future<Output = Response> + Send + 'static {
        let authorizer = self.authorizer.clone();
        async move {
            let (parts, body) = req.into_parts();
            let decision = decide(&*authorizer, &parts).await;
            let req = Request::from_parts(parts, body);
            match decision {
                Ok(()) => next.run(req).await,
                Err(response) => *response,
            }
        }
    }
}

/// `Ok` to continue, or the response to send.
async fn decide(
    authorizer: &dyn Authorizer,
    req: &http::request::Parts,
) -> Result<(), Box<Response>> {
    let uri = request_uri(&req.uri);
    let Some(attrs) = request_attributes(req) else {
        return Err(Box::new(internal_error(
            &uri,
            "no RequestInfo found in the context",
        )));
    };
    let (decision, why, err) = authorizer.authorize(&attrs).await;
    let audit = req.extensions.get::<Arc<AuditContext>>();
    // An authorizer such as RBAC may allow despite evaluation errors, so the decision is
    // checked before the error.
    if decision == Decision::Allow {
        if let Some(audit) = audit {
            audit.add_annotation(DECISION_ANNOTATION_KEY, "allow");
            audit.add_annotation(REASON_ANNOTATION_KEY, &why);
        }
        return Ok(());
    }
    if let Some(err) = err {
        if let Some(audit) = audit {
            audit.add_annotation(REASON_ANNOTATION_KEY, "internal error");
        }
        return Err(Box::new(internal_error(&uri, &err.to_string())));
    }
    tracing::debug!(uri = %uri, reason = %why, "Forbidden");
    if let Some(audit) = audit {
        audit.add_annotation(DECISION_ANNOTATION_KEY, "forbid");
        audit.add_annotation(REASON_ANNOTATION_KEY, &why);
    }
    Err(Box::new(forbidden(&attrs, &why)))
}

/// The request URI as Go's `req.RequestURI` (path and query).
pub(crate) fn request_uri(uri: &http::Uri) -> String {
    uri.path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| uri.path().to_string())
}

/// Replaces `&`, `<`, `>` with HTML entities so error texts never look like markup
/// (upstream's `sanitizer`; quotes are left alone).
pub fn sanitize(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Go's `%q` (`strconv.Quote`): double quotes with `"`, `\` and control characters escaped.
pub fn go_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Upstream's `responsewriters.InternalError`: 500 text
/// `Internal Server Error: "<uri>": <err>`, HTML-sanitized.
pub fn internal_error(uri: &str, err: &str) -> Response {
    let text = format!("Internal Server Error: {}: {err}", go_quote(uri));
    go_http_error(StatusCode::INTERNAL_SERVER_ERROR, &sanitize(&text))
}

/// The sentence naming what was forbidden (upstream's `forbiddenMessage`).
fn forbidden_message(attrs: &Attributes) -> String {
    let user = go_quote(attrs.user_name());
    if !attrs.resource_request {
        return format!(
            "User {user} cannot {} path {}",
            attrs.verb,
            go_quote(&attrs.path)
        );
    }
    let mut resource = attrs.resource.clone();
    if !attrs.subresource.is_empty() {
        resource.push('/');
        resource.push_str(&attrs.subresource);
    }
    let scope = if attrs.namespace.is_empty() {
        "at the cluster scope".to_string()
    } else {
        format!("in the namespace {}", go_quote(&attrs.namespace))
    };
    format!(
        "User {user} cannot {} resource {} in API group {} {scope}",
        attrs.verb,
        go_quote(&resource),
        go_quote(&attrs.api_group)
    )
}

/// The 403 `Forbidden` Status for `attrs`, with the authorizer's `reason` appended when
/// non-empty (upstream's `responsewriters.Forbidden` + `apierrors.NewForbidden`).
pub fn forbidden_status(attrs: &Attributes, why: &str) -> Status {
    let msg = sanitize(&forbidden_message(attrs));
    let err = if why.is_empty() {
        msg
    } else {
        format!("{msg}: {why}")
    };
    let message = if attrs.api_group.is_empty() && attrs.resource.is_empty() {
        format!("forbidden: {err}")
    } else {
        let qualified = qualified_resource(&attrs.api_group, &attrs.resource);
        if attrs.name.is_empty() {
            format!("{qualified} is forbidden: {err}")
        } else {
            format!("{qualified} {} is forbidden: {err}", go_quote(&attrs.name))
        }
    };
    Status::failure(StatusCode::FORBIDDEN, reason::FORBIDDEN, message).with_details(StatusDetails {
        name: attrs.name.clone(),
        group: attrs.api_group.clone(),
        kind: attrs.resource.clone(),
        ..Default::default()
    })
}

/// The 403 response: [`forbidden_status`] as JSON with `X-Content-Type-Options: nosniff`.
pub fn forbidden(attrs: &Attributes, why: &str) -> Response {
    let mut response = forbidden_status(attrs, why).into_response();
    response.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::{AuthorizeResult, AuthzError};
    use crate::filters::{FilterLayer, service_fn};
    use crate::request::UserInfo;
    use http_body_util::BodyExt;
    use tower::{Layer, ServiceExt};

    fn user(name: &str) -> Option<Arc<UserInfo>> {
        Some(Arc::new(UserInfo {
            name: name.into(),
            ..Default::default()
        }))
    }

    async fn body_text(resp: Response) -> String {
        String::from_utf8(
            resp.into_body()
                .collect()
                .await
                .unwrap()
                .to_bytes()
                .to_vec(),
        )
        .unwrap()
    }

    #[tokio::test]
    async fn forbidden_bodies() {
        let cases: Vec<(Attributes, &str)> = vec![
            (
                Attributes {
                    user: user("NAME"),
                    verb: "GET".into(),
                    path: "/whatever".into(),
                    ..Default::default()
                },
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"NAME\" cannot GET path \"/whatever\"","reason":"Forbidden","details":{},"code":403}"#,
            ),
            (
                Attributes {
                    user: user("NAME"),
                    verb: "GET".into(),
                    path: "/<script>".into(),
                    ..Default::default()
                },
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"NAME\" cannot GET path \"/\u0026lt;script\u0026gt;\"","reason":"Forbidden","details":{},"code":403}"#,
            ),
            (
                Attributes {
                    user: user("NAME"),
                    verb: "get".into(),
                    resource: "pod".into(),
                    resource_request: true,
                    ..Default::default()
                },
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pod is forbidden: User \"NAME\" cannot get resource \"pod\" in API group \"\" at the cluster scope","reason":"Forbidden","details":{"kind":"pod"},"code":403}"#,
            ),
            (
                Attributes {
                    user: user("NAME"),
                    verb: "get".into(),
                    resource: "pod".into(),
                    resource_request: true,
                    name: "mypod".into(),
                    ..Default::default()
                },
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pod \"mypod\" is forbidden: User \"NAME\" cannot get resource \"pod\" in API group \"\" at the cluster scope","reason":"Forbidden","details":{"name":"mypod","kind":"pod"},"code":403}"#,
            ),
            (
                Attributes {
                    user: user("NAME"),
                    verb: "get".into(),
                    namespace: "test".into(),
                    api_group: "v2".into(),
                    resource: "pod".into(),
                    subresource: "quota".into(),
                    resource_request: true,
                    ..Default::default()
                },
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pod.v2 is forbidden: User \"NAME\" cannot get resource \"pod/quota\" in API group \"v2\" in the namespace \"test\"","reason":"Forbidden","details":{"group":"v2","kind":"pod"},"code":403}"#,
            ),
        ];
        for (attrs, expected) in cases {
            let resp = forbidden(&attrs, "");
            assert_eq!(resp.status(), StatusCode::FORBIDDEN);
            assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/json");
            assert_eq!(resp.headers()[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
            assert_eq!(body_text(resp).await, format!("{expected}\n"));
        }
    }

    #[test]
    fn forbidden_reason_appended() {
        let attrs = Attributes {
            user: None,
            verb: "get".into(),
            path: "/x".into(),
            ..Default::default()
        };
        assert_eq!(
            forbidden_status(&attrs, "Everything is forbidden.").message,
            "forbidden: User \"\" cannot get path \"/x\": Everything is forbidden."
        );
    }

    #[tokio::test]
    async fn internal_error_text() {
        let resp = internal_error("/get", "ARGH");
        assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            body_text(resp).await,
            "Internal Server Error: \"/get\": ARGH\n"
        );
        let resp = internal_error("/<script>", "ARGH");
        assert_eq!(
            body_text(resp).await,
            "Internal Server Error: \"/&lt;script&gt;\": ARGH\n"
        );
    }

    #[test]
    fn quoting() {
        assert_eq!(go_quote("a\"b\\c\n\u{1}"), r#""a\"b\\c\n\x01""#);
        assert_eq!(go_quote("é"), "\"é\"");
    }

    struct Fixed(Decision, &'static str, Option<&'static str>);
    #[async_trait::async_trait]
    impl Authorizer for Fixed {
        async fn authorize(&self, _attrs: &Attributes) -> AuthorizeResult {
            (
                self.0,
                self.1.to_string(),
                self.2.map(|e| AuthzError::Other(e.into())),
            )
        }
    }

    async fn run(
        authorizer: Fixed,
        info: Option<RequestInfo>,
    ) -> (StatusCode, String, Option<Arc<AuditContext>>) {
        let svc = FilterLayer::new(AuthorizationFilter::new(Arc::new(authorizer))).layer(
            service_fn(|_req| async {
                crate::body::with_content_type(StatusCode::OK, "text/plain", "served")
            }),
        );
        let audit = AuditContext::new("id".into());
        let mut req = http::Request::get("/api/v1/namespaces/ns/pods?watch=true")
            .body(crate::body::empty())
            .unwrap();
        if let Some(info) = info {
            req.extensions_mut().insert(info);
        }
        req.extensions_mut().insert(audit.clone());
        req.extensions_mut().insert(RequestUser(Arc::new(UserInfo {
            name: "alice".into(),
            ..Default::default()
        })));
        let resp = svc.oneshot(req).await.unwrap();
        let status = resp.status();
        (status, body_text(resp).await, Some(audit))
    }

    fn pods_info() -> RequestInfo {
        RequestInfo {
            is_resource_request: true,
            path: "/api/v1/namespaces/ns/pods".into(),
            verb: "list".into(),
            api_prefix: "api".into(),
            api_version: "v1".into(),
            namespace: "ns".into(),
            resource: "pods".into(),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn audit_annotations_and_decisions() {
        // Allow (even with an error).
        let (code, body, audit) = run(
            Fixed(Decision::Allow, "allowed by test", Some("ignored")),
            Some(pods_info()),
        )
        .await;
        assert_eq!(code, StatusCode::OK);
        assert_eq!(body, "served");
        let ann = audit.unwrap().annotations();
        assert_eq!(ann[DECISION_ANNOTATION_KEY], "allow");
        assert_eq!(ann[REASON_ANNOTATION_KEY], "allowed by test");

        // Forbid.
        let (code, body, audit) =
            run(Fixed(Decision::NoOpinion, "nope", None), Some(pods_info())).await;
        assert_eq!(code, StatusCode::FORBIDDEN);
        assert_eq!(
            body,
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"pods is forbidden: User \\\"alice\\\" cannot list resource \\\"pods\\\" in API group \\\"\\\" in the namespace \\\"ns\\\": nope\",\"reason\":\"Forbidden\",\"details\":{\"kind\":\"pods\"},\"code\":403}\n"
        );
        let ann = audit.unwrap().annotations();
        assert_eq!(ann[DECISION_ANNOTATION_KEY], "forbid");
        assert_eq!(ann[REASON_ANNOTATION_KEY], "nope");

        // Deny is a 403 too.
        let (code, _, _) = run(Fixed(Decision::Deny, "", None), Some(pods_info())).await;
        assert_eq!(code, StatusCode::FORBIDDEN);

        // Error without allow.
        let (code, body, audit) = run(
            Fixed(Decision::NoOpinion, "", Some("broken")),
            Some(pods_info()),
        )
        .await;
        assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            body,
            "Internal Server Error: \"/api/v1/namespaces/ns/pods?watch=true\": broken\n"
        );
        let ann = audit.unwrap().annotations();
        assert!(!ann.contains_key(DECISION_ANNOTATION_KEY));
        assert_eq!(ann[REASON_ANNOTATION_KEY], "internal error");

        // No RequestInfo.
        let (code, body, _) = run(Fixed(Decision::Allow, "", None), None).await;
        assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(body.ends_with("no RequestInfo found in the context\n"));
    }

    #[test]
    fn attributes_from_request_info() {
        let mut info = pods_info();
        info.label_selector = "a=b".into();
        info.field_selector = "metadata.name=x".into();
        info.subresource = "status".into();
        info.name = "p".into();
        info.api_group = "apps".into();
        let mut req = http::Request::new(());
        req.extensions_mut().insert(info);
        let alice = Arc::new(UserInfo {
            name: "alice".into(),
            ..Default::default()
        });
        req.extensions_mut().insert(RequestUser(alice.clone()));
        let attrs = request_attributes(&req.into_parts().0).unwrap();
        assert_eq!(
            attrs,
            Attributes {
                user: Some(alice),
                verb: "list".into(),
                namespace: "ns".into(),
                api_group: "apps".into(),
                api_version: "v1".into(),
                resource: "pods".into(),
                subresource: "status".into(),
                name: "p".into(),
                path: "/api/v1/namespaces/ns/pods".into(),
                resource_request: true,
                label_selector: "a=b".into(),
                field_selector: "metadata.name=x".into(),
            }
        );
    }
}
