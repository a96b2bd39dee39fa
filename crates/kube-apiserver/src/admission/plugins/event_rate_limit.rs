//! EventRateLimit (upstream `plugin/pkg/admission/eventratelimit`): core Events are refused
//! with 429 once a token bucket runs dry — one for the whole server, or one per namespace,
//! per user, or per event source and involved object (most recent `cacheSize` keys kept) —
//! configured by an `eventratelimit.admission.k8s.io/v1alpha1` `Configuration` in the
//! admission configuration file.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use apiserver::admission::{Attributes, Operation, Plugin};
use apiserver::status::{ApiError, reason};
use async_trait::async_trait;
use http::StatusCode;
use serde::Deserialize;
use serde_json::Value;

use crate::admission::PluginContext;
use crate::apis::json::str_at;

/// The plugin's name.
pub const NAME: &str = "EventRateLimit";

/// The configuration's apiVersion.
const CONFIG_API_VERSION: &str = "eventratelimit.admission.k8s.io/v1alpha1";
/// Keys kept per limit when the configuration gives no `cacheSize`.
const DEFAULT_CACHE_SIZE: usize = 4096;
const LIMIT_TYPES: [&str; 4] = ["Namespace", "Server", "SourceAndObject", "User"];

/// One limit of the configuration.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Limit {
    #[serde(rename = "type", default)]
    limit_type: String,
    #[serde(default)]
    qps: i64,
    #[serde(default)]
    burst: i64,
    #[serde(default)]
    cache_size: i64,
}

/// The plugin's configuration object.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Configuration {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    limits: Vec<Limit>,
}

/// Upstream's `ValidateConfiguration`, as one aggregated message.
fn validate(config: &Configuration) -> Result<(), String> {
    let mut errs = Vec::new();
    if config.limits.is_empty() {
        errs.push("limits: Invalid value: null: must not be empty".to_string());
    }
    for (i, limit) in config.limits.iter().enumerate() {
        if !LIMIT_TYPES.contains(&limit.limit_type.as_str()) {
            let supported: Vec<String> = LIMIT_TYPES.iter().map(|t| format!("{t:?}")).collect();
            errs.push(format!(
                "limits[{i}].type: Unsupported value: {:?}: supported values: {}",
                limit.limit_type,
                supported.join(", ")
            ));
        }
        if limit.burst <= 0 {
            errs.push(format!(
                "limits[{i}].burst: Invalid value: {}: must be positive",
                limit.burst
            ));
        }
        if limit.qps <= 0 {
            errs.push(format!(
                "limits[{i}].qps: Invalid value: {}: must be positive",
                limit.qps
            ));
        }
        if limit.limit_type != "Server" && limit.cache_size < 0 {
            errs.push(format!(
                "limits[{i}].cacheSize: Invalid value: {}: must not be negative",
                limit.cache_size
            ));
        }
    }
    match errs.len() {
        0 => Ok(()),
        1 => Err(errs.remove(0)),
        _ => Err(format!("[{}]", errs.join(", "))),
    }
}

/// A token bucket: `burst` tokens, refilled at `qps` per second (client-go's token-bucket
/// rate limiter, starting full).
#[derive(Debug)]
struct Bucket {
    tokens: f64,
    last: Instant,
}

impl Bucket {
    fn full(burst: f64) -> Self {
        Bucket {
            tokens: burst,
            last: Instant::now(),
        }
    }

    fn try_accept(&mut self, qps: f64, burst: f64, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + elapsed * qps).min(burst);
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// The buckets of one limit, keyed, the least recently used dropped beyond `capacity`.
#[derive(Debug, Default)]
struct Buckets {
    entries: HashMap<String, (Bucket, u64)>,
    clock: u64,
}

/// One configured limit and its buckets.
struct Enforcer {
    limit_type: String,
    qps: f64,
    burst: f64,
    capacity: usize,
    buckets: Mutex<Buckets>,
}

impl Enforcer {
    fn new(limit: &Limit) -> Self {
        let capacity = match (limit.limit_type.as_str(), limit.cache_size) {
            ("Server", _) => 1,
            (_, 0) => DEFAULT_CACHE_SIZE,
            (_, n) => usize::try_from(n).unwrap_or(DEFAULT_CACHE_SIZE),
        };
        Enforcer {
            limit_type: limit.limit_type.clone(),
            qps: limit.qps as f64,
            burst: limit.burst as f64,
            capacity,
            buckets: Mutex::new(Buckets::default()),
        }
    }

    fn key(&self, attrs: &Attributes) -> String {
        match self.limit_type.as_str() {
            "Namespace" => attrs.namespace.clone(),
            "User" => attrs.user.name.clone(),
            "SourceAndObject" => attrs
                .object
                .as_ref()
                .map(source_and_object)
                .unwrap_or_default(),
            _ => String::new(),
        }
    }

