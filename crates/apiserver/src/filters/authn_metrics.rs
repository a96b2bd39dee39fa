//! The authentication filter's metrics (upstream `endpoints/filters/metrics.go`):
//! `authentication_attempts` and `authentication_duration_seconds` by result, and
//! `authenticated_user_requests` by a user name compressed to a bounded set of values (so an
//! attacker choosing user names cannot grow the label set).

use std::sync::LazyLock;
use std::time::Duration;

use prometheus::{CounterVec, HistogramOpts, HistogramVec, Opts, Registry};

/// How an authentication attempt ended (the `result` label).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthnResult {
    /// A user was authenticated (with acceptable audiences).
    Success,
    /// No authenticator recognised the credentials.
    Failure,
    /// An authenticator failed, or the audiences did not match.
    Error,
}

impl AuthnResult {
    fn label(self) -> &'static str {
        match self {
            AuthnResult::Success => "success",
            AuthnResult::Failure => "failure",
            AuthnResult::Error => "error",
        }
    }
}

struct AuthnMetrics {
    users: CounterVec,
    attempts: CounterVec,
    duration: HistogramVec,
}

fn build() -> Result<AuthnMetrics, prometheus::Error> {
    Ok(AuthnMetrics {
        users: CounterVec::new(
            Opts::new(
                "authenticated_user_requests",
                "[ALPHA] Counter of authenticated requests broken out by username.",
            ),
            &["username"],
        )?,
        attempts: CounterVec::new(
            Opts::new(
                "authentication_attempts",
                "[ALPHA] Counter of authenticated attempts.",
            ),
            &["result"],
        )?,
        duration: HistogramVec::new(
            HistogramOpts::new(
                "authentication_duration_seconds",
                "[ALPHA] Authentication duration in seconds broken out by result.",
            )
            .buckets(prometheus::exponential_buckets(0.001, 2.0, 15)?),
            &["result"],
        )?,
    })
}

static METRICS: LazyLock<Option<AuthnMetrics>> = LazyLock::new(|| match build() {
    Ok(m) => Some(m),
    Err(err) => {
        tracing::error!(%err, "cannot create the authentication metrics");
        None
    }
});

/// Adds the authentication metrics to `registry`.
pub fn register(registry: &Registry) -> Result<(), prometheus::Error> {
    if let Some(m) = METRICS.as_ref() {
        registry.register(Box::new(m.users.clone()))?;
        registry.register(Box::new(m.attempts.clone()))?;
        registry.register(Box::new(m.duration.clone()))?;
    }
    Ok(())
}

/// The `username` label of a user (upstream `compressUsername`): a few well-known internal
/// identities as themselves, e-mail addresses as `email_id`, everyone else as `other`.
pub fn compress_username(name: &str) -> &str {
    match name {
        "admin"
        | "client"
        | "kube_proxy"
        | "kubelet"
        | "system:serviceaccount:kube-system:default" => name,
        _ if name.contains('@') => "email_id",
        _ => "other",
    }
}

/// Records one authentication attempt that took `elapsed`; `user` is the authenticated user's
/// name on success.
pub fn record(result: AuthnResult, user: Option<&str>, elapsed: Duration) {
    let Some(m) = METRICS.as_ref() else { return };
    if let (AuthnResult::Success, Some(user)) = (result, user) {
        m.users.with_label_values(&[compress_username(user)]).inc();
    }
    m.attempts.with_label_values(&[result.label()]).inc();
    m.duration
        .with_label_values(&[result.label()])
        .observe(elapsed.as_secs_f64());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_names_are_compressed_to_a_bounded_set() {
        assert_eq!(compress_username("admin"), "admin");
        assert_eq!(compress_username("kubelet"), "kubelet");
        assert_eq!(
            compress_username("system:serviceaccount:kube-system:default"),
            "system:serviceaccount:kube-system:default"
        );
        assert_eq!(compress_username("jane@example.com"), "email_id");
        assert_eq!(compress_username("system:serviceaccount:team:bot"), "other");
        assert_eq!(compress_username("attacker-chosen-name-42"), "other");
    }

    #[test]
    fn attempts_are_counted_by_result() {
        let Some(m) = METRICS.as_ref() else {
            panic!("metrics not built")
        };
        let before = m.attempts.with_label_values(&["error"]).get();
        let users_before = m.users.with_label_values(&["email_id"]).get();
        record(AuthnResult::Error, None, Duration::from_millis(1));
        record(
            AuthnResult::Success,
            Some("jane@example.com"),
            Duration::from_millis(1),
        );
        assert_eq!(m.attempts.with_label_values(&["error"]).get(), before + 1.0);
        assert_eq!(
            m.users.with_label_values(&["email_id"]).get(),
            users_before + 1.0
        );
    }
}
