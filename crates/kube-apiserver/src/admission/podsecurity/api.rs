//! Pod Security Standards levels, policy versions and the namespace labels that select them
//! (upstream `k8s.io/pod-security-admission/api`).

use std::collections::BTreeMap;
use std::fmt;

use apiserver::registry::field::FieldError;

/// The prefix of the namespace labels and of the audit annotations the plugin writes.
pub const LABEL_PREFIX: &str = "pod-security.kubernetes.io/";
/// The enforce level label.
pub const ENFORCE_LEVEL_LABEL: &str = "pod-security.kubernetes.io/enforce";
/// The enforce version label.
pub const ENFORCE_VERSION_LABEL: &str = "pod-security.kubernetes.io/enforce-version";
/// The audit level label.
pub const AUDIT_LEVEL_LABEL: &str = "pod-security.kubernetes.io/audit";
/// The audit version label.
pub const AUDIT_VERSION_LABEL: &str = "pod-security.kubernetes.io/audit-version";
/// The warn level label.
pub const WARN_LEVEL_LABEL: &str = "pod-security.kubernetes.io/warn";
/// The warn version label.
pub const WARN_VERSION_LABEL: &str = "pod-security.kubernetes.io/warn-version";

/// Audit annotation key (after the prefix) naming why a request was exempt.
pub const EXEMPTION_REASON_ANNOTATION: &str = "exempt";
/// Audit annotation key (after the prefix) with the audit level's violations.
pub const AUDIT_VIOLATIONS_ANNOTATION: &str = "audit-violations";
/// Audit annotation key (after the prefix) with the enforced level and version.
pub const ENFORCED_POLICY_ANNOTATION: &str = "enforce-policy";

/// A Pod Security Standards level, ordered from the least to the most restrictive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// No restrictions.
    Privileged,
    /// Known privilege escalations prevented.
    Baseline,
    /// Hardening best practices.
    Restricted,
}

impl Level {
    /// The level's label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }

    /// Parses a label value, with upstream's error text.
    pub fn parse(value: &str) -> Result<Level, String> {
        match value {
            "privileged" => Ok(Level::Privileged),
            "baseline" => Ok(Level::Baseline),
            "restricted" => Ok(Level::Restricted),
            _ => Err("must be one of privileged, baseline, restricted".to_string()),
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A policy version: `v1.<minor>` or `latest` (newer than any numbered version).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Version {
    /// `v1.<minor>`.
    V1(u32),
    /// `latest`.
    Latest,
}

impl Version {
    /// Parses `latest` or `v1.<minor>` (no leading zeros), with upstream's error text.
    pub fn parse(value: &str) -> Result<Version, String> {
        const ERR: &str = r#"must be "latest" or "v1.x""#;
        if value == "latest" {
            return Ok(Version::Latest);
        }
        let minor = value.strip_prefix("v1.").ok_or_else(|| ERR.to_string())?;
        let digits_only = !minor.is_empty() && minor.bytes().all(|b| b.is_ascii_digit());
        if !digits_only || (minor.len() > 1 && minor.starts_with('0')) {
            return Err(ERR.to_string());
        }
        minor
            .parse::<u32>()
            .map(Version::V1)
            .map_err(|_| ERR.to_string())
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Version::V1(minor) => write!(f, "v1.{minor}"),
            Version::Latest => f.write_str("latest"),
        }
    }
}

/// A level at a version, written `level:version` (`restricted:latest`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LevelVersion {
    /// The level.
    pub level: Level,
    /// The version of the level's checks.
    pub version: Version,
}

impl LevelVersion {
    /// `privileged:latest`, the default of every mode.
    pub const PRIVILEGED: LevelVersion = LevelVersion {
        level: Level::Privileged,
        version: Version::Latest,
    };

    /// Whether the two evaluate the same way (any two privileged levels do).
    pub fn equivalent(&self, other: &LevelVersion) -> bool {
        (self.level == Level::Privileged && other.level == Level::Privileged) || self == other
    }
}

impl fmt::Display for LevelVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.level, self.version)
    }
}

