//! The access reviews of authorization.k8s.io/v1 (upstream's `pkg/registry/authorization`):
//! each create asks the server's authorizer and answers with the review and its status; nothing
//! is stored.
//!
//! - SubjectAccessReview: may the user, groups and extra of the spec do this?
//! - LocalSubjectAccessReview: the same, within the review's namespace.
//! - SelfSubjectAccessReview: may I (the requesting user) do this?
//! - SelfSubjectRulesReview: what may I do in a namespace (the authorizers' rules)?

use std::collections::BTreeMap;
use std::sync::Arc;

use apiserver::authz::rules::UserRules;
use apiserver::authz::{Attributes, Decision};
use apiserver::registry::rest::{BoxFuture, CreateOptions, RequestContext, RestStorage};
use apiserver::registry::{FieldError, ResourceInfo, SharedStrategy, Strategy};
use apiserver::request::UserInfo;
use apiserver::status::ApiError;
use apiserver::storage::selection::fields::FieldSelector;
use apiserver::storage::selection::labels::LabelSelector;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::apis::authorization::GROUP;
use crate::auth::AuthzHandle;

/// Which review a storage serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Review {
    /// `subjectaccessreviews`.
    Subject,
    /// `localsubjectaccessreviews`.
    LocalSubject,
    /// `selfsubjectaccessreviews`.
    SelfSubject,
    /// `selfsubjectrulesreviews`.
    SelfSubjectRules,
}

impl Review {
    /// The review served under `resource`.
    pub fn for_resource(resource: &str) -> Option<Self> {
        Some(match resource {
            "subjectaccessreviews" => Review::Subject,
            "localsubjectaccessreviews" => Review::LocalSubject,
            "selfsubjectaccessreviews" => Review::SelfSubject,
            "selfsubjectrulesreviews" => Review::SelfSubjectRules,
            _ => return None,
        })
    }
}

/// A label or field selector of `resourceAttributes`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct SelectorAttributes {
    raw_selector: String,
    requirements: Vec<SelectorRequirement>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
