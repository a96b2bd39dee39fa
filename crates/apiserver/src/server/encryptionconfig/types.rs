//! `EncryptionConfiguration` (`apiserver.config.k8s.io/v1`), as the file holds it.

use serde::{Deserialize, Serialize};

/// The group/version of the configuration.
pub const API_VERSION: &str = "apiserver.config.k8s.io/v1";
/// Its kind.
pub const KIND: &str = "EncryptionConfiguration";
/// The legacy group/version and kind upstream still reads (`v1` / `EncryptionConfig`).
pub const LEGACY_API_VERSION: &str = "v1";
/// The legacy kind.
pub const LEGACY_KIND: &str = "EncryptionConfig";
/// The other kinds upstream's scheme knows in [`API_VERSION`]: they decode, and are then
/// refused as the wrong type.
pub const OTHER_KINDS: &[&str] = &[
    "AdmissionConfiguration",
    "AuthenticationConfiguration",
    "AuthorizationConfiguration",
    "TracingConfiguration",
];

/// The whole file.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EncryptionConfiguration {
    /// `kind`.
    #[serde(default)]
    pub kind: String,
    /// `apiVersion`.
    #[serde(default)]
    pub api_version: String,
    /// Resource lists with their providers, earlier lists first.
    #[serde(default, deserialize_with = "null_as_default")]
    pub resources: Vec<ResourceConfiguration>,
}

/// Resources and the providers that store them.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ResourceConfiguration {
    /// `secrets`, `deployments.apps`, `*.`, `*.apps`, `*.*`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub resources: Vec<String>,
    /// The first writes; all read.
    #[serde(default, deserialize_with = "null_as_default")]
    pub providers: Vec<ProviderConfiguration>,
}

/// Exactly one provider.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct ProviderConfiguration {
    /// AES-GCM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aesgcm: Option<AesConfiguration>,
    /// AES-CBC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aescbc: Option<AesConfiguration>,
    /// XSalsa20-Poly1305.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secretbox: Option<SecretboxConfiguration>,
    /// No encryption.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<IdentityConfiguration>,
    /// An external KMS plugin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kms: Option<KmsConfiguration>,
}

/// Keys of `aesgcm` / `aescbc`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct AesConfiguration {
    /// The first encrypts; all decrypt.
    #[serde(default, deserialize_with = "null_as_default")]
    pub keys: Vec<Key>,
}

/// Keys of `secretbox`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct SecretboxConfiguration {
    /// The first encrypts; all decrypt.
    #[serde(default, deserialize_with = "null_as_default")]
    pub keys: Vec<Key>,
}

/// A named key.
#[derive(Clone, Default, Deserialize, Serialize)]
pub struct Key {
    /// The name stored with each value (`k8s:enc:aescbc:v1:<name>:`).
    #[serde(default)]
    pub name: String,
    /// The key, base64.
    #[serde(default, serialize_with = "redacted")]
    pub secret: String,
}

impl std::fmt::Debug for Key {
    /// Never the secret (upstream's `Key.String`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Name: {}, Secret: [REDACTED]", self.name)
    }
}

fn redacted<S: serde::Serializer>(_secret: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str("REDACTED")
}

/// `identity: {}`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct IdentityConfiguration {}

/// A KMS plugin (decoded to be refused with a clear error: KMS is not supported here).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KmsConfiguration {
    /// `v1` or `v2`.
    #[serde(default)]
    pub api_version: String,
    /// The plugin's name.
    #[serde(default)]
    pub name: String,
    /// KMS v1 cache size.
    #[serde(default, rename = "cachesize", skip_serializing_if = "Option::is_none")]
    pub cache_size: Option<i32>,
    /// `unix:///path`.
    #[serde(default)]
    pub endpoint: String,
    /// Call timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
}

/// Go decodes `null` into a nil slice.
fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}
