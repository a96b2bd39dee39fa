//! The service-account token metrics of upstream's `pkg/serviceaccount/metrics.go`, in the
//! server's `/metrics` registry from the moment the authenticators are built.

use std::sync::LazyLock;

use prometheus::{IntCounter, Opts};

/// The counters, by what a token use was.
pub struct TokenMetrics {
    /// Tokens without audiences (legacy) used.
    pub legacy_tokens: IntCounter,
    /// Bound tokens used past their `warnafter`.
    pub stale_tokens: IntCounter,
    /// Bound tokens used before their `warnafter` (or without one).
    pub valid_tokens: IntCounter,
    /// Legacy secret tokens of auto-generated secrets used.
    pub legacy_auto_token_uses: IntCounter,
    /// Legacy secret tokens of manually created secrets used.
    pub legacy_manual_token_uses: IntCounter,
    /// Legacy tokens of auto-generated secrets marked invalid, used.
    pub invalid_legacy_auto_token_uses: IntCounter,
}

fn counter(name: &str, help: &str) -> Result<IntCounter, prometheus::Error> {
    IntCounter::with_opts(Opts::new(name, format!("[ALPHA] {help}")))
}

fn build() -> Result<TokenMetrics, prometheus::Error> {
    let metrics = TokenMetrics {
        legacy_tokens: counter(
            "serviceaccount_legacy_tokens_total",
            "Cumulative legacy service account tokens used",
        )?,
        stale_tokens: counter(
            "serviceaccount_stale_tokens_total",
            "Cumulative stale projected service account tokens used",
        )?,
        valid_tokens: counter(
            "serviceaccount_valid_tokens_total",
            "Cumulative valid projected service account tokens used",
        )?,
        legacy_auto_token_uses: counter(
            "serviceaccount_legacy_auto_token_uses_total",
            "Cumulative auto-generated legacy tokens used",
        )?,
        legacy_manual_token_uses: counter(
            "serviceaccount_legacy_manual_token_uses_total",
            "Cumulative manually created legacy tokens used",
        )?,
        invalid_legacy_auto_token_uses: counter(
            "serviceaccount_invalid_legacy_auto_token_uses_total",
            "Cumulative invalid auto-generated legacy tokens used",
        )?,
    };
    if let Some(global) = apiserver::metrics::global() {
        let registry = global.registry();
        for c in [
            &metrics.legacy_tokens,
            &metrics.stale_tokens,
            &metrics.valid_tokens,
            &metrics.legacy_auto_token_uses,
            &metrics.legacy_manual_token_uses,
            &metrics.invalid_legacy_auto_token_uses,
        ] {
            registry.register(Box::new(c.clone()))?;
        }
    }
    Ok(metrics)
}

static METRICS: LazyLock<Option<TokenMetrics>> = LazyLock::new(|| match build() {
    Ok(m) => Some(m),
    Err(err) => {
        tracing::error!(%err, "cannot register the service-account token metrics");
        None
    }
});

/// The counters (`None` only if registration failed, which is logged). The first call
/// registers them.
pub fn get() -> Option<&'static TokenMetrics> {
    METRICS.as_ref()
}

/// Counts one use with `pick`.
pub fn inc(pick: impl FnOnce(&TokenMetrics) -> &IntCounter) {
    if let Some(m) = get() {
        pick(m).inc();
    }
}
