//! Unit tests of the decisions, with namespaces and pods given as data.

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
            .filter(|p| p.pointer("/metadata/namespace").and_then(Value::as_str) == Some(namespace))
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
