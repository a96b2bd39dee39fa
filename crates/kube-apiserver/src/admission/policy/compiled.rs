//! Policies compiled once per change (upstream's policy hooks): the expressions of a
//! ValidatingAdmissionPolicy or MutatingAdmissionPolicy with their compilation errors, and the
//! evaluation of a policy's match conditions, variables, validations and audit annotations for
//! one request and one param (upstream `validating/validator.go`,
//! `webhook/matchconditions/matcher.go`, `cel/composition.go`).

use std::collections::HashMap;
use std::sync::Arc;

use kube_cel::cel;
use kube_cel::cel::objects::{Key, Map};
use serde_json::Value;

use super::cel::{EvalError, MATCH_CONDITIONS_BUDGET, Program, RUNTIME_BUDGET, type_name};
use crate::apis::admissionregistration::policies::declared_variables;
use crate::apis::json::{array_at, get, str_at};

/// Upstream `celconfig.MaxEvaluatedMessageExpressionSizeBytes`.
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

/// An expression with its text, compiled or with its compilation error.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The expression as written.
    pub text: String,
    /// The program, or upstream's `compilation failed: …` detail.
    pub program: Result<Program, String>,
}

impl Compiled {
    fn new(text: &str, declared: &[&str]) -> Self {
        Compiled {
            text: text.to_string(),
            program: Program::compile(text, declared),
        }
    }

    /// Evaluates, turning failures into upstream's messages; `Err(OutOfBudget)` stops the
    /// evaluation of the binding.
    fn eval(&self, vars: &Vars, budget: &mut u64) -> Result<Result<cel::Value, String>, EvalError> {
        let program = match &self.program {
            Ok(p) => p,
            Err(detail) => return Ok(Err(format!("compilation error: {detail}"))),
        };
        if let Some((name, err)) = vars.failed_variable(&self.text) {
            return Ok(Err(format!(
                "expression '{}' resulted in error: composited variable \"{name}\" fails to evaluate: {err}",
                self.text
            )));
        }
        match program.eval(&vars.bound(), budget) {
            Ok(v) => Ok(Ok(v)),
            Err(EvalError::OutOfBudget) => Err(EvalError::OutOfBudget),
            Err(e) => Ok(Err(format!(
                "expression '{}' resulted in error: {e}",
                self.text
            ))),
        }
    }
}

/// `failurePolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailurePolicy {
    /// Errors deny the request.
    Fail,
    /// Errors are ignored.
    Ignore,
}

/// One `spec.validations` item.
#[derive(Clone, Debug)]
pub struct Validation {
    /// `expression`.
    pub expression: Compiled,
    /// `message`.
    pub message: String,
    /// `messageExpression`.
    pub message_expression: Option<Compiled>,
    /// `reason` (default `Invalid`).
    pub reason: Option<String>,
}

/// A policy's expressions, compiled.
#[derive(Clone, Debug)]
pub struct CompiledPolicy {
    /// The policy object as stored.
    pub object: Arc<Value>,
    /// `metadata.name`.
    pub name: String,
    /// `spec.failurePolicy`.
    pub failure_policy: FailurePolicy,
    /// `spec.paramKind` as (apiVersion, kind).
    pub param_kind: Option<(String, String)>,
    /// `spec.matchConditions` as (name, expression).
    pub match_conditions: Vec<(String, Compiled)>,
    /// `spec.variables` as (name, expression), in order.
    pub variables: Vec<(String, Compiled)>,
    /// `spec.validations` (validating policies).
    pub validations: Vec<Validation>,
    /// `spec.auditAnnotations` as (key, valueExpression).
    pub audit_annotations: Vec<(String, Compiled)>,
    /// `spec.mutations` as (patchType, expression) (mutating policies).
    pub mutations: Vec<(String, Compiled)>,
    /// `spec.reinvocationPolicy` is `IfNeeded`.
    pub reinvoke_if_needed: bool,
}

