//! A cache in front of token authenticators (upstream's `authentication/token/cache`):
//! kube-apiserver keeps successful token authentications for 10 s (`TokenSuccessCacheTTL`)
//! so a client's burst of requests verifies its JWT once, and does not cache failures
//! (`TokenFailureCacheTTL` 0).
//!
//! Entries are keyed by a salted SHA-256 of the request's API audiences and the token (the
//! token itself is never kept), and the cache is bounded: when it is full, expired entries are
//! dropped, and if it is still full the new result is simply not cached.
//!
//! Upstream's metrics: `authentication_token_cache_request_total` and
//! `…_request_duration_seconds` by `status` (`hit`, `miss`), `…_fetch_total` by `status`
//! (`ok`, `error`) and `…_active_fetch_count{status="in_flight"}`. Concurrent misses of one
//! token each ask the authenticator here (upstream shares one fetch and counts the others as
//! `blocked`, a series this cache never moves).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use prometheus::{CounterVec, GaugeVec, HistogramOpts, HistogramVec, Opts, Registry};
use sha2::{Digest, Sha256};

use super::bearertoken::TokenAuthenticator;
use super::{ApiAudiences, AuthError, AuthResponse};

/// kube-apiserver's success TTL.
pub const DEFAULT_SUCCESS_TTL: Duration = Duration::from_secs(10);

/// How many results are kept at most.
const MAX_ENTRIES: usize = 16 * 1024;

type Key = [u8; 32];
type Outcome = Result<Option<AuthResponse>, AuthError>;

struct CacheMetrics {
    requests: CounterVec,
    latency: HistogramVec,
    fetches: CounterVec,
    active_fetches: GaugeVec,
}

fn build_metrics() -> Result<CacheMetrics, prometheus::Error> {
    Ok(CacheMetrics {
        requests: CounterVec::new(
            Opts::new(
                "authentication_token_cache_request_total",
                "[ALPHA] authentication_token_cache_request_total",
            ),
            &["status"],
        )?,
        latency: HistogramVec::new(
            HistogramOpts::new(
                "authentication_token_cache_request_duration_seconds",
                "[ALPHA] authentication_token_cache_request_duration_seconds",
            ),
            &["status"],
        )?,
        fetches: CounterVec::new(
            Opts::new(
                "authentication_token_cache_fetch_total",
                "[ALPHA] authentication_token_cache_fetch_total",
            ),
            &["status"],
        )?,
        active_fetches: GaugeVec::new(
            Opts::new(
                "authentication_token_cache_active_fetch_count",
                "[ALPHA] authentication_token_cache_active_fetch_count",
            ),
            &["status"],
        )?,
    })
}

static METRICS: LazyLock<Option<CacheMetrics>> = LazyLock::new(|| match build_metrics() {
    Ok(m) => Some(m),
    Err(err) => {
        tracing::error!(%err, "cannot create the token cache metrics");
        None
    }
});

/// Adds the token cache's metrics to `registry`.
pub fn register(registry: &Registry) -> Result<(), prometheus::Error> {
    if let Some(m) = METRICS.as_ref() {
        registry.register(Box::new(m.requests.clone()))?;
        registry.register(Box::new(m.latency.clone()))?;
        registry.register(Box::new(m.fetches.clone()))?;
        registry.register(Box::new(m.active_fetches.clone()))?;
    }
    Ok(())
}

/// Counts a request answered from the cache (`hit`) or by the authenticator (`miss`), with
/// its latency in whole milliseconds, as upstream records it.
fn record_request(hit: bool, started: Instant) {
    if let Some(m) = METRICS.as_ref() {
        let status = if hit { "hit" } else { "miss" };
        m.requests.with_label_values(&[status]).inc();
        let millis = started.elapsed().as_millis() as f64;
        m.latency
            .with_label_values(&[status])
            .observe(millis / 1000.0);
    }
}

/// Counts a fetch from the authenticator while it runs (`in_flight`) and once it is done
/// (`ok` without an error, `error` with one).
struct FetchStats;

impl FetchStats {
    fn start() -> FetchStats {
        if let Some(m) = METRICS.as_ref() {
            m.active_fetches.with_label_values(&["in_flight"]).inc();
        }
        FetchStats
    }

    fn done(self, ok: bool) {
        if let Some(m) = METRICS.as_ref() {
            m.fetches
                .with_label_values(&[if ok { "ok" } else { "error" }])
                .inc();
        }
    }
}

impl Drop for FetchStats {
    /// The fetch is no longer in flight (also when the request was dropped mid-way).
    fn drop(&mut self) {
        if let Some(m) = METRICS.as_ref() {
            m.active_fetches.with_label_values(&["in_flight"]).dec();
        }
    }
}

/// Caches another token authenticator's answers.
pub struct CachedTokenAuthenticator {
    inner: Arc<dyn TokenAuthenticator>,
    success_ttl: Duration,
    failure_ttl: Duration,
    cache_errors: bool,
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
            cache_errors: true,
            salt: rand::random(),
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// Whether errors are cached with failures (the default; upstream's `cacheErrs`, which
    /// the token webhook's cache turns off so an outage is not remembered).
    pub fn caching_errors(mut self, cache_errors: bool) -> Self {
        self.cache_errors = cache_errors;
        self
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
            Err(_) if !self.cache_errors => return,
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
        let started = Instant::now();
        let key = self.key(req, token);
        if let Some(outcome) = self.lookup(&key) {
            record_request(true, started);
            return outcome;
        }
        let fetch = FetchStats::start();
        let outcome = self.inner.authenticate_token(req, token).await;
        fetch.done(outcome.is_ok());
        self.store(key, &outcome);
        record_request(false, started);
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
    async fn rejections_cached_and_errors_not_when_asked() {
        let inner = Arc::new(Counting::default());
        let cache = CachedTokenAuthenticator::new(
            inner.clone(),
            Duration::from_secs(60),
            Duration::from_secs(60),
        )
        .caching_errors(false);
        for _ in 0..2 {
            assert!(
                cache
                    .authenticate_token(&parts(&[]), "unknown")
                    .await
                    .unwrap()
                    .is_none()
            );
        }
        assert_eq!(inner.0.load(Ordering::SeqCst), 1);
        for _ in 0..2 {
            assert!(
                cache
                    .authenticate_token(&parts(&[]), "broken")
                    .await
                    .is_err()
            );
        }
        assert_eq!(inner.0.load(Ordering::SeqCst), 3);
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
    async fn hits_misses_and_fetches_are_counted() {
        let m = METRICS.as_ref().unwrap();
        let count = |v: &CounterVec, status: &str| v.with_label_values(&[status]).get();
        let (hits, misses, ok) = (
            count(&m.requests, "hit"),
            count(&m.requests, "miss"),
            count(&m.fetches, "ok"),
        );
        let inner = Arc::new(Counting::default());
        let cache =
            CachedTokenAuthenticator::new(inner.clone(), Duration::from_secs(60), Duration::ZERO);
        cache.authenticate_token(&parts(&[]), "good").await.unwrap();
        cache.authenticate_token(&parts(&[]), "good").await.unwrap();
        // (Other tests share the counters: at least this test's own.)
        assert!(count(&m.requests, "hit") >= hits + 1.0);
        assert!(count(&m.requests, "miss") >= misses + 1.0);
        assert!(count(&m.fetches, "ok") >= ok + 1.0);
        assert_eq!(inner.0.load(Ordering::SeqCst), 1);
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
