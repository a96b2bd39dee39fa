//! Restricted (from v1.23): no `runAsUser: 0`; from v1.35 pods in a user namespace are exempt.

use super::{Check, CheckResult, VersionedCheck, containers_phrase};
use crate::admission::podsecurity::api::{Level, Version};
use crate::admission::podsecurity::pod::{PodMeta, PodSpec};

/// The check.
pub fn check() -> Check {
    Check {
        id: "runAsUser",
        level: Level::Restricted,
        versions: vec![
            VersionedCheck {
                minimum_version: Version::V1(23),
                check: v1_23,
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

fn v1_23(_: &PodMeta, spec: &PodSpec) -> CheckResult {
    let mut setters = Vec::new();
    if spec.security_context.as_ref().and_then(|sc| sc.run_as_user) == Some(0) {
        setters.push("pod".to_string());
    }
    let bad: Vec<String> = spec
        .all_containers()
        .filter(|c| c.security_context.as_ref().and_then(|sc| sc.run_as_user) == Some(0))
        .map(|c| c.name.clone())
        .collect();
    if !bad.is_empty() {
        setters.push(containers_phrase(&bad));
    }
    if setters.is_empty() {
        return CheckResult::Allowed;
    }
    CheckResult::forbidden(
        "runAsUser=0",
        format!("{} must not set runAsUser=0", setters.join(" and ")),
    )
}

fn v1_35(meta: &PodMeta, spec: &PodSpec) -> CheckResult {
    if spec.in_user_namespace() {
        return CheckResult::Allowed;
    }
    v1_23(meta, spec)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{allowed, forbidden, run};
    use super::*;
    use serde_json::json;

    #[test]
    fn run_as_user_zero_is_forbidden() {
        let cases = || {
            vec![
                forbidden(
                    "pod runAsUser=0",
                    json!({"spec": {"securityContext": {"runAsUser": 0}, "containers": [{"name": "a"}]}}),
                    "runAsUser=0",
                    "pod must not set runAsUser=0",
                ),
                allowed(
                    "pod runAsUser=non-zero",
                    json!({"spec": {"securityContext": {"runAsUser": 1000}, "containers": [{"name": "a"}]}}),
                ),
                allowed(
                    "pod runAsUser=nil",
                    json!({"spec": {"containers": [{"name": "a"}]}}),
                ),
                forbidden(
                    "containers runAsUser=0",
                    json!({"spec": {"securityContext": {"runAsUser": 1000}, "containers": [
                        {"name": "a"},
                        {"name": "b", "securityContext": {}},
                        {"name": "c", "securityContext": {"runAsUser": 0}},
                        {"name": "d", "securityContext": {"runAsUser": 0}},
                        {"name": "e", "securityContext": {"runAsUser": 1}},
                        {"name": "f", "securityContext": {"runAsUser": 1}}]}}),
                    "runAsUser=0",
                    r#"containers "c", "d" must not set runAsUser=0"#,
                ),
            ]
        };
        run(v1_23, cases());
        let mut later = cases();
        later.push(allowed(
            "host users false allowed",
            json!({"spec": {"hostUsers": false, "securityContext": {"runAsUser": 0}}}),
        ));
        run(v1_35, later);
    }
}