    /// Takes a token from the request's bucket; the message when there is none.
    fn accept(&self, attrs: &Attributes, now: Instant) -> Result<(), String> {
        let key = self.key(attrs);
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        buckets.clock += 1;
        let tick = buckets.clock;
        if !buckets.entries.contains_key(&key) && buckets.entries.len() >= self.capacity {
            let oldest = buckets
                .entries
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                buckets.entries.remove(&oldest);
            }
        }
        let (bucket, used) = buckets
            .entries
            .entry(key.clone())
            .or_insert_with(|| (Bucket::full(self.burst), tick));
        *used = tick;
        if bucket.try_accept(self.qps, self.burst, now) {
            Ok(())
        } else {
            Err(too_many_requests(&format!(
                "limit reached on type {} for key {key}",
                self.limit_type
            )))
        }
    }
}

/// Upstream `NewTooManyRequestsError`'s message.
fn too_many_requests(message: &str) -> String {
    format!("Too many requests: {message}")
}

/// The source and involved object of an event, concatenated as upstream's key.
fn source_and_object(event: &Value) -> String {
    [
        "source.component",
        "source.host",
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
    ]
    .iter()
    .map(|path| str_at(event, path).unwrap_or_default())
    .collect()
}

/// The EventRateLimit plugin.
pub struct EventRateLimit {
    enforcers: Vec<Enforcer>,
}

/// Builds the plugin from its configuration; without one, or with a bad one, the server does
/// not start (upstream refuses an empty `limits`).
pub fn new(ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    let config = match &ctx.config {
        Some(value) => {
            let config: Configuration = serde_json::from_value(value.clone())
                .map_err(|e| format!("EventRateLimit configuration: {e}"))?;
            if config.kind != "Configuration" || config.api_version != CONFIG_API_VERSION {
                return Err(format!(
                    "EventRateLimit configuration: expected kind Configuration of {CONFIG_API_VERSION}, got kind {:?} of {:?}",
                    config.kind, config.api_version
                ));
            }
            config
        }
        None => Configuration {
            api_version: CONFIG_API_VERSION.into(),
            kind: "Configuration".into(),
            limits: Vec::new(),
        },
    };
    validate(&config)?;
    Ok(Arc::new(EventRateLimit {
        enforcers: config.limits.iter().map(Enforcer::new).collect(),
    }))
}

#[async_trait]
impl Plugin for EventRateLimit {
    fn name(&self) -> &str {
        NAME
    }

    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }

    fn validates(&self) -> bool {
        true
    }

    async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError> {
        // Only core Events (events.k8s.io ones are not limited), and never dry runs, which
        // write nothing.
        if !attrs.kind.group.is_empty() || attrs.kind.kind != "Event" || attrs.dry_run {
            return Ok(());
        }
        let now = Instant::now();
        let refusals: Vec<String> = self
            .enforcers
            .iter()
            .filter_map(|e| e.accept(attrs, now).err())
            .collect();
        if refusals.is_empty() {
            return Ok(());
        }
        let aggregated = if refusals.len() == 1 {
            refusals[0].clone()
        } else {
            format!("[{}]", refusals.join(", "))
        };
        // Each refusal is a TooManyRequests error already; upstream wraps their aggregate
        // in another, so the prefix shows twice.
        Err(ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            reason::TOO_MANY_REQUESTS,
            too_many_requests(&aggregated),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn bad_configurations_are_refused_with_upstreams_messages() {
        let config: Configuration = serde_json::from_value(serde_json::json!({
            "apiVersion": CONFIG_API_VERSION, "kind": "Configuration",
            "limits": [{"type": "Pod", "qps": 0, "burst": 1}]
        }))
        .unwrap();
        assert_eq!(
            validate(&config).unwrap_err(),
            "[limits[0].type: Unsupported value: \"Pod\": supported values: \"Namespace\", \"Server\", \"SourceAndObject\", \"User\", limits[0].qps: Invalid value: 0: must be positive]"
        );
        let empty = Configuration {
            api_version: String::new(),
            kind: String::new(),
            limits: Vec::new(),
        };
        assert_eq!(
            validate(&empty).unwrap_err(),
            "limits: Invalid value: null: must not be empty"
        );
    }

    #[test]
    fn a_bucket_allows_its_burst_then_refills_at_qps() {
        let start = Instant::now();
        let mut bucket = Bucket {
            tokens: 2.0,
            last: start,
        };
        assert!(bucket.try_accept(1.0, 2.0, start));
        assert!(bucket.try_accept(1.0, 2.0, start));
        assert!(!bucket.try_accept(1.0, 2.0, start));
        assert!(bucket.try_accept(1.0, 2.0, start + Duration::from_secs(1)));
        assert!(!bucket.try_accept(1.0, 2.0, start + Duration::from_secs(1)));
    }
}
