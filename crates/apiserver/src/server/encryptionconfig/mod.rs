//! `--encryption-provider-config`: loading an `EncryptionConfiguration` file into the value
//! transformers of each resource (upstream's `pkg/server/options/encryptionconfig`), and the
//! controller that reloads it when `--encryption-provider-config-automatic-reload` is set.
//!
//! Errors carry upstream's texts (`error while parsing file: …`, `error while building
//! transformers: …`), on one line. Unlike upstream, a file whose `kind` or `apiVersion` is
//! missing is not echoed back in the error: it holds the keys.

pub mod controller;
pub mod metrics;
pub mod types;
pub mod validation;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use sha2::{Digest, Sha256};

use self::types::{
    API_VERSION, AesConfiguration, EncryptionConfiguration, KIND, LEGACY_API_VERSION, LEGACY_KIND,
    OTHER_KINDS, ProviderConfiguration, SecretboxConfiguration,
};
use self::validation::{aggregate, decode_secret, validate};
use crate::storage::value::aes::{CBC_PREFIX, Cbc, GCM_PREFIX, Gcm};
use crate::storage::value::identity::Identity;
use crate::storage::value::secretbox::{self, Secretbox};
use crate::storage::value::{
    GroupResource, PrefixTransformer, PrefixTransformers, TransformError, Transformer,
    TransformerSet,
};

/// A loaded configuration.
#[derive(Debug)]
pub struct LoadedEncryptionConfig {
    /// The transformers of the configured resources.
    pub transformers: TransformerSet,
    /// `sha256:<hex>` of the file's bytes (what the reload controller compares, so no copy of
    /// the keys is kept outside the transformers).
    pub content_hash: String,
}

/// Why a configuration could not be loaded (one line, upstream's text).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EncryptionConfigError(pub String);

/// Reads, decodes, validates and builds the configuration at `path` (upstream's
/// `LoadEncryptionConfig`).
pub fn load_encryption_config(
    path: &Path,
) -> Result<LoadedEncryptionConfig, EncryptionConfigError> {
    let (data, content_hash) = read_and_hash(path).map_err(|e| {
        EncryptionConfigError(format!(
            "error while parsing file: error while loading file: {e}"
        ))
    })?;
    let config = decode(path, &data)
        .map_err(|e| EncryptionConfigError(format!("error while parsing file: {e}")))?;
    let errs = validate(&config);
    if !errs.is_empty() {
        return Err(EncryptionConfigError(format!(
            "error while parsing file: {}",
            aggregate(&errs)
        )));
    }
    let transformers = build(&config)
        .map_err(|e| EncryptionConfigError(format!("error while building transformers: {e}")))?;
    Ok(LoadedEncryptionConfig {
        transformers,
        content_hash,
    })
}

/// `sha256:<hex>` of the file at `path` (upstream's `GetEncryptionConfigHash`).
pub fn config_hash(path: &Path) -> Result<String, EncryptionConfigError> {
    read_and_hash(path)
        .map(|(_, hash)| hash)
        .map_err(EncryptionConfigError)
}

/// Go's text for a failed open or read.
fn go_io_error(op: &str, path: &Path, err: &std::io::Error) -> String {
    use std::io::ErrorKind;
    let what = match err.kind() {
        ErrorKind::NotFound => "no such file or directory".to_string(),
        ErrorKind::PermissionDenied => "permission denied".to_string(),
        ErrorKind::IsADirectory => "is a directory".to_string(),
        _ => err.to_string(),
    };
    let op = if err.kind() == ErrorKind::IsADirectory {
        "read"
    } else {
        op
    };
    format!("{op} {}: {what}", path.display())
}

fn read_and_hash(path: &Path) -> Result<(Vec<u8>, String), String> {
    let quoted = format!("{:?}", path.display().to_string());
    let data = std::fs::read(path).map_err(|e| {
        format!(
            "error reading encryption provider configuration file {quoted}: {}",
            go_io_error("open", path, &e)
        )
    })?;
    if data.is_empty() {
        return Err(format!(
            "encryption provider configuration file {quoted} is empty"
        ));
    }
    let hash = format!("sha256:{:x}", Sha256::digest(&data));
    Ok((data, hash))
}

