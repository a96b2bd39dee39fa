//! The conversion webhook metrics (upstream `conversion/metrics.go`), registered in the
//! process-wide `/metrics` registry on first use: `apiserver_conversion_webhook_request_total`
//! and `apiserver_conversion_webhook_duration_seconds` by result and failure type, and
//! `apiserver_crd_conversion_webhook_duration_seconds` by CRD and versions.

use std::sync::LazyLock;
use std::time::Duration;

use prometheus::{CounterVec, HistogramOpts, HistogramVec, Opts};

/// Why a webhook conversion failed (upstream `ConversionWebhookErrorType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureType {
    /// The call failed (connection, TLS, HTTP status, undecodable answer).
    Call,
    /// The review came back malformed or unsuccessful.
    MalformedResponse,
    /// Fewer or more objects than sent.
    PartialResponse,
    /// A converted object failed the checks.
    InvalidConvertedObject,
}

impl FailureType {
    /// The `failure_type` label.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureType::Call => "conversion_webhook_call_failure",
            FailureType::MalformedResponse => "conversion_webhook_malformed_response_failure",
            FailureType::PartialResponse => "conversion_webhook_partial_response_failure",
            FailureType::InvalidConvertedObject => {
                "conversion_webhook_invalid_converted_object_failure"
            }
        }
    }
}

struct Metrics {
    requests: CounterVec,
    latency: HistogramVec,
    crd_latency: HistogramVec,
}

static METRICS: LazyLock<Option<Metrics>> = LazyLock::new(|| {
    let build = || -> Result<Metrics, prometheus::Error> {
        let requests = CounterVec::new(
            Opts::new(
                "apiserver_conversion_webhook_request_total",
                "[ALPHA] Counter for conversion webhook requests with success/failure and failure error type",
            ),
            &["result", "failure_type"],
        )?;
        let latency = HistogramVec::new(
            HistogramOpts::new(
                "apiserver_conversion_webhook_duration_seconds",
                "[ALPHA] Conversion webhook request latency",
            )
            .buckets(vec![
                0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 45.0, 60.0,
            ]),
            &["result", "failure_type"],
        )?;
        let crd_latency = HistogramVec::new(
            HistogramOpts::new(
                "apiserver_crd_conversion_webhook_duration_seconds",
                "[ALPHA] CRD webhook conversion duration in seconds",
            )
            .buckets(prometheus::exponential_buckets(0.001, 2.0, 15)?),
            &["crd_name", "from_version", "to_version", "succeeded"],
        )?;
        if let Some(global) = apiserver::metrics::global() {
            let registry = global.registry();
            registry.register(Box::new(requests.clone()))?;
            registry.register(Box::new(latency.clone()))?;
            registry.register(Box::new(crd_latency.clone()))?;
        }
        Ok(Metrics {
            requests,
            latency,
            crd_latency,
        })
    };
    match build() {
        Ok(m) => Some(m),
        Err(err) => {
            tracing::error!(%err, "cannot register the conversion webhook metrics");
            None
        }
    }
});

/// Records one webhook round trip: `failure` is `None` on success.
pub fn observe_request(failure: Option<FailureType>, elapsed: Duration) {
    if let Some(m) = METRICS.as_ref() {
        let (result, failure) = match failure {
            None => ("success", ""),
            Some(f) => ("failure", f.as_str()),
        };
        m.requests.with_label_values(&[result, failure]).inc();
        m.latency
            .with_label_values(&[result, failure])
            .observe(elapsed.as_secs_f64());
    }
}

/// Records one conversion of CRD `crd` between two different versions.
pub fn observe_crd(crd: &str, from: &str, to: &str, succeeded: bool, elapsed: Duration) {
    if let Some(m) = METRICS.as_ref() {
        m.crd_latency
            .with_label_values(&[crd, from, to, if succeeded { "true" } else { "false" }])
            .observe(elapsed.as_secs_f64());
    }
}
