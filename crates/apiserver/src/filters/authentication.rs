//! The authentication filter (`endpoints/filters/authentication.go`, failed-request audit from
//! `authn_audit.go`).

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use base64::Engine;
use http::{Version, header};

use super::authn_metrics::{self, AuthnResult};
use super::authorization::{internal_error, request_uri};
use super::{Filter, Next};
use crate::audit::FailedAuthenticationAuditor;
use crate::authn::requestheader::RequestHeaderNames;
use crate::authn::{ApiAudiences, Authenticator, websocket};
use crate::body::{Request, Response};
use crate::request::{AuthenticatedUser, ConnectionInfo, RequestInfo, RequestUser, UserInfo};
use crate::status::ApiError;

/// Authenticates every request: on success the user is stored as [`RequestUser`] and
/// [`AuthenticatedUser`] and the credentials headers are removed; on failure the failed
/// request is audited and answered with 401.
#[derive(Clone)]
pub struct AuthenticationFilter {
    authenticator: Arc<dyn Authenticator>,
    failed_auditor: Option<Arc<dyn FailedAuthenticationAuditor>>,
    api_audiences: Arc<[String]>,
    request_header_names: Option<RequestHeaderNames>,
}

impl AuthenticationFilter {
    /// A filter using `authenticator`; `failed_auditor` records failed attempts (when auditing
    /// is enabled); `api_audiences` are the server's `--api-audiences` (empty: any).
    pub fn new(
        authenticator: Arc<dyn Authenticator>,
        failed_auditor: Option<Arc<dyn FailedAuthenticationAuditor>>,
        api_audiences: Vec<String>,
    ) -> Self {
        AuthenticationFilter {
            authenticator,
            failed_auditor,
            api_audiences: api_audiences.into(),
            request_header_names: None,
        }
    }

    /// Also strips the configured front-proxy headers (`--requestheader-*-headers`) after a
    /// successful authentication; the standard `X-Remote-*` ones are always stripped.
    pub fn with_request_header_names(mut self, names: RequestHeaderNames) -> Self {
        self.request_header_names = Some(names);
        self
    }
}

/// Whether the response audiences are acceptable for the server's: either side empty, or a
/// common audience.
fn audiences_acceptable(api_audiences: &[String], response_audiences: &[String]) -> bool {
    api_audiences.is_empty()
        || response_audiences.is_empty()
        || response_audiences.iter().any(|a| api_audiences.contains(a))
}

/// Which credential kinds the request carries (upstream's `getAuthMethods`), in the order
/// `basic`, `bearer`, `access_token`, `x509`.
pub fn attempted_methods(parts: &http::request::Parts) -> Vec<&'static str> {
    let mut methods = Vec::new();
    let auth = parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if is_basic_auth(auth) {
        methods.push("basic");
    }
    let fields: Vec<&str> = auth.trim().split(' ').collect();
    if fields.len() > 1 && fields[0].eq_ignore_ascii_case("bearer") {
        methods.push("bearer");
    }
    if has_access_token(parts.uri.query().unwrap_or("")) {
        methods.push("access_token");
    }
    let has_certs = parts
        .extensions
        .get::<ConnectionInfo>()
        .and_then(|c| c.peer_certificates.as_ref())
        .is_some_and(|c| !c.is_empty());
    if has_certs {
        methods.push("x509");
    }
    methods
}

/// Go's `Request.BasicAuth` success: `Basic <base64 of user:password>`.
fn is_basic_auth(auth: &str) -> bool {
    let Some(prefix) = auth.get(..6) else {
        return false;
    };
    if !prefix.eq_ignore_ascii_case("basic ") {
        return false;
    }
    base64::engine::general_purpose::STANDARD
        .decode(&auth[6..])
        .is_ok_and(|decoded| decoded.contains(&b':'))
}

/// Whether the first `access_token` query value is non-blank.
fn has_access_token(query: &str) -> bool {
    query
        .split('&')
        .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
        .find(|(k, _)| *k == "access_token")
        .is_some_and(|(_, v)| !form_decode(v).trim().is_empty())
}

fn form_decode(value: &str) -> String {
    crate::authn::unescape_extra_key(&value.replace('+', " "))
}

/// The failed-authentication audit message.
pub fn failed_authentication_message(parts: &http::request::Parts) -> String {
    let methods = attempted_methods(parts);
    if methods.is_empty() {
        "Authentication failed, no credentials provided".to_string()
    } else {
        format!("Authentication failed, attempted: {}", methods.join(", "))
    }
}