impl CompiledPolicy {
    /// Compiles every expression of a ValidatingAdmissionPolicy or MutatingAdmissionPolicy.
    pub fn compile(object: Arc<Value>) -> Self {
        let spec = get(&object, "spec").cloned().unwrap_or(Value::Null);
        let param_kind = get(&spec, "paramKind").filter(|p| p.is_object()).map(|p| {
            (
                str_at(p, "apiVersion").unwrap_or_default().to_string(),
                str_at(p, "kind").unwrap_or_default().to_string(),
            )
        });
        let has_params = param_kind.is_some();
        let with_vars = !array_at(&spec, "variables").is_empty();
        let conditions_env = declared_variables(has_params, true, false);
        let env = declared_variables(has_params, true, with_vars);
        let message_env = declared_variables(has_params, false, with_vars);
        let mut patch_env = env.clone();
        patch_env.push("JSONPatch");
        let text = |v: &Value, path: &str| str_at(v, path).unwrap_or_default().to_string();
        CompiledPolicy {
            name: str_at(&object, "metadata.name")
                .unwrap_or_default()
                .to_string(),
            failure_policy: match str_at(&spec, "failurePolicy") {
                Some("Ignore") => FailurePolicy::Ignore,
                _ => FailurePolicy::Fail,
            },
            param_kind,
            match_conditions: array_at(&spec, "matchConditions")
                .iter()
                .map(|c| {
                    (
                        text(c, "name"),
                        Compiled::new(&text(c, "expression"), &conditions_env),
                    )
                })
                .collect(),
            variables: array_at(&spec, "variables")
                .iter()
                .map(|v| (text(v, "name"), Compiled::new(&text(v, "expression"), &env)))
                .collect(),
            validations: array_at(&spec, "validations")
                .iter()
                .map(|v| Validation {
                    expression: Compiled::new(&text(v, "expression"), &env),
                    message: text(v, "message"),
                    message_expression: str_at(v, "messageExpression")
                        .filter(|m| !m.trim().is_empty())
                        .map(|m| Compiled::new(m, &message_env)),
                    reason: str_at(v, "reason").map(str::to_string),
                })
                .collect(),
            audit_annotations: array_at(&spec, "auditAnnotations")
                .iter()
                .map(|a| {
                    (
                        text(a, "key"),
                        Compiled::new(text(a, "valueExpression").trim(), &env),
                    )
                })
                .collect(),
            mutations: array_at(&spec, "mutations")
                .iter()
                .map(|m| {
                    let patch_type = text(m, "patchType");
                    let compiled = if patch_type == "JSONPatch" {
                        Compiled::new(&text(m, "jsonPatch.expression"), &patch_env)
                    } else {
                        Compiled::new(&text(m, "applyConfiguration.expression"), &env)
                    };
                    (patch_type, compiled)
                })
                .collect(),
            reinvoke_if_needed: str_at(&spec, "reinvocationPolicy") == Some("IfNeeded"),
            object,
        }
    }

    fn error_action(&self) -> Action {
        match self.failure_policy {
            FailurePolicy::Ignore => Action::Admit,
            FailurePolicy::Fail => Action::Deny,
        }
    }

    /// Upstream's match-condition matcher: `Ok(false)` when a condition is false, `Err` with
    /// the errors when some failed under `failurePolicy: Fail`.
    pub fn match_conditions_match(&self, vars: &Vars) -> Result<bool, String> {
        let mut budget = MATCH_CONDITIONS_BUDGET;
        let mut errors = Vec::new();
        for (_, condition) in &self.match_conditions {
            match condition.eval(vars, &mut budget) {
                Err(e) => {
                    return match self.failure_policy {
                        FailurePolicy::Fail => Err(e.to_string()),
                        FailurePolicy::Ignore => Ok(false),
                    };
                }
                Ok(Ok(cel::Value::Bool(false))) => return Ok(false),
                Ok(Ok(cel::Value::Bool(true))) => {}
                Ok(Ok(other)) => errors.push(format!(
                    "expression '{}' resulted in error: no such overload: expected bool, got {}",
                    condition.text,
                    type_name(&other)
                )),
                Ok(Err(e)) => errors.push(e),
            }
        }
        if errors.is_empty() {
            return Ok(true);
        }
        match self.failure_policy {
            FailurePolicy::Ignore => Ok(false),
            FailurePolicy::Fail if errors.len() == 1 => Err(errors.remove(0)),
            FailurePolicy::Fail => Err(format!("[{}]", errors.join(", "))),
        }
    }

