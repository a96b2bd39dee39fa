//! Choosing and opening the backends from kube-apiserver's storage flags: the embedded store
//! without `--etcd-servers`, etcd with it (and `--storage-backend=etcd3`), per-resource etcd
//! servers (`--etcd-servers-overrides`), and the watch-cache choices (`--watch-cache`,
//! `--watch-cache-sizes`), all behind one [`ResourceRouter`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::StorageError;
use super::backends::{EmbeddedStorage, EtcdConfig, EtcdStorage};
use super::compactor::{Compactor, DEFAULT_COMPACTION_INTERVAL};
use super::router::{GroupResource, ResourceRouter, WatchCachePolicy, default_watch_cache_sizes};
use super::value::ResourceTransformers;
use super::{Result, Storage};

/// The name of the storage health check in `/readyz`, `/livez` and `/healthz` (upstream's).
pub const HEALTH_CHECK_NAME: &str = "etcd";

/// How long start-up waits for etcd to answer before giving up: upstream dials etcd with
/// gRPC's `WithBlock` and this `dialTimeout`, so kube-apiserver does not serve until etcd
/// answers and exits with `context deadline exceeded` when it never does.
pub const ETCD_DIAL_TIMEOUT: Duration = Duration::from_secs(20);

/// The only `--storage-backend` upstream accepts (and its default).
pub const STORAGE_TYPE_ETCD3: &str = "etcd3";

/// Upstream's default `--etcd-healthcheck-timeout` and `--etcd-readycheck-timeout`.
pub const DEFAULT_CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// One `--etcd-servers-overrides` entry: `group/resource#servers` (servers `;`-separated).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EtcdServersOverride {
    /// The API group (`""` for the legacy core group).
    pub group: String,
    /// The resource, or `*` for every resource of the group.
    pub resource: String,
    /// The etcd servers of the resource.
    pub servers: Vec<String>,
}

const OVERRIDES_INVALID: &str = "--etcd-servers-overrides invalid, must be of format: group/resource#servers, where servers are URLs, semicolon separated";

/// Parses `--etcd-servers-overrides` (upstream's format and error).
pub fn parse_etcd_servers_overrides(values: &[String]) -> Result<Vec<EtcdServersOverride>, String> {
    values
        .iter()
        .map(|value| {
            let tokens: Vec<&str> = value.split('#').collect();
            let [resource, servers] = tokens.as_slice() else {
                return Err(OVERRIDES_INVALID.to_string());
            };
            let parts: Vec<&str> = resource.split('/').collect();
            let [group, resource] = parts.as_slice() else {
                return Err(OVERRIDES_INVALID.to_string());
            };
            let servers: Vec<String> = servers.split(';').map(str::to_string).collect();
            if servers.iter().any(String::is_empty) {
                return Err(OVERRIDES_INVALID.to_string());
            }
            Ok(EtcdServersOverride {
                group: group.to_string(),
                resource: resource.to_string(),
                servers,
            })
        })
        .collect()
}

/// Parses `--watch-cache-sizes` (`resource[.group]#size`, upstream's errors) and merges it
/// over kube-apiserver's defaults (no cache for events). Sizes other than 0 only keep the
/// cache on: upstream logs that it drops them, as caches size themselves.
pub fn parse_watch_cache_sizes(values: &[String]) -> Result<BTreeMap<GroupResource, u64>, String> {
    let mut sizes = default_watch_cache_sizes();
    for value in values {
        let tokens: Vec<&str> = value.split('#').collect();
        let [resource, size] = tokens.as_slice() else {
            return Err(format!("invalid value of watch cache size: {value}"));
        };
        let size: i64 = size
            .parse()
            .map_err(|_| format!("invalid size of watch cache size: {value}"))?;
        let size = u64::try_from(size)
            .map_err(|_| format!("watch cache size cannot be negative: {value}"))?;
        // schema.ParseGroupResource: the group is everything after the first dot.
        let key = match resource.split_once('.') {
            Some((resource, group)) => (group.to_string(), resource.to_string()),
            None => (String::new(), resource.to_string()),
        };
        sizes.insert(key, size);
    }
    Ok(sizes)
}

