//! Plugins kube-apiserver 1.35 accepts but keeps inactive behind feature gates that are off by
//! default: enabling one is accepted, logs a warning, and changes nothing, as upstream.

use std::sync::Arc;

use apiserver::admission::{Operation, Plugin};
use async_trait::async_trait;

/// A plugin that handles nothing.
pub struct Inactive {
    name: &'static str,
}

/// Builds the inactive plugin `name`, logging why it does nothing.
pub fn inactive(name: &'static str, gate: &str) -> Arc<dyn Plugin> {
    tracing::warn!(
        plugin = name,
        "admission plugin {name} is inactive: its feature gate {gate} is off by default in 1.35"
    );
    Arc::new(Inactive { name })
}

#[async_trait]
impl Plugin for Inactive {
    fn name(&self) -> &str {
        self.name
    }

    fn handles(&self, _: Operation) -> bool {
        false
    }
}
