//! Admission policies.
pub mod cel;
pub mod compiled;
pub mod matching;
pub mod mutation;
pub mod typecheck;
