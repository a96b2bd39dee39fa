//! The Pod Security Standards checks (upstream `k8s.io/pod-security-admission/policy`): one
//! module per check, each with the versions of the policy it changed in, and the
//! [`Evaluator`] that runs the checks of a level at a version.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use super::api::{Level, LevelVersion, Version};
use super::pod::{PodMeta, PodSecurityContext, PodSpec, SecurityContext, TypedProfile};

mod allow_privilege_escalation;
mod app_armor_profile;
mod capabilities_baseline;
mod capabilities_restricted;
mod host_namespaces;
mod host_path_volumes;
mod host_ports;
mod host_probes_and_host_lifecycle;
mod privileged;
mod proc_mount;
mod restricted_volumes;
mod run_as_non_root;
mod run_as_user;
mod se_linux_options;
mod seccomp_profile_baseline;
mod seccomp_profile_restricted;
mod sysctls;
mod windows_host_process;

#[cfg(test)]
mod testing;

/// The outcome of one check on one pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckResult {
    /// The pod passes.
    Allowed,
    /// The pod violates the check.
    Forbidden {
        /// A short reason (`host ports`, `privileged`), always shown.
        reason: String,
        /// What exactly is wrong (names, values); may be empty.
        detail: String,
    },
}

impl CheckResult {
    /// A violation.
    pub fn forbidden(reason: impl Into<String>, detail: impl Into<String>) -> Self {
        CheckResult::Forbidden {
            reason: reason.into(),
            detail: detail.into(),
        }
    }
}

/// The violations of several checks, in check order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AggregateResult {
    /// `(reason, detail)` of each failed check.
    pub violations: Vec<(String, String)>,
}

impl AggregateResult {
    /// Collects the failed checks of `results`.
    pub fn new(results: impl IntoIterator<Item = CheckResult>) -> Self {
        let violations = results
            .into_iter()
            .filter_map(|r| match r {
                CheckResult::Allowed => None,
                CheckResult::Forbidden { reason, detail } => {
                    let reason = if reason.is_empty() {
                        "unknown forbidden reason".to_string()
                    } else {
                        reason
                    };
                    Some((reason, detail))
                }
            })
            .collect();
        AggregateResult { violations }
    }

    /// Whether every check passed.
    pub fn allowed(&self) -> bool {
        self.violations.is_empty()
    }

    /// The reasons, comma-separated (`host namespaces, privileged`).
    pub fn forbidden_reason(&self) -> String {
        let reasons: Vec<&str> = self.violations.iter().map(|(r, _)| r.as_str()).collect();
        reasons.join(", ")
    }

    /// The reasons with their details in parentheses (`hostPort (container "a" uses hostPort
    /// 80), privileged (...)`).
    pub fn forbidden_detail(&self) -> String {
        let parts: Vec<String> = self
            .violations
            .iter()
            .map(|(reason, detail)| {
                if detail.is_empty() {
                    reason.clone()
                } else {
                    format!("{reason} ({detail})")
                }
            })
            .collect();
        parts.join(", ")
    }
}

/// A check's verdict on one pod.
pub type CheckFn = fn(&PodMeta, &PodSpec) -> CheckResult;

/// One version of a check: from which policy version it applies, and which baseline checks it
/// replaces at the restricted level.
pub struct VersionedCheck {
    /// The first policy version this version of the check applies to.
    pub minimum_version: Version,
    /// The check.
    pub check: CheckFn,
    /// Baseline checks this (restricted) check replaces.
    pub overrides: &'static [&'static str],
}

/// A check of one level, in the versions it changed in (strictly increasing).
pub struct Check {
    /// The unique id (also the order of checks in messages).
    pub id: &'static str,
    /// Baseline or restricted.
    pub level: Level,
    /// The versions.
    pub versions: Vec<VersionedCheck>,
}

