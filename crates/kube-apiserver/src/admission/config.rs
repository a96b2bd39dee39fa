//! `--admission-control-config-file`: an `AdmissionConfiguration`
//! (`apiserver.config.k8s.io/v1`, also `v1alpha1` and the older `apiserver.k8s.io/v1alpha1`)
//! naming each plugin's configuration by `path` (relative to the file) or inline as
//! `configuration`, in YAML or JSON.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The configurations the file names, by plugin.
#[derive(Clone, Debug, Default)]
pub struct PluginConfigs {
    /// The directory of the configuration file.
    pub dir: Option<PathBuf>,
    entries: BTreeMap<String, Entry>,
}

#[derive(Clone, Debug)]
enum Entry {
    Path(PathBuf),
    Inline(Value),
}

const KINDS: [&str; 3] = [
    "apiserver.config.k8s.io/v1",
    "apiserver.config.k8s.io/v1alpha1",
    "apiserver.k8s.io/v1alpha1",
];

fn parse_document(path: &Path, bytes: &[u8]) -> Result<Value, String> {
    apiserver::endpoints::handlers::decode::decode_yaml(bytes).map_err(|e| {
        format!(
            "failed to read plugin config from {}: {}",
            path.display(),
            e.0.message
        )
    })
}

/// Reads the AdmissionConfiguration at `path`.
pub fn read(path: &Path) -> Result<PluginConfigs, String> {
    let bytes = std::fs::read(path).map_err(|e| {
        format!(
            "failed to read admission control configuration from {:?} [{e}]",
            path.display().to_string()
        )
    })?;
    let doc = parse_document(path, &bytes)?;
    let api_version = doc.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind != "AdmissionConfiguration" || !KINDS.contains(&api_version) {
        return Err(format!(
            "failed to read admission control configuration from {:?} [no kind \"AdmissionConfiguration\" is registered for version {api_version:?}]",
            path.display().to_string()
        ));
    }
    let dir = path.parent().map(Path::to_path_buf);
    let mut entries = BTreeMap::new();
    let plugins = doc
        .get("plugins")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for plugin in plugins {
        let Some(name) = plugin.get("name").and_then(Value::as_str) else {
            continue;
        };
        let entry = match (
            plugin.get("path").and_then(Value::as_str),
            plugin.get("configuration"),
        ) {
            (Some(p), _) if !p.is_empty() => {
                let p = PathBuf::from(p);
                let p = if p.is_relative() {
                    dir.as_deref().unwrap_or(Path::new(".")).join(p)
                } else {
                    p
                };
                Entry::Path(p)
            }
            (_, Some(config)) if !config.is_null() => Entry::Inline(config.clone()),
            _ => continue,
        };
        entries.insert(name.to_string(), entry);
    }
    Ok(PluginConfigs { dir, entries })
}

impl PluginConfigs {
    /// The configuration of `plugin` as JSON, read from its file now.
    pub fn plugin(&self, plugin: &str) -> Result<Option<Value>, String> {
        match self.entries.get(plugin) {
            None => Ok(None),
            Some(Entry::Inline(v)) => Ok(Some(v.clone())),
            Some(Entry::Path(p)) => {
                let bytes = std::fs::read(p).map_err(|e| {
                    format!(
                        "couldn't open admission plugin configuration {}: {e}",
                        p.display()
                    )
                })?;
                parse_document(p, &bytes).map(Some)
            }
        }
    }
}
