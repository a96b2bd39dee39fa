//! admissionregistration.k8s.io admission policies: ValidatingAdmissionPolicy (with `status`)
//! and ValidatingAdmissionPolicyBinding in v1, MutatingAdmissionPolicy and
//! MutatingAdmissionPolicyBinding in v1beta1 (served only with the `MutatingAdmissionPolicy`
//! feature gate and `--runtime-config=admissionregistration.k8s.io/v1beta1=true`, as in
//! kube-apiserver 1.35). Defaults, validation with upstream's messages (CEL expressions
//! compiled against the policy environment) and upstream's table columns.

use std::collections::BTreeSet;

use apiserver::registry::FieldError;
use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::admissionregistration::v1beta1::{
    MutatingAdmissionPolicy, MutatingAdmissionPolicyBinding,
};
use serde_json::{Value, json};

use crate::admission::policy::cel::Program;
use crate::apis::ResourceDef;
use crate::apis::json::{array_at, default_at, get, object_at, str_at};
use crate::apis::strategy::{BuiltinStrategy, info};
use crate::apis::table::{
    age_cell, age_column, column, format_label_selector, name_cell, name_column,
};
use crate::apis::validation::{dns1035_label, dns1123_subdomain, path_segment, qualified_name};

const GROUP: &str = "admissionregistration.k8s.io";

/// admissionregistration.k8s.io/v1 policy resources.
pub fn resources() -> Vec<ResourceDef> {
    vec![
        validating_admission_policies(),
        validating_admission_policy_bindings(),
    ]
}

/// admissionregistration.k8s.io/v1beta1 policy resources (off unless enabled).
pub fn resources_v1beta1() -> Vec<ResourceDef> {
    vec![
        mutating_admission_policies(),
        mutating_admission_policy_bindings(),
    ]
}

/// The validatingadmissionpolicies resource.
pub fn validating_admission_policies() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<ValidatingAdmissionPolicy>(info(
            GROUP,
            "v1",
            "ValidatingAdmissionPolicy",
            "validatingadmissionpolicies",
            false,
            &[],
            &["api-extensions"],
        ))
        .status()
        .generation()
        .defaults(default_validating_policy)
        .validate(|obj| validate_validating_policy(obj, None))
        .validate_update(|new, old| validate_validating_policy(new, Some(old)))
        .table(
            || {
                vec![
                    name_column(),
                    column("Validations", "integer", "Validations indicates the number of validation rules defined in this configuration", 0),
                    column("ParamKind", "string", "ParamKind specifies the kind of resources used to parameterize this policy", 0),
                    age_column(),
                ]
            },
            |obj| {
                vec![
                    name_cell(obj),
                    json!(array_at(obj, "spec.validations").len()),
                    json!(param_kind_cell(obj)),
                    age_cell(obj),
                ]
            },
        ),
    )
    .with(&["status"])
}

/// The validatingadmissionpolicybindings resource.
pub fn validating_admission_policy_bindings() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<ValidatingAdmissionPolicyBinding>(info(
            GROUP,
            "v1",
            "ValidatingAdmissionPolicyBinding",
            "validatingadmissionpolicybindings",
            false,
            &[],
            &["api-extensions"],
        ))
        .generation()
        .defaults(default_binding)
        .validate(|obj| validate_binding(obj, true))
        .table(binding_columns, binding_row),
    )
}

/// The mutatingadmissionpolicies resource (v1beta1).
pub fn mutating_admission_policies() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<MutatingAdmissionPolicy>(info(
            GROUP,
            "v1beta1",
            "MutatingAdmissionPolicy",
            "mutatingadmissionpolicies",
            false,
            &[],
            &["api-extensions"],
        ))
        .generation()
        .defaults(default_mutating_policy)
        .validate(validate_mutating_policy)
        .table(
            || {
                vec![
                    name_column(),
                    column("Mutations", "integer", "Mutation indicates the number of mutations rules defined in this configuration", 0),
                    column("ParamKind", "string", "ParamKind specifies the kind of resources used to parameterize this policy", 0),
                    age_column(),
                ]
            },
            |obj| {
                vec![
                    name_cell(obj),
                    json!(array_at(obj, "spec.mutations").len()),
                    json!(param_kind_cell(obj)),
                    age_cell(obj),
                ]
            },
        ),
    )
}