/// Storage flags.
#[derive(Clone, Debug)]
pub struct StorageOptions {
    /// `--data-dir`: the embedded backend's directory (used when no etcd servers are given).
    pub data_dir: PathBuf,
    /// `--etcd-servers`; non-empty selects the etcd backend.
    pub etcd_servers: Vec<String>,
    /// `--etcd-servers-overrides`: resources kept in other etcd clusters.
    pub etcd_servers_overrides: Vec<EtcdServersOverride>,
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
    /// `--etcd-healthcheck-timeout` (default 2s): the `etcd` check's deadline.
    pub healthcheck_timeout: Duration,
    /// `--etcd-readycheck-timeout` (default 2s): the `etcd-readiness` check's deadline.
    pub readycheck_timeout: Duration,
    /// `--watch-cache` and `--watch-cache-sizes`.
    pub watch_cache: WatchCachePolicy,
    /// The value transformers of `--encryption-provider-config` (identity without it); the
    /// storage [`Storage::for_resource`] makes uses them.
    pub transformers: Arc<ResourceTransformers>,
}

impl Default for StorageOptions {
    fn default() -> Self {
        StorageOptions {
            data_dir: PathBuf::from("data"),
            etcd_servers: Vec::new(),
            etcd_servers_overrides: Vec::new(),
            etcd_prefix: "/registry".into(),
            etcd_cafile: None,
            etcd_certfile: None,
            etcd_keyfile: None,
            compaction_interval: DEFAULT_COMPACTION_INTERVAL,
            healthcheck_timeout: DEFAULT_CHECK_TIMEOUT,
            readycheck_timeout: DEFAULT_CHECK_TIMEOUT,
            watch_cache: WatchCachePolicy::default(),
            transformers: ResourceTransformers::identity(),
        }
    }
}

/// The opened backends with their compactors running.
pub struct StorageBackend {
    /// The storage: a [`ResourceRouter`] over the default backend and the overrides.
    pub storage: Arc<dyn Storage>,
    /// The key root callers build keys under (`<prefix>/<resource>/<namespace>/<name>`).
    pub prefix: String,
    /// The default backend.
    pub default: Arc<dyn Storage>,
    /// One backend per distinct set of override servers, in flag order (upstream numbers
    /// their health checks `etcd-override-<i>` in this order).
    pub overrides: Vec<Arc<dyn Storage>>,
    /// `--etcd-healthcheck-timeout`.
    pub healthcheck_timeout: Duration,
    /// `--etcd-readycheck-timeout`.
    pub readycheck_timeout: Duration,
    _compactors: Vec<Compactor>,
}

impl std::fmt::Debug for StorageBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StorageBackend")
            .field("prefix", &self.prefix)
            .field("overrides", &self.overrides.len())
            .finish()
    }
}

impl StorageBackend {
    /// Opens the backends the options select and starts periodic compaction of each
    /// (inside a tokio runtime).
    pub async fn open(opts: &StorageOptions) -> Result<Self> {
        let prefix = format!("/{}", opts.etcd_prefix.trim_matches('/'));
        let default: Arc<dyn Storage> = if opts.etcd_servers.is_empty() {
            Arc::new(
                EmbeddedStorage::open(&opts.data_dir)?.with_transformers(opts.transformers.clone()),
            )
        } else {
            open_etcd(opts, &opts.etcd_servers, &prefix).await?
        };
        let mut router = ResourceRouter::new(default.clone(), opts.watch_cache.clone());
        // Overrides naming the same servers (in any order) share one client, as upstream's
        // health checks count them once.
        let mut by_servers: Vec<(Vec<String>, Arc<dyn Storage>)> = Vec::new();
        for o in &opts.etcd_servers_overrides {
            let mut sorted = o.servers.clone();
            sorted.sort();
            let storage = match by_servers.iter().find(|(s, _)| *s == sorted) {
                Some((_, storage)) => storage.clone(),
                None => {
                    let storage = open_etcd(opts, &o.servers, &prefix).await?;
                    by_servers.push((sorted, storage.clone()));
                    storage
                }
            };
            router = router.with_override(&o.group, &o.resource, storage);
        }
        let overrides: Vec<Arc<dyn Storage>> = by_servers.into_iter().map(|(_, s)| s).collect();
        let compactors = std::iter::once(&default)
            .chain(&overrides)
            .map(|s| Compactor::start(s.clone(), opts.compaction_interval))
            .collect();
        Ok(StorageBackend {
            storage: Arc::new(router),
            prefix,
            default,
            overrides,
            healthcheck_timeout: opts.healthcheck_timeout,
            readycheck_timeout: opts.readycheck_timeout,
            _compactors: compactors,
        })
    }
}

