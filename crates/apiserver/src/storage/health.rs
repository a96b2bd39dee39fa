//! The storage health check (`etcd` in /healthz, /livez and /readyz, as upstream names it).
//!
//! Health checks answer synchronously while the storage probe is a network round trip, so a
//! background task probes the backend every interval (with a timeout) and the check reports the
//! latest result. A probe that has not completed for three intervals counts as a failure, so a
//! hung backend is reported even if the probe itself never returns.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::Storage;
use super::factory::StorageBackend;
use crate::server::healthz::{SharedHealthChecker, grouped_check};

/// How often the backend is probed.
pub const PROBE_INTERVAL: Duration = Duration::from_secs(1);

#[derive(Debug)]
struct LastProbe {
    at: Instant,
    result: Result<(), String>,
}

/// Starts probing `storage` until `stop` fires and returns the `etcd` check (group `etcd`),
/// each probe with a deadline of two intervals.
pub fn storage_health_check(
    storage: Arc<dyn Storage>,
    interval: Duration,
    stop: CancellationToken,
) -> SharedHealthChecker {
    probe_check(
        super::factory::HEALTH_CHECK_NAME,
        "etcd",
        storage,
        interval,
        interval * 2,
        stop,
    )
}

/// Upstream's storage checks of the opened backends.
pub struct StorageChecks {
    /// For `/healthz`, `/livez` and `/readyz`: `etcd` (deadline `--etcd-healthcheck-timeout`)
    /// and one `etcd-override-<i>` per distinct set of override servers (group `etcd`).
    pub health: Vec<SharedHealthChecker>,
    /// For `/readyz` only: `etcd-readiness` (deadline `--etcd-readycheck-timeout`) and
    /// `etcd-override-readiness-<i>` (group `etcd-readiness`).
    pub readiness: Vec<SharedHealthChecker>,
}

/// Starts probing every backend of `backend` until `stop` fires, every `interval`, and
/// returns the checks upstream registers for them.
pub fn storage_checks(
    backend: &StorageBackend,
    interval: Duration,
    stop: &CancellationToken,
) -> StorageChecks {
    let (health_timeout, ready_timeout) = (backend.healthcheck_timeout, backend.readycheck_timeout);
    let mut checks = StorageChecks {
        health: vec![probe_check(
            super::factory::HEALTH_CHECK_NAME,
            "etcd",
            backend.default.clone(),
            interval,
            health_timeout,
            stop.clone(),
        )],
        readiness: vec![probe_check(
            READINESS_CHECK_NAME,
            READINESS_CHECK_NAME,
            backend.default.clone(),
            interval,
            ready_timeout,
            stop.clone(),
        )],
    };
    for (i, storage) in backend.overrides.iter().enumerate() {
        checks.health.push(probe_check(
            format!("etcd-override-{i}"),
            "etcd",
            storage.clone(),
            interval,
            health_timeout,
            stop.clone(),
        ));
        checks.readiness.push(probe_check(
            format!("etcd-override-readiness-{i}"),
            READINESS_CHECK_NAME,
            storage.clone(),
            interval,
            ready_timeout,
            stop.clone(),
        ));
    }
    checks
}

/// The readiness check's name and group (upstream's).
pub const READINESS_CHECK_NAME: &str = "etcd-readiness";

/// A check named `name` in `group` reporting the latest probe of `storage`, probed every
/// `interval` with a deadline of `timeout`.
fn probe_check(
    name: impl Into<String>,
    group: &str,
    storage: Arc<dyn Storage>,
    interval: Duration,
    timeout: Duration,
    stop: CancellationToken,
) -> SharedHealthChecker {
    let last = Arc::new(Mutex::new(LastProbe {
        at: Instant::now(),
        result: Err("not probed yet".to_string()),
    }));
    {
        let last = last.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tick.tick() => {}
                }
                let result = match tokio::time::timeout(timeout, storage.health()).await {
                    Ok(result) => result,
                    Err(_) => Err(format!("health probe timed out after {timeout:?}")),
                };
                if let Ok(mut last) = last.lock() {
                    *last = LastProbe {
                        at: Instant::now(),
                        result,
                    };
                }
            }
        });
    }
    // A probe in flight ends by its deadline: older results mean the prober is stuck.
    let stale_after = (interval * 3).max(timeout + interval * 2);
    grouped_check(name, group, move |_| {
        let last = last
            .lock()
            .map_err(|_| "health state poisoned".to_string())?;
        if last.at.elapsed() > stale_after {
            return Err(format!(
                "no successful storage health probe for {:?}",
                last.at.elapsed()
            ));
        }
        last.result.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::backends::EmbeddedStorage;

    #[tokio::test]
    async fn reports_the_embedded_backend_healthy() {
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> = Arc::new(EmbeddedStorage::open(dir.path()).unwrap());
        let stop = CancellationToken::new();
        let check = storage_health_check(storage, Duration::from_millis(20), stop.clone());
        assert_eq!(check.name(), "etcd");
        let (parts, ()) = http::Request::new(()).into_parts();
        let deadline = Instant::now() + Duration::from_secs(10);
        while check.check(&parts).is_err() {
            assert!(Instant::now() < deadline, "storage never reported healthy");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        stop.cancel();
    }
}
