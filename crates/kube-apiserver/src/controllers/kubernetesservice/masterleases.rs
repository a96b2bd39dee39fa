//! The master leases (upstream `storageLeases` in `pkg/controlplane/reconcilers/lease.go`):
//! each apiserver keeps the key `<etcd-prefix>/masterleases/<ip>` with a time to live, an
//! Endpoints object naming its IP; the live keys are the live apiservers.

use std::sync::Arc;
use std::time::Duration;

use apiserver::storage::{
    ListOptions, Object, ResourceVersionMatch, Storage, StorageError, recursive_prefix,
};
use bytes::Bytes;
use serde_json::{Value, json};

/// The storage keys of the live apiservers' IPs.
#[derive(Clone)]
pub struct MasterLeases {
    storage: Arc<dyn Storage>,
    base_key: String,
    ttl: Duration,
}

impl MasterLeases {
    /// Leases under `<prefix>/masterleases/` living `ttl` unless renewed.
    pub fn new(storage: Arc<dyn Storage>, prefix: &str, ttl: Duration) -> Self {
        MasterLeases {
            storage,
            base_key: format!("{}/masterleases/", prefix.trim_end_matches('/')),
            ttl,
        }
    }

    fn key(&self, ip: &str) -> String {
        format!("{}{ip}", self.base_key)
    }

    /// The IPs with a live lease (upstream `ListLeases`: a read not older than any revision).
    pub async fn list(&self) -> Result<Vec<String>, StorageError> {
        let listed = self
            .storage
            .list(
                &recursive_prefix(&self.base_key),
                ListOptions {
                    resource_version: "0".into(),
                    resource_version_match: ResourceVersionMatch::NotOlderThan,
                    recursive: true,
                    ..Default::default()
                },
            )
            .await?;
        let ips: Vec<String> = listed
            .items
            .iter()
            .filter_map(|item| serde_json::from_slice::<Value>(&item.value).ok())
            .filter_map(|info| {
                info.pointer("/subsets/0/addresses/0/ip")
                    .and_then(Value::as_str)
                    .filter(|ip| !ip.is_empty())
                    .map(str::to_string)
            })
            .collect();
        tracing::trace!("Current master IPs listed in storage are {ips:?}");
        Ok(ips)
    }

    /// Adds or refreshes the lease of `ip` (upstream `UpdateLease`): the IP set again, the
    /// generation bumped so the write is never a no-op, the time to live reset.
    pub async fn update(&self, ip: &str) -> Result<(), StorageError> {
        let key = self.key(ip);
        let mut refresh = |current: Option<&Object>| -> Result<Bytes, StorageError> {
            let mut info = current
                .and_then(|c| serde_json::from_slice::<Value>(&c.value).ok())
                .filter(Value::is_object)
                .unwrap_or_else(|| json!({"kind": "Endpoints", "apiVersion": "v1"}));
            let generation = info
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            info["metadata"] = json!({"generation": generation + 1, "creationTimestamp": null});
            info["subsets"] = json!([{"addresses": [{"ip": ip}]}]);
            serde_json::to_vec(&info)
                .map(Bytes::from)
                .map_err(|e| StorageError::Internal(e.to_string()))
        };
        tracing::trace!(
            "Resetting TTL on master IP {ip:?} listed in storage to {:?}",
            self.ttl
        );
        self.storage
            .guaranteed_update_with_ttl(&key, self.ttl, &mut refresh)
            .await
            .map(drop)
    }

    /// Removes the lease of `ip` (upstream `RemoveLease`); not found when there is none.
    pub async fn remove(&self, ip: &str) -> Result<(), StorageError> {
        self.storage
            .delete(&self.key(ip), None, None)
            .await
            .map(drop)
    }
}
