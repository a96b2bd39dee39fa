//! PersistentVolumeClaimResize (upstream `plugin/pkg/admission/storage/persistentvolume/resize`):
//! a claim's storage request may only grow when the claim is bound and its StorageClass has
//! `allowVolumeExpansion: true`.

use std::cmp::Ordering;
use std::sync::Arc;

use apiserver::admission::{Attributes, Operation, Plugin, forbidden};
use apiserver::registry::informer::Informer;
use apiserver::status::ApiError;
use async_trait::async_trait;
use serde_json::Value;

use super::default_storage_class::BETA_CLASS_ANNOTATION;
use super::quantity;
use crate::admission::PluginContext;
use crate::apis::json::{get, str_at};

/// The plugin's name.
pub const NAME: &str = "PersistentVolumeClaimResize";

/// The PersistentVolumeClaimResize plugin.
pub struct PersistentVolumeClaimResize {
    classes: Informer,
}

/// Builds the plugin over the StorageClass informer.
pub fn new(ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    let classes = ctx
        .informers
        .informer("storage.k8s.io", "storageclasses")
        .ok_or("PersistentVolumeClaimResize needs the storageclasses resource")?;
    Ok(Arc::new(PersistentVolumeClaimResize { classes }))
}

/// The claim's class (upstream `GetPersistentVolumeClaimClass`): the beta annotation first,
/// then `spec.storageClassName`.
fn claim_class(pvc: &Value) -> &str {
    get(pvc, "metadata.annotations")
        .and_then(|a| a.get(BETA_CLASS_ANNOTATION))
        .and_then(Value::as_str)
        .or_else(|| str_at(pvc, "spec.storageClassName"))
        .unwrap_or_default()
}

fn storage_request(pvc: &Value) -> &str {
    get(pvc, "spec.resources.requests")
        .and_then(|r| r.get("storage"))
        .and_then(Value::as_str)
        .unwrap_or("0")
}

impl PersistentVolumeClaimResize {
    fn allows_resize(&self, new: &Value, old: &Value) -> bool {
        let class = claim_class(new);
        if class.is_empty() || class != claim_class(old) {
            return false;
        }
        self.classes
            .get("", class)
            .and_then(|c| get(&c, "allowVolumeExpansion").and_then(Value::as_bool))
            .unwrap_or(false)
    }
}

#[async_trait]
impl Plugin for PersistentVolumeClaimResize {
    fn name(&self) -> &str {
        NAME
    }

    fn handles(&self, op: Operation) -> bool {
        op == Operation::Update
    }

    fn validates(&self) -> bool {
        true
    }

    async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError> {
        if !attrs.resource.group.is_empty()
            || attrs.resource.resource != "persistentvolumeclaims"
            || !attrs.subresource.is_empty()
        {
            return Ok(());
        }
        let (Some(new), Some(old)) = (attrs.object.as_ref(), attrs.old_object.as_ref()) else {
            return Ok(());
        };
        let grows = quantity::compare(storage_request(new), storage_request(old))
            == Some(Ordering::Greater);
        if !grows {
            return Ok(());
        }
        if str_at(old, "status.phase") != Some("Bound") {
            return Err(forbidden(
                attrs,
                "Only bound persistent volume claims can be expanded",
            ));
        }
        if !self.allows_resize(new, old) {
            return Err(forbidden(
                attrs,
                "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize",
            ));
        }
        Ok(())
    }
}
