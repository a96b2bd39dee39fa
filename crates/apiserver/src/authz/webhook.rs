//! Webhook authorization (upstream `plugin/pkg/authorizer/webhook`): a
//! `SubjectAccessReview` (`authorization.k8s.io/v1` or `v1beta1`) is POSTed to a remote
//! service and its `status` decides: `allowed` allows, `denied` denies, neither is no
//! opinion; the reason is passed through. Answers are cached by the review's spec (allowed
//! ones for the authorized TTL, the others for the unauthorized TTL). A failed call gives
//! the configured decision on error (no opinion with the legacy flags) and the error.
//! Match conditions (CEL on `request`, the v1 review's spec) decide whether the webhook is
//! asked at all.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Attributes, AuthorizeResult, Authorizer, AuthzError, Decision};
use crate::util::cel::Expression;
use crate::util::webhook::WebhookClient;

/// The SubjectAccessReview version a webhook speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubjectAccessReviewVersion {
    /// `authorization.k8s.io/v1` (the default).
    V1,
    /// `authorization.k8s.io/v1beta1`.
    V1beta1,
}

impl std::str::FromStr for SubjectAccessReviewVersion {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "v1" => Ok(SubjectAccessReviewVersion::V1),
            "v1beta1" => Ok(SubjectAccessReviewVersion::V1beta1),
            other => Err(format!(
                "unsupported webhook authorizer version {other:?}, supported versions are \"v1\", \"v1beta1\""
            )),
        }
    }
}

/// The default of `--authorization-webhook-cache-authorized-ttl`.
pub const DEFAULT_AUTHORIZED_TTL: Duration = Duration::from_secs(300);
/// The default of `--authorization-webhook-cache-unauthorized-ttl`.
pub const DEFAULT_UNAUTHORIZED_TTL: Duration = Duration::from_secs(30);

/// Entries the answer cache holds at most (upstream's LRU size).
const CACHE_SIZE: usize = 8192;

struct Cached {
    status: Value,
    expires: Instant,
}

/// How a webhook authorizer is set up.
pub struct WebhookAuthorizerConfig {
    /// The endpoint.
    pub client: WebhookClient,
    /// The review version.
    pub version: SubjectAccessReviewVersion,
    /// How long allowed answers are cached (zero: not cached).
    pub authorized_ttl: Duration,
    /// How long other answers are cached (zero: not cached).
    pub unauthorized_ttl: Duration,
    /// The decision when the webhook cannot be asked (`failurePolicy`).
    pub decision_on_error: Decision,
    /// CEL conditions on `request`; all must be true for the webhook to be asked.
    pub match_conditions: Vec<Expression>,
    /// The authorizer's name (structured configuration), for logs.
    pub name: String,
}

/// Authorizes by asking a SubjectAccessReview webhook.
pub struct WebhookAuthorizer {
    config: WebhookAuthorizerConfig,
    cache: Mutex<HashMap<String, Cached>>,
}

impl WebhookAuthorizer {
    /// A webhook authorizer for `config`.
    pub fn new(config: WebhookAuthorizerConfig) -> Self {
        WebhookAuthorizer {
            config,
            cache: Mutex::new(HashMap::new()),
        }
    }

    fn cached(&self, key: &str) -> Option<Value> {
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .get(key)
            .filter(|c| c.expires > Instant::now())
            .map(|c| c.status.clone())
    }

    fn remember(&self, key: String, status: &Value, allowed: bool) {
        let ttl = if allowed {
            self.config.authorized_ttl
        } else {
            self.config.unauthorized_ttl
        };
        if ttl.is_zero() {
            return;
        }
        let now = Instant::now();
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= CACHE_SIZE {
            cache.retain(|_, c| c.expires > now);
            if cache.len() >= CACHE_SIZE {
                cache.clear();
            }
        }
        cache.insert(
            key,
            Cached {
                status: status.clone(),
                expires: now + ttl,
            },
        );
    }

    /// Whether every match condition holds for `spec` (`Err` when one fails to evaluate
    /// and none is false).
    fn matches(&self, spec: &Value) -> Result<bool, AuthzError> {
        let mut error = None;
        for condition in &self.config.match_conditions {
            match condition.eval(&[("request", spec)]) {
                Ok(kube_cel::cel::Value::Bool(true)) => {}
                Ok(kube_cel::cel::Value::Bool(false)) => return Ok(false),
                Ok(_) => {
                    error.get_or_insert_with(|| {
                        AuthzError::Other(format!(
                            "matchCondition '{}' must return a boolean",
                            condition.text()
                        ))
                    });
                }
                Err(e) => {
                    error.get_or_insert_with(|| {
                        AuthzError::Other(format!(
                            "matchCondition '{}' evaluation failed: {e}",
                            condition.text()
                        ))
                    });
                }
            }
        }
        match error {
            Some(e) => Err(e),
            None => Ok(true),
        }
    }
}

