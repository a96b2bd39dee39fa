//! Restricted: containers must drop `ALL` and may only add `NET_BIND_SERVICE` (from v1.22,
//! replacing baseline's capabilities check; from v1.25 Windows pods are exempt).

use std::collections::BTreeSet;

use super::{
    Check, CheckResult, VersionedCheck, capabilities_baseline, containers_phrase, join_quote,
    sorted,
};
use crate::admission::podsecurity::api::{Level, Version};
use crate::admission::podsecurity::pod::{PodMeta, PodSpec};

/// The check.
pub fn check() -> Check {
    Check {
        id: "capabilities_restricted",
        level: Level::Restricted,
        versions: vec![
            VersionedCheck {
                minimum_version: Version::V1(22),
                check: v1_22,
                overrides: &[capabilities_baseline::ID],
            },
            VersionedCheck {
                minimum_version: Version::V1(25),
                check: v1_25,
                overrides: &[capabilities_baseline::ID],
            },
        ],
    }
}

fn v1_22(_: &PodMeta, spec: &PodSpec) -> CheckResult {
    let mut missing_drop_all = Vec::new();
    let mut adding_forbidden = Vec::new();
    let mut forbidden_caps = BTreeSet::new();
    for c in spec.all_containers() {
        let Some(caps) = c
            .security_context
            .as_ref()
            .and_then(|sc| sc.capabilities.as_ref())
        else {
            missing_drop_all.push(c.name.clone());
            continue;
        };
        if !caps.drop.iter().any(|d| d == "ALL") {
            missing_drop_all.push(c.name.clone());
        }
        let mut added_forbidden = false;
        for cap in caps.add.iter().filter(|cap| *cap != "NET_BIND_SERVICE") {
            added_forbidden = true;
            forbidden_caps.insert(cap.clone());
        }
        if added_forbidden {
            adding_forbidden.push(c.name.clone());
        }
    }
    let mut details = Vec::new();
    if !missing_drop_all.is_empty() {
        details.push(format!(
            r#"{} must set securityContext.capabilities.drop=["ALL"]"#,
            containers_phrase(&missing_drop_all)
        ));
    }
    if !adding_forbidden.is_empty() {
        details.push(format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_phrase(&adding_forbidden),
            join_quote(&sorted(forbidden_caps))
        ));
    }
    if details.is_empty() {
        return CheckResult::Allowed;
    }
    CheckResult::forbidden("unrestricted capabilities", details.join("; "))
}

fn v1_25(meta: &PodMeta, spec: &PodSpec) -> CheckResult {
    if spec.is_windows() {
        return CheckResult::Allowed;
    }
    v1_22(meta, spec)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{allowed, forbidden, run};
    use super::*;
    use serde_json::json;

    #[test]
    fn capabilities_must_drop_all_and_add_only_net_bind_service() {
        let multiple = json!({"spec": {"containers": [
            {"name": "a", "securityContext": {"capabilities": {"add": ["FOO", "BAR"]}}},
            {"name": "b", "securityContext": {"capabilities": {"add": ["BAR", "BAZ"], "drop": ["NET_RAW"]}}},
            {"name": "c", "securityContext": {"capabilities": {"add": ["NET_BIND_SERVICE", "CHOWN"], "drop": ["ALL", "FOO"]}}}
        ]}});
        let detail = r#"containers "a", "b" must set securityContext.capabilities.drop=["ALL"]; containers "a", "b", "c" must not include "BAR", "BAZ", "CHOWN", "FOO" in securityContext.capabilities.add"#;
        run(
            v1_22,
            vec![forbidden(
                "multiple containers",
                multiple.clone(),
                "unrestricted capabilities",
                detail,
            )],
        );
        run(
            v1_25,
            vec![
                forbidden(
                    "multiple containers",
                    multiple,
                    "unrestricted capabilities",
                    detail,
                ),
                allowed(
                    "windows pod, admit without checking capabilities",
                    json!({"spec": {"os": {"name": "windows"}, "containers": [{"name": "a"}]}}),
                ),
                forbidden(
                    "linux pod, reject if security context is not set",
                    json!({"spec": {"os": {"name": "linux"}, "containers": [{"name": "a"}]}}),
                    "unrestricted capabilities",
                    r#"container "a" must set securityContext.capabilities.drop=["ALL"]"#,
                ),
                allowed(
                    "drop all, add net_bind_service",
                    json!({"spec": {"containers": [{"name": "a", "securityContext": {
                        "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}}]}}),
                ),
            ],
        );
    }
}
