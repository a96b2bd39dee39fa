//! Admission policies.
pub mod cel;
