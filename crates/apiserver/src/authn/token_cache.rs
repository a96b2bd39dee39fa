//! A cache in front of a token authenticator (upstream `authentication/token/cache`):
//! answers are kept by a salted SHA-256 of the request's audiences and the token (never the
//! token itself), successes for `success_ttl` and "not authenticated" answers for
//! `failure_ttl`; errors are not cached. Concurrent requests for the same token and
//! audiences wait for one call to the wrapped authenticator.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::bearertoken::TokenAuthenticator;
use super::{ApiAudiences, AuthError, AuthResponse};

type Key = [u8; 32];

struct Entry {
    answer: Option<AuthResponse>,
    expires: Instant,
}

/// Caches another token authenticator's answers.
pub struct CachedTokenAuthenticator {
    inner: Arc<dyn TokenAuthenticator>,
    success_ttl: Duration,
    failure_ttl: Duration,
    salt: [u8; 32],
    entries: Mutex<HashMap<Key, Entry>>,
    inflight: Mutex<HashMap<Key, Arc<tokio::sync::Mutex<()>>>>,
}

/// Entries beyond which expired ones are swept on insert.
const SWEEP_ABOVE: usize = 4096;

impl CachedTokenAuthenticator {
    /// Caches `inner`'s successes for `success_ttl` and its "not authenticated" answers for
    /// `failure_ttl` (a zero TTL does not cache that kind of answer).
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
            inflight: Mutex::new(HashMap::new()),
        }
    }

    fn key(&self, audiences: &[String], token: &str) -> Key {
        let mut h = Sha256::new();
        h.update(self.salt);
        h.update((audiences.len() as u64).to_be_bytes());
        for a in audiences {
            h.update((a.len() as u64).to_be_bytes());
            h.update(a.as_bytes());
        }
        h.update(token.as_bytes());
        h.finalize().into()
    }

    fn lookup(&self, key: &Key) -> Option<Option<AuthResponse>> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .get(key)
            .filter(|e| e.expires > Instant::now())
            .map(|e| e.answer.clone())
    }

    fn store(&self, key: Key, answer: &Option<AuthResponse>) {
        let ttl = if answer.is_some() {
            self.success_ttl
        } else {
            self.failure_ttl
        };
        if ttl.is_zero() {
            return;
        }
        let now = Instant::now();
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= SWEEP_ABOVE {
            entries.retain(|_, e| e.expires > now);
        }
        entries.insert(
            key,
            Entry {
                answer: answer.clone(),
                expires: now + ttl,
            },
        );
    }
}

#[async_trait::async_trait]
impl TokenAuthenticator for CachedTokenAuthenticator {
    async fn authenticate_token(
        &self,
        req: &http::request::Parts,
        token: &str,
    ) -> Result<Option<AuthResponse>, AuthError> {
        let audiences = req
            .extensions
            .get::<ApiAudiences>()
            .map(|a| a.0.as_slice())
            .unwrap_or(&[]);
        let key = self.key(audiences, token);
        if let Some(answer) = self.lookup(&key) {
            return Ok(answer);
        }
        let gate = {
            let mut inflight = self.inflight.lock().unwrap_or_else(|e| e.into_inner());
            inflight.entry(key).or_default().clone()
        };
        let _turn = gate.lock().await;
        // Whoever held the gate before may have answered for us.
        if let Some(answer) = self.lookup(&key) {
            return Ok(answer);
        }
        let result = self.inner.authenticate_token(req, token).await;
        if let Ok(answer) = &result {
            self.store(key, answer);
        }
        self.inflight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&key);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::UserInfo;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counting {
        calls: AtomicUsize,
        answer: Result<Option<AuthResponse>, AuthError>,
    }

    #[async_trait::async_trait]
    impl TokenAuthenticator for Counting {
        async fn authenticate_token(
            &self,
            _req: &http::request::Parts,
            _token: &str,
        ) -> Result<Option<AuthResponse>, AuthError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            tokio::task::yield_now().await;
            self.answer.clone()
        }
    }

    fn counting(answer: Result<Option<AuthResponse>, AuthError>) -> Arc<Counting> {
        Arc::new(Counting {
            calls: AtomicUsize::new(0),
            answer,
        })
    }

    fn parts(audiences: Option<&[&str]>) -> http::request::Parts {
        let (mut p, _) = http::Request::new(()).into_parts();
        if let Some(a) = audiences {
            p.extensions
                .insert(ApiAudiences(a.iter().map(|s| s.to_string()).collect()));
        }
        p
    }

    fn user() -> AuthResponse {
        AuthResponse::new(UserInfo {
            name: "alice".into(),
            ..Default::default()
        })
    }

    #[tokio::test]
    async fn successes_are_cached_per_token_and_audiences() {
        let inner = counting(Ok(Some(user())));
        let cache = CachedTokenAuthenticator::new(
            inner.clone(),
            Duration::from_secs(60),
            Duration::from_secs(60),
        );
        for _ in 0..3 {
            let got = cache.authenticate_token(&parts(None), "t").await.unwrap();
            assert_eq!(got.unwrap().user.name, "alice");
        }
        assert_eq!(inner.calls.load(Ordering::SeqCst), 1);
        cache
            .authenticate_token(&parts(Some(&["api"])), "t")
            .await
            .unwrap();
        cache
            .authenticate_token(&parts(None), "other")
            .await
            .unwrap();
        assert_eq!(inner.calls.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn failures_cached_errors_not() {
        let inner = counting(Ok(None));
        let cache = CachedTokenAuthenticator::new(
            inner.clone(),
            Duration::from_secs(60),
            Duration::from_secs(60),
        );
        assert!(
            cache
                .authenticate_token(&parts(None), "t")
                .await
                .unwrap()
                .is_none()
        );
        assert!(
            cache
                .authenticate_token(&parts(None), "t")
                .await
                .unwrap()
                .is_none()
        );
        assert_eq!(inner.calls.load(Ordering::SeqCst), 1);

        let inner = counting(Err(AuthError::Other("down".into())));
        let cache = CachedTokenAuthenticator::new(
            inner.clone(),
            Duration::from_secs(60),
            Duration::from_secs(60),
        );
        assert!(cache.authenticate_token(&parts(None), "t").await.is_err());
        assert!(cache.authenticate_token(&parts(None), "t").await.is_err());
        assert_eq!(inner.calls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn expired_entries_ask_again() {
        let inner = counting(Ok(Some(user())));
        let cache = CachedTokenAuthenticator::new(
            inner.clone(),
            Duration::from_millis(1),
            Duration::from_millis(1),
        );
        cache.authenticate_token(&parts(None), "t").await.unwrap();
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(5) {
            tokio::task::yield_now().await;
        }
        cache.authenticate_token(&parts(None), "t").await.unwrap();
        assert_eq!(inner.calls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn concurrent_requests_share_one_call() {
        let inner = counting(Ok(Some(user())));
        let cache = Arc::new(CachedTokenAuthenticator::new(
            inner.clone(),
            Duration::from_secs(60),
            Duration::from_secs(60),
        ));
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let cache = cache.clone();
                tokio::spawn(
                    async move { cache.authenticate_token(&parts(None), "t").await.unwrap() },
                )
            })
            .collect();
        for t in tasks {
            assert!(t.await.unwrap().is_some());
        }
        assert_eq!(inner.calls.load(Ordering::SeqCst), 1);
    }
}
