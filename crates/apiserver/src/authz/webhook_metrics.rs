//! The webhook authorizer's metrics (upstream `plugin/pkg/authorizer/webhook/metrics`) and
//! its match conditions' (upstream `pkg/authorization/cel` matcher metrics), registered in the
//! process-wide `/metrics` registry on first use.

use std::sync::LazyLock;
use std::time::Duration;

use prometheus::{CounterVec, HistogramOpts, HistogramVec, Opts};

struct WebhookMetrics {
    evaluations: CounterVec,
    duration: HistogramVec,
    fail_open: CounterVec,
    match_errors: CounterVec,
    match_exclusions: CounterVec,
    match_duration: HistogramVec,
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
        let match_errors = CounterVec::new(
            Opts::new(
                "apiserver_authorization_match_condition_evaluation_errors_total",
                "[ALPHA] Total number of errors when an authorization webhook encounters a match condition error split by authorizer type and name.",
            ),
            &["type", "name"],
        )?;
        let match_exclusions = CounterVec::new(
            Opts::new(
                "apiserver_authorization_match_condition_exclusions_total",
                "[ALPHA] Total number of exclusions when an authorization webhook is skipped because match conditions exclude it.",
            ),
            &["type", "name"],
        )?;
        let match_duration = HistogramVec::new(
            HistogramOpts::new(
                "apiserver_authorization_match_condition_evaluation_seconds",
                "[ALPHA] Authorization match condition evaluation time in seconds, split by authorizer type and name.",
            )
            .buckets(vec![0.001, 0.005, 0.01, 0.025, 0.1, 0.2, 0.25]),
            &["type", "name"],
        )?;
        if let Some(global) = crate::metrics::global() {
            let registry = global.registry();
            registry.register(Box::new(evaluations.clone()))?;
            registry.register(Box::new(duration.clone()))?;
            registry.register(Box::new(fail_open.clone()))?;
            registry.register(Box::new(match_errors.clone()))?;
            registry.register(Box::new(match_exclusions.clone()))?;
            registry.register(Box::new(match_duration.clone()))?;
        }
        Ok(WebhookMetrics {
            evaluations,
            duration,
            fail_open,
            match_errors,
            match_exclusions,
            match_duration,
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

/// The authorizer type the match condition metrics carry (only webhooks have conditions).
const WEBHOOK_TYPE: &str = "Webhook";

/// Records one evaluation of webhook `name`'s match conditions: how long it took, whether
/// one of them failed to evaluate, and whether they excluded the request.
pub fn match_conditions_evaluated(name: &str, elapsed: Duration, errored: bool, excluded: bool) {
    if let Some(m) = METRICS.as_ref() {
        let labels = [WEBHOOK_TYPE, name];
        m.match_duration
            .with_label_values(&labels)
            .observe(elapsed.as_secs_f64());
        if errored {
            m.match_errors.with_label_values(&labels).inc();
        }
        if excluded {
            m.match_exclusions.with_label_values(&labels).inc();
        }
    }
}
