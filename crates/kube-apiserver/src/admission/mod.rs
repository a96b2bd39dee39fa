//! TEMP
pub mod quota;
