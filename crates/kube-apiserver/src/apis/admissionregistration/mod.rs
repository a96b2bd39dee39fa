//! admissionregistration.k8s.io: the webhook configurations and the admission policies with
//! their bindings.

use super::ResourceDef;

pub mod policies;
pub mod webhooks;

/// admissionregistration.k8s.io/v1 resources.
pub fn resources_v1() -> Vec<ResourceDef> {
    let mut out = webhooks::resources();
    out.extend(policies::resources());
    out
}

/// admissionregistration.k8s.io/v1beta1 resources (served only when enabled).
pub fn resources_v1beta1() -> Vec<ResourceDef> {
    policies::resources_v1beta1()
}