/// The mutatingadmissionpolicybindings resource (v1beta1).
pub fn mutating_admission_policy_bindings() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<MutatingAdmissionPolicyBinding>(info(
            GROUP,
            "v1beta1",
            "MutatingAdmissionPolicyBinding",
            "mutatingadmissionpolicybindings",
            false,
            &[],
            &["api-extensions"],
        ))
        .generation()
        .defaults(default_binding)
        .validate(|obj| validate_binding(obj, false))
        .table(binding_columns, binding_row),
    )
}

fn binding_columns() -> Vec<apiserver::registry::TableColumn> {
    vec![
        name_column(),
        column(
            "PolicyName",
            "string",
            "PolicyName indicates the policy definition which the policy binding binded to",
            0,
        ),
        column(
            "ParamRef",
            "string",
            "ParamRef indicates the param resource which sets the configration param",
            0,
        ),
        age_column(),
    ]
}

fn binding_row(obj: &Value) -> Vec<Value> {
    let param = match get(obj, "spec.paramRef").filter(|p| p.is_object()) {
        None => "<unset>".to_string(),
        Some(p) => match (
            str_at(p, "name").filter(|n| !n.is_empty()),
            get(p, "selector"),
        ) {
            (Some(name), _) => match str_at(p, "namespace").filter(|n| !n.is_empty()) {
                Some(ns) => format!("{ns}/{name}"),
                None => format!("*/{name}"),
            },
            (None, Some(selector)) if !selector.is_null() => format_label_selector(Some(selector)),
            _ => "<unset>".to_string(),
        },
    };
    vec![
        name_cell(obj),
        json!(str_at(obj, "spec.policyName").unwrap_or_default()),
        json!(param),
        age_cell(obj),
    ]
}

fn param_kind_cell(obj: &Value) -> String {
    match get(obj, "spec.paramKind").filter(|p| p.is_object()) {
        Some(p) => format!(
            "{}/{}",
            str_at(p, "apiVersion").unwrap_or_default(),
            str_at(p, "kind").unwrap_or_default()
        ),
        None => "<unset>".to_string(),
    }
}

// ---- defaults ----

fn default_match_resources(obj: &mut Value, path: &str) {
    if get(obj, path).is_none_or(Value::is_null) {
        return;
    }
    default_at(obj, &format!("{path}.matchPolicy"), json!("Equivalent"));
    default_at(obj, &format!("{path}.namespaceSelector"), json!({}));
    default_at(obj, &format!("{path}.objectSelector"), json!({}));
    for rules in ["resourceRules", "excludeResourceRules"] {
        if let Some(Value::Array(items)) = object_at(obj, path).and_then(|m| m.get_mut(rules)) {
            for rule in items.iter_mut().filter(|r| r.is_object()) {
                default_at(rule, "scope", json!("*"));
            }
        }
    }
}

fn default_validating_policy(obj: &mut Value) {
    if !obj.get("spec").is_some_and(Value::is_object) {
        return;
    }
    default_at(obj, "spec.failurePolicy", json!("Fail"));
    default_match_resources(obj, "spec.matchConstraints");
}

fn default_mutating_policy(obj: &mut Value) {
    if !obj.get("spec").is_some_and(Value::is_object) {
        return;
    }
    default_at(obj, "spec.failurePolicy", json!("Fail"));
    default_at(obj, "spec.reinvocationPolicy", json!("Never"));
    default_match_resources(obj, "spec.matchConstraints");
}

fn default_binding(obj: &mut Value) {
    default_match_resources(obj, "spec.matchResources");
}

// ---- validation ----

/// The variables a policy expression may use.
pub fn declared_variables(
    has_params: bool,
    authorizer: bool,
    variables: bool,
) -> Vec<&'static str> {
    let mut vars = vec!["object", "oldObject", "request", "namespaceObject"];
    if has_params {
        vars.push("params");
    }
    if authorizer {
        vars.push("authorizer");
    }
    if variables {
        vars.push("variables");
    }
    vars
}

fn compile_error(errs: &mut Vec<FieldError>, field: &str, text: &str, declared: &[&str]) {
    if let Err(detail) = Program::compile(text, declared) {
        errs.push(FieldError::invalid(field, text, &detail));
    }
}

fn is_cel_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        && !apiserver::util::cel::RESERVED_WORDS.contains(&name)
}

fn has_newlines(s: &str) -> bool {
    s.contains('\n') || s.contains('\r')
}

