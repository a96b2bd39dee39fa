//! The admission webhook metrics of upstream `admission/metrics`, registered in the
//! process-wide `/metrics` registry on first use: latency and request counts per webhook,
//! rejections by error type and code, and fail-open counts.

use std::sync::LazyLock;
use std::time::Duration;

use prometheus::{CounterVec, HistogramOpts, HistogramVec, Opts};

/// Why a webhook call rejected a request (upstream `WebhookRejectionErrorType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RejectionType {
    /// The webhook answered and denied the request.
    Denied,
    /// The webhook could not be called (under `failurePolicy: Fail`).
    CallingWebhook,
    /// Something failed in the server (a patch that does not apply).
    ApiserverInternal,
}

impl RejectionType {
    fn label(self) -> &'static str {
        match self {
            RejectionType::Denied => "no_error",
            RejectionType::CallingWebhook => "calling_webhook_error",
            RejectionType::ApiserverInternal => "apiserver_internal_error",
        }
    }
}

struct Metrics {
    latency: HistogramVec,
    requests: CounterVec,
    rejections: CounterVec,
    fail_open: CounterVec,
}

static METRICS: LazyLock<Option<Metrics>> = LazyLock::new(|| {
    let build = || -> Result<Metrics, prometheus::Error> {
        let latency = HistogramVec::new(
            HistogramOpts::new(
                "apiserver_admission_webhook_admission_duration_seconds",
                "[STABLE] Admission webhook latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).",
            )
            .buckets(vec![0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10.0, 25.0]),
            &["name", "type", "operation", "rejected"],
        )?;
        let requests = CounterVec::new(
            Opts::new(
                "apiserver_admission_webhook_request_total",
                "[ALPHA] Admission webhook request total, identified by name and broken out for each admission type (validating or admit) and operation. Additional labels specify whether the request was rejected or not and an HTTP status code. Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.",
            ),
            &["name", "type", "operation", "code", "rejected"],
        )?;
        let rejections = CounterVec::new(
            Opts::new(
                "apiserver_admission_webhook_rejection_count",
                "[ALPHA] Admission webhook rejection count, identified by name and broken out for each admission type (validating or admit) and operation. Additional labels specify an error type (calling_webhook_error or apiserver_internal_error if an error occurred; no_error otherwise) and optionally a non-zero rejection code if the webhook rejects the request with an HTTP status code (honored by the apiserver when the code is greater or equal to 400). Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.",
            ),
            &["name", "type", "operation", "error_type", "rejection_code"],
        )?;
        let fail_open = CounterVec::new(
            Opts::new(
                "apiserver_admission_webhook_fail_open_count",
                "[ALPHA] Admission webhook fail open count, identified by name and broken out for each admission type (validating or admit).",
            ),
            &["name", "type"],
        )?;
        if let Some(global) = apiserver::metrics::global() {
            let registry = global.registry();
            registry.register(Box::new(latency.clone()))?;
            registry.register(Box::new(requests.clone()))?;
            registry.register(Box::new(rejections.clone()))?;
            registry.register(Box::new(fail_open.clone()))?;
        }
        Ok(Metrics {
            latency,
            requests,
            rejections,
            fail_open,
        })
    };
    match build() {
        Ok(m) => Some(m),
        Err(err) => {
            tracing::error!(%err, "cannot register the admission webhook metrics");
            None
        }
    }
});

/// Registers the metrics (so they are listed from start-up).
pub fn init() {
    LazyLock::force(&METRICS);
}

/// Records one call of webhook `name` (`kind` is `admit` or `validating`).
pub fn observe(
    name: &str,
    kind: &str,
    operation: &str,
    elapsed: Duration,
    rejected: bool,
    code: u16,
) {
    if let Some(m) = METRICS.as_ref() {
        let rejected = if rejected { "true" } else { "false" };
        let code = code.min(600).to_string();
        m.requests
            .with_label_values(&[name, kind, operation, &code, rejected])
            .inc();
        m.latency
            .with_label_values(&[name, kind, operation, rejected])
            .observe(elapsed.as_secs_f64());
    }
}

/// Records a rejection by webhook `name`.
pub fn rejection(name: &str, kind: &str, operation: &str, why: RejectionType, code: u16) {
    if let Some(m) = METRICS.as_ref() {
        m.rejections
            .with_label_values(&[
                name,
                kind,
                operation,
                why.label(),
                &code.min(600).to_string(),
            ])
            .inc();
    }
}

/// Records a call failure ignored under `failurePolicy: Ignore`.
pub fn fail_open(name: &str, kind: &str) {
    if let Some(m) = METRICS.as_ref() {
        m.fail_open.with_label_values(&[name, kind]).inc();
    }
}
