//! DefaultStorageClass (upstream `plugin/pkg/admission/storage/storageclass/setdefault`): a
//! new PersistentVolumeClaim without a class gets the default StorageClass (annotation
//! `storageclass.kubernetes.io/is-default-class: "true"`; the newest if several).

use std::sync::Arc;

use apiserver::admission::{Attributes, Operation, Plugin};
use apiserver::registry::informer::Informer;
use apiserver::status::ApiError;
use async_trait::async_trait;
use serde_json::Value;

use super::default_class::newest_default;
use crate::admission::PluginContext;
use crate::apis::json::{get, str_at};

/// The plugin's name.
pub const NAME: &str = "DefaultStorageClass";

/// The annotations marking the default StorageClass (GA and beta).
const DEFAULT_ANNOTATIONS: [&str; 2] = [
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
];
/// The class annotation claims had before `spec.storageClassName`.
pub const BETA_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

/// The DefaultStorageClass plugin.
pub struct DefaultStorageClass {
    classes: Informer,
}

/// Builds the plugin over the StorageClass informer.
pub fn new(ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    let classes = ctx
        .informers
        .informer("storage.k8s.io", "storageclasses")
        .ok_or("DefaultStorageClass needs the storageclasses resource")?;
    Ok(Arc::new(DefaultStorageClass { classes }))
}

/// Whether the claim names a class (an empty name counts: it asks for no class).
fn has_class(pvc: &Value) -> bool {
    get(pvc, "spec.storageClassName").is_some_and(|c| !c.is_null())
        || get(pvc, "metadata.annotations")
            .and_then(|a| a.get(BETA_CLASS_ANNOTATION))
            .is_some()
}

#[async_trait]
impl Plugin for DefaultStorageClass {
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
        if !attrs.resource.group.is_empty()
            || attrs.resource.resource != "persistentvolumeclaims"
            || !attrs.subresource.is_empty()
        {
            return Ok(());
        }
        let Some(pvc) = attrs.object.as_mut() else {
            return Ok(());
        };
        if has_class(pvc) {
            return Ok(());
        }
        let Some(class) = newest_default(self.classes.list(), &DEFAULT_ANNOTATIONS) else {
            return Ok(());
        };
        let name = str_at(&class, "metadata.name").unwrap_or_default();
        if let Some(spec) = pvc.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("storageClassName".into(), Value::String(name.to_string()));
        }
        Ok(())
    }
}
