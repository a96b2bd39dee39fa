//! Authenticators of the server's own clients: the loopback bearer token
//! (`AuthorizeClientBearerToken`) and the deprecated insecure port's superuser.

use std::sync::Arc;

use super::bearertoken::{BearerTokenAuthenticator, TokenAuthenticator};
use super::union::union;
use super::{AuthError, AuthResponse, Authenticator};
use crate::request::{UserInfo, names};

/// Accepts exactly one token, as `system:apiserver` in `system:authenticated` and
/// `system:masters` with a random UID.
#[derive(Debug)]
struct LoopbackToken {
    token: String,
    user: UserInfo,
}

#[async_trait::async_trait]
impl TokenAuthenticator for LoopbackToken {
    async fn authenticate_token(
        &self,
        _req: &http::request::Parts,
        token: &str,
    ) -> Result<Option<AuthResponse>, AuthError> {
        // Comparing in constant time is unnecessary for a random token that is never sent
        // anywhere but loopback; equality is what upstream does too.
        if token == self.token {
            Ok(Some(AuthResponse::new(self.user.clone())))
        } else {
            Ok(None)
        }
    }
}

/// Puts the loopback token authenticator in front of `authenticator` (upstream's union of the
/// loopback token authenticator with the configured one).
pub fn with_loopback_token(
    authenticator: Arc<dyn Authenticator>,
    token: &str,
) -> Arc<dyn Authenticator> {
    let loopback = LoopbackToken {
        token: token.to_string(),
        user: UserInfo {
            name: names::APISERVER_USER.to_string(),
            uid: uuid::Uuid::new_v4().to_string(),
            groups: vec![
                names::SYSTEM_AUTHENTICATED.to_string(),
                names::SYSTEM_MASTERS.to_string(),
            ],
            ..Default::default()
        },
    };
    let bearer: Arc<dyn Authenticator> =
        Arc::new(BearerTokenAuthenticator::new(Arc::new(loopback)));
    union(vec![bearer, authenticator])
}

/// The insecure port's authenticator: every request is `system:unsecured` in
/// `system:masters` and `system:authenticated`.
#[derive(Debug, Clone, Copy, Default)]
pub struct InsecureSuperuser;

#[async_trait::async_trait]
impl Authenticator for InsecureSuperuser {
    async fn authenticate(
        &self,
        _req: &http::request::Parts,
    ) -> Result<Option<AuthResponse>, AuthError> {
        Ok(Some(AuthResponse::new(UserInfo {
            name: "system:unsecured".to_string(),
            groups: vec![
                names::SYSTEM_MASTERS.to_string(),
                names::SYSTEM_AUTHENTICATED.to_string(),
            ],
            ..Default::default()
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authn::anonymous::AnonymousAuthenticator;

    fn parts(auth: Option<&str>) -> http::request::Parts {
        let mut builder = http::Request::builder().uri("/");
        if let Some(a) = auth {
            builder = builder.header("authorization", a);
        }
        builder.body(()).unwrap().into_parts().0
    }

    #[tokio::test]
    async fn loopback_token_is_a_master_and_others_fall_through() {
        let authn = with_loopback_token(Arc::new(AnonymousAuthenticator::new()), "tok");
        let user = authn
            .authenticate(&parts(Some("Bearer tok")))
            .await
            .unwrap()
            .unwrap()
            .user;
        assert_eq!(user.name, "system:apiserver");
        assert_eq!(user.groups, vec!["system:authenticated", "system:masters"]);
        let other = authn
            .authenticate(&parts(None))
            .await
            .unwrap()
            .unwrap()
            .user;
        assert_eq!(other.name, "system:anonymous");
    }
}