/// The level and version of each mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Violations are rejected.
    pub enforce: LevelVersion,
    /// Violations are recorded in the audit event.
    pub audit: LevelVersion,
    /// Violations are returned as warnings.
    pub warn: LevelVersion,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            enforce: LevelVersion::PRIVILEGED,
            audit: LevelVersion::PRIVILEGED,
            warn: LevelVersion::PRIVILEGED,
        }
    }
}

impl Policy {
    /// Whether every mode is privileged (nothing to evaluate).
    pub fn fully_privileged(&self) -> bool {
        self.enforce.level == Level::Privileged
            && self.audit.level == Level::Privileged
            && self.warn.level == Level::Privileged
    }

    /// Whether every mode is equivalent to `other`'s.
    pub fn equivalent(&self, other: &Policy) -> bool {
        self.enforce.equivalent(&other.enforce)
            && self.audit.equivalent(&other.audit)
            && self.warn.equivalent(&other.warn)
    }
}

fn label_error(label: &str, value: &str, detail: String) -> FieldError {
    FieldError::invalid(&format!("metadata.labels[{label}]"), value, &detail)
}

/// The policy a namespace's labels select on top of `defaults`, and the errors of labels with
/// bad values. As upstream: a bad enforce level is restricted (fail closed), bad audit and warn
/// levels are privileged (fail open), bad versions are `latest`; an enforce level stricter than
/// the warn level also warns at it, unless a warn level is set.
pub fn policy_to_evaluate(
    labels: &BTreeMap<String, String>,
    defaults: Policy,
) -> (Policy, Vec<FieldError>) {
    let mut p = defaults;
    let mut errs = Vec::new();
    if labels.is_empty() {
        return (p, errs);
    }
    let mut has_enforce_level = false;
    if let Some(value) = labels.get(ENFORCE_LEVEL_LABEL) {
        match Level::parse(value) {
            Ok(level) => {
                p.enforce.level = level;
                has_enforce_level = true;
            }
            Err(e) => {
                p.enforce.level = Level::Restricted;
                errs.push(label_error(ENFORCE_LEVEL_LABEL, value, e));
            }
        }
    }
    if let Some(value) = labels.get(ENFORCE_VERSION_LABEL) {
        p.enforce.version = parse_version(ENFORCE_VERSION_LABEL, value, &mut errs);
    }
    if let Some(value) = labels.get(AUDIT_LEVEL_LABEL) {
        p.audit.level = parse_open_level(AUDIT_LEVEL_LABEL, value, &mut errs);
    }
    if let Some(value) = labels.get(AUDIT_VERSION_LABEL) {
        p.audit.version = parse_version(AUDIT_VERSION_LABEL, value, &mut errs);
    }
    let has_warn_level = labels.contains_key(WARN_LEVEL_LABEL);
    if let Some(value) = labels.get(WARN_LEVEL_LABEL) {
        p.warn.level = parse_open_level(WARN_LEVEL_LABEL, value, &mut errs);
    }
    let has_warn_version = labels.contains_key(WARN_VERSION_LABEL);
    if let Some(value) = labels.get(WARN_VERSION_LABEL) {
        p.warn.version = parse_version(WARN_VERSION_LABEL, value, &mut errs);
    }
    if !has_warn_level && has_enforce_level && p.enforce.level > p.warn.level {
        p.warn.level = p.enforce.level;
        if !has_warn_version {
            p.warn.version = p.enforce.version;
        }
    }
    (p, errs)
}

fn parse_open_level(label: &str, value: &str, errs: &mut Vec<FieldError>) -> Level {
    Level::parse(value).unwrap_or_else(|e| {
        errs.push(label_error(label, value, e));
        Level::Privileged
    })
}

