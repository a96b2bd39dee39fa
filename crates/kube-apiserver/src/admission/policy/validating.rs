//! The ValidatingAdmissionPolicy plugin (upstream `policy/validating`): every binding of every
//! policy that matches the request is evaluated for each of its params; failed validations
//! deny, warn or audit as the binding's `validationActions` say; audit annotations are
//! published as `<policy>/<key>`.

use std::collections::BTreeMap;
use std::sync::Arc;

use apiserver::admission::{Attributes, Operation, Plugin, forbidden};
use apiserver::status::{ApiError, StatusCause};
use http::StatusCode;
use serde_json::{Value, json};

use super::compiled::{Action, AnnotationAction, CompiledPolicy, FailurePolicy};
use super::dispatch::{
    Lookups, Objects, is_excluded, namespace_variable, request_of, request_variable, variables,
};
use super::metrics;
use super::source::PolicySource;
use crate::apis::json::{array_at, get, str_at};

/// The plugin's name.
pub const NAME: &str = "ValidatingAdmissionPolicy";

/// The audit annotation of validations failed with the `Audit` action.
const VALIDATION_FAILURE_ANNOTATION: &str = "validation.policy.admission.k8s.io/validation_failure";

/// Upstream's limit on one audit annotation value.
const MAX_AUDIT_ANNOTATION_VALUE: usize = 10 * 1024;

/// The plugin.
pub struct ValidatingPolicies {
    source: PolicySource,
    lookups: Lookups,
}

impl ValidatingPolicies {
    /// A plugin over the given policies.
    pub fn new(source: PolicySource, lookups: Lookups) -> Self {
        ValidatingPolicies { source, lookups }
    }
}

/// A denial on its way to the response.
struct Denied {
    policy: String,
    binding: Option<String>,
    message: String,
    reason: Option<String>,
}

/// Upstream `reasonToCode`.
fn reason_to_code(reason: &str) -> StatusCode {
    match reason {
        "Forbidden" => StatusCode::FORBIDDEN,
        "Unauthorized" => StatusCode::UNAUTHORIZED,
        "RequestEntityTooLarge" => StatusCode::PAYLOAD_TOO_LARGE,
        _ => StatusCode::UNPROCESSABLE_ENTITY,
    }
}

fn name_of(obj: &Value) -> String {
    str_at(obj, "metadata.name").unwrap_or_default().to_string()
}

impl ValidatingPolicies {
    fn config_error(
        policy: &CompiledPolicy,
        binding: Option<&Value>,
        err: &str,
        denied: &mut Vec<Denied>,
    ) {
        if policy.failure_policy == FailurePolicy::Ignore {
            return;
        }
        let message = match binding {
            None => format!("failed to configure policy: {err}"),
            Some(_) => format!("failed to configure binding: {err}"),
        };
        denied.push(Denied {
            policy: policy.name.clone(),
            binding: binding.map(name_of),
            message,
            reason: None,
        });
    }

