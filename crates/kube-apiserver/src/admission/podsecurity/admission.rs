//! The admission decisions of Pod Security (upstream `k8s.io/pod-security-admission/admission`):
//! namespaces (label validation, the scan of existing pods when the enforce level tightens),
//! pods (enforce, audit, warn) and workload resources with a pod template (audit and warn only).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use apiserver::registry::field::FieldError;
use async_trait::async_trait;
use serde_json::Value;

use super::api::{
    AUDIT_LEVEL_LABEL, AUDIT_VERSION_LABEL, AUDIT_VIOLATIONS_ANNOTATION, ENFORCE_LEVEL_LABEL,
    ENFORCE_VERSION_LABEL, ENFORCED_POLICY_ANNOTATION, EXEMPTION_REASON_ANNOTATION, Level,
    LevelVersion, Policy, WARN_LEVEL_LABEL, WARN_VERSION_LABEL, policy_to_evaluate,
};
use super::checks::{AggregateResult, Evaluator};
use super::config::PodSecurityConfig;
use super::metrics::{self, Mode, RequestLabels};
use super::namespace_scan;
use super::pod::{PodSpec, PodView};

/// Pod subresources that cannot change what the checks read.
const IGNORED_POD_SUBRESOURCES: &[&str] = &[
    "exec",
    "attach",
    "binding",
    "eviction",
    "log",
    "portforward",
    "proxy",
    "status",
];

/// The operations the plugin handles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// A create.
    Create,
    /// An update (also patch and apply).
    Update,
}

impl Operation {
    fn label(self) -> &'static str {
        match self {
            Operation::Create => "create",
            Operation::Update => "update",
        }
    }
}

/// What the plugin needs of a request.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// Create or update.
    pub operation: Operation,
    /// The API group of the resource.
    pub group: &'a str,
    /// The resource (`pods`, `deployments`, ...).
    pub resource: &'a str,
    /// The subresource, or empty.
    pub subresource: &'a str,
    /// The namespace (for a namespace, its own name).
    pub namespace: &'a str,
    /// The object's name.
    pub name: &'a str,
    /// The new object.
    pub object: Option<&'a Value>,
    /// The object before an update.
    pub old_object: Option<&'a Value>,
    /// The requesting user's name.
    pub user: &'a str,
}

/// Where a request's pod spec is, by resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Namespace,
    Pod,
    /// A workload: the path of its pod template.
    Controller(&'static [&'static str]),
}

fn target(group: &str, resource: &str) -> Option<Target> {
    Some(match (group, resource) {
        ("", "namespaces") => Target::Namespace,
        ("", "pods") => Target::Pod,
        ("", "podtemplates") => Target::Controller(&["template"]),
        ("", "replicationcontrollers")
        | ("apps", "replicasets" | "deployments" | "statefulsets" | "daemonsets")
        | ("batch", "jobs") => Target::Controller(&["spec", "template"]),
        ("batch", "cronjobs") => Target::Controller(&["spec", "jobTemplate", "spec", "template"]),
        _ => return None,
    })
}

/// Whether the plugin has anything to say about `group`/`resource`.
pub fn applies_to(group: &str, resource: &str) -> bool {
    target(group, resource).is_some()
}

/// Why a request is refused.
#[derive(Clone, Debug, PartialEq)]
pub enum Denial {
    /// 403: the pod violates the enforce level (the text after `is forbidden: `).
    Forbidden(String),
    /// 422: the namespace's labels are invalid.
    Invalid(Vec<FieldError>),
    /// 400: the object could not be read.
    BadRequest(String),
    /// 500: the namespace could not be read.
    Internal(String),
}

/// The plugin's verdict, warnings and audit annotations (keys without the label prefix).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Response {
    /// Why the request is refused, if it is.
    pub denial: Option<Denial>,
    /// Warnings for the client.
    pub warnings: Vec<String>,
    /// Audit annotations, keys relative to `pod-security.kubernetes.io/`.
    pub audit_annotations: BTreeMap<String, String>,
}

impl Response {
    fn allowed() -> Self {
        Response::default()
    }

    fn annotated(key: &str, value: impl Into<String>) -> Self {
        let mut r = Response::default();
        r.audit_annotations.insert(key.to_string(), value.into());
        r
    }

    fn denied(denial: Denial, error: String) -> Self {
        let mut r = Response::annotated("error", error);
        r.denial = Some(denial);
        r
    }
}

