//! MutatingWebhookConfiguration and ValidatingWebhookConfiguration.

use crate::apis::ResourceDef;

/// The webhook configuration resources.
pub fn resources() -> Vec<ResourceDef> {
    Vec::new()
}
