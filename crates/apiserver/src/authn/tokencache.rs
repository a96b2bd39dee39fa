//! A cache in front of token authenticators (upstream's `authentication/token/cache`):
//! kube-apiserver keeps successful token authentications for 10 s (`TokenSuccessCacheTTL`)
//! so a client's burst of requests verifies its JWT once, and does not cache failures
//! (`TokenFailureCacheTTL` 0).
//!
//! Entries are keyed by a salted SHA-256 of the request's API audiences and the token (the
//! token itself is never kept), and the cache is bounded: when it is full, expired entries are
//! dropped, and if it is still full the new result is simply not cached.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::bearertoken::TokenAuthenticator;
use super::{ApiAudiences, AuthError, AuthResponse};

/// kube-apiserver's success TTL.
pub const DEFAULT_SUCCESS_TTL: Duration = Duration::from_secs(10);

/// How many results are kept at most.
const MAX_ENTRIES: usize = 16 * 1024;

type Key = [u8; 32];
type Outcome = Result<Option<AuthResponse>, AuthError>;

/// Caches another token authenticator's answers.
pub struct CachedTokenAuthenticator {
    inner: Arc<dyn TokenAuthenticator>,
    success_ttl: Duration,
    failure_ttl: Duration,
    salt: [u8; 32],
    entries: Mutex<HashMap<Key, (Instant, Outcome)>>,
}

impl CachedTokenAuthenticator {
    /// Caches `inner`'s successes for `success_ttl` and its failures (unknown tokens and
    /// errors) for `failure_ttl`; a zero TTL does not cache that kind.
    pub fn new(
        inner: Arc<dyn TokenAuthenticator>,
        success_ttl: Duration,
        failure_ttl: Duration,
    ) -> Self {
        CachedTokenAuthenticator {
            inner,
            success_ttl,
            failure_ttl,
            salt: rand::random(),
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn key(&self, req: &http::request::Parts, token: &str) -> Key {
        let mut hash = Sha256::new();
        hash.update(self.salt);
        if let Some(ApiAudiences(audiences)) = req.extensions.get::<ApiAudiences>() {
            for audience in audiences {
                hash.update((audience.len() as u64).to_be_bytes());
                hash.update(audience.as_bytes());
            }
        }
        hash.update(u64::MAX.to_be_bytes());
        hash.update(token.as_bytes());
        hash.finalize().into()
    }

    fn lookup(&self, key: &Key) -> Option<Outcome> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let (expires, outcome) = entries.get(key)?;
        (*expires > Instant::now()).then(|| outcome.clone())
    }

    fn store(&self, key: Key, outcome: &Outcome) {
        let ttl = match outcome {
            Ok(Some(_)) => self.success_ttl,
            _ => self.failure_ttl,
        };
        if ttl.is_zero() {
            return;
        }
        let now = Instant::now();
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= MAX_ENTRIES {
            entries.retain(|_, (expires, _)| *expires > now);
            if entries.len() >= MAX_ENTRIES {
                return;
            }
        }
        entries.insert(key, (now + ttl, outcome.clone()));
    }
}

#[async_trait::async_trait]
impl TokenAuthenticator for CachedTokenAuthenticator {
    async fn authenticate_token(
        &self,
        req: &http::request::Parts,
        token: &str,
    ) -> Result<Option<AuthResponse>, AuthError> {
        let key = self.key(req, token);
        if let Some(outcome) = self.lookup(&key) {
            return outcome;
        }
        let outcome = self.inner.authenticate_token(req, token).await;
        self.store(key, &outcome);
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::UserInfo;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Accepts "good" as alice, counting calls.
    #[derive(Default)]
    struct Counting(AtomicUsize);

    #[async_trait::async_trait]
    impl TokenAuthenticator for Counting {
        async fn authenticate_token(
            &self,
            _req: &http::request::Parts,
            token: &str,
        ) -> Result<Option<AuthResponse>, AuthError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            match token {
                "good" => Ok(Some(AuthResponse::new(UserInfo {
                    name: "alice".into(),
                    ..Default::default()
                }))),
                "broken" => Err(AuthError::Other("broken".into())),
                _ => Ok(None),
            }
        }
    }

    fn parts(audiences: &[&str]) -> http::request::Parts {
        let (mut parts, _) = http::Request::new(()).into_parts();
        if !audiences.is_empty() {
            parts.extensions.insert(ApiAudiences(
                audiences.iter().map(|a| a.to_string()).collect(),
            ));
        }
        parts
    }

    #[tokio::test]
    async fn successes_are_cached_per_audience_and_failures_are_not() {
        let inner = Arc::new(Counting::default());
        let cache =
            CachedTokenAuthenticator::new(inner.clone(), DEFAULT_SUCCESS_TTL, Duration::ZERO);
        for _ in 0..3 {
            let resp = cache.authenticate_token(&parts(&[]), "good").await;
            assert_eq!(resp.unwrap().unwrap().user.name, "alice");
        }
        assert_eq!(inner.0.load(Ordering::SeqCst), 1);
        // Other audiences are another key.
        cache
            .authenticate_token(&parts(&["api"]), "good")
            .await
            .unwrap();
        assert_eq!(inner.0.load(Ordering::SeqCst), 2);
        // Unknown tokens and errors are asked every time.
        for _ in 0..2 {
            assert_eq!(
                cache.authenticate_token(&parts(&[]), "bad").await.unwrap(),
                None
            );
            assert!(
                cache
                    .authenticate_token(&parts(&[]), "broken")
                    .await
                    .is_err()
            );
        }
        assert_eq!(inner.0.load(Ordering::SeqCst), 6);
    }

    #[tokio::test]
    async fn entries_expire() {
        let inner = Arc::new(Counting::default());
        let cache =
            CachedTokenAuthenticator::new(inner.clone(), Duration::from_millis(1), Duration::ZERO);
        cache.authenticate_token(&parts(&[]), "good").await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while inner.0.load(Ordering::SeqCst) < 2 {
            assert!(Instant::now() < deadline, "the entry never expired");
            tokio::time::sleep(Duration::from_millis(5)).await;
            cache.authenticate_token(&parts(&[]), "good").await.unwrap();
        }
    }

    #[tokio::test]
    async fn the_cache_stays_bounded() {
        let inner = Arc::new(Counting::default());
        let cache = CachedTokenAuthenticator::new(
            inner.clone(),
            Duration::from_secs(60),
            Duration::from_secs(60),
        );
        for i in 0..MAX_ENTRIES + 100 {
            let _ = cache
                .authenticate_token(&parts(&[]), &format!("t{i}"))
                .await;
        }
        assert_eq!(cache.entries.lock().unwrap().len(), MAX_ENTRIES);
    }
}
