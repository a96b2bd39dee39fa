//! Front-proxy authentication from request headers
//! (`authentication/request/headerrequest`).
//!
//! The proxy authenticates the user and passes the identity in headers such as
//! `X-Remote-User`. These headers are only trusted when the proxy's client certificate verifies
//! against the request-header CA (see [`new_secure`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use http::HeaderMap;

use super::x509::X509Verifier;
use super::{AuthError, AuthResponse, Authenticator, ClientCaSource, unescape_extra_key};
use crate::request::UserInfo;

/// The header names a front proxy uses (`--requestheader-*-headers` flags).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestHeaderNames {
    /// Headers carrying the user name; the first non-empty one wins.
    pub username_headers: Vec<String>,
    /// Headers carrying the UID; the first non-empty one wins.
    pub uid_headers: Vec<String>,
    /// Headers carrying groups; all values of all of them are used.
    pub group_headers: Vec<String>,
    /// Header prefixes carrying extras (`<prefix><key>: <value>`).
    pub extra_header_prefixes: Vec<String>,
}

impl RequestHeaderNames {
    /// The standard names (`X-Remote-User`, `X-Remote-Uid`, `X-Remote-Group`,
    /// `X-Remote-Extra-`), which the authentication filter always strips.
    pub fn standard() -> Self {
        RequestHeaderNames {
            username_headers: vec!["X-Remote-User".into()],
            uid_headers: vec!["X-Remote-Uid".into()],
            group_headers: vec!["X-Remote-Group".into()],
            extra_header_prefixes: vec!["X-Remote-Extra-".into()],
        }
    }

    /// Removes every header these names describe from `headers`.
    pub fn clear(&self, headers: &mut HeaderMap) {
        for name in self
            .username_headers
            .iter()
            .chain(&self.uid_headers)
            .chain(&self.group_headers)
        {
            headers.remove(name.as_str());
        }
        for prefix in &self.extra_header_prefixes {
            let prefix = prefix.to_ascii_lowercase();
            let doomed: Vec<_> = headers
                .keys()
                .filter(|k| k.as_str().starts_with(&prefix))
                .cloned()
                .collect();
            for name in doomed {
                headers.remove(name);
            }
        }
    }
}

/// The front-proxy configuration (`RequestHeaderConfig`): header names, the CA the proxy's
/// client certificate must verify against, and the CNs allowed to act as proxy.
#[derive(Clone, Debug)]
pub struct RequestHeaderConfig {
    /// Header names.
    pub names: RequestHeaderNames,
    /// `--requestheader-client-ca-file`.
    pub client_ca: Arc<dyn ClientCaSource>,
    /// `--requestheader-allowed-names`; empty allows any CN signed by the CA.
    pub allowed_names: Vec<String>,
}

/// Reads the identity from headers, without checking who sent them.
pub struct RequestHeaderAuthenticator {
    names: RequestHeaderNames,
}

impl RequestHeaderAuthenticator {
    /// An authenticator reading the given headers.
    pub fn new(names: RequestHeaderNames) -> Self {
        RequestHeaderAuthenticator { names }
    }
}

fn first_value(headers: &HeaderMap, names: &[String]) -> String {
    names
        .iter()
        .filter_map(|n| headers.get(n.as_str()).and_then(|v| v.to_str().ok()))
        .find(|v| !v.is_empty())
        .unwrap_or_default()
        .to_string()
}

