//! Baseline: no hostPath volumes.

use super::{Check, CheckResult, VersionedCheck, join_quote, pluralize};
use crate::admission::podsecurity::api::{Level, Version};
use crate::admission::podsecurity::pod::{PodMeta, PodSpec};

/// The id restricted's volume check overrides.
pub const ID: &str = "hostPathVolumes";

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
    let host: Vec<&str> = spec
        .volumes
        .iter()
        .filter(|v| v.host_path.is_some())
        .map(|v| v.name.as_str())
        .collect();
    if host.is_empty() {
        return CheckResult::Allowed;
    }
    CheckResult::forbidden(
        "hostPath volumes",
        format!(
            "{} {}",
            pluralize("volume", "volumes", host.len()),
            join_quote(&host)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::super::testing::{allowed, forbidden, run};
    use super::*;
    use serde_json::json;

    #[test]
    fn host_path_volumes_are_forbidden() {
        run(
            v1_0,
            vec![
                forbidden(
                    "one volume",
                    json!({"spec": {"volumes": [{"name": "a", "hostPath": {"path": "/"}}, {"name": "b", "emptyDir": {}}]}}),
                    "hostPath volumes",
                    r#"volume "a""#,
                ),
                forbidden(
                    "multiple volumes",
                    json!({"spec": {"volumes": [
                        {"name": "a", "hostPath": {"path": "/a"}},
                        {"name": "b", "hostPath": {"path": "/b"}}]}}),
                    "hostPath volumes",
                    r#"volumes "a", "b""#,
                ),
                allowed("no volumes", json!({"spec": {}})),
            ],
        );
    }
}
