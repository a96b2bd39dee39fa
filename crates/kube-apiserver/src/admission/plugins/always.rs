//! AlwaysAdmit and AlwaysDeny (upstream `plugin/pkg/admission/admit` and `deny`, both
//! deprecated): every request admitted, or every write refused.

use std::sync::Arc;

use apiserver::admission::{Attributes, Operation, Plugin, forbidden};
use apiserver::status::ApiError;

use crate::admission::PluginContext;

/// Admits everything.
struct AlwaysAdmit;

#[async_trait::async_trait]
impl Plugin for AlwaysAdmit {
    fn name(&self) -> &str {
        "AlwaysAdmit"
    }
    fn handles(&self, _operation: Operation) -> bool {
        true
    }
    fn mutates(&self) -> bool {
        true
    }
    fn validates(&self) -> bool {
        true
    }
}

/// Refuses every request it sees.
struct AlwaysDeny;

/// Upstream's refusal text.
const DENIED: &str = "admission control is denying all modifications";

#[async_trait::async_trait]
impl Plugin for AlwaysDeny {
    fn name(&self) -> &str {
        "AlwaysDeny"
    }
    fn handles(&self, _operation: Operation) -> bool {
        true
    }
    fn mutates(&self) -> bool {
        true
    }
    fn validates(&self) -> bool {
        true
    }
    async fn admit(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
        Err(forbidden(attrs, DENIED))
    }
    async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError> {
        Err(forbidden(attrs, DENIED))
    }
}

/// The AlwaysAdmit constructor.
pub fn admit(_ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    tracing::warn!(
        "AlwaysAdmit admission controller is deprecated. Please remove this controller from your configuration files and scripts."
    );
    Ok(Arc::new(AlwaysAdmit))
}

/// The AlwaysDeny constructor.
pub fn deny(_ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    tracing::warn!(
        "AlwaysDeny admission controller is deprecated. Please remove this controller from your configuration files and scripts."
    );
    Ok(Arc::new(AlwaysDeny))
}
