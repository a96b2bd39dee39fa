//! The union of authenticators (`authentication/request/union`).

use std::sync::Arc;

use super::{AuthError, AuthResponse, Authenticator};

/// Tries authenticators in order; the first success wins. Errors are collected and returned
/// (aggregated) only when none succeeds, unless `fail_on_error` is set, in which case the
/// first error ends the search (upstream's `NewFailOnError`, used so that a rejected token
/// never falls back to anonymous).
pub struct UnionAuthenticator {
    authenticators: Vec<Arc<dyn Authenticator>>,
    fail_on_error: bool,
}

impl UnionAuthenticator {
    /// A union that keeps trying after errors.
    pub fn new(authenticators: Vec<Arc<dyn Authenticator>>) -> Self {
        UnionAuthenticator {
            authenticators,
            fail_on_error: false,
        }
    }

    /// A union that stops at the first error.
    pub fn fail_on_error(authenticators: Vec<Arc<dyn Authenticator>>) -> Self {
        UnionAuthenticator {
            authenticators,
            fail_on_error: true,
        }
    }
}

/// The union of `authenticators`; a single one is returned unwrapped, as upstream does.
pub fn union(mut authenticators: Vec<Arc<dyn Authenticator>>) -> Arc<dyn Authenticator> {
    if authenticators.len() == 1
        && let Some(only) = authenticators.pop()
    {
        return only;
    }
    Arc::new(UnionAuthenticator::new(authenticators))
}

#[async_trait::async_trait]
impl Authenticator for UnionAuthenticator {
    async fn authenticate(
        &self,
        req: &http::request::Parts,
    ) -> Result<Option<AuthResponse>, AuthError> {
        let mut errors = Vec::new();
        for auth in &self.authenticators {
            match auth.authenticate(req).await {
                Ok(Some(resp)) => return Ok(Some(resp)),
                Ok(None) => {}
                Err(e) if self.fail_on_error => return Err(e),
                Err(e) => errors.push(e),
            }
        }
        match AuthError::aggregate(errors) {
            Some(e) => Err(e),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::UserInfo;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Mock {
        result: Result<Option<AuthResponse>, AuthError>,
        calls: AtomicUsize,
    }

    fn mock(result: Result<Option<AuthResponse>, AuthError>) -> Arc<Mock> {
        Arc::new(Mock {
            result,
            calls: AtomicUsize::new(0),
        })
    }

    #[async_trait::async_trait]
    impl Authenticator for Mock {
        async fn authenticate(
            &self,
            _req: &http::request::Parts,
        ) -> Result<Option<AuthResponse>, AuthError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            self.result.clone()
        }
    }

    fn user(name: &str) -> Result<Option<AuthResponse>, AuthError> {
        Ok(Some(AuthResponse::new(UserInfo {
            name: name.into(),
            ..Default::default()
        })))
    }

    fn err(text: &str) -> Result<Option<AuthResponse>, AuthError> {
        Err(AuthError::Other(text.into()))
    }

    fn parts() -> http::request::Parts {
        http::Request::new(()).into_parts().0
    }

    fn name(r: Result<Option<AuthResponse>, AuthError>) -> String {
        r.unwrap().unwrap().user.name
    }

    #[tokio::test]
    async fn first_passes() {
        let (a, b) = (mock(user("fresh_user")), mock(Ok(None)));
        let u = UnionAuthenticator::new(vec![a.clone(), b.clone()]);
        assert_eq!(name(u.authenticate(&parts()).await), "fresh_user");
        assert_eq!(b.calls.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn second_passes() {
        let u = UnionAuthenticator::new(vec![mock(Ok(None)), mock(user("elder"))]);
        assert_eq!(name(u.authenticate(&parts()).await), "elder");
    }

    #[tokio::test]
    async fn no_authenticators() {
        let u = UnionAuthenticator::new(vec![]);
        assert_eq!(u.authenticate(&parts()).await.unwrap(), None);
    }

    #[tokio::test]
    async fn non_passing() {
        let u = UnionAuthenticator::new(vec![mock(Ok(None)), mock(Ok(None))]);
        assert_eq!(u.authenticate(&parts()).await.unwrap(), None);
    }

    #[tokio::test]
    async fn errors_suppressed_when_one_passes() {
        let u = UnionAuthenticator::new(vec![mock(err("first")), mock(user("ok"))]);
        assert_eq!(name(u.authenticate(&parts()).await), "ok");
    }

    #[tokio::test]
    async fn all_errors_aggregated() {
        let u = UnionAuthenticator::new(vec![mock(err("first")), mock(err("second"))]);
        assert_eq!(
            u.authenticate(&parts()).await.unwrap_err().to_string(),
            "[first, second]"
        );
    }

    #[tokio::test]
    async fn fail_early() {
        let later = mock(user("anonymous"));
        let u = UnionAuthenticator::fail_on_error(vec![mock(err("fail")), later.clone()]);
        assert_eq!(
            u.authenticate(&parts()).await.unwrap_err().to_string(),
            "fail"
        );
        assert_eq!(later.calls.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn single_is_unwrapped() {
        let only = mock(user("only"));
        let u = union(vec![only.clone()]);
        assert_eq!(name(u.authenticate(&parts()).await), "only");
        assert_eq!(only.calls.load(Ordering::SeqCst), 1);
    }
}
