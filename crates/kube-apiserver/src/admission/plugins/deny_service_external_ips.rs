//! DenyServiceExternalIPs (upstream `plugin/pkg/admission/network/denyserviceexternalips`):
//! Services may not gain `spec.externalIPs` (an update may keep or drop the ones it has).

use std::collections::BTreeSet;
use std::sync::Arc;

use apiserver::admission::{Attributes, Operation, Plugin, forbidden};
use apiserver::status::ApiError;
use async_trait::async_trait;
use serde_json::Value;

use crate::admission::PluginContext;
use crate::apis::json::array_at;

/// The plugin's name.
pub const NAME: &str = "DenyServiceExternalIPs";

/// The DenyServiceExternalIPs plugin.
pub struct DenyServiceExternalIps;

/// Builds the plugin.
pub fn new(_: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(DenyServiceExternalIps))
}

fn external_ips(service: Option<&Value>) -> BTreeSet<&str> {
    service
        .map(|s| array_at(s, "spec.externalIPs"))
        .unwrap_or_default()
        .iter()
        .filter_map(Value::as_str)
        .collect()
}

#[async_trait]
impl Plugin for DenyServiceExternalIps {
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
        if !attrs.resource.group.is_empty()
            || attrs.resource.resource != "services"
            || !attrs.subresource.is_empty()
        {
            return Ok(());
        }
        let new = external_ips(attrs.object.as_ref());
        let old = external_ips(attrs.old_object.as_ref());
        if new.is_subset(&old) {
            return Ok(());
        }
        Err(forbidden(
            attrs,
            "externalIPs are denied by the DenyServiceExternalIPs admission controller",
        ))
    }
}
