//! Restricted: containers must run as non-root (`runAsNonRoot=true` on the pod or on each
//! container); from v1.35 pods in a user namespace are exempt.

use super::{Check, CheckResult, VersionedCheck, containers_phrase};
use crate::admission::podsecurity::api::{Level, Version};
use crate::admission::podsecurity::pod::{PodMeta, PodSpec};

/// The check.
pub fn check() -> Check {
    Check {
        id: "runAsNonRoot",
        level: Level::Restricted,
        versions: vec![
            VersionedCheck {
                minimum_version: Version::V1(0),
                check: v1_0,
                overrides: &[],
            },
            VersionedCheck {
                minimum_version: Version::V1(35),
                check: v1_35,
                overrides: &[],
            },
        ],
    }
}

fn v1_0(_: &PodMeta, spec: &PodSpec) -> CheckResult {
    let mut setters = Vec::new();
    let pod_value = spec
        .security_context
        .as_ref()
        .and_then(|sc| sc.run_as_non_root);
    if pod_value == Some(false) {
        setters.push("pod".to_string());
    }
    let pod_non_root = pod_value == Some(true);
    let mut explicitly_bad = Vec::new();
    let mut implicitly_bad = Vec::new();
    for c in spec.all_containers() {
        match c
            .security_context
            .as_ref()
            .and_then(|sc| sc.run_as_non_root)
        {
            Some(false) => explicitly_bad.push(c.name.clone()),
            Some(true) => {}
            None if !pod_non_root => implicitly_bad.push(c.name.clone()),
            None => {}
        }
    }
    if !explicitly_bad.is_empty() {
        setters.push(containers_phrase(&explicitly_bad));
    }
    if !setters.is_empty() {
        return CheckResult::forbidden(
            "runAsNonRoot != true",
            format!(
                "{} must not set securityContext.runAsNonRoot=false",
                setters.join(" and ")
            ),
        );
    }
    if !implicitly_bad.is_empty() {
        return CheckResult::forbidden(
            "runAsNonRoot != true",
            format!(
                "pod or {} must set securityContext.runAsNonRoot=true",
                containers_phrase(&implicitly_bad)
            ),
        );
    }
    CheckResult::Allowed
}

fn v1_35(meta: &PodMeta, spec: &PodSpec) -> CheckResult {
    if spec.in_user_namespace() {
        return CheckResult::Allowed;
    }
    v1_0(meta, spec)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{allowed, forbidden, run};
    use super::*;
    use serde_json::json;

    #[test]
    fn containers_must_run_as_non_root() {
        let cases = || {
            vec![
                forbidden(
                    "no explicit runAsNonRoot",
                    json!({"spec": {"containers": [{"name": "a"}]}}),
                    "runAsNonRoot != true",
                    r#"pod or container "a" must set securityContext.runAsNonRoot=true"#,
                ),
                forbidden(
                    "pod runAsNonRoot=false",
                    json!({"spec": {"securityContext": {"runAsNonRoot": false}, "containers": [{"name": "a"}]}}),
                    "runAsNonRoot != true",
                    "pod must not set securityContext.runAsNonRoot=false",
                ),
                forbidden(
                    "containers runAsNonRoot=false",
                    json!({"spec": {"securityContext": {"runAsNonRoot": true}, "containers": [
                        {"name": "a"},
                        {"name": "b", "securityContext": {}},
                        {"name": "c", "securityContext": {"runAsNonRoot": false}},
                        {"name": "d", "securityContext": {"runAsNonRoot": false}},
                        {"name": "e", "securityContext": {"runAsNonRoot": true}},
                        {"name": "f", "securityContext": {"runAsNonRoot": true}}]}}),
                    "runAsNonRoot != true",
                    r#"containers "c", "d" must not set securityContext.runAsNonRoot=false"#,
                ),
                forbidden(
                    "pod nil, container fallthrough",
                    json!({"spec": {"containers": [
                        {"name": "a"},
                        {"name": "b", "securityContext": {}},
                        {"name": "d", "securityContext": {"runAsNonRoot": true}},
                        {"name": "e", "securityContext": {"runAsNonRoot": true}}]}}),
                    "runAsNonRoot != true",
                    r#"pod or containers "a", "b" must set securityContext.runAsNonRoot=true"#,
                ),
                forbidden(
                    "pod false and container false",
                    json!({"spec": {"securityContext": {"runAsNonRoot": false}, "containers": [
                        {"name": "a", "securityContext": {"runAsNonRoot": false}}]}}),
                    "runAsNonRoot != true",
                    r#"pod and container "a" must not set securityContext.runAsNonRoot=false"#,
                ),
            ]
        };
        run(v1_0, cases());
        let mut v1_35_cases = cases();
        v1_35_cases.push(allowed(
            "host users false allowed",
            json!({"spec": {"hostUsers": false, "containers": [{"name": "a"}]}}),
        ));
        run(v1_35, v1_35_cases);
        run(
            v1_0,
            vec![forbidden(
                "host users false not relaxed before v1.35",
                json!({"spec": {"hostUsers": false, "containers": [{"name": "a"}]}}),
                "runAsNonRoot != true",
                r#"pod or container "a" must set securityContext.runAsNonRoot=true"#,
            )],
        );
    }
}
