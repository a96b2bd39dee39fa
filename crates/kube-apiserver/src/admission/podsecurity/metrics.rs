//! The plugin's metrics (upstream `k8s.io/pod-security-admission/metrics`):
//! `pod_security_evaluations_total`, `pod_security_exemptions_total` and
//! `pod_security_errors_total`, in the server's `/metrics` registry.

use std::sync::LazyLock;

use prometheus::{IntCounterVec, Opts};

use super::api::{Level, LevelVersion, Version};

/// The server's own version: policy versions newer than it are counted as `future`.
const API_VERSION: Version = Version::V1(35);

/// Which mode an evaluation was for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Rejects violations.
    Enforce,
    /// Records violations in the audit event.
    Audit,
    /// Returns violations as warnings.
    Warn,
}

impl Mode {
    fn as_str(self) -> &'static str {
        match self {
            Mode::Enforce => "enforce",
            Mode::Audit => "audit",
            Mode::Warn => "warn",
        }
    }
}

/// What a request was, for the metrics' labels.
#[derive(Clone, Copy, Debug)]
pub struct RequestLabels<'a> {
    /// `create`, `update`, ...
    pub operation: &'a str,
    /// `pod`, `namespace` or `controller`.
    pub resource: &'a str,
    /// The subresource, or empty.
    pub subresource: &'a str,
}

struct Counters {
    evaluations: IntCounterVec,
    exemptions: IntCounterVec,
    errors: IntCounterVec,
}

fn build() -> Result<Counters, prometheus::Error> {
    let counters = Counters {
        evaluations: IntCounterVec::new(
            Opts::new(
                "pod_security_evaluations_total",
                "[ALPHA] Number of policy evaluations that occurred, not counting ignored or exempt requests.",
            ),
            &[
                "decision",
                "policy_level",
                "policy_version",
                "mode",
                "request_operation",
                "resource",
                "subresource",
            ],
        )?,
        exemptions: IntCounterVec::new(
            Opts::new(
                "pod_security_exemptions_total",
                "[ALPHA] Number of exempt requests, not counting ignored or out of scope requests.",
            ),
            &["request_operation", "resource", "subresource"],
        )?,
        errors: IntCounterVec::new(
            Opts::new(
                "pod_security_errors_total",
                "[ALPHA] Number of errors preventing normal evaluation. Non-fatal errors may result in the latest restricted profile being used for evaluation.",
            ),
            &["fatal", "request_operation", "resource", "subresource"],
        )?,
    };
    // Upstream creates these series up front, so they are listed at 0 from the start.
    for operation in ["create", "update"] {
        counters.evaluations.with_label_values(&[
            "allow",
            "privileged",
            "latest",
            "enforce",
            operation,
            "pod",
            "",
        ]);
        for resource in ["pod", "controller"] {
            counters
                .exemptions
                .with_label_values(&[operation, resource, ""]);
        }
    }
    if let Some(global) = apiserver::metrics::global() {
        let registry = global.registry();
        registry.register(Box::new(counters.evaluations.clone()))?;
        registry.register(Box::new(counters.exemptions.clone()))?;
        registry.register(Box::new(counters.errors.clone()))?;
    }
    Ok(counters)
}

static COUNTERS: LazyLock<Option<Counters>> = LazyLock::new(|| match build() {
    Ok(c) => Some(c),
    Err(err) => {
        tracing::error!(%err, "cannot register the PodSecurity metrics");
        None
    }
});

/// Registers the metrics (so they are listed from start-up, as upstream's).
pub fn register() {
    LazyLock::force(&COUNTERS);
}

/// The `policy_version` label: `latest` for latest and for privileged, `future` past the server's
/// own version.
pub fn version_label(policy: LevelVersion) -> String {
    if policy.version == Version::Latest || policy.level == Level::Privileged {
        "latest".to_string()
    } else if policy.version > API_VERSION {
        "future".to_string()
    } else {
        policy.version.to_string()
    }
}

/// Counts an evaluation.
pub fn record_evaluation(allowed: bool, policy: LevelVersion, mode: Mode, req: RequestLabels<'_>) {
    if let Some(c) = COUNTERS.as_ref() {
        let decision = if allowed { "allow" } else { "deny" };
        c.evaluations
            .with_label_values(&[
                decision,
                policy.level.as_str(),
                &version_label(policy),
                mode.as_str(),
                req.operation,
                req.resource,
                req.subresource,
            ])
            .inc();
    }
}

/// Counts an exempt request.
pub fn record_exemption(req: RequestLabels<'_>) {
    if let Some(c) = COUNTERS.as_ref() {
        c.exemptions
            .with_label_values(&[req.operation, req.resource, req.subresource])
            .inc();
    }
}

/// Counts an error (`fatal`: the request was refused because of it).
pub fn record_error(fatal: bool, req: RequestLabels<'_>) {
    if let Some(c) = COUNTERS.as_ref() {
        c.errors
            .with_label_values(&[
                if fatal { "true" } else { "false" },
                req.operation,
                req.resource,
                req.subresource,
            ])
            .inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_label_is_latest_future_or_the_version() {
        let lv = |level, version| LevelVersion { level, version };
        assert_eq!(
            version_label(lv(Level::Restricted, Version::Latest)),
            "latest"
        );
        assert_eq!(
            version_label(lv(Level::Privileged, Version::V1(3))),
            "latest"
        );
        assert_eq!(version_label(lv(Level::Baseline, Version::V1(35))), "v1.35");
        assert_eq!(
            version_label(lv(Level::Baseline, Version::V1(36))),
            "future"
        );
    }
}
