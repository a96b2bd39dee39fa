//! Small utilities shared across the crate.

pub mod duration;
pub mod gojson;
pub mod value;