struct SelectorRequirement {
    key: String,
    operator: String,
    values: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct ResourceAttributes {
    namespace: String,
    verb: String,
    group: String,
    version: String,
    resource: String,
    subresource: String,
    name: String,
    field_selector: Option<SelectorAttributes>,
    label_selector: Option<SelectorAttributes>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
struct NonResourceAttributes {
    path: String,
    verb: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct ReviewSpec {
    resource_attributes: Option<ResourceAttributes>,
    non_resource_attributes: Option<NonResourceAttributes>,
    user: String,
    groups: Option<Vec<String>>,
    extra: Option<BTreeMap<String, Vec<String>>>,
    uid: String,
    namespace: String,
}

/// One access review resource.
pub struct AccessReviewStorage {
    strategy: SharedStrategy,
    review: Review,
    authz: AuthzHandle,
}

/// Whether a JSON value is Go's zero value (what `Semantic.DeepEqual` with an empty
/// `ObjectMeta` accepts).
fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.values().all(is_zero),
    }
}

/// `metadata` must be empty (besides managed fields, and the namespace of a local review).
fn validate_metadata(obj: &Value, keep_namespace: bool, errs: &mut Vec<FieldError>) {
    let Some(meta) = obj.get("metadata").and_then(Value::as_object) else {
        return;
    };
    let set = meta
        .iter()
        .filter(|(k, _)| *k != "managedFields" && !(keep_namespace && *k == "namespace"))
        .any(|(_, v)| !is_zero(v));
    if set {
        let detail = if keep_namespace {
            "must be empty except for namespace"
        } else {
            "must be empty"
        };
        errs.push(FieldError::invalid(
            "metadata",
            Value::Object(meta.clone()),
            detail,
        ));
    }
}

fn validate_selector(selector: Option<&SelectorAttributes>, path: &str) -> Vec<FieldError> {
    let Some(selector) = selector else {
        return Vec::new();
    };
    let mut errs = Vec::new();
    if !selector.raw_selector.is_empty() && !selector.requirements.is_empty() {
        errs.push(FieldError::invalid(
            &format!("{path}.rawSelector"),
            selector.raw_selector.clone(),
            "may not specified at the same time as requirements",
        ));
    }
    if selector.raw_selector.is_empty() && selector.requirements.is_empty() {
        errs.push(FieldError::required(
            &format!("{path}.requirements"),
            &format!("when {path} is specified, requirements or rawSelector is required"),
        ));
    }
    errs
}

/// The checks upstream's `authorization/validation` makes of a review.
fn validate(review: Review, obj: &Value, spec: &ReviewSpec) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if review != Review::SelfSubjectRules {
        let both = spec.resource_attributes.is_some() && spec.non_resource_attributes.is_some();
        let neither = spec.resource_attributes.is_none() && spec.non_resource_attributes.is_none();
        if both || neither {
            errs.push(FieldError::invalid(
                "spec",
                obj.pointer("/spec/nonResourceAttributes")
                    .cloned()
                    .unwrap_or(Value::Null),
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            ));
        }
    }
    if matches!(review, Review::Subject | Review::LocalSubject)
        && spec.user.is_empty()
        && spec.groups.as_ref().is_none_or(Vec::is_empty)
    {
        errs.push(FieldError::invalid(
            "spec.user",
            spec.user.clone(),
            "at least one of user or group must be specified",
        ));
    }
    if let Some(attrs) = &spec.resource_attributes {
        errs.extend(validate_selector(
            attrs.field_selector.as_ref(),
            "spec.resourceAttributes.fieldSelector",
        ));
        errs.extend(validate_selector(
            attrs.label_selector.as_ref(),
            "spec.resourceAttributes.labelSelector",
        ));
    }
    match review {
        Review::Subject | Review::SelfSubject => validate_metadata(obj, false, &mut errs),
        Review::LocalSubject => {
            validate_metadata(obj, true, &mut errs);
            let namespace = obj
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if let Some(attrs) = &spec.resource_attributes
                && attrs.namespace != namespace
            {
                errs.push(FieldError::invalid(
                    "spec.resourceAttributes.namespace",
                    attrs.namespace.clone(),
                    "must match metadata.namespace",
                ));
            }
            if spec.non_resource_attributes.is_some() {
                errs.push(FieldError::invalid(
                    "spec.nonResourceAttributes",
                    obj.pointer("/spec/nonResourceAttributes")
                        .cloned()
                        .unwrap_or(Value::Null),
                    "disallowed on this kind of request",
                ));
            }
        }
        Review::SelfSubjectRules => {}
    }
    errs
}

/// How a selector of the review turned into the raw selector the authorizer sees.
enum Selector {
    /// Fully understood (possibly empty).
    Parsed(String),
    /// Some requirements were dropped.
    Partial(String),
    /// Nothing could be used.
    Ignored,
}

fn label_selector(selector: &SelectorAttributes) -> Selector {
    if !selector.raw_selector.is_empty() {
        return match LabelSelector::parse(&selector.raw_selector) {
            Ok(_) => Selector::Parsed(selector.raw_selector.clone()),
            Err(_) => Selector::Ignored,
        };
    }
    let mut terms = Vec::new();
    let mut dropped = false;
    for r in &selector.requirements {
        let term = match r.operator.as_str() {
            "In" => format!("{} in ({})", r.key, r.values.join(",")),
            "NotIn" => format!("{} notin ({})", r.key, r.values.join(",")),
            "Exists" if r.values.is_empty() => r.key.clone(),
            "DoesNotExist" if r.values.is_empty() => format!("!{}", r.key),
            _ => {
                dropped = true;
                continue;
            }
        };
        if LabelSelector::parse(&term).is_ok() {
            terms.push(term);
        } else {
            dropped = true;
        }
    }
    combine(terms, dropped)
}

