//! Baseline: only the safe, namespaced sysctls (the set grew in v1.27, v1.29 and v1.32).

use super::{Check, CheckResult, VersionedCheck};
use crate::admission::podsecurity::api::{Level, Version};
use crate::admission::podsecurity::pod::{PodMeta, PodSpec};

const ALLOWED_V1_0: &[&str] = &[
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
];
const ADDED_V1_27: &[&str] = &["net.ipv4.ip_local_reserved_ports"];
const ADDED_V1_29: &[&str] = &[
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
];
const ADDED_V1_32: &[&str] = &["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"];

/// The check.
pub fn check() -> Check {
    Check {
        id: "sysctls",
        level: Level::Baseline,
        versions: vec![
            VersionedCheck {
                minimum_version: Version::V1(0),
                check: v1_0,
                overrides: &[],
            },
            VersionedCheck {
                minimum_version: Version::V1(27),
                check: v1_27,
                overrides: &[],
            },
            VersionedCheck {
                minimum_version: Version::V1(29),
                check: v1_29,
                overrides: &[],
            },
            VersionedCheck {
                minimum_version: Version::V1(32),
                check: v1_32,
                overrides: &[],
            },
        ],
    }
}

fn v1_0(_: &PodMeta, spec: &PodSpec) -> CheckResult {
    evaluate(spec, &[ALLOWED_V1_0])
}

fn v1_27(_: &PodMeta, spec: &PodSpec) -> CheckResult {
    evaluate(spec, &[ALLOWED_V1_0, ADDED_V1_27])
}

fn v1_29(_: &PodMeta, spec: &PodSpec) -> CheckResult {
    evaluate(spec, &[ALLOWED_V1_0, ADDED_V1_27, ADDED_V1_29])
}

fn v1_32(_: &PodMeta, spec: &PodSpec) -> CheckResult {
    evaluate(spec, &[ALLOWED_V1_0, ADDED_V1_27, ADDED_V1_29, ADDED_V1_32])
}

fn evaluate(spec: &PodSpec, allowed: &[&[&str]]) -> CheckResult {
    let forbidden: Vec<&str> = spec
        .security_context
        .iter()
        .flat_map(|sc| &sc.sysctls)
        .map(|s| s.name.as_str())
        .filter(|name| !allowed.iter().any(|set| set.contains(name)))
        .collect();
    if forbidden.is_empty() {
        return CheckResult::Allowed;
    }
    CheckResult::forbidden("forbidden sysctls", forbidden.join(", "))
}

#[cfg(test)]
mod tests {
    use super::super::CheckFn;
    use super::super::testing::{allowed, forbidden, run};
    use super::*;
    use serde_json::json;

    fn pod(names: &[&str]) -> serde_json::Value {
        let sysctls: Vec<_> = names
            .iter()
            .map(|n| json!({"name": n, "value": "1"}))
            .collect();
        json!({"spec": {"securityContext": {"sysctls": sysctls}}})
    }

    #[test]
    fn only_safe_sysctls_for_each_version() {
        let versions: [(CheckFn, &[&str]); 4] = [
            (v1_0, ALLOWED_V1_0),
            (v1_27, ADDED_V1_27),
            (v1_29, ADDED_V1_29),
            (v1_32, ADDED_V1_32),
        ];
        for (i, (check, added)) in versions.iter().enumerate() {
            let mut cases = vec![forbidden(
                "forbidden sysctls",
                pod(&["a", "b"]),
                "forbidden sysctls",
                "a, b",
            )];
            for name in *added {
                cases.push(allowed("newly allowed", pod(&[name])));
            }
            // What the next version adds is still forbidden here.
            if let Some((_, next)) = versions.get(i + 1) {
                let name: &'static str = next[0];
                cases.push(forbidden(
                    "not yet allowed",
                    pod(&[name]),
                    "forbidden sysctls",
                    name,
                ));
            }
            run(*check, cases);
        }
        run(
            v1_32,
            vec![allowed(
                "kernel.shm_rmid_forced",
                pod(&["kernel.shm_rmid_forced", "net.ipv4.tcp_rmem"]),
            )],
        );
    }
}
