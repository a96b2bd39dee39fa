//! The LimitRanger admission plugin (upstream `plugin/pkg/admission/limitranger`): pods get
//! the container defaults of their namespace's LimitRanges when created, and pods and
//! persistent volume claims are checked against their min, max and ratio constraints. The
//! ranges come from the shared informer.

use apiserver::admission::{Attributes, Operation, Plugin, forbidden};
use apiserver::registry::informer::Informer;
use apiserver::status::ApiError;
use async_trait::async_trait;
use serde_json::Value;

use super::limits;

/// The plugin's name.
pub const NAME: &str = "LimitRanger";

/// The LimitRanger plugin.
pub struct LimitRanger {
    ranges: Informer,
}

impl LimitRanger {
    /// The plugin over the LimitRange informer.
    pub fn new(ranges: Informer) -> Self {
        LimitRanger { ranges }
    }

    /// The LimitRanges of `namespace`, by name.
    fn ranges_in(&self, namespace: &str) -> Vec<std::sync::Arc<Value>> {
        let mut out: Vec<_> = self
            .ranges
            .list()
            .into_iter()
            .filter(|r| r.pointer("/metadata/namespace").and_then(Value::as_str) == Some(namespace))
            .collect();
        out.sort_by(|a, b| {
            let name = |v: &Value| {
                v.pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            };
            name(a).cmp(&name(b))
        });
        out
    }
}

/// Pods and claims, not their subresources, and not pod updates (containers are immutable);
/// objects being deleted are left alone (upstream `SupportsAttributes` and `runLimitFunc`).
fn supports(attrs: &Attributes) -> Option<&'static str> {
    if !attrs.subresource.is_empty() || !attrs.kind.group.is_empty() {
        return None;
    }
    let deleting = attrs.old_object.as_ref().is_some_and(|o| {
        o.pointer("/metadata/deletionTimestamp")
            .is_some_and(|t| !t.is_null())
    });
    if deleting {
        return None;
    }
    match attrs.kind.kind.as_str() {
        "Pod" if attrs.operation == Operation::Update => None,
        "Pod" => Some("pods"),
        "PersistentVolumeClaim" => Some("persistentvolumeclaims"),
        _ => None,
    }
}

#[async_trait]
impl Plugin for LimitRanger {
    fn name(&self) -> &str {
        NAME
    }

    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }

    fn mutates(&self) -> bool {
        true
    }

    fn validates(&self) -> bool {
        true
    }

    async fn admit(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
        if supports(attrs) != Some("pods") {
            return Ok(());
        }
        let ranges = self.ranges_in(&attrs.namespace);
        if let Some(pod) = attrs.object.as_mut() {
            for range in &ranges {
                limits::apply_defaults(pod, range);
            }
        }
        Ok(())
    }

    async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError> {
        let Some(resource) = supports(attrs) else {
            return Ok(());
        };
        let Some(object) = attrs.object.as_ref() else {
            return Ok(());
        };
        for range in self.ranges_in(&attrs.namespace) {
            let checked = if resource == "pods" {
                limits::validate_pod(&range, object, attrs.old_object.as_ref())
            } else {
                limits::validate_claim(&range, object, attrs.old_object.as_ref())
            };
            checked.map_err(|message| forbidden(attrs, &message))?;
        }
        Ok(())
    }
}
