//! Bearer tokens from the `Authorization` header (`authentication/request/bearertoken`),
//! and the token-authenticator union (`authentication/token/union`).

use std::sync::Arc;

use super::{AuthError, AuthResponse, Authenticator};
use crate::request::warning::add_warning;

/// Authenticates a bare token (`authenticator.Token`).
#[async_trait::async_trait]
pub trait TokenAuthenticator: Send + Sync {
    /// The user for `token`; `Ok(None)` when the token is unknown to this authenticator.
    async fn authenticate_token(
        &self,
        req: &http::request::Parts,
        token: &str,
    ) -> Result<Option<AuthResponse>, AuthError>;
}

/// The warning upstream adds when `Authorization: Bearer  <token>` has an extra space.
pub const EXTRA_SPACE_WARNING: &str = "the provided Authorization header contains extra space before the bearer token, and is ignored";

/// Reads `Authorization: Bearer <token>` and asks a [`TokenAuthenticator`].
pub struct BearerTokenAuthenticator {
    tokens: Arc<dyn TokenAuthenticator>,
}

impl BearerTokenAuthenticator {
    /// Wraps a token authenticator.
    pub fn new(tokens: Arc<dyn TokenAuthenticator>) -> Self {
        BearerTokenAuthenticator { tokens }
    }
}

/// The bearer token of `Authorization`, if any (scheme case-insensitive), and whether the
/// header had an empty token followed by more text (the extra-space case).
fn bearer_token(req: &http::request::Parts) -> (Option<&str>, bool) {
    let Some(value) = req
        .headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    else {
        return (None, false);
    };
    let auth = value.trim();
    if auth.is_empty() {
        return (None, false);
    }
    let parts: Vec<&str> = auth.splitn(3, ' ').collect();
    if parts.len() < 2 || !parts[0].eq_ignore_ascii_case("bearer") {
        return (None, false);
    }
    if parts[1].is_empty() {
        return (None, parts.len() == 3);
    }
    (Some(parts[1]), false)
}

#[async_trait::async_trait]
impl Authenticator for BearerTokenAuthenticator {
    async fn authenticate(
        &self,
        req: &http::request::Parts,
    ) -> Result<Option<AuthResponse>, AuthError> {
        let (token, extra_space) = bearer_token(req);
        let Some(token) = token else {
            if extra_space {
                add_warning(&req.extensions, "", EXTRA_SPACE_WARNING);
            }
            return Ok(None);
        };
        // The authentication filter removes the header after any success.
        match self.tokens.authenticate_token(req, token).await? {
            Some(resp) => Ok(Some(resp)),
            None => Err(AuthError::InvalidBearerToken),
        }
    }
}

/// Tries token authenticators in order: the first success wins, errors are aggregated
/// (upstream's `tokenunion.New`).
pub struct TokenUnion {
    authenticators: Vec<Arc<dyn TokenAuthenticator>>,
}

impl TokenUnion {
    /// A union of `authenticators`.
    pub fn new(authenticators: Vec<Arc<dyn TokenAuthenticator>>) -> Self {
        TokenUnion { authenticators }
    }
}

#[async_trait::async_trait]
impl TokenAuthenticator for TokenUnion {
    async fn authenticate_token(
        &self,
        req: &http::request::Parts,
        token: &str,
    ) -> Result<Option<AuthResponse>, AuthError> {
        authenticate_in_order(&self.authenticators, req, token).await
    }
}