fn field_selector(selector: &SelectorAttributes) -> Selector {
    if !selector.raw_selector.is_empty() {
        return match FieldSelector::parse(&selector.raw_selector) {
            Ok(_) => Selector::Parsed(selector.raw_selector.clone()),
            Err(_) => Selector::Ignored,
        };
    }
    let mut terms = Vec::new();
    let mut dropped = false;
    for r in &selector.requirements {
        let op = match (r.operator.as_str(), r.values.len()) {
            ("In", 1) => "=",
            ("NotIn", 1) => "!=",
            _ => {
                dropped = true;
                continue;
            }
        };
        terms.push(format!(
            "{}{op}{}",
            r.key,
            apiserver::storage::selection::fields::escape_value(&r.values[0])
        ));
    }
    combine(terms, dropped)
}

fn combine(terms: Vec<String>, dropped: bool) -> Selector {
    match (terms.is_empty(), dropped) {
        (_, false) => Selector::Parsed(terms.join(",")),
        (true, true) => Selector::Ignored,
        (false, true) => Selector::Partial(terms.join(",")),
    }
}

/// The authorizer attributes of a review, and the selector problems upstream reports as
/// evaluation errors (`ResourceAttributesFrom`, `BuildEvaluationError`).
fn review_attributes(user: Arc<UserInfo>, spec: &ReviewSpec) -> (Attributes, Vec<String>) {
    let mut notes = Vec::new();
    let Some(resource) = &spec.resource_attributes else {
        let non_resource = spec.non_resource_attributes.clone().unwrap_or_default();
        return (
            Attributes {
                user: Some(user),
                verb: non_resource.verb,
                path: non_resource.path,
                ..Default::default()
            },
            notes,
        );
    };
    let mut attrs = Attributes {
        user: Some(user),
        verb: resource.verb.clone(),
        namespace: resource.namespace.clone(),
        api_group: resource.group.clone(),
        api_version: if resource.version.is_empty() {
            "*".into()
        } else {
            resource.version.clone()
        },
        resource: resource.resource.clone(),
        subresource: resource.subresource.clone(),
        name: resource.name.clone(),
        resource_request: true,
        ..Default::default()
    };
    for (which, selector, parsed) in [
        (
            "fieldSelector",
            resource.field_selector.as_ref(),
            resource.field_selector.as_ref().map(field_selector),
        ),
        (
            "labelSelector",
            resource.label_selector.as_ref(),
            resource.label_selector.as_ref().map(label_selector),
        ),
    ] {
        let (Some(_), Some(parsed)) = (selector, parsed) else {
            continue;
        };
        let raw = match parsed {
            Selector::Parsed(raw) => raw,
            Selector::Partial(raw) => {
                notes.push(format!(
                    "spec.resourceAttributes.{which} partially ignored due to parse error"
                ));
                raw
            }
            Selector::Ignored => {
                notes.push(format!(
                    "spec.resourceAttributes.{which} ignored due to parse error"
                ));
                String::new()
            }
        };
        if which == "fieldSelector" {
            attrs.field_selector = raw;
        } else {
            attrs.label_selector = raw;
        }
    }
    (attrs, notes)
}

