//! admissionregistration.k8s.io/v1 MutatingWebhookConfiguration and
//! ValidatingWebhookConfiguration (cluster-scoped): upstream's v1 defaults, its validation with
//! its messages (`pkg/apis/admissionregistration/validation`), and the `NAME WEBHOOKS AGE`
//! table.

use std::collections::BTreeSet;

use apiserver::registry::field::FieldErrorType;
use apiserver::registry::{FieldError, ResourceInfo, Strategy, TableColumn};
use apiserver::util::cel::Expression;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use serde_json::{Value, json};

use crate::apis::ResourceDef;
use crate::apis::json::{array_at, array_mut, default_key, get, str_at};
use crate::apis::strategy::{BuiltinStrategy, info};
use crate::apis::table::{age_cell, age_column, column, name_cell, name_column};
use crate::apis::validation::{dns1123_subdomain, label_value, qualified_name, validate_labels};

/// The group of the webhook configurations.
pub const GROUP: &str = "admissionregistration.k8s.io";

/// The variables a webhook's match conditions may use (upstream declares `authorizer` too).
pub const MATCH_CONDITION_VARIABLES: &[&str] = &["object", "oldObject", "request", "authorizer"];

/// Upstream's limit on the match conditions of one webhook.
const MAX_MATCH_CONDITIONS: usize = 64;

/// The AdmissionReview versions this server sends (upstream `AcceptedAdmissionReviewVersions`).
pub const ACCEPTED_REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];

/// The webhook configuration resources.
pub fn resources() -> Vec<ResourceDef> {
    vec![
        validating_webhook_configurations(),
        mutating_webhook_configurations(),
    ]
}

/// Which of the two configuration kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Mutating,
    Validating,
}

/// The mutatingwebhookconfigurations resource.
pub fn mutating_webhook_configurations() -> ResourceDef {
    ResourceDef::new(ConfigurationStrategy {
        inner: BuiltinStrategy::new::<MutatingWebhookConfiguration>(info(
            GROUP,
            "v1",
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            false,
            &[],
            &["api-extensions"],
        ))
        .defaults(|obj| default_webhooks(obj, Kind::Mutating))
        .table(columns, row),
        kind: Kind::Mutating,
    })
}

/// The validatingwebhookconfigurations resource.
pub fn validating_webhook_configurations() -> ResourceDef {
    ResourceDef::new(ConfigurationStrategy {
        inner: BuiltinStrategy::new::<ValidatingWebhookConfiguration>(info(
            GROUP,
            "v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            false,
            &[],
            &["api-extensions"],
        ))
        .defaults(|obj| default_webhooks(obj, Kind::Validating))
        .table(columns, row),
        kind: Kind::Validating,
    })
}

/// The built-in strategy plus the webhook validation, which on update is relaxed where the
/// stored object already broke a rule (upstream's update validation options).
struct ConfigurationStrategy {
    inner: BuiltinStrategy,
    kind: Kind,
}

impl Strategy for ConfigurationStrategy {
    fn info(&self) -> &ResourceInfo {
        Strategy::info(&self.inner)
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        Strategy::prepare_for_create(&self.inner, obj);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        Strategy::prepare_for_update(&self.inner, new, old);
    }

    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Strategy::validate(&self.inner, obj);
        if errs.is_empty() || !is_type_error(&errs) {
            errs.extend(validate_configuration(obj, None, self.kind));
        }
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = Strategy::validate_update(&self.inner, new, old);
        if errs.is_empty() || !is_type_error(&errs) {
            errs.extend(validate_configuration(new, Some(old), self.kind));
        }
        errs
    }

    fn drop_unknown_fields(&self, obj: &mut Value) -> Vec<String> {
        Strategy::drop_unknown_fields(&self.inner, obj)
    }

    fn table_columns(&self) -> Vec<TableColumn> {
        Strategy::table_columns(&self.inner)
    }

    fn table_row(&self, obj: &Value) -> Vec<Value> {
        Strategy::table_row(&self.inner, obj)
    }
}

