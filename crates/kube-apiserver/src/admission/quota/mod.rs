//! ResourceQuota and LimitRanger: the admission plugins, the quota arithmetic they share with
//! the resource quota controller (`controllers/resourcequota.rs`), and LimitRange checks.

pub mod check;
pub mod config;
pub mod evaluator;
pub mod limitranger;
pub mod limits;
pub mod plugin;
pub mod resources;
pub mod status;

use std::sync::Arc;

use apiserver::admission::Plugin;
use apiserver::registry::store::StatusStore;

use super::{PluginContext, Registry};

/// Registers this module's plugins.
pub fn register(plugins: &mut Registry) {
    plugins.register(plugin::NAME, resource_quota);
    plugins.register(limitranger::NAME, limit_ranger);
}

fn resource_quota(ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    let limited = config::parse(ctx.config.as_ref())?;
    let store = ctx
        .informers
        .stores()
        .get(&(String::new(), "resourcequotas".to_string()))
        .ok_or("ResourceQuota needs the resourcequotas store")?;
    let quotas = ctx
        .informers
        .informer("", "resourcequotas")
        .ok_or("ResourceQuota needs the resourcequotas informer")?;
    Ok(Arc::new(plugin::ResourceQuota::new(
        quotas,
        StatusStore::new(store),
        limited,
    )))
}

fn limit_ranger(ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    let ranges = ctx
        .informers
        .informer("", "limitranges")
        .ok_or("LimitRanger needs the limitranges informer")?;
    Ok(Arc::new(limitranger::LimitRanger::new(ranges)))
}