    /// Evaluates `spec.variables` in order into `vars` (each may use the ones before it),
    /// charging `budget`.
    pub fn bind_variables(&self, vars: &mut Vars, budget: &mut u64) -> Result<(), EvalError> {
        if self.variables.is_empty() {
            return Ok(());
        }
        vars.variables = Some(HashMap::new());
        for (name, expression) in &self.variables {
            let result = match &expression.program {
                Err(detail) => Err(format!("compilation error: {detail}")),
                Ok(program) => match program.eval(&vars.bound(), budget) {
                    Ok(v) => Ok(v),
                    Err(EvalError::OutOfBudget) => return Err(EvalError::OutOfBudget),
                    Err(e) => Err(e.to_string()),
                },
            };
            match result {
                Ok(v) => {
                    if let Some(m) = vars.variables.as_mut() {
                        m.insert(name.clone(), v);
                    }
                }
                Err(e) => vars.failed.push((name.clone(), e)),
            }
        }
        Ok(())
    }

    /// Upstream's validator: the decisions of every validation and the audit annotations.
    pub fn validate(&self, vars: &mut Vars) -> Validated {
        let error = |message: String| Validated {
            decisions: vec![Decision {
                action: self.error_action(),
                eval_error: true,
                message,
                reason: None,
                index: 0,
            }],
            annotations: Vec::new(),
        };
        match self.match_conditions_match(vars) {
            Err(e) => return error(e),
            Ok(false) => return Validated::default(),
            Ok(true) => {}
        }
        let mut budget = RUNTIME_BUDGET;
        if let Err(e) = self.bind_variables(vars, &mut budget) {
            return error(e.to_string());
        }
        let mut decisions = Vec::with_capacity(self.validations.len());
        for (index, validation) in self.validations.iter().enumerate() {
            let result = match validation.expression.eval(vars, &mut budget) {
                Ok(r) => r,
                Err(e) => return error(e.to_string()),
            };
            let decision = match result {
                Err(message) => Decision {
                    action: self.error_action(),
                    eval_error: true,
                    message,
                    reason: None,
                    index,
                },
                Ok(cel::Value::Bool(true)) => Decision {
                    action: Action::Admit,
                    eval_error: false,
                    message: String::new(),
                    reason: None,
                    index,
                },
                Ok(_) => {
                    let mut message = String::new();
                    if let Some(m) = &validation.message_expression {
                        match m.eval(vars, &mut budget) {
                            Err(e) => {
                                decisions.push(Decision {
                                    action: self.error_action(),
                                    eval_error: true,
                                    message: format!("failed messageExpression: {e}"),
                                    reason: None,
                                    index,
                                });
                                continue;
                            }
                            Ok(Ok(cel::Value::String(s))) => {
                                let s = s.trim();
                                if s.len() <= MAX_MESSAGE_BYTES && !s.contains('\n') {
                                    message = s.to_string();
                                }
                            }
                            Ok(_) => {}
                        }
                    }
                    if message.is_empty() && !validation.message.trim().is_empty() {
                        message = validation.message.trim().to_string();
                    }
                    if message.is_empty() {
                        message =
                            format!("failed expression: {}", validation.expression.text.trim());
                    }
                    Decision {
                        action: Action::Deny,
                        eval_error: false,
                        message,
                        reason: Some(
                            validation
                                .reason
                                .clone()
                                .unwrap_or_else(|| "Invalid".into()),
                        ),
                        index,
                    }
                }
            };
            decisions.push(decision);
        }
        let mut budget = RUNTIME_BUDGET;
        let mut annotations = Vec::with_capacity(self.audit_annotations.len());
        for (key, expression) in &self.audit_annotations {
            let action = match expression.eval(vars, &mut budget) {
                Err(e) => return error(e.to_string()),
                Ok(Err(message)) => match self.failure_policy {
                    FailurePolicy::Ignore => AnnotationAction::Exclude,
                    FailurePolicy::Fail => AnnotationAction::Error(message),
                },
                Ok(Ok(cel::Value::String(s))) if s.trim().is_empty() => AnnotationAction::Exclude,
                Ok(Ok(cel::Value::String(s))) => AnnotationAction::Publish(s.trim().to_string()),
                Ok(Ok(cel::Value::Null)) => AnnotationAction::Exclude,
                Ok(Ok(other)) => AnnotationAction::Error(format!(
                    "valueExpression '{}' resulted in unsupported return type: {}. Return type must be either string or null.",
                    expression.text,
                    type_name(&other)
                )),
            };
            annotations.push((key.clone(), action));
        }
        Validated {
            decisions,
            annotations,
        }
    }
}

