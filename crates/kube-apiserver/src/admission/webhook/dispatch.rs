//! Calling the webhooks that select a request (upstream `webhook/generic`, `mutating` and
//! `validating` dispatchers): the selection (rules, namespace and object selectors, match
//! conditions), one call per webhook with its timeout, and the failure policy applied to
//! calls that fail; mutating webhooks run in order and patch the object, validating webhooks
//! run in parallel.

use std::sync::Arc;
use std::time::Instant;

use apiserver::admission::{self, Attributes, Operation};
use apiserver::registry::SharedStrategy;
use apiserver::registry::informer::Informer;
use apiserver::registry::rest::{GetOptions, RequestContext, RestStorage};
use apiserver::status::{ApiError, Status};
use serde_json::{Map, Value, json};

use super::client::{ClientError, Clients};
use super::conditions::{ConditionResult, evaluate_conditions};
use super::equivalent::Equivalents;
use super::hooks::{Hook, HookKind};
use super::metrics::{self, RejectionType};
use super::patch;
use super::review::{self, Gvkr, RequestFacts, Verdict};
use super::rules::RuleInput;
use crate::apis::workload::selector_matches;

/// A webhook selected for a request, with the resource it is called for.
#[derive(Clone, Debug)]
pub struct Invocation {
    /// The webhook.
    pub hook: Arc<Hook>,
    /// The group-version-kind-resource sent as `kind`/`resource`.
    pub matched: Gvkr,
}

/// Why a call did not produce an allowed answer.
#[derive(Debug)]
pub enum CallError {
    /// The webhook could not be called or answered nonsense (upstream `ErrCallingWebhook`):
    /// subject to the failure policy. `code` is the status code metrics report.
    Calling {
        /// The reason, after `failed calling webhook "<name>": `.
        reason: String,
        /// The status code of the failure.
        code: u16,
    },
    /// The webhook denied the request.
    Rejected(ApiError),
    /// Anything else (dry run unsupported, a patch that does not apply): always refused.
    Other(ApiError),
}

/// The state the dispatchers share: where webhooks are called and namespaces looked up.
pub struct Dispatcher {
    /// The clients.
    pub clients: Clients,
    /// Namespaces, for namespace selectors.
    pub namespaces: Option<Informer>,
    /// The namespace storage, read when the informer has not seen a namespace yet (upstream
    /// falls back to a live GET the same way).
    pub namespace_store: Option<Arc<dyn RestStorage>>,
    /// Served versions of the same resource, for `matchPolicy: Equivalent`.
    pub equivalents: Equivalents,
    /// The stored version and strategy of each resource with a store: fields a webhook's
    /// patch adds that the type does not declare are dropped, as upstream's decoding of the
    /// patched object drops them.
    pub strategies: std::collections::HashMap<(String, String), SharedStrategy>,
    /// The server's authorizer, for the `authorizer` variable of match conditions.
    pub authz: crate::auth::AuthzHandle,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher").finish_non_exhaustive()
    }
}

/// The requested group-version-kind-resource of `attrs`.
pub fn requested(attrs: &Attributes) -> Gvkr {
    Gvkr {
        group: attrs.kind.group.clone(),
        version: attrs.kind.version.clone(),
        kind: attrs.kind.kind.clone(),
        resource: attrs.resource.resource.clone(),
    }
}

fn labels_of(obj: Option<&Value>) -> Option<&Map<String, Value>> {
    obj?.pointer("/metadata/labels")?.as_object()
}

fn selector_is_empty(selector: &Value) -> bool {
    selector.is_null() || crate::apis::workload::selector_is_empty(selector)
}

/// Whether a selector is one the server can evaluate (upstream parses it; a stored selector
/// with an unknown operator is an internal error).
fn check_selector(selector: &Value) -> Result<(), ApiError> {
    let empty = Vec::new();
    let exprs = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    for expr in exprs {
        let op = expr
            .get("operator")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !matches!(op, "In" | "NotIn" | "Exists" | "DoesNotExist") {
            return Err(ApiError::internal(format!(
                "{op:?} is not a valid label selector operator"
            )));
        }
    }
    Ok(())
}

