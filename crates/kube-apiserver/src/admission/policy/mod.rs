//! Admission policies.
pub mod cel;
pub mod matching;