/// What a validation decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// The request passes this validation.
    Admit,
    /// The request fails it.
    Deny,
}

/// The decision of one validation.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// Admit or deny.
    pub action: Action,
    /// Whether it comes from an error (compilation, evaluation, budget) rather than a false
    /// expression.
    pub eval_error: bool,
    /// The message.
    pub message: String,
    /// The reason of a denial (`Invalid` unless the validation says otherwise).
    pub reason: Option<String>,
    /// The validation's index.
    pub index: usize,
}

/// What becomes of one audit annotation.
#[derive(Clone, Debug, PartialEq)]
pub enum AnnotationAction {
    /// Published with this value.
    Publish(String),
    /// Failed: denies the request.
    Error(String),
    /// Left out.
    Exclude,
}

/// The result of validating one request against one binding and param.
#[derive(Clone, Debug, Default)]
pub struct Validated {
    /// One decision per validation (or one for an error that stopped evaluation).
    pub decisions: Vec<Decision>,
    /// The audit annotations as (key, action).
    pub annotations: Vec<(String, AnnotationAction)>,
}

/// The variables of an evaluation.
#[derive(Clone, Debug, Default)]
pub struct Vars {
    /// `object`, `oldObject`, `request`, `params`, `namespaceObject` (and `authorizer`).
    pub base: Vec<(&'static str, cel::Value)>,
    variables: Option<HashMap<String, cel::Value>>,
    failed: Vec<(String, String)>,
}

impl Vars {
    /// Variables from JSON values.
    pub fn new(base: Vec<(&'static str, cel::Value)>) -> Self {
        Vars {
            base,
            variables: None,
            failed: Vec::new(),
        }
    }

    /// Every variable, `variables` included once bound.
    pub fn bound(&self) -> Vec<(&str, cel::Value)> {
        let mut out: Vec<(&str, cel::Value)> =
            self.base.iter().map(|(n, v)| (*n, v.clone())).collect();
        if let Some(vars) = &self.variables {
            let map: HashMap<Key, cel::Value> = vars
                .iter()
                .map(|(k, v)| (Key::String(Arc::new(k.clone())), v.clone()))
                .collect();
            out.push(("variables", cel::Value::Map(Map { map: Arc::new(map) })));
        }
        out
    }

    fn failed_variable(&self, text: &str) -> Option<(&str, &str)> {
        self.failed.iter().find_map(|(name, err)| {
            let dotted = format!("variables.{name}");
            text.match_indices(&dotted)
                .any(|(i, _)| {
                    !text[i + dotted.len()..]
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_alphanumeric() || c == '_')
                })
                .then_some((name.as_str(), err.as_str()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::cel::from_json;
    use super::*;
    use serde_json::json;

    fn policy(spec: Value) -> CompiledPolicy {
        CompiledPolicy::compile(Arc::new(json!({"metadata": {"name": "p"}, "spec": spec})))
    }

    fn vars(object: Value, params: Value) -> Vars {
        Vars::new(vec![
            ("object", from_json(&object)),
            ("oldObject", cel::Value::Null),
            ("params", from_json(&params)),
            ("request", from_json(&json!({"operation": "CREATE"}))),
            ("namespaceObject", cel::Value::Null),
        ])
    }

    #[test]
    fn validations_with_params_messages_and_variables() {
        let p = policy(json!({
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "variables": [{"name": "max", "expression": "int(params.data.max)"}],
            "validations": [
                {"expression": "object.spec.replicas <= variables.max",
                 "messageExpression": "'replicas must be at most ' + string(variables.max)"},
                {"expression": "object.spec.replicas > 0", "message": "at least one", "reason": "Forbidden"},
                {"expression": "object.spec.replicas != 7"}],
            "auditAnnotations": [{"key": "replicas", "valueExpression": "string(object.spec.replicas)"}]}));
        let params = json!({"data": {"max": "5"}});
        let ok = p.validate(&mut vars(json!({"spec": {"replicas": 3}}), params.clone()));
        assert!(
            ok.decisions.iter().all(|d| d.action == Action::Admit),
            "{ok:?}"
        );
        assert_eq!(
            ok.annotations,
            vec![("replicas".into(), AnnotationAction::Publish("3".into()))]
        );
        let denied = p.validate(&mut vars(json!({"spec": {"replicas": 7}}), params.clone()));
        assert_eq!(denied.decisions[0].message, "replicas must be at most 5");
        assert_eq!(denied.decisions[0].reason.as_deref(), Some("Invalid"));
        assert_eq!(
            denied.decisions[2].message,
            "failed expression: object.spec.replicas != 7"
        );
        let zero = p.validate(&mut vars(json!({"spec": {"replicas": 0}}), params));
        assert_eq!(zero.decisions[1].message, "at least one");
        assert_eq!(zero.decisions[1].reason.as_deref(), Some("Forbidden"));
    }

    #[test]
    fn errors_follow_the_failure_policy() {
        let mut p = policy(json!({"validations": [{"expression": "object.spec.replicass > 1"}]}));
        let d = &p
            .validate(&mut vars(json!({"spec": {"replicas": 1}}), Value::Null))
            .decisions[0];
        assert_eq!(d.action, Action::Deny);
        assert!(d.eval_error);
        assert_eq!(
            d.message,
            "expression 'object.spec.replicass > 1' resulted in error: no such key: replicass"
        );
        p.failure_policy = FailurePolicy::Ignore;
        let d = &p
            .validate(&mut vars(json!({"spec": {"replicas": 1}}), Value::Null))
            .decisions[0];
        assert_eq!(d.action, Action::Admit);
        let broken = policy(json!({"validations": [{"expression": "object.spec.replicas >"}]}));
        let d = &broken.validate(&mut vars(json!({}), Value::Null)).decisions[0];
        assert!(
            d.message
                .starts_with("compilation error: compilation failed: "),
            "{d:?}"
        );
    }

    #[test]
    fn match_conditions_skip_or_fail() {
        let p = policy(json!({
            "matchConditions": [{"name": "big", "expression": "object.spec.replicas > 10"}],
            "validations": [{"expression": "false"}]}));
        assert!(
            p.validate(&mut vars(json!({"spec": {"replicas": 1}}), Value::Null))
                .decisions
                .is_empty()
        );
        assert_eq!(
            p.validate(&mut vars(json!({"spec": {"replicas": 11}}), Value::Null))
                .decisions
                .len(),
            1
        );
        let err = p.validate(&mut vars(json!({"spec": {}}), Value::Null));
        assert_eq!(
            err.decisions[0].message,
            "expression 'object.spec.replicas > 10' resulted in error: no such key: replicas"
        );
    }

    #[test]
    fn a_failing_variable_names_itself() {
        let p = policy(json!({
            "variables": [{"name": "bad", "expression": "object.nope"}],
            "validations": [{"expression": "variables.bad == 1"}]}));
        let d = &p.validate(&mut vars(json!({}), Value::Null)).decisions[0];
        assert_eq!(
            d.message,
            "expression 'variables.bad == 1' resulted in error: composited variable \"bad\" fails to evaluate: no such key: nope"
        );
    }
}