/// Asks `authenticators` in order: the first success wins, no opinion when none knows the
/// token, otherwise their errors aggregated (upstream's `tokenunion` semantics).
pub async fn authenticate_in_order<T: TokenAuthenticator + ?Sized>(
    authenticators: &[Arc<T>],
    req: &http::request::Parts,
    token: &str,
) -> Result<Option<AuthResponse>, AuthError> {
    let mut errors = Vec::new();
    for auth in authenticators {
        match auth.authenticate_token(req, token).await {
            Ok(Some(resp)) => return Ok(Some(resp)),
            Ok(None) => {}
            Err(e) => errors.push(e),
        }
    }
    match AuthError::aggregate(errors) {
        Some(e) => Err(e),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::UserInfo;
    use crate::request::warning::WarningRecorder;

    struct Tokens(Result<Option<AuthResponse>, AuthError>);
    #[async_trait::async_trait]
    impl TokenAuthenticator for Tokens {
        async fn authenticate_token(
            &self,
            _req: &http::request::Parts,
            token: &str,
        ) -> Result<Option<AuthResponse>, AuthError> {
            assert_eq!(token, "token");
            self.0.clone()
        }
    }

    fn ok_user() -> Result<Option<AuthResponse>, AuthError> {
        Ok(Some(AuthResponse::new(UserInfo {
            name: "user".into(),
            ..Default::default()
        })))
    }

    fn parts(auth: Option<&str>) -> (http::request::Parts, Arc<WarningRecorder>) {
        let mut builder = http::Request::builder();
        if let Some(a) = auth {
            builder = builder.header("Authorization", a);
        }
        let (mut parts, _) = builder.body(()).unwrap().into_parts();
        let recorder = WarningRecorder::new();
        parts.extensions.insert(recorder.clone());
        (parts, recorder)
    }

    #[tokio::test]
    async fn valid_token() {
        let auth = BearerTokenAuthenticator::new(Arc::new(Tokens(ok_user())));
        for header in [
            "Bearer token",
            "bearer token",
            "  Bearer token  ",
            "Bearer token value",
        ] {
            let (p, _) = parts(Some(header));
            assert_eq!(
                auth.authenticate(&p).await.unwrap().unwrap().user.name,
                "user",
                "{header}"
            );
        }
    }

    #[tokio::test]
    async fn invalid_token_and_custom_error() {
        let auth = BearerTokenAuthenticator::new(Arc::new(Tokens(Ok(None))));
        let (p, _) = parts(Some("Bearer token"));
        assert_eq!(
            auth.authenticate(&p).await.unwrap_err().to_string(),
            "invalid bearer token"
        );
        let auth =
            BearerTokenAuthenticator::new(Arc::new(Tokens(Err(AuthError::Other("error".into())))));
        assert_eq!(
            auth.authenticate(&p).await.unwrap_err().to_string(),
            "error"
        );
    }

    #[tokio::test]
    async fn bad_headers_have_no_opinion() {
        let auth = BearerTokenAuthenticator::new(Arc::new(Tokens(ok_user())));
        for header in [
            None,
            Some(""),
            Some("Bearer"),
            Some("Bearer "),
            Some("Basic dXNlcjpwYXNz"),
            Some("Negotiate token"),
            Some("Bearertoken"),
        ] {
            let (p, recorder) = parts(header);
            assert_eq!(auth.authenticate(&p).await.unwrap(), None, "{header:?}");
            assert!(recorder.warnings().is_empty());
        }
    }

    #[tokio::test]
    async fn extra_space_warns() {
        let auth = BearerTokenAuthenticator::new(Arc::new(Tokens(ok_user())));
        let (p, recorder) = parts(Some("Bearer  token"));
        assert_eq!(auth.authenticate(&p).await.unwrap(), None);
        assert_eq!(
            recorder.warnings(),
            vec![(String::new(), EXTRA_SPACE_WARNING.to_string())]
        );
    }

    #[tokio::test]
    async fn token_union() {
        let (p, _) = parts(None);
        let union = TokenUnion::new(vec![
            Arc::new(Tokens(Err(AuthError::Other("a".into())))),
            Arc::new(Tokens(Ok(None))),
            Arc::new(Tokens(ok_user())),
        ]);
        assert!(
            union
                .authenticate_token(&p, "token")
                .await
                .unwrap()
                .is_some()
        );
        let union = TokenUnion::new(vec![
            Arc::new(Tokens(Err(AuthError::Other("a".into())))),
            Arc::new(Tokens(Err(AuthError::Other("b".into())))),
        ]);
        assert_eq!(
            union
                .authenticate_token(&p, "token")
                .await
                .unwrap_err()
                .to_string(),
            "[a, b]"
        );
        let union = TokenUnion::new(vec![Arc::new(Tokens(Ok(None)))]);
        assert_eq!(union.authenticate_token(&p, "token").await.unwrap(), None);
    }
}