/// Every check of the Pod Security Standards.
pub fn default_checks() -> Vec<Check> {
    vec![
        allow_privilege_escalation::check(),
        app_armor_profile::check(),
        capabilities_baseline::check(),
        capabilities_restricted::check(),
        host_namespaces::check(),
        host_path_volumes::check(),
        host_ports::check(),
        host_probes_and_host_lifecycle::check(),
        privileged::check(),
        proc_mount::baseline_check(),
        proc_mount::restricted_check(),
        restricted_volumes::check(),
        run_as_non_root::check(),
        run_as_user::check(),
        se_linux_options::check(),
        seccomp_profile_baseline::check(),
        seccomp_profile_restricted::check(),
        sysctls::check(),
        windows_host_process::check(),
    ]
}

/// Runs the checks of a level at a version: for every version from v1.0 to the newest any
/// check names, the ordered baseline checks and the ordered restricted checks (the baseline
/// ones they do not override included). Newer versions and `latest` use the newest.
pub struct Evaluator {
    max_version: u32,
    baseline: Vec<Vec<CheckFn>>,
    restricted: Vec<Vec<CheckFn>>,
}

impl std::fmt::Debug for Evaluator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Evaluator")
            .field("max_version", &self.max_version)
            .finish_non_exhaustive()
    }
}

fn minor(v: Version) -> Option<u32> {
    match v {
        Version::V1(m) => Some(m),
        Version::Latest => None,
    }
}

impl Evaluator {
    /// An evaluator over `checks`, or why they are inconsistent.
    pub fn new(checks: &[Check]) -> Result<Self, String> {
        validate(checks)?;
        let max_version = checks
            .iter()
            .filter_map(|c| c.versions.last())
            .filter_map(|v| minor(v.minimum_version))
            .max()
            .unwrap_or(0);
        let mut ids: Vec<(Level, &str)> = checks.iter().map(|c| (c.level, c.id)).collect();
        // Baseline first, then restricted, each by id: the order of reasons in messages.
        ids.sort();
        let mut baseline = Vec::new();
        let mut restricted = Vec::new();
        for v in 0..=max_version {
            let active: BTreeMap<&str, &VersionedCheck> = checks
                .iter()
                .filter_map(|c| active_version(c, v).map(|vc| (c.id, vc)))
                .collect();
            let overridden: HashSet<&str> = checks
                .iter()
                .filter(|c| c.level == Level::Restricted)
                .filter_map(|c| active.get(c.id))
                .flat_map(|vc| vc.overrides.iter().copied())
                .collect();
            let mut b = Vec::new();
            let mut r = Vec::new();
            for (level, id) in &ids {
                let Some(vc) = active.get(id) else { continue };
                if *level == Level::Baseline {
                    b.push(vc.check);
                    if !overridden.contains(id) {
                        r.push(vc.check);
                    }
                } else {
                    r.push(vc.check);
                }
            }
            baseline.push(b);
            restricted.push(r);
        }
        Ok(Evaluator {
            max_version,
            baseline,
            restricted,
        })
    }

    /// The newest policy version with its own checks.
    #[cfg(test)]
    pub fn max_version(&self) -> Version {
        Version::V1(self.max_version)
    }

    /// The results of every check of `lv` on the pod (none for privileged).
    pub fn evaluate(&self, lv: LevelVersion, meta: &PodMeta, spec: &PodSpec) -> AggregateResult {
        let table = match lv.level {
            Level::Privileged => return AggregateResult::default(),
            Level::Baseline => &self.baseline,
            Level::Restricted => &self.restricted,
        };
        let v = minor(lv.version)
            .unwrap_or(self.max_version)
            .min(self.max_version) as usize;
        let checks = table.get(v).map(Vec::as_slice).unwrap_or_default();
        AggregateResult::new(checks.iter().map(|check| check(meta, spec)))
    }
}

/// The version of `check` in force at policy version v1.`v`, if any.
fn active_version(check: &Check, v: u32) -> Option<&VersionedCheck> {
    check
        .versions
        .iter()
        .rev()
        .find(|vc| minor(vc.minimum_version).is_some_and(|m| m <= v))
}

