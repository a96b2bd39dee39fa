//! Group adders (`authentication/group`).

use std::sync::Arc;

use super::{AuthError, AuthResponse, Authenticator};
use crate::request::names;

/// Adds `system:authenticated` to every authenticated user, except the anonymous user and
/// users that already are in `system:authenticated` or `system:unauthenticated`.
pub struct AuthenticatedGroupAdder {
    inner: Arc<dyn Authenticator>,
}

impl AuthenticatedGroupAdder {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Authenticator>) -> Self {
        AuthenticatedGroupAdder { inner }
    }
}

#[async_trait::async_trait]
impl Authenticator for AuthenticatedGroupAdder {
    async fn authenticate(
        &self,
        req: &http::request::Parts,
    ) -> Result<Option<AuthResponse>, AuthError> {
        let Some(mut resp) = self.inner.authenticate(req).await? else {
            return Ok(None);
        };
        let user = &mut resp.user;
        let has_marker = user
            .groups
            .iter()
            .any(|g| g == names::SYSTEM_AUTHENTICATED || g == names::SYSTEM_UNAUTHENTICATED);
        if user.name != names::ANONYMOUS && !has_marker {
            user.groups.push(names::SYSTEM_AUTHENTICATED.to_string());
        }
        Ok(Some(resp))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::UserInfo;

    struct Fixed(UserInfo);
    #[async_trait::async_trait]
    impl Authenticator for Fixed {
        async fn authenticate(
            &self,
            _req: &http::request::Parts,
        ) -> Result<Option<AuthResponse>, AuthError> {
            Ok(Some(AuthResponse::new(self.0.clone())))
        }
    }

    async fn groups_after(name: &str, groups: &[&str]) -> Vec<String> {
        let user = UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        };
        let adder = AuthenticatedGroupAdder::new(Arc::new(Fixed(user)));
        let parts = http::Request::new(()).into_parts().0;
        adder
            .authenticate(&parts)
            .await
            .unwrap()
            .unwrap()
            .user
            .groups
    }

    #[tokio::test]
    async fn adds_authenticated_group() {
        assert_eq!(
            groups_after("user", &["original"]).await,
            vec!["original", "system:authenticated"]
        );
        assert_eq!(
            groups_after("user", &[]).await,
            vec!["system:authenticated"]
        );
    }

    #[tokio::test]
    async fn does_not_duplicate_or_contradict() {
        assert_eq!(
            groups_after("user", &["system:authenticated", "x"]).await,
            vec!["system:authenticated", "x"]
        );
        assert_eq!(
            groups_after("user", &["system:unauthenticated"]).await,
            vec!["system:unauthenticated"]
        );
    }

    #[tokio::test]
    async fn skips_anonymous() {
        assert_eq!(
            groups_after("system:anonymous", &[]).await,
            Vec::<String>::new()
        );
    }

    #[tokio::test]
    async fn passes_no_opinion_and_errors() {
        struct Nothing;
        #[async_trait::async_trait]
        impl Authenticator for Nothing {
            async fn authenticate(
                &self,
                req: &http::request::Parts,
            ) -> Result<Option<AuthResponse>, AuthError> {
                if req.uri.path() == "/err" {
                    Err(AuthError::InvalidBearerToken)
                } else {
                    Ok(None)
                }
            }
        }
        let adder = AuthenticatedGroupAdder::new(Arc::new(Nothing));
        let parts = http::Request::get("/").body(()).unwrap().into_parts().0;
        assert_eq!(adder.authenticate(&parts).await.unwrap(), None);
        let parts = http::Request::get("/err").body(()).unwrap().into_parts().0;
        assert!(adder.authenticate(&parts).await.is_err());
    }
}
