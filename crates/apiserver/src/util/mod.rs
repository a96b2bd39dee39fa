//! Small utilities shared across the crate.

pub mod duration;
pub mod files;
pub mod gojson;
pub mod gotime;
pub mod mime;
pub mod value;
