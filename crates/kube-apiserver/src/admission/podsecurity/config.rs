//! The plugin's configuration: `PodSecurityConfiguration` (`pod-security.admission.config.k8s.io`
//! v1, v1beta1 or v1alpha1, identical), from the admission configuration file. Decoded strictly
//! (unknown fields are errors, as upstream's strict codec), defaulted and validated as upstream.

use std::collections::{BTreeSet, HashSet};

use apiserver::registry::field::FieldError;
use apiserver::registry::names::{dns1123_label, dns1123_subdomain};
use serde::Deserialize;
use serde_json::Value;

use super::api::{Level, LevelVersion, Policy, Version};

const GROUP: &str = "pod-security.admission.config.k8s.io";
const VERSIONS: &[&str] = &["v1", "v1beta1", "v1alpha1"];
const KIND: &str = "PodSecurityConfiguration";

/// Why the configuration was refused (the text follows the plugin name in the start-up error).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// Not a PodSecurityConfiguration of a known version, or not decodable.
    #[error("{0}")]
    Decode(String),
    /// Decoded, but with invalid values.
    #[error("{0}")]
    Invalid(String),
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    #[serde(rename = "apiVersion", default)]
    _api_version: Option<String>,
    #[serde(rename = "kind", default)]
    _kind: Option<String>,
    #[serde(default)]
    defaults: Defaults,
    #[serde(default)]
    exemptions: Exemptions,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Defaults {
    #[serde(default)]
    enforce: String,
    #[serde(rename = "enforce-version", default)]
    enforce_version: String,
    #[serde(default)]
    audit: String,
    #[serde(rename = "audit-version", default)]
    audit_version: String,
    #[serde(default)]
    warn: String,
    #[serde(rename = "warn-version", default)]
    warn_version: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Exemptions {
    #[serde(default)]
    usernames: Vec<String>,
    #[serde(default)]
    namespaces: Vec<String>,
    #[serde(default)]
    runtime_classes: Vec<String>,
}

/// The validated configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodSecurityConfig {
    /// The policy of namespaces without labels (labels override it mode by mode).
    pub defaults: Policy,
    /// Users whose requests are never evaluated.
    pub exempt_usernames: HashSet<String>,
    /// Namespaces whose pods are never evaluated.
    pub exempt_namespaces: HashSet<String>,
    /// Runtime classes whose pods are never evaluated.
    pub exempt_runtime_classes: HashSet<String>,
}

impl PodSecurityConfig {
    /// The configuration from the admission configuration's JSON, or the defaults (privileged
    /// everywhere, no exemptions) without one.
    pub fn load(config: Option<&Value>) -> Result<Self, ConfigError> {
        let Some(value) = config else {
            return Ok(PodSecurityConfig::default());
        };
        let api_version = value
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
        if kind.is_empty() {
            return Err(ConfigError::Decode(format!(
                "Object 'Kind' is missing in '{value}'"
            )));
        }
        let version = api_version
            .strip_prefix(GROUP)
            .and_then(|v| v.strip_prefix('/'))
            .filter(|v| VERSIONS.contains(v));
        if version.is_none() || kind != KIND {
            return Err(ConfigError::Decode(format!(
                "no kind {kind:?} is registered for version {api_version:?} in scheme \"k8s.io/pod-security-admission/admission/api/scheme/scheme.go:28\""
            )));
        }
        let doc = Document::deserialize(value)
            .map_err(|e| ConfigError::Decode(format!("strict decoding error: {e}")))?;
        validate(doc)
    }

    /// Whether pods in `namespace` are exempt.
    pub fn exempt_namespace(&self, namespace: &str) -> bool {
        !namespace.is_empty() && self.exempt_namespaces.contains(namespace)
    }

    /// Whether requests of `user` are exempt.
    pub fn exempt_user(&self, user: &str) -> bool {
        !user.is_empty() && self.exempt_usernames.contains(user)
    }

    /// Whether pods of `runtime_class` are exempt.
    pub fn exempt_runtime_class(&self, runtime_class: Option<&str>) -> bool {
        runtime_class.is_some_and(|rc| !rc.is_empty() && self.exempt_runtime_classes.contains(rc))
    }
}

fn or_default<'a>(value: &'a str, default: &'a str) -> &'a str {
    if value.is_empty() { default } else { value }
}

fn validate(doc: Document) -> Result<PodSecurityConfig, ConfigError> {
    let d = &doc.defaults;
    let mut errs = Vec::new();
    let level = |field: &str, value: &str| {
        let value = or_default(value, "privileged");
        Level::parse(value).map_err(|e| FieldError::invalid(field, value, &e))
    };
    let enforce = level("defaults.enforce", &d.enforce);
    let warn = level("defaults.warn", &d.warn);
    let audit = level("defaults.audit", &d.audit);
    let version = |field: &str, value: &str| {
        let value = or_default(value, "latest");
        Version::parse(value).map_err(|e| FieldError::invalid(field, value, &e))
    };
    let enforce_version = version("defaults.enforce-version", &d.enforce_version);
    let warn_version = version("defaults.warn-version", &d.warn_version);
    let audit_version = version("defaults.audit-version", &d.audit_version);
    // Upstream's order: enforce, enforce-version, warn, warn-version, audit, audit-version.
    let enforce = LevelVersion {
        level: take(enforce, Level::Privileged, &mut errs),
        version: take(enforce_version, Version::Latest, &mut errs),
    };
    let warn = LevelVersion {
        level: take(warn, Level::Privileged, &mut errs),
        version: take(warn_version, Version::Latest, &mut errs),
    };
    let audit = LevelVersion {
        level: take(audit, Level::Privileged, &mut errs),
        version: take(audit_version, Version::Latest, &mut errs),
    };
    let e = &doc.exemptions;
    let exempt_namespaces = unique(
        "exemptions.namespaces",
        &e.namespaces,
        dns1123_label,
        &mut errs,
    );
    let exempt_runtime_classes = unique(
        "exemptions.runtimeClasses",
        &e.runtime_classes,
        dns1123_subdomain,
        &mut errs,
    );
    let exempt_usernames = unique(
        "exemptions.usernames",
        &e.usernames,
        |u| {
            if u.is_empty() {
                vec!["username must not be empty".to_string()]
            } else {
                Vec::new()
            }
        },
        &mut errs,
    );
    if !errs.is_empty() {
        let rendered: Vec<String> = errs.iter().map(ToString::to_string).collect();
        return Err(ConfigError::Invalid(if rendered.len() == 1 {
            rendered[0].clone()
        } else {
            format!("[{}]", rendered.join(", "))
        }));
    }
    Ok(PodSecurityConfig {
        defaults: Policy {
            enforce,
            audit,
            warn,
        },
        exempt_usernames,
        exempt_namespaces,
        exempt_runtime_classes,
    })
}

