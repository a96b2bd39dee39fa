//! Admission latency metrics (upstream `admission/metrics`):
//! `apiserver_admission_step_admission_duration_seconds{operation,rejected,type}` for each
//! phase of the chain and `apiserver_admission_controller_admission_duration_seconds{name,
//! operation,rejected,type}` for each plugin. Label values come from the plugin names and the
//! four operations only, so the series stay bounded.

use std::sync::LazyLock;
use std::time::Duration;

use prometheus::{HistogramOpts, HistogramVec, Registry};

use super::Operation;

/// Upstream's buckets for the step and controller latencies.
const BUCKETS: [f64; 6] = [0.005, 0.025, 0.1, 0.5, 1.0, 2.5];

/// The phase of admission (the `type` label).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The mutating phase.
    Admit,
    /// The validating phase.
    Validate,
}

impl Phase {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Admit => "admit",
            Phase::Validate => "validate",
        }
    }
}

struct AdmissionMetrics {
    step: HistogramVec,
    controller: HistogramVec,
}

fn build() -> Result<AdmissionMetrics, prometheus::Error> {
    Ok(AdmissionMetrics {
        step: HistogramVec::new(
            HistogramOpts::new(
                "apiserver_admission_step_admission_duration_seconds",
                "[STABLE] Admission sub-step latency histogram in seconds, broken out for each operation and API resource and step type (validate or admit).",
            )
            .buckets(BUCKETS.to_vec()),
            &["operation", "rejected", "type"],
        )?,
        controller: HistogramVec::new(
            HistogramOpts::new(
                "apiserver_admission_controller_admission_duration_seconds",
                "[STABLE] Admission controller latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).",
            )
            .buckets(BUCKETS.to_vec()),
            &["name", "operation", "rejected", "type"],
        )?,
    })
}

static METRICS: LazyLock<Option<AdmissionMetrics>> = LazyLock::new(|| build().ok());

/// Registers the admission metrics in `registry`.
pub fn register(registry: &Registry) -> Result<(), prometheus::Error> {
    if let Some(m) = METRICS.as_ref() {
        registry.register(Box::new(m.step.clone()))?;
        registry.register(Box::new(m.controller.clone()))?;
    }
    Ok(())
}

fn rejected(yes: bool) -> &'static str {
    if yes { "true" } else { "false" }
}

/// Records one phase of the chain.
pub fn observe_step(phase: Phase, operation: Operation, rejected_: bool, elapsed: Duration) {
    if let Some(m) = METRICS.as_ref() {
        m.step
            .with_label_values(&[operation.as_str(), rejected(rejected_), phase.as_str()])
            .observe(elapsed.as_secs_f64());
    }
}

/// Records one plugin's call.
pub fn observe_controller(
    name: &str,
    phase: Phase,
    operation: Operation,
    rejected_: bool,
    elapsed: Duration,
) {
    if let Some(m) = METRICS.as_ref() {
        m.controller
            .with_label_values(&[
                name,
                operation.as_str(),
                rejected(rejected_),
                phase.as_str(),
            ])
            .observe(elapsed.as_secs_f64());
    }
}
