//! LimitPodHardAntiAffinityTopology (upstream `plugin/pkg/admission/antiaffinity`): required
//! pod anti-affinity may only use the `kubernetes.io/hostname` topology key.

use std::sync::Arc;

use apiserver::admission::{Attributes, Operation, Plugin, forbidden};
use apiserver::status::ApiError;
use async_trait::async_trait;

use super::pods::is_pod_request;
use crate::admission::PluginContext;
use crate::apis::json::{array_at, str_at};

/// The plugin's name.
pub const NAME: &str = "LimitPodHardAntiAffinityTopology";

const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// The LimitPodHardAntiAffinityTopology plugin.
pub struct LimitPodHardAntiAffinityTopology;

/// Builds the plugin.
pub fn new(_: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(LimitPodHardAntiAffinityTopology))
}

#[async_trait]
impl Plugin for LimitPodHardAntiAffinityTopology {
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
        if !is_pod_request(attrs) {
            return Ok(());
        }
        let Some(pod) = attrs.object.as_ref() else {
            return Ok(());
        };
        let terms = array_at(
            pod,
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution",
        );
        for term in terms {
            let key = str_at(term, "topologyKey").unwrap_or_default();
            if key != HOSTNAME_LABEL {
                return Err(forbidden(
                    attrs,
                    &format!(
                        "affinity.PodAntiAffinity.RequiredDuringScheduling has TopologyKey {key} but only key {HOSTNAME_LABEL} is allowed"
                    ),
                ));
            }
        }
        Ok(())
    }
}