/// The value, or `fallback` with the error recorded.
fn take<T>(r: Result<T, FieldError>, fallback: T, errs: &mut Vec<FieldError>) -> T {
    r.unwrap_or_else(|e| {
        errs.push(e);
        fallback
    })
}

/// The valid, distinct entries of a list; invalid and repeated ones become errors at their index.
fn unique(
    path: &str,
    items: &[String],
    check: impl Fn(&str) -> Vec<String>,
    errs: &mut Vec<FieldError>,
) -> HashSet<String> {
    let mut seen = BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        let field = format!("{path}[{i}]");
        let problems = check(item);
        if !problems.is_empty() {
            errs.push(FieldError::invalid(
                &field,
                item.as_str(),
                &problems.join(", "),
            ));
        } else if !seen.insert(item.clone()) {
            errs.push(FieldError::duplicate(&field, item.as_str()));
        }
    }
    seen.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cfg(body: Value) -> Value {
        let mut v = json!({"apiVersion": "pod-security.admission.config.k8s.io/v1", "kind": "PodSecurityConfiguration"});
        if let (Some(o), Some(b)) = (v.as_object_mut(), body.as_object()) {
            o.extend(b.clone());
        }
        v
    }

    #[test]
    fn no_configuration_is_privileged_everywhere() {
        let c = PodSecurityConfig::load(None).expect("default");
        assert!(c.defaults.fully_privileged());
        assert_eq!(c.defaults.enforce.version, Version::Latest);
        assert!(!c.exempt_namespace("kube-system"));
    }

    #[test]
    fn defaults_and_exemptions_are_read() {
        let c = PodSecurityConfig::load(Some(&cfg(json!({
            "defaults": {"enforce": "baseline", "enforce-version": "v1.30", "warn": "restricted"},
            "exemptions": {"usernames": ["admin"], "namespaces": ["kube-system"], "runtimeClasses": ["kata"]}
        }))))
        .expect("valid");
        assert_eq!(
            c.defaults.enforce,
            LevelVersion {
                level: Level::Baseline,
                version: Version::V1(30)
            }
        );
        assert_eq!(c.defaults.warn.level, Level::Restricted);
        assert_eq!(c.defaults.audit, LevelVersion::PRIVILEGED);
        assert!(c.exempt_user("admin") && !c.exempt_user(""));
        assert!(c.exempt_namespace("kube-system"));
        assert!(c.exempt_runtime_class(Some("kata")) && !c.exempt_runtime_class(None));
    }

    #[test]
    fn every_version_of_the_group_is_accepted() {
        for v in ["v1", "v1beta1", "v1alpha1"] {
            let doc = json!({"apiVersion": format!("{GROUP}/{v}"), "kind": KIND});
            assert!(PodSecurityConfig::load(Some(&doc)).is_ok(), "{v}");
        }
    }

    #[test]
    fn bad_documents_are_refused_with_upstream_texts() {
        let err = PodSecurityConfig::load(Some(&cfg(json!({
            "defaults": {"enforce": "strict", "audit-version": "1.2"},
            "exemptions": {"namespaces": ["Bad_NS", "ok", "ok"], "usernames": [""]}
        }))))
        .expect_err("invalid");
        assert_eq!(
            err.to_string(),
            concat!(
                r#"[defaults.enforce: Invalid value: "strict": must be one of privileged, baseline, restricted, "#,
                r#"defaults.audit-version: Invalid value: "1.2": must be "latest" or "v1.x", "#,
                r#"exemptions.namespaces[0]: Invalid value: "Bad_NS": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?'), "#,
                r#"exemptions.namespaces[2]: Duplicate value: "ok", "#,
                r#"exemptions.usernames[0]: Invalid value: "": username must not be empty]"#
            )
        );
        let err = PodSecurityConfig::load(Some(&cfg(
            json!({"defaults": {"enforce": "baseline", "bogus": 1}}),
        )))
        .expect_err("unknown field");
        assert!(
            err.to_string()
                .starts_with("strict decoding error: unknown field `bogus`"),
            "{err}"
        );
        let err = PodSecurityConfig::load(Some(&json!({"apiVersion": "v1", "kind": "ConfigMap"})))
            .expect_err("wrong kind");
        assert!(
            err.to_string()
                .starts_with(r#"no kind "ConfigMap" is registered for version "v1""#),
            "{err}"
        );
    }
}
