//! The anonymous authenticator (`authentication/request/anonymous`).

use super::{AuthError, AuthResponse, Authenticator};
use crate::request::{UserInfo, names};

/// Authenticates every request as `system:anonymous` in `system:unauthenticated`, or, when
/// paths are configured (`AnonymousAuthConfig.conditions`), only requests for those exact
/// paths.
#[derive(Clone, Debug, Default)]
pub struct AnonymousAuthenticator {
    paths: Vec<String>,
}

impl AnonymousAuthenticator {
    /// Anonymous access for any path.
    pub fn new() -> Self {
        Self::default()
    }

    /// Anonymous access only for the given exact paths (an empty list means any path).
    pub fn with_paths(paths: Vec<String>) -> Self {
        AnonymousAuthenticator { paths }
    }
}

/// The anonymous user.
pub fn anonymous_user() -> UserInfo {
    UserInfo {
        name: names::ANONYMOUS.to_string(),
        groups: vec![names::SYSTEM_UNAUTHENTICATED.to_string()],
        ..Default::default()
    }
}

#[async_trait::async_trait]
impl Authenticator for AnonymousAuthenticator {
    async fn authenticate(
        &self,
        req: &http::request::Parts,
    ) -> Result<Option<AuthResponse>, AuthError> {
        if !self.paths.is_empty() && !self.paths.iter().any(|p| p == req.uri.path()) {
            return Ok(None);
        }
        Ok(Some(AuthResponse::new(anonymous_user())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(path: &str) -> http::request::Parts {
        http::Request::get(path).body(()).unwrap().into_parts().0
    }

    #[tokio::test]
    async fn anonymous_identity() {
        let resp = AnonymousAuthenticator::new()
            .authenticate(&parts("/api"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(resp.user.name, "system:anonymous");
        assert_eq!(resp.user.groups, vec!["system:unauthenticated"]);
        assert!(resp.user.uid.is_empty() && resp.user.extra.is_empty());
    }

    #[tokio::test]
    async fn restricted_to_paths() {
        let auth = AnonymousAuthenticator::with_paths(vec!["/healthz".into(), "/readyz".into()]);
        assert!(
            auth.authenticate(&parts("/healthz"))
                .await
                .unwrap()
                .is_some()
        );
        assert!(
            auth.authenticate(&parts("/readyz?verbose"))
                .await
                .unwrap()
                .is_some()
        );
        assert_eq!(auth.authenticate(&parts("/livez")).await.unwrap(), None);
        assert_eq!(
            auth.authenticate(&parts("/healthz/etcd")).await.unwrap(),
            None
        );
    }
}