impl Dispatcher {
    /// Upstream `MatchNamespaceSelector`.
    async fn namespace_matches(&self, hook: &Hook, attrs: &Attributes) -> Result<bool, ApiError> {
        let is_namespace =
            attrs.resource.group.is_empty() && attrs.resource.resource == "namespaces";
        let namespace = if attrs.namespace.is_empty() && is_namespace {
            attrs.name.as_str()
        } else {
            attrs.namespace.as_str()
        };
        if attrs.namespace.is_empty() && !is_namespace {
            return Ok(true);
        }
        check_selector(&hook.namespace_selector)?;
        if selector_is_empty(&hook.namespace_selector) {
            return Ok(true);
        }
        let empty = Map::new();
        if is_namespace
            && attrs.subresource.is_empty()
            && matches!(attrs.operation, Operation::Create | Operation::Update)
        {
            let labels = labels_of(attrs.object.as_ref()).unwrap_or(&empty);
            return Ok(selector_matches(&hook.namespace_selector, labels));
        }
        let cached = self
            .namespaces
            .as_ref()
            .and_then(|informer| informer.get("", namespace));
        let ns = match cached {
            Some(ns) => ns,
            None => match &self.namespace_store {
                Some(store) => Arc::new(
                    store
                        .get(
                            &RequestContext::default(),
                            namespace,
                            &GetOptions::default(),
                        )
                        .await?,
                ),
                None => return Err(ApiError::not_found("", "namespaces", namespace)),
            },
        };
        let labels = labels_of(Some(&ns)).unwrap_or(&empty);
        Ok(selector_matches(&hook.namespace_selector, labels))
    }

    /// Upstream `MatchObjectSelector`: the object's or the old object's labels.
    fn object_matches(hook: &Hook, attrs: &Attributes) -> Result<bool, ApiError> {
        check_selector(&hook.object_selector)?;
        if selector_is_empty(&hook.object_selector) {
            return Ok(true);
        }
        let matches = |obj: Option<&Value>| {
            obj.filter(|o| o.is_object()).is_some_and(|o| {
                let empty = Map::new();
                let labels = labels_of(Some(o)).unwrap_or(&empty);
                selector_matches(&hook.object_selector, labels)
            })
        };
        Ok(matches(attrs.object.as_ref()) || matches(attrs.old_object.as_ref()))
    }

    /// Upstream `ShouldCallHook`: the invocation when `hook` selects the request.
    pub async fn should_call(
        &self,
        hook: &Arc<Hook>,
        attrs: &Attributes,
    ) -> Result<Option<Invocation>, ApiError> {
        let namespace_match = self.namespace_matches(hook, attrs).await;
        if matches!(namespace_match, Ok(false)) {
            return Ok(None);
        }
        let object_match = Self::object_matches(hook, attrs);
        if matches!(object_match, Ok(false)) {
            return Ok(None);
        }
        let input = RuleInput {
            operation: attrs.operation.as_str(),
            group: &attrs.resource.group,
            version: &attrs.resource.version,
            resource: &attrs.resource.resource,
            subresource: &attrs.subresource,
            namespace: &attrs.namespace,
        };
        let matched = if hook.rules.iter().any(|rule| rule.matches(&input)) {
            Some(requested(attrs))
        } else if hook.equivalent {
            self.equivalent_match(hook, attrs, &input)
        } else {
            None
        };
        let Some(matched) = matched else {
            return Ok(None);
        };
        namespace_match?;
        object_match?;
        let invocation = Invocation {
            hook: hook.clone(),
            matched,
        };
        if !hook.match_conditions.is_empty() {
            let requested = requested(attrs);
            let (object, old_object) = self.versioned(attrs, &invocation.matched);
            let request = Value::Object(review::admission_request(&facts(
                attrs,
                &invocation.matched,
                &requested,
                &object,
                &old_object,
            )));
            match evaluate_conditions(
                &hook.match_conditions,
                hook.fail_open,
                &object,
                &old_object,
                &request,
                &crate::admission::cel_authorizer::for_request(&self.authz, attrs),
            ) {
                ConditionResult::Match => {}
                ConditionResult::Skip(_) => return Ok(None),
                ConditionResult::Error(text) => {
                    tracing::warn!(webhook = %hook.name, error = %text, "failed evaluating match conditions, failing closed");
                    return Err(admission::forbidden(attrs, &text));
                }
            }
        }
        Ok(Some(invocation))
    }

    /// The first rule, in order, that selects another served version of the resource.
    fn equivalent_match(
        &self,
        hook: &Hook,
        attrs: &Attributes,
        input: &RuleInput<'_>,
    ) -> Option<Gvkr> {
        let alternatives = self.equivalents.alternatives(
            &attrs.resource.group,
            &attrs.resource.resource,
            &attrs.resource.version,
        );
        if alternatives.is_empty() {
            return None;
        }
        hook.rules.iter().find_map(|rule| {
            alternatives.iter().find_map(|(version, kind)| {
                let alternative = RuleInput { version, ..*input };
                rule.matches(&alternative).then(|| Gvkr {
                    group: attrs.resource.group.clone(),
                    version: version.clone(),
                    // A subresource keeps its own kind (autoscaling/v1 Scale).
                    kind: if attrs.subresource.is_empty() {
                        kind.clone()
                    } else {
                        attrs.kind.kind.clone()
                    },
                    resource: attrs.resource.resource.clone(),
                })
            })
        })
    }

