//! `/proc` must stay masked: baseline allows any `procMount` in a user namespace from v1.35;
//! restricted (from v1.35, replacing baseline's) never allows anything but `Default`.

use std::collections::BTreeSet;

use super::{Check, CheckResult, VersionedCheck, containers_phrase, join_quote, sorted};
use crate::admission::podsecurity::api::{Level, Version};
use crate::admission::podsecurity::pod::{PodMeta, PodSpec};

const BASELINE_ID: &str = "procMount";

/// The baseline check.
pub fn baseline_check() -> Check {
    Check {
        id: BASELINE_ID,
        level: Level::Baseline,
        versions: vec![
            VersionedCheck {
                minimum_version: Version::V1(0),
                check: v1_0,
                overrides: &[],
            },
            VersionedCheck {
                minimum_version: Version::V1(35),
                check: baseline_v1_35,
                overrides: &[],
            },
        ],
    }
}

/// The restricted check.
pub fn restricted_check() -> Check {
    Check {
        id: "procMount_restricted",
        level: Level::Restricted,
        versions: vec![VersionedCheck {
            minimum_version: Version::V1(35),
            check: v1_0,
            overrides: &[BASELINE_ID],
        }],
    }
}

fn v1_0(_: &PodMeta, spec: &PodSpec) -> CheckResult {
    let mut bad_containers = Vec::new();
    let mut types = BTreeSet::new();
    for c in spec.all_containers() {
        let Some(pm) = c
            .security_context
            .as_ref()
            .and_then(|sc| sc.proc_mount.as_ref())
        else {
            continue;
        };
        if pm != "Default" {
            bad_containers.push(c.name.clone());
            types.insert(pm.clone());
        }
    }
    if bad_containers.is_empty() {
        return CheckResult::Allowed;
    }
    CheckResult::forbidden(
        "procMount",
        format!(
            "{} must not set securityContext.procMount to {}",
            containers_phrase(&bad_containers),
            join_quote(&sorted(types))
        ),
    )
}

fn baseline_v1_35(meta: &PodMeta, spec: &PodSpec) -> CheckResult {
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

    fn pod(host_users: bool) -> serde_json::Value {
        json!({"spec": {"hostUsers": host_users, "containers": [
            {"name": "a"},
            {"name": "b", "securityContext": {}},
            {"name": "c", "securityContext": {"procMount": "Default"}},
            {"name": "d", "securityContext": {"procMount": "Unmasked"}},
            {"name": "e", "securityContext": {"procMount": "other"}}]}})
    }

    const DETAIL: &str =
        r#"containers "d", "e" must not set securityContext.procMount to "Unmasked", "other""#;

    #[test]
    fn baseline_proc_mount_relaxed_in_user_namespaces_from_v1_35() {
        run(
            baseline_v1_35,
            vec![
                forbidden("procMount", pod(true), "procMount", DETAIL),
                allowed("procMount with userns", pod(false)),
            ],
        );
        run(
            v1_0,
            vec![forbidden(
                "procMount with userns before v1.35",
                pod(false),
                "procMount",
                DETAIL,
            )],
        );
    }

    #[test]
    fn restricted_proc_mount_never_relaxed() {
        let check = restricted_check();
        run(
            check.versions[0].check,
            vec![
                forbidden("procMount", pod(true), "procMount", DETAIL),
                forbidden("procMount with userns", pod(false), "procMount", DETAIL),
            ],
        );
    }
}
