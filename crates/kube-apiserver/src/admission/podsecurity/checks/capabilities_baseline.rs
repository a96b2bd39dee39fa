//! Baseline: containers may only add capabilities of the default set.

use std::collections::BTreeSet;

use super::{Check, CheckResult, VersionedCheck, containers_phrase, join_quote, sorted};
use crate::admission::podsecurity::api::{Level, Version};
use crate::admission::podsecurity::pod::{PodMeta, PodSpec};

/// The id restricted's capabilities check overrides.
pub const ID: &str = "capabilities_baseline";

const ALLOWED_V1_0: &[&str] = &[
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// The check.
pub fn check() -> Check {
    Check {
        id: ID,
        level: Level::Baseline,
        versions: vec![VersionedCheck {
            minimum_version: Version::V1(0),
            check: v1_0,
            overrides: &[],
        }],
    }
}

fn v1_0(_: &PodMeta, spec: &PodSpec) -> CheckResult {
    let mut bad_containers = Vec::new();
    let mut non_default = BTreeSet::new();
    for c in spec.all_containers() {
        let Some(caps) = c
            .security_context
            .as_ref()
            .and_then(|sc| sc.capabilities.as_ref())
        else {
            continue;
        };
        let mut valid = true;
        for cap in &caps.add {
            if !ALLOWED_V1_0.contains(&cap.as_str()) {
                valid = false;
                non_default.insert(cap.clone());
            }
        }
        if !valid {
            bad_containers.push(c.name.clone());
        }
    }
    if bad_containers.is_empty() {
        return CheckResult::Allowed;
    }
    CheckResult::forbidden(
        "non-default capabilities",
        format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_phrase(&bad_containers),
            join_quote(&sorted(non_default))
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::super::testing::{allowed, forbidden, run};
    use super::*;
    use serde_json::json;

    #[test]
    fn only_default_capabilities_may_be_added() {
        run(
            v1_0,
            vec![
                forbidden(
                    "multiple containers",
                    json!({"spec": {"containers": [
                        {"name": "a", "securityContext": {"capabilities": {"add": ["FOO", "BAR"]}}},
                        {"name": "b", "securityContext": {"capabilities": {"add": ["BAR", "BAZ"]}}},
                        {"name": "c", "securityContext": {"capabilities": {"add": ["CHOWN"]}}}
                    ]}}),
                    "non-default capabilities",
                    r#"containers "a", "b" must not include "BAR", "BAZ", "FOO" in securityContext.capabilities.add"#,
                ),
                allowed(
                    "default set and drops",
                    json!({"spec": {"containers": [
                        {"name": "a", "securityContext": {"capabilities": {"add": ["NET_BIND_SERVICE", "KILL"], "drop": ["ALL"]}}}
                    ]}}),
                ),
            ],
        );
    }
}