    /// The object and old object in the version a webhook is called for, with their
    /// `apiVersion` and `kind`.
    pub fn versioned(&self, attrs: &Attributes, matched: &Gvkr) -> (Value, Value) {
        let convert = |obj: Option<&Value>| {
            let mut obj = obj.cloned().unwrap_or(Value::Null);
            if let Value::Object(map) = &mut obj
                && attrs.kind.kind == matched.kind
            {
                let api_version = if attrs.kind.group.is_empty() {
                    attrs.kind.version.clone()
                } else {
                    format!("{}/{}", attrs.kind.group, attrs.kind.version)
                };
                map.entry("apiVersion")
                    .or_insert(Value::String(api_version));
                map.entry("kind")
                    .or_insert(Value::String(attrs.kind.kind.clone()));
            }
            if attrs.subresource.is_empty() {
                self.equivalents.convert(
                    &attrs.resource.group,
                    &attrs.resource.resource,
                    &attrs.resource.version,
                    &matched.version,
                    obj,
                )
            } else {
                obj
            }
        };
        (
            convert(attrs.object.as_ref()),
            convert(attrs.old_object.as_ref()),
        )
    }

    /// A patched object of the webhook's version converted back to the request's version,
    /// without the fields its type does not declare.
    pub fn unversioned(&self, attrs: &Attributes, matched: &Gvkr, object: Value) -> Value {
        if !attrs.subresource.is_empty() {
            return object;
        }
        let mut object = self.equivalents.convert(
            &attrs.resource.group,
            &attrs.resource.resource,
            &matched.version,
            &attrs.resource.version,
            object,
        );
        if let Some(strategy) = self.strategies.get(&(
            attrs.resource.group.clone(),
            attrs.resource.resource.clone(),
        )) && strategy.info().version == attrs.resource.version
        {
            strategy.drop_unknown_fields(&mut object);
        }
        object
    }

    /// Calls the webhook of `invocation` about `attrs`, with the object and old object in the
    /// webhook's version.
    pub async fn call(
        &self,
        invocation: &Invocation,
        attrs: &Attributes,
        object: &Value,
        old_object: &Value,
    ) -> Result<Verdict, CallError> {
        let hook = &invocation.hook;
        let mutating = hook.kind == HookKind::Mutating;
        if attrs.dry_run {
            match hook.side_effects.as_deref() {
                None => {
                    return Err(CallError::Calling {
                        reason: "Webhook SideEffects is nil".into(),
                        code: 400,
                    });
                }
                Some("None" | "NoneOnDryRun") => {}
                Some(_) => {
                    return Err(CallError::Other(ApiError::bad_request(format!(
                        "admission webhook {:?} does not support dry run",
                        hook.name
                    ))));
                }
            }
        }
        let Some(version) = review::review_version(&hook.review_versions) else {
            return Err(CallError::Calling {
                reason: "could not create admission objects: webhook does not accept known AdmissionReview versions (v1, v1beta1)".into(),
                code: 400,
            });
        };
        let client_config = hook.client.as_ref().map_err(|e| CallError::Calling {
            reason: format!("could not get REST client: {e}"),
            code: 500,
        })?;
        let client = match self.clients.client(client_config, hook.timeout).await {
            Ok(client) => client,
            Err(ClientError::Resolve { url, reason }) => {
                return Err(CallError::Calling {
                    reason: format!("failed to call webhook: Post {url:?}: {reason}"),
                    code: 503,
                });
            }
            Err(ClientError::Config(e)) => {
                return Err(CallError::Calling {
                    reason: format!("could not get REST client: {e}"),
                    code: 500,
                });
            }
        };
        let uid = uuid::Uuid::new_v4().to_string();
        let requested = requested(attrs);
        let body = review::review(
            version,
            &uid,
            &facts(attrs, &invocation.matched, &requested, object, old_object),
        );
        let answer = match tokio::time::timeout(hook.timeout, client.post_json(&body)).await {
            Err(_) => {
                return Err(CallError::Calling {
                    reason: format!(
                        "failed to call webhook: Post {:?}: context deadline exceeded",
                        client.url()
                    ),
                    code: 503,
                });
            }
            Ok(Err(e)) => {
                let code = match &e {
                    apiserver::util::webhook::WebhookError::Status { code, .. } => *code,
                    _ => 503,
                };
                return Err(CallError::Calling {
                    reason: format!("failed to call webhook: {e}"),
                    code,
                });
            }
            Ok(Ok(answer)) => answer,
        };
        let verdict = match review::verify(version, &uid, mutating, &answer) {
            Err(decode) => {
                return Err(CallError::Calling {
                    reason: format!("failed to call webhook: {}", decode.0),
                    code: 503,
                });
            }
            Ok(Err(invalid)) => {
                return Err(CallError::Calling {
                    reason: format!("received invalid webhook response: {}", invalid.0),
                    code: 503,
                });
            }
            Ok(Ok(verdict)) => verdict,
        };
        for (key, value) in &verdict.audit_annotations {
            attrs.add_annotation(&format!("{}/{key}", hook.name), value);
        }
        for warning in &verdict.warnings {
            attrs.warn(warning);
        }
        if !verdict.allowed {
            return Err(CallError::Rejected(denied(
                &hook.name,
                verdict.status.clone(),
            )));
        }
        Ok(verdict)
    }
}