fn rules_status(rules: UserRules) -> Value {
    let resource_rules: Vec<Value> = rules
        .resource_rules
        .into_iter()
        .map(|r| {
            let mut rule = Map::new();
            rule.insert("verbs".into(), json!(r.verbs));
            for (key, values) in [
                ("apiGroups", r.api_groups),
                ("resources", r.resources),
                ("resourceNames", r.resource_names),
            ] {
                if !values.is_empty() {
                    rule.insert(key.into(), json!(values));
                }
            }
            Value::Object(rule)
        })
        .collect();
    let non_resource_rules: Vec<Value> = rules
        .non_resource_rules
        .into_iter()
        .map(|r| {
            let mut rule = Map::new();
            rule.insert("verbs".into(), json!(r.verbs));
            if !r.non_resource_urls.is_empty() {
                rule.insert("nonResourceURLs".into(), json!(r.non_resource_urls));
            }
            Value::Object(rule)
        })
        .collect();
    let mut status = Map::new();
    status.insert("resourceRules".into(), Value::Array(resource_rules));
    status.insert("nonResourceRules".into(), Value::Array(non_resource_rules));
    status.insert("incomplete".into(), Value::Bool(rules.incomplete));
    if let Some(err) = rules.error {
        status.insert("evaluationError".into(), Value::String(err.to_string()));
    }
    Value::Object(status)
}

/// Go writes a zero `creationTimestamp` as `null`.
fn with_null_creation_timestamp(obj: &mut Value) {
    if let Some(map) = obj.as_object_mut() {
        let meta = map
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(meta) = meta.as_object_mut() {
            meta.entry("creationTimestamp").or_insert(Value::Null);
        }
    }
}

impl AccessReviewStorage {
    /// The storage of `review`, asking the authorizer behind `authz`.
    pub fn new(strategy: SharedStrategy, review: Review, authz: AuthzHandle) -> Self {
        AccessReviewStorage {
            strategy,
            review,
            authz,
        }
    }

    async fn review(&self, ctx: &RequestContext, mut obj: Value) -> Result<Value, ApiError> {
        let spec = obj
            .get("spec")
            .map(ReviewSpec::deserialize)
            .transpose()
            .map_err(|e| ApiError::bad_request(format!("spec: {e}")))?
            .unwrap_or_default();
        let info = self.strategy.info();
        let errs = validate(self.review, &obj, &spec);
        if !errs.is_empty() {
            // Upstream names the kind of the decoded object, whose kind is empty by then.
            return Err(ApiError::invalid(
                GROUP,
                "",
                "",
                errs.iter().map(FieldError::to_cause).collect(),
            ));
        }
        let authorizer = self.authz.get()?.authorizer.clone();
        let requester = || {
            ctx.user
                .clone()
                .ok_or_else(|| ApiError::bad_request("no user present on request"))
        };
        if self.review == Review::SelfSubjectRules {
            let user = requester()?;
            if spec.namespace.is_empty() {
                return Err(ApiError::bad_request("no namespace on request"));
            }
            let rules = authorizer.rules_for(&user, &spec.namespace).await;
            // Upstream answers a fresh review holding only the status.
            return Ok(json!({
                "kind": info.kind,
                "apiVersion": info.api_version(),
                "metadata": {"creationTimestamp": null},
                "spec": {},
                "status": rules_status(rules),
            }));
        }
        if self.review == Review::LocalSubject {
            if ctx.namespace.is_empty() {
                return Err(ApiError::bad_request(
                    "namespace is required on this type: ",
                ));
            }
            let namespace = obj
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if namespace != ctx.namespace {
                return Err(ApiError::bad_request(format!(
                    "spec.resourceAttributes.namespace must match namespace: {}",
                    ctx.namespace
                )));
            }
        }
        let user = match self.review {
            Review::SelfSubject => requester()?,
            _ => Arc::new(UserInfo {
                name: spec.user.clone(),
                uid: spec.uid.clone(),
                groups: spec.groups.clone().unwrap_or_default(),
                extra: spec.extra.clone().unwrap_or_default(),
            }),
        };
        let (attrs, notes) = review_attributes(user, &spec);
        let (decision, reason, err) = authorizer.authorize(&attrs).await;
        let mut evaluation: Vec<String> = err.iter().map(ToString::to_string).collect();
        evaluation.extend(notes);
        let mut status = Map::new();
        status.insert("allowed".into(), Value::Bool(decision == Decision::Allow));
        if decision == Decision::Deny {
            status.insert("denied".into(), Value::Bool(true));
        }
        if !reason.is_empty() {
            status.insert("reason".into(), Value::String(reason));
        }
        if !evaluation.is_empty() {
            status.insert(
                "evaluationError".into(),
                Value::String(evaluation.join("; ")),
            );
        }
        with_null_creation_timestamp(&mut obj);
        if let Some(map) = obj.as_object_mut() {
            map.insert("status".into(), Value::Object(status));
        }
        Ok(obj)
    }
}

