//! Baseline: no host network, PID or IPC namespace.

use super::{Check, CheckResult, VersionedCheck};
use crate::admission::podsecurity::api::{Level, Version};
use crate::admission::podsecurity::pod::{PodMeta, PodSpec};

/// The check.
pub fn check() -> Check {
    Check {
        id: "hostNamespaces",
        level: Level::Baseline,
        versions: vec![VersionedCheck {
            minimum_version: Version::V1(0),
            check: v1_0,
            overrides: &[],
        }],
    }
}

fn v1_0(_: &PodMeta, spec: &PodSpec) -> CheckResult {
    let shared: Vec<&str> = [
        (spec.host_network, "hostNetwork=true"),
        (spec.host_pid, "hostPID=true"),
        (spec.host_ipc, "hostIPC=true"),
    ]
    .into_iter()
    .filter_map(|(set, text)| set.then_some(text))
    .collect();
    if shared.is_empty() {
        return CheckResult::Allowed;
    }
    CheckResult::forbidden("host namespaces", shared.join(", "))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{allowed, forbidden, run};
    use super::*;
    use serde_json::json;

    #[test]
    fn host_namespaces_are_forbidden() {
        run(
            v1_0,
            vec![
                forbidden(
                    "host network",
                    json!({"spec": {"hostNetwork": true}}),
                    "host namespaces",
                    "hostNetwork=true",
                ),
                forbidden(
                    "host PID",
                    json!({"spec": {"hostPID": true}}),
                    "host namespaces",
                    "hostPID=true",
                ),
                forbidden(
                    "all",
                    json!({"spec": {"hostNetwork": true, "hostPID": true, "hostIPC": true}}),
                    "host namespaces",
                    "hostNetwork=true, hostPID=true, hostIPC=true",
                ),
                allowed(
                    "explicit false",
                    json!({"spec": {"hostNetwork": false, "hostIPC": false}}),
                ),
            ],
        );
    }
}