/// Asks the connection to close after this response. HTTP/2 has no `Connection: close`, so
/// the serving layer sends a GOAWAY instead (upstream's `UnauthenticatedHTTP2DOSMitigation`).
fn close_http2_connection(parts: &http::request::Parts) {
    if parts.version == Version::HTTP_2
        && let Some(conn) = parts.extensions.get::<ConnectionInfo>()
    {
        conn.close_connection.cancel();
    }
}

impl AuthenticationFilter {
    /// The response for a request that failed authentication.
    fn unauthorized(&self, parts: &http::request::Parts) -> Response {
        if let Some(auditor) = &self.failed_auditor {
            auditor.audit_failed_authentication(parts, &failed_authentication_message(parts));
        }
        close_http2_connection(parts);
        if parts.extensions.get::<RequestInfo>().is_none() {
            return internal_error(
                &request_uri(&parts.uri),
                "no RequestInfo found in the context",
            );
        }
        ApiError::unauthorized().into_response()
    }

    /// Authenticates; `Ok(user)` to continue, or the 401 response.
    async fn authenticate(
        &self,
        parts: &mut http::request::Parts,
    ) -> Result<Arc<UserInfo>, Box<Response>> {
        if !self.api_audiences.is_empty() {
            parts
                .extensions
                .insert(ApiAudiences(self.api_audiences.to_vec()));
        }
        let started = Instant::now();
        let outcome = self.authenticator.authenticate(parts).await;
        let elapsed = started.elapsed();
        let response = match outcome {
            Ok(Some(response)) => response,
            Ok(None) => {
                authn_metrics::record(AuthnResult::Failure, None, elapsed);
                return Err(Box::new(self.unauthorized(parts)));
            }
            Err(err) => {
                authn_metrics::record(AuthnResult::Error, None, elapsed);
                tracing::error!(error = %err, "Unable to authenticate the request");
                return Err(Box::new(self.unauthorized(parts)));
            }
        };
        if !audiences_acceptable(&self.api_audiences, &response.audiences) {
            authn_metrics::record(AuthnResult::Error, None, elapsed);
            tracing::error!(
                "unable to match the audience: {:?} , accepted: {:?}",
                response.audiences,
                self.api_audiences
            );
            return Err(Box::new(self.unauthorized(parts)));
        }
        authn_metrics::record(AuthnResult::Success, Some(&response.user.name), elapsed);
        // The credentials are not needed any more, and must not reach handlers or proxies.
        parts.headers.remove(header::AUTHORIZATION);
        websocket::strip_token_protocol(&mut parts.headers);
        RequestHeaderNames::standard().clear(&mut parts.headers);
        if let Some(names) = &self.request_header_names {
            names.clear(&mut parts.headers);
        }
        if response.user.is_anonymous() {
            close_http2_connection(parts);
        }
        Ok(Arc::new(response.user))
    }
}

