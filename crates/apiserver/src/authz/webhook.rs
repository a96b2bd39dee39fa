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

use super::webhook_metrics;
use super::{Attributes, AuthorizeResult, Authorizer, AuthzError, Decision};
use crate::storage::selection::labels::Operator;
use crate::storage::{FieldSelector, LabelSelector};
use crate::util::cel::Expression;
use crate::util::webhook::{WebhookClient, WebhookError};

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
    /// and none is false); evaluations are recorded in the match condition metrics when
    /// there are conditions, as upstream's matcher does.
    fn matches(&self, spec: &Value) -> Result<bool, AuthzError> {
        if self.config.match_conditions.is_empty() {
            return Ok(true);
        }
        let started = Instant::now();
        let result = self.evaluate_match_conditions(spec);
        let (errored, excluded) = match &result {
            (_, Err(_)) => (true, false),
            (had_error, Ok(matched)) => (*had_error, !matched),
        };
        webhook_metrics::match_conditions_evaluated(
            &self.config.name,
            started.elapsed(),
            errored,
            excluded,
        );
        result.1
    }

    /// The match conditions' verdict, and whether one failed to evaluate before a false one
    /// ended the evaluation.
    fn evaluate_match_conditions(&self, spec: &Value) -> (bool, Result<bool, AuthzError>) {
        let mut error = None;
        for condition in &self.config.match_conditions {
            match condition.eval(&[("request", spec)]) {
                Ok(kube_cel::cel::Value::Bool(true)) => {}
                Ok(kube_cel::cel::Value::Bool(false)) => return (error.is_some(), Ok(false)),
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
            Some(e) => (true, Err(e)),
            None => (false, Ok(true)),
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
        if let Some(requirements) = field_requirements(&attrs.field_selector) {
            r.insert(
                "fieldSelector".into(),
                json!({ "requirements": requirements }),
            );
        }
        if let Some(requirements) = label_requirements(&attrs.label_selector) {
            r.insert(
                "labelSelector".into(),
                json!({ "requirements": requirements }),
            );
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

/// The field selector's requirements as the review carries them (`=`/`==` as `In`, `!=` as
/// `NotIn`, one value each); `None` when there are none or the selector does not parse
/// (selectors only narrow a request, so what parses is still worth sending).
fn field_requirements(selector: &str) -> Option<Vec<Value>> {
    if selector.is_empty() {
        return None;
    }
    let parsed = FieldSelector::parse(selector).ok()?;
    let requirements: Vec<Value> = parsed
        .requirements()
        .iter()
        .map(|r| {
            json!({
                "key": r.field,
                "operator": if r.not_equal { "NotIn" } else { "In" },
                "values": [r.value],
            })
        })
        .collect();
    (!requirements.is_empty()).then_some(requirements)
}

/// The label selector's requirements as the review carries them (`=`/`==` as `In`, `!=` as
/// `NotIn`; `>` and `<` have no equivalent and are left out, as upstream does).
fn label_requirements(selector: &str) -> Option<Vec<Value>> {
    if selector.is_empty() {
        return None;
    }
    let parsed = LabelSelector::parse(selector).ok()?;
    let requirements: Vec<Value> = parsed
        .requirements()
        .iter()
        .filter_map(|r| {
            let operator = match r.operator {
                Operator::In | Operator::Equals | Operator::DoubleEquals => "In",
                Operator::NotIn | Operator::NotEquals => "NotIn",
                Operator::Exists => "Exists",
                Operator::DoesNotExist => "DoesNotExist",
                Operator::GreaterThan | Operator::LessThan => return None,
            };
            let mut requirement = json!({ "key": r.key, "operator": operator });
            if !r.values.is_empty() {
                requirement["values"] = json!(r.values);
            }
            Some(requirement)
        })
        .collect();
    (!requirements.is_empty()).then_some(requirements)
}

/// Upstream caches a review only when the attributes the client controls are small
/// (`shouldCache`: under 10,000 bytes).
fn should_cache(attrs: &Attributes) -> bool {
    let size = attrs.namespace.len()
        + attrs.verb.len()
        + attrs.api_group.len()
        + attrs.api_version.len()
        + attrs.resource.len()
        + attrs.subresource.len()
        + attrs.name.len()
        + attrs.path.len()
        + attrs.label_selector.len()
        + attrs.field_selector.len();
    size < 10_000
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
    /// A webhook's rules cannot be listed (upstream's `RulesFor`): always incomplete.
    async fn rules_for(
        &self,
        _user: &crate::request::UserInfo,
        _namespace: &str,
    ) -> crate::authz::rules::UserRules {
        crate::authz::rules::UserRules::unsupported(
            "webhook authorizer does not support user rule resolution",
        )
    }

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
                let started = Instant::now();
                let answer = self.config.client.post_json(&body).await;
                let result = match &answer {
                    Ok(_) => "success",
                    Err(WebhookError::Timeout(..)) => "timeout",
                    Err(WebhookError::Status { code: 504, .. }) => "timeout",
                    Err(_) => "error",
                };
                webhook_metrics::observe(&self.config.name, result, started.elapsed());
                match answer {
                    Ok(result) => {
                        let status = result.get("status").cloned().unwrap_or(Value::Null);
                        let allowed = status
                            .get("allowed")
                            .and_then(Value::as_bool)
                            .unwrap_or(false);
                        if should_cache(attrs) {
                            self.remember(key, &status, allowed);
                        }
                        status
                    }
                    Err(e) => {
                        tracing::error!("Failed to make webhook authorizer request: {e}");
                        if self.config.decision_on_error == Decision::NoOpinion {
                            webhook_metrics::fail_open(&self.config.name, result);
                        }
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
    fn selectors_become_requirements() {
        let spec = review_spec(&Attributes {
            field_selector: "metadata.name=a,spec.nodeName!=n".into(),
            label_selector: "app in (x,y),tier,env!=prod,n>3".into(),
            ..attrs()
        });
        let ra = &spec["resourceAttributes"];
        assert_eq!(
            ra["fieldSelector"],
            json!({"requirements": [
                {"key": "metadata.name", "operator": "In", "values": ["a"]},
                {"key": "spec.nodeName", "operator": "NotIn", "values": ["n"]},
            ]})
        );
        let labels = ra["labelSelector"]["requirements"].as_array().unwrap();
        assert_eq!(labels.len(), 3, "{labels:?}");
        assert!(labels.contains(&json!({"key": "app", "operator": "In", "values": ["x", "y"]})));
        assert!(labels.contains(&json!({"key": "tier", "operator": "Exists"})));
        assert!(labels.contains(&json!({"key": "env", "operator": "NotIn", "values": ["prod"]})));
        assert!(
            review_spec(&attrs())["resourceAttributes"]
                .get("fieldSelector")
                .is_none()
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