async fn open_etcd(
    opts: &StorageOptions,
    servers: &[String],
    prefix: &str,
) -> Result<Arc<dyn Storage>> {
    let config = EtcdConfig {
        endpoints: servers.to_vec(),
        prefix: prefix.to_string(),
        ca_file: opts.etcd_cafile.clone(),
        cert_file: opts.etcd_certfile.clone(),
        key_file: opts.etcd_keyfile.clone(),
        health_timeout: opts.healthcheck_timeout.max(opts.readycheck_timeout),
        ..Default::default()
    };
    let storage: Arc<dyn Storage> = Arc::new(
        EtcdStorage::connect(config)
            .await?
            .with_transformers(opts.transformers.clone()),
    );
    wait_until_answering(storage.as_ref(), servers, ETCD_DIAL_TIMEOUT).await?;
    Ok(storage)
}

/// Waits until `storage` answers its health probe, retrying for up to `timeout` (upstream's
/// blocking dial); logs once when it does not answer at first.
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

    #[tokio::test]
    async fn start_up_waits_for_etcd_and_gives_up_after_the_dial_timeout() {
        use crate::storage::testing::etcd_server::EtcdServer;
        let mut etcd = EtcdServer::start().await;
        let opts = StorageOptions {
            etcd_servers: vec![etcd.url()],
            ..Default::default()
        };
        let storage = open_etcd(&opts, &opts.etcd_servers, "/registry")
            .await
            .unwrap();
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

    #[test]
    fn etcd_servers_overrides_parse_as_upstream() {
        let parsed = parse_etcd_servers_overrides(&[
            "/events#http://127.0.0.1:2479".into(),
            "apps/deployments#https://a:2379;https://b:2379".into(),
        ])
        .unwrap();
        assert_eq!(
            parsed,
            vec![
                EtcdServersOverride {
                    group: String::new(),
                    resource: "events".into(),
                    servers: vec!["http://127.0.0.1:2479".into()],
                },
                EtcdServersOverride {
                    group: "apps".into(),
                    resource: "deployments".into(),
                    servers: vec!["https://a:2379".into(), "https://b:2379".into()],
                },
            ]
        );
        for bad in [
            "events#http://x",
            "/events",
            "/events#a;;b",
            "a/b/c#x",
            "/events#x#y",
        ] {
            assert_eq!(
                parse_etcd_servers_overrides(&[bad.into()]).unwrap_err(),
                OVERRIDES_INVALID,
                "{bad}"
            );
        }
    }

    #[test]
    fn watch_cache_sizes_parse_as_upstream_over_the_event_defaults() {
        let sizes =
            parse_watch_cache_sizes(&["pods#0".into(), "deployments.apps#100".into()]).unwrap();
        assert_eq!(sizes[&(String::new(), "pods".to_string())], 0);
        assert_eq!(sizes[&("apps".to_string(), "deployments".to_string())], 100);
        assert_eq!(sizes[&(String::new(), "events".to_string())], 0);
        let sizes = parse_watch_cache_sizes(&["events#10".into()]).unwrap();
        assert_eq!(sizes[&(String::new(), "events".to_string())], 10);
        assert_eq!(
            parse_watch_cache_sizes(&["pods".into()]).unwrap_err(),
            "invalid value of watch cache size: pods"
        );
        assert_eq!(
            parse_watch_cache_sizes(&["pods#x".into()]).unwrap_err(),
            "invalid size of watch cache size: pods#x"
        );
        assert_eq!(
            parse_watch_cache_sizes(&["pods#-1".into()]).unwrap_err(),
            "watch cache size cannot be negative: pods#-1"
        );
    }
}
