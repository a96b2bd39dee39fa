//! Service accounts' tokens (upstream `pkg/serviceaccount`): keys, the JWS format, the claims
//! of bound and legacy tokens, issuer discovery, and the authenticator that accepts them.
//!
//! [`ServiceAccountConfig`] is what the `--service-account-*` and `--api-audiences` flags
//! describe once resolved: the signing key, the verification keys, the issuers and the API
//! audiences.

pub mod authenticator;
pub mod claims;
pub mod der;
pub mod jws;
pub mod keys;
pub mod metrics;
pub mod openid;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use keys::{KeyError, PublicKey, SigningKey};

/// The issuer used when `--service-account-issuer` is not given.
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// The generated signing key's file name in the certificate directory.
pub const GENERATED_KEY_FILE: &str = "sa.key";

/// The resolved service-account settings.
#[derive(Debug)]
pub struct ServiceAccountConfig {
    /// The issuers whose tokens are accepted; the first issues new ones.
    pub issuers: Vec<String>,
    /// The key new tokens are signed with.
    pub signing_key: Arc<SigningKey>,
    /// The keys tokens are verified with.
    pub public_keys: Vec<PublicKey>,
    /// The API audiences (`--api-audiences`, default the issuers).
    pub api_audiences: Vec<String>,
    /// `--service-account-max-token-expiration` (zero: no limit).
    pub max_expiration: Duration,
    /// `--service-account-extend-token-expiration`.
    pub extend_expiration: bool,
    /// `--service-account-lookup`.
    pub lookup: bool,
    /// `--service-account-jwks-uri`.
    pub jwks_uri: Option<String>,
}

/// Why the service-account settings could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A key file.
    #[error("failed to parse {flag} {path:?}: {source}")]
    Key {
        /// The flag naming the file.
        flag: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        source: KeyError,
    },
    /// The generated key could not be written.
    #[error("writing the service account signing key {path:?}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The flags the settings come from.
#[derive(Clone, Debug, Default)]
pub struct ServiceAccountFlags {
    /// `--service-account-issuer`.
    pub issuers: Vec<String>,
    /// `--service-account-key-file`.
    pub key_files: Vec<PathBuf>,
    /// `--service-account-signing-key-file`.
    pub signing_key_file: Option<PathBuf>,
    /// `--api-audiences`.
    pub api_audiences: Vec<String>,
    /// `--service-account-max-token-expiration`.
    pub max_expiration: Duration,
    /// `--service-account-extend-token-expiration`.
    pub extend_expiration: bool,
    /// `--service-account-lookup`.
    pub lookup: bool,
    /// `--service-account-jwks-uri`.
    pub jwks_uri: Option<String>,
}

/// The generated signing key in `cert_dir`, created (P-256, mode 0600, atomically) when
/// missing; an existing file is used as it is.
pub fn ensure_generated_key(cert_dir: &Path) -> Result<PathBuf, ConfigError> {
    let path = cert_dir.join(GENERATED_KEY_FILE);
    if path.is_file() {
        return Ok(path);
    }
    let write_err = |source| ConfigError::Write {
        path: path.clone(),
        source,
    };
    apiserver::util::files::create_private_dir(cert_dir).map_err(write_err)?;
    let pem = SigningKey::generate_p256_pem().map_err(|source| ConfigError::Key {
        flag: "--service-account-signing-key-file",
        path: path.clone(),
        source,
    })?;
    apiserver::util::files::write_atomically(&path, pem.as_bytes(), 0o600).map_err(write_err)?;
    Ok(path)
}

impl ServiceAccountConfig {
    /// Resolves the flags: the signing key is `--service-account-signing-key-file` or the
    /// key generated in `cert_dir`; the verification keys are those of
    /// `--service-account-key-file`, plus the signing key's when none is given or the key was
    /// generated; the issuer defaults to [`DEFAULT_ISSUER`] and the API audiences to the
    /// issuers.
    pub fn resolve(flags: &ServiceAccountFlags, cert_dir: &Path) -> Result<Self, ConfigError> {
        let signing_path = match &flags.signing_key_file {
            Some(path) => path.clone(),
            None => ensure_generated_key(cert_dir)?,
        };
        let signing_key =
            keys::signing_key_from_file(&signing_path).map_err(|source| ConfigError::Key {
                flag: "--service-account-signing-key-file",
                path: signing_path.clone(),
                source,
            })?;
        let mut public_keys = Vec::new();
        for path in &flags.key_files {
            let keys = keys::public_keys_from_file(path).map_err(|source| ConfigError::Key {
                flag: "--service-account-key-file",
                path: path.clone(),
                source,
            })?;
            public_keys.extend(keys);
        }
        // The generated key always verifies what it signs; a configured signing key's public
        // half must be among the key files, as upstream requires.
        let generated = flags.signing_key_file.is_none();
        if (public_keys.is_empty() || generated) && !public_keys.contains(signing_key.public_key())
        {
            public_keys.push(signing_key.public_key().clone());
        }
        let issuers = if flags.issuers.is_empty() {
            vec![DEFAULT_ISSUER.to_string()]
        } else {
            flags.issuers.clone()
        };
        let api_audiences = if flags.api_audiences.is_empty() {
            issuers.clone()
        } else {
            flags.api_audiences.clone()
        };
        Ok(ServiceAccountConfig {
            issuers,
            signing_key: Arc::new(signing_key),
            public_keys,
            api_audiences,
            max_expiration: flags.max_expiration,
            extend_expiration: flags.extend_expiration,
            lookup: flags.lookup,
            jwks_uri: flags.jwks_uri.clone(),
        })
    }