impl Filter for AuthenticationFilter {
    fn call(&self, req: Request, next: Next) -> impl Future<Output = Response> + Send + 'static {
        let this = self.clone();
        async move {
            let (mut parts, body) = req.into_parts();
            match this.authenticate(&mut parts).await {
                Ok(user) => {
                    let mut req = Request::from_parts(parts, body);
                    req.extensions_mut().insert(RequestUser(user.clone()));
                    req.extensions_mut().insert(AuthenticatedUser(user));
                    next.run(req).await
                }
                Err(response) => *response,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authn::{AuthError, AuthResponse};
    use crate::filters::{FilterLayer, service_fn};
    use http::StatusCode;
    use http_body_util::BodyExt;
    use std::sync::Mutex;
    use tower::{Layer, ServiceExt};

    struct Fixed(Result<Option<AuthResponse>, AuthError>);
    #[async_trait::async_trait]
    impl Authenticator for Fixed {
        async fn authenticate(
            &self,
            _req: &http::request::Parts,
        ) -> Result<Option<AuthResponse>, AuthError> {
            self.0.clone()
        }
    }

    #[derive(Default)]
    struct Auditor(Mutex<Vec<String>>);
    impl FailedAuthenticationAuditor for Auditor {
        fn audit_failed_authentication(&self, _request: &http::request::Parts, message: &str) {
            self.0.lock().unwrap().push(message.to_string());
        }
    }

    fn user(
        name: &str,
        groups: &[&str],
        audiences: &[&str],
    ) -> Result<Option<AuthResponse>, AuthError> {
        Ok(Some(AuthResponse {
            user: UserInfo {
                name: name.into(),
                groups: groups.iter().map(|g| g.to_string()).collect(),
                ..Default::default()
            },
            audiences: audiences.iter().map(|a| a.to_string()).collect(),
        }))
    }

    struct Seen {
        user: Option<String>,
        authenticated: Option<String>,
        headers: http::HeaderMap,
    }

    struct Outcome {
        code: StatusCode,
        body: String,
        seen: Option<Seen>,
        closed: bool,
        audited: Vec<String>,
    }

    async fn run_with(
        result: Result<Option<AuthResponse>, AuthError>,
        api_audiences: &[&str],
        version: Version,
        request: http::request::Builder,
        with_info: bool,
    ) -> Outcome {
        let auditor = Arc::new(Auditor::default());
        let seen: Arc<Mutex<Option<Seen>>> = Arc::default();
        let seen2 = seen.clone();
        let filter = AuthenticationFilter::new(
            Arc::new(Fixed(result)),
            Some(auditor.clone()),
            api_audiences.iter().map(|a| a.to_string()).collect(),
        )
        .with_request_header_names(RequestHeaderNames {
            username_headers: vec!["X-Custom-User".into()],
            extra_header_prefixes: vec!["X-Custom-Extra-".into()],
            ..Default::default()
        });
        let svc = FilterLayer::new(filter).layer(service_fn(move |req: Request| {
            let seen = seen2.clone();
            async move {
                *seen.lock().unwrap() = Some(Seen {
                    user: req
                        .extensions()
                        .get::<RequestUser>()
                        .map(|u| u.0.name.clone()),
                    authenticated: req
                        .extensions()
                        .get::<AuthenticatedUser>()
                        .map(|u| u.0.name.clone()),
                    headers: req.headers().clone(),
                });
                crate::body::with_content_type(StatusCode::OK, "text/plain", "ok")
            }
        }));
        let conn = ConnectionInfo::local();
        let token = conn.close_connection.clone();
        let mut req = request.version(version).body(crate::body::empty()).unwrap();
        req.extensions_mut().insert(conn);
        if with_info {
            req.extensions_mut().insert(RequestInfo::default());
        }
        let resp = svc.oneshot(req).await.unwrap();
        let code = resp.status();
        let body = String::from_utf8(
            resp.into_body()
                .collect()
                .await
                .unwrap()
                .to_bytes()
                .to_vec(),
        )
        .unwrap();
        let audited = auditor.0.lock().unwrap().clone();
        Outcome {
            code,
            body,
            seen: seen.lock().unwrap().take(),
            closed: token.is_cancelled(),
            audited,
        }
    }

    async fn run(
        result: Result<Option<AuthResponse>, AuthError>,
        request: http::request::Builder,
    ) -> Outcome {
        run_with(result, &[], Version::HTTP_11, request, true).await
    }

    const UNAUTHORIZED: &str = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"Unauthorized\",\"reason\":\"Unauthorized\",\"code\":401}\n";

    #[tokio::test]
    async fn success_strips_authorization() {
        let o = run(
            user("user", &[], &[]),
            http::Request::get("/").header("Authorization", "Something"),
        )
        .await;
        assert_eq!(o.code, StatusCode::OK);
        let seen = o.seen.unwrap();
        assert_eq!(seen.user.as_deref(), Some("user"));
        assert_eq!(seen.authenticated.as_deref(), Some("user"));
        assert!(!seen.headers.contains_key("authorization"));
        assert!(!o.closed);
        assert!(o.audited.is_empty());
    }

    #[tokio::test]
    async fn failure_and_error_are_401() {
        for result in [Ok(None), Err(AuthError::InvalidBearerToken)] {
            let o = run(
                result,
                http::Request::get("/").header("Authorization", "Bearer x"),
            )
            .await;
            assert_eq!(o.code, StatusCode::UNAUTHORIZED);
            assert_eq!(o.body, UNAUTHORIZED);
            assert!(o.seen.is_none());
            assert_eq!(o.audited, vec!["Authentication failed, attempted: bearer"]);
        }
    }

    #[tokio::test]
    async fn failure_without_request_info_is_500() {
        let o = run_with(
            Ok(None),
            &[],
            Version::HTTP_11,
            http::Request::get("/x"),
            false,
        )
        .await;
        assert_eq!(o.code, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            o.body,
            "Internal Server Error: \"/x\": no RequestInfo found in the context\n"
        );
    }

    #[tokio::test]
    async fn audiences() {
        // Intersecting.
        let o = run_with(
            user("u", &[], &["other", "api"]),
            &["api"],
            Version::HTTP_11,
            http::Request::get("/"),
            true,
        )
        .await;
        assert_eq!(o.code, StatusCode::OK);
        // Disjoint.
        let o = run_with(
            user("u", &[], &["other"]),
            &["api"],
            Version::HTTP_11,
            http::Request::get("/"),
            true,
        )
        .await;
        assert_eq!(o.code, StatusCode::UNAUTHORIZED);
        // Audience-agnostic response.
        let o = run_with(
            user("u", &[], &[]),
            &["api"],
            Version::HTTP_11,
            http::Request::get("/"),
            true,
        )
        .await;
        assert_eq!(o.code, StatusCode::OK);
    }

    #[tokio::test]
    async fn clears_front_proxy_headers() {
        let o = run(
            user("user", &[], &[]),
            http::Request::get("/")
                .header("X-Remote-User", "u")
                .header("X-Remote-Uid", "1")
                .header("X-Remote-Group", "g")
                .header("X-Remote-Extra-Foo", "f")
                .header("X-Custom-User", "c")
                .header("X-Custom-Extra-Bar", "b")
                .header("X-Other", "keep"),
        )
        .await;
        let headers = o.seen.unwrap().headers;
        assert_eq!(headers.len(), 1, "{headers:?}");
        assert_eq!(headers["x-other"], "keep");
    }

    #[tokio::test]
    async fn http2_connection_close() {
        // Anonymous over HTTP/2: close.
        let o = run_with(
            user("system:anonymous", &["system:unauthenticated"], &[]),
            &[],
            Version::HTTP_2,
            http::Request::get("/"),
            true,
        )
        .await;
        assert_eq!(o.code, StatusCode::OK);
        assert!(o.closed);
        // Failed over HTTP/2: close.
        let o = run_with(
            Ok(None),
            &[],
            Version::HTTP_2,
            http::Request::get("/"),
            true,
        )
        .await;
        assert_eq!(o.code, StatusCode::UNAUTHORIZED);
        assert!(o.closed);
        // Authenticated over HTTP/2: keep.
        let o = run_with(
            user("alice", &["system:authenticated"], &[]),
            &[],
            Version::HTTP_2,
            http::Request::get("/"),
            true,
        )
        .await;
        assert!(!o.closed);
        // Anonymous over HTTP/1.1: keep (nothing to do).
        let o = run_with(
            user("system:anonymous", &["system:unauthenticated"], &[]),
            &[],
            Version::HTTP_11,
            http::Request::get("/"),
            true,
        )
        .await;
        assert!(!o.closed);
    }

    fn parts(builder: http::request::Builder, certs: bool) -> http::request::Parts {
        let (mut p, _) = builder.body(()).unwrap().into_parts();
        let mut conn = ConnectionInfo::local();
        if certs {
            conn.peer_certificates = Some(Arc::new(vec![rustls_pki_types::CertificateDer::from(
                vec![1u8],
            )]));
        }
        p.extensions.insert(conn);
        p
    }

    #[test]
    fn failed_authentication_messages() {
        assert_eq!(
            failed_authentication_message(&parts(http::Request::get("/"), false)),
            "Authentication failed, no credentials provided"
        );
        assert_eq!(
            failed_authentication_message(&parts(
                http::Request::get("/").header("Authorization", "Basic dXNlcjpwYXNz"),
                false
            )),
            "Authentication failed, attempted: basic"
        );
        assert_eq!(
            failed_authentication_message(&parts(
                http::Request::get("/?access_token=abc").header("Authorization", "Bearer t"),
                true
            )),
            "Authentication failed, attempted: bearer, access_token, x509"
        );
        assert_eq!(
            failed_authentication_message(&parts(http::Request::get("/?access_token=&x=1"), false)),
            "Authentication failed, no credentials provided"
        );
        // `Bearer` alone is not an attempted bearer token.
        assert_eq!(
            failed_authentication_message(&parts(
                http::Request::get("/").header("Authorization", "Bearer"),
                false
            )),
            "Authentication failed, no credentials provided"
        );
    }
}
