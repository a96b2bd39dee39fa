//! Rules shared by workload controllers (deployments, replica sets, stateful sets, daemon
//! sets, jobs, replication controllers): selectors matching template labels, replicas, and
//! the Containers/Images/Selector cells.

use apiserver::registry::FieldError;
use serde_json::{Map, Value};

use super::json::{array_at, get};
use super::validation::non_negative;

/// Whether a `metav1.LabelSelector` matches `labels`.
pub fn selector_matches(selector: &Value, labels: &Map<String, Value>) -> bool {
    if let Some(Value::Object(match_labels)) = selector.get("matchLabels")
        && match_labels.iter().any(|(k, v)| labels.get(k) != Some(v))
    {
        return false;
    }
    array_at(selector, "matchExpressions").iter().all(|expr| {
        let key = expr.get("key").and_then(Value::as_str).unwrap_or_default();
        let values = array_at(expr, "values");
        let value = labels.get(key);
        match expr
            .get("operator")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "In" => value.is_some_and(|v| values.contains(v)),
            "NotIn" => value.is_none_or(|v| !values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false,
        }
    })
}

/// Whether a selector has no requirements.
pub fn selector_is_empty(selector: &Value) -> bool {
    selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty)
        && array_at(selector, "matchExpressions").is_empty()
}

/// The selector and template checks of apps/v1 and batch/v1 workloads (`kind` names the
/// resource in the empty-selector message, e.g. `deployment`).
pub fn validate_selector_and_template(obj: &Value, kind: &str, required: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let selector = get(obj, "spec.selector").filter(|s| !s.is_null());
    match selector {
        None if required => errs.push(FieldError::required("spec.selector", "")),
        None => {}
        Some(selector) if selector_is_empty(selector) => errs.push(FieldError::invalid(
            "spec.selector",
            selector.clone(),
            &format!("empty selector is invalid for {kind}"),
        )),
        Some(selector) => {
            let empty = Map::new();
            let labels = get(obj, "spec.template.metadata.labels")
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            if !selector_matches(selector, labels) {
                errs.push(FieldError::invalid(
                    "spec.template.metadata.labels",
                    Value::Object(labels.clone()),
                    "`selector` does not match template `labels`",
                ));
            }
        }
    }
    errs.extend(non_negative(obj, "spec.replicas"));
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors_match_labels() {
        let labels = json!({"app": "web", "tier": "fe"});
        let labels = labels.as_object().unwrap();
        assert!(selector_matches(
            &json!({"matchLabels": {"app": "web"}}),
            labels
        ));
        assert!(!selector_matches(
            &json!({"matchLabels": {"app": "db"}}),
            labels
        ));
        assert!(selector_matches(
            &json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["fe"]},
                                          {"key": "x", "operator": "DoesNotExist"}]}),
            labels
        ));
        assert!(selector_is_empty(&json!({})));
    }
}
