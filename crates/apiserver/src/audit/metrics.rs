//! The audit metrics (upstream `pkg/audit/metrics.go`): `apiserver_audit_event_total`,
//! `apiserver_audit_error_total{plugin}`, `apiserver_audit_level_total{level}` and
//! `apiserver_audit_requests_rejected_total`, and upstream's `HandlePluginError`, which
//! counts the events a backend lost and logs them in the legacy one-line format.

use std::sync::LazyLock;

use prometheus::{CounterVec, IntCounter, Opts, Registry};

use super::event::Event;
use super::format::event_string;
use super::level::Level;

struct AuditMetrics {
    events: IntCounter,
    errors: CounterVec,
    levels: CounterVec,
    rejected: IntCounter,
}

fn build() -> Result<AuditMetrics, prometheus::Error> {
    Ok(AuditMetrics {
        events: IntCounter::with_opts(Opts::new(
            "apiserver_audit_event_total",
            "[ALPHA] Counter of audit events generated and sent to the audit backend.",
        ))?,
        errors: CounterVec::new(
            Opts::new(
                "apiserver_audit_error_total",
                "[ALPHA] Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected by the error.",
            ),
            &["plugin"],
        )?,
        levels: CounterVec::new(
            Opts::new(
                "apiserver_audit_level_total",
                "[ALPHA] Counter of policy levels for audit events (1 per request).",
            ),
            &["level"],
        )?,
        rejected: IntCounter::with_opts(Opts::new(
            "apiserver_audit_requests_rejected_total",
            "[ALPHA] Counter of apiserver requests rejected due to an error in audit logging backend.",
        ))?,
    })
}

static METRICS: LazyLock<Option<AuditMetrics>> = LazyLock::new(|| match build() {
    Ok(m) => Some(m),
    Err(err) => {
        tracing::error!(%err, "cannot create the audit metrics");
        None
    }
});

/// Adds the audit metrics to `registry`.
pub fn register(registry: &Registry) -> Result<(), prometheus::Error> {
    if let Some(m) = METRICS.as_ref() {
        registry.register(Box::new(m.events.clone()))?;
        registry.register(Box::new(m.errors.clone()))?;
        registry.register(Box::new(m.levels.clone()))?;
        registry.register(Box::new(m.rejected.clone()))?;
    }
    Ok(())
}

/// Counts one event handed to the backend (upstream `ObserveEvent`).
pub fn observe_event() {
    if let Some(m) = METRICS.as_ref() {
        m.events.inc();
    }
}

/// Counts the policy level chosen for a request (upstream `ObservePolicyLevel`).
pub fn observe_policy_level(level: Level) {
    if let Some(m) = METRICS.as_ref() {
        m.levels.with_label_values(&[level.as_str()]).inc();
    }
}

/// Counts a request refused because its `RequestReceived` event could not be stored.
pub fn observe_rejected_request() {
    if let Some(m) = METRICS.as_ref() {
        m.rejected.inc();
    }
}

/// Upstream's `HandlePluginError`: counts `impacted` under `plugin` and logs the error with
/// every impacted event in the legacy format.
pub fn handle_plugin_error(plugin: &str, err: &dyn std::fmt::Display, impacted: &[Event]) {
    if let Some(m) = METRICS.as_ref() {
        m.errors
            .with_label_values(&[plugin])
            .inc_by(impacted.len() as f64);
    }
    let mut message = format!(
        "Error in audit plugin '{plugin}' affecting {} audit events: {err}\nImpacted events:\n",
        impacted.len()
    );
    for event in impacted {
        message.push_str(&event_string(event));
        message.push('\n');
    }
    tracing::error!("{message}");
}

/// The current value of `apiserver_audit_error_total{plugin}` (for tests).
#[cfg(test)]
pub(crate) fn errors(plugin: &str) -> f64 {
    METRICS
        .as_ref()
        .map(|m| m.errors.with_label_values(&[plugin]).get())
        .unwrap_or_default()
}