fn validate(checks: &[Check]) -> Result<(), String> {
    let mut levels: BTreeMap<&str, Level> = BTreeMap::new();
    for check in checks {
        if levels.insert(check.id, check.level).is_some() {
            return Err(format!("multiple checks registered for ID {}", check.id));
        }
        if check.level == Level::Privileged {
            return Err(format!("check {}: invalid level privileged", check.id));
        }
        if check.versions.is_empty() {
            return Err(format!("check {}: empty", check.id));
        }
        let mut previous: Option<u32> = None;
        for vc in &check.versions {
            let Some(m) = minor(vc.minimum_version) else {
                return Err(format!("check {}: version cannot be 'latest'", check.id));
            };
            if previous.is_some_and(|p| p >= m) {
                return Err(format!(
                    "check {}: versions must be strictly increasing",
                    check.id
                ));
            }
            previous = Some(m);
        }
    }
    for check in checks {
        for vc in &check.versions {
            if vc.overrides.is_empty() {
                continue;
            }
            if check.level != Level::Restricted {
                return Err(format!(
                    "check {}: only restricted checks may set overrides",
                    check.id
                ));
            }
            for id in vc.overrides {
                if let Some(level) = levels.get(id).filter(|l| **l != Level::Baseline) {
                    return Err(format!("check {}: overrides {level} check {id}", check.id));
                }
            }
        }
    }
    Ok(())
}

/// `"a", "b"`: each item between double quotes, unescaped (as upstream's `joinQuote`).
pub(crate) fn join_quote<S: AsRef<str>>(items: &[S]) -> String {
    if items.is_empty() {
        return String::new();
    }
    let items: Vec<&str> = items.iter().map(AsRef::as_ref).collect();
    format!("\"{}\"", items.join("\", \""))
}

/// Go's `%q` of a string.
pub(crate) fn quote(s: &str) -> String {
    // Rust's Debug escaping matches Go's %q for the printable text of names and values.
    format!("{s:?}")
}

/// `singular` for one, `plural` otherwise.
pub(crate) fn pluralize(
    singular: &'static str,
    plural: &'static str,
    count: usize,
) -> &'static str {
    if count == 1 { singular } else { plural }
}

/// A sorted set of strings (Go's `sets.String.List()`), as a vector.
pub(crate) fn sorted(set: BTreeSet<String>) -> Vec<String> {
    set.into_iter().collect()
}

/// Where a pod sets a profile field (AppArmor, seccomp) to a type `allowed` refuses: the
/// setters (`pod`, then the containers phrase) and the refused types.
pub(crate) fn refused_profiles(
    spec: &PodSpec,
    of_pod: impl Fn(&PodSecurityContext) -> Option<&TypedProfile>,
    of_container: impl Fn(&SecurityContext) -> Option<&TypedProfile>,
    allowed: impl Fn(&TypedProfile) -> bool,
) -> (Vec<String>, BTreeSet<String>) {
    let mut setters = Vec::new();
    let mut bad_values = BTreeSet::new();
    if let Some(p) = spec
        .security_context
        .as_ref()
        .and_then(&of_pod)
        .filter(|p| !allowed(p))
    {
        setters.push("pod".to_string());
        bad_values.insert(p.type_.clone());
    }
    let mut bad_containers = Vec::new();
    for c in spec.all_containers() {
        if let Some(p) = c
            .security_context
            .as_ref()
            .and_then(&of_container)
            .filter(|p| !allowed(p))
        {
            bad_containers.push(c.name.clone());
            bad_values.insert(p.type_.clone());
        }
    }
    if !bad_containers.is_empty() {
        setters.push(containers_phrase(&bad_containers));
    }
    (setters, bad_values)
}

