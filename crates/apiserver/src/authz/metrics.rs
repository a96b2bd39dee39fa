//! `apiserver_authorization_decisions_total{type,name,decision}` (upstream
//! `pkg/authorization/metrics`): each configured authorizer of the chain is wrapped in an
//! [`InstrumentedAuthorizer`] that counts its terminal decisions (`allowed`, `denied`); no
//! opinion is not terminal and not counted. Registered in the process-wide `/metrics`
//! registry on first use.

use std::sync::{Arc, LazyLock};

use prometheus::{CounterVec, Opts};

use super::rules::UserRules;
use super::{Attributes, AuthorizeResult, Authorizer, Decision};
use crate::request::UserInfo;

static DECISIONS: LazyLock<Option<CounterVec>> = LazyLock::new(|| {
    let build = || -> Result<CounterVec, prometheus::Error> {
        let decisions = CounterVec::new(
            Opts::new(
                "apiserver_authorization_decisions_total",
                "[ALPHA] Total number of terminal decisions made by an authorizer split by authorizer type, name, and decision.",
            ),
            &["type", "name", "decision"],
        )?;
        if let Some(global) = crate::metrics::global() {
            global.registry().register(Box::new(decisions.clone()))?;
        }
        Ok(decisions)
    };
    match build() {
        Ok(m) => Some(m),
        Err(err) => {
            tracing::error!(%err, "cannot register the authorization decision metrics");
            None
        }
    }
});

/// Counts one terminal decision of the authorizer of `type_` named `name`.
pub fn record_decision(type_: &str, name: &str, decision: Decision) {
    let label = match decision {
        Decision::Allow => "allowed",
        Decision::Deny => "denied",
        Decision::NoOpinion => return,
    };
    if let Some(m) = DECISIONS.as_ref() {
        m.with_label_values(&[type_, name, label]).inc();
    }
}

/// The name upstream gives the authorizer of a `--authorization-mode` value: the mode
/// lower-cased (`RBAC` → `rbac`).
pub fn name_for_mode(mode: &str) -> String {
    mode.to_ascii_lowercase()
}

/// An authorizer whose decisions are counted under its type and name.
pub struct InstrumentedAuthorizer {
    type_: String,
    name: String,
    delegate: Arc<dyn Authorizer>,
}

impl InstrumentedAuthorizer {
    /// Wraps `delegate`, of `type_` (`RBAC`, `Node`, `Webhook`, `AlwaysAllow`,
    /// `AlwaysDeny`), configured as `name`.
    pub fn wrap(type_: &str, name: &str, delegate: Arc<dyn Authorizer>) -> Arc<dyn Authorizer> {
        Arc::new(InstrumentedAuthorizer {
            type_: type_.to_string(),
            name: name.to_string(),
            delegate,
        })
    }
}

#[async_trait::async_trait]
impl Authorizer for InstrumentedAuthorizer {
    async fn authorize(&self, attrs: &Attributes) -> AuthorizeResult {
        let result = self.delegate.authorize(attrs).await;
        record_decision(&self.type_, &self.name, result.0);
        result
    }

    async fn rules_for(&self, user: &UserInfo, namespace: &str) -> UserRules {
        self.delegate.rules_for(user, namespace).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::builtin::{AlwaysAllow, AlwaysDeny};

    fn count(type_: &str, name: &str, decision: &str) -> f64 {
        DECISIONS
            .as_ref()
            .map(|m| m.with_label_values(&[type_, name, decision]).get())
            .unwrap_or(0.0)
    }

    #[tokio::test]
    async fn terminal_decisions_are_counted_by_type_and_name_and_no_opinion_is_not() {
        let allow =
            InstrumentedAuthorizer::wrap("AlwaysAllow", "unit-allow", Arc::new(AlwaysAllow));
        let deny = InstrumentedAuthorizer::wrap("AlwaysDeny", "unit-deny", Arc::new(AlwaysDeny));
        let attrs = Attributes::default();
        assert_eq!(allow.authorize(&attrs).await.0, Decision::Allow);
        assert_eq!(allow.authorize(&attrs).await.0, Decision::Allow);
        // AlwaysDeny has no opinion (upstream's behaviour): nothing is counted.
        assert_eq!(deny.authorize(&attrs).await.0, Decision::NoOpinion);
        assert_eq!(count("AlwaysAllow", "unit-allow", "allowed"), 2.0);
        assert_eq!(count("AlwaysDeny", "unit-deny", "denied"), 0.0);
        record_decision("Webhook", "unit-hook", Decision::Deny);
        assert_eq!(count("Webhook", "unit-hook", "denied"), 1.0);
        assert_eq!(name_for_mode("AlwaysAllow"), "alwaysallow");
    }
}