    async fn evaluate(&self, attrs: &Attributes) -> Vec<Denied> {
        let mut denied = Vec::new();
        let req = request_of(attrs);
        let namespace = self.lookups.namespace(attrs);
        let namespace_value = namespace_variable(namespace.as_deref());
        let objects = Objects::new(attrs.object.as_ref(), attrs.old_object.as_ref())
            .with_authorizer(self.lookups.authorizer(attrs));
        for (policy, bindings) in self.source.hooks() {
            let constraints = get(&policy.object, "spec.matchConstraints")
                .cloned()
                .unwrap_or(Value::Null);
            let Some(version) = self
                .lookups
                .matches(&constraints, &req, namespace.as_deref())
            else {
                continue;
            };
            let converted = self
                .lookups
                .objects_in(attrs, &version, &objects.authorizer);
            let objects = converted.as_ref().unwrap_or(&objects);
            let param_source = match self.lookups.param_source(&policy) {
                Ok(s) => s,
                Err(e) => {
                    Self::config_error(&policy, None, &e, &mut denied);
                    continue;
                }
            };
            let request = super::cel::from_json(&request_variable(attrs, &version));
            let mut annotations: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for binding in &bindings {
                if let Some(mr) = get(binding, "spec.matchResources").filter(|m| m.is_object())
                    && self
                        .lookups
                        .matches(mr, &req, namespace.as_deref())
                        .is_none()
                {
                    continue;
                }
                let params = match self
                    .lookups
                    .params(&policy, param_source.as_ref(), binding, attrs)
                    .await
                {
                    Ok(p) => p,
                    Err(e) => {
                        Self::config_error(&policy, Some(binding), &e, &mut denied);
                        continue;
                    }
                };
                let binding_name = name_of(binding);
                let actions: Vec<&str> = array_at(binding, "spec.validationActions")
                    .iter()
                    .filter_map(Value::as_str)
                    .collect();
                for param in params {
                    let mut vars = variables(objects, &request, param.as_deref(), &namespace_value);
                    let started = std::time::Instant::now();
                    let result = policy.validate(&mut vars);
                    let elapsed = started.elapsed();
                    for decision in &result.decisions {
                        if decision.action == Action::Admit {
                            if decision.eval_error {
                                metrics::observe(
                                    &policy.name,
                                    &binding_name,
                                    "allow",
                                    "invalid_error",
                                    elapsed,
                                );
                            } else {
                                metrics::observe(
                                    &policy.name,
                                    &binding_name,
                                    "allow",
                                    "no_error",
                                    elapsed,
                                );
                            }
                            continue;
                        }
                        let error_type = if decision.eval_error {
                            "invalid_error"
                        } else {
                            "no_error"
                        };
                        for action in &actions {
                            match *action {
                                "Deny" => {
                                    metrics::observe(
                                        &policy.name,
                                        &binding_name,
                                        "deny",
                                        error_type,
                                        elapsed,
                                    );
                                    denied.push(Denied {
                                        policy: policy.name.clone(),
                                        binding: Some(binding_name.clone()),
                                        message: decision.message.clone(),
                                        reason: decision.reason.clone(),
                                    });
                                }
                                "Audit" => {
                                    metrics::observe(
                                        &policy.name,
                                        &binding_name,
                                        "audit",
                                        error_type,
                                        elapsed,
                                    );
                                    let value = json!([{
                                        "message": decision.message,
                                        "policy": policy.name,
                                        "binding": binding_name,
                                        "expressionIndex": decision.index,
                                        "validationActions": actions,
                                    }]);
                                    attrs.add_annotation(
                                        VALIDATION_FAILURE_ANNOTATION,
                                        &value.to_string(),
                                    );
                                }
                                "Warn" => {
                                    metrics::observe(
                                        &policy.name,
                                        &binding_name,
                                        "warn",
                                        error_type,
                                        elapsed,
                                    );
                                    attrs.warn(&format!(
                                        "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {}",
                                        policy.name, binding_name, decision.message
                                    ));
                                }
                                _ => {}
                            }
                        }
                    }
                    for (key, action) in result.annotations {
                        match action {
                            AnnotationAction::Publish(mut value) => {
                                if value.len() > MAX_AUDIT_ANNOTATION_VALUE {
                                    let mut cut = MAX_AUDIT_ANNOTATION_VALUE;
                                    while !value.is_char_boundary(cut) {
                                        cut -= 1;
                                    }
                                    value.truncate(cut);
                                }
                                let values = annotations.entry(key).or_default();
                                if !values.contains(&value) {
                                    values.push(value);
                                }
                            }
                            AnnotationAction::Error(message) => denied.push(Denied {
                                policy: policy.name.clone(),
                                binding: Some(binding_name.clone()),
                                message,
                                reason: None,
                            }),
                            AnnotationAction::Exclude => {}
                        }
                    }
                }
            }
            for (key, values) in annotations {
                attrs.add_annotation(&format!("{}/{key}", policy.name), &values.join(", "));
            }
        }
        denied
    }
}

#[async_trait::async_trait]
impl Plugin for ValidatingPolicies {
    fn name(&self) -> &str {
        NAME
    }

    fn handles(&self, _operation: Operation) -> bool {
        true
    }

    fn validates(&self) -> bool {
        true
    }

    async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError> {
        if is_excluded(attrs) {
            return Ok(());
        }
        if !self.source.wait_synced().await {
            return Err(forbidden(attrs, "not yet ready to handle request"));
        }
        if self.source.is_empty() {
            return Ok(());
        }
        let denied = self.evaluate(attrs).await;
        let Some(first) = denied.into_iter().next() else {
            return Ok(());
        };
        let message = match &first.binding {
            Some(binding) => format!(
                "ValidatingAdmissionPolicy '{}' with binding '{binding}' denied request: {}",
                first.policy, first.message
            ),
            None => format!(
                "ValidatingAdmissionPolicy '{}' denied request: {}",
                first.policy, first.message
            ),
        };
        let base = forbidden(attrs, &message);
        let reason = first.reason.unwrap_or_else(|| "Invalid".to_string());
        let mut details = base.0.details.clone().unwrap_or_default();
        details.causes.push(StatusCause {
            message: message.clone(),
            ..Default::default()
        });
        Err(
            ApiError::new(reason_to_code(&reason), &reason, base.0.message.clone())
                .with_details(details),
        )
    }
}

/// The plugin's constructor.
pub fn new(ctx: &crate::admission::PluginContext) -> Result<Arc<dyn Plugin>, String> {
    let informer = |resource: &str| {
        ctx.informers
            .informer("admissionregistration.k8s.io", resource)
            .ok_or_else(|| format!("the {resource} resource is not served"))
    };
    let source = PolicySource::new(
        informer("validatingadmissionpolicies")?,
        informer("validatingadmissionpolicybindings")?,
    );
    metrics::register();
    Ok(Arc::new(ValidatingPolicies::new(source, Lookups::new(ctx))))
}