/// Decodes the file as upstream's strict universal decoder does: YAML or JSON, the type
/// from `apiVersion` and `kind`, fields the type does not have refused.
fn decode(path: &Path, data: &[u8]) -> Result<EncryptionConfiguration, String> {
    let quoted = format!("{:?}", path.display().to_string());
    let decoding =
        |e: String| format!("error decoding encryption provider configuration file {quoted}: {e}");
    let text = std::str::from_utf8(data).map_err(|e| decoding(format!("invalid UTF-8: {e}")))?;
    let value: serde_json::Value = if text.trim_start().starts_with('{') {
        serde_json::from_str(text).map_err(|e| decoding(e.to_string()))?
    } else {
        serde_saphyr::from_str(text).map_err(|e| {
            // One line: the parser's message without its source excerpt.
            let text = e.to_string();
            let first = text
                .lines()
                .next()
                .unwrap_or_default()
                .trim_start_matches("error: ");
            decoding(format!("error converting YAML to JSON: yaml: {first}"))
        })?
    };
    let field = |name: &str| {
        value
            .get(name)
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let (kind, api_version) = (field("kind"), field("apiVersion"));
    if kind.is_empty() {
        return Err(decoding("Object 'Kind' is missing in the file".to_string()));
    }
    if api_version.is_empty() {
        return Err(decoding(
            "Object 'apiVersion' is missing in the file".to_string(),
        ));
    }
    let known = (api_version == API_VERSION
        && (kind == KIND || OTHER_KINDS.contains(&kind.as_str())))
        || (api_version == LEGACY_API_VERSION && kind == LEGACY_KIND);
    if !known {
        return Err(decoding(format!(
            "no kind {kind:?} is registered for version {api_version:?} in scheme \"k8s.io/apiserver/pkg/server/options/encryptionconfig/config.go:142\""
        )));
    }
    if kind != KIND && kind != LEGACY_KIND {
        return Err(format!(
            "got unexpected config type: {api_version}, Kind={kind}"
        ));
    }
    let mut unknown = Vec::new();
    let config: EncryptionConfiguration = serde_ignored::deserialize(&value, |path| {
        unknown.push(render_path(&path));
    })
    .map_err(|e| decoding(e.to_string()))?;
    if !unknown.is_empty() {
        let fields: Vec<String> = unknown
            .iter()
            .map(|f| format!("unknown field {f:?}"))
            .collect();
        return Err(decoding(format!(
            "strict decoding error: {}",
            fields.join(", ")
        )));
    }
    Ok(config)
}

/// `resources[0].providers[3].kms.pandas` from serde_ignored's path.
fn render_path(path: &serde_ignored::Path<'_>) -> String {
    use serde_ignored::Path;
    match path {
        Path::Root => String::new(),
        Path::Seq { parent, index } => format!("{}[{index}]", render_path(parent)),
        Path::Map { parent, key } => {
            let p = render_path(parent);
            if p.is_empty() {
                key.clone()
            } else {
                format!("{p}.{key}")
            }
        }
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => render_path(parent),
    }
}

/// The transformers of a valid configuration (upstream's
/// `getTransformerOverridesAndKMSPluginProbes`): each resource gets the providers of every
/// entry naming it, in order; a resource masked by an earlier `*.group` or `*.*` is refused.
fn build(config: &EncryptionConfiguration) -> Result<TransformerSet, String> {
    let mut by_resource: HashMap<GroupResource, Vec<PrefixTransformer>> = HashMap::new();
    for entry in &config.resources {
        let providers = entry
            .providers
            .iter()
            .map(provider_transformer)
            .collect::<Result<Vec<_>, String>>()?;
        for name in &entry.resources {
            let gr = GroupResource::parse(name);
            for mask in [GroupResource::new(&gr.group, "*"), GroupResource::any()] {
                if by_resource.contains_key(&mask) {
                    return Err(format!(
                        "resource {:?} is masked by earlier rule {:?}",
                        gr.yaml_string(),
                        mask.yaml_string()
                    ));
                }
            }
            by_resource
                .entry(gr)
                .or_default()
                .extend(providers.iter().cloned());
        }
    }
    Ok(TransformerSet::new(
        by_resource
            .into_iter()
            .map(|(gr, list)| {
                let t: Arc<dyn Transformer> =
                    Arc::new(PrefixTransformers::new("no matching prefix found", list));
                (gr, t)
            })
            .collect(),
    ))
}

fn provider_transformer(p: &ProviderConfiguration) -> Result<PrefixTransformer, String> {
    if let Some(aes) = &p.aesgcm {
        return aes_transformer(aes, GCM_PREFIX, |key| {
            Gcm::new(key).map(|t| Arc::new(t) as _)
        });
    }
    if let Some(aes) = &p.aescbc {
        return aes_transformer(aes, CBC_PREFIX, |key| {
            Cbc::new(key).map(|t| Arc::new(t) as _)
        });
    }
    if let Some(sb) = &p.secretbox {
        return secretbox_transformer(sb);
    }
    if let Some(kms) = &p.kms {
        return Err(format!(
            "could not configure KMS plugin {:?}: KMS providers are not supported by this server",
            kms.name
        ));
    }
    if p.identity.is_some() {
        return Ok(PrefixTransformer {
            prefix: Bytes::new(),
            transformer: Arc::new(Identity),
        });
    }
    Err("provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity".into())
}

type NewCipher = fn(&[u8]) -> Result<Arc<dyn Transformer>, TransformError>;

fn aes_transformer(
    config: &AesConfiguration,
    prefix: &str,
    new: NewCipher,
) -> Result<PrefixTransformer, String> {
    if config.keys.is_empty() {
        return Err("aes provider has no valid keys".into());
    }
    let mut keys = Vec::new();
    for key in &config.keys {
        if key.name.is_empty() {
            return Err("key with invalid name provided".into());
        }
        if key.secret.is_empty() {
            return Err(format!("key {} has no provided secret", key.name));
        }
        let secret = decode_secret(&key.secret)
            .map_err(|e| format!("could not obtain secret for named key {}: {e}", key.name))?;
        let transformer = new(&secret).map_err(|e| {
            format!(
                "error while creating cipher for named key {}: {e}",
                key.name
            )
        })?;
        keys.push(PrefixTransformer {
            prefix: Bytes::from(format!("{}:", key.name)),
            transformer,
        });
    }
    Ok(PrefixTransformer {
        prefix: Bytes::from(prefix.to_string()),
        transformer: Arc::new(PrefixTransformers::new(
            "no matching key was found for the provided AES transformer",
            keys,
        )),
    })
}

fn secretbox_transformer(config: &SecretboxConfiguration) -> Result<PrefixTransformer, String> {
    if config.keys.is_empty() {
        return Err("secretbox provider has no valid keys".into());
    }
    let mut keys = Vec::new();
    for key in &config.keys {
        if key.name.is_empty() {
            return Err("key with invalid name provided".into());
        }
        if key.secret.is_empty() {
            return Err(format!("key {} has no provided secret", key.name));
        }
        let secret = decode_secret(&key.secret)
            .map_err(|e| format!("could not obtain secret for named key {}: {e}", key.name))?;
        let secret: [u8; secretbox::KEY_SIZE] = secret.as_slice().try_into().map_err(|_| {
            format!(
                "expected key size 32 for secretbox provider, got {}",
                secret.len()
            )
        })?;
        keys.push(PrefixTransformer {
            prefix: Bytes::from(format!("{}:", key.name)),
            transformer: Arc::new(Secretbox::new(&secret)),
        });
    }
    Ok(PrefixTransformer {
        prefix: Bytes::from_static(secretbox::PREFIX.as_bytes()),
        transformer: Arc::new(PrefixTransformers::new(
            "no matching key was found for the provided Secretbox transformer",
            keys,
        )),
    })
}

#[cfg(test)]
mod tests;
