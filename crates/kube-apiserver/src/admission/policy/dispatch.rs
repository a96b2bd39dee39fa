//! What both policy plugins share per request (upstream `policy/generic/policy_dispatcher.go`):
//! the request facts, the CEL variables, matching a policy and its bindings, and the binding
//! params.

use std::collections::BTreeMap;
use std::sync::Arc;

use apiserver::admission::Attributes;
use apiserver::registry::informer::Informer;
use kube_cel::cel;
use serde_json::{Value, json};

use super::cel::from_json;
use super::compiled::{CompiledPolicy, Vars};
use super::matching::{Request, namespace_selector_matches, object_selector_matches, rules_match};
use super::params::{self, ParamSource};
use crate::apis::json::get;
use crate::informers::SharedInformers;

/// The versions each built-in resource is served in, for `matchPolicy: Equivalent`.
pub type ServedVersions = BTreeMap<(String, String), Vec<String>>;

/// Every (group, resource) with its served versions.
pub fn served_versions() -> ServedVersions {
    let mut out = ServedVersions::new();
    for group in crate::apis::builtin_groups() {
        for (version, resources) in &group.versions {
            for r in resources {
                let info = r.strategy.info();
                out.entry((info.group.clone(), info.resource.clone()))
                    .or_default()
                    .push(version.to_string());
            }
        }
    }
    out
}

/// The resources the policy plugins never look at (upstream's CEL admission resources and
/// kube-apiserver's non-persisted reviews, `admission/exclusion`), by group and resource.
const EXCLUDED: &[(&str, &str)] = &[
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicies",
    ),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicybindings",
    ),
    ("admissionregistration.k8s.io", "mutatingadmissionpolicies"),
    (
        "admissionregistration.k8s.io",
        "mutatingadmissionpolicybindings",
    ),
    ("authentication.k8s.io", "selfsubjectreviews"),
    ("authentication.k8s.io", "tokenreviews"),
    ("authorization.k8s.io", "localsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
];

/// Whether the policy plugins ignore the request's resource (whatever the version).
pub fn is_excluded(attrs: &Attributes) -> bool {
    EXCLUDED.contains(&(
        attrs.resource.group.as_str(),
        attrs.resource.resource.as_str(),
    ))
}

/// The matching facts of a request.
pub fn request_of(attrs: &Attributes) -> Request<'_> {
    Request {
        operation: attrs.operation.as_str(),
        group: &attrs.resource.group,
        version: &attrs.resource.version,
        resource: &attrs.resource.resource,
        subresource: &attrs.subresource,
        namespace: &attrs.namespace,
        name: &attrs.name,
        object: attrs.object.as_ref(),
        old_object: attrs.old_object.as_ref(),
    }
}

/// What a plugin needs besides its policies: namespaces and params from informers.
#[derive(Clone)]
pub struct Lookups {
    /// Informers for params.
    pub informers: SharedInformers,
    /// The namespace informer.
    pub namespaces: Option<Informer>,
    /// Served versions of each resource.
    pub served: Arc<ServedVersions>,
    /// The server's authorizer, for the `authorizer` variable.
    pub authz: crate::auth::AuthzHandle,
    /// Custom resources, for params of custom kinds.
    pub custom_resources: Option<Arc<crate::admission::custom_resources::CustomResources>>,
    /// Converts objects between the served versions of a built-in resource
    /// (`matchPolicy: Equivalent`).
    pub equivalents: Arc<crate::admission::webhook::equivalent::Equivalents>,
}

impl Lookups {
    /// Lookups over the plugin context's informers.
    pub fn new(ctx: &crate::admission::PluginContext) -> Self {
        Lookups {
            informers: ctx.informers.clone(),
            namespaces: ctx.informers.informer("", "namespaces"),
            served: Arc::new(served_versions()),
            authz: ctx.authz.clone(),
            custom_resources: ctx.custom_resources.clone(),
            equivalents: Arc::new(
                crate::admission::webhook::equivalent::Equivalents::from_groups(
                    &crate::apis::builtin_groups(),
                ),
            ),
        }
    }

