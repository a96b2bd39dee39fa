//! AlwaysPullImages (upstream `plugin/pkg/admission/alwayspullimages`): every container of a
//! new pod (and every container an update brings a new image to) gets `imagePullPolicy:
//! Always`, so only nodes with the credentials to pull an image can run it.

use std::collections::BTreeSet;
use std::sync::Arc;

use apiserver::admission::{Attributes, Operation, Plugin, forbidden};
use apiserver::status::ApiError;
use async_trait::async_trait;
use serde_json::Value;

use super::pods::{all_containers, is_pod_request};
use crate::admission::PluginContext;
use crate::apis::json::str_at;

/// The plugin's name.
pub const NAME: &str = "AlwaysPullImages";

const CONTAINER_LISTS: [&str; 3] = ["initContainers", "containers", "ephemeralContainers"];

/// The AlwaysPullImages plugin.
pub struct AlwaysPullImages;

/// Builds the plugin.
pub fn new(_: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(AlwaysPullImages))
}

/// The images of the old pod: an update that brings none new is left alone.
fn images(pod: &Value) -> BTreeSet<&str> {
    all_containers(pod)
        .filter_map(|c| str_at(c, "image"))
        .collect()
}

fn brings_new_images(attrs: &Attributes) -> bool {
    if attrs.operation != Operation::Update {
        return true;
    }
    let (Some(new), Some(old)) = (attrs.object.as_ref(), attrs.old_object.as_ref()) else {
        return true;
    };
    let old_images = images(old);
    images(new).iter().any(|i| !old_images.contains(i))
}

/// Whether the request is one this plugin looks at: pods, and their ephemeral containers.
fn applies(attrs: &Attributes) -> bool {
    is_pod_request(attrs)
        || attrs.resource.group.is_empty()
            && attrs.resource.resource == "pods"
            && attrs.subresource == "ephemeralcontainers"
}

#[async_trait]
impl Plugin for AlwaysPullImages {
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
        if !applies(attrs) || !brings_new_images(attrs) {
            return Ok(());
        }
        let Some(spec) = attrs
            .object
            .as_mut()
            .and_then(|p| p.get_mut("spec"))
            .and_then(Value::as_object_mut)
        else {
            return Ok(());
        };
        for list in CONTAINER_LISTS {
            for container in spec
                .get_mut(list)
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                if let Some(container) = container.as_object_mut() {
                    container.insert("imagePullPolicy".into(), Value::String("Always".into()));
                }
            }
        }
        Ok(())
    }

    async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError> {
        if !applies(attrs) || !brings_new_images(attrs) {
            return Ok(());
        }
        let Some(pod) = attrs.object.as_ref() else {
            return Ok(());
        };
        for list in CONTAINER_LISTS {
            for (i, container) in crate::apis::json::array_at(pod, &format!("spec.{list}"))
                .iter()
                .enumerate()
            {
                let policy = str_at(container, "imagePullPolicy").unwrap_or_default();
                if policy != "Always" {
                    return Err(forbidden(
                        attrs,
                        &format!(
                            "spec.{list}[{i}].imagePullPolicy: Unsupported value: {policy:?}: supported values: \"Always\""
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}
