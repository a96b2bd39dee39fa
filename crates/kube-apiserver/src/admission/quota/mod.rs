//! ResourceQuota and LimitRanger.
pub mod check;
pub mod config;
pub mod evaluator;
pub mod limits;
pub mod quantity;
pub mod resources;
pub mod status;