    /// `object` and `oldObject` of `attrs` in `version` of the resource, when a policy
    /// matched another version than the request's (`matchPolicy: Equivalent`): `None` when no
    /// conversion is needed.
    pub fn objects_in(
        &self,
        attrs: &Attributes,
        version: &str,
        authorizer: &cel::Value,
    ) -> Option<Objects> {
        if version == attrs.resource.version || !attrs.subresource.is_empty() {
            return None;
        }
        let convert = |obj: Option<&Value>| {
            obj.map(|o| {
                self.equivalents.convert(
                    &attrs.resource.group,
                    &attrs.resource.resource,
                    &attrs.resource.version,
                    version,
                    o.clone(),
                )
            })
        };
        let object = convert(attrs.object.as_ref());
        let old_object = convert(attrs.old_object.as_ref());
        Some(Objects::new(object.as_ref(), old_object.as_ref()).with_authorizer(authorizer.clone()))
    }

    /// The `authorizer` variable of a request.
    pub fn authorizer(&self, attrs: &Attributes) -> cel::Value {
        crate::admission::cel_authorizer::for_request(&self.authz, attrs)
    }

    /// The namespace object of the request (none for cluster-scoped requests and namespaces).
    pub fn namespace(&self, attrs: &Attributes) -> Option<Arc<Value>> {
        let is_namespace =
            attrs.resource.group.is_empty() && attrs.resource.resource == "namespaces";
        if attrs.namespace.is_empty() || is_namespace {
            return None;
        }
        self.namespaces.as_ref()?.get("", &attrs.namespace)
    }

    /// Whether `match_resources` (a policy's `matchConstraints` or a binding's
    /// `matchResources`) selects the request; `Some(version)` of the matched resource.
    pub fn matches(
        &self,
        match_resources: &Value,
        req: &Request,
        namespace: Option<&Value>,
    ) -> Option<String> {
        if !namespace_selector_matches(get(match_resources, "namespaceSelector"), req, namespace)
            || !object_selector_matches(get(match_resources, "objectSelector"), req)
        {
            return None;
        }
        let empty = Vec::new();
        let served = self
            .served
            .get(&(req.group.to_string(), req.resource.to_string()))
            .unwrap_or(&empty);
        rules_match(match_resources, req, served)
    }

    /// The param source of a policy's `paramKind` (`None` without one); the error is the
    /// policy's configuration error.
    pub fn param_source(&self, policy: &CompiledPolicy) -> Result<Option<ParamSource>, String> {
        match &policy.param_kind {
            None => Ok(None),
            Some((api_version, kind)) => params::param_source(
                &self.informers,
                self.custom_resources.as_deref(),
                api_version,
                kind,
            )
            .map(Some),
        }
    }

    /// The params of `binding` for this request.
    pub async fn params(
        &self,
        policy: &CompiledPolicy,
        source: Option<&ParamSource>,
        binding: &Value,
        attrs: &Attributes,
    ) -> Result<Vec<Option<Arc<Value>>>, String> {
        let kind_text = policy
            .param_kind
            .as_ref()
            .map(|(a, k)| format!("&ParamKind{{APIVersion:{a},Kind:{k},}}"))
            .unwrap_or_default();
        params::collect(
            source,
            &kind_text,
            get(binding, "spec.paramRef"),
            &attrs.namespace,
        )
        .await
    }
}

/// Upstream's `request` variable (an `admission.k8s.io/v1` AdmissionRequest without the
/// objects) for a request whose rules matched `version` of its resource.
pub fn request_variable(attrs: &Attributes, version: &str) -> Value {
    let kind =
        json!({"group": attrs.kind.group, "version": attrs.kind.version, "kind": attrs.kind.kind});
    let resource = json!({"group": attrs.resource.group, "version": attrs.resource.version, "resource": attrs.resource.resource});
    let mut matched_resource = resource.clone();
    matched_resource["version"] = json!(version);
    let mut matched_kind = kind.clone();
    matched_kind["version"] = json!(version);
    let mut user = json!({"username": attrs.user.name});
    if !attrs.user.uid.is_empty() {
        user["uid"] = json!(attrs.user.uid);
    }
    if !attrs.user.groups.is_empty() {
        user["groups"] = json!(attrs.user.groups);
    }
    if !attrs.user.extra.is_empty() {
        user["extra"] = json!(attrs.user.extra);
    }
    let mut request = json!({
        "uid": "",
        "kind": matched_kind,
        "resource": matched_resource,
        "requestKind": kind,
        "requestResource": resource,
        "operation": attrs.operation.as_str(),
        "userInfo": user,
        "dryRun": attrs.dry_run,
    });
    for (key, value) in [
        ("subResource", &attrs.subresource),
        ("requestSubResource", &attrs.subresource),
        ("name", &attrs.name),
        ("namespace", &attrs.namespace),
    ] {
        if !value.is_empty() {
            request[key] = json!(value);
        }
    }
    if let Some(options) = &attrs.options {
        request["options"] = options.clone();
    }
    request
}

