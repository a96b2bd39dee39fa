//! The admission decisions of Pod Security (upstream `k8s.io/pod-security-admission/admission`):
//! namespaces (label validation, the scan of existing pods when the enforce level tightens),
//! pods (enforce, audit, warn) and workload resources with a pod template (audit and warn only).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use apiserver::registry::field::FieldError;
use async_trait::async_trait;
use serde_json::Value;

use super::api::{
    AUDIT_LEVEL_LABEL, AUDIT_VERSION_LABEL, ENFORCE_LEVEL_LABEL, ENFORCE_VERSION_LABEL,
    ENFORCED_POLICY_ANNOTATION, EXEMPTION_REASON_ANNOTATION, Level, WARN_LEVEL_LABEL,
    WARN_VERSION_LABEL,
};
use super::api::{AUDIT_VIOLATIONS_ANNOTATION, LevelVersion, Policy, policy_to_evaluate};
use super::checks::{AggregateResult, Evaluator};
use super::config::PodSecurityConfig;
use super::metrics::{self, Mode, RequestLabels};
use super::pod::{PodSpec, PodView};

/// At most this many existing pods are checked when a namespace's enforce level tightens.
const NAMESPACE_MAX_PODS_TO_CHECK: usize = 3000;
/// And for at most this long.
const NAMESPACE_POD_CHECK_TIMEOUT: Duration = Duration::from_secs(1);

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

    fn labels(req: &Request<'_>, resource: &'static str) -> RequestLabels<'static> {
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
                r.warnings = self.evaluate_pods_in_namespace(
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
            ..Self::labels(req, "pod")
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
        let labels = Self::labels(req, "controller");
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

    /// The warnings about existing pods of `namespace` that violate `enforce`: one per distinct
    /// set of reasons, naming the first pod (by name) and how many others share it. Pods of an
    /// exempt runtime class are skipped; one pod per controller is checked before the others;
    /// at most 3000 pods and about a second.
    pub fn evaluate_pods_in_namespace(
        &self,
        namespace: &str,
        enforce: LevelVersion,
        pods: &[Arc<Value>],
    ) -> Vec<String> {
        let deadline = Instant::now() + NAMESPACE_POD_CHECK_TIMEOUT;
        let mut decoded: Vec<PodView> = pods
            .iter()
            .filter_map(|p| PodView::decode(p).ok())
            .filter(|p| {
                !self
                    .config
                    .exempt_runtime_class(p.spec.runtime_class_name.as_deref())
            })
            .collect();
        // Upstream walks its lister's (unordered) list; ours by name, so the output is stable.
        decoded.sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
        let mut seen_controllers = HashSet::new();
        let (first, duplicates): (Vec<PodView>, Vec<PodView>) =
            decoded
                .into_iter()
                .partition(|p| match p.meta.controller_uid() {
                    None => true,
                    Some(uid) => seen_controllers.insert(uid.to_string()),
                });
        let prioritized: Vec<PodView> = first.into_iter().chain(duplicates).collect();
        let total = prioritized.len();
        let mut checked = total.min(NAMESPACE_MAX_PODS_TO_CHECK);
        // reasons → (lexically first pod name, count), in order of first appearance.
        let mut order: Vec<String> = Vec::new();
        let mut counts: HashMap<String, (String, usize)> = HashMap::new();
        for (i, pod) in prioritized
            .iter()
            .take(NAMESPACE_MAX_PODS_TO_CHECK)
            .enumerate()
        {
            let result = self.evaluator.evaluate(enforce, &pod.meta, &pod.spec);
            if !result.allowed() {
                let reason = result.forbidden_reason();
                match counts.get_mut(&reason) {
                    Some((name, count)) => {
                        if pod.meta.name < *name {
                            name.clone_from(&pod.meta.name);
                        }
                        *count += 1;
                    }
                    None => {
                        counts.insert(reason.clone(), (pod.meta.name.clone(), 1));
                        order.push(reason);
                    }
                }
            }
            if Instant::now() >= deadline {
                checked = i + 1;
                break;
            }
        }
        let mut warnings = Vec::new();
        if checked < total {
            warnings.push(format!(
                "new PodSecurity enforce level only checked against the first {checked} of {total} existing pods"
            ));
        }
        if !order.is_empty() {
            warnings.push(format!(
                "existing pods in namespace {namespace:?} violate the new PodSecurity enforce level {:?}",
                enforce.to_string()
            ));
        }
        let mut pod_warnings: Vec<String> = order
            .into_iter()
            .map(|reason| {
                let (name, count) = counts.get(&reason).cloned().unwrap_or_default();
                match count {
                    1 => format!("{name}: {reason}"),
                    2 => format!("{name} (and 1 other pod): {reason}"),
                    n => format!("{name} (and {} other pods): {reason}", n - 1),
                }
            })
            .collect();
        pod_warnings.sort();
        warnings.extend(pod_warnings);
        warnings
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
mod tests {
    use super::*;
    use crate::admission::podsecurity::checks::default_checks;
    use serde_json::json;

    /// Namespaces and pods as data (what the informers hold in the server).
    #[derive(Default)]
    struct State {
        namespaces: BTreeMap<String, BTreeMap<String, String>>,
        pods: Vec<Arc<Value>>,
    }

    #[async_trait]
    impl Cluster for State {
        async fn namespace_labels(&self, name: &str) -> Result<BTreeMap<String, String>, String> {
            self.namespaces
                .get(name)
                .cloned()
                .ok_or_else(|| format!("namespaces {name:?} not found"))
        }

        fn pods(&self, namespace: &str) -> Vec<Arc<Value>> {
            self.pods
                .iter()
                .filter(|p| {
                    p.pointer("/metadata/namespace").and_then(Value::as_str) == Some(namespace)
                })
                .cloned()
                .collect()
        }
    }

    fn state(ns: &str, labels: &[(&str, &str)]) -> State {
        let mut s = State::default();
        s.namespaces.insert(
            ns.into(),
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        s
    }

    fn admission(config: PodSecurityConfig) -> Admission {
        Admission::new(config, Evaluator::new(&default_checks()).expect("checks"))
    }

    fn privileged_pod(name: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "ns"}, "spec": {"containers": [
            {"name": "c", "image": "nginx", "securityContext": {"privileged": true}}]}})
    }

    fn restricted_pod(name: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "ns"}, "spec": {
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "c", "image": "nginx", "securityContext": {
                "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}})
    }

    fn req<'a>(group: &'a str, resource: &'a str, name: &'a str, object: &'a Value) -> Request<'a> {
        Request {
            operation: Operation::Create,
            group,
            resource,
            subresource: "",
            namespace: "ns",
            name,
            object: Some(object),
            old_object: None,
            user: "alice",
        }
    }

    const PRIVILEGED_VIOLATIONS: &str = concat!(
        r#"privileged (container "c" must not set securityContext.privileged=true), "#,
        r#"allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), "#,
        r#"unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), "#,
        r#"runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), "#,
        r#"seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")"#
    );

    #[tokio::test]
    async fn restricted_enforce_rejects_a_privileged_pod_with_every_violation() {
        let a = admission(PodSecurityConfig::default());
        let pod = privileged_pod("p");
        let r = a
            .validate(
                &req("", "pods", "p", &pod),
                &state("ns", &[(ENFORCE_LEVEL_LABEL, "restricted")]),
            )
            .await;
        assert_eq!(
            r.denial,
            Some(Denial::Forbidden(format!(
                r#"violates PodSecurity "restricted:latest": {PRIVILEGED_VIOLATIONS}"#
            )))
        );
        // Refused requests get no warnings; enforce also warns at its level, so warn would repeat it.
        assert!(r.warnings.is_empty());
        assert_eq!(
            r.audit_annotations
                .get("enforce-policy")
                .map(String::as_str),
            Some("restricted:latest")
        );
        let ok = restricted_pod("q");
        let r = a
            .validate(
                &req("", "pods", "q", &ok),
                &state("ns", &[(ENFORCE_LEVEL_LABEL, "restricted")]),
            )
            .await;
        assert_eq!(r.denial, None);
        assert!(r.warnings.is_empty());
    }

    #[tokio::test]
    async fn baseline_allows_what_baseline_allows_and_warns_and_audits_at_restricted() {
        let a = admission(PodSecurityConfig::default());
        let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "c", "image": "nginx", "securityContext": {"runAsUser": 0}}]}});
        let cluster = state(
            "ns",
            &[
                (ENFORCE_LEVEL_LABEL, "baseline"),
                (WARN_LEVEL_LABEL, "restricted"),
                (AUDIT_LEVEL_LABEL, "restricted"),
                (AUDIT_VERSION_LABEL, "v1.24"),
            ],
        );
        let r = a.validate(&req("", "pods", "p", &pod), &cluster).await;
        assert_eq!(r.denial, None);
        let expected = concat!(
            r#"allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), "#,
            r#"unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), "#,
            r#"runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), "#,
            r#"runAsUser=0 (container "c" must not set runAsUser=0), "#,
            r#"seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")"#
        );
        assert_eq!(
            r.warnings,
            [format!(
                r#"would violate PodSecurity "restricted:latest": {expected}"#
            )]
        );
        assert_eq!(
            r.audit_annotations.get("audit-violations"),
            Some(&format!(
                r#"would violate PodSecurity "restricted:v1.24": {expected}"#
            ))
        );
        assert_eq!(
            r.audit_annotations
                .get("enforce-policy")
                .map(String::as_str),
            Some("baseline:latest")
        );
    }

    #[tokio::test]
    async fn privileged_namespace_is_annotated_and_not_evaluated() {
        let a = admission(PodSecurityConfig::default());
        let pod = privileged_pod("p");
        let r = a
            .validate(&req("", "pods", "p", &pod), &state("ns", &[]))
            .await;
        assert_eq!(
            r,
            Response::annotated("enforce-policy", "privileged:latest")
        );
    }

    #[tokio::test]
    async fn workloads_only_warn_and_audit_never_refused() {
        let a = admission(PodSecurityConfig::default());
        let cluster = state("ns", &[(ENFORCE_LEVEL_LABEL, "restricted")]);
        let template = privileged_pod("ignored");
        let cases = [
            (
                "apps",
                "deployments",
                json!({"spec": {"template": template}}),
            ),
            (
                "apps",
                "daemonsets",
                json!({"spec": {"template": template}}),
            ),
            (
                "apps",
                "statefulsets",
                json!({"spec": {"template": template}}),
            ),
            (
                "apps",
                "replicasets",
                json!({"spec": {"template": template}}),
            ),
            ("batch", "jobs", json!({"spec": {"template": template}})),
            (
                "batch",
                "cronjobs",
                json!({"spec": {"jobTemplate": {"spec": {"template": template}}}}),
            ),
            (
                "",
                "replicationcontrollers",
                json!({"spec": {"template": template}}),
            ),
            ("", "podtemplates", json!({"template": template})),
        ];
        for (group, resource, obj) in &cases {
            let r = a.validate(&req(group, resource, "w", obj), &cluster).await;
            assert_eq!(r.denial, None, "{resource}");
            assert_eq!(
                r.warnings,
                [format!(
                    r#"would violate PodSecurity "restricted:latest": {PRIVILEGED_VIOLATIONS}"#
                )],
                "{resource}"
            );
            assert!(
                !r.audit_annotations.contains_key("enforce-policy"),
                "{resource}"
            );
        }
        // A replication controller without a template has nothing to evaluate.
        let rc = json!({"spec": {}});
        let r = a
            .validate(&req("", "replicationcontrollers", "rc", &rc), &cluster)
            .await;
        assert_eq!(r, Response::allowed());
        // Subresources (scale, status) are not evaluated.
        let scale = json!({"spec": {"replicas": 2}});
        let mut scale_req = req("apps", "deployments", "w", &scale);
        scale_req.subresource = "scale";
        assert_eq!(a.validate(&scale_req, &cluster).await, Response::allowed());
    }

    #[tokio::test]
    async fn exemptions_by_namespace_user_and_runtime_class() {
        let config = PodSecurityConfig::load(Some(&json!({
            "apiVersion": "pod-security.admission.config.k8s.io/v1", "kind": "PodSecurityConfiguration",
            "defaults": {"enforce": "restricted"},
            "exemptions": {"namespaces": ["ns"], "usernames": ["admin"], "runtimeClasses": ["kata"]}
        })))
        .expect("config");
        let a = admission(config);
        let pod = privileged_pod("p");
        let cluster = state("other", &[]);
        let r = a.validate(&req("", "pods", "p", &pod), &cluster).await;
        assert_eq!(r, Response::annotated("exempt", "namespace"));
        let mut by_user = req("", "pods", "p", &pod);
        by_user.namespace = "other";
        by_user.user = "admin";
        assert_eq!(
            a.validate(&by_user, &cluster).await,
            Response::annotated("exempt", "user")
        );
        // Defaults apply to namespaces without labels: restricted enforced for anyone else.
        by_user.user = "bob";
        let r = a.validate(&by_user, &cluster).await;
        assert!(matches!(r.denial, Some(Denial::Forbidden(_))));
        let kata = json!({"metadata": {"name": "k"}, "spec": {"runtimeClassName": "kata",
            "containers": [{"name": "c", "securityContext": {"privileged": true}}]}});
        let mut by_class = req("", "pods", "k", &kata);
        by_class.namespace = "other";
        assert_eq!(
            a.validate(&by_class, &cluster).await,
            Response::annotated("exempt", "runtimeClass")
        );
    }

    #[tokio::test]
    async fn bad_labels_fail_closed_on_pods_and_are_refused_on_namespaces() {
        let a = admission(PodSecurityConfig::default());
        let pod = restricted_pod("p");
        let r = a
            .validate(
                &req("", "pods", "p", &pod),
                &state("ns", &[(ENFORCE_LEVEL_LABEL, "strict")]),
            )
            .await;
        assert_eq!(
            r.denial, None,
            "a restricted pod passes the fail-closed restricted level"
        );
        assert_eq!(
            r.audit_annotations.get("error").map(String::as_str),
            Some(
                r#"Failed to parse policy: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted"#
            )
        );
        let ns = json!({"metadata": {"name": "ns", "labels": {ENFORCE_LEVEL_LABEL: "strict"}}});
        let r = a
            .validate(&req("", "namespaces", "ns", &ns), &State::default())
            .await;
        let Some(Denial::Invalid(errs)) = r.denial else {
            panic!("expected Invalid, got {r:?}")
        };
        assert_eq!(
            errs[0].to_string(),
            r#"metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted"#
        );
        // An update that keeps the same bad labels (e.g. another label changes) is let through.
        let mut update = req("", "namespaces", "ns", &ns);
        update.operation = Operation::Update;
        update.old_object = Some(&ns);
        assert_eq!(a.validate(&update, &State::default()).await.denial, None);
    }

    #[tokio::test]
    async fn tightening_enforce_warns_about_existing_pods() {
        let a = admission(PodSecurityConfig::default());
        let mut cluster = State::default();
        let owned = |name: &str, uid: &str| {
            let mut p = privileged_pod(name);
            p["metadata"]["ownerReferences"] = json!([{"uid": uid, "controller": true}]);
            Arc::new(p)
        };
        cluster.pods = vec![
            owned("web-b", "rs1"),
            owned("web-a", "rs1"),
            owned("web-c", "rs1"),
            Arc::new(restricted_pod("good")),
            Arc::new(json!({"metadata": {"name": "host", "namespace": "ns"},
                "spec": {"hostNetwork": true, "containers": [{"name": "c"}]}})),
        ];
        let old = json!({"metadata": {"name": "ns"}});
        let new = json!({"metadata": {"name": "ns", "labels": {ENFORCE_LEVEL_LABEL: "baseline"}}});
        let mut update = req("", "namespaces", "ns", &new);
        update.operation = Operation::Update;
        update.old_object = Some(&old);
        let r = a.validate(&update, &cluster).await;
        assert_eq!(r.denial, None);
        assert_eq!(
            r.warnings,
            [
                r#"existing pods in namespace "ns" violate the new PodSecurity enforce level "baseline:latest""#,
                "host: host namespaces",
                "web-a (and 2 other pods): privileged",
            ]
        );
        // Relaxing at the same version, or no change to enforce: no scan.
        let mut relax = req("", "namespaces", "ns", &old);
        relax.operation = Operation::Update;
        relax.old_object = Some(&new);
        assert!(a.validate(&relax, &cluster).await.warnings.is_empty());
    }

    #[test]
    fn namespace_scan_is_capped_at_3000_pods() {
        let a = admission(PodSecurityConfig::default());
        let pods: Vec<Arc<Value>> = (0..3005)
            .map(|i| Arc::new(privileged_pod(&format!("p{i:04}"))))
            .collect();
        let lv = LevelVersion {
            level: Level::Baseline,
            version: super::super::api::Version::Latest,
        };
        let warnings = a.evaluate_pods_in_namespace("ns", lv, &pods);
        assert_eq!(
            warnings[0],
            "new PodSecurity enforce level only checked against the first 3000 of 3005 existing pods"
        );
        assert_eq!(warnings[2], "p0000 (and 2999 other pods): privileged");
    }

    #[tokio::test]
    async fn exempt_namespace_labels_warn_that_they_are_ignored() {
        let config = PodSecurityConfig::load(Some(&json!({
            "apiVersion": "pod-security.admission.config.k8s.io/v1", "kind": "PodSecurityConfiguration",
            "exemptions": {"namespaces": ["ns"]}
        })))
        .expect("config");
        let a = admission(config);
        let ns = json!({"metadata": {"name": "ns", "labels": {ENFORCE_LEVEL_LABEL: "restricted", AUDIT_LEVEL_LABEL: "baseline"}}});
        let r = a
            .validate(&req("", "namespaces", "ns", &ns), &State::default())
            .await;
        assert_eq!(
            r.warnings,
            [
                r#"namespace "ns" is exempt from Pod Security, and the policy (enforce=restricted:latest, audit=baseline:latest) will be ignored"#
            ]
        );
    }

    #[tokio::test]
    async fn pod_updates_rechecked_only_when_images_or_ephemeral_containers_change() {
        let a = admission(PodSecurityConfig::default());
        let cluster = state("ns", &[(ENFORCE_LEVEL_LABEL, "baseline")]);
        let old = privileged_pod("p");
        let mut relabelled = old.clone();
        relabelled["metadata"]["labels"] = json!({"a": "b"});
        let mut update = req("", "pods", "p", &relabelled);
        update.operation = Operation::Update;
        update.old_object = Some(&old);
        assert_eq!(a.validate(&update, &cluster).await, Response::allowed());
        let mut new_image = old.clone();
        new_image["spec"]["containers"][0]["image"] = json!("nginx:2");
        update.object = Some(&new_image);
        assert!(matches!(
            a.validate(&update, &cluster).await.denial,
            Some(Denial::Forbidden(_))
        ));
        let base = restricted_pod("p");
        let mut debug = base.clone();
        debug["spec"]["ephemeralContainers"] =
            json!([{"name": "dbg", "image": "busybox", "securityContext": {"privileged": true}}]);
        let mut ephemeral = req("", "pods", "p", &debug);
        ephemeral.operation = Operation::Update;
        ephemeral.subresource = "ephemeralcontainers";
        ephemeral.old_object = Some(&base);
        let r = a.validate(&ephemeral, &cluster).await;
        assert_eq!(
            r.denial,
            Some(Denial::Forbidden(
                r#"violates PodSecurity "baseline:latest": privileged (container "dbg" must not set securityContext.privileged=true)"#.into()
            ))
        );
        // Status and other ignored subresources never are.
        let mut status = ephemeral;
        status.subresource = "status";
        assert_eq!(a.validate(&status, &cluster).await, Response::allowed());
    }

    #[tokio::test]
    async fn missing_namespace_is_an_internal_error_for_pods_and_an_annotation_for_workloads() {
        let a = admission(PodSecurityConfig::default());
        let pod = privileged_pod("p");
        let r = a
            .validate(&req("", "pods", "p", &pod), &State::default())
            .await;
        assert_eq!(
            r.denial,
            Some(Denial::Internal(
                r#"failed to lookup namespace "ns""#.into()
            ))
        );
        let deploy = json!({"spec": {"template": pod}});
        let r = a
            .validate(&req("apps", "deployments", "d", &deploy), &State::default())
            .await;
        assert_eq!(r.denial, None);
        assert_eq!(
            r.audit_annotations.get("error").map(String::as_str),
            Some(r#"failed to lookup namespace "ns": namespaces "ns" not found"#)
        );
    }

    #[tokio::test]
    async fn undecodable_pod_is_a_bad_request() {
        let a = admission(PodSecurityConfig::default());
        let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": "nope"}});
        let r = a
            .validate(
                &req("", "pods", "p", &pod),
                &state("ns", &[(ENFORCE_LEVEL_LABEL, "baseline")]),
            )
            .await;
        assert_eq!(
            r.denial,
            Some(Denial::BadRequest("failed to decode object".into()))
        );
    }
}
