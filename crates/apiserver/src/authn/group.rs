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

impl Authenticator for AuthenticatedGroupAdder {
    fn authenticate(&self, req: &http::request::Parts) -> Result<Option<AuthResponse>, AuthError> {
        let Some(mut resp) = self.inner.authenticate(req)? else {
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
    impl Authenticator for Fixed {
        fn authenticate(
            &self,
            _req: &http::request::Parts,
        ) -> Result<Option<AuthResponse>, AuthError> {
            Ok(Some(AuthResponse::new(self.0.clone())))
        }
    }

    fn groups_after(name: &str, groups: &[&str]) -> Vec<String> {
        let user = UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        };
        let adder = AuthenticatedGroupAdder::new(Arc::new(Fixed(user)));
        let parts = http::Request::new(()).into_parts().0;
        adder.authenticate(&parts).unwrap().unwrap().user.groups
    }

    #[test]
    fn adds_authenticated_group() {
        assert_eq!(
            groups_after("user", &["original"]),
            vec!["original", "system:authenticated"]
        );
        assert_eq!(groups_after("user", &[]), vec!["system:authenticated"]);
    }

    #[test]
    fn does_not_duplicate_or_contradict() {
        assert_eq!(
            groups_after("user", &["system:authenticated", "x"]),
            vec!["system:authenticated", "x"]
        );
        assert_eq!(
            groups_after("user", &["system:unauthenticated"]),
            vec!["system:unauthenticated"]
        );
    }

    #[test]
    fn skips_anonymous() {
        assert_eq!(groups_after("system:anonymous", &[]), Vec::<String>::new());
    }

    #[test]
    fn passes_no_opinion_and_errors() {
        struct Nothing;
        impl Authenticator for Nothing {
            fn authenticate(
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
        assert_eq!(adder.authenticate(&parts).unwrap(), None);
        let parts = http::Request::get("/err").body(()).unwrap().into_parts().0;
        assert!(adder.authenticate(&parts).is_err());
    }
}
