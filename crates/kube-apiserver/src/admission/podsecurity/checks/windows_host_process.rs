//! Baseline: no Windows HostProcess pods or containers.

use super::{Check, CheckResult, VersionedCheck, containers_phrase};
use crate::admission::podsecurity::api::{Level, Version};
use crate::admission::podsecurity::pod::{PodMeta, PodSpec, WindowsOptions};

/// The check.
pub fn check() -> Check {
    Check {
        id: "windowsHostProcess",
        level: Level::Baseline,
        versions: vec![VersionedCheck {
            minimum_version: Version::V1(0),
            check: v1_0,
            overrides: &[],
        }],
    }
}

fn host_process(opts: Option<&WindowsOptions>) -> bool {
    opts.and_then(|o| o.host_process) == Some(true)
}

fn v1_0(_: &PodMeta, spec: &PodSpec) -> CheckResult {
    let bad: Vec<String> = spec
        .all_containers()
        .filter(|c| {
            host_process(
                c.security_context
                    .as_ref()
                    .and_then(|sc| sc.windows_options.as_ref()),
            )
        })
        .map(|c| c.name.clone())
        .collect();
    let mut setters = Vec::new();
    if host_process(
        spec.security_context
            .as_ref()
            .and_then(|sc| sc.windows_options.as_ref()),
    ) {
        setters.push("pod".to_string());
    }
    if !bad.is_empty() {
        setters.push(containers_phrase(&bad));
    }
    if setters.is_empty() {
        return CheckResult::Allowed;
    }
    CheckResult::forbidden(
        "hostProcess",
        format!(
            "{} must not set securityContext.windowsOptions.hostProcess=true",
            setters.join(" and ")
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::super::testing::{allowed, forbidden, run};
    use super::*;
    use serde_json::json;

    #[test]
    fn host_process_is_forbidden() {
        run(
            v1_0,
            vec![
                forbidden(
                    "host process",
                    json!({"spec": {
                        "securityContext": {"windowsOptions": {"hostProcess": true}},
                        "containers": [
                            {"name": "a"},
                            {"name": "b", "securityContext": {}},
                            {"name": "c", "securityContext": {"windowsOptions": {}}},
                            {"name": "d", "securityContext": {"windowsOptions": {"hostProcess": false}}},
                            {"name": "e", "securityContext": {"windowsOptions": {"hostProcess": true}}},
                            {"name": "f", "securityContext": {"windowsOptions": {"hostProcess": true}}}]}}),
                    "hostProcess",
                    r#"pod and containers "e", "f" must not set securityContext.windowsOptions.hostProcess=true"#,
                ),
                allowed("unset", json!({"spec": {"containers": [{"name": "a"}]}})),
            ],
        );
    }
}