    /// The issuer of new tokens.
    pub fn issuer(&self) -> &str {
        self.issuers.first().map_or(DEFAULT_ISSUER, String::as_str)
    }

    /// What the TokenRequest subresource mints with.
    pub fn token_issuer(&self) -> TokenIssuer {
        TokenIssuer {
            issuer: self.issuer().to_string(),
            key: self.signing_key.clone(),
            api_audiences: self.api_audiences.clone(),
            max_expiration_seconds: i64::try_from(self.max_expiration.as_secs())
                .unwrap_or(i64::MAX),
            extend_expiration: self.extend_expiration,
        }
    }
}

/// Mints bound tokens (upstream `TokenGenerator` plus the TokenRequest REST's settings).
#[derive(Debug, Clone)]
pub struct TokenIssuer {
    /// The `iss` claim.
    pub issuer: String,
    /// The signing key.
    pub key: Arc<SigningKey>,
    /// The audiences of a request that names none.
    pub api_audiences: Vec<String>,
    /// The longest lifetime granted (0: no limit).
    pub max_expiration_seconds: i64,
    /// Whether admission-injected pod tokens get the one-year extension.
    pub extend_expiration: bool,
}

impl TokenIssuer {
    /// A signed token for `spec`, issued at `now` (Unix seconds) with ID `jti`.
    pub fn mint(&self, spec: &claims::TokenSpec, now: i64, jti: &str) -> Result<String, KeyError> {
        jws::sign(
            &self.key,
            &claims::bound_claims(spec, &self.issuer, now, jti),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_config_generates_a_private_key_once_and_defaults_issuer_and_audiences() {
        let dir = tempfile::tempdir().unwrap();
        let pki = dir.path().join("pki");
        let config = ServiceAccountConfig::resolve(&ServiceAccountFlags::default(), &pki).unwrap();
        let path = pki.join(GENERATED_KEY_FILE);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_eq!(config.issuers, vec![DEFAULT_ISSUER]);
        assert_eq!(config.api_audiences, vec![DEFAULT_ISSUER]);
        assert_eq!(
            config.public_keys,
            vec![config.signing_key.public_key().clone()]
        );
        let first = std::fs::read(&path).unwrap();
        let again = ServiceAccountConfig::resolve(&ServiceAccountFlags::default(), &pki).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), first);
        assert_eq!(again.public_keys, config.public_keys);
    }

    #[test]
    fn the_generated_key_verifies_besides_key_files() {
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().join("other.pem");
        std::fs::write(&other, keys::testkeys::p384_pem()).unwrap();
        let flags = ServiceAccountFlags {
            key_files: vec![other],
            ..Default::default()
        };
        let config = ServiceAccountConfig::resolve(&flags, dir.path()).unwrap();
        assert_eq!(config.public_keys.len(), 2);
        assert!(config.public_keys.contains(config.signing_key.public_key()));
    }

    #[test]
    fn explicit_files_issuers_and_audiences_are_used() {
        let dir = tempfile::tempdir().unwrap();
        let signing = dir.path().join("signing.pem");
        let other = dir.path().join("other.pem");
        std::fs::write(&signing, keys::testkeys::p256_pem()).unwrap();
        std::fs::write(&other, keys::testkeys::p384_pem()).unwrap();
        let flags = ServiceAccountFlags {
            issuers: vec!["https://a".into(), "https://b".into()],
            key_files: vec![signing.clone(), other],
            signing_key_file: Some(signing),
            ..Default::default()
        };
        let config = ServiceAccountConfig::resolve(&flags, dir.path()).unwrap();
        assert_eq!(config.issuer(), "https://a");
        assert_eq!(config.api_audiences, vec!["https://a", "https://b"]);
        assert_eq!(config.public_keys.len(), 2);
        assert!(!dir.path().join(GENERATED_KEY_FILE).exists());

        let bad = dir.path().join("bad.pem");
        std::fs::write(&bad, "not a key").unwrap();
        let err = ServiceAccountConfig::resolve(
            &ServiceAccountFlags {
                key_files: vec![bad],
                ..flags
            },
            dir.path(),
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("data does not contain any valid RSA or ECDSA public keys"),
            "{err}"
        );
    }
}