/// The cluster state the decisions read: namespaces and the pods in one.
#[async_trait]
pub trait Cluster: Send + Sync {
    /// The labels of namespace `name`, or why it could not be read.
    async fn namespace_labels(&self, name: &str) -> Result<BTreeMap<String, String>, String>;
    /// The pods of namespace `name`.
    fn pods(&self, namespace: &str) -> Vec<Arc<Value>>;
}

/// The decisions, over a configuration and the checks.
#[derive(Debug)]
pub struct Admission {
    config: PodSecurityConfig,
    evaluator: Evaluator,
}

/// A namespace's labels (non-string values skipped).
pub(crate) fn labels_of(obj: &Value) -> BTreeMap<String, String> {
    obj.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

fn aggregate(errs: &[FieldError]) -> Option<String> {
    match errs {
        [] => None,
        [one] => Some(one.to_string()),
        many => {
            let all: Vec<String> = many.iter().map(ToString::to_string).collect();
            Some(format!("[{}]", all.join(", ")))
        }
    }
}

impl Admission {
    /// Decisions for `config` with `evaluator`'s checks.
    pub fn new(config: PodSecurityConfig, evaluator: Evaluator) -> Self {
        Admission { config, evaluator }
    }

    /// The policy a namespace's labels select.
    fn policy(&self, labels: &BTreeMap<String, String>) -> (Policy, Vec<FieldError>) {
        policy_to_evaluate(labels, self.config.defaults)
    }

    /// The decision on `req`.
    pub async fn validate(&self, req: &Request<'_>, cluster: &dyn Cluster) -> Response {
        match target(req.group, req.resource) {
            None => Response::allowed(),
            Some(Target::Namespace) => self.validate_namespace(req, cluster),
            Some(Target::Pod) => self.validate_pod(req, cluster).await,
            Some(Target::Controller(path)) => self.validate_controller(req, path, cluster).await,
        }
    }

    /// The metrics' labels of a request on `resource` (`pod`, `controller`).
    fn metric_labels(req: &Request<'_>, resource: &'static str) -> RequestLabels<'static> {
        RequestLabels {
            operation: req.operation.label(),
            resource,
            subresource: "",
        }
    }

    fn validate_namespace(&self, req: &Request<'_>, cluster: &dyn Cluster) -> Response {
        if !req.subresource.is_empty() {
            return Response::allowed();
        }
        let Some(obj) = req.object else {
            return Response::denied(
                Denial::BadRequest("failed to decode namespace".into()),
                "failed to decode namespace".into(),
            );
        };
        let labels = labels_of(obj);
        let (new_policy, new_errs) = self.policy(&labels);
        let exempt = self.config.exempt_namespace(req.namespace);
        match req.operation {
            Operation::Create => {
                if !new_errs.is_empty() {
                    return Response {
                        denial: Some(Denial::Invalid(new_errs)),
                        ..Response::default()
                    };
                }
                let mut r = Response::allowed();
                if exempt {
                    r.warnings.extend(self.exempt_namespace_warning(
                        req.name,
                        &new_policy,
                        &labels,
                    ));
                }
                r
            }
            Operation::Update => {
                let old_labels = req.old_object.map(labels_of).unwrap_or_default();
                let (old_policy, old_errs) = self.policy(&old_labels);
                if !new_errs.is_empty() && (old_errs.is_empty() || new_errs != old_errs) {
                    return Response {
                        denial: Some(Denial::Invalid(new_errs)),
                        ..Response::default()
                    };
                }
                // Nothing to scan when enforce did not change, became privileged, or was
                // relaxed at the same version.
                if new_policy.enforce == old_policy.enforce
                    || new_policy.enforce.level == Level::Privileged
                    || (new_policy.enforce.version == old_policy.enforce.version
                        && new_policy.enforce.level <= old_policy.enforce.level)
                {
                    return Response::allowed();
                }
                let mut r = Response::allowed();
                if exempt {
                    r.warnings.extend(self.exempt_namespace_warning(
                        req.name,
                        &new_policy,
                        &labels,
                    ));
                    return r;
                }
                r.warnings = namespace_scan::warnings(
                    &self.evaluator,
                    &self.config,
                    req.name,
                    new_policy.enforce,
                    &cluster.pods(req.name),
                );
                r
            }
        }
    }

    async fn validate_pod(&self, req: &Request<'_>, cluster: &dyn Cluster) -> Response {
        if IGNORED_POD_SUBRESOURCES.contains(&req.subresource) {
            return Response::allowed();
        }
        let labels = RequestLabels {
            subresource: req.subresource,
            ..Self::metric_labels(req, "pod")
        };
        if let Some(r) = self.exemption(req, labels) {
            return r;
        }
        let ns_labels = match cluster.namespace_labels(req.namespace).await {
            Ok(l) => l,
            Err(err) => {
                tracing::error!(namespace = req.namespace, %err, "PodSecurity: failed to fetch pod namespace");
                metrics::record_error(true, labels);
                let message = format!("failed to lookup namespace {:?}", req.namespace);
                return Response::denied(
                    Denial::Internal(message.clone()),
                    format!("Internal error occurred: {message}: {err}"),
                );
            }
        };
        let (policy, policy_errs) = self.policy(&ns_labels);
        if policy_errs.is_empty() && policy.fully_privileged() {
            metrics::record_evaluation(true, policy.enforce, Mode::Enforce, labels);
            return Response::annotated(
                ENFORCED_POLICY_ANNOTATION,
                LevelVersion::PRIVILEGED.to_string(),
            );
        }
        let pod = match req.object.map(PodView::decode) {
            Some(Ok(pod)) => pod,
            Some(Err(err)) => {
                metrics::record_error(true, labels);
                return Response::denied(
                    Denial::BadRequest("failed to decode object".into()),
                    format!("failed to decode object: {err}"),
                );
            }
            None => {
                metrics::record_error(true, labels);
                return Response::denied(
                    Denial::BadRequest("failed to decode pod".into()),
                    "failed to decode pod".into(),
                );
            }
        };
        if req.operation == Operation::Update {
            let old = match req.old_object.map(PodView::decode) {
                Some(Ok(old)) => old,
                Some(Err(err)) => {
                    metrics::record_error(true, labels);
                    return Response::denied(
                        Denial::BadRequest("failed to decode old object".into()),
                        format!("failed to decode old object: {err}"),
                    );
                }
                None => {
                    metrics::record_error(true, labels);
                    return Response::denied(
                        Denial::BadRequest("failed to decode old pod".into()),
                        "failed to decode old pod".into(),
                    );
                }
            };
            if !significant_pod_update(&pod.spec, &old.spec) {
                return Response::allowed();
            }
        }
        self.evaluate_pod(policy, &policy_errs, &pod, labels, true)
    }

    async fn validate_controller(
        &self,
        req: &Request<'_>,
        path: &[&str],
        cluster: &dyn Cluster,
    ) -> Response {
        if !req.subresource.is_empty() {
            return Response::allowed();
        }
        let labels = Self::metric_labels(req, "controller");
        if let Some(r) = self.exemption(req, labels) {
            return r;
        }
        let ns_labels = match cluster.namespace_labels(req.namespace).await {
            Ok(l) => l,
            Err(err) => {
                metrics::record_error(true, labels);
                return Response::annotated(
                    "error",
                    format!("failed to lookup namespace {:?}: {err}", req.namespace),
                );
            }
        };
        let (policy, policy_errs) = self.policy(&ns_labels);
        if policy_errs.is_empty()
            && policy.warn.level == Level::Privileged
            && policy.audit.level == Level::Privileged
        {
            return Response::allowed();
        }
        let template = req
            .object
            .and_then(|obj| path.iter().try_fold(obj, |v, key| v.get(*key)));
        let pod = match template {
            // Only a replication controller's template is optional: nothing to evaluate.
            None if req.resource == "replicationcontrollers" => return Response::allowed(),
            None => Ok(PodView::default()),
            Some(t) => PodView::decode(t),
        };
        match pod {
            Ok(pod) => self.evaluate_pod(policy, &policy_errs, &pod, labels, false),
            Err(err) => {
                metrics::record_error(true, labels);
                Response::annotated("error", format!("failed to extract pod template: {err}"))
            }
        }
    }

    /// The response for an exempt namespace or user, if the request is one.
    fn exemption(&self, req: &Request<'_>, labels: RequestLabels<'_>) -> Option<Response> {
        let reason = if self.config.exempt_namespace(req.namespace) {
            "namespace"
        } else if self.config.exempt_user(req.user) {
            "user"
        } else {
            return None;
        };
        metrics::record_exemption(labels);
        Some(Response::annotated(EXEMPTION_REASON_ANNOTATION, reason))
    }

    /// Evaluates a pod (or template) against the namespace's policy; `enforce`: whether the
    /// enforce level can refuse it (pods) or is skipped (workloads).
    fn evaluate_pod(
        &self,
        policy: Policy,
        policy_errs: &[FieldError],
        pod: &PodView,
        labels: RequestLabels<'_>,
        enforce: bool,
    ) -> Response {
        if self
            .config
            .exempt_runtime_class(pod.spec.runtime_class_name.as_deref())
        {
            metrics::record_exemption(labels);
            return Response::annotated(EXEMPTION_REASON_ANNOTATION, "runtimeClass");
        }
        let mut r = Response::allowed();
        if let Some(err) = aggregate(policy_errs) {
            tracing::debug!(%err, "PodSecurity: failed to parse namespace labels");
            r.audit_annotations
                .insert("error".into(), format!("Failed to parse policy: {err}"));
            metrics::record_error(false, labels);
        }
        let mut cache: HashMap<LevelVersion, AggregateResult> = HashMap::new();
        let mut evaluate = |lv: LevelVersion| -> AggregateResult {
            cache
                .entry(lv)
                .or_insert_with(|| self.evaluator.evaluate(lv, &pod.meta, &pod.spec))
                .clone()
        };
        if enforce {
            r.audit_annotations.insert(
                ENFORCED_POLICY_ANNOTATION.into(),
                policy.enforce.to_string(),
            );
            let result = evaluate(policy.enforce);
            if !result.allowed() {
                r.denial = Some(Denial::Forbidden(format!(
                    "violates PodSecurity {:?}: {}",
                    policy.enforce.to_string(),
                    result.forbidden_detail()
                )));
            }
            metrics::record_evaluation(result.allowed(), policy.enforce, Mode::Enforce, labels);
        }
        let audit = evaluate(policy.audit);
        if !audit.allowed() {
            r.audit_annotations.insert(
                AUDIT_VIOLATIONS_ANNOTATION.into(),
                format!(
                    "would violate PodSecurity {:?}: {}",
                    policy.audit.to_string(),
                    audit.forbidden_detail()
                ),
            );
            metrics::record_evaluation(false, policy.audit, Mode::Audit, labels);
        }
        // No warnings on a request that is refused anyway.
        if r.denial.is_none() {
            let warn = evaluate(policy.warn);
            if !warn.allowed() {
                r.warnings.push(format!(
                    "would violate PodSecurity {:?}: {}",
                    policy.warn.to_string(),
                    warn.forbidden_detail()
                ));
                metrics::record_evaluation(false, policy.warn, Mode::Warn, labels);
            }
        }
        r
    }

    /// Upstream's warning when an exempt namespace sets a policy that will be ignored.
    fn exempt_namespace_warning(
        &self,
        namespace: &str,
        policy: &Policy,
        labels: &BTreeMap<String, String>,
    ) -> Option<String> {
        if policy.fully_privileged() || policy.equivalent(&self.config.defaults) {
            return None;
        }
        let has = |a: &str, b: &str| labels.contains_key(a) || labels.contains_key(b);
        let modes = [
            (
                "enforce",
                policy.enforce,
                ENFORCE_LEVEL_LABEL,
                ENFORCE_VERSION_LABEL,
            ),
            (
                "audit",
                policy.audit,
                AUDIT_LEVEL_LABEL,
                AUDIT_VERSION_LABEL,
            ),
            ("warn", policy.warn, WARN_LEVEL_LABEL, WARN_VERSION_LABEL),
        ];
        let parts: Vec<String> = modes
            .iter()
            .filter(|(_, lv, level, version)| lv.level != Level::Privileged && has(level, version))
            .map(|(mode, lv, _, _)| format!("{mode}={lv}"))
            .collect();
        Some(format!(
            "namespace {namespace:?} is exempt from Pod Security, and the policy ({}) will be ignored",
            parts.join(", ")
        ))
    }
}

/// Whether an update changed what the checks read: containers added or removed, images
/// changed, ephemeral containers added or changed. Other pod updates (metadata, status,
/// resources) are not checked again, as upstream.
fn significant_pod_update(new: &PodSpec, old: &PodSpec) -> bool {
    if new.containers.len() != old.containers.len()
        || new.init_containers.len() != old.init_containers.len()
    {
        return true;
    }
    let images_changed = |a: &[super::pod::Container], b: &[super::pod::Container]| {
        a.iter().zip(b).any(|(x, y)| x.image != y.image)
    };
    if images_changed(&new.containers, &old.containers)
        || images_changed(&new.init_containers, &old.init_containers)
    {
        return true;
    }
    new.ephemeral_containers.iter().any(|c| {
        match old.ephemeral_containers.iter().find(|o| o.name == c.name) {
            None => true,
            Some(o) => o.image != c.image,
        }
    })
}

#[cfg(test)]
mod tests;
