//! Periodic compaction, as kube-apiserver's compactor does it: at every tick, compact to the
//! revision seen at the previous tick, so at least one interval of history is always kept
//! (watches and paginated lists younger than that never see 410). The revision at start-up
//! counts as the first one seen, so the first compaction comes one interval after start
//! (upstream's first tick only records a revision, which puts it at two intervals).

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::{CancellationToken, DropGuard};

use super::Storage;

/// kube-apiserver's default `--etcd-compaction-interval`.
pub const DEFAULT_COMPACTION_INTERVAL: Duration = Duration::from_secs(300);

/// A running compactor; dropping it stops it.
pub struct Compactor {
    _stop: DropGuard,
}

impl std::fmt::Debug for Compactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Compactor")
    }
}

impl Compactor {
    /// Starts compacting `storage` every `interval` (inside a tokio runtime). A zero interval
    /// disables compaction, as upstream.
    pub fn start(storage: Arc<dyn Storage>, interval: Duration) -> Self {
        let stop = CancellationToken::new();
        if !interval.is_zero() {
            tokio::spawn(run(storage, interval, stop.clone()));
        }
        Compactor {
            _stop: stop.drop_guard(),
        }
    }
}

async fn run(storage: Arc<dyn Storage>, interval: Duration, stop: CancellationToken) {
    let mut previous: Option<u64> = storage.current_revision().await.ok();
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(interval) => {}
        }
        let current = match storage.current_revision().await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "compactor: reading the current revision failed");
                continue;
            }
        };
        if let Some(rev) = previous
            && rev > storage.compacted_revision()
            && let Err(e) = storage.compact(rev).await
        {
            // Another API server (etcd) may have compacted already: not an error worth more.
            tracing::debug!(error = %e, revision = rev, "compactor: compaction skipped");
        }
        previous = Some(current);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::backends::EmbeddedStorage;
    use crate::storage::testing::pod;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn compacts_to_the_previous_ticks_revision() {
        let dir = tempfile::tempdir().unwrap();
        let s: Arc<dyn Storage> = Arc::new(EmbeddedStorage::open(dir.path()).unwrap());
        let first = s.create("/registry/a/x", pod("", "x", &[])).await.unwrap();
        let _c = Compactor::start(s.clone(), Duration::from_millis(50));
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        let mut n = 0;
        // Keep writing until a compaction happened; it never goes past what was current one
        // tick earlier, so the latest write is always readable at its revision.
        while s.compacted_revision() < first.resource_version {
            assert!(tokio::time::Instant::now() < deadline, "no compaction");
            n += 1;
            let o = s
                .create(&format!("/registry/a/y{n}"), pod("", &format!("y{n}"), &[]))
                .await
                .unwrap();
            assert!(s.compacted_revision() <= o.resource_version);
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
