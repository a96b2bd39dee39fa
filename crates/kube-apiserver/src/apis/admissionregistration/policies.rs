//! ValidatingAdmissionPolicy, MutatingAdmissionPolicy and their bindings.

use crate::apis::ResourceDef;

/// The v1 policy resources.
pub fn resources() -> Vec<ResourceDef> {
    Vec::new()
}

/// The v1beta1 policy resources.
pub fn resources_v1beta1() -> Vec<ResourceDef> {
    Vec::new()
}
