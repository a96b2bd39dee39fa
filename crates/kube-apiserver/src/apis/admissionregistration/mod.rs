//! admissionregistration.k8s.io (temporary until the foundation lands).
pub mod policies;