fn validate_param_kind(p: &Value, path: &str, errs: &mut Vec<FieldError>) {
    match str_at(p, "apiVersion").filter(|s| !s.is_empty()) {
        None => errs.push(FieldError::required(&format!("{path}.apiVersion"), "")),
        Some(api_version) => {
            let (group, version) = match api_version.split('/').collect::<Vec<_>>().as_slice() {
                [v] => ("", *v),
                [g, v] => (*g, *v),
                _ => {
                    errs.push(FieldError::invalid(
                        &format!("{path}.apiVersion"),
                        api_version,
                        &format!("unexpected GroupVersion string: {api_version}"),
                    ));
                    ("", "x")
                }
            };
            if !group.is_empty() {
                let e = dns1123_subdomain(group);
                if !e.is_empty() {
                    errs.push(FieldError::invalid(
                        &format!("{path}.apiVersion"),
                        group,
                        &e.join(","),
                    ));
                }
            }
            if version.is_empty() {
                errs.push(FieldError::invalid(
                    &format!("{path}.apiVersion"),
                    api_version,
                    "version must be specified",
                ));
            } else {
                let e = dns1035_label(version);
                if !e.is_empty() {
                    errs.push(FieldError::invalid(
                        &format!("{path}.apiVersion"),
                        version,
                        &e.join(","),
                    ));
                }
            }
        }
    }
    match str_at(p, "kind").filter(|s| !s.is_empty()) {
        None => errs.push(FieldError::required(&format!("{path}.kind"), "")),
        Some(kind) => {
            let e = dns1035_label(&kind.to_lowercase());
            if !e.is_empty() {
                errs.push(FieldError::invalid(
                    &format!("{path}.kind"),
                    kind,
                    &format!(
                        "may have mixed case, but should otherwise match: {}",
                        e.join(",")
                    ),
                ));
            }
        }
    }
}

