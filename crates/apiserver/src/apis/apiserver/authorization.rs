//! `AuthorizationConfiguration` (`--authorization-config`): the ordered authorizers
//! (Webhook, RBAC, Node, AlwaysAllow, AlwaysDeny), webhook entries with their timeout,
//! review versions, failure policy, cache TTLs, connection and CEL match conditions,
//! defaulted and validated as upstream's `ValidateAuthorizationConfiguration`.

use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::field::{FieldError, FieldErrors};
use super::{ConfigFileError, decode, read};
use crate::util::cel::Expression;
use crate::util::duration;

/// The kind.
pub const KIND: &str = "AuthorizationConfiguration";

/// The authorizer types.
pub const TYPES: &[&str] = &["AlwaysAllow", "AlwaysDeny", "Node", "RBAC", "Webhook"];

/// The file's contents.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuthorizationConfiguration {
    /// `apiserver.config.k8s.io/v1` (or `v1beta1`, `v1alpha1`).
    #[serde(default)]
    pub api_version: String,
    /// `AuthorizationConfiguration`.
    #[serde(default)]
    pub kind: String,
    /// The authorizers, asked in order.
    #[serde(default)]
    pub authorizers: Vec<AuthorizerConfiguration>,
}

/// One authorizer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuthorizerConfiguration {
    /// `Webhook`, `RBAC`, `Node`, `AlwaysAllow` or `AlwaysDeny`.
    #[serde(default, rename = "type")]
    pub type_: String,
    /// A DNS-1123 subdomain naming it.
    #[serde(default)]
    pub name: String,
    /// The webhook (type Webhook only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<WebhookConfiguration>,
}

/// `webhook`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebhookConfiguration {
    /// How long allowed answers are cached (default 5m).
    #[serde(default, rename = "authorizedTTL")]
    pub authorized_ttl: Option<String>,
    /// Whether allowed answers are cached (default true).
    #[serde(default)]
    pub cache_authorized_requests: Option<bool>,
    /// How long other answers are cached (default 30s).
    #[serde(default, rename = "unauthorizedTTL")]
    pub unauthorized_ttl: Option<String>,
    /// Whether other answers are cached (default true).
    #[serde(default)]
    pub cache_unauthorized_requests: Option<bool>,
    /// The per-request timeout (required, at most 30s).
    #[serde(default)]
    pub timeout: Option<String>,
    /// `v1` or `v1beta1`.
    #[serde(default)]
    pub subject_access_review_version: String,
    /// `v1` (required with match conditions).
    #[serde(default)]
    pub match_condition_subject_access_review_version: String,
    /// `NoOpinion` or `Deny`.
    #[serde(default)]
    pub failure_policy: String,
    /// How to reach the webhook.
    #[serde(default)]
    pub connection_info: WebhookConnectionInfo,
    /// CEL conditions on `request`.
    #[serde(default)]
    pub match_conditions: Vec<WebhookMatchCondition>,
}

/// `connectionInfo`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebhookConnectionInfo {
    /// `KubeConfigFile` or `InClusterConfig`.
    #[serde(default, rename = "type")]
    pub type_: String,
    /// The kubeconfig (absolute path) for `KubeConfigFile`.
    #[serde(default)]
    pub kube_config_file: Option<String>,
}

/// One match condition.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebhookMatchCondition {
    /// A CEL expression on `request`.
    #[serde(default)]
    pub expression: String,
}

/// A webhook entry after defaulting and validation.
#[derive(Clone, Debug)]
pub struct CheckedWebhook {
    /// Allowed answers' cache TTL (zero: not cached).
    pub authorized_ttl: Duration,
    /// Other answers' cache TTL (zero: not cached).
    pub unauthorized_ttl: Duration,
    /// Per-request timeout.
    pub timeout: Duration,
    /// `v1` or `v1beta1`.
    pub version: String,
    /// Whether failures deny (else no opinion).
    pub deny_on_failure: bool,
    /// The kubeconfig, or `None` for the in-cluster configuration.
    pub kubeconfig: Option<String>,
    /// The compiled match conditions.
    pub match_conditions: Vec<Expression>,
}

