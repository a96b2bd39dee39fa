//! The MutatingAdmissionPolicy plugin (upstream `policy/mutating`, beta and off by default in
//! 1.35: it acts only with the `MutatingAdmissionPolicy` feature gate, and its resources exist
//! only with `admissionregistration.k8s.io/v1beta1` enabled). Each matching binding's param
//! runs the policy's mutations in order on the object; a policy with `reinvocationPolicy:
//! IfNeeded` runs again in the chain's second pass when the object changed after it ran.

use std::collections::BTreeSet;
use std::sync::Arc;

use apiserver::admission::{Attributes, Operation, Plugin, forbidden};
use apiserver::endpoints::apply::{ApplySchema, DeducedSchema, OpenApiSchema};
use apiserver::registry::rest::RestStorage;
use apiserver::status::{ApiError, StatusCause};
use http::StatusCode;
use serde_json::Value;

use super::cel::{EvalError, RUNTIME_BUDGET, from_json};
use super::compiled::{CompiledPolicy, FailurePolicy};
use super::dispatch::{
    Lookups, Objects, is_excluded, namespace_variable, request_of, request_variable, variables,
};
use super::mutation::{apply_configuration, json_patch};
use super::source::PolicySource;
use crate::apis::json::{get, str_at};
use crate::install::Stores;

/// The plugin's name.
pub const NAME: &str = "MutatingAdmissionPolicy";

/// What the plugin remembers between the chain's passes over one request.
#[derive(Clone, Default)]
struct Invocations {
    /// `policy/binding/param` of the IfNeeded invocations of the first pass.
    reinvocable: BTreeSet<String>,
    /// The object as the plugin left it.
    last_output: Option<Value>,
}

/// The plugin.
pub struct MutatingPolicies {
    source: Option<PolicySource>,
    lookups: Lookups,
    stores: Stores,
}

/// A policy error on its way to the response.
struct PolicyError {
    policy: String,
    binding: String,
    message: String,
}

fn name_of(obj: &Value) -> String {
    str_at(obj, "metadata.name").unwrap_or_default().to_string()
}

impl MutatingPolicies {
    /// Runs the resource's apply schema through `f`.
    fn with_schema<R>(&self, attrs: &Attributes, f: impl FnOnce(&dyn ApplySchema) -> R) -> R {
        let key = (
            attrs.resource.group.clone(),
            attrs.resource.resource.clone(),
        );
        let schema = self
            .stores
            .get(&key)
            .and_then(|s| s.strategy())
            .and_then(|s| s.patch_schema());
        if let Some((document, definition)) = &schema
            && let Some(openapi) = OpenApiSchema::for_definition(document, definition)
        {
            return f(&openapi);
        }
        f(&DeducedSchema)
    }