impl RestStorage for AccessReviewStorage {
    /// Not stored (upstream's REST for it is no `StorageVersionProvider`): discovery gives no
    /// `storageVersionHash`.
    fn is_stored(&self) -> bool {
        false
    }

    fn info(&self) -> &ResourceInfo {
        self.strategy.info()
    }

    fn verbs(&self) -> Vec<&'static str> {
        vec!["create"]
    }

    fn strategy(&self) -> Option<&dyn Strategy> {
        Some(self.strategy.as_ref())
    }

    fn create<'a>(
        &'a self,
        ctx: &'a RequestContext,
        obj: Value,
        _opts: &'a CreateOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(self.review(ctx, obj))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(value: Value) -> ReviewSpec {
        ReviewSpec::deserialize(&value).unwrap()
    }

    fn messages(errs: Vec<FieldError>) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn an_empty_review_names_both_problems() {
        let obj = json!({"spec": {}});
        assert_eq!(
            messages(validate(Review::Subject, &obj, &spec(json!({})))),
            [
                "spec: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified",
                "spec.user: Invalid value: \"\": at least one of user or group must be specified",
            ]
        );
        assert!(validate(Review::SelfSubjectRules, &obj, &spec(json!({}))).is_empty());
    }

    #[test]
    fn local_reviews_must_stay_in_their_namespace() {
        let obj = json!({"metadata": {"namespace": "ns", "creationTimestamp": null},
            "spec": {"user": "u", "resourceAttributes": {"namespace": "other", "verb": "get"}}});
        let s = spec(obj["spec"].clone());
        assert_eq!(
            messages(validate(Review::LocalSubject, &obj, &s)),
            [
                "spec.resourceAttributes.namespace: Invalid value: \"other\": must match metadata.namespace"
            ]
        );
        // The namespace is metadata a cluster-wide review may not carry.
        assert_eq!(
            messages(validate(Review::Subject, &obj, &s)),
            [
                "metadata: Invalid value: {\"creationTimestamp\":null,\"namespace\":\"ns\"}: must be empty"
            ]
        );
    }

    #[test]
    fn selectors_become_raw_selectors_or_evaluation_notes() {
        let user = Arc::new(UserInfo::default());
        let (attrs, notes) = review_attributes(
            user.clone(),
            &spec(
                json!({"resourceAttributes": {"verb": "list", "resource": "pods",
                "fieldSelector": {"rawSelector": "spec.nodeName=n1"},
                "labelSelector": {"requirements": [
                    {"key": "app", "operator": "In", "values": ["a", "b"]},
                    {"key": "tier", "operator": "Bogus"}]}}}),
            ),
        );
        assert_eq!(attrs.api_version, "*");
        assert_eq!(attrs.field_selector, "spec.nodeName=n1");
        assert_eq!(attrs.label_selector, "app in (a,b)");
        assert_eq!(
            notes,
            ["spec.resourceAttributes.labelSelector partially ignored due to parse error"]
        );
        let (attrs, notes) = review_attributes(
            user,
            &spec(json!({"resourceAttributes": {
                "fieldSelector": {"rawSelector": "key in value"},
                "labelSelector": {"rawSelector": "&"}}})),
        );
        assert!(attrs.field_selector.is_empty() && attrs.label_selector.is_empty());
        assert_eq!(
            notes.join("; "),
            "spec.resourceAttributes.fieldSelector ignored due to parse error; spec.resourceAttributes.labelSelector ignored due to parse error"
        );
    }
}
