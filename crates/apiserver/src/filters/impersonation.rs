//! The impersonation filter, legacy mode (`endpoints/filters/impersonation`).
//!
//! `Impersonate-User`, `Impersonate-Uid`, `Impersonate-Group` (repeatable) and
//! `Impersonate-Extra-<key>` (repeatable) switch the request's user after each requested item
//! has been authorized with verb `impersonate` for the requesting user.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use http::HeaderMap;

use super::authorization::{forbidden, internal_error, request_uri};
use super::{Filter, Next};
use crate::audit::AuditContext;
use crate::authn::unescape_extra_key;
use crate::authz::{Attributes, Authorizer, Decision};
use crate::body::{Request, Response};
use crate::request::{RequestUser, UserInfo, names};
use crate::status::ApiError;

/// `Impersonate-User`.
pub const IMPERSONATE_USER_HEADER: &str = "impersonate-user";
/// `Impersonate-Uid`.
pub const IMPERSONATE_UID_HEADER: &str = "impersonate-uid";
/// `Impersonate-Group`.
pub const IMPERSONATE_GROUP_HEADER: &str = "impersonate-group";
/// `Impersonate-Extra-` (followed by the extra key).
pub const IMPERSONATE_EXTRA_PREFIX: &str = "impersonate-extra-";

const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";
const AUTHENTICATION_GROUP: &str = "authentication.k8s.io";
const AUTHENTICATION_VERSION: &str = "authentication.k8s.io/v1";

/// The impersonated user, inserted into the request extensions for auditing (the
/// `impersonatedUser` of the audit event). [`RequestUser`] holds the same user;
/// [`crate::request::AuthenticatedUser`] still holds the requester.
#[derive(Clone, Debug)]
pub struct ImpersonatedUser(pub Arc<UserInfo>);

/// The legacy impersonation filter.
#[derive(Clone)]
pub struct ImpersonationFilter {
    authorizer: Arc<dyn Authorizer>,
}

impl ImpersonationFilter {
    /// A filter authorizing impersonation with `authorizer`.
    pub fn new(authorizer: Arc<dyn Authorizer>) -> Self {
        ImpersonationFilter { authorizer }
    }
}

/// One thing a request asks to impersonate.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Impersonation {
    User(String),
    ServiceAccount { namespace: String, name: String },
    Group(String),
    Extra { key: String, value: String },
    Uid(String),
}

impl fmt::Display for Impersonation {
    /// Go's `%v` of the `ObjectReference` upstream builds
    /// (`{Kind Namespace Name UID APIVersion ResourceVersion FieldPath}`), which appears in the
    /// 400 message.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (kind, ns, name, api_version, field_path) = match self {
            Impersonation::User(n) => ("User", "", n.as_str(), "", ""),
            Impersonation::ServiceAccount { namespace, name } => {
                ("ServiceAccount", namespace.as_str(), name.as_str(), "", "")
            }
            Impersonation::Group(n) => ("Group", "", n.as_str(), "", ""),
            Impersonation::Extra { key, value } => (
                "UserExtra",
                "",
                value.as_str(),
                AUTHENTICATION_VERSION,
                key.as_str(),
            ),
            Impersonation::Uid(u) => ("UID", "", u.as_str(), AUTHENTICATION_VERSION, ""),
        };
        write!(f, "{{{kind} {ns} {name}  {api_version}  {field_path}}}")
    }
}

/// Splits `system:serviceaccount:<ns>:<name>` when both parts are valid names.
fn split_service_account(user: &str) -> Option<(String, String)> {
    let rest = user.strip_prefix(SERVICE_ACCOUNT_PREFIX)?;
    let parts: Vec<&str> = rest.split(':').collect();
    let [namespace, name] = parts.as_slice() else {
        return None;
    };
    (is_dns_label(namespace) && is_dns_subdomain(name))
        .then(|| (namespace.to_string(), name.to_string()))
}

