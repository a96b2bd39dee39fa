//! The legacy core group (`/api/v1`).

use super::ResourceDef;

pub mod config;
pub mod namespaces;
pub mod others;
pub mod pods;
pub mod services;
pub mod templates;
pub mod volumes;
pub mod workloads;

/// core/v1 resources.
pub fn resources() -> Vec<ResourceDef> {
    vec![
        namespaces::namespaces(),
        config::configmaps(),
        config::secrets(),
        others::serviceaccounts(),
        services::services(),
        others::endpoints(),
        others::events(),
        pods::pods(),
        others::nodes(),
        volumes::persistentvolumeclaims(),
        volumes::persistentvolumes(),
        templates::podtemplates(),
        others::limitranges(),
        others::resourcequotas(),
        workloads::replicationcontrollers(),
        templates::bindings(),
        templates::componentstatuses(),
    ]
}