const VERSIONS: &[&str] = &["v1", "v1beta1", "v1alpha1"];

impl AuthorizationConfiguration {
    /// Reads, decodes and validates the file at `path`.
    pub fn load(path: &Path) -> Result<Self, ConfigFileError> {
        let data = read(path)?;
        Self::parse(&data)
    }

    /// Decodes and validates `data`.
    pub fn parse(data: &str) -> Result<Self, ConfigFileError> {
        let config: AuthorizationConfiguration = decode(data, KIND, VERSIONS)?;
        let errors = config.validate();
        if !errors.is_empty() {
            return Err(ConfigFileError::Invalid(errors));
        }
        Ok(config)
    }

    /// Upstream's validation.
    pub fn validate(&self) -> FieldErrors {
        let mut errs = FieldErrors::default();
        if self.authorizers.is_empty() {
            errs.push(FieldError::required(
                "authorizers",
                "at least one authorization mode must be defined",
            ));
        }
        let mut types = HashSet::new();
        let mut names = HashSet::new();
        for (i, a) in self.authorizers.iter().enumerate() {
            let path = format!("authorizers[{i}]");
            let tpath = format!("{path}.type");
            if a.type_.is_empty() {
                errs.push(FieldError::required(&tpath, ""));
                continue;
            }
            if !TYPES.contains(&a.type_.as_str()) {
                errs.push(FieldError::not_supported(&tpath, &a.type_, TYPES));
                continue;
            }
            if !types.insert(a.type_.as_str()) && a.type_ != "Webhook" {
                errs.push(FieldError::duplicate(&tpath, &a.type_));
                continue;
            }
            let npath = format!("{path}.name");
            if a.name.is_empty() {
                errs.push(FieldError::required(&npath, ""));
            } else if names.contains(a.name.as_str()) {
                errs.push(FieldError::duplicate(&npath, &a.name));
            } else if !is_dns1123_subdomain(&a.name) {
                errs.push(FieldError::invalid(
                    &npath,
                    &a.name,
                    "authorizer name is invalid: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                ));
            }
            names.insert(a.name.as_str());
            match (&a.webhook, a.type_ == "Webhook") {
                (None, true) => errs.push(FieldError::required(
                    &format!("{path}.webhook"),
                    "required when type=Webhook",
                )),
                (Some(_), false) => errs.push(FieldError::invalid(
                    &format!("{path}.webhook"),
                    "non-null",
                    "may only be specified when type=Webhook",
                )),
                // Upstream reports the webhook's fields under the authorizer's path.
                (Some(w), true) => {
                    let (_, werrs) = w.check(&path);
                    errs.0.extend(werrs.0);
                }
                (None, false) => {}
            }
        }
        errs
    }
}

fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|label| {
            !label.is_empty()
                && label
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

fn ttl(value: &Option<String>, default: Duration, path: &str, errs: &mut FieldErrors) -> Duration {
    let Some(text) = value else {
        return default;
    };
    match duration::parse_signed(text) {
        Ok((false, d)) if !d.is_zero() => d,
        Ok((false, _)) => {
            errs.push(FieldError::required(path, ""));
            Duration::ZERO
        }
        Ok((true, d)) => {
            errs.push(FieldError::invalid(
                path,
                &format!("-{}", duration::format(d)),
                "must be > 0s",
            ));
            Duration::ZERO
        }
        Err(e) => {
            errs.push(FieldError::invalid(path, text, &e.to_string()));
            Duration::ZERO
        }
    }
}

impl WebhookConfiguration {
    /// Defaults and validates this webhook entry (at `path`).
    pub fn check(&self, path: &str) -> (CheckedWebhook, FieldErrors) {
        let mut errs = FieldErrors::default();
        let tpath = format!("{path}.timeout");
        let timeout = match &self.timeout {
            None => {
                errs.push(FieldError::required(&tpath, ""));
                Duration::ZERO
            }
            Some(text) => match duration::parse_signed(text) {
                Ok((false, d)) if d.is_zero() => {
                    errs.push(FieldError::required(&tpath, ""));
                    d
                }
                Ok((false, d)) if d <= Duration::from_secs(30) => d,
                Ok((negative, d)) => {
                    let shown =
                        format!("{}{}", if negative { "-" } else { "" }, duration::format(d));
                    errs.push(FieldError::invalid(
                        &tpath,
                        &shown,
                        "must be > 0s and <= 30s",
                    ));
                    Duration::ZERO
                }
                Err(e) => {
                    errs.push(FieldError::invalid(&tpath, text, &e.to_string()));
                    Duration::ZERO
                }
            },
        };
        let mut authorized_ttl = ttl(
            &self.authorized_ttl,
            crate::authz::webhook::DEFAULT_AUTHORIZED_TTL,
            &format!("{path}.authorizedTTL"),
            &mut errs,
        );
        let mut unauthorized_ttl = ttl(
            &self.unauthorized_ttl,
            crate::authz::webhook::DEFAULT_UNAUTHORIZED_TTL,
            &format!("{path}.unauthorizedTTL"),
            &mut errs,
        );
        if self.cache_authorized_requests == Some(false) {
            authorized_ttl = Duration::ZERO;
        }
        if self.cache_unauthorized_requests == Some(false) {
            unauthorized_ttl = Duration::ZERO;
        }
        let vpath = format!("{path}.subjectAccessReviewVersion");
        match self.subject_access_review_version.as_str() {
            "" => errs.push(FieldError::required(&vpath, "")),
            "v1" | "v1beta1" => {}
            other => errs.push(FieldError::not_supported(&vpath, other, &["v1", "v1beta1"])),
        }
        let mpath = format!("{path}.matchConditionSubjectAccessReviewVersion");
        match self.match_condition_subject_access_review_version.as_str() {
            "" if !self.match_conditions.is_empty() => errs.push(FieldError::required(
                &mpath,
                "required if match conditions are specified",
            )),
            "" | "v1" => {}
            other => errs.push(FieldError::not_supported(&mpath, other, &["v1"])),
        }
        let fpath = format!("{path}.failurePolicy");
        match self.failure_policy.as_str() {
            "" => errs.push(FieldError::required(&fpath, "")),
            "NoOpinion" | "Deny" => {}
            other => errs.push(FieldError::not_supported(
                &fpath,
                other,
                &["NoOpinion", "Deny"],
            )),
        }
        let cpath = format!("{path}.connectionInfo");
        let kpath = format!("{cpath}.kubeConfigFile");
        let kubeconfig = self.connection_info.kube_config_file.clone();
        match self.connection_info.type_.as_str() {
            "KubeConfigFile" => match kubeconfig.as_deref() {
                None | Some("") => errs.push(FieldError::required(&kpath, "")),
                Some(file) if !Path::new(file).is_absolute() => errs.push(FieldError::invalid(
                    &kpath,
                    file,
                    "must be an absolute path",
                )),
                Some(file) => match std::fs::metadata(file) {
                    Err(e) => errs.push(FieldError::invalid(
                        &kpath,
                        file,
                        &format!("error loading file: stat {file}: {}", go_io_text(&e)),
                    )),
                    Ok(m) if !m.is_file() => {
                        errs.push(FieldError::invalid(&kpath, file, "must be a regular file"))
                    }
                    Ok(_) => {}
                },
            },
            "InClusterConfig" => {
                if let Some(file) = &kubeconfig {
                    errs.push(FieldError::invalid(
                        &kpath,
                        file,
                        "can only be set when type=KubeConfigFile",
                    ));
                }
            }
            "" => errs.push(FieldError::required(&format!("{cpath}.type"), "")),
            other => errs.push(FieldError::not_supported(
                &format!("{cpath}.type"),
                other,
                &["InClusterConfig", "KubeConfigFile"],
            )),
        }
        let mut seen = HashSet::new();
        let mut match_conditions = Vec::new();
        for (i, c) in self.match_conditions.iter().enumerate() {
            let epath = format!("{path}.matchConditions[{i}].expression");
            if c.expression.trim().is_empty() {
                errs.push(FieldError::required(&epath, ""));
                continue;
            }
            if !seen.insert(c.expression.as_str()) {
                errs.push(FieldError::duplicate(&epath, &c.expression));
                continue;
            }
            match Expression::compile(&c.expression, &["request"]) {
                Ok(e) => match_conditions.push(e),
                Err(detail) => errs.push(FieldError::invalid(&epath, &c.expression, &detail)),
            }
        }
        (
            CheckedWebhook {
                authorized_ttl,
                unauthorized_ttl,
                timeout,
                version: self.subject_access_review_version.clone(),
                deny_on_failure: self.failure_policy == "Deny",
                kubeconfig: if self.connection_info.type_ == "KubeConfigFile" {
                    kubeconfig
                } else {
                    None
                },
                match_conditions,
            },
            errs,
        )
    }
}

/// Go's text for common I/O errors (`no such file or directory`).
fn go_io_text(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_webhook_chain_loads_with_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kc");
        std::fs::write(&kubeconfig, "x").unwrap();
        let text = format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n- type: Webhook\n  name: hook\n  webhook:\n    timeout: 3s\n    subjectAccessReviewVersion: v1\n    matchConditionSubjectAccessReviewVersion: v1\n    failurePolicy: Deny\n    connectionInfo:\n      type: KubeConfigFile\n      kubeConfigFile: {}\n    matchConditions:\n    - expression: has(request.resourceAttributes)\n- type: AlwaysAllow\n  name: allow\n",
            kubeconfig.display()
        );
        let config = AuthorizationConfiguration::parse(&text).unwrap();
        let (checked, errs) = config.authorizers[0]
            .webhook
            .as_ref()
            .unwrap()
            .check("authorizers[0]");
        assert!(errs.is_empty());
        assert_eq!(checked.authorized_ttl, Duration::from_secs(300));
        assert_eq!(checked.unauthorized_ttl, Duration::from_secs(30));
        assert_eq!(checked.timeout, Duration::from_secs(3));
        assert!(checked.deny_on_failure);
        assert_eq!(checked.match_conditions.len(), 1);
    }

    #[test]
    fn invalid_chains_report_upstream_errors() {
        let text = "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n- type: RBAC\n  name: rbac\n- type: RBAC\n  name: rbac2\n- type: AlwaysAllow\n  name: Bad_Name\n- type: Webhook\n  name: w\n  webhook:\n    timeout: 1m\n    subjectAccessReviewVersion: v2\n    failurePolicy: Maybe\n    connectionInfo:\n      type: KubeConfigFile\n      kubeConfigFile: relative\n";
        let err = AuthorizationConfiguration::parse(text)
            .unwrap_err()
            .to_string();
        for needle in [
            "authorizers[1].type: Duplicate value: \"RBAC\"",
            "authorizers[2].name: Invalid value: \"Bad_Name\": authorizer name is invalid",
            "authorizers[3].timeout: Invalid value: \"1m0s\": must be > 0s and <= 30s",
            "authorizers[3].subjectAccessReviewVersion: Unsupported value: \"v2\": supported values: \"v1\", \"v1beta1\"",
            "authorizers[3].failurePolicy: Unsupported value: \"Maybe\": supported values: \"NoOpinion\", \"Deny\"",
            "authorizers[3].connectionInfo.kubeConfigFile: Invalid value: \"relative\": must be an absolute path",
        ] {
            assert!(err.contains(needle), "{needle} not in {err}");
        }
        let empty = "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\n";
        assert_eq!(
            AuthorizationConfiguration::parse(empty)
                .unwrap_err()
                .to_string(),
            "authorizers: Required value: at least one authorization mode must be defined"
        );
    }
}
