//! Restricted (from v1.19, replacing baseline's seccomp check): a seccomp profile of type
//! `RuntimeDefault` or `Localhost` must be set on the pod or on every container; from v1.25
//! Windows pods are exempt.

use std::collections::BTreeSet;

use super::seccomp_profile_baseline::{self, valid_type};
use super::{Check, CheckResult, VersionedCheck, containers_phrase, join_quote, sorted};
use crate::admission::podsecurity::api::{Level, Version};
use crate::admission::podsecurity::pod::{PodMeta, PodSpec};

/// The check.
pub fn check() -> Check {
    Check {
        id: "seccompProfile_restricted",
        level: Level::Restricted,
        versions: vec![
            VersionedCheck {
                minimum_version: Version::V1(19),
                check: v1_19,
                overrides: &[seccomp_profile_baseline::ID],
            },
            VersionedCheck {
                minimum_version: Version::V1(25),
                check: v1_25,
                overrides: &[seccomp_profile_baseline::ID],
            },
        ],
    }
}

fn v1_19(_: &PodMeta, spec: &PodSpec) -> CheckResult {
    let mut setters = Vec::new();
    let mut bad_values = BTreeSet::new();
    let mut pod_set = false;
    if let Some(p) = spec
        .security_context
        .as_ref()
        .and_then(|sc| sc.seccomp_profile.as_ref())
    {
        if valid_type(p) {
            pod_set = true;
        } else {
            setters.push("pod".to_string());
            bad_values.insert(p.type_.clone());
        }
    }
    let mut explicitly_bad = Vec::new();
    let mut implicitly_bad = Vec::new();
    for c in spec.all_containers() {
        match c
            .security_context
            .as_ref()
            .and_then(|sc| sc.seccomp_profile.as_ref())
        {
            Some(p) if !valid_type(p) => {
                explicitly_bad.push(c.name.clone());
                bad_values.insert(p.type_.clone());
            }
            Some(_) => {}
            None if !pod_set => implicitly_bad.push(c.name.clone()),
            None => {}
        }
    }
    if !explicitly_bad.is_empty() {
        setters.push(containers_phrase(&explicitly_bad));
    }
    if !setters.is_empty() {
        return CheckResult::forbidden(
            "seccompProfile",
            format!(
                "{} must not set securityContext.seccompProfile.type to {}",
                setters.join(" and "),
                join_quote(&sorted(bad_values))
            ),
        );
    }
    if !implicitly_bad.is_empty() {
        return CheckResult::forbidden(
            "seccompProfile",
            format!(
                r#"pod or {} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost""#,
                containers_phrase(&implicitly_bad)
            ),
        );
    }
    CheckResult::Allowed
}

fn v1_25(meta: &PodMeta, spec: &PodSpec) -> CheckResult {
    if spec.is_windows() {
        return CheckResult::Allowed;
    }
    v1_19(meta, spec)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{allowed, forbidden, run};
    use super::*;
    use serde_json::json;

    #[test]
    fn seccomp_profile_required() {
        let cases = || {
            vec![
                forbidden(
                    "no explicit seccomp",
                    json!({"spec": {"containers": [{"name": "a"}]}}),
                    "seccompProfile",
                    r#"pod or container "a" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost""#,
                ),
                forbidden(
                    "pod seccomp invalid",
                    json!({"spec": {"securityContext": {"seccompProfile": {"type": "Unconfined"}}, "containers": [{"name": "a"}]}}),
                    "seccompProfile",
                    r#"pod must not set securityContext.seccompProfile.type to "Unconfined""#,
                ),
                forbidden(
                    "containers seccomp invalid",
                    json!({"spec": {"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}, "containers": [
                        {"name": "a"},
                        {"name": "b", "securityContext": {}},
                        {"name": "c", "securityContext": {"seccompProfile": {"type": "Unconfined"}}},
                        {"name": "d", "securityContext": {"seccompProfile": {"type": "Unconfined"}}},
                        {"name": "e", "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}},
                        {"name": "f", "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}]}}),
                    "seccompProfile",
                    r#"containers "c", "d" must not set securityContext.seccompProfile.type to "Unconfined""#,
                ),
                forbidden(
                    "pod nil, container fallthrough",
                    json!({"spec": {"containers": [
                        {"name": "a"},
                        {"name": "b", "securityContext": {}},
                        {"name": "d", "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}},
                        {"name": "e", "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}]}}),
                    "seccompProfile",
                    r#"pod or containers "a", "b" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost""#,
                ),
                allowed(
                    "pod level localhost",
                    json!({"spec": {"securityContext": {"seccompProfile": {"type": "Localhost", "localhostProfile": "p"}}, "containers": [{"name": "a"}]}}),
                ),
            ]
        };
        run(v1_19, cases());
        let mut later = cases();
        later.push(allowed(
            "no explicit seccomp, windows Pod",
            json!({"spec": {"os": {"name": "windows"}, "containers": [{"name": "a"}]}}),
        ));
        later.push(forbidden(
            "no explicit seccomp, linux pod",
            json!({"spec": {"os": {"name": "linux"}, "containers": [{"name": "a"}]}}),
            "seccompProfile",
            r#"pod or container "a" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost""#,
        ));
        run(v1_25, later);
    }
}