/// The review spec (v1 field names) for `attrs`.
pub fn review_spec(attrs: &Attributes) -> Value {
    let mut spec = serde_json::Map::new();
    if let Some(user) = &attrs.user {
        if !user.name.is_empty() {
            spec.insert("user".into(), json!(user.name));
        }
        if !user.groups.is_empty() {
            spec.insert("groups".into(), json!(user.groups));
        }
        if !user.extra.is_empty() {
            spec.insert("extra".into(), json!(user.extra));
        }
        if !user.uid.is_empty() {
            spec.insert("uid".into(), json!(user.uid));
        }
    }
    if attrs.resource_request {
        let mut r = serde_json::Map::new();
        for (k, v) in [
            ("namespace", &attrs.namespace),
            ("verb", &attrs.verb),
            ("group", &attrs.api_group),
            ("version", &attrs.api_version),
            ("resource", &attrs.resource),
            ("subresource", &attrs.subresource),
            ("name", &attrs.name),
        ] {
            if !v.is_empty() {
                r.insert(k.into(), json!(v));
            }
        }
        spec.insert("resourceAttributes".into(), Value::Object(r));
    } else {
        let mut n = serde_json::Map::new();
        if !attrs.path.is_empty() {
            n.insert("path".into(), json!(attrs.path));
        }
        if !attrs.verb.is_empty() {
            n.insert("verb".into(), json!(attrs.verb));
        }
        spec.insert("nonResourceAttributes".into(), Value::Object(n));
    }
    Value::Object(spec)
}

/// The review body of `spec` in `version` (v1beta1 calls the groups `group`).
fn review_body(spec: &Value, version: SubjectAccessReviewVersion) -> Value {
    let (api_version, spec) = match version {
        SubjectAccessReviewVersion::V1 => ("authorization.k8s.io/v1", spec.clone()),
        SubjectAccessReviewVersion::V1beta1 => {
            let mut spec = spec.clone();
            if let Some(map) = spec.as_object_mut()
                && let Some(groups) = map.remove("groups")
            {
                map.insert("group".into(), groups);
            }
            ("authorization.k8s.io/v1beta1", spec)
        }
    };
    json!({
        "apiVersion": api_version,
        "kind": "SubjectAccessReview",
        "metadata": { "creationTimestamp": null },
        "spec": spec,
        "status": { "allowed": false },
    })
}

/// The decision of a review status.
fn decide(status: &Value) -> AuthorizeResult {
    let flag = |k: &str| status.get(k).and_then(Value::as_bool).unwrap_or(false);
    let reason = status
        .get("reason")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    match (flag("allowed"), flag("denied")) {
        (true, true) => (
            Decision::Deny,
            reason,
            Some(AuthzError::Other(
                "webhook subject access review returned both allow and deny response".into(),
            )),
        ),
        (_, true) => (Decision::Deny, reason, None),
        (true, _) => (Decision::Allow, reason, None),
        _ => (Decision::NoOpinion, reason, None),
    }
}

#[async_trait::async_trait]
impl Authorizer for WebhookAuthorizer {
    async fn authorize(&self, attrs: &Attributes) -> AuthorizeResult {
        let spec = review_spec(attrs);
        match self.matches(&spec) {
            Err(e) => return (self.config.decision_on_error, String::new(), Some(e)),
            Ok(false) => return (Decision::NoOpinion, String::new(), None),
            Ok(true) => {}
        }
        let key = spec.to_string();
        let status = match self.cached(&key) {
            Some(status) => status,
            None => {
                let body = review_body(&spec, self.config.version);
                match self.config.client.post_json(&body).await {
                    Ok(result) => {
                        let status = result.get("status").cloned().unwrap_or(Value::Null);
                        let allowed = status
                            .get("allowed")
                            .and_then(Value::as_bool)
                            .unwrap_or(false);
                        self.remember(key, &status, allowed);
                        status
                    }
                    Err(e) => {
                        tracing::error!("Failed to make webhook authorizer request: {e}");
                        return (
                            self.config.decision_on_error,
                            String::new(),
                            Some(AuthzError::Other(e.to_string())),
                        );
                    }
                }
            }
        };
        decide(&status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::UserInfo;
    use std::sync::Arc;

    fn attrs() -> Attributes {
        Attributes {
            user: Some(Arc::new(UserInfo {
                name: "jane".into(),
                groups: vec!["dev".into()],
                ..Default::default()
            })),
            verb: "list".into(),
            namespace: "ns".into(),
            api_version: "v1".into(),
            resource: "pods".into(),
            resource_request: true,
            ..Default::default()
        }
    }

    #[test]
    fn spec_and_versions() {
        let spec = review_spec(&attrs());
        assert_eq!(
            spec,
            json!({"user": "jane", "groups": ["dev"], "resourceAttributes": {"namespace": "ns", "verb": "list", "version": "v1", "resource": "pods"}})
        );
        let beta = review_body(&spec, SubjectAccessReviewVersion::V1beta1);
        assert_eq!(beta["spec"]["group"], json!(["dev"]));
        assert!(beta["spec"].get("groups").is_none());
        let non_resource = review_spec(&Attributes {
            verb: "get".into(),
            path: "/healthz".into(),
            ..Default::default()
        });
        assert_eq!(
            non_resource,
            json!({"nonResourceAttributes": {"path": "/healthz", "verb": "get"}})
        );
    }

    #[test]
    fn decisions() {
        assert_eq!(
            decide(&json!({"allowed": true, "reason": "ok"})),
            (Decision::Allow, "ok".into(), None)
        );
        assert_eq!(
            decide(&json!({"allowed": false, "denied": true, "reason": "no"})),
            (Decision::Deny, "no".into(), None)
        );
        assert_eq!(decide(&json!({"allowed": false})).0, Decision::NoOpinion);
        let (d, _, e) = decide(&json!({"allowed": true, "denied": true}));
        assert_eq!(d, Decision::Deny);
        assert!(e.is_some());
    }

    #[test]
    fn versions_parse() {
        assert!("v1beta1".parse::<SubjectAccessReviewVersion>().is_ok());
        assert!("v2".parse::<SubjectAccessReviewVersion>().is_err());
    }
}
