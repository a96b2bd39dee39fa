//! Restricted: containers must set `securityContext.allowPrivilegeEscalation=false` (from
//! v1.8; from v1.25 Windows pods are exempt, as the field cannot be set for them).

use super::{Check, CheckResult, VersionedCheck, containers_phrase};
use crate::admission::podsecurity::api::{Level, Version};
use crate::admission::podsecurity::pod::{PodMeta, PodSpec};

/// The check.
pub fn check() -> Check {
    Check {
        id: "allowPrivilegeEscalation",
        level: Level::Restricted,
        versions: vec![
            VersionedCheck {
                minimum_version: Version::V1(8),
                check: v1_8,
                overrides: &[],
            },
            VersionedCheck {
                minimum_version: Version::V1(25),
                check: v1_25,
                overrides: &[],
            },
        ],
    }
}

fn v1_8(_: &PodMeta, spec: &PodSpec) -> CheckResult {
    let bad: Vec<String> = spec
        .all_containers()
        .filter(|c| {
            c.security_context
                .as_ref()
                .and_then(|sc| sc.allow_privilege_escalation)
                != Some(false)
        })
        .map(|c| c.name.clone())
        .collect();
    if bad.is_empty() {
        return CheckResult::Allowed;
    }
    CheckResult::forbidden(
        "allowPrivilegeEscalation != false",
        format!(
            "{} must set securityContext.allowPrivilegeEscalation=false",
            containers_phrase(&bad)
        ),
    )
}

fn v1_25(meta: &PodMeta, spec: &PodSpec) -> CheckResult {
    if spec.is_windows() {
        return CheckResult::Allowed;
    }
    v1_8(meta, spec)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{allowed, forbidden, run};
    use super::*;
    use serde_json::json;

    #[test]
    fn allow_privilege_escalation_must_be_false() {
        let three = json!({"spec": {"containers": [
            {"name": "a", "securityContext": {}},
            {"name": "b", "securityContext": {"allowPrivilegeEscalation": null}},
            {"name": "c", "securityContext": {"allowPrivilegeEscalation": true}},
            {"name": "d", "securityContext": {"allowPrivilegeEscalation": false}}
        ]}});
        let detail =
            r#"containers "a", "b", "c" must set securityContext.allowPrivilegeEscalation=false"#;
        run(
            v1_8,
            vec![forbidden(
                "multiple containers",
                three.clone(),
                "allowPrivilegeEscalation != false",
                detail,
            )],
        );
        run(
            v1_25,
            vec![
                forbidden(
                    "multiple containers",
                    three,
                    "allowPrivilegeEscalation != false",
                    detail,
                ),
                allowed(
                    "windows pod, admit without checking privilegeEscalation",
                    json!({"spec": {"os": {"name": "windows"}, "containers": [{"name": "a"}]}}),
                ),
                forbidden(
                    "linux pod, reject if security context is not set",
                    json!({"spec": {"os": {"name": "linux"}, "containers": [{"name": "a"}]}}),
                    "allowPrivilegeEscalation != false",
                    r#"container "a" must set securityContext.allowPrivilegeEscalation=false"#,
                ),
            ],
        );
    }
}
