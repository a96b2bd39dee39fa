//! Baseline: AppArmor profiles may only be `RuntimeDefault` or `Localhost` (fields), or
//! `runtime/default`, `localhost/*` or empty (the deprecated beta annotations).

use super::{Check, CheckResult, VersionedCheck, join_quote, pluralize, quote, refused_profiles};
use crate::admission::podsecurity::api::{Level, Version};
use crate::admission::podsecurity::pod::{PodMeta, PodSpec, TypedProfile};

const ANNOTATION_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";

/// The check.
pub fn check() -> Check {
    Check {
        id: "appArmorProfile",
        level: Level::Baseline,
        versions: vec![VersionedCheck {
            minimum_version: Version::V1(0),
            check: v1_0,
            overrides: &[],
        }],
    }
}

fn allowed_annotation_value(profile: &str) -> bool {
    profile.is_empty() || profile == "runtime/default" || profile.starts_with("localhost/")
}

fn allowed_type(profile: &TypedProfile) -> bool {
    matches!(profile.type_.as_str(), "RuntimeDefault" | "Localhost")
}

fn v1_0(meta: &PodMeta, spec: &PodSpec) -> CheckResult {
    let (mut setters, bad_values) = refused_profiles(
        spec,
        |sc| sc.app_armor_profile.as_ref(),
        |sc| sc.app_armor_profile.as_ref(),
        allowed_type,
    );
    // BTreeMap iteration is sorted by key: upstream sorts these strings too.
    let forbidden_annotations: Vec<String> = meta
        .annotations
        .iter()
        .filter(|(k, v)| k.starts_with(ANNOTATION_PREFIX) && !allowed_annotation_value(v))
        .map(|(k, v)| format!("{k}={}", quote(v)))
        .collect();
    let mut values: Vec<String> = bad_values.into_iter().collect();
    if !forbidden_annotations.is_empty() {
        setters
            .push(pluralize("annotation", "annotations", forbidden_annotations.len()).to_string());
        values.extend(forbidden_annotations);
    }
    if setters.is_empty() {
        return CheckResult::Allowed;
    }
    CheckResult::forbidden(
        pluralize(
            "forbidden AppArmor profile",
            "forbidden AppArmor profiles",
            values.len(),
        ),
        format!(
            "{} must not set AppArmor profile type to {}",
            setters.join(" and "),
            join_quote(&values)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::super::testing::{allowed, forbidden, run};
    use super::*;
    use serde_json::json;

    #[test]
    fn app_armor_profiles_limited_to_runtime_default_and_localhost() {
        run(
            v1_0,
            vec![
                allowed(
                    "container with default AppArmor + extra annotations",
                    json!({"metadata": {"annotations": {
                        "container.apparmor.security.beta.kubernetes.io/test": "runtime/default",
                        "env": "prod"}}}),
                ),
                allowed(
                    "container with local AppArmor + extra annotations",
                    json!({"metadata": {"annotations": {
                        "container.apparmor.security.beta.kubernetes.io/test": "localhost/sec-profile01",
                        "env": "dev"}}}),
                ),
                allowed("container with no annotations", json!({})),
                allowed(
                    "pod with runtime default",
                    json!({"spec": {"securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}}}}),
                ),
                allowed(
                    "container with localhost profile",
                    json!({"spec": {"containers": [{"name": "foo", "securityContext": {
                        "appArmorProfile": {"type": "Localhost", "localhostProfile": "x"}}}]}}),
                ),
                forbidden(
                    "unconfined pod",
                    json!({"spec": {"securityContext": {"appArmorProfile": {"type": "Unconfined"}}}}),
                    "forbidden AppArmor profile",
                    r#"pod must not set AppArmor profile type to "Unconfined""#,
                ),
                forbidden(
                    "unconfined container",
                    json!({"spec": {
                        "securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}},
                        "containers": [{"name": "foo", "securityContext": {"appArmorProfile": {"type": "Unconfined"}}}]}}),
                    "forbidden AppArmor profile",
                    r#"container "foo" must not set AppArmor profile type to "Unconfined""#,
                ),
                forbidden(
                    "unconfined init container",
                    json!({"spec": {
                        "containers": [{"name": "foo"}],
                        "initContainers": [{"name": "bar", "securityContext": {"appArmorProfile": {"type": "Unconfined"}}}]}}),
                    "forbidden AppArmor profile",
                    r#"container "bar" must not set AppArmor profile type to "Unconfined""#,
                ),
                forbidden(
                    "multiple containers",
                    json!({"metadata": {"annotations": {
                        "container.apparmor.security.beta.kubernetes.io/": "bogus",
                        "container.apparmor.security.beta.kubernetes.io/a": "",
                        "container.apparmor.security.beta.kubernetes.io/b": "runtime/default",
                        "container.apparmor.security.beta.kubernetes.io/c": "localhost/",
                        "container.apparmor.security.beta.kubernetes.io/d": "localhost/foo",
                        "container.apparmor.security.beta.kubernetes.io/e": "unconfined",
                        "container.apparmor.security.beta.kubernetes.io/f": "unknown"}}}),
                    "forbidden AppArmor profiles",
                    concat!(
                        "annotations must not set AppArmor profile type to ",
                        r#""container.apparmor.security.beta.kubernetes.io/="bogus"", "#,
                        r#""container.apparmor.security.beta.kubernetes.io/e="unconfined"", "#,
                        r#""container.apparmor.security.beta.kubernetes.io/f="unknown"""#
                    ),
                ),
                forbidden(
                    "pod, container and annotation",
                    json!({
                        "metadata": {"annotations": {"container.apparmor.security.beta.kubernetes.io/a": "unconfined"}},
                        "spec": {
                            "securityContext": {"appArmorProfile": {"type": "Unconfined"}},
                            "containers": [{"name": "a", "securityContext": {"appArmorProfile": {"type": "Bogus"}}}]}}),
                    "forbidden AppArmor profiles",
                    concat!(
                        r#"pod and container "a" and annotation must not set AppArmor profile type to "#,
                        r#""Bogus", "Unconfined", "container.apparmor.security.beta.kubernetes.io/a="unconfined"""#
                    ),
                ),
            ],
        );
    }
}
