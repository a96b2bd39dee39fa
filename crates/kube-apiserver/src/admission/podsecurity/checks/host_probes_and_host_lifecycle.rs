//! Baseline (from v1.34): probes and lifecycle handlers must not name a `host`.

use std::collections::BTreeSet;

use super::{Check, CheckResult, VersionedCheck, join_quote, pluralize, sorted};
use crate::admission::podsecurity::api::{Level, Version};
use crate::admission::podsecurity::pod::{Handler, PodMeta, PodSpec};

/// The check.
pub fn check() -> Check {
    Check {
        id: "hostProbesAndHostLifecycle",
        level: Level::Baseline,
        versions: vec![VersionedCheck {
            minimum_version: Version::V1(34),
            check: v1_34,
            overrides: &[],
        }],
    }
}

fn hosts(handler: Option<&Handler>) -> impl Iterator<Item = &str> {
    handler
        .into_iter()
        .flat_map(|h| [h.http_get.as_ref(), h.tcp_socket.as_ref()])
        .flatten()
        .map(|a| a.host.as_str())
        .filter(|host| !host.is_empty())
}

fn v1_34(_: &PodMeta, spec: &PodSpec) -> CheckResult {
    let mut bad_containers = BTreeSet::new();
    let mut forbidden = BTreeSet::new();
    for c in spec.all_containers() {
        let lifecycle = c.lifecycle.as_ref();
        let handlers = [
            c.liveness_probe.as_ref(),
            c.readiness_probe.as_ref(),
            c.startup_probe.as_ref(),
            lifecycle.and_then(|l| l.post_start.as_ref()),
            lifecycle.and_then(|l| l.pre_stop.as_ref()),
        ];
        for handler in handlers {
            for host in hosts(handler) {
                bad_containers.insert(c.name.clone());
                forbidden.insert(host.to_string());
            }
        }
    }
    if bad_containers.is_empty() {
        return CheckResult::Allowed;
    }
    let containers = sorted(bad_containers);
    let hosts = sorted(forbidden);
    CheckResult::forbidden(
        "probe or lifecycle host",
        format!(
            "{} {} {} {} {}",
            pluralize("container", "containers", containers.len()),
            join_quote(&containers),
            pluralize("uses", "use", containers.len()),
            pluralize(
                "probe or lifecycle host",
                "probe or lifecycle hosts",
                hosts.len()
            ),
            join_quote(&hosts)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::super::testing::{allowed, forbidden, run};
    use super::*;
    use serde_json::json;

    #[test]
    fn probe_and_lifecycle_hosts_are_forbidden() {
        run(
            v1_34,
            vec![
                allowed(
                    "valid pod with unset hosts",
                    json!({"spec": {"containers": [{"name": "a",
                        "livenessProbe": {"httpGet": {"port": 80}},
                        "readinessProbe": {"tcpSocket": {"port": 80, "host": ""}},
                        "lifecycle": {"preStop": {"httpGet": {"port": 80}}}}]}}),
                ),
                forbidden(
                    "invalid pod with local host IP as probe host",
                    json!({"spec": {"containers": [{"name": "a",
                        "livenessProbe": {"httpGet": {"host": "127.0.0.1"}},
                        "readinessProbe": {"tcpSocket": {"host": "::1"}},
                        "startupProbe": {"httpGet": {"host": "localhost"}}}]}}),
                    "probe or lifecycle host",
                    r#"container "a" uses probe or lifecycle hosts "127.0.0.1", "::1", "localhost""#,
                ),
                forbidden(
                    "invalid poststart tcpsocket host",
                    json!({"spec": {"containers": [{"name": "d",
                        "lifecycle": {"postStart": {"tcpSocket": {"host": "invalid.host"}}}}]}}),
                    "probe or lifecycle host",
                    r#"container "d" uses probe or lifecycle host "invalid.host""#,
                ),
                forbidden(
                    "multiple containers with multiple invalid hosts",
                    json!({"spec": {"containers": [
                        {"name": "valid"},
                        {"name": "invalid1", "livenessProbe": {"httpGet": {"host": "a.com"}}},
                        {"name": "invalid2",
                         "lifecycle": {"preStop": {"tcpSocket": {"host": "b.com"}}},
                         "startupProbe": {"httpGet": {"host": "a.com"}}}]}}),
                    "probe or lifecycle host",
                    r#"containers "invalid1", "invalid2" use probe or lifecycle hosts "a.com", "b.com""#,
                ),
                forbidden(
                    "invalid host in initcontainer",
                    json!({"spec": {"initContainers": [{"name": "init",
                        "livenessProbe": {"httpGet": {"host": "invalid.init.host"}}}]}}),
                    "probe or lifecycle host",
                    r#"container "init" uses probe or lifecycle host "invalid.init.host""#,
                ),
            ],
        );
    }
}
