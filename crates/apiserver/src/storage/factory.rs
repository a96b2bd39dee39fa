//! Choosing and opening the backend from kube-apiserver's storage flags.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::StorageError;
use super::backends::EmbeddedStorage;
use super::compactor::{Compactor, DEFAULT_COMPACTION_INTERVAL};
use super::value::ResourceTransformers;
use super::{Result, Storage};

/// The name of the storage health check in `/readyz`, `/livez` and `/healthz` (upstream's).
pub const HEALTH_CHECK_NAME: &str = "etcd";

/// How long start-up waits for etcd to answer before giving up: upstream dials etcd with
/// gRPC's `WithBlock` and this `dialTimeout`, so kube-apiserver does not serve until etcd
/// answers and exits with `context deadline exceeded` when it never does.
pub const ETCD_DIAL_TIMEOUT: Duration = Duration::from_secs(20);

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
    let storage: Arc<dyn Storage> = Arc::new(
        EtcdStorage::connect(config)
            .await?
            .with_transformers(opts.transformers.clone()),
    );
    wait_until_answering(storage.as_ref(), &opts.etcd_servers, ETCD_DIAL_TIMEOUT).await?;
    Ok(storage)
}

/// Waits until `storage` answers its health probe, retrying for up to `timeout` (upstream's
/// blocking dial); logs once when it does not answer at first.
#[cfg(feature = "etcd")]
async fn wait_until_answering(
    storage: &dyn Storage,
    endpoints: &[String],
    timeout: Duration,
) -> Result<()> {
    let start = std::time::Instant::now();
    let mut logged = false;
    loop {
        let remaining = timeout.saturating_sub(start.elapsed());
        if let Ok(answer) = tokio::time::timeout(remaining, storage.health()).await {
            match answer {
                Ok(()) => return Ok(()),
                Err(e) if !logged => {
                    tracing::warn!(
                        "waiting for etcd at {} (up to {timeout:?}): {e}",
                        endpoints.join(",")
                    );
                    logged = true;
                }
                Err(_) => {}
            }
        }
        let remaining = timeout.saturating_sub(start.elapsed());
        if remaining.is_zero() {
            return Err(StorageError::Internal(format!(
                "etcd at {} did not answer within {timeout:?}: context deadline exceeded",
                endpoints.join(",")
            )));
        }
        tokio::time::sleep(remaining.min(Duration::from_millis(250))).await;
    }
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

    #[cfg(feature = "etcd")]
    #[tokio::test]
    async fn start_up_waits_for_etcd_and_gives_up_after_the_dial_timeout() {
        use crate::storage::testing::etcd_server::EtcdServer;
        let mut etcd = EtcdServer::start().await;
        let opts = StorageOptions {
            etcd_servers: vec![etcd.url()],
            ..Default::default()
        };
        let storage = open_etcd(&opts, "/registry").await.unwrap();
        etcd.stop();
        let started = std::time::Instant::now();
        let err = wait_until_answering(
            storage.as_ref(),
            &opts.etcd_servers,
            Duration::from_millis(600),
        )
        .await
        .unwrap_err();
        assert!(started.elapsed() >= Duration::from_millis(600));
        assert!(
            err.to_string().ends_with("context deadline exceeded"),
            "{err}"
        );
        etcd.start_again().await;
        wait_until_answering(storage.as_ref(), &opts.etcd_servers, ETCD_DIAL_TIMEOUT)
            .await
            .unwrap();
    }
}
