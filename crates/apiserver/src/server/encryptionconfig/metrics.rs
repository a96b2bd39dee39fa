//! Upstream's encryption-configuration controller metrics:
//! `apiserver_encryption_config_controller_automatic_reloads_total`,
//! `apiserver_encryption_config_controller_automatic_reload_last_timestamp_seconds` and
//! `apiserver_encryption_config_controller_last_config_info`, each labelled with the hash of
//! the API server's identity.

use std::sync::LazyLock;
use std::time::{SystemTime, UNIX_EPOCH};

use prometheus::{CounterVec, GaugeVec, Opts, Registry};
use sha2::{Digest, Sha256};

struct ControllerMetrics {
    reloads: CounterVec,
    last_timestamp: GaugeVec,
    last_config: GaugeVec,
}

fn build() -> Result<ControllerMetrics, prometheus::Error> {
    Ok(ControllerMetrics {
        reloads: CounterVec::new(
            Opts::new(
                "apiserver_encryption_config_controller_automatic_reloads_total",
                "[ALPHA] Total number of reload successes and failures of encryption configuration split by apiserver identity.",
            ),
            &["status", "apiserver_id_hash"],
        )?,
        last_timestamp: GaugeVec::new(
            Opts::new(
                "apiserver_encryption_config_controller_automatic_reload_last_timestamp_seconds",
                "[ALPHA] Timestamp of the last successful or failed automatic reload of encryption configuration split by apiserver identity.",
            ),
            &["status", "apiserver_id_hash"],
        )?,
        last_config: GaugeVec::new(
            Opts::new(
                "apiserver_encryption_config_controller_last_config_info",
                "[ALPHA] Information about the last applied encryption configuration with hash as label, split by apiserver identity.",
            ),
            &["apiserver_id_hash", "hash"],
        )?,
    })
}

static METRICS: LazyLock<Option<ControllerMetrics>> = LazyLock::new(|| match build() {
    Ok(m) => Some(m),
    Err(err) => {
        tracing::error!(%err, "cannot create the encryption config controller metrics");
        None
    }
});

/// Adds the controller's metrics to `registry`.
pub fn register(registry: &Registry) -> Result<(), prometheus::Error> {
    if let Some(m) = METRICS.as_ref() {
        registry.register(Box::new(m.reloads.clone()))?;
        registry.register(Box::new(m.last_timestamp.clone()))?;
        registry.register(Box::new(m.last_config.clone()))?;
    }
    Ok(())
}

/// `sha256:<hex>` of the API server identity (`""` for none), as upstream labels it.
fn id_hash(apiserver_id: &str) -> String {
    if apiserver_id.is_empty() {
        return String::new();
    }
    format!("sha256:{:x}", Sha256::digest(apiserver_id.as_bytes()))
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn record_reload(apiserver_id: &str, status: &str) {
    let Some(m) = METRICS.as_ref() else { return };
    let id = id_hash(apiserver_id);
    m.reloads.with_label_values(&[status, &id]).inc();
    m.last_timestamp
        .with_label_values(&[status, &id])
        .set(now());
}

/// A reload that applied a new configuration.
pub fn record_reload_success(apiserver_id: &str, config_hash: &str) {
    record_reload(apiserver_id, "success");
    record_last_config(apiserver_id, config_hash);
}

/// A reload that failed (the previous configuration stays).
pub fn record_reload_failure(apiserver_id: &str) {
    record_reload(apiserver_id, "failure");
}

/// The configuration in force (one series, value 1).
pub fn record_last_config(apiserver_id: &str, config_hash: &str) {
    let Some(m) = METRICS.as_ref() else { return };
    m.last_config.reset();
    m.last_config
        .with_label_values(&[&id_hash(apiserver_id), config_hash])
        .set(1.0);
}
