//! Admission policies.
pub mod cel;
pub mod compiled;
pub mod matching;
pub mod mutation;
pub mod params;
pub mod source;
pub mod typecheck;
