//! The JWT authenticator's metrics (upstream `plugin/pkg/authenticator/token/oidc/metrics.go`):
//! `apiserver_authentication_jwt_authenticator_latency_seconds{result,jwt_issuer_hash}` for
//! tokens of the authenticator's issuer (`success` or `failure`; the token cache in front
//! means cache misses only), and the key set fetches:
//! `apiserver_authentication_jwt_authenticator_jwks_fetch_last_timestamp_seconds{result,
//! jwt_issuer_hash,apiserver_id_hash}` and `…_jwks_fetch_last_key_set_info{jwt_issuer_hash,
//! apiserver_id_hash,hash}`.

use std::sync::LazyLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use prometheus::core::Collector;
use prometheus::{GaugeVec, HistogramOpts, HistogramVec, Opts, Registry};

use crate::server::authconfig_metrics::hash;

struct JwtMetrics {
    latency: HistogramVec,
    fetch_timestamp: GaugeVec,
    key_set_info: GaugeVec,
}

fn build() -> Result<JwtMetrics, prometheus::Error> {
    Ok(JwtMetrics {
        latency: HistogramVec::new(
            HistogramOpts::new(
                "apiserver_authentication_jwt_authenticator_latency_seconds",
                "[ALPHA] Latency of jwt authentication operations in seconds. This is the time spent authenticating a token for cache miss only (i.e. when the token is not found in the cache).",
            )
            .buckets(vec![
                0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
            ]),
            &["result", "jwt_issuer_hash"],
        )?,
        fetch_timestamp: GaugeVec::new(
            Opts::new(
                "apiserver_authentication_jwt_authenticator_jwks_fetch_last_timestamp_seconds",
                "[ALPHA] Timestamp of the last successful or failed JWKS fetch split by result, api server identity and jwt issuer for the JWT authenticator.",
            ),
            &["result", "jwt_issuer_hash", "apiserver_id_hash"],
        )?,
        key_set_info: GaugeVec::new(
            Opts::new(
                "apiserver_authentication_jwt_authenticator_jwks_fetch_last_key_set_info",
                "[ALPHA] Information about the last JWKS fetched by the JWT authenticator with hash as label, split by api server identity and jwt issuer.",
            ),
            &["jwt_issuer_hash", "apiserver_id_hash", "hash"],
        )?,
    })
}

static METRICS: LazyLock<Option<JwtMetrics>> = LazyLock::new(|| match build() {
    Ok(m) => Some(m),
    Err(err) => {
        tracing::error!(%err, "cannot create the JWT authenticator metrics");
        None
    }
});

/// Adds the JWT authenticator's metrics to `registry`.
pub fn register(registry: &Registry) -> Result<(), prometheus::Error> {
    if let Some(m) = METRICS.as_ref() {
        registry.register(Box::new(m.latency.clone()))?;
        registry.register(Box::new(m.fetch_timestamp.clone()))?;
        registry.register(Box::new(m.key_set_info.clone()))?;
    }
    Ok(())
}

/// One authentication of a token of `issuer`: `success` when it was accepted, `failure`
/// when it was rejected with an error.
pub fn record_latency(issuer: &str, success: bool, elapsed: Duration) {
    if let Some(m) = METRICS.as_ref() {
        let result = if success { "success" } else { "failure" };
        m.latency
            .with_label_values(&[result, &hash(issuer.as_bytes())])
            .observe(elapsed.as_secs_f64());
    }
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// A key set fetch of `issuer`: `key_set` is what was fetched, `None` when the fetch failed.
pub fn record_jwks_fetch(issuer: &str, apiserver_id: &str, key_set: Option<&[u8]>) {
    let Some(m) = METRICS.as_ref() else { return };
    let (issuer_hash, id_hash) = (hash(issuer.as_bytes()), hash(apiserver_id.as_bytes()));
    let result = if key_set.is_some() {
        "success"
    } else {
        "failure"
    };
    m.fetch_timestamp
        .with_label_values(&[result, &issuer_hash, &id_hash])
        .set(now());
    if let Some(key_set) = key_set {
        // One series per issuer and server: the key set's hash replaces the previous one.
        let stale: Vec<String> = m
            .key_set_info
            .collect()
            .iter()
            .flat_map(|f| f.get_metric().iter())
            .filter_map(|metric| {
                let labels = metric.get_label();
                let value = |name: &str| {
                    labels
                        .iter()
                        .find(|l| l.name() == name)
                        .map(|l| l.value().to_string())
                };
                (value("jwt_issuer_hash").as_deref() == Some(issuer_hash.as_str())
                    && value("apiserver_id_hash").as_deref() == Some(id_hash.as_str()))
                .then(|| value("hash"))
                .flatten()
            })
            .collect();
        for old in stale {
            let _ = m
                .key_set_info
                .remove_label_values(&[&issuer_hash, &id_hash, &old]);
        }
        m.key_set_info
            .with_label_values(&[&issuer_hash, &id_hash, &hash(key_set)])
            .set(1.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus::core::Collector;

    fn series(issuer_hash: &str) -> Vec<String> {
        METRICS
            .as_ref()
            .unwrap()
            .key_set_info
            .collect()
            .iter()
            .flat_map(|f| f.get_metric().iter())
            .filter(|m| m.get_label().iter().any(|l| l.value() == issuer_hash))
            .filter_map(|m| {
                m.get_label()
                    .iter()
                    .find(|l| l.name() == "hash")
                    .map(|l| l.value().to_string())
            })
            .collect()
    }

    #[test]
    fn a_new_key_set_replaces_the_issuers_previous_hash() {
        let issuer = "https://unit.issuer";
        record_jwks_fetch(issuer, "id", Some(b"{\"keys\":[1]}"));
        record_jwks_fetch(issuer, "id", Some(b"{\"keys\":[2]}"));
        record_jwks_fetch(issuer, "id", None);
        assert_eq!(
            series(&hash(issuer.as_bytes())),
            vec![hash(b"{\"keys\":[2]}")]
        );
        record_latency(issuer, true, Duration::from_millis(2));
        let m = METRICS.as_ref().unwrap();
        let h = m
            .latency
            .with_label_values(&["success", &hash(issuer.as_bytes())]);
        assert_eq!(h.get_sample_count(), 1);
    }
}
