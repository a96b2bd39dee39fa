//! Choosing and opening the backend from kube-apiserver's storage flags.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[cfg(not(feature = "etcd"))]
use super::StorageError;
use super::backends::EmbeddedStorage;
use super::compactor::{Compactor, DEFAULT_COMPACTION_INTERVAL};
use super::value::ResourceTransformers;
use super::{Result, Storage};

/// The name of the storage health check in `/readyz`, `/livez` and `/healthz` (upstream's).
pub const HEALTH_CHECK_NAME: &str = "etcd";

/// Storage flags.
#[derive(Clone, Debug)]
pub struct StorageOptions {
    /// `--data-dir`: the embedded backend's directory (used when no etcd servers are given).
    pub data_dir: PathBuf,
    /// `--etcd-servers`; non-empty selects the etcd backend.
    pub etcd_servers: Vec<String>,
    /// `--etcd-prefix` (default `/registry`).
    pub etcd_prefix: String,
    /// `--etcd-cafile`.
    pub etcd_cafile: Option<PathBuf>,
    /// `--etcd-certfile`.
    pub etcd_certfile: Option<PathBuf>,
    /// `--etcd-keyfile`.
    pub etcd_keyfile: Option<PathBuf>,
    /// `--etcd-compaction-interval` (default 5m; 0 disables).
    pub compaction_interval: Duration,
    /// The value transformers of `--encryption-provider-config` (identity without it); the
    /// storage [`Storage::for_resource`] makes uses them.
    pub transformers: Arc<ResourceTransformers>,
}

impl Default for StorageOptions {
    fn default() -> Self {
        StorageOptions {
            data_dir: PathBuf::from("data"),
            etcd_servers: Vec::new(),
            etcd_prefix: "/registry".into(),
            etcd_cafile: None,
            etcd_certfile: None,
            etcd_keyfile: None,
            compaction_interval: DEFAULT_COMPACTION_INTERVAL,
            transformers: ResourceTransformers::identity(),
        }
    }
}

/// An opened backend with its compactor running.
pub struct StorageBackend {
    /// The storage.
    pub storage: Arc<dyn Storage>,
    /// The key root callers build keys under (`<prefix>/<resource>/<namespace>/<name>`).
    pub prefix: String,
    _compactor: Compactor,
}

impl std::fmt::Debug for StorageBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StorageBackend")
            .field("prefix", &self.prefix)
            .finish()
    }
}

impl StorageBackend {
    /// Opens the backend the options select and starts periodic compaction (inside a tokio
    /// runtime).
    pub async fn open(opts: &StorageOptions) -> Result<Self> {
        let prefix = format!("/{}", opts.etcd_prefix.trim_matches('/'));
        let storage: Arc<dyn Storage> = if opts.etcd_servers.is_empty() {
            Arc::new(
                EmbeddedStorage::open(&opts.data_dir)?.with_transformers(opts.transformers.clone()),
            )
        } else {
            open_etcd(opts, &prefix).await?
        };
        let compactor = Compactor::start(storage.clone(), opts.compaction_interval);
        Ok(StorageBackend {
            storage,
            prefix,
            _compactor: compactor,
        })
    }
}

#[cfg(feature = "etcd")]
async fn open_etcd(opts: &StorageOptions, prefix: &str) -> Result<Arc<dyn Storage>> {
    use super::backends::{EtcdConfig, EtcdStorage};
    let config = EtcdConfig {
        endpoints: opts.etcd_servers.clone(),
        prefix: prefix.to_string(),
        ca_file: opts.etcd_cafile.clone(),
        cert_file: opts.etcd_certfile.clone(),
        key_file: opts.etcd_keyfile.clone(),
        ..Default::default()
    };
    Ok(Arc::new(
        EtcdStorage::connect(config)
            .await?
            .with_transformers(opts.transformers.clone()),
    ))
}

#[cfg(not(feature = "etcd"))]
async fn open_etcd(_opts: &StorageOptions, _prefix: &str) -> Result<Arc<dyn Storage>> {
    Err(StorageError::Internal(
        "--etcd-servers given, but this binary was built without the `etcd` feature".into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn default_is_embedded_under_data_dir() {
        let dir = tempfile::tempdir().unwrap();
        let backend = StorageBackend::open(&StorageOptions {
            data_dir: dir.path().join("d"),
            ..Default::default()
        })
        .await
        .unwrap();
        assert_eq!(backend.prefix, "/registry");
        assert!(backend.storage.health().await.is_ok());
        assert!(
            dir.path()
                .join("d")
                .join(super::super::backends::embedded::DB_FILE)
                .exists()
        );
        let err = StorageBackend::open(&StorageOptions {
            data_dir: dir.path().join("d"),
            ..Default::default()
        })
        .await
        .unwrap_err();
        assert!(err.to_string().contains("already in use"));
    }
}