/// Whether the inner validation stopped at a type error (nothing else can be checked then).
fn is_type_error(errs: &[FieldError]) -> bool {
    errs.iter().any(|e| e.type_ == FieldErrorType::TypeInvalid)
}

fn columns() -> Vec<TableColumn> {
    vec![
        name_column(),
        column(
            "Webhooks",
            "integer",
            "Webhooks indicates the number of webhooks registered in this configuration",
            0,
        ),
        age_column(),
    ]
}

fn row(obj: &Value) -> Vec<Value> {
    vec![
        name_cell(obj),
        json!(array_at(obj, "webhooks").len()),
        age_cell(obj),
    ]
}

/// Upstream's v1 defaults of every webhook of a configuration.
fn default_webhooks(obj: &mut Value, kind: Kind) {
    let Some(hooks) = array_mut(obj, "webhooks") else {
        return;
    };
    for hook in hooks.iter_mut() {
        let Some(map) = hook.as_object_mut() else {
            continue;
        };
        default_key(map, "failurePolicy", json!("Fail"));
        default_key(map, "matchPolicy", json!("Equivalent"));
        default_key(map, "namespaceSelector", json!({}));
        default_key(map, "objectSelector", json!({}));
        default_key(map, "timeoutSeconds", json!(10));
        if kind == Kind::Mutating {
            default_key(map, "reinvocationPolicy", json!("Never"));
        }
        if let Some(Value::Array(rules)) = map.get_mut("rules") {
            for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
                default_key(rule, "scope", json!("*"));
            }
        }
        if let Some(Value::Object(service)) = map
            .get_mut("clientConfig")
            .and_then(|c| c.get_mut("service"))
        {
            default_key(service, "port", json!(443));
        }
    }
}

/// Whether every webhook of `old` satisfies `check` (upstream relaxes a rule on update when the
/// stored object already broke it).
fn all_hooks(old: Option<&Value>, check: impl Fn(&Value) -> bool) -> bool {
    old.is_none_or(|old| array_at(old, "webhooks").iter().all(check))
}

/// Upstream `validate{Mutating,Validating}WebhookConfiguration`, with the update relaxations
/// computed from `old` when there is one.
fn validate_configuration(obj: &Value, old: Option<&Value>, kind: Kind) -> Vec<FieldError> {
    let opts = Options {
        require_no_side_effects: all_hooks(old, |h| {
            matches!(str_at(h, "sideEffects"), Some("None" | "NoneOnDryRun"))
        }),
        require_recognized_review_version: all_hooks(old, |h| {
            let versions = array_at(h, "admissionReviewVersions");
            versions.is_empty()
                || versions.iter().any(|v| {
                    v.as_str()
                        .is_some_and(|v| ACCEPTED_REVIEW_VERSIONS.contains(&v))
                })
        }),
        require_unique_names: old.is_none_or(|old| {
            let mut seen = BTreeSet::new();
            array_at(old, "webhooks")
                .iter()
                .all(|h| seen.insert(str_at(h, "name").unwrap_or_default().to_string()))
        }),
        ignore_match_conditions: old.is_some_and(|old| {
            let (new_hooks, old_hooks) = (array_at(obj, "webhooks"), array_at(old, "webhooks"));
            new_hooks.len() == old_hooks.len()
                && new_hooks
                    .iter()
                    .zip(old_hooks)
                    .all(|(n, o)| n.get("matchConditions") == o.get("matchConditions"))
        }),
    };
    let mut errs = Vec::new();
    let mut names = BTreeSet::new();
    for (i, hook) in array_at(obj, "webhooks").iter().enumerate() {
        let path = format!("webhooks[{i}]");
        errs.extend(validate_webhook(hook, &opts, kind, &path));
        errs.extend(validate_review_versions(
            array_at(hook, "admissionReviewVersions"),
            opts.require_recognized_review_version,
            &format!("{path}.admissionReviewVersions"),
        ));
        let name = str_at(hook, "name").unwrap_or_default();
        if opts.require_unique_names && !name.is_empty() && !names.insert(name.to_string()) {
            errs.push(FieldError::duplicate(&format!("{path}.name"), name));
        }
    }
    errs
}