/// Upstream `ValidateLabelSelector` (strict).
pub fn validate_label_selector(sel: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if let Some(Value::Object(labels)) = sel.get("matchLabels") {
        for (k, v) in labels {
            for e in qualified_name(k) {
                errs.push(FieldError::invalid(
                    &format!("{path}.matchLabels"),
                    k.as_str(),
                    &e,
                ));
            }
            let value = v.as_str().unwrap_or_default();
            for e in crate::apis::validation::label_value(value) {
                errs.push(FieldError::invalid(
                    &format!("{path}.matchLabels"),
                    value,
                    &e,
                ));
            }
        }
    }
    for (i, req) in array_at(sel, "matchExpressions").iter().enumerate() {
        let p = format!("{path}.matchExpressions[{i}]");
        let values = array_at(req, "values");
        match str_at(req, "operator").unwrap_or_default() {
            "In" | "NotIn" => {
                if values.is_empty() {
                    errs.push(FieldError::required(
                        &format!("{p}.values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    errs.push(FieldError::forbidden(
                        &format!("{p}.values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            other => errs.push(FieldError::invalid(
                &format!("{p}.operator"),
                other,
                "not a valid selector operator",
            )),
        }
        let key = str_at(req, "key").unwrap_or_default();
        for e in qualified_name(key) {
            errs.push(FieldError::invalid(&format!("{p}.key"), key, &e));
        }
    }
}

fn star_exclusive(list: &[Value], path: &str, what: &str, errs: &mut Vec<FieldError>) {
    if list.len() > 1 && list.iter().any(|v| v == "*") {
        errs.push(FieldError::invalid(
            path,
            Value::Array(list.to_vec()),
            &format!("if '*' is present, must not specify other {what}"),
        ));
    }
}

fn validate_rule(rule: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let operations = array_at(rule, "operations");
    if operations.is_empty() {
        errs.push(FieldError::required(&format!("{path}.operations"), ""));
    }
    star_exclusive(
        operations,
        &format!("{path}.operations"),
        "operations",
        errs,
    );
    for (i, op) in operations.iter().enumerate() {
        let op = op.as_str().unwrap_or_default();
        if !["*", "CREATE", "UPDATE", "DELETE", "CONNECT"].contains(&op) {
            errs.push(FieldError::not_supported(
                &format!("{path}.operations[{i}]"),
                op,
                &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"],
            ));
        }
    }
    let groups = array_at(rule, "apiGroups");
    if groups.is_empty() {
        errs.push(FieldError::required(&format!("{path}.apiGroups"), ""));
    }
    star_exclusive(groups, &format!("{path}.apiGroups"), "API groups", errs);
    let versions = array_at(rule, "apiVersions");
    if versions.is_empty() {
        errs.push(FieldError::required(&format!("{path}.apiVersions"), ""));
    }
    star_exclusive(
        versions,
        &format!("{path}.apiVersions"),
        "API versions",
        errs,
    );
    for (i, v) in versions.iter().enumerate() {
        if v.as_str().is_none_or(str::is_empty) {
            errs.push(FieldError::required(
                &format!("{path}.apiVersions[{i}]"),
                "",
            ));
        }
    }
    let resources = array_at(rule, "resources");
    if resources.is_empty() {
        errs.push(FieldError::required(&format!("{path}.resources"), ""));
    }
    let mut seen = BTreeSet::new();
    for (i, r) in resources.iter().enumerate() {
        let r = r.as_str().unwrap_or_default();
        let p = format!("{path}.resources[{i}]");
        if r.is_empty() {
            errs.push(FieldError::required(&p, ""));
            continue;
        }
        if !seen.insert(r) {
            errs.push(FieldError::duplicate(&p, r));
        }
        let (res, sub) = r.split_once('/').unwrap_or((r, ""));
        if r.matches('/').count() > 1 || (r.contains('/') && sub.is_empty()) || res.is_empty() {
            errs.push(FieldError::invalid(
                &p,
                r,
                "must be of the form 'resource' or 'resource/subresource'",
            ));
        }
    }
    if resources.len() > 1 && resources.iter().any(|r| r == "*") {
        errs.push(FieldError::invalid(
            &format!("{path}.resources"),
            Value::Array(resources.to_vec()),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
    if let Some(scope) = str_at(rule, "scope")
        && !["*", "Cluster", "Namespaced"].contains(&scope)
    {
        errs.push(FieldError::not_supported(
            &format!("{path}.scope"),
            scope,
            &["*", "Cluster", "Namespaced"],
        ));
    }
    let mut names = BTreeSet::new();
    for (i, n) in array_at(rule, "resourceNames").iter().enumerate() {
        let n = n.as_str().unwrap_or_default();
        let p = format!("{path}.resourceNames[{i}]");
        for e in path_segment(n) {
            errs.push(FieldError::invalid(&p, n, &e));
        }
        if !names.insert(n) {
            errs.push(FieldError::duplicate(&p, n));
        }
    }
}

fn validate_match_resources(mr: &Value, path: &str, errs: &mut Vec<FieldError>) {
    match str_at(mr, "matchPolicy") {
        None => errs.push(FieldError::required(&format!("{path}.matchPolicy"), "")),
        Some(p) if !["Exact", "Equivalent"].contains(&p) => errs.push(FieldError::not_supported(
            &format!("{path}.matchPolicy"),
            p,
            &["Equivalent", "Exact"],
        )),
        Some(_) => {}
    }
    for sel in ["namespaceSelector", "objectSelector"] {
        match get(mr, sel).filter(|s| !s.is_null()) {
            None => errs.push(FieldError::required(&format!("{path}.{sel}"), "")),
            Some(s) => validate_label_selector(s, &format!("{path}.{sel}"), errs),
        }
    }
    for rules in ["resourceRules", "excludeResourceRules"] {
        for (i, rule) in array_at(mr, rules).iter().enumerate() {
            validate_rule(rule, &format!("{path}.{rules}[{i}]"), errs);
        }
    }
}

fn validate_match_conditions(spec: &Value, has_params: bool, errs: &mut Vec<FieldError>) {
    let conditions = array_at(spec, "matchConditions");
    if conditions.len() > 64 {
        errs.push(FieldError {
            type_: apiserver::registry::FieldErrorType::TooMany,
            field: "spec.matchConditions".into(),
            bad_value: None,
            detail: format!("{}: must have at most 64 items", conditions.len()),
        });
    }
    let mut names = BTreeSet::new();
    let declared = declared_variables(has_params, true, false);
    for (i, c) in conditions.iter().enumerate() {
        let p = format!("spec.matchConditions[{i}]");
        let expression = str_at(c, "expression").unwrap_or_default().trim();
        if expression.is_empty() {
            errs.push(FieldError::required(&format!("{p}.expression"), ""));
        } else {
            compile_error(errs, &format!("{p}.expression"), expression, &declared);
        }
        let name = str_at(c, "name").unwrap_or_default();
        if name.is_empty() {
            errs.push(FieldError::required(&format!("{p}.name"), ""));
        } else {
            for e in qualified_name(name) {
                errs.push(FieldError::invalid(&format!("{p}.name"), name, &e));
            }
            if !names.insert(name) {
                errs.push(FieldError::duplicate(&format!("{p}.name"), name));
            }
        }
    }
}

fn validate_variables(spec: &Value, has_params: bool, errs: &mut Vec<FieldError>) {
    let declared = declared_variables(has_params, true, true);
    for (i, v) in array_at(spec, "variables").iter().enumerate() {
        let p = format!("spec.variables[{i}]");
        let name = str_at(v, "name").unwrap_or_default();
        if name.trim().is_empty() {
            errs.push(FieldError::required(
                &format!("{p}.name"),
                "name is not specified",
            ));
        } else if !is_cel_identifier(name) {
            errs.push(FieldError::invalid(
                &format!("{p}.name"),
                name,
                "name is not a valid CEL identifier",
            ));
        }
        let expression = str_at(v, "expression").unwrap_or_default();
        if expression.trim().is_empty() {
            errs.push(FieldError::required(
                &format!("{p}.expression"),
                "expression is not specified",
            ));
        } else {
            compile_error(errs, &format!("{p}.expression"), expression, &declared);
        }
    }
}

/// The spec parts both policy kinds share: failurePolicy, paramKind, matchConstraints,
/// matchConditions, variables.
fn validate_policy_common(obj: &Value, errs: &mut Vec<FieldError>) -> bool {
    let spec = get(obj, "spec").cloned().unwrap_or(Value::Null);
    match str_at(&spec, "failurePolicy") {
        None => errs.push(FieldError::required("spec.failurePolicy", "")),
        Some(f) if !["Fail", "Ignore"].contains(&f) => errs.push(FieldError::not_supported(
            "spec.failurePolicy",
            f,
            &["Fail", "Ignore"],
        )),
        Some(_) => {}
    }
    let has_params = get(&spec, "paramKind").is_some_and(Value::is_object);
    if let Some(pk) = get(&spec, "paramKind").filter(|p| p.is_object()) {
        validate_param_kind(pk, "spec.paramKind", errs);
    }
    match get(&spec, "matchConstraints").filter(|m| m.is_object()) {
        None => errs.push(FieldError::required("spec.matchConstraints", "")),
        Some(mc) => {
            validate_match_resources(mc, "spec.matchConstraints", errs);
            if array_at(mc, "resourceRules").is_empty() {
                errs.push(FieldError::required(
                    "spec.matchConstraints.resourceRules",
                    "",
                ));
            }
        }
    }
    validate_match_conditions(&spec, has_params, errs);
    validate_variables(&spec, has_params, errs);
    has_params
}

fn validate_validating_policy(obj: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let has_params = validate_policy_common(obj, &mut errs);
    let spec = get(obj, "spec").cloned().unwrap_or(Value::Null);
    let validations = array_at(&spec, "validations");
    let annotations = array_at(&spec, "auditAnnotations");
    if validations.is_empty() && annotations.is_empty() {
        let detail = "validations or auditAnnotations must contain at least one item";
        errs.push(FieldError::required("spec.validations", detail));
        errs.push(FieldError::required("spec.auditAnnotations", detail));
        return errs;
    }
    let with_vars = !array_at(&spec, "variables").is_empty();
    let declared = declared_variables(has_params, true, with_vars);
    let message_declared = declared_variables(has_params, false, with_vars);
    for (i, v) in validations.iter().enumerate() {
        let p = format!("spec.validations[{i}]");
        let expression = str_at(v, "expression").unwrap_or_default();
        if expression.trim().is_empty() {
            errs.push(FieldError::required(
                &format!("{p}.expression"),
                "expression is not specified",
            ));
        } else {
            compile_error(&mut errs, &format!("{p}.expression"), expression, &declared);
        }
        let message_expression = str_at(v, "messageExpression").unwrap_or_default();
        if !message_expression.is_empty() && message_expression.trim().is_empty() {
            errs.push(FieldError::invalid(
                &format!("{p}.messageExpression"),
                message_expression,
                "must be non-empty if specified",
            ));
        } else if !message_expression.trim().is_empty() {
            compile_error(
                &mut errs,
                &format!("{p}.messageExpression"),
                message_expression,
                &message_declared,
            );
        }
        let message = str_at(v, "message").unwrap_or_default();
        if !message.is_empty() && message.trim().is_empty() {
            errs.push(FieldError::invalid(
                &format!("{p}.message"),
                message,
                "message must be non-empty if specified",
            ));
        } else if has_newlines(message.trim()) {
            errs.push(FieldError::invalid(
                &format!("{p}.message"),
                message,
                "message must not contain line breaks",
            ));
        }
        if let Some(reason) = str_at(v, "reason") {
            let supported = [
                "Forbidden",
                "Invalid",
                "RequestEntityTooLarge",
                "Unauthorized",
            ];
            if !supported.contains(&reason) {
                errs.push(FieldError::not_supported(
                    &format!("{p}.reason"),
                    reason,
                    &supported,
                ));
            }
        }
    }
    if annotations.len() > 20 {
        errs.push(FieldError::invalid(
            "spec.auditAnnotations",
            Value::Array(annotations.to_vec()),
            "must not have more than 20 auditAnnotations",
        ));
    }
    let policy_name = str_at(obj, "metadata.name").unwrap_or_default();
    let mut keys = BTreeSet::new();
    for (i, a) in annotations.iter().enumerate() {
        let p = format!("spec.auditAnnotations[{i}]");
        let key = str_at(a, "key").unwrap_or_default();
        if policy_name.is_empty() {
            errs.push(FieldError::invalid(
                &format!("{p}.key"),
                key,
                "requires metadata.name be non-empty",
            ));
        } else {
            let full = format!("{policy_name}/{key}");
            for e in qualified_name(&full) {
                errs.push(FieldError::invalid(&format!("{p}.key"), full.as_str(), &e));
            }
        }
        let value = str_at(a, "valueExpression").unwrap_or_default().trim();
        if value.is_empty() {
            errs.push(FieldError::required(
                &format!("{p}.valueExpression"),
                "valueExpression is not specified",
            ));
        } else if value.len() > 5 * 1024 {
            errs.push(FieldError::required(
                &format!("{p}.valueExpression"),
                "must not exceed 5120 bytes in length",
            ));
        } else {
            compile_error(&mut errs, &format!("{p}.valueExpression"), value, &declared);
        }
        if !keys.insert(key) {
            errs.push(FieldError::duplicate(&format!("{p}.key"), key));
        }
    }
    errs
}

fn validate_mutating_policy(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let has_params = validate_policy_common(obj, &mut errs);
    let spec = get(obj, "spec").cloned().unwrap_or(Value::Null);
    match str_at(&spec, "reinvocationPolicy") {
        None => errs.push(FieldError::required("spec.reinvocationPolicy", "")),
        Some(r) if !["Never", "IfNeeded"].contains(&r) => errs.push(FieldError::not_supported(
            "spec.reinvocationPolicy",
            r,
            &["IfNeeded", "Never"],
        )),
        Some(_) => {}
    }
    let with_vars = !array_at(&spec, "variables").is_empty();
    let mut declared = declared_variables(has_params, true, with_vars);
    let mutations = array_at(&spec, "mutations");
    if mutations.is_empty() {
        errs.push(FieldError::required(
            "spec.mutations",
            "mutations must contain at least one item",
        ));
    }
    for (i, m) in mutations.iter().enumerate() {
        let p = format!("spec.mutations[{i}]");
        match str_at(m, "patchType") {
            Some("ApplyConfiguration") => {
                if get(m, "jsonPatch").is_some_and(|j| !j.is_null()) {
                    errs.push(FieldError::forbidden(
                        &format!("{p}.jsonPatch"),
                        "must not be specified when patchType is ApplyConfiguration",
                    ));
                }
                match str_at(m, "applyConfiguration.expression").filter(|e| !e.trim().is_empty()) {
                    None => errs.push(FieldError::required(
                        &format!("{p}.applyConfiguration"),
                        "must be specified when patchType is ApplyConfiguration",
                    )),
                    Some(e) => compile_error(
                        &mut errs,
                        &format!("{p}.applyConfiguration.expression"),
                        e,
                        &declared,
                    ),
                }
            }
            Some("JSONPatch") => {
                if get(m, "applyConfiguration").is_some_and(|j| !j.is_null()) {
                    errs.push(FieldError::forbidden(
                        &format!("{p}.applyConfiguration"),
                        "must not be specified when patchType is JSONPatch",
                    ));
                }
                match str_at(m, "jsonPatch.expression").filter(|e| !e.trim().is_empty()) {
                    None => errs.push(FieldError::required(
                        &format!("{p}.jsonPatch"),
                        "must be specified when patchType is JSONPatch",
                    )),
                    Some(e) => {
                        declared.push("JSONPatch");
                        compile_error(
                            &mut errs,
                            &format!("{p}.jsonPatch.expression"),
                            e,
                            &declared,
                        );
                        declared.pop();
                    }
                }
            }
            Some(other) => errs.push(FieldError::not_supported(
                &format!("{p}.patchType"),
                other,
                &["ApplyConfiguration", "JSONPatch"],
            )),
            None => errs.push(FieldError::required(&format!("{p}.patchType"), "")),
        }
    }
    errs
}

fn validate_binding(obj: &Value, validating: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = get(obj, "spec").cloned().unwrap_or(Value::Null);
    match str_at(&spec, "policyName").filter(|s| !s.is_empty()) {
        None => errs.push(FieldError::required("spec.policyName", "")),
        Some(name) => {
            for e in dns1123_subdomain(name) {
                errs.push(FieldError::invalid("spec.policyName", name, &e));
            }
        }
    }
    if let Some(pr) = get(&spec, "paramRef").filter(|p| p.is_object()) {
        let name = str_at(pr, "name").unwrap_or_default();
        let selector = get(pr, "selector").filter(|s| !s.is_null());
        if !name.is_empty() {
            for e in path_segment(name) {
                errs.push(FieldError::invalid("spec.paramRef.name", name, &e));
            }
            if selector.is_some() {
                errs.push(FieldError::forbidden(
                    "spec.paramRef.name",
                    "name and selector are mutually exclusive",
                ));
            }
        }
        if let Some(s) = selector {
            validate_label_selector(s, "spec.paramRef.selector", &mut errs);
            if !name.is_empty() {
                errs.push(FieldError::forbidden(
                    "spec.paramRef.selector",
                    "name and selector are mutually exclusive",
                ));
            }
        }
        if name.is_empty() && selector.is_none() {
            errs.push(FieldError::required(
                "spec.paramRef",
                "one of name or selector must be specified",
            ));
        }
        match str_at(pr, "parameterNotFoundAction").filter(|s| !s.is_empty()) {
            None => errs.push(FieldError::required(
                "spec.paramRef.parameterNotFoundAction",
                "",
            )),
            Some(a) if a != "Deny" && a != "Allow" => errs.push(FieldError::not_supported(
                "spec.paramRef.parameterNotFoundAction",
                a,
                &["Deny", "Allow"],
            )),
            Some(_) => {}
        }
    }
    if let Some(mr) = get(&spec, "matchResources").filter(|m| m.is_object()) {
        validate_match_resources(mr, "spec.matchResources", &mut errs);
    }
    if validating {
        let actions = array_at(&spec, "validationActions");
        let mut seen = BTreeSet::new();
        for (i, a) in actions.iter().enumerate() {
            let a = a.as_str().unwrap_or_default();
            let p = format!("spec.validationActions[{i}]");
            if !["Deny", "Warn", "Audit"].contains(&a) {
                errs.push(FieldError::not_supported(&p, a, &["Audit", "Deny", "Warn"]));
            }
            if !seen.insert(a) {
                errs.push(FieldError::duplicate(&p, a));
            }
        }
        if seen.contains("Deny") && seen.contains("Warn") {
            errs.push(FieldError::invalid(
                "spec.validationActions",
                Value::Array(actions.to_vec()),
                "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
            ));
        }
        if seen.is_empty() {
            errs.push(FieldError::required(
                "spec.validationActions",
                "at least one validation action is required",
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(def: &ResourceDef, obj: &mut Value) -> Vec<String> {
        def.strategy.prepare_for_create(obj);
        def.strategy
            .validate(obj)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn policies_default_and_validate_as_upstream() {
        let def = validating_admission_policies();
        let mut p = json!({"metadata": {"name": "max-replicas"}, "spec": {
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
            "validations": [{"expression": "object.spec.replicas <= int(params.data.max)"}]}});
        assert_eq!(errors(&def, &mut p), Vec::<String>::new());
        assert_eq!(p["spec"]["failurePolicy"], "Fail");
        assert_eq!(p["spec"]["matchConstraints"]["matchPolicy"], "Equivalent");
        assert_eq!(
            p["spec"]["matchConstraints"]["resourceRules"][0]["scope"],
            "*"
        );
        assert_eq!(
            def.strategy.table_row(&p)[1..3],
            [json!(1), json!("v1/ConfigMap")]
        );

        let mut bad = json!({"metadata": {"name": "p"}, "spec": {
            "failurePolicy": "Sometimes",
            "validations": [{"expression": "object.spec.replicas <=", "message": "a\nb", "reason": "Teapot"},
                            {"expression": "params.x"}]}});
        let errs = errors(&def, &mut bad);
        assert!(errs.contains(&"spec.failurePolicy: Unsupported value: \"Sometimes\": supported values: \"Fail\", \"Ignore\"".to_string()), "{errs:?}");
        assert!(
            errs.contains(&"spec.matchConstraints: Required value".to_string()),
            "{errs:?}"
        );
        assert!(errs.iter().any(|e| e.starts_with("spec.validations[0].expression: Invalid value: \"object.spec.replicas <=\": compilation failed: ")), "{errs:?}");
        assert!(errs.contains(&"spec.validations[0].message: Invalid value: \"a\\nb\": message must not contain line breaks".to_string()), "{errs:?}");
        assert!(errs.iter().any(|e| e.starts_with("spec.validations[0].reason: Unsupported value: \"Teapot\"")), "{errs:?}");
        assert!(
            errs.iter()
                .any(|e| e.contains("spec.validations[1].expression")
                    && e.contains("undeclared reference to 'params'")),
            "{errs:?}"
        );
    }

    #[test]
    fn bindings_validate_actions_and_param_refs() {
        let def = validating_admission_policy_bindings();
        let mut b = json!({"metadata": {"name": "b"}, "spec": {"policyName": "p",
            "validationActions": ["Deny", "Warn", "Deny"],
            "paramRef": {"name": "x", "selector": {}}}});
        let errs = errors(&def, &mut b);
        assert!(
            errs.contains(&"spec.validationActions[2]: Duplicate value: \"Deny\"".to_string()),
            "{errs:?}"
        );
        assert!(
            errs.iter()
                .any(|e| e.contains("must not contain both Deny and Warn")),
            "{errs:?}"
        );
        assert!(
            errs.contains(
                &"spec.paramRef.name: Forbidden: name and selector are mutually exclusive"
                    .to_string()
            ),
            "{errs:?}"
        );
        assert!(
            errs.contains(&"spec.paramRef.parameterNotFoundAction: Required value".to_string()),
            "{errs:?}"
        );
        let mut ok = json!({"metadata": {"name": "b"}, "spec": {"policyName": "p",
            "validationActions": ["Deny"], "paramRef": {"namespace": "d", "name": "cfg", "parameterNotFoundAction": "Deny"}}});
        assert_eq!(errors(&def, &mut ok), Vec::<String>::new());
        assert_eq!(
            def.strategy.table_row(&ok)[1..3],
            [json!("p"), json!("d/cfg")]
        );
        let mut none = json!({"metadata": {"name": "b"}, "spec": {"policyName": "p"}});
        assert!(errors(&def, &mut none).contains(&"spec.validationActions: Required value: at least one validation action is required".to_string()));
    }

    #[test]
    fn mutating_policies_need_one_kind_of_patch_each() {
        let def = mutating_admission_policies();
        let mut p = json!({"metadata": {"name": "m"}, "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["configmaps"]}]},
            "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Object{metadata: Object.metadata{labels: {'a': 'b'}}}"}},
                          {"patchType": "JSONPatch", "jsonPatch": {"expression": "[JSONPatch{op: 'add', path: '/data/x', value: 'y'}]"}}]}});
        assert_eq!(errors(&def, &mut p), Vec::<String>::new());
        assert_eq!(p["spec"]["reinvocationPolicy"], "Never");
        let mut bad = json!({"metadata": {"name": "m"}, "spec": {"matchConstraints": p["spec"]["matchConstraints"].clone(),
            "mutations": [{"patchType": "JSONPatch"}]}});
        assert!(errors(&def, &mut bad).contains(&"spec.mutations[0].jsonPatch: Required value: must be specified when patchType is JSONPatch".to_string()));
    }
}