    /// Runs every mutation of `policy` for one param on `attrs.object`.
    fn mutate(
        &self,
        policy: &CompiledPolicy,
        attrs: &mut Attributes,
        request: &kube_cel::cel::Value,
        param: Option<&Value>,
        namespace: &kube_cel::cel::Value,
    ) -> Result<(), String> {
        let object = attrs.object.clone();
        let authorizer = self.lookups.authorizer(attrs);
        let objects = Objects::new(object.as_ref(), attrs.old_object.as_ref())
            .with_authorizer(authorizer.clone());
        let vars = variables(&objects, request, param, namespace);
        match policy.match_conditions_match(&vars) {
            Err(e) => return Err(e),
            Ok(false) => return Ok(()),
            Ok(true) => {}
        }
        for (patch_type, expression) in &policy.mutations {
            let Some(current) = attrs.object.clone() else {
                return Ok(());
            };
            let objects = Objects::new(Some(&current), attrs.old_object.as_ref())
                .with_authorizer(authorizer.clone());
            let mut vars = variables(&objects, request, param, namespace);
            let mut budget = RUNTIME_BUDGET;
            policy
                .bind_variables(&mut vars, &mut budget)
                .map_err(|e| e.to_string())?;
            let program = expression
                .program
                .as_ref()
                .map_err(|e| format!("compilation error: {e}"))?;
            let result = program
                .eval(&vars.bound(), &mut budget)
                .map_err(|e| match e {
                    EvalError::Failed(_) | EvalError::CostLimit => {
                        format!("expression '{}' resulted in error: {e}", expression.text)
                    }
                    EvalError::OutOfBudget => e.to_string(),
                })?;
            let patched = if patch_type == "JSONPatch" {
                json_patch(&current, &result)?
            } else {
                self.with_schema(attrs, |schema| {
                    apply_configuration(&current, &result, schema)
                })?
            };
            attrs.object = Some(patched);
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl Plugin for MutatingPolicies {
    fn name(&self) -> &str {
        NAME
    }

    fn handles(&self, operation: Operation) -> bool {
        operation != Operation::Delete
    }

    fn mutates(&self) -> bool {
        true
    }

    async fn admit(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
        let Some(source) = &self.source else {
            return Ok(());
        };
        if is_excluded(attrs) {
            return Ok(());
        }
        if !source.wait_synced().await {
            return Err(forbidden(attrs, "not yet ready to handle request"));
        }
        if source.is_empty() || attrs.object.is_none() {
            return Ok(());
        }
        let mut memory = attrs
            .state()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get::<Invocations>()
            .cloned()
            .unwrap_or_default();
        let reinvoke = attrs.is_reinvoke();
        // In the second pass only IfNeeded policies run, and only when someone changed the
        // object after this plugin last did.
        if reinvoke && memory.last_output.as_ref() == attrs.object.as_ref() {
            return Ok(());
        }
        let mut errors = Vec::new();
        let namespace = self.lookups.namespace(attrs);
        let namespace_value = namespace_variable(namespace.as_deref());
        for (policy, bindings) in source.hooks() {
            let req = request_of(attrs);
            let constraints = get(&policy.object, "spec.matchConstraints")
                .cloned()
                .unwrap_or(Value::Null);
            let Some(version) = self
                .lookups
                .matches(&constraints, &req, namespace.as_deref())
            else {
                continue;
            };
            let param_source = match self.lookups.param_source(&policy) {
                Ok(s) => s,
                Err(e) => {
                    if policy.failure_policy == FailurePolicy::Fail {
                        errors.push(PolicyError {
                            policy: policy.name.clone(),
                            binding: String::new(),
                            message: e,
                        });
                    }
                    continue;
                }
            };
            let request = from_json(&request_variable(attrs, &version));
            for binding in &bindings {
                let req = request_of(attrs);
                if let Some(mr) = get(binding, "spec.matchResources").filter(|m| m.is_object())
                    && self
                        .lookups
                        .matches(mr, &req, namespace.as_deref())
                        .is_none()
                {
                    continue;
                }
                let binding_name = name_of(binding);
                let params = match self
                    .lookups
                    .params(&policy, param_source.as_ref(), binding, attrs)
                    .await
                {
                    Ok(p) => p,
                    Err(e) => {
                        if policy.failure_policy == FailurePolicy::Fail {
                            errors.push(PolicyError {
                                policy: policy.name.clone(),
                                binding: binding_name,
                                message: e,
                            });
                        }
                        continue;
                    }
                };
                for param in params {
                    let key = format!(
                        "{}/{binding_name}/{}",
                        policy.name,
                        param
                            .as_deref()
                            .map(|p| format!(
                                "{}/{}",
                                str_at(p, "metadata.namespace").unwrap_or_default(),
                                name_of(p)
                            ))
                            .unwrap_or_default()
                    );
                    if reinvoke && !memory.reinvocable.contains(&key) {
                        continue;
                    }
                    let before = attrs.object.clone();
                    if let Err(message) =
                        self.mutate(&policy, attrs, &request, param.as_deref(), &namespace_value)
                    {
                        attrs.object = before;
                        if policy.failure_policy == FailurePolicy::Fail {
                            errors.push(PolicyError {
                                policy: policy.name.clone(),
                                binding: binding_name.clone(),
                                message,
                            });
                        }
                        continue;
                    }
                    if attrs.object != before {
                        attrs.request_reinvocation();
                    }
                    if !reinvoke && policy.reinvoke_if_needed {
                        memory.reinvocable.insert(key);
                    }
                }
            }
        }
        memory.last_output = attrs.object.clone();
        attrs
            .state()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(memory);
        let Some(first) = errors.into_iter().next() else {
            return Ok(());
        };
        let message = if first.binding.is_empty() {
            format!(
                "policy {:?} denied request: {}",
                first.policy, first.message
            )
        } else {
            format!(
                "policy '{}' with binding '{}' denied request: {}",
                first.policy, first.binding, first.message
            )
        };
        let mut details = forbidden(attrs, &message).0.details.unwrap_or_default();
        details.causes.push(StatusCause {
            message: message.clone(),
            ..Default::default()
        });
        Err(ApiError::new(StatusCode::FORBIDDEN, "Invalid", message).with_details(details))
    }
}

/// The plugin's constructor: acts only with the feature gate on and the resources served.
pub fn new(ctx: &crate::admission::PluginContext) -> Result<Arc<dyn Plugin>, String> {
    let informer = |resource: &str| {
        ctx.informers
            .informer("admissionregistration.k8s.io", resource)
    };
    let source = if crate::features::enabled(&ctx.options, NAME) {
        match (
            informer("mutatingadmissionpolicies"),
            informer("mutatingadmissionpolicybindings"),
        ) {
            (Some(policies), Some(bindings)) => Some(PolicySource::new(policies, bindings)),
            _ => None,
        }
    } else {
        None
    };
    Ok(Arc::new(MutatingPolicies {
        source,
        lookups: Lookups::new(ctx),
        stores: ctx.informers.stores().clone(),
    }))
}