/// The update-time relaxations of upstream's validation options.
struct Options {
    require_no_side_effects: bool,
    require_recognized_review_version: bool,
    require_unique_names: bool,
    ignore_match_conditions: bool,
}

fn strings(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|s| s.as_str().unwrap_or_default())
                .collect()
        })
        .unwrap_or_default()
}

fn validate_webhook(hook: &Value, opts: &Options, kind: Kind, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    errs.extend(fully_qualified_name(
        &format!("{path}.name"),
        str_at(hook, "name").unwrap_or_default(),
    ));
    for (i, rule) in array_at(hook, "rules").iter().enumerate() {
        errs.extend(validate_rule_with_operations(
            rule,
            &format!("{path}.rules[{i}]"),
        ));
    }
    if let Some(policy) = get(hook, "failurePolicy").filter(|v| !v.is_null())
        && !matches!(policy.as_str(), Some("Fail" | "Ignore"))
    {
        errs.push(FieldError::not_supported(
            &format!("{path}.failurePolicy"),
            policy.clone(),
            &["Fail", "Ignore"],
        ));
    }
    if let Some(policy) = get(hook, "matchPolicy").filter(|v| !v.is_null())
        && !matches!(policy.as_str(), Some("Equivalent" | "Exact"))
    {
        errs.push(FieldError::not_supported(
            &format!("{path}.matchPolicy"),
            policy.clone(),
            &["Equivalent", "Exact"],
        ));
    }
    let allowed: &[&str] = if opts.require_no_side_effects {
        &["None", "NoneOnDryRun"]
    } else {
        &["None", "NoneOnDryRun", "Some", "Unknown"]
    };
    match get(hook, "sideEffects").filter(|v| !v.is_null()) {
        None => errs.push(FieldError::required(
            &format!("{path}.sideEffects"),
            &format!("must specify one of {}", allowed.join(", ")),
        )),
        Some(v) if !v.as_str().is_some_and(|s| allowed.contains(&s)) => {
            errs.push(FieldError::not_supported(
                &format!("{path}.sideEffects"),
                v.clone(),
                allowed,
            ));
        }
        Some(_) => {}
    }
    if let Some(timeout) = get(hook, "timeoutSeconds").and_then(Value::as_i64)
        && !(1..=30).contains(&timeout)
    {
        errs.push(FieldError::invalid(
            &format!("{path}.timeoutSeconds"),
            timeout,
            "the timeout value must be between 1 and 30 seconds",
        ));
    }
    for selector in ["namespaceSelector", "objectSelector"] {
        if let Some(sel) = get(hook, selector).filter(|v| !v.is_null()) {
            errs.extend(validate_label_selector(sel, &format!("{path}.{selector}")));
        }
    }
    if kind == Kind::Mutating
        && let Some(policy) = get(hook, "reinvocationPolicy").filter(|v| !v.is_null())
        && !matches!(policy.as_str(), Some("Never" | "IfNeeded"))
    {
        errs.push(FieldError::not_supported(
            &format!("{path}.reinvocationPolicy"),
            policy.clone(),
            &["IfNeeded", "Never"],
        ));
    }
    errs.extend(validate_client_config(
        get(hook, "clientConfig").unwrap_or(&Value::Null),
        &format!("{path}.clientConfig"),
    ));
    if !opts.ignore_match_conditions {
        errs.extend(validate_match_conditions(
            array_at(hook, "matchConditions"),
            &format!("{path}.matchConditions"),
        ));
    }
    errs
}

