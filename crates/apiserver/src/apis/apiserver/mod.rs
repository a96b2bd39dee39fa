//! The server's configuration-file APIs of group `apiserver.config.k8s.io` (upstream
//! `k8s.io/apiserver/pkg/apis/apiserver`): `AuthenticationConfiguration`
//! (`--authentication-config`) and `AuthorizationConfiguration` (`--authorization-config`),
//! decoded strictly from YAML or JSON, defaulted and validated with upstream's field paths.

pub mod authentication;
pub mod authorization;
mod field;

pub use field::{FieldError, FieldErrors};

/// The group of these configuration kinds.
pub const GROUP: &str = "apiserver.config.k8s.io";

/// Why a configuration file could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigFileError {
    /// The file could not be read.
    #[error("failed to read file path {path:?}: {reason}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        reason: String,
    },
    /// The file is empty.
    #[error("empty config file {0:?}")]
    Empty(String),
    /// The file does not decode (syntax, unknown fields, wrong kind or version).
    #[error("{0}")]
    Decode(String),
    /// The decoded configuration is invalid.
    #[error("{0}")]
    Invalid(FieldErrors),
}

/// Decodes `data` (YAML or JSON) as `kind` of one of `versions` of the group, refusing
/// unknown fields.
pub(crate) fn decode<T: serde::de::DeserializeOwned>(
    data: &str,
    kind: &str,
    versions: &[&str],
) -> Result<T, ConfigFileError> {
    let value: serde_json::Value = serde_saphyr::from_str(data)
        .map_err(|e| ConfigFileError::Decode(yaml_error_line(&e.to_string())))?;
    let api_version = value
        .get("apiVersion")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("");
    let got_kind = value
        .get("kind")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("");
    if api_version.is_empty() || got_kind.is_empty() {
        return Err(ConfigFileError::Decode(format!(
            "Object 'Kind' is missing in '{value}'"
        )));
    }
    let known_version = api_version
        .strip_prefix(GROUP)
        .and_then(|v| v.strip_prefix('/'))
        .is_some_and(|v| versions.contains(&v));
    if !known_version || got_kind != kind {
        return Err(ConfigFileError::Decode(format!(
            "no kind {got_kind:?} is registered for version {api_version:?} in scheme \"pkg/runtime/scheme.go:100\""
        )));
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        ConfigFileError::Decode(if path == "." || path.is_empty() {
            format!("strict decoding error: {inner}")
        } else {
            format!("strict decoding error: {path}: {inner}")
        })
    })
}

/// The first line of a YAML parser's error (the others draw the offending line), without the
/// parser's `error: ` prefix, as Go's YAML errors read: `yaml: line 1: …`.
pub fn yaml_error_line(text: &str) -> String {
    let first = text.lines().next().unwrap_or("");
    format!("yaml: {}", first.trim_start_matches("error: "))
}

/// Reads a configuration file.
pub(crate) fn read(path: &std::path::Path) -> Result<String, ConfigFileError> {
    let data = std::fs::read_to_string(path).map_err(|e| ConfigFileError::Read {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    if data.trim().is_empty() {
        return Err(ConfigFileError::Empty(path.display().to_string()));
    }
    Ok(data)
}