/// RFC 1123 label: at most 63 lower-case alphanumerics or `-`, alphanumeric at both ends.
fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// RFC 1123 subdomain: at most 253 characters of dot-separated labels.
fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns_label)
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// The requested impersonations, in upstream's order (user, groups, extras, UID); a 400 when
/// groups, extras or a UID are requested without a user.
fn impersonation_requests(headers: &HeaderMap) -> Result<Vec<Impersonation>, ApiError> {
    let mut requests = Vec::new();
    let user = header_str(headers, IMPERSONATE_USER_HEADER);
    if !user.is_empty() {
        requests.push(match split_service_account(user) {
            Some((namespace, name)) => Impersonation::ServiceAccount { namespace, name },
            None => Impersonation::User(user.to_string()),
        });
    }
    let mut has_groups = false;
    for group in headers.get_all(IMPERSONATE_GROUP_HEADER) {
        has_groups = true;
        requests.push(Impersonation::Group(
            group.to_str().unwrap_or_default().to_string(),
        ));
    }
    let mut has_extra = false;
    for name in headers.keys() {
        let Some(suffix) = name.as_str().strip_prefix(IMPERSONATE_EXTRA_PREFIX) else {
            continue;
        };
        has_extra = true;
        // Header names are already lower-case here.
        let key = unescape_extra_key(suffix);
        for value in headers.get_all(name) {
            requests.push(Impersonation::Extra {
                key: key.clone(),
                value: value.to_str().unwrap_or_default().to_string(),
            });
        }
    }
    let uid = header_str(headers, IMPERSONATE_UID_HEADER);
    if !uid.is_empty() {
        requests.push(Impersonation::Uid(uid.to_string()));
    }
    if (has_groups || has_extra || !uid.is_empty()) && user.is_empty() {
        let listed: Vec<String> = requests.iter().map(ToString::to_string).collect();
        return Err(ApiError::bad_request(format!(
            "requested [{}] without impersonating a user",
            listed.join(" ")
        )));
    }
    Ok(requests)
}

/// Removes every impersonation header.
fn clear_impersonation_headers(headers: &mut HeaderMap) {
    headers.remove(IMPERSONATE_USER_HEADER);
    headers.remove(IMPERSONATE_GROUP_HEADER);
    headers.remove(IMPERSONATE_UID_HEADER);
    let extras: Vec<_> = headers
        .keys()
        .filter(|k| k.as_str().starts_with(IMPERSONATE_EXTRA_PREFIX))
        .cloned()
        .collect();
    for name in extras {
        headers.remove(name);
    }
}

impl ImpersonationFilter {
    /// The impersonated user, `Ok(None)` when nothing is impersonated, or the response to send.
    async fn impersonate(
        &self,
        req: &http::request::Parts,
    ) -> Result<Option<UserInfo>, Box<Response>> {
        let requests =
            impersonation_requests(&req.headers).map_err(|err| Box::new(err.into_response()))?;
        if requests.is_empty() {
            return Ok(None);
        }
        let Some(RequestUser(requester)) = req.extensions.get::<RequestUser>().cloned() else {
            return Err(Box::new(internal_error(
                &request_uri(&req.uri),
                "no user found for request",
            )));
        };
        // Explicit groups are the authority, including system:(un)authenticated.
        let groups_specified = &req.headers.contains_key(IMPERSONATE_GROUP_HEADER);
        let mut username = String::new();
        let mut groups: Vec<String> = Vec::new();
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut uid = String::new();
        for request in requests {
            let mut attrs = Attributes {
                user: Some(requester.clone()),
                verb: "impersonate".into(),
                resource_request: true,
                ..Default::default()
            };
            match request {
                Impersonation::ServiceAccount { namespace, name } => {
                    attrs.resource = "serviceaccounts".into();
                    username = format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}");
                    if !groups_specified {
                        groups = vec![
                            "system:serviceaccounts".to_string(),
                            format!("system:serviceaccounts:{namespace}"),
                        ];
                    }
                    attrs.namespace = namespace;
                    attrs.name = name;
                }
                Impersonation::User(name) => {
                    attrs.resource = "users".into();
                    username = name.clone();
                    attrs.name = name;
                }
                Impersonation::Group(name) => {
                    attrs.resource = "groups".into();
                    groups.push(name.clone());
                    attrs.name = name;
                }
                Impersonation::Extra { key, value } => {
                    attrs.api_group = AUTHENTICATION_GROUP.into();
                    attrs.api_version = "v1".into();
                    attrs.resource = "userextras".into();
                    attrs.subresource = key.clone();
                    extra.entry(key).or_default().push(value.clone());
                    attrs.name = value;
                }
                Impersonation::Uid(value) => {
                    attrs.api_group = AUTHENTICATION_GROUP.into();
                    attrs.api_version = "v1".into();
                    attrs.resource = "uids".into();
                    uid = value.clone();
                    attrs.name = value;
                }
            }
            let (decision, why, err) = self.authorizer.authorize(&attrs).await;
            if err.is_some() || decision != Decision::Allow {
                tracing::debug!(uri = %req.uri, reason = %why, error = ?err, "Forbidden");
                return Err(Box::new(forbidden(&attrs, &why)));
            }
        }
        if username != names::ANONYMOUS {
            let has_marker = groups
                .iter()
                .any(|g| g == names::SYSTEM_AUTHENTICATED || g == names::SYSTEM_UNAUTHENTICATED);
            if !has_marker {
                groups.push(names::SYSTEM_AUTHENTICATED.to_string());
            }
        } else if !groups.iter().any(|g| g == names::SYSTEM_UNAUTHENTICATED) {
            groups.push(names::SYSTEM_UNAUTHENTICATED.to_string());
        }
        tracing::debug!("{} is impersonating {}", requester.name, username);
        Ok(Some(UserInfo {
            name: username,
            uid,
            groups,
            extra,
        }))
    }
}

