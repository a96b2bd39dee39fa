//! Validation of list, watch and delete options (upstream
//! `apimachinery/pkg/apis/meta/internalversion/validation` and `ValidateDeleteOptions`), and the
//! selection predicate of a resource (field labels as upstream's field label conversion).

use std::sync::Arc;

use serde_json::{Value, json};

use crate::registry::rest::{DeleteOptions, ListOptions};
use crate::registry::{FieldError, ResourceInfo, Strategy, invalid};
use crate::status::ApiError;
use crate::storage::selection::{Fields, GetAttrs, Labels};
use crate::storage::{FieldSelector, LabelSelector, SelectionPredicate};

fn meta_kind(kind: &str) -> ResourceInfo {
    ResourceInfo {
        group: "meta.k8s.io".into(),
        kind: kind.into(),
        ..Default::default()
    }
}

fn result(kind: &str, errs: Vec<FieldError>) -> Result<(), ApiError> {
    if errs.is_empty() {
        Ok(())
    } else {
        Err(invalid(&meta_kind(kind), "", &errs))
    }
}

/// Validates the options of a list (422 `ListOptions.meta.k8s.io "" is invalid: …`).
pub fn validate_list_options(opts: &ListOptions) -> Result<(), ApiError> {
    let mut errs = Vec::new();
    let rvm = opts.resource_version_match.as_str();
    if !rvm.is_empty() {
        if opts.resource_version.is_empty() {
            errs.push(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if !opts.continue_.is_empty() {
            errs.push(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        match rvm {
            "Exact" => {
                if opts.resource_version == "0" {
                    errs.push(FieldError::forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                    ));
                }
            }
            "NotOlderThan" => {}
            other => errs.push(FieldError::not_supported(
                "resourceVersionMatch",
                other,
                &["Exact", "NotOlderThan", ""],
            )),
        }
    }
    if opts.send_initial_events.is_some() {
        errs.push(FieldError::forbidden(
            "sendInitialEvents",
            "sendInitialEvents is forbidden for list",
        ));
    }
    result("ListOptions", errs)
}

/// Validates the options of a watch (the WatchList feature is on).
pub fn validate_watch_options(opts: &ListOptions) -> Result<(), ApiError> {
    let mut errs = Vec::new();
    let rvm = opts.resource_version_match.as_str();
    if opts.send_initial_events.is_some() && rvm != "NotOlderThan" {
        errs.push(FieldError::forbidden(
            "resourceVersionMatch",
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ));
    }
    if !rvm.is_empty() {
        if opts.send_initial_events.is_none() {
            errs.push(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ));
        }
        if rvm != "NotOlderThan" {
            errs.push(FieldError::not_supported(
                "resourceVersionMatch",
                rvm,
                &["NotOlderThan"],
            ));
        }
        if !opts.continue_.is_empty() {
            errs.push(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
    }
    result("ListOptions", errs)
}

/// Validates delete options (422 `DeleteOptions.meta.k8s.io "" is invalid: …`).
pub fn validate_delete_options(opts: &DeleteOptions) -> Result<(), ApiError> {
    let mut errs = Vec::new();
    if let Some(policy) = &opts.propagation_policy {
        if opts.orphan_dependents.is_some() {
            errs.push(FieldError::invalid(
                "propagationPolicy",
                policy.as_str(),
                "orphanDependents and deletionPropagation cannot be both set",
            ));
        }
        if !matches!(policy.as_str(), "Foreground" | "Background" | "Orphan") {
            errs.push(FieldError::not_supported(
                "propagationPolicy",
                policy.as_str(),
                &["Foreground", "Background", "Orphan", "nil"],
            ));
        }
    }
    for d in &opts.dry_run {
        if d != "All" {
            errs.push(FieldError::not_supported("dryRun", d.as_str(), &["All"]));
        }
    }
    result("DeleteOptions", errs)
}

/// The field labels a resource can be selected by: `metadata.name`, `metadata.namespace` and
/// the strategy's own (the keys it reports for an empty object).
pub fn known_field_labels(strategy: &dyn Strategy) -> Vec<String> {
    let mut labels = vec![
        "metadata.name".to_string(),
        "metadata.namespace".to_string(),
    ];
    labels.extend(strategy.selectable_fields(&json!({})).into_keys());
    labels
}

/// The attribute function of a resource: labels, `metadata.name`, `metadata.namespace` and the
/// strategy's selectable fields. Give it to the watch cache (`CacherConfig::get_attrs`).
pub fn attrs_func(strategy: Arc<dyn Strategy>) -> GetAttrs {
    Arc::new(move |bytes: &[u8]| {
        let obj: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        Ok(attrs_of(strategy.as_ref(), &obj))
    })
}

/// Labels and fields of a decoded object.
pub fn attrs_of(strategy: &dyn Strategy, obj: &Value) -> (Labels, Fields) {
    let meta = obj.get("metadata");
    let labels: Labels = meta
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default();
    let text = |f: &str| {
        meta.and_then(|m| m.get(f))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let mut fields = Fields::new();
    fields.insert("metadata.name".into(), text("name"));
    fields.insert("metadata.namespace".into(), text("namespace"));
    fields.extend(strategy.selectable_fields(obj));
    (labels, fields)
}

/// Parses the selectors of a request into a predicate (400 for unparseable selectors and
/// unknown field labels).
pub fn predicate(
    strategy: &Arc<dyn Strategy>,
    label_selector: &str,
    field_selector: &str,
) -> Result<SelectionPredicate, ApiError> {
    let label = LabelSelector::parse(label_selector).map_err(ApiError::bad_request)?;
    let field = FieldSelector::parse(field_selector).map_err(ApiError::bad_request)?;
    if !field.is_empty() {
        let known = known_field_labels(strategy.as_ref());
        let custom = known.len() > 2;
        for req in field.requirements() {
            if !known.contains(&req.field) {
                // Resources with their own field label conversion (pods, events, …) answer with
                // its message; the rest with the default metav1 conversion's.
                return Err(ApiError::bad_request(if custom {
                    format!("field label not supported: {}", req.field)
                } else {
                    format!(
                        "{:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
                        req.field
                    )
                }));
            }
        }
    }
    let mut pred = SelectionPredicate::new(label, field);
    pred.get_attrs = attrs_func(strategy.clone());
    Ok(pred)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(rv: &str, rvm: &str, cont: &str, sie: Option<bool>) -> ListOptions {
        ListOptions {
            resource_version: rv.into(),
            resource_version_match: rvm.into(),
            continue_: cont.into(),
            send_initial_events: sie,
            ..Default::default()
        }
    }

    fn message(r: Result<(), ApiError>) -> String {
        r.err().map(|e| e.0.message.clone()).unwrap_or_default()
    }

    #[test]
    fn list_options_table() {
        let cases = [
            (list("", "", "", None), ""),
            (list("5", "Exact", "", None), ""),
            (list("0", "NotOlderThan", "", None), ""),
            (
                list("", "Exact", "", None),
                "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
            ),
            (
                list("0", "Exact", "", None),
                "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ),
            (
                list("1", "Foo", "tok", None),
                "ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided, resourceVersionMatch: Unsupported value: \"Foo\": supported values: \"Exact\", \"NotOlderThan\", \"\"]",
            ),
            (
                list("", "", "", Some(true)),
                "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list",
            ),
        ];
        for (opts, want) in cases {
            assert_eq!(message(validate_list_options(&opts)), want, "{opts:?}");
        }
    }

    #[test]
    fn watch_options_table() {
        let cases = [
            (list("", "", "", None), ""),
            (list("", "NotOlderThan", "", Some(true)), ""),
            (
                list("", "", "", Some(true)),
                "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ),
            (
                list("1", "Exact", "", None),
                "ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided, resourceVersionMatch: Unsupported value: \"Exact\": supported values: \"NotOlderThan\"]",
            ),
        ];
        for (opts, want) in cases {
            assert_eq!(message(validate_watch_options(&opts)), want, "{opts:?}");
        }
    }

    #[test]
    fn delete_options_table() {
        let opts = DeleteOptions {
            propagation_policy: Some("Bogus".into()),
            ..Default::default()
        };
        assert_eq!(
            message(validate_delete_options(&opts)),
            "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Bogus\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
        );
    }
}