/// The AdmissionRequest facts of `attrs` for a webhook called for `matched`.
fn facts<'a>(
    attrs: &'a Attributes,
    matched: &'a Gvkr,
    requested: &'a Gvkr,
    object: &'a Value,
    old_object: &'a Value,
) -> RequestFacts<'a> {
    static NULL: Value = Value::Null;
    RequestFacts {
        matched,
        requested,
        subresource: &attrs.subresource,
        name: &attrs.name,
        namespace: &attrs.namespace,
        operation: attrs.operation.as_str(),
        user: &attrs.user,
        object,
        old_object,
        options: attrs.options.as_ref().unwrap_or(&NULL),
        dry_run: attrs.dry_run,
    }
}

/// Upstream `ToStatusErr`: the webhook's status with at least 400, `Failure`, and the message
/// `admission webhook "<name>" denied the request: <message>`.
pub fn denied(name: &str, status: Option<Value>) -> ApiError {
    let mut result: Status = status
        .and_then(|s| serde_json::from_value(s).ok())
        .unwrap_or_default();
    result.kind = "Status".into();
    result.api_version = "v1".into();
    if result.code < 400 {
        result.code = 400;
    }
    if result.status.is_empty() || result.status == "Success" {
        result.status = "Failure".into();
    }
    let denied_by = format!("admission webhook {name:?} denied the request");
    result.message = if !result.message.is_empty() {
        format!("{denied_by}: {}", result.message)
    } else if !result.reason.is_empty() {
        format!("{denied_by}: {}", result.reason)
    } else {
        format!("{denied_by} without explanation")
    };
    ApiError(Box::new(result))
}

/// Upstream's status for a call that failed under `failurePolicy: Fail`.
pub fn failed_closed(name: &str, reason: &str) -> ApiError {
    ApiError::internal(format!("failed calling webhook {name:?}: {reason}"))
}

/// Applies a mutating webhook's verdict to `object`: whether the patch changed it.
pub fn apply_patch(
    name: &str,
    verdict: &Verdict,
    object: &mut Option<Value>,
) -> Result<bool, CallError> {
    if verdict.patch.is_empty() {
        return Ok(false);
    }
    let ops = patch::decode(&verdict.patch).map_err(|e| CallError::Calling {
        reason: format!("received undecodable patch in webhook response: {e}"),
        code: 503,
    })?;
    if ops.0.is_empty() {
        return Ok(false);
    }
    let Some(current) = object.as_mut() else {
        return Err(CallError::Other(ApiError::internal(format!(
            "admission webhook {name:?} attempted to modify the object, which is not supported for this operation"
        ))));
    };
    if verdict.patch_type != "JSONPatch" {
        return Err(CallError::Calling {
            reason: format!("unsupported patch type {:?}", verdict.patch_type),
            code: 400,
        });
    }
    let mut patched = current.clone();
    patch::apply(&ops, &mut patched).map_err(|e| CallError::Other(ApiError::internal(e)))?;
    if !patched.is_object() {
        return Err(CallError::Other(ApiError::internal(
            "Object 'Kind' is missing in the patched object",
        )));
    }
    let changed = patched != *current;
    *current = patched;
    Ok(changed)
}

