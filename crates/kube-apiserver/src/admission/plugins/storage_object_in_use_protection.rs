//! StorageObjectInUseProtection (upstream
//! `plugin/pkg/admission/storage/storageobjectinuseprotection`): new PersistentVolumeClaims
//! get the `kubernetes.io/pvc-protection` finalizer and new PersistentVolumes the
//! `kubernetes.io/pv-protection` one, so neither goes while in use.

use std::sync::Arc;

use apiserver::admission::{Attributes, Operation, Plugin};
use apiserver::status::ApiError;
use async_trait::async_trait;
use serde_json::{Value, json};

use crate::admission::PluginContext;

/// The plugin's name.
pub const NAME: &str = "StorageObjectInUseProtection";

/// The finalizer of claims.
const PVC_PROTECTION: &str = "kubernetes.io/pvc-protection";
/// The finalizer of volumes.
const PV_PROTECTION: &str = "kubernetes.io/pv-protection";

/// The StorageObjectInUseProtection plugin.
pub struct StorageObjectInUseProtection;

/// Builds the plugin.
pub fn new(_: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(StorageObjectInUseProtection))
}

fn add_finalizer(obj: &mut Value, finalizer: &str) {
    let Some(obj) = obj.as_object_mut() else {
        return;
    };
    let meta = obj.entry("metadata").or_insert_with(|| json!({}));
    let Some(meta) = meta.as_object_mut() else {
        return;
    };
    let list = meta
        .entry("finalizers")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !list.is_array() {
        *list = Value::Array(Vec::new());
    }
    if let Some(list) = list.as_array_mut()
        && !list.iter().any(|f| f.as_str() == Some(finalizer))
    {
        list.push(Value::String(finalizer.to_string()));
    }
}

#[async_trait]
impl Plugin for StorageObjectInUseProtection {
    fn name(&self) -> &str {
        NAME
    }

    fn handles(&self, op: Operation) -> bool {
        op == Operation::Create
    }

    fn mutates(&self) -> bool {
        true
    }

    async fn admit(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
        if !attrs.resource.group.is_empty() || !attrs.subresource.is_empty() {
            return Ok(());
        }
        let finalizer = match attrs.resource.resource.as_str() {
            "persistentvolumeclaims" => PVC_PROTECTION,
            "persistentvolumes" => PV_PROTECTION,
            _ => return Ok(()),
        };
        if let Some(obj) = attrs.object.as_mut() {
            add_finalizer(obj, finalizer);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_finalizer_is_added_once_after_existing_ones() {
        let mut pvc = json!({"metadata": {"name": "c", "finalizers": ["example.com/keep"]}});
        add_finalizer(&mut pvc, PVC_PROTECTION);
        add_finalizer(&mut pvc, PVC_PROTECTION);
        assert_eq!(
            pvc["metadata"]["finalizers"],
            json!(["example.com/keep", PVC_PROTECTION])
        );
    }
}
