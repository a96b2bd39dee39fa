//! The reload metrics of the structured authentication and authorization configuration files
//! (upstream `pkg/server/options/authenticationconfig/metrics` and
//! `authorizationconfig/metrics`): `apiserver_<kind>_config_controller_automatic_reloads_total`,
//! `…_automatic_reload_last_timestamp_seconds` (both by `status` and `apiserver_id_hash`) and
//! `…_last_config_info` (the hash of the configuration in force, value 1).

use std::sync::LazyLock;
use std::time::{SystemTime, UNIX_EPOCH};

use prometheus::{CounterVec, GaugeVec, Opts, Registry};
use sha2::{Digest, Sha256};

/// Which configuration file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigKind {
    /// `--authentication-config`.
    Authentication,
    /// `--authorization-config`.
    Authorization,
}

impl ConfigKind {
    fn word(self) -> &'static str {
        match self {
            ConfigKind::Authentication => "authentication",
            ConfigKind::Authorization => "authorization",
        }
    }
}

struct ControllerMetrics {
    reloads: CounterVec,
    last_timestamp: GaugeVec,
    last_config: GaugeVec,
}

fn build(kind: ConfigKind) -> Result<ControllerMetrics, prometheus::Error> {
    let word = kind.word();
    let prefix = format!("apiserver_{word}_config_controller");
    Ok(ControllerMetrics {
        reloads: CounterVec::new(
            Opts::new(
                format!("{prefix}_automatic_reloads_total"),
                format!(
                    "[BETA] Total number of automatic reloads of {word} configuration split by status and apiserver identity."
                ),
            ),
            &["status", "apiserver_id_hash"],
        )?,
        last_timestamp: GaugeVec::new(
            Opts::new(
                format!("{prefix}_automatic_reload_last_timestamp_seconds"),
                format!(
                    "[BETA] Timestamp of the last automatic reload of {word} configuration split by status and apiserver identity."
                ),
            ),
            &["status", "apiserver_id_hash"],
        )?,
        last_config: GaugeVec::new(
            Opts::new(
                format!("{prefix}_last_config_info"),
                format!(
                    "[ALPHA] Information about the last applied {word} configuration with hash as label, split by apiserver identity."
                ),
            ),
            &["apiserver_id_hash", "hash"],
        )?,
    })
}

fn create(kind: ConfigKind) -> Option<ControllerMetrics> {
    match build(kind) {
        Ok(m) => Some(m),
        Err(err) => {
            tracing::error!(%err, "cannot create the {} config controller metrics", kind.word());
            None
        }
    }
}

static AUTHENTICATION: LazyLock<Option<ControllerMetrics>> =
    LazyLock::new(|| create(ConfigKind::Authentication));
static AUTHORIZATION: LazyLock<Option<ControllerMetrics>> =
    LazyLock::new(|| create(ConfigKind::Authorization));

fn metrics(kind: ConfigKind) -> Option<&'static ControllerMetrics> {
    match kind {
        ConfigKind::Authentication => AUTHENTICATION.as_ref(),
        ConfigKind::Authorization => AUTHORIZATION.as_ref(),
    }
}

/// Adds both controllers' metrics to `registry`.
pub fn register(registry: &Registry) -> Result<(), prometheus::Error> {
    for kind in [ConfigKind::Authentication, ConfigKind::Authorization] {
        if let Some(m) = metrics(kind) {
            registry.register(Box::new(m.reloads.clone()))?;
            registry.register(Box::new(m.last_timestamp.clone()))?;
            registry.register(Box::new(m.last_config.clone()))?;
        }
    }
    Ok(())
}

/// `sha256:<hex>` of `data`, `""` for none (upstream's `getHash`).
pub fn hash(data: &[u8]) -> String {
    if data.is_empty() {
        return String::new();
    }
    format!("sha256:{:x}", Sha256::digest(data))
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn record_reload(kind: ConfigKind, apiserver_id: &str, status: &str) {
    let Some(m) = metrics(kind) else { return };
    let id = hash(apiserver_id.as_bytes());
    m.reloads.with_label_values(&[status, &id]).inc();
    m.last_timestamp
        .with_label_values(&[status, &id])
        .set(now());
}

/// A reload that put the file's new content `data` in force.
pub fn record_reload_success(kind: ConfigKind, apiserver_id: &str, data: &[u8]) {
    record_reload(kind, apiserver_id, "success");
    record_last_config(kind, apiserver_id, data);
}

/// A reload that failed (the running configuration stays).
pub fn record_reload_failure(kind: ConfigKind, apiserver_id: &str) {
    record_reload(kind, apiserver_id, "failure");
}

/// The configuration in force is `data` (one series, value 1).
pub fn record_last_config(kind: ConfigKind, apiserver_id: &str, data: &[u8]) {
    let Some(m) = metrics(kind) else { return };
    m.last_config.reset();
    m.last_config
        .with_label_values(&[&hash(apiserver_id.as_bytes()), &hash(data)])
        .set(1.0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reloads_are_counted_per_kind_and_the_last_config_is_one_series() {
        let id = "apiserver-unit";
        let id_hash = hash(id.as_bytes());
        record_reload_failure(ConfigKind::Authorization, id);
        record_reload_success(ConfigKind::Authorization, id, b"one");
        record_reload_success(ConfigKind::Authorization, id, b"two");
        let m = metrics(ConfigKind::Authorization).unwrap();
        assert_eq!(
            m.reloads.with_label_values(&["success", &id_hash]).get(),
            2.0
        );
        assert_eq!(
            m.reloads.with_label_values(&["failure", &id_hash]).get(),
            1.0
        );
        assert!(
            m.last_timestamp
                .with_label_values(&["success", &id_hash])
                .get()
                > 0.0
        );
        let registry = Registry::new();
        register(&registry).unwrap();
        let families = registry.gather();
        let info = families
            .iter()
            .find(|f| f.name() == "apiserver_authorization_config_controller_last_config_info")
            .unwrap();
        assert_eq!(info.get_metric().len(), 1);
        let labels: Vec<(&str, &str)> = info.get_metric()[0]
            .get_label()
            .iter()
            .map(|l| (l.name(), l.value()))
            .collect();
        assert_eq!(
            labels,
            vec![
                ("apiserver_id_hash", id_hash.as_str()),
                ("hash", hash(b"two").as_str())
            ]
        );
        assert_eq!(hash(b""), "");
        assert!(hash(b"x").starts_with("sha256:"));
    }
}