/// Upstream `IsFullyQualifiedName`: a DNS subdomain with at least three segments.
fn fully_qualified_name(path: &str, name: &str) -> Vec<FieldError> {
    if name.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let errs = dns1123_subdomain(name);
    if !errs.is_empty() {
        return vec![FieldError::invalid(path, name, &errs.join(","))];
    }
    if name.split('.').count() < 3 {
        return vec![FieldError::invalid(
            path,
            name,
            "should be a domain with at least three segments separated by dots",
        )];
    }
    Vec::new()
}

const OPERATIONS: &[&str] = &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];

fn has_wildcard(items: &[&str]) -> bool {
    items.contains(&"*")
}

fn validate_rule_with_operations(rule: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let operations = strings(rule.get("operations"));
    if operations.is_empty() {
        errs.push(FieldError::required(&format!("{path}.operations"), ""));
    }
    if operations.len() > 1 && has_wildcard(&operations) {
        errs.push(FieldError::invalid(
            &format!("{path}.operations"),
            json!(operations),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in operations.iter().enumerate() {
        if !OPERATIONS.contains(op) {
            errs.push(FieldError::not_supported(
                &format!("{path}.operations[{i}]"),
                *op,
                OPERATIONS,
            ));
        }
    }
    let groups = strings(rule.get("apiGroups"));
    if groups.is_empty() {
        errs.push(FieldError::required(&format!("{path}.apiGroups"), ""));
    }
    if groups.len() > 1 && has_wildcard(&groups) {
        errs.push(FieldError::invalid(
            &format!("{path}.apiGroups"),
            json!(groups),
            "if '*' is present, must not specify other API groups",
        ));
    }
    let versions = strings(rule.get("apiVersions"));
    if versions.is_empty() {
        errs.push(FieldError::required(&format!("{path}.apiVersions"), ""));
    }
    if versions.len() > 1 && has_wildcard(&versions) {
        errs.push(FieldError::invalid(
            &format!("{path}.apiVersions"),
            json!(versions),
            "if '*' is present, must not specify other API versions",
        ));
    }
    for (i, version) in versions.iter().enumerate() {
        if version.is_empty() {
            errs.push(FieldError::required(
                &format!("{path}.apiVersions[{i}]"),
                "",
            ));
        }
    }
    errs.extend(validate_resources(
        &strings(rule.get("resources")),
        &format!("{path}.resources"),
    ));
    if let Some(scope) = rule.get("scope").filter(|v| !v.is_null())
        && !matches!(scope.as_str(), Some("*" | "Cluster" | "Namespaced"))
    {
        errs.push(FieldError::not_supported(
            &format!("{path}.scope"),
            scope.clone(),
            &["*", "Cluster", "Namespaced"],
        ));
    }
    errs
}

/// Upstream `validateResources`: `*`, `*/*`, `x/*` and `*/x` combinations.
fn validate_resources(resources: &[&str], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if resources.is_empty() {
        errs.push(FieldError::required(path, ""));
    }
    let mut with_wildcard_sub = BTreeSet::new();
    let mut sub_with_wildcard_res = BTreeSet::new();
    let (mut double, mut single, mut plain) = (false, false, false);
    for (i, res_sub) in resources.iter().enumerate() {
        if res_sub.is_empty() {
            errs.push(FieldError::required(&format!("{path}[{i}]"), ""));
            continue;
        }
        if *res_sub == "*/*" {
            double = true;
        }
        if *res_sub == "*" {
            single = true;
        }
        let Some((res, sub)) = res_sub.split_once('/') else {
            plain = *res_sub != "*";
            continue;
        };
        if with_wildcard_sub.contains(res) {
            errs.push(FieldError::invalid(
                &format!("{path}[{i}]"),
                *res_sub,
                &format!("if '{res}/*' is present, must not specify {res_sub}"),
            ));
        }
        if sub_with_wildcard_res.contains(sub) {
            errs.push(FieldError::invalid(
                &format!("{path}[{i}]"),
                *res_sub,
                &format!("if '*/{sub}' is present, must not specify {res_sub}"),
            ));
        }
        if sub == "*" {
            with_wildcard_sub.insert(res);
        }
        if res == "*" {
            sub_with_wildcard_res.insert(sub);
        }
    }
    if resources.len() > 1 && double {
        errs.push(FieldError::invalid(
            path,
            json!(resources),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single && plain {
        errs.push(FieldError::invalid(
            path,
            json!(resources),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
    errs
}

fn validate_review_versions(
    versions: &[Value],
    require_recognized: bool,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if versions.is_empty() {
        errs.push(FieldError::required(
            path,
            &format!(
                "must specify one of {}",
                ACCEPTED_REVIEW_VERSIONS.join(", ")
            ),
        ));
        return errs;
    }
    let mut seen = BTreeSet::new();
    let mut accepted = false;
    for (i, v) in versions.iter().enumerate() {
        let v = v.as_str().unwrap_or_default();
        if !seen.insert(v) {
            errs.push(FieldError::invalid(
                &format!("{path}[{i}]"),
                v,
                "duplicate version",
            ));
            continue;
        }
        for msg in apiserver::registry::names::dns1035_label(v) {
            errs.push(FieldError::invalid(&format!("{path}[{i}]"), v, &msg));
        }
        accepted |= ACCEPTED_REVIEW_VERSIONS.contains(&v);
    }
    if require_recognized && !accepted {
        errs.push(FieldError::invalid(
            path,
            json!(versions),
            &format!(
                "must include at least one of {}",
                ACCEPTED_REVIEW_VERSIONS.join(", ")
            ),
        ));
    }
    errs
}

/// Upstream's `exactly one of url or service` and the URL and service checks
/// (`util/webhook.ValidateWebhookURL`, `ValidateWebhookService`).
fn validate_client_config(cc: &Value, path: &str) -> Vec<FieldError> {
    let url = cc.get("url").filter(|v| !v.is_null());
    let service = cc.get("service").filter(|v| !v.is_null());
    match (url, service) {
        (Some(url), None) => validate_url(&format!("{path}.url"), url.as_str().unwrap_or_default()),
        (None, Some(service)) => validate_service(&format!("{path}.service"), service),
        _ => vec![FieldError::required(
            path,
            "exactly one of url or service is required",
        )],
    }
}

/// The parts of a URL as Go's `url.Parse` splits them.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct UrlParts<'a> {
    /// The scheme, e.g. `https`.
    pub scheme: &'a str,
    /// User information before `@`, if any.
    pub user: Option<&'a str>,
    /// `host[:port]`.
    pub host: &'a str,
    /// The path.
    pub path: &'a str,
    /// The query without `?`.
    pub query: &'a str,
    /// The fragment without `#`.
    pub fragment: &'a str,
}

/// Splits an absolute URL (`scheme://[user@]host[/path][?query][#fragment]`).
pub fn split_url(url: &str) -> Result<UrlParts<'_>, String> {
    if url.chars().any(|c| c.is_ascii_control() || c == ' ') {
        return Err(format!(
            "parse {url:?}: net/url: invalid control character in URL"
        ));
    }
    let (rest, fragment) = url.split_once('#').unwrap_or((url, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let Some((scheme, rest)) = rest.split_once("://") else {
        return Ok(UrlParts {
            path: rest,
            query,
            fragment,
            ..Default::default()
        });
    };
    if scheme.is_empty() {
        return Err(format!("parse {url:?}: missing protocol scheme"));
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let (user, host) = match authority.rsplit_once('@') {
        Some((user, host)) => (Some(user), host),
        None => (None, authority),
    };
    Ok(UrlParts {
        scheme,
        user,
        host,
        path,
        query,
        fragment,
    })
}

fn validate_url(path: &str, url: &str) -> Vec<FieldError> {
    const FORM: &str = "; desired format: https://host[/path]";
    let mut errs = Vec::new();
    let parts = match split_url(url) {
        Ok(parts) => parts,
        Err(e) => {
            return vec![FieldError::required(
                path,
                &format!("url must be a valid URL: {e}{FORM}"),
            )];
        }
    };
    if parts.scheme != "https" {
        errs.push(FieldError::invalid(
            path,
            parts.scheme,
            &format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    if parts.host.is_empty() {
        errs.push(FieldError::invalid(
            path,
            parts.host,
            &format!("host must be specified{FORM}"),
        ));
    }
    if let Some(user) = parts.user {
        errs.push(FieldError::invalid(
            path,
            user,
            "user information is not permitted in the URL",
        ));
    }
    if !parts.fragment.is_empty() {
        errs.push(FieldError::invalid(
            path,
            parts.fragment,
            "fragments are not permitted in the URL",
        ));
    }
    if !parts.query.is_empty() {
        errs.push(FieldError::invalid(
            path,
            parts.query,
            "query parameters are not permitted in the URL",
        ));
    }
    errs
}

fn validate_service(path: &str, service: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if str_at(service, "name").unwrap_or_default().is_empty() {
        errs.push(FieldError::required(&format!("{path}.name"), ""));
    }
    if str_at(service, "namespace").unwrap_or_default().is_empty() {
        errs.push(FieldError::required(&format!("{path}.namespace"), ""));
    }
    let port = service.get("port").and_then(Value::as_i64).unwrap_or(443);
    if !(1..=65535).contains(&port) {
        errs.push(FieldError::invalid(
            &format!("{path}.port"),
            port,
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let Some(url_path) = str_at(service, "path") else {
        return errs;
    };
    if url_path.is_empty() || url_path == "/" {
        return errs;
    }
    let field = format!("{path}.path");
    if url_path == "//" {
        errs.push(FieldError::invalid(
            &field,
            url_path,
            "segment[0] may not be empty",
        ));
        return errs;
    }
    if !url_path.starts_with('/') {
        errs.push(FieldError::invalid(
            &field,
            url_path,
            "must start with a '/'",
        ));
    }
    let mut check = url_path.get(1..).unwrap_or_default();
    check = check.strip_suffix('/').unwrap_or(check);
    for (i, step) in check.split('/').enumerate() {
        if step.is_empty() {
            errs.push(FieldError::invalid(
                &field,
                url_path,
                &format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for msg in dns1123_subdomain(step) {
            errs.push(FieldError::invalid(
                &field,
                url_path,
                &format!("segment[{i}]: {msg}"),
            ));
        }
    }
    errs
}

fn validate_match_conditions(conditions: &[Value], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if conditions.len() > MAX_MATCH_CONDITIONS {
        errs.push(FieldError {
            type_: FieldErrorType::TooMany,
            field: path.to_string(),
            bad_value: None,
            detail: format!(
                "{}: must have at most {MAX_MATCH_CONDITIONS} items",
                conditions.len()
            ),
        });
    }
    let mut names = BTreeSet::new();
    for (i, condition) in conditions.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let expression = str_at(condition, "expression").unwrap_or_default().trim();
        if expression.is_empty() {
            errs.push(FieldError::required(&format!("{at}.expression"), ""));
        } else if let Err(msg) = Expression::compile(expression, MATCH_CONDITION_VARIABLES) {
            errs.push(FieldError::invalid(
                &format!("{at}.expression"),
                expression,
                &msg,
            ));
        }
        let name = str_at(condition, "name").unwrap_or_default();
        if name.is_empty() {
            errs.push(FieldError::required(&format!("{at}.name"), ""));
        } else {
            for msg in qualified_name(name) {
                errs.push(FieldError::invalid(&format!("{at}.name"), name, &msg));
            }
            if !names.insert(name) {
                errs.push(FieldError::duplicate(&format!("{at}.name"), name));
            }
        }
    }
    errs
}

/// Upstream `metav1validation.ValidateLabelSelector` (invalid label values refused).
pub fn validate_label_selector(selector: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = validate_labels(selector.get("matchLabels"), &format!("{path}.matchLabels"));
    for (i, req) in array_at(selector, "matchExpressions").iter().enumerate() {
        let at = format!("{path}.matchExpressions[{i}]");
        let values = array_at(req, "values");
        match str_at(req, "operator").unwrap_or_default() {
            "In" | "NotIn" => {
                if values.is_empty() {
                    errs.push(FieldError::required(
                        &format!("{at}.values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    errs.push(FieldError::forbidden(
                        &format!("{at}.values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            other => errs.push(FieldError::invalid(
                &format!("{at}.operator"),
                other,
                "not a valid selector operator",
            )),
        }
        let key = str_at(req, "key").unwrap_or_default();
        for msg in qualified_name(key) {
            errs.push(FieldError::invalid(&format!("{at}.key"), key, &msg));
        }
        for (j, value) in values.iter().enumerate() {
            let value = value.as_str().unwrap_or_default();
            for msg in label_value(value) {
                errs.push(FieldError::invalid(
                    &format!("{at}.values[{j}]"),
                    value,
                    &msg,
                ));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook() -> Value {
        json!({
            "name": "deny.example.com",
            "clientConfig": {"url": "https://127.0.0.1:8443/validate", "caBundle": "Cg=="},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"]
        })
    }

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn defaults_follow_upstream_v1() {
        let def = mutating_webhook_configurations();
        let mut obj = json!({"metadata": {"name": "m"}, "webhooks": [
            {"name": "a.b.c", "clientConfig": {"service": {"namespace": "ns", "name": "svc"}},
             "rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]}
        ]});
        def.strategy.prepare_for_create(&mut obj);
        let hook = &obj["webhooks"][0];
        assert_eq!(hook["failurePolicy"], "Fail");
        assert_eq!(hook["matchPolicy"], "Equivalent");
        assert_eq!(hook["namespaceSelector"], json!({}));
        assert_eq!(hook["objectSelector"], json!({}));
        assert_eq!(hook["timeoutSeconds"], 10);
        assert_eq!(hook["reinvocationPolicy"], "Never");
        assert_eq!(hook["rules"][0]["scope"], "*");
        assert_eq!(hook["clientConfig"]["service"]["port"], 443);
        let mut validating = json!({"metadata": {"name": "v"}, "webhooks": [hook.clone()]});
        validating["webhooks"][0]
            .as_object_mut()
            .unwrap()
            .remove("reinvocationPolicy");
        validating_webhook_configurations()
            .strategy
            .prepare_for_create(&mut validating);
        assert!(
            validating["webhooks"][0]
                .get("reinvocationPolicy")
                .is_none()
        );
    }

    #[test]
    fn a_valid_configuration_has_no_errors_and_prints_its_webhook_count() {
        let def = validating_webhook_configurations();
        let mut obj = json!({"metadata": {"name": "v"}, "webhooks": [hook()]});
        def.strategy.prepare_for_create(&mut obj);
        assert_eq!(messages(&def.strategy.validate(&obj)), Vec::<String>::new());
        assert_eq!(def.strategy.table_row(&obj)[1], json!(1));
    }

    #[test]
    fn names_side_effects_versions_and_duplicates_as_upstream() {
        let mut a = hook();
        a["name"] = json!("two.parts");
        a.as_object_mut().unwrap().remove("sideEffects");
        a["admissionReviewVersions"] = json!([]);
        let mut b = hook();
        b["name"] = json!("same.example.com");
        b["sideEffects"] = json!("Some");
        let c = json!({"name": "same.example.com"})
            .as_object()
            .unwrap()
            .clone();
        let mut c2 = hook();
        c2.as_object_mut().unwrap().extend(c);
        let obj = json!({"metadata": {"name": "v"}, "webhooks": [a, b, c2]});
        let got = messages(&validate_configuration(&obj, None, Kind::Validating));
        assert_eq!(
            got,
            vec![
                "webhooks[0].name: Invalid value: \"two.parts\": should be a domain with at least three segments separated by dots",
                "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
                "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
                "webhooks[1].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"",
                "webhooks[2].name: Duplicate value: \"same.example.com\"",
            ]
        );
    }

    #[test]
    fn client_config_needs_exactly_one_https_url_or_service() {
        let check = |cc: Value| {
            let mut h = hook();
            h["clientConfig"] = cc;
            messages(&validate_configuration(
                &json!({"metadata": {"name": "v"}, "webhooks": [h]}),
                None,
                Kind::Validating,
            ))
        };
        assert_eq!(
            check(json!({})),
            vec![
                "webhooks[0].clientConfig: Required value: exactly one of url or service is required"
            ]
        );
        assert_eq!(
            check(json!({"url": "http://example.com/x?a=b"})),
            vec![
                "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
                "webhooks[0].clientConfig.url: Invalid value: \"a=b\": query parameters are not permitted in the URL",
            ]
        );
        assert_eq!(
            check(json!({"service": {"name": "s", "namespace": "n", "path": "/Bad", "port": 0}})),
            vec![
                "webhooks[0].clientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive",
                "webhooks[0].clientConfig.service.path: Invalid value: \"/Bad\": segment[0]: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            ]
        );
    }

    #[test]
    fn rules_selectors_timeouts_and_conditions_are_checked() {
        let mut h = hook();
        h["rules"] = json!([{"operations": ["CREATE", "*"], "apiGroups": [], "apiVersions": ["v1"],
                             "resources": ["*", "pods"], "scope": "Everywhere"}]);
        h["timeoutSeconds"] = json!(31);
        h["objectSelector"] =
            json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]});
        h["matchConditions"] = json!([{"name": "bad", "expression": "object.metadata.name =="},
                                      {"name": "bad", "expression": "true"}]);
        let got = messages(&validate_configuration(
            &json!({"metadata": {"name": "v"}, "webhooks": [h]}),
            None,
            Kind::Validating,
        ));
        assert_eq!(
            got[0],
            "webhooks[0].rules[0].operations: Invalid value: [\"CREATE\",\"*\"]: if '*' is present, must not specify other operations"
        );
        assert_eq!(got[1], "webhooks[0].rules[0].apiGroups: Required value");
        assert_eq!(
            got[2],
            "webhooks[0].rules[0].resources: Invalid value: [\"*\",\"pods\"]: if '*' is present, must not specify other resources without subresources"
        );
        assert_eq!(
            got[3],
            "webhooks[0].rules[0].scope: Unsupported value: \"Everywhere\": supported values: \"*\", \"Cluster\", \"Namespaced\""
        );
        assert_eq!(
            got[4],
            "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds"
        );
        assert_eq!(
            got[5],
            "webhooks[0].objectSelector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
        );
        assert!(got[6].starts_with("webhooks[0].matchConditions[0].expression: Invalid value: \"object.metadata.name ==\": compilation failed: "), "{}", got[6]);
        assert_eq!(
            got[7],
            "webhooks[0].matchConditions[1].name: Duplicate value: \"bad\""
        );
        assert_eq!(got.len(), 8, "{got:#?}");
    }

    #[test]
    fn resource_wildcards_follow_upstream() {
        assert!(validate_resources(&["*/*"], "r").is_empty());
        assert!(validate_resources(&["pods/*", "*/status"], "r").is_empty());
        assert_eq!(
            messages(&validate_resources(&["pods/*", "pods/status"], "r")),
            vec![
                "r[1]: Invalid value: \"pods/status\": if 'pods/*' is present, must not specify pods/status"
            ]
        );
        assert_eq!(
            messages(&validate_resources(&["*/*", "pods"], "r")),
            vec![
                "r: Invalid value: [\"*/*\",\"pods\"]: if '*/*' is present, must not specify other resources"
            ]
        );
    }

    #[test]
    fn urls_split_like_go() {
        let parts = split_url("https://user@host:8443/a/b?q=1#frag").unwrap();
        assert_eq!(
            parts,
            UrlParts {
                scheme: "https",
                user: Some("user"),
                host: "host:8443",
                path: "/a/b",
                query: "q=1",
                fragment: "frag"
            }
        );
        assert!(split_url("https://h/\n").is_err());
    }
}
