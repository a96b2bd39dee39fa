//! `apiserver_validating_admission_policy_check_total` and
//! `apiserver_validating_admission_policy_check_duration_seconds` (upstream
//! `policy/validating/metrics`), labelled by policy, binding, error type and enforcement
//! action, in the server's `/metrics` registry once the plugin is built.

use std::sync::LazyLock;
use std::time::Duration;

use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, Opts};

const LABELS: [&str; 4] = [
    "policy",
    "policy_binding",
    "error_type",
    "enforcement_action",
];

struct Metrics {
    check: IntCounterVec,
    latency: HistogramVec,
}

fn build() -> Result<Metrics, prometheus::Error> {
    let metrics = Metrics {
        check: IntCounterVec::new(
            Opts::new(
                "apiserver_validating_admission_policy_check_total",
                "[BETA] Validation admission policy check total, labeled by policy and further identified by binding and enforcement action taken.",
            ),
            &LABELS,
        )?,
        latency: HistogramVec::new(
            HistogramOpts::new(
                "apiserver_validating_admission_policy_check_duration_seconds",
                "[BETA] Validation admission latency for individual validation expressions in seconds, labeled by policy and further including binding and enforcement action taken.",
            )
            .buckets(vec![0.0000005, 0.001, 0.01, 0.1, 1.0]),
            &LABELS,
        )?,
    };
    if let Some(global) = apiserver::metrics::global() {
        global
            .registry()
            .register(Box::new(metrics.check.clone()))?;
        global
            .registry()
            .register(Box::new(metrics.latency.clone()))?;
    }
    Ok(metrics)
}

static METRICS: LazyLock<Option<Metrics>> = LazyLock::new(|| match build() {
    Ok(m) => Some(m),
    Err(err) => {
        tracing::error!(%err, "cannot register the validating admission policy metrics");
        None
    }
});

/// Registers the metrics (the first call does).
pub fn register() {
    LazyLock::force(&METRICS);
}

/// Records one validation's outcome (`action`: allow, deny, audit, warn; `error_type`:
/// no_error, compile_error, invalid_error, out_of_budget).
pub fn observe(policy: &str, binding: &str, action: &str, error_type: &str, elapsed: Duration) {
    if let Some(m) = METRICS.as_ref() {
        let labels = [policy, binding, error_type, action];
        m.check.with_label_values(&labels).inc();
        m.latency
            .with_label_values(&labels)
            .observe(elapsed.as_secs_f64());
    }
}