impl Filter for ImpersonationFilter {
    fn call(&self, req: Request, next: Next) -> impl Future<Output = Response> + Send + 'static {
        let this = self.clone();
        async move {
            let (parts, body) = req.into_parts();
            let result = this.impersonate(&parts).await;
            let mut req = Request::from_parts(parts, body);
            match result {
                Err(response) => *response,
                Ok(None) => next.run(req).await,
                Ok(Some(user)) => {
                    let user = Arc::new(user);
                    clear_impersonation_headers(req.headers_mut());
                    req.extensions_mut().insert(RequestUser(user.clone()));
                    // The audit filter runs outside this one: it reads the impersonated user from
                    // the shared audit context.
                    if let Some(audit) = req.extensions().get::<Arc<AuditContext>>() {
                        audit.set_impersonated_user((*user).clone());
                    }
                    req.extensions_mut().insert(ImpersonatedUser(user));
                    next.run(req).await
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::AuthorizeResult;
    use crate::filters::{FilterLayer, service_fn};
    use crate::request::AuthenticatedUser;
    use http::StatusCode;
    use http_body_util::BodyExt;
    use std::sync::Mutex;
    use tower::{Layer, ServiceExt};

    /// Mirrors upstream's test authorizer: what each requester may impersonate.
    struct TestAuthorizer;

    #[async_trait::async_trait]
    impl Authorizer for TestAuthorizer {
        async fn authorize(&self, a: &Attributes) -> AuthorizeResult {
            let user = a.user.as_deref().cloned().unwrap_or_default();
            let allow = (Decision::Allow, String::new(), None);
            let deny = (Decision::NoOpinion, "deny by default".to_string(), None);
            if user.name == "system:admin" {
                return allow;
            }
            if a.resource == "uids" && a.name == "some-uid" && user.name == "dev" {
                return allow;
            }
            if user.in_group("wheel") && a.verb == "impersonate" && a.resource == "users" {
                return allow;
            }
            if user.in_group("sa-impersonater")
                && a.verb == "impersonate"
                && a.resource == "serviceaccounts"
            {
                return allow;
            }
            if user.in_group("regular-impersonater")
                && a.verb == "impersonate"
                && a.resource == "users"
            {
                return allow;
            }
            if user.in_group("group-impersonater")
                && a.verb == "impersonate"
                && a.resource == "groups"
            {
                return allow;
            }
            if user.in_group("extra-setter-scopes")
                && a.verb == "impersonate"
                && a.resource == "userextras"
                && a.subresource == "scopes"
            {
                return allow;
            }
            if user.in_group("escaped-scopes")
                && a.verb == "impersonate"
                && a.resource == "userextras"
                && a.subresource == "example.com/escaped/scopes"
            {
                return allow;
            }
            if user.in_group("extra-setter-particular-scopes")
                && a.verb == "impersonate"
                && a.resource == "userextras"
                && a.subresource == "scopes"
                && a.name == "scope-a"
            {
                return allow;
            }
            if user.in_group("extra-setter-project")
                && a.verb == "impersonate"
                && a.resource == "userextras"
                && a.subresource == "project"
            {
                return allow;
            }
            deny
        }
    }

    /// What the handler saw: user, authenticated user, impersonated marker, leftover headers.
    type Seen = (Option<UserInfo>, Option<UserInfo>, bool, Vec<String>);

    struct Outcome {
        code: StatusCode,
        body: String,
        user: Option<UserInfo>,
        authenticated: Option<UserInfo>,
        impersonated: bool,
        leftover_headers: Vec<String>,
    }

    fn requester(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    async fn run(requester: Option<UserInfo>, headers: &[(&str, &str)]) -> Outcome {
        let seen: Arc<Mutex<Option<Seen>>> = Arc::default();
        let seen2 = seen.clone();
        let svc = FilterLayer::new(ImpersonationFilter::new(Arc::new(TestAuthorizer))).layer(
            service_fn(move |req: Request| {
                let seen = seen2.clone();
                async move {
                    let user = req
                        .extensions()
                        .get::<RequestUser>()
                        .map(|u| (*u.0).clone());
                    let authn = req
                        .extensions()
                        .get::<AuthenticatedUser>()
                        .map(|u| (*u.0).clone());
                    let imp = req.extensions().get::<ImpersonatedUser>().is_some();
                    let names = req
                        .headers()
                        .keys()
                        .filter(|k| k.as_str().starts_with("impersonate"))
                        .map(|k| k.to_string())
                        .collect();
                    *seen.lock().unwrap() = Some((user, authn, imp, names));
                    crate::body::with_content_type(StatusCode::OK, "text/plain", "ok")
                }
            }),
        );
        let mut builder = http::Request::get("/api/v1/pods");
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        let mut req = builder.body(crate::body::empty()).unwrap();
        if let Some(u) = requester {
            let u = Arc::new(u);
            req.extensions_mut().insert(RequestUser(u.clone()));
            req.extensions_mut().insert(AuthenticatedUser(u));
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
        let seen = seen.lock().unwrap().take();
        let (user, authenticated, impersonated, leftover_headers) =
            seen.unwrap_or((None, None, false, vec![]));
        Outcome {
            code,
            body,
            user,
            authenticated,
            impersonated,
            leftover_headers,
        }
    }

    fn expect_user(o: &Outcome, name: &str, groups: &[&str]) {
        assert_eq!(o.code, StatusCode::OK, "{}", o.body);
        let user = o.user.as_ref().unwrap();
        assert_eq!(user.name, name);
        assert_eq!(user.groups, groups);
        assert!(o.impersonated);
        assert!(o.leftover_headers.is_empty(), "{:?}", o.leftover_headers);
    }

    #[tokio::test]
    async fn not_impersonating() {
        let o = run(Some(requester("tester", &["wheel"])), &[]).await;
        assert_eq!(o.code, StatusCode::OK);
        assert_eq!(o.user.unwrap().name, "tester");
        assert!(!o.impersonated);
    }

    #[tokio::test]
    async fn missing_user_is_bad_request() {
        for (headers, needle) in [
            (
                vec![("Impersonate-Group", "some-group")],
                "{Group  some-group    }",
            ),
            (
                vec![("Impersonate-Extra-scopes", "scope-a")],
                "{UserExtra  scope-a  authentication.k8s.io/v1  scopes}",
            ),
            (
                vec![("Impersonate-Uid", "some-uid")],
                "{UID  some-uid  authentication.k8s.io/v1  }",
            ),
        ] {
            let o = run(Some(requester("dev", &["wheel"])), &headers).await;
            assert_eq!(o.code, StatusCode::BAD_REQUEST);
            assert_eq!(
                o.body,
                format!(
                    "{{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{{}},\"status\":\"Failure\",\"message\":\"requested [{needle}] without impersonating a user\",\"reason\":\"BadRequest\",\"code\":400}}\n"
                )
            );
        }
    }

    #[tokio::test]
    async fn users() {
        let o = run(
            Some(requester("tester", &["wheel"])),
            &[("Impersonate-User", "tester-impersonated")],
        )
        .await;
        expect_user(&o, "tester-impersonated", &["system:authenticated"]);
        assert_eq!(o.authenticated.unwrap().name, "tester");

        let o = run(
            Some(requester("alice", &["devs"])),
            &[("Impersonate-User", "bob")],
        )
        .await;
        assert_eq!(o.code, StatusCode::FORBIDDEN);
        assert!(o.user.is_none());
        assert_eq!(
            o.body,
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"users \\\"bob\\\" is forbidden: User \\\"alice\\\" cannot impersonate resource \\\"users\\\" in API group \\\"\\\" at the cluster scope: deny by default\",\"reason\":\"Forbidden\",\"details\":{\"name\":\"bob\",\"kind\":\"users\"},\"code\":403}\n"
        );
    }

    #[tokio::test]
    async fn groups() {
        let o = run(
            Some(requester("dev", &["wheel", "group-impersonater"])),
            &[
                ("Impersonate-User", "system:admin"),
                ("Impersonate-Group", "some-group"),
                ("Impersonate-Group", "extra-group"),
            ],
        )
        .await;
        expect_user(
            &o,
            "system:admin",
            &["some-group", "extra-group", "system:authenticated"],
        );

        let o = run(
            Some(requester("dev", &["wheel"])),
            &[
                ("Impersonate-User", "system:admin"),
                ("Impersonate-Group", "some-group"),
            ],
        )
        .await;
        assert_eq!(o.code, StatusCode::FORBIDDEN);
        assert!(o.body.contains("groups \\\"some-group\\\" is forbidden"));

        // Explicit system:authenticated / system:unauthenticated are not duplicated.
        let o = run(
            Some(requester("dev", &["wheel", "group-impersonater"])),
            &[
                ("Impersonate-User", "system:admin"),
                ("Impersonate-Group", "system:authenticated"),
            ],
        )
        .await;
        expect_user(&o, "system:admin", &["system:authenticated"]);
        let o = run(
            Some(requester("dev", &["wheel", "group-impersonater"])),
            &[
                ("Impersonate-User", "system:admin"),
                ("Impersonate-Group", "system:unauthenticated"),
            ],
        )
        .await;
        expect_user(&o, "system:admin", &["system:unauthenticated"]);
    }

    #[tokio::test]
    async fn anonymous_gets_unauthenticated() {
        let o = run(
            Some(requester("dev", &["wheel"])),
            &[("Impersonate-User", "system:anonymous")],
        )
        .await;
        expect_user(&o, "system:anonymous", &["system:unauthenticated"]);
    }

    #[tokio::test]
    async fn extras() {
        let o = run(
            Some(requester("dev", &["wheel", "extra-setter-scopes"])),
            &[
                ("Impersonate-User", "system:admin"),
                ("Impersonate-Extra-scopes", "scope-a"),
                ("Impersonate-Extra-scopes", "scope-b"),
            ],
        )
        .await;
        expect_user(&o, "system:admin", &["system:authenticated"]);
        assert_eq!(o.user.unwrap().extra["scopes"], vec!["scope-a", "scope-b"]);

        // Percent-escaped keys are unescaped before authorization.
        let o = run(
            Some(requester("dev", &["wheel", "escaped-scopes"])),
            &[
                ("Impersonate-User", "system:admin"),
                (
                    "Impersonate-Extra-Example.com%2fescaped%e2%9f%8f%2fscopes",
                    "scope-a",
                ),
            ],
        )
        .await;
        assert_eq!(o.code, StatusCode::FORBIDDEN, "key differs, so denied");
        let o = run(
            Some(requester("dev", &["wheel", "escaped-scopes"])),
            &[
                ("Impersonate-User", "system:admin"),
                (
                    "Impersonate-Extra-Example.com%2fescaped%2fscopes",
                    "scope-a",
                ),
            ],
        )
        .await;
        expect_user(&o, "system:admin", &["system:authenticated"]);
        assert_eq!(
            o.user.unwrap().extra["example.com/escaped/scopes"],
            vec!["scope-a"]
        );

        // Only particular values allowed.
        let o = run(
            Some(requester(
                "dev",
                &["wheel", "extra-setter-particular-scopes"],
            )),
            &[
                ("Impersonate-User", "system:admin"),
                ("Impersonate-Extra-scopes", "scope-a"),
                ("Impersonate-Extra-scopes", "scope-b"),
            ],
        )
        .await;
        assert_eq!(o.code, StatusCode::FORBIDDEN);
        assert!(o.body.contains(
            "userextras.authentication.k8s.io \\\"scope-b\\\" is forbidden: User \\\"dev\\\" cannot impersonate resource \\\"userextras/scopes\\\" in API group \\\"authentication.k8s.io\\\" at the cluster scope"
        ), "{}", o.body);

        // Several keys.
        let o = run(
            Some(requester(
                "dev",
                &["wheel", "extra-setter-project", "extra-setter-scopes"],
            )),
            &[
                ("Impersonate-User", "system:admin"),
                ("Impersonate-Extra-scopes", "scope-a"),
                ("Impersonate-Extra-project", "project-a"),
            ],
        )
        .await;
        let user = o.user.unwrap();
        assert_eq!(user.extra["scopes"], vec!["scope-a"]);
        assert_eq!(user.extra["project"], vec!["project-a"]);
    }

    #[tokio::test]
    async fn service_accounts() {
        let o = run(
            Some(requester("dev", &["sa-impersonater"])),
            &[("Impersonate-User", "system:serviceaccount:foo:default")],
        )
        .await;
        expect_user(
            &o,
            "system:serviceaccount:foo:default",
            &[
                "system:serviceaccounts",
                "system:serviceaccounts:foo",
                "system:authenticated",
            ],
        );

        let o = run(
            Some(requester("dev", &["regular-impersonater"])),
            &[("Impersonate-User", "system:serviceaccount:foo:default")],
        )
        .await;
        assert_eq!(o.code, StatusCode::FORBIDDEN);
        assert!(o.body.contains(
            "serviceaccounts \\\"default\\\" is forbidden: User \\\"dev\\\" cannot impersonate resource \\\"serviceaccounts\\\" in API group \\\"\\\" in the namespace \\\"foo\\\""
        ), "{}", o.body);

        // An invalid service-account name is an ordinary user.
        let o = run(
            Some(requester("dev", &["regular-impersonater"])),
            &[("Impersonate-User", "system:serviceaccount:Foo:default")],
        )
        .await;
        expect_user(
            &o,
            "system:serviceaccount:Foo:default",
            &["system:authenticated"],
        );
    }

    #[tokio::test]
    async fn uids() {
        let o = run(
            Some(requester("dev", &["wheel"])),
            &[
                ("Impersonate-User", "system:admin"),
                ("Impersonate-Uid", "some-uid"),
            ],
        )
        .await;
        expect_user(&o, "system:admin", &["system:authenticated"]);
        assert_eq!(o.user.unwrap().uid, "some-uid");

        let o = run(
            Some(requester("dev", &["wheel"])),
            &[
                ("Impersonate-User", "system:admin"),
                ("Impersonate-Uid", "other-uid"),
            ],
        )
        .await;
        assert_eq!(o.code, StatusCode::FORBIDDEN);
        assert!(
            o.body
                .contains("uids.authentication.k8s.io \\\"other-uid\\\" is forbidden")
        );
    }

    #[tokio::test]
    async fn no_requester_is_internal_error() {
        let o = run(None, &[("Impersonate-User", "bob")]).await;
        assert_eq!(o.code, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            o.body,
            "Internal Server Error: \"/api/v1/pods\": no user found for request\n"
        );
    }

    #[test]
    fn service_account_names() {
        assert_eq!(
            split_service_account("system:serviceaccount:ns:name"),
            Some(("ns".into(), "name".into()))
        );
        assert_eq!(split_service_account("system:serviceaccount:ns"), None);
        assert_eq!(split_service_account("system:serviceaccount:ns:a:b"), None);
        assert_eq!(split_service_account("system:serviceaccount::name"), None);
        assert_eq!(split_service_account("bob"), None);
    }
}
