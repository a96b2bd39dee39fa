//! The built-in admission plugins that are not webhooks, policies, PodSecurity or quota: one
//! module per plugin.

use super::Registry;

pub mod always;

/// Registers this module's plugins.
pub fn register(plugins: &mut Registry) {
    plugins.register("AlwaysAdmit", always::admit);
    plugins.register("AlwaysDeny", always::deny);
}
