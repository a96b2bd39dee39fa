//! A webhook's `matchConditions` (upstream `webhook/matchconditions`): CEL over `object`,
//! `oldObject`, `request` and `authorizer`; any condition that is false skips the webhook; errors (with none
//! false) fail the request under `failurePolicy: Fail` and skip the webhook under `Ignore`.

use apiserver::util::cel::Expression;
use kube_cel::cel;
use serde_json::Value;

use super::hooks::MatchCondition;

/// What the conditions decided.
#[derive(Debug, PartialEq, Eq)]
pub enum ConditionResult {
    /// Every condition held: call the webhook.
    Match,
    /// A condition was false (its name), or errors were ignored: skip the webhook.
    Skip(Option<String>),
    /// Errors under `failurePolicy: Fail`: refuse the request with this text.
    Error(String),
}

fn evaluate(
    expression: &Expression,
    text: &str,
    vars: &[(&str, &Value)],
    authorizer: &cel::Value,
) -> Result<bool, String> {
    match expression.eval_with(vars, &[("authorizer", authorizer.clone())]) {
        Ok(cel::Value::Bool(b)) => Ok(b),
        Ok(other) => Err(format!(
            "expression '{text}' resulted in error: expected a bool result, got {}",
            type_name(&other)
        )),
        Err(e) => Err(format!("expression '{text}' resulted in error: {e}")),
    }
}

fn type_name(v: &cel::Value) -> &'static str {
    match v {
        cel::Value::Null => "null_type",
        cel::Value::Int(_) => "int",
        cel::Value::UInt(_) => "uint",
        cel::Value::Float(_) => "double",
        cel::Value::String(_) => "string",
        cel::Value::List(_) => "list",
        cel::Value::Map(_) => "map",
        _ => "value",
    }
}

/// Evaluates `conditions` with `object`, `oldObject`, `request` and `authorizer` bound.
pub fn evaluate_conditions(
    conditions: &[MatchCondition],
    fail_open: bool,
    object: &Value,
    old_object: &Value,
    request: &Value,
    authorizer: &cel::Value,
) -> ConditionResult {
    let vars = [
        ("object", object),
        ("oldObject", old_object),
        ("request", request),
    ];
    let mut errors = Vec::new();
    for condition in conditions {
        let result = match &condition.expression {
            Ok(expression) => evaluate(expression, &condition.text, &vars, authorizer),
            Err(e) => Err(format!("expression '{}' {e}", condition.text)),
        };
        match result {
            Ok(true) => {}
            Ok(false) => return ConditionResult::Skip(Some(condition.name.clone())),
            Err(e) => errors.push(e),
        }
    }
    match errors.as_slice() {
        [] => ConditionResult::Match,
        _ if fail_open => ConditionResult::Skip(None),
        [one] => ConditionResult::Error(one.clone()),
        many => ConditionResult::Error(format!("[{}]", many.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use apiserver::util::cel::Expression;
    use serde_json::json;

    fn condition(name: &str, text: &str) -> MatchCondition {
        MatchCondition {
            name: name.into(),
            expression: Expression::compile(
                text,
                &["object", "oldObject", "request", "authorizer"],
            ),
            text: text.into(),
        }
    }

    #[test]
    fn false_skips_errors_follow_the_failure_policy() {
        let object = json!({"metadata": {"name": "cm", "labels": {"team": "a"}}});
        let request = json!({"operation": "CREATE"});
        let is_a = condition("team-a", "object.metadata.labels.team == 'a'");
        let is_create = condition("create", "request.operation == 'CREATE'");
        let missing = condition("missing", "object.data.key == 'x'");
        assert_eq!(
            evaluate_conditions(
                &[is_a.clone(), is_create.clone()],
                false,
                &object,
                &Value::Null,
                &request,
                &cel::Value::Null,
            ),
            ConditionResult::Match
        );
        let is_b = condition("team-b", "object.metadata.labels.team == 'b'");
        assert_eq!(
            evaluate_conditions(
                &[missing.clone(), is_b],
                false,
                &object,
                &Value::Null,
                &request,
                &cel::Value::Null,
            ),
            ConditionResult::Skip(Some("team-b".into()))
        );
        let ConditionResult::Error(text) = evaluate_conditions(
            std::slice::from_ref(&missing),
            false,
            &object,
            &Value::Null,
            &request,
            &cel::Value::Null,
        ) else {
            panic!("an error was expected");
        };
        assert!(
            text.starts_with("expression 'object.data.key == 'x'' resulted in error: "),
            "{text}"
        );
        assert_eq!(
            evaluate_conditions(
                &[missing],
                true,
                &object,
                &Value::Null,
                &request,
                &cel::Value::Null
            ),
            ConditionResult::Skip(None)
        );
    }
}
