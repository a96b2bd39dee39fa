//! `--feature-gates` and `--runtime-config` (upstream `component-base/featuregate` and
//! `apiserver/pkg/server/options/api_enablement.go`), for the features and group versions this
//! binary serves off by default: the `MutatingAdmissionPolicy` gate (beta in 1.35, off) and
//! `admissionregistration.k8s.io/v1beta1` (a beta API, off). The gates themselves, all of
//! 1.35's, are in [`crate::feature_gates`].

use crate::apis::GroupDef;
use crate::feature_gates::{FeatureGates, parse_go_bool as parse_bool};
use crate::options::Options;

/// Group versions served only when `--runtime-config` turns them on.
const OFF_BY_DEFAULT: &[(&str, &str)] = &[("admissionregistration.k8s.io", "v1beta1")];

/// Whether gate `name` is on (its 1.35 default unless `--feature-gates` says otherwise).
pub fn enabled(opts: &Options, name: &str) -> bool {
    FeatureGates::parse(&opts.feature_gates)
        .map(|(gates, _)| gates.enabled(name))
        .unwrap_or_else(|_| crate::feature_gates::lookup(name).is_some_and(|g| g.default))
}

/// Upstream's errors for `--feature-gates` (unknown, malformed, locked, unmet dependencies).
pub fn validate_feature_gates(list: &[String]) -> Vec<String> {
    FeatureGates::parse(list).err().unwrap_or_default()
}

/// Logs the warnings upstream logs for `--feature-gates` (GA and deprecated gates set), and
/// names the gates this server accepts without implementing them.
pub fn log_feature_gate_warnings(list: &[String]) {
    if let Ok((_, warnings)) = FeatureGates::parse(list) {
        for warning in warnings {
            tracing::warn!("{warning}");
        }
    }
}

/// Upstream's errors for `--runtime-config` (`group/version[=true|false]`, `api/all`,
/// `api/beta`, `api/ga`, `api/alpha`).
pub fn validate_runtime_config(list: &[String]) -> Vec<String> {
    let mut errors = Vec::new();
    for kv in list.iter().filter(|kv| !kv.trim().is_empty()) {
        let (key, value) = kv.split_once('=').unwrap_or((kv.as_str(), "true"));
        if parse_bool(value.trim()).is_none() {
            errors.push(format!("invalid value {key}={value}"));
        }
        if key.trim().matches('/').count() != 1 && !key.trim().starts_with("api/") {
            errors.push(format!("runtime-config invalid key {key}"));
        }
    }
    errors
}

/// Whether `--runtime-config` turns `group/version` on (`api/all` and `api/beta` included).
fn runtime_enabled(opts: &Options, group: &str, version: &str) -> bool {
    let wanted = format!("{group}/{version}");
    let beta = version.contains("beta");
    let mut on = false;
    for kv in &opts.runtime_config {
        let (key, value) = kv.split_once('=').unwrap_or((kv.as_str(), "true"));
        let value = parse_bool(value.trim()).unwrap_or(false);
        match key.trim() {
            k if k == wanted => on = value,
            "api/all" => on = value,
            "api/beta" if beta => on = value,
            _ => {}
        }
    }
    on
}

/// The built-in groups with the versions the flags serve: off-by-default versions only when
/// `--runtime-config` enables them (and, for admissionregistration v1beta1, whose only
/// resources are the mutating admission policies, the `MutatingAdmissionPolicy` gate).
pub fn served_groups(opts: &Options, mut groups: Vec<GroupDef>) -> Vec<GroupDef> {
    for group in &mut groups {
        let name = group.group;
        group.versions.retain(|(version, _)| {
            if !OFF_BY_DEFAULT.contains(&(name, *version)) {
                return true;
            }
            runtime_enabled(opts, name, version)
                && (name != "admissionregistration.k8s.io"
                    || enabled(opts, "MutatingAdmissionPolicy"))
        });
    }
    groups.retain(|g| !g.versions.is_empty());
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn opts(args: &[&str]) -> Options {
        let mut argv = vec!["kube-apiserver"];
        argv.extend_from_slice(args);
        Options::try_parse_from(argv).unwrap()
    }

    fn serves_v1beta1(o: &Options) -> bool {
        served_groups(o, crate::apis::builtin_groups())
            .iter()
            .any(|g| {
                g.group == "admissionregistration.k8s.io"
                    && g.versions.iter().any(|(v, _)| *v == "v1beta1")
            })
    }

    #[test]
    fn mutating_admission_policies_need_the_gate_and_the_runtime_config() {
        assert!(!serves_v1beta1(&opts(&[])));
        assert!(!serves_v1beta1(&opts(&[
            "--runtime-config=admissionregistration.k8s.io/v1beta1=true"
        ])));
        assert!(!serves_v1beta1(&opts(&[
            "--feature-gates=MutatingAdmissionPolicy=true"
        ])));
        let both = opts(&[
            "--feature-gates=MutatingAdmissionPolicy=true",
            "--runtime-config=admissionregistration.k8s.io/v1beta1=true",
        ]);
        assert!(serves_v1beta1(&both));
        assert!(enabled(&both, "MutatingAdmissionPolicy"));
        assert!(serves_v1beta1(&opts(&[
            "--feature-gates=MutatingAdmissionPolicy=true",
            "--runtime-config=api/beta=true"
        ])));
    }

    #[test]
    fn malformed_values_are_refused() {
        assert_eq!(
            validate_feature_gates(&["MutatingAdmissionPolicy".into()]),
            vec!["missing bool value for MutatingAdmissionPolicy"]
        );
        assert_eq!(
            validate_feature_gates(&["MutatingAdmissionPolicy=yes".into()]),
            vec![
                "invalid value of MutatingAdmissionPolicy=yes, err: strconv.ParseBool: parsing \"yes\": invalid syntax"
            ]
        );
        assert_eq!(
            validate_feature_gates(&["SomethingElse=true".into()]),
            vec!["unrecognized feature gate: SomethingElse"]
        );
        assert_eq!(
            validate_runtime_config(&["admissionregistration.k8s.io/v1beta1=maybe".into()]),
            vec!["invalid value admissionregistration.k8s.io/v1beta1=maybe"]
        );
    }
}
