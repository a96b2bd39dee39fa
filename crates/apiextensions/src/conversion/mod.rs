//! Converting custom resources between the versions of their CRD (upstream
//! `apiextensions-apiserver/pkg/apiserver/conversion`): strategy `None` only rewrites
//! `apiVersion`; strategy `Webhook` sends a `ConversionReview` to the CRD's webhook
//! ([`webhook`]), checks what comes back and restores the metadata the webhook may not change
//! ([`review`]).
//!
//! Objects are stored in the CRD's storage version; each served version's store reads and
//! writes through a [`ConvertingStorage`] ([`storage`]) that converts every object it hands
//! out to the served version and every object it writes to the storage version. A converted
//! object is pruned by the target version's schema, as upstream's schema-coercing converter
//! does.

pub mod metrics;
pub mod review;
pub mod storage;
pub mod webhook;

use std::collections::BTreeMap;
use std::sync::Arc;

use apiserver::status::ApiError;
use serde_json::Value;

pub use self::storage::ConvertingStorage;
pub use self::webhook::WebhookConverter;
use crate::seams::{CustomResourceSchema, ServiceResolver};

/// The most objects one ConversionReview carries: a long list goes to the webhook in several
/// reviews, keeping each answer well below the client's response limit.
pub const MAX_OBJECTS_PER_REVIEW: usize = 100;

/// Why a conversion failed; the text is upstream's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConversionError(pub String);

impl ConversionError {
    /// The API error a request gets: upstream returns the converter's plain error, which the
    /// API renders as a 500 with no reason.
    pub fn to_api_error(&self) -> ApiError {
        ApiError::new(http::StatusCode::INTERNAL_SERVER_ERROR, "", self.0.clone())
    }
}

/// A group, version and kind as Go's `schema.GroupVersionKind` prints it
/// (`example.com/v1, Kind=Widget`).
pub fn gvk_string(api_version: &str, kind: &str) -> String {
    let (group, version) = split_api_version(api_version);
    format!("{group}/{version}, Kind={kind}")
}

/// `group/version` (or a bare `version` of the legacy group) split as `ParseGroupVersion`.
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((group, version)) => (group, version),
        None => ("", api_version),
    }
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// How a CRD converts.
enum Strategy {
    /// `None`: only `apiVersion` changes.
    None,
    /// `Webhook`.
    Webhook(Arc<WebhookConverter>),
}

/// The converter of one CRD (upstream `crConverter` with its delegate).
pub struct CrConverter {
    group: String,
    /// `spec.versions[*].name`.
    versions: Vec<String>,
    strategy: Strategy,
    /// The compiled schema of each served version, to prune converted objects with.
    schemas: BTreeMap<String, Arc<dyn CustomResourceSchema>>,
}

impl std::fmt::Debug for CrConverter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrConverter")
            .field("group", &self.group)
            .field("versions", &self.versions)
            .field("webhook", &matches!(self.strategy, Strategy::Webhook(_)))
            .finish()
    }
}

impl CrConverter {
    /// The converter `crd` asks for (`spec.conversion`); `schemas` prunes converted objects
    /// per version; `resolver` finds a webhook `service`. Errors when the webhook's client
    /// cannot be built (a bad `caBundle`).
    pub fn new(
        crd: &Value,
        schemas: BTreeMap<String, Arc<dyn CustomResourceSchema>>,
        resolver: Arc<dyn ServiceResolver>,
    ) -> Result<Self, String> {
        let versions = crate::crd::versions(crd)
            .iter()
            .filter_map(|v| v.get("name").and_then(Value::as_str))
            .map(str::to_string)
            .collect();
        let strategy = match str_at(crd, "/spec/conversion/strategy") {
            "Webhook" => Strategy::Webhook(Arc::new(WebhookConverter::new(crd, resolver))),
            "" | "None" => Strategy::None,
            other => {
                return Err(format!(
                    "unknown conversion strategy {other:?} for CRD {}",
                    str_at(crd, "/metadata/name")
                ));
            }
        };
        Ok(CrConverter {
            group: str_at(crd, "/spec/group").to_string(),
            versions,
            strategy,
            schemas,
        })
    }

    /// The `apiVersion` of `version` in the CRD's group.
    pub fn api_version(&self, version: &str) -> String {
        format!("{}/{version}", self.group)
    }

    /// Whether conversions go through a webhook.
    pub fn is_webhook(&self) -> bool {
        matches!(self.strategy, Strategy::Webhook(_))
    }

    fn is_valid(&self, api_version: &str) -> bool {
        let (group, version) = split_api_version(api_version);
        group == self.group && self.versions.iter().any(|v| v == version)
    }

    /// Converts one object to `version` (a no-op when it already is in that version).
    pub async fn convert_one(&self, obj: Value, version: &str) -> Result<Value, ConversionError> {
        let mut out = self.convert(vec![obj], version).await?;
        out.pop().ok_or_else(|| {
            ConversionError(format!(
                "request to convert CR to {}: no object",
                self.api_version(version)
            ))
        })
    }

    /// Converts `objects` to `version`; the objects not yet in that version go to the
    /// webhook together, [`MAX_OBJECTS_PER_REVIEW`] to a review. Errors name the first object
    /// of the failing review as upstream names the object it converts
    /// (`conversion webhook for example.com/v1, Kind=Widget failed: …`).
    pub async fn convert(
        &self,
        mut objects: Vec<Value>,
        version: &str,
    ) -> Result<Vec<Value>, ConversionError> {
        let desired = self.api_version(version);
        let mut pending = Vec::new();
        for (i, obj) in objects.iter().enumerate() {
            let from = str_at(obj, "/apiVersion");
            if from == desired {
                continue;
            }
            if !self.is_valid(&desired) {
                return Err(ConversionError(format!(
                    "request to convert CR to an invalid group/version: {desired}"
                )));
            }
            if !self.is_valid(from) {
                return Err(ConversionError(if objects.len() == 1 {
                    format!("request to convert CR from an invalid group/version: {from}")
                } else {
                    format!(
                        "request to convert CR list failed, list index {i} has invalid group/version: {from}"
                    )
                }));
            }
            pending.push(i);
        }
        if pending.is_empty() {
            return Ok(objects);
        }
        match &self.strategy {
            Strategy::None => {
                for &i in &pending {
                    if let Some(map) = objects[i].as_object_mut() {
                        map.insert("apiVersion".into(), Value::String(desired.clone()));
                    }
                }
            }
            Strategy::Webhook(webhook) => {
                for chunk in pending.chunks(MAX_OBJECTS_PER_REVIEW) {
                    let originals: Vec<Value> = chunk.iter().map(|&i| objects[i].clone()).collect();
                    let from = str_at(&originals[0], "/apiVersion");
                    let label = gvk_string(from, str_at(&originals[0], "/kind"));
                    let from_version = split_api_version(from).1.to_string();
                    let started = std::time::Instant::now();
                    let result = webhook
                        .convert(&originals, &desired, &label, objects.len() > 1)
                        .await;
                    if from_version != version {
                        metrics::observe_crd(
                            webhook.crd_name(),
                            &from_version,
                            version,
                            result.is_ok(),
                            started.elapsed(),
                        );
                    }
                    for (&i, converted) in chunk.iter().zip(result?) {
                        objects[i] = converted;
                    }
                }
            }
        }
        if let Some(schema) = self.schemas.get(version) {
            for &i in &pending {
                schema.prune(&mut objects[i]);
            }
        }
        Ok(objects)
    }
}

#[cfg(test)]
mod tests;