/// `container "a"` / `containers "a", "b"`.
pub(crate) fn containers_phrase(names: &[String]) -> String {
    format!(
        "{} {}",
        pluralize("container", "containers", names.len()),
        join_quote(names)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pass(_: &PodMeta, _: &PodSpec) -> CheckResult {
        CheckResult::Allowed
    }

    fn fail_a(_: &PodMeta, _: &PodSpec) -> CheckResult {
        CheckResult::forbidden("a", "")
    }

    fn fail_b(_: &PodMeta, _: &PodSpec) -> CheckResult {
        CheckResult::forbidden("b", "detail b")
    }

    fn fail_r(_: &PodMeta, _: &PodSpec) -> CheckResult {
        CheckResult::forbidden("r", "")
    }

    fn vc(minor: u32, check: CheckFn, overrides: &'static [&'static str]) -> VersionedCheck {
        VersionedCheck {
            minimum_version: Version::V1(minor),
            check,
            overrides,
        }
    }

    fn lv(level: Level, version: Version) -> LevelVersion {
        LevelVersion { level, version }
    }

    fn reasons(e: &Evaluator, l: LevelVersion) -> String {
        e.evaluate(l, &PodMeta::default(), &PodSpec::default())
            .forbidden_reason()
    }

    #[test]
    fn versions_overrides_and_order_as_upstream_registry() {
        let checks = vec![
            Check {
                id: "b",
                level: Level::Baseline,
                versions: vec![vc(0, pass, &[]), vc(5, fail_b, &[])],
            },
            Check {
                id: "a",
                level: Level::Baseline,
                versions: vec![vc(2, fail_a, &[])],
            },
            Check {
                id: "r",
                level: Level::Restricted,
                versions: vec![vc(3, fail_r, &["a"]), vc(10, fail_r, &[])],
            },
        ];
        let e = Evaluator::new(&checks).expect("valid");
        assert_eq!(e.max_version(), Version::V1(10));
        assert_eq!(reasons(&e, lv(Level::Baseline, Version::V1(1))), "");
        assert_eq!(reasons(&e, lv(Level::Baseline, Version::V1(2))), "a");
        assert_eq!(reasons(&e, lv(Level::Baseline, Version::V1(5))), "a, b");
        assert_eq!(reasons(&e, lv(Level::Restricted, Version::V1(2))), "a");
        // r overrides a from v1.3 to v1.9, then no longer.
        assert_eq!(reasons(&e, lv(Level::Restricted, Version::V1(3))), "r");
        assert_eq!(reasons(&e, lv(Level::Restricted, Version::V1(9))), "b, r");
        assert_eq!(
            reasons(&e, lv(Level::Restricted, Version::V1(10))),
            "a, b, r"
        );
        assert_eq!(
            reasons(&e, lv(Level::Restricted, Version::V1(99))),
            "a, b, r"
        );
        assert_eq!(
            reasons(&e, lv(Level::Restricted, Version::Latest)),
            "a, b, r"
        );
        assert_eq!(reasons(&e, lv(Level::Privileged, Version::Latest)), "");
        let agg = e.evaluate(
            lv(Level::Baseline, Version::Latest),
            &PodMeta::default(),
            &PodSpec::default(),
        );
        assert_eq!(agg.forbidden_detail(), "a, b (detail b)");
    }

    #[test]
    fn inconsistent_checks_are_refused() {
        let dup = vec![
            Check {
                id: "a",
                level: Level::Baseline,
                versions: vec![vc(0, pass, &[])],
            },
            Check {
                id: "a",
                level: Level::Baseline,
                versions: vec![vc(0, pass, &[])],
            },
        ];
        assert_eq!(
            Evaluator::new(&dup).err().as_deref(),
            Some("multiple checks registered for ID a")
        );
        let unordered = vec![Check {
            id: "a",
            level: Level::Baseline,
            versions: vec![vc(2, pass, &[]), vc(2, pass, &[])],
        }];
        assert!(Evaluator::new(&unordered).is_err());
        let baseline_override = vec![Check {
            id: "a",
            level: Level::Baseline,
            versions: vec![vc(2, pass, &["x"])],
        }];
        assert!(Evaluator::new(&baseline_override).is_err());
    }

    #[test]
    fn default_checks_are_consistent_and_reach_v1_35() {
        let e = Evaluator::new(&default_checks()).expect("valid");
        assert_eq!(e.max_version(), Version::V1(35));
    }

    #[test]
    fn unknown_reason_is_named() {
        let agg = AggregateResult::new([CheckResult::forbidden("", "x")]);
        assert_eq!(agg.forbidden_detail(), "unknown forbidden reason (x)");
    }
}
