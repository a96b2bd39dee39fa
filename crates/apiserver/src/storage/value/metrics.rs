//! Upstream's value-transformation metrics: `apiserver_storage_transformation_operations_total`
//! and `apiserver_storage_transformation_duration_seconds`, recorded by every prefix choice
//! (a provider, then one of its keys) as upstream records them. The server's `/metrics`
//! registry includes them through [`register`].

use std::sync::LazyLock;
use std::time::Duration;

use prometheus::{CounterVec, HistogramOpts, HistogramVec, Opts, Registry};

/// The `transformation_type` of reads.
pub const FROM_STORAGE: &str = "from_storage";
/// The `transformation_type` of writes.
pub const TO_STORAGE: &str = "to_storage";

/// The `status` of a failed transformation that never reached a KMS plugin.
const STATUS_UNKNOWN: &str = "unknown-non-grpc";

struct TransformationMetrics {
    operations: CounterVec,
    duration: HistogramVec,
}

fn build() -> Result<TransformationMetrics, prometheus::Error> {
    let operations = CounterVec::new(
        Opts::new(
            "apiserver_storage_transformation_operations_total",
            "[ALPHA] Total number of transformations. Successful transformation will have a status 'OK' and a varied status string when the transformation fails. The status, resource, and transformation_type fields can be used for alerting purposes. For example, you can monitor for encryption/decryption failures using the transformation_type (e.g., from_storage for decryption and to_storage for encryption). Additionally, these fields can be used to ensure that the correct transformers are applied to each resource.",
        ),
        &[
            "resource",
            "transformation_type",
            "transformer_prefix",
            "status",
        ],
    )?;
    let duration = HistogramVec::new(
        HistogramOpts::new(
            "apiserver_storage_transformation_duration_seconds",
            "[ALPHA] Latencies in seconds of value transformation operations.",
        )
        .buckets(prometheus::exponential_buckets(5e-6, 2.0, 25)?),
        &["transformation_type", "transformer_prefix"],
    )?;
    Ok(TransformationMetrics {
        operations,
        duration,
    })
}

static METRICS: LazyLock<Option<TransformationMetrics>> = LazyLock::new(|| match build() {
    Ok(m) => Some(m),
    Err(err) => {
        tracing::error!(%err, "cannot create the storage transformation metrics");
        None
    }
});

/// Adds the transformation metrics to `registry`.
pub fn register(registry: &Registry) -> Result<(), prometheus::Error> {
    if let Some(m) = METRICS.as_ref() {
        registry.register(Box::new(m.operations.clone()))?;
        registry.register(Box::new(m.duration.clone()))?;
    }
    Ok(())
}

/// Records one transformation (upstream's `RecordTransformation`): counted always, timed when
/// it succeeded.
pub fn record_transformation(
    resource: &str,
    transformation_type: &str,
    prefix: &str,
    elapsed: Duration,
    ok: bool,
) {
    let Some(m) = METRICS.as_ref() else { return };
    let status = if ok { "OK" } else { STATUS_UNKNOWN };
    m.operations
        .with_label_values(&[resource, transformation_type, prefix, status])
        .inc();
    if ok {
        m.duration
            .with_label_values(&[transformation_type, prefix])
            .observe(elapsed.as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus::{Encoder, TextEncoder};

    #[test]
    fn transformations_are_counted_under_upstream_names() {
        let registry = Registry::new();
        register(&registry).unwrap();
        record_transformation(
            "widgets.example",
            TO_STORAGE,
            "k8s:enc:aescbc:v1:",
            Duration::ZERO,
            true,
        );
        record_transformation(
            "widgets.example",
            FROM_STORAGE,
            "unknown",
            Duration::ZERO,
            false,
        );
        let mut out = Vec::new();
        TextEncoder::new()
            .encode(&registry.gather(), &mut out)
            .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains(
            r#"apiserver_storage_transformation_operations_total{resource="widgets.example",status="OK",transformation_type="to_storage",transformer_prefix="k8s:enc:aescbc:v1:"} 1"#
        ), "{text}");
        assert!(text.contains(
            r#"apiserver_storage_transformation_operations_total{resource="widgets.example",status="unknown-non-grpc",transformation_type="from_storage",transformer_prefix="unknown"} 1"#
        ), "{text}");
        assert!(text.contains(
            r#"apiserver_storage_transformation_duration_seconds_count{transformation_type="to_storage",transformer_prefix="k8s:enc:aescbc:v1:"}"#
        ), "{text}");
    }
}
