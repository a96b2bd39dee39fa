//! The webhook authorizer's metrics (upstream `plugin/pkg/authorizer/webhook/metrics`),
//! registered in the process-wide `/metrics` registry on first use.

use std::sync::LazyLock;
use std::time::Duration;

use prometheus::{CounterVec, HistogramOpts, HistogramVec, Opts};

struct WebhookMetrics {
    evaluations: CounterVec,
    duration: HistogramVec,
    fail_open: CounterVec,
}

static METRICS: LazyLock<Option<WebhookMetrics>> = LazyLock::new(|| {
    let build = || -> Result<WebhookMetrics, prometheus::Error> {
        let evaluations = CounterVec::new(
            Opts::new(
                "apiserver_authorization_webhook_evaluations_total",
                "[ALPHA] Round-trips to authorization webhooks.",
            ),
            &["name", "result"],
        )?;
        let duration = HistogramVec::new(
            HistogramOpts::new(
                "apiserver_authorization_webhook_duration_seconds",
                "[ALPHA] Request latency in seconds.",
            ),
            &["name", "result"],
        )?;
        let fail_open = CounterVec::new(
            Opts::new(
                "apiserver_authorization_webhook_evaluations_fail_open_total",
                "[ALPHA] NoOpinion results due to webhook timeout or error.",
            ),
            &["name", "result"],
        )?;
        if let Some(global) = crate::metrics::global() {
            let registry = global.registry();
            registry.register(Box::new(evaluations.clone()))?;
            registry.register(Box::new(duration.clone()))?;
            registry.register(Box::new(fail_open.clone()))?;
        }
        Ok(WebhookMetrics {
            evaluations,
            duration,
            fail_open,
        })
    };
    match build() {
        Ok(m) => Some(m),
        Err(err) => {
            tracing::error!(%err, "cannot register the authorization webhook metrics");
            None
        }
    }
});

/// Records one round-trip to webhook `name`: `result` is `success`, `timeout` or `error`.
pub fn observe(name: &str, result: &str, elapsed: Duration) {
    if let Some(m) = METRICS.as_ref() {
        m.evaluations.with_label_values(&[name, result]).inc();
        m.duration
            .with_label_values(&[name, result])
            .observe(elapsed.as_secs_f64());
    }
}

/// Records a failed round-trip answered with no opinion (the webhook failed open).
pub fn fail_open(name: &str, result: &str) {
    if let Some(m) = METRICS.as_ref() {
        m.fail_open.with_label_values(&[name, result]).inc();
    }
}