/// The status code and type a call result is recorded with.
pub fn record(
    hook: &Hook,
    kind: &str,
    operation: &str,
    started: Instant,
    result: &Result<Verdict, CallError>,
) {
    let elapsed = started.elapsed();
    match result {
        Ok(_) => metrics::observe(&hook.name, kind, operation, elapsed, false, 200),
        Err(CallError::Calling { code, .. }) => {
            let rejected = !hook.fail_open;
            if rejected {
                metrics::rejection(
                    &hook.name,
                    kind,
                    operation,
                    RejectionType::CallingWebhook,
                    *code,
                );
            }
            metrics::observe(&hook.name, kind, operation, elapsed, rejected, *code);
        }
        Err(CallError::Rejected(status)) => {
            let code = status.code().as_u16();
            metrics::rejection(&hook.name, kind, operation, RejectionType::Denied, code);
            metrics::observe(&hook.name, kind, operation, elapsed, true, code);
        }
        Err(CallError::Other(_)) => {
            metrics::rejection(
                &hook.name,
                kind,
                operation,
                RejectionType::ApiserverInternal,
                0,
            );
            metrics::observe(&hook.name, kind, operation, elapsed, true, 0);
        }
    }
}

/// The value of the `patch.webhook.admission.k8s.io/round_N_index_M` audit annotation of an
/// applied JSON patch (fields in upstream's order; the patch's operations with sorted keys, as
/// Go re-encodes them).
pub fn patch_annotation(configuration: &str, webhook: &str, verdict: &Verdict) -> Option<String> {
    if verdict.patch.is_empty() || verdict.patch_type != "JSONPatch" {
        return None;
    }
    let patch: Value = serde_json::from_slice(&verdict.patch).ok()?;
    Some(format!(
        "{{\"configuration\":{},\"webhook\":{},\"patch\":{},\"patchType\":\"JSONPatch\"}}",
        Value::String(configuration.to_string()),
        Value::String(webhook.to_string()),
        patch
    ))
}

/// The value of the `mutation.webhook.admission.k8s.io/round_N_index_M` audit annotation.
pub fn mutation_annotation(configuration: &str, webhook: &str, mutated: bool) -> String {
    json!({"configuration": configuration, "webhook": webhook, "mutated": mutated}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denials_read_like_upstream() {
        let e = denied(
            "deny.example.com",
            Some(json!({"code": 403, "message": "no configmaps here", "reason": "Forbidden"})),
        );
        assert_eq!(e.code().as_u16(), 403);
        assert_eq!(
            e.0.message,
            "admission webhook \"deny.example.com\" denied the request: no configmaps here"
        );
        assert_eq!(e.0.status, "Failure");
        let bare = denied("d.example.com", None);
        assert_eq!(bare.code().as_u16(), 400);
        assert_eq!(
            bare.0.message,
            "admission webhook \"d.example.com\" denied the request without explanation"
        );
        let reason_only = denied(
            "d.example.com",
            Some(json!({"code": 200, "reason": "NotAllowed"})),
        );
        assert_eq!(reason_only.code().as_u16(), 400);
        assert_eq!(
            reason_only.0.message,
            "admission webhook \"d.example.com\" denied the request: NotAllowed"
        );
    }

    #[test]
    fn patches_apply_and_bad_ones_fail_as_upstream() {
        let mut object = Some(json!({"metadata": {"name": "cm"}}));
        let verdict = |patch: &str| Verdict {
            allowed: true,
            patch: patch.as_bytes().to_vec(),
            patch_type: "JSONPatch".into(),
            ..Default::default()
        };
        assert!(
            apply_patch(
                "m",
                &verdict(r#"[{"op":"add","path":"/metadata/labels","value":{"a":"b"}}]"#),
                &mut object
            )
            .unwrap()
        );
        assert_eq!(object.as_ref().unwrap()["metadata"]["labels"]["a"], "b");
        assert!(
            !apply_patch(
                "m",
                &verdict(r#"[{"op":"replace","path":"/metadata/labels/a","value":"b"}]"#),
                &mut object
            )
            .unwrap()
        );
        let Err(CallError::Other(e)) = apply_patch(
            "m",
            &verdict(r#"[{"op":"replace","path":"/metadata/labels/missing","value":"x"}]"#),
            &mut object,
        ) else {
            panic!("a patch error was expected");
        };
        assert_eq!(
            e.0.message,
            "Internal error occurred: replace operation does not apply: doc is missing key: /metadata/labels/missing: missing value"
        );
        assert!(matches!(
            apply_patch("m", &verdict("not json"), &mut object),
            Err(CallError::Calling { .. })
        ));
        let mut none = None;
        assert!(matches!(
            apply_patch(
                "m",
                &verdict(r#"[{"op":"add","path":"/x","value":1}]"#),
                &mut none
            ),
            Err(CallError::Other(_))
        ));
    }
}
