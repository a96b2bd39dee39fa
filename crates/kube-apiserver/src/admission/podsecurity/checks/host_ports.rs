//! Baseline: no host ports.

use std::collections::BTreeSet;

use super::{Check, CheckResult, VersionedCheck, containers_phrase, pluralize};
use crate::admission::podsecurity::api::{Level, Version};
use crate::admission::podsecurity::pod::{PodMeta, PodSpec};

/// The check.
pub fn check() -> Check {
    Check {
        id: "hostPorts",
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
    // Sorted as strings, as upstream's string set.
    let mut ports = BTreeSet::new();
    for c in spec.all_containers() {
        let mut valid = true;
        for p in c.ports.iter().filter(|p| p.host_port != 0) {
            valid = false;
            ports.insert(p.host_port.to_string());
        }
        if !valid {
            bad_containers.push(c.name.clone());
        }
    }
    if bad_containers.is_empty() {
        return CheckResult::Allowed;
    }
    let ports: Vec<String> = ports.into_iter().collect();
    CheckResult::forbidden(
        "hostPort",
        format!(
            "{} {} {} {}",
            containers_phrase(&bad_containers),
            pluralize("uses", "use", bad_containers.len()),
            pluralize("hostPort", "hostPorts", ports.len()),
            ports.join(", ")
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::super::testing::{allowed, forbidden, run};
    use super::*;
    use serde_json::json;

    #[test]
    fn host_ports_are_forbidden() {
        run(
            v1_0,
            vec![
                forbidden(
                    "one container, one host port",
                    json!({"spec": {"containers": [
                        {"name": "a", "ports": [{"containerPort": 10}]},
                        {"name": "b", "ports": [{"containerPort": 20, "hostPort": 20}]}]}}),
                    "hostPort",
                    r#"container "b" uses hostPort 20"#,
                ),
                forbidden(
                    "multiple containers, multiple host port",
                    json!({"spec": {"containers": [
                        {"name": "a", "ports": [{"containerPort": 10}]},
                        {"name": "b", "ports": [{"containerPort": 10, "hostPort": 10}, {"containerPort": 20, "hostPort": 20}]},
                        {"name": "c", "ports": [{"containerPort": 10, "hostPort": 10}, {"containerPort": 30, "hostPort": 30}]}]}}),
                    "hostPort",
                    r#"containers "b", "c" use hostPorts 10, 20, 30"#,
                ),
                allowed(
                    "host port 0",
                    json!({"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 1, "hostPort": 0}]}]}}),
                ),
            ],
        );
    }
}
