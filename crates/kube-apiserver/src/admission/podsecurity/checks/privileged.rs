//! Baseline: no privileged containers.

use super::{Check, CheckResult, VersionedCheck, containers_phrase};
use crate::admission::podsecurity::api::{Level, Version};
use crate::admission::podsecurity::pod::{PodMeta, PodSpec};

/// The check.
pub fn check() -> Check {
    Check {
        id: "privileged",
        level: Level::Baseline,
        versions: vec![VersionedCheck {
            minimum_version: Version::V1(0),
            check: v1_0,
            overrides: &[],
        }],
    }
}

fn v1_0(_: &PodMeta, spec: &PodSpec) -> CheckResult {
    let bad: Vec<String> = spec
        .all_containers()
        .filter(|c| c.security_context.as_ref().and_then(|sc| sc.privileged) == Some(true))
        .map(|c| c.name.clone())
        .collect();
    if bad.is_empty() {
        return CheckResult::Allowed;
    }
    CheckResult::forbidden(
        "privileged",
        format!(
            "{} must not set securityContext.privileged=true",
            containers_phrase(&bad)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::super::testing::{forbidden, run};
    use super::*;
    use serde_json::json;

    #[test]
    fn privileged_containers_are_forbidden() {
        run(
            v1_0,
            vec![forbidden(
                "privileged",
                json!({"spec": {"containers": [
                    {"name": "a"},
                    {"name": "b", "securityContext": {}},
                    {"name": "c", "securityContext": {"privileged": false}},
                    {"name": "d", "securityContext": {"privileged": true}},
                    {"name": "e", "securityContext": {"privileged": true}}]}}),
                "privileged",
                r#"containers "d", "e" must not set securityContext.privileged=true"#,
            )],
        );
    }
}
