//! Small utilities shared across the crate.

pub mod cel;
pub mod cel_authorizer;
pub mod duration;
pub mod file_watch;
pub mod files;
pub mod gojson;
pub mod goquote;
pub mod gotime;
pub mod klog;
pub mod mime;
pub mod value;
pub mod webhook;
