//! Baseline: seccomp profiles, when set, must be `RuntimeDefault` or `Localhost` (fields, from
//! v1.19), or `runtime/default`, `docker/default` or `localhost/*` (the alpha annotations,
//! before v1.19).

use std::collections::BTreeSet;

use super::{
    Check, CheckResult, VersionedCheck, join_quote, pluralize, quote, refused_profiles, sorted,
};
use crate::admission::podsecurity::api::{Level, Version};
use crate::admission::podsecurity::pod::{PodMeta, PodSpec, TypedProfile};

/// The id restricted's seccomp check overrides.
pub const ID: &str = "seccompProfile_baseline";

const POD_ANNOTATION: &str = "seccomp.security.alpha.kubernetes.io/pod";
const CONTAINER_ANNOTATION_PREFIX: &str = "container.seccomp.security.alpha.kubernetes.io/";

/// The check.
pub fn check() -> Check {
    Check {
        id: ID,
        level: Level::Baseline,
        versions: vec![
            VersionedCheck {
                minimum_version: Version::V1(0),
                check: v1_0,
                overrides: &[],
            },
            VersionedCheck {
                minimum_version: Version::V1(19),
                check: v1_19,
                overrides: &[],
            },
        ],
    }
}

/// Whether a profile type is `RuntimeDefault` or `Localhost`.
pub fn valid_type(profile: &TypedProfile) -> bool {
    matches!(profile.type_.as_str(), "RuntimeDefault" | "Localhost")
}

fn valid_annotation(value: &str) -> bool {
    value == "runtime/default" || value == "docker/default" || value.starts_with("localhost/")
}

fn v1_0(meta: &PodMeta, spec: &PodSpec) -> CheckResult {
    let mut forbidden = BTreeSet::new();
    let mut check = |key: &str| {
        if let Some(v) = meta.annotations.get(key).filter(|v| !valid_annotation(v)) {
            forbidden.insert(format!("{key}={}", quote(v)));
        }
    };
    check(POD_ANNOTATION);
    for c in spec.all_containers() {
        check(&format!("{CONTAINER_ANNOTATION_PREFIX}{}", c.name));
    }
    if forbidden.is_empty() {
        return CheckResult::Allowed;
    }
    let forbidden = sorted(forbidden);
    CheckResult::forbidden(
        "seccompProfile",
        format!(
            "forbidden {} {}",
            pluralize("annotation", "annotations", forbidden.len()),
            forbidden.join(", ")
        ),
    )
}

fn v1_19(_: &PodMeta, spec: &PodSpec) -> CheckResult {
    let (setters, bad_values) = refused_profiles(
        spec,
        |sc| sc.seccomp_profile.as_ref(),
        |sc| sc.seccomp_profile.as_ref(),
        valid_type,
    );
    if setters.is_empty() {
        return CheckResult::Allowed;
    }
    CheckResult::forbidden(
        "seccompProfile",
        format!(
            "{} must not set securityContext.seccompProfile.type to {}",
            setters.join(" and "),
            join_quote(&sorted(bad_values))
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::super::testing::{allowed, forbidden, run};
    use super::*;
    use serde_json::json;

    #[test]
    fn seccomp_annotations_before_v1_19() {
        run(
            v1_0,
            vec![
                forbidden(
                    "pod seccomp invalid",
                    json!({"metadata": {"annotations": {"seccomp.security.alpha.kubernetes.io/pod": "unconfined"}}}),
                    "seccompProfile",
                    r#"forbidden annotation seccomp.security.alpha.kubernetes.io/pod="unconfined""#,
                ),
                forbidden(
                    "containers seccomp invalid",
                    json!({
                        "metadata": {"annotations": {
                            "container.seccomp.security.alpha.kubernetes.io/a": "unconfined",
                            "container.seccomp.security.alpha.kubernetes.io/b": "unknown"}},
                        "spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}}),
                    "seccompProfile",
                    r#"forbidden annotations container.seccomp.security.alpha.kubernetes.io/a="unconfined", container.seccomp.security.alpha.kubernetes.io/b="unknown""#,
                ),
                forbidden(
                    "pod and containers seccomp invalid",
                    json!({
                        "metadata": {"annotations": {
                            "seccomp.security.alpha.kubernetes.io/pod": "unconfined",
                            "container.seccomp.security.alpha.kubernetes.io/a": "unconfined",
                            "container.seccomp.security.alpha.kubernetes.io/b": "unknown"}},
                        "spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}}),
                    "seccompProfile",
                    r#"forbidden annotations container.seccomp.security.alpha.kubernetes.io/a="unconfined", container.seccomp.security.alpha.kubernetes.io/b="unknown", seccomp.security.alpha.kubernetes.io/pod="unconfined""#,
                ),
                allowed(
                    "annotation of an absent container, docker default",
                    json!({"metadata": {"annotations": {
                        "container.seccomp.security.alpha.kubernetes.io/x": "unconfined",
                        "seccomp.security.alpha.kubernetes.io/pod": "docker/default"}},
                        "spec": {"containers": [{"name": "a"}]}}),
                ),
            ],
        );
    }

    #[test]
    fn seccomp_fields_from_v1_19() {
        let containers = json!([
            {"name": "a"},
            {"name": "b", "securityContext": {}},
            {"name": "c", "securityContext": {"seccompProfile": {"type": "Unconfined"}}},
            {"name": "d", "securityContext": {"seccompProfile": {"type": "Unconfined"}}},
            {"name": "e", "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}},
            {"name": "f", "securityContext": {"seccompProfile": {"type": "Localhost"}}}
        ]);
        run(
            v1_19,
            vec![
                forbidden(
                    "pod seccomp invalid",
                    json!({"spec": {"securityContext": {"seccompProfile": {"type": "Unconfined"}}}}),
                    "seccompProfile",
                    r#"pod must not set securityContext.seccompProfile.type to "Unconfined""#,
                ),
                forbidden(
                    "containers seccomp invalid",
                    json!({"spec": {"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}, "containers": containers.clone()}}),
                    "seccompProfile",
                    r#"containers "c", "d" must not set securityContext.seccompProfile.type to "Unconfined""#,
                ),
                forbidden(
                    "pod and containers seccomp invalid",
                    json!({"spec": {"securityContext": {"seccompProfile": {"type": "Unconfined"}}, "containers": containers}}),
                    "seccompProfile",
                    r#"pod and containers "c", "d" must not set securityContext.seccompProfile.type to "Unconfined""#,
                ),
                allowed("unset", json!({"spec": {"containers": [{"name": "a"}]}})),
            ],
        );
    }
}
