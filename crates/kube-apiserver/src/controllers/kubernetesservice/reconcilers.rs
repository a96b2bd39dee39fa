//! The endpoint reconcilers of `--endpoint-reconciler-type` (upstream
//! `pkg/controlplane/reconcilers`): `lease` (the default: every apiserver keeps a master lease
//! and the endpoints list the live ones), `master-count` (deprecated: the endpoints hold at
//! most `--apiserver-count` addresses, each server adding itself) and `none`.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};

use apiserver::status::ApiError;
use apiserver::storage::StorageError;
use tokio::sync::Mutex;

use super::adapter::{EndpointPort, EndpointsAdapter};
use super::masterleases::MasterLeases;

/// The names `--endpoint-reconciler-type` accepts, in upstream's order (`AllTypes`).
pub const TYPES: [&str; 3] = ["master-count", "lease", "none"];

/// Why reconciling failed.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// The master leases could not be read or written.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The Endpoints or EndpointSlice could not be read or written.
    #[error(transparent)]
    Api(#[from] ApiError),
    /// No lease at all, although this server just wrote its own.
    #[error(
        "no API server IP addresses were listed in storage, refusing to erase all endpoints for the kubernetes Service"
    )]
    NoLeases,
}

impl ReconcileError {
    /// Whether the lease to remove did not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, ReconcileError::Storage(e) if e.is_not_found())
    }
}

/// How the endpoints are kept.
enum Kind {
    Lease(MasterLeases),
    MasterCount(usize),
    None,
}

/// An endpoint reconciler (upstream `EndpointReconciler`).
pub struct EndpointReconciler {
    kind: Kind,
    adapter: EndpointsAdapter,
    stopped: AtomicBool,
    /// Reconciling and removing never overlap.
    lock: Mutex<()>,
}

impl EndpointReconciler {
    /// The `lease` reconciler.
    pub fn lease(adapter: EndpointsAdapter, leases: MasterLeases) -> Self {
        Self::with(Kind::Lease(leases), adapter)
    }

    /// The `master-count` reconciler for `count` apiservers.
    pub fn master_count(adapter: EndpointsAdapter, count: usize) -> Self {
        Self::with(Kind::MasterCount(count), adapter)
    }

    /// The `none` reconciler.
    pub fn none(adapter: EndpointsAdapter) -> Self {
        Self::with(Kind::None, adapter)
    }

    fn with(kind: Kind, adapter: EndpointsAdapter) -> Self {
        EndpointReconciler {
            kind,
            adapter,
            stopped: AtomicBool::new(false),
            lock: Mutex::new(()),
        }
    }

    /// Makes the endpoints include `ip` (upstream `ReconcileEndpoints`); nothing once
    /// [`stop_reconciling`](Self::stop_reconciling) was called.
    pub async fn reconcile(
        &self,
        ip: &str,
        port: &EndpointPort,
        reconcile_ports: bool,
    ) -> Result<(), ReconcileError> {
        if self.stopped.load(Ordering::SeqCst) {
            return Ok(());
        }
        let _reconciling = self.lock.lock().await;
        match &self.kind {
            Kind::None => Ok(()),
            Kind::Lease(leases) => {
                // Refresh our own key first, whatever happens below, so that at least some
                // apiservers add our address.
                leases.update(ip).await?;
                self.sync_leases(leases, port, reconcile_ports).await
            }
            Kind::MasterCount(count) => {
                let current = self.adapter.get().await?;
                if current.contains(ip) && current.len() <= *count {
                    return Ok(self.adapter.sync(&current, port, reconcile_ports).await?);
                }
                let wanted = with_own_address(current, ip, *count);
                Ok(self.adapter.sync(&wanted, port, reconcile_ports).await?)
            }
        }
    }

    /// Takes `ip` out of the endpoints (upstream `RemoveEndpoints`): its lease removed, the
    /// endpoints reconciled with the others' leases.
    pub async fn remove(&self, ip: &str, port: &EndpointPort) -> Result<(), ReconcileError> {
        let _reconciling = self.lock.lock().await;
        match &self.kind {
            Kind::None => Ok(()),
            Kind::Lease(leases) => {
                leases.remove(ip).await?;
                self.sync_leases(leases, port, true).await
            }
            Kind::MasterCount(_) => {
                let mut current = self.adapter.get().await?;
                if !current.remove(ip) {
                    return Ok(());
                }
                Ok(self.adapter.sync(&current, port, true).await?)
            }
        }
    }

    /// Makes [`reconcile`](Self::reconcile) do nothing from now on (upstream `StopReconciling`).
    pub fn stop_reconciling(&self) {
        self.stopped.store(true, Ordering::SeqCst);
    }

    async fn sync_leases(
        &self,
        leases: &MasterLeases,
        port: &EndpointPort,
        reconcile_ports: bool,
    ) -> Result<(), ReconcileError> {
        let ips: BTreeSet<String> = leases.list().await?.into_iter().collect();
        // Having just written our own lease, none at all means something is wrong: keep the
        // endpoints. A server shutting down goes on, to remove itself even if it is the last.
        if ips.is_empty() && !self.stopped.load(Ordering::SeqCst) {
            return Err(ReconcileError::NoLeases);
        }
        Ok(self.adapter.sync(&ips, port, reconcile_ports).await?)
    }
}

/// `master-count`: the addresses with `ip` added; when there are more than `count`, the ones
/// after `ip` in lexicographic order (wrapping around) go, so every server converges on the
/// same set.
fn with_own_address(current: BTreeSet<String>, ip: &str, count: usize) -> BTreeSet<String> {
    let mut all: Vec<String> = current.into_iter().collect();
    if !all.iter().any(|a| a == ip) {
        all.push(ip.to_string());
        all.sort();
    }
    if let Some(own) = all.iter().position(|a| a == ip) {
        let mut own = own;
        while all.len() > count.max(1) {
            let next = (own + 1) % all.len();
            all.remove(next);
            if next < own {
                own -= 1;
            }
        }
    }
    all.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ips: &[&str]) -> BTreeSet<String> {
        ips.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn master_count_adds_itself_and_drops_the_addresses_after_it() {
        assert_eq!(
            with_own_address(set(&["10.0.0.1"]), "10.0.0.2", 2),
            set(&["10.0.0.1", "10.0.0.2"])
        );
        assert_eq!(
            with_own_address(set(&["10.0.0.1", "10.0.0.3"]), "10.0.0.2", 2),
            set(&["10.0.0.1", "10.0.0.2"])
        );
        // Wrapping around: the last address drops the first.
        assert_eq!(
            with_own_address(set(&["10.0.0.1", "10.0.0.2"]), "10.0.0.3", 2),
            set(&["10.0.0.2", "10.0.0.3"])
        );
        assert_eq!(
            with_own_address(set(&["10.0.0.1", "10.0.0.2", "10.0.0.4"]), "10.0.0.3", 1),
            set(&["10.0.0.3"])
        );
    }
}