fn parse_version(label: &str, value: &str, errs: &mut Vec<FieldError>) -> Version {
    Version::parse(value).unwrap_or_else(|e| {
        errs.push(label_error(label, value, e));
        Version::Latest
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn lv(level: Level, version: Version) -> LevelVersion {
        LevelVersion { level, version }
    }

    #[test]
    fn versions_parse_as_upstream() {
        assert_eq!(Version::parse("latest"), Ok(Version::Latest));
        assert_eq!(Version::parse("v1.0"), Ok(Version::V1(0)));
        assert_eq!(Version::parse("v1.35"), Ok(Version::V1(35)));
        for bad in [
            "", "v1", "v1.", "v1.01", "v2.0", "1.20", "v1.x", "v1.-1", "Latest",
        ] {
            assert_eq!(
                Version::parse(bad),
                Err(r#"must be "latest" or "v1.x""#.to_string()),
                "{bad}"
            );
        }
        assert!(Version::V1(9) < Version::V1(10));
        assert!(Version::V1(1000) < Version::Latest);
        assert_eq!(Version::V1(3).to_string(), "v1.3");
    }

    #[test]
    fn levels_parse_and_order() {
        assert_eq!(Level::parse("baseline"), Ok(Level::Baseline));
        assert_eq!(
            Level::parse("Baseline"),
            Err("must be one of privileged, baseline, restricted".into())
        );
        assert!(Level::Privileged < Level::Baseline && Level::Baseline < Level::Restricted);
    }

    #[test]
    fn no_labels_keep_the_defaults() {
        let defaults = Policy {
            enforce: lv(Level::Baseline, Version::V1(22)),
            ..Policy::default()
        };
        assert_eq!(
            policy_to_evaluate(&labels(&[]), defaults),
            (defaults, vec![])
        );
    }

    #[test]
    fn enforce_level_raises_warn_with_its_version() {
        let (p, errs) = policy_to_evaluate(
            &labels(&[
                (ENFORCE_LEVEL_LABEL, "restricted"),
                (ENFORCE_VERSION_LABEL, "v1.24"),
            ]),
            Policy::default(),
        );
        assert!(errs.is_empty());
        assert_eq!(p.enforce, lv(Level::Restricted, Version::V1(24)));
        assert_eq!(p.warn, lv(Level::Restricted, Version::V1(24)));
        assert_eq!(p.audit, LevelVersion::PRIVILEGED);
    }

    #[test]
    fn explicit_warn_level_or_version_is_kept() {
        let (p, _) = policy_to_evaluate(
            &labels(&[
                (ENFORCE_LEVEL_LABEL, "restricted"),
                (WARN_LEVEL_LABEL, "baseline"),
            ]),
            Policy::default(),
        );
        assert_eq!(p.warn, lv(Level::Baseline, Version::Latest));
        let (p, _) = policy_to_evaluate(
            &labels(&[
                (ENFORCE_LEVEL_LABEL, "restricted"),
                (ENFORCE_VERSION_LABEL, "v1.24"),
                (WARN_VERSION_LABEL, "v1.23"),
            ]),
            Policy::default(),
        );
        assert_eq!(p.warn, lv(Level::Restricted, Version::V1(23)));
    }

    #[test]
    fn bad_values_fail_closed_for_enforce_and_open_for_audit_and_warn() {
        let (p, errs) = policy_to_evaluate(
            &labels(&[
                (ENFORCE_LEVEL_LABEL, "foo"),
                (AUDIT_LEVEL_LABEL, "bar"),
                (WARN_LEVEL_LABEL, "baz"),
                (WARN_VERSION_LABEL, "v2"),
            ]),
            Policy::default(),
        );
        assert_eq!(p.enforce.level, Level::Restricted);
        assert_eq!(p.audit.level, Level::Privileged);
        assert_eq!(p.warn, lv(Level::Privileged, Version::Latest));
        let rendered: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert_eq!(
            rendered,
            [
                r#"metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "foo": must be one of privileged, baseline, restricted"#,
                r#"metadata.labels[pod-security.kubernetes.io/audit]: Invalid value: "bar": must be one of privileged, baseline, restricted"#,
                r#"metadata.labels[pod-security.kubernetes.io/warn]: Invalid value: "baz": must be one of privileged, baseline, restricted"#,
                r#"metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: "v2": must be "latest" or "v1.x""#,
            ]
        );
    }

    #[test]
    fn privileged_policies_are_equivalent_whatever_the_version() {
        let a = lv(Level::Privileged, Version::V1(1));
        assert!(a.equivalent(&LevelVersion::PRIVILEGED));
        assert!(
            !lv(Level::Baseline, Version::V1(1)).equivalent(&lv(Level::Baseline, Version::V1(2)))
        );
        assert_eq!(
            lv(Level::Restricted, Version::Latest).to_string(),
            "restricted:latest"
        );
    }
}
