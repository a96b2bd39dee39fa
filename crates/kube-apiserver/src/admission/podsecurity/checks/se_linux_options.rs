//! Baseline: SELinux type limited to the container types (`container_engine_t` from v1.31);
//! user and role may not be set.

use std::collections::BTreeSet;

use super::{Check, CheckResult, VersionedCheck, containers_phrase, join_quote, pluralize, sorted};
use crate::admission::podsecurity::api::{Level, Version};
use crate::admission::podsecurity::pod::{PodMeta, PodSpec, SeLinuxOptions};

const ALLOWED_TYPES_V1_0: &[&str] = &["", "container_t", "container_init_t", "container_kvm_t"];
const ALLOWED_TYPES_V1_31: &[&str] = &[
    "",
    "container_t",
    "container_init_t",
    "container_kvm_t",
    "container_engine_t",
];

/// The check.
pub fn check() -> Check {
    Check {
        id: "seLinuxOptions",
        level: Level::Baseline,
        versions: vec![
            VersionedCheck {
                minimum_version: Version::V1(0),
                check: v1_0,
                overrides: &[],
            },
            VersionedCheck {
                minimum_version: Version::V1(31),
                check: v1_31,
                overrides: &[],
            },
        ],
    }
}

fn v1_0(meta: &PodMeta, spec: &PodSpec) -> CheckResult {
    evaluate(meta, spec, ALLOWED_TYPES_V1_0)
}

fn v1_31(meta: &PodMeta, spec: &PodSpec) -> CheckResult {
    evaluate(meta, spec, ALLOWED_TYPES_V1_31)
}

#[derive(Default)]
struct Findings {
    bad_types: BTreeSet<String>,
    set_user: bool,
    set_role: bool,
}

impl Findings {
    fn valid(&mut self, opts: &SeLinuxOptions, allowed: &[&str]) -> bool {
        let mut valid = true;
        if !allowed.contains(&opts.type_.as_str()) {
            valid = false;
            self.bad_types.insert(opts.type_.clone());
        }
        if !opts.user.is_empty() {
            valid = false;
            self.set_user = true;
        }
        if !opts.role.is_empty() {
            valid = false;
            self.set_role = true;
        }
        valid
    }
}

fn evaluate(_: &PodMeta, spec: &PodSpec, allowed: &[&str]) -> CheckResult {
    let mut findings = Findings::default();
    let mut setters = Vec::new();
    if let Some(opts) = spec
        .security_context
        .as_ref()
        .and_then(|sc| sc.se_linux_options.as_ref())
        && !findings.valid(opts, allowed)
    {
        setters.push("pod".to_string());
    }
    let mut bad_containers = Vec::new();
    for c in spec.all_containers() {
        if let Some(opts) = c
            .security_context
            .as_ref()
            .and_then(|sc| sc.se_linux_options.as_ref())
            && !findings.valid(opts, allowed)
        {
            bad_containers.push(c.name.clone());
        }
    }
    if !bad_containers.is_empty() {
        setters.push(containers_phrase(&bad_containers));
    }
    if setters.is_empty() {
        return CheckResult::Allowed;
    }
    let mut data = Vec::new();
    if !findings.bad_types.is_empty() {
        let types = sorted(findings.bad_types);
        data.push(format!(
            "{} {}",
            pluralize("type", "types", types.len()),
            join_quote(&types)
        ));
    }
    if findings.set_user {
        data.push("user may not be set".to_string());
    }
    if findings.set_role {
        data.push("role may not be set".to_string());
    }
    CheckResult::forbidden(
        "seLinuxOptions",
        format!(
            "{} set forbidden securityContext.seLinuxOptions: {}",
            setters.join(" and "),
            data.join("; ")
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::super::testing::{allowed, forbidden, run};
    use super::*;
    use serde_json::json;

    fn containers() -> serde_json::Value {
        json!([
            {"name": "a", "securityContext": {"seLinuxOptions": {"type": "container_t"}}},
            {"name": "b", "securityContext": {"seLinuxOptions": {"type": "container_init_t"}}},
            {"name": "c", "securityContext": {"seLinuxOptions": {"type": "container_kvm_t"}}},
            {"name": "d", "securityContext": {"seLinuxOptions": {"type": "container_engine_t"}}},
            {"name": "e", "securityContext": {"seLinuxOptions": {"type": "bar"}}},
            {"name": "f", "securityContext": {"seLinuxOptions": {"user": "bar"}}},
            {"name": "g", "securityContext": {"seLinuxOptions": {"role": "baz"}}}
        ])
    }

    #[test]
    fn se_linux_options_limited() {
        run(
            v1_31,
            vec![
                forbidden(
                    "invalid pod and containers",
                    json!({"spec": {
                        "securityContext": {"seLinuxOptions": {"type": "foo", "user": "bar", "role": "baz"}},
                        "containers": containers()}}),
                    "seLinuxOptions",
                    r#"pod and containers "e", "f", "g" set forbidden securityContext.seLinuxOptions: types "bar", "foo"; user may not be set; role may not be set"#,
                ),
                forbidden(
                    "invalid pod",
                    json!({"spec": {
                        "securityContext": {"seLinuxOptions": {"type": "foo", "user": "bar", "role": "baz"}},
                        "containers": [{"name": "a", "securityContext": {"seLinuxOptions": {"type": "container_engine_t"}}}]}}),
                    "seLinuxOptions",
                    r#"pod set forbidden securityContext.seLinuxOptions: type "foo"; user may not be set; role may not be set"#,
                ),
                forbidden(
                    "invalid containers",
                    json!({"spec": {"securityContext": {"seLinuxOptions": {}}, "containers": containers()}}),
                    "seLinuxOptions",
                    r#"containers "e", "f", "g" set forbidden securityContext.seLinuxOptions: type "bar"; user may not be set; role may not be set"#,
                ),
                allowed(
                    "allowed types",
                    json!({"spec": {"securityContext": {"seLinuxOptions": {"type": "container_t", "level": "s0:c1"}}}}),
                ),
            ],
        );
        run(
            v1_0,
            vec![forbidden(
                "container_engine_t before v1.31",
                json!({"spec": {"containers": [{"name": "d", "securityContext": {"seLinuxOptions": {"type": "container_engine_t"}}}]}}),
                "seLinuxOptions",
                r#"container "d" set forbidden securityContext.seLinuxOptions: type "container_engine_t""#,
            )],
        );
    }
}