fn all_values(headers: &HeaderMap, names: &[String]) -> Vec<String> {
    names
        .iter()
        .flat_map(|n| headers.get_all(n.as_str()).iter())
        .filter_map(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .collect()
}

fn extras(headers: &HeaderMap, prefixes: &[String]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    // Prefixes first, so values keep the order of the prefix list.
    for prefix in prefixes {
        let prefix = prefix.to_ascii_lowercase();
        for name in headers.keys() {
            let Some(suffix) = name.as_str().strip_prefix(&prefix) else {
                continue;
            };
            let key = unescape_extra_key(suffix);
            let values = headers
                .get_all(name)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .map(str::to_string);
            out.entry(key).or_default().extend(values);
        }
    }
    out
}

#[async_trait::async_trait]
impl Authenticator for RequestHeaderAuthenticator {
    async fn authenticate(
        &self,
        req: &http::request::Parts,
    ) -> Result<Option<AuthResponse>, AuthError> {
        let name = first_value(&req.headers, &self.names.username_headers);
        if name.is_empty() {
            return Ok(None);
        }
        // The authentication filter clears these headers after success.
        Ok(Some(AuthResponse::new(UserInfo {
            name,
            uid: first_value(&req.headers, &self.names.uid_headers),
            groups: all_values(&req.headers, &self.names.group_headers),
            extra: extras(&req.headers, &self.names.extra_header_prefixes),
        })))
    }
}

/// The request-header authenticator behind a verifier of the proxy's client certificate
/// (upstream's `headerrequest.NewDynamicVerifyOptionsSecure`).
pub fn new_secure(config: &RequestHeaderConfig) -> Arc<dyn Authenticator> {
    Arc::new(X509Verifier::new(
        config.client_ca.clone(),
        config.allowed_names.clone(),
        Arc::new(RequestHeaderAuthenticator::new(config.names.clone())),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> RequestHeaderNames {
        RequestHeaderNames {
            username_headers: vec!["X-Remote-User".into(), "Other-User".into()],
            uid_headers: vec!["X-Remote-Uid".into(), "Other-Uid".into()],
            group_headers: vec!["X-Remote-Group".into(), "Other-Group".into()],
            extra_header_prefixes: vec!["X-Remote-Extra-".into(), "Other-Extra-".into()],
        }
    }

    async fn run(headers: &[(&str, &str)]) -> (Option<UserInfo>, HeaderMap) {
        let mut builder = http::Request::builder();
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        let (mut parts, _) = builder.body(()).unwrap().into_parts();
        let user = RequestHeaderAuthenticator::new(names())
            .authenticate(&parts)
            .await
            .unwrap()
            .map(|r| r.user);
        names().clear(&mut parts.headers);
        (user, parts.headers)
    }

    #[tokio::test]
    async fn request_header_table() {
        // No username: no opinion.
        let (user, _) = run(&[("X-Remote-Group", "g")]).await;
        assert_eq!(user, None);
        let (user, _) = run(&[("X-Remote-User", "")]).await;
        assert_eq!(user, None);

        // First non-empty username header wins.
        let (user, _) = run(&[("X-Remote-User", ""), ("Other-User", "bob")]).await;
        assert_eq!(user.unwrap().name, "bob");
        let (user, _) = run(&[("X-Remote-User", "alice"), ("Other-User", "bob")]).await;
        assert_eq!(user.unwrap().name, "alice");

        // UID: first non-empty.
        let (user, _) = run(&[
            ("X-Remote-User", "alice"),
            ("X-Remote-Uid", ""),
            ("Other-Uid", "uid-2"),
        ])
        .await;
        assert_eq!(user.unwrap().uid, "uid-2");

        // Groups: all non-empty values of all headers, in header-list order.
        let (user, _) = run(&[
            ("X-Remote-User", "alice"),
            ("Other-Group", "three"),
            ("X-Remote-Group", "one"),
            ("X-Remote-Group", ""),
            ("X-Remote-Group", "two"),
        ])
        .await;
        assert_eq!(user.unwrap().groups, vec!["one", "two", "three"]);

        // Extras: lower-cased, %-unescaped keys; values in prefix order.
        let (user, remaining) = run(&[
            ("X-Remote-User", "alice"),
            ("X-Remote-Extra-Scopes", "one"),
            ("X-Remote-Extra-Scopes", "two"),
            ("Other-Extra-scopes", "three"),
            ("X-Remote-Extra-example.com%2fkey", "v"),
            ("X-Remote-Extra-bad%zzkey", "w"),
            ("Unrelated", "keep"),
        ])
        .await;
        let user = user.unwrap();
        assert_eq!(user.extra["scopes"], vec!["one", "two", "three"]);
        assert_eq!(user.extra["example.com/key"], vec!["v"]);
        assert_eq!(user.extra["bad%zzkey"], vec!["w"]);
        // Clearing removes every identity header and keeps the rest.
        assert_eq!(remaining.len(), 1);
        assert_eq!(remaining["unrelated"], "keep");
    }
}
