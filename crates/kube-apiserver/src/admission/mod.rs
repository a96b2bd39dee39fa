//! Admission plugins (temporary module root until the foundation lands).
pub mod policy;