/// Upstream's `namespaceObject`: the namespace's metadata (without managed fields and owner
/// references), spec and status.
pub fn namespace_variable(namespace: Option<&Value>) -> cel::Value {
    let Some(ns) = namespace else {
        return cel::Value::Null;
    };
    let mut ns = ns.clone();
    if let Some(meta) = ns.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
        meta.remove("ownerReferences");
    }
    from_json(&ns)
}

/// `object` and `oldObject` as CEL values, converted once per request (cloning them is cheap).
pub struct Objects {
    /// `object`.
    pub object: cel::Value,
    /// `oldObject`.
    pub old_object: cel::Value,
    /// `authorizer` (null until [`Objects::with_authorizer`]).
    pub authorizer: cel::Value,
}

impl Objects {
    /// The CEL values of `object` and `old_object` (null when absent).
    pub fn new(object: Option<&Value>, old_object: Option<&Value>) -> Self {
        let value = |v: Option<&Value>| v.map(from_json).unwrap_or(cel::Value::Null);
        Objects {
            object: value(object),
            old_object: value(old_object),
            authorizer: cel::Value::Null,
        }
    }

    /// With the `authorizer` variable.
    pub fn with_authorizer(mut self, authorizer: cel::Value) -> Self {
        self.authorizer = authorizer;
        self
    }
}

/// The variables of one evaluation.
pub fn variables(
    objects: &Objects,
    request: &cel::Value,
    param: Option<&Value>,
    namespace: &cel::Value,
) -> Vars {
    Vars::new(vec![
        ("object", objects.object.clone()),
        ("oldObject", objects.old_object.clone()),
        ("request", request.clone()),
        ("params", param.map(from_json).unwrap_or(cel::Value::Null)),
        ("namespaceObject", namespace.clone()),
        ("authorizer", objects.authorizer.clone()),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use apiserver::admission::{GroupVersionKind, GroupVersionResource, Operation};
    use apiserver::request::UserInfo;

    fn attrs() -> Attributes {
        let mut a = Attributes::new(
            Operation::Update,
            GroupVersionKind {
                group: "autoscaling".into(),
                version: "v1".into(),
                kind: "HorizontalPodAutoscaler".into(),
            },
            GroupVersionResource {
                group: "autoscaling".into(),
                version: "v1".into(),
                resource: "horizontalpodautoscalers".into(),
            },
            Arc::new(UserInfo {
                name: "alice".into(),
                groups: vec!["dev".into()],
                ..UserInfo::default()
            }),
        );
        a.namespace = "default".into();
        a.name = "web".into();
        a.options = Some(json!({"apiVersion": "meta.k8s.io/v1", "kind": "UpdateOptions"}));
        a
    }

    #[test]
    fn the_request_variable_carries_the_matched_and_the_requested_resource() {
        let request = request_variable(&attrs(), "v2");
        assert_eq!(request["operation"], "UPDATE");
        assert_eq!(request["resource"]["version"], "v2");
        assert_eq!(request["kind"]["version"], "v2");
        assert_eq!(request["requestResource"]["version"], "v1");
        assert_eq!(request["requestKind"]["kind"], "HorizontalPodAutoscaler");
        assert_eq!(
            request["userInfo"],
            json!({"username": "alice", "groups": ["dev"]})
        );
        assert_eq!(
            (request["name"].clone(), request["namespace"].clone()),
            (json!("web"), json!("default"))
        );
        assert_eq!(request["options"]["kind"], "UpdateOptions");
        assert_eq!(request["dryRun"], false);
        assert!(request.get("subResource").is_none());
    }

    #[test]
    fn policy_resources_and_reviews_are_excluded() {
        let mut a = attrs();
        assert!(!is_excluded(&a));
        a.resource.group = "admissionregistration.k8s.io".into();
        a.resource.resource = "validatingadmissionpolicybindings".into();
        assert!(is_excluded(&a));
        a.resource.group = "authorization.k8s.io".into();
        a.resource.resource = "subjectaccessreviews".into();
        assert!(is_excluded(&a));
    }
}
