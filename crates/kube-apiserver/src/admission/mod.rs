//! kube-apiserver's admission (upstream `pkg/kubeapiserver/options/plugins.go` and
//! `admission.go`): every plugin upstream knows, in its fixed order; the default-enabled set;
//! `--enable-admission-plugins`, `--disable-admission-plugins`, the deprecated
//! `--admission-control` and `--admission-control-config-file`; and the chain built from them
//! once the stores exist.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use apiserver::admission::{Chain, Plugin};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::auth::AuthzHandle;
use crate::informers::SharedInformers;
use crate::options::Options;

pub mod cel_authorizer;
pub mod config;
pub mod custom_resources;
pub mod plugins;
pub mod podsecurity;
pub mod policy;
pub mod quota;
pub mod webhook;

/// Every admission plugin upstream registers, in the order they run whatever the order of
/// the flags (upstream `AllOrderedPlugins`).
pub const ALL_ORDERED_PLUGINS: &[&str] = &[
    "AlwaysAdmit",
    "NamespaceAutoProvision",
    "NamespaceLifecycle",
    "NamespaceExists",
    "LimitPodHardAntiAffinityTopology",
    "LimitRanger",
    "ServiceAccount",
    "NodeRestriction",
    "TaintNodesByCondition",
    "AlwaysPullImages",
    "ImagePolicyWebhook",
    "PodSecurity",
    "PodNodeSelector",
    "Priority",
    "DefaultTolerationSeconds",
    "PodTolerationRestriction",
    "EventRateLimit",
    "ExtendedResourceToleration",
    "DefaultStorageClass",
    "StorageObjectInUseProtection",
    "OwnerReferencesPermissionEnforcement",
    "PersistentVolumeClaimResize",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "DenyServiceExternalIPs",
    "PodTopologyLabels",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
    "AlwaysDeny",
];

/// The plugins enabled when no flag says otherwise (upstream's complement of
/// `DefaultOffAdmissionPlugins`).
pub const DEFAULT_ON_PLUGINS: &[&str] = &[
    "NamespaceLifecycle",
    "LimitRanger",
    "ServiceAccount",
    "DefaultStorageClass",
    "PersistentVolumeClaimResize",
    "DefaultTolerationSeconds",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
    "StorageObjectInUseProtection",
    "Priority",
    "TaintNodesByCondition",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "PodSecurity",
    "PodTopologyLabels",
    "MutatingAdmissionPolicy",
    "ValidatingAdmissionPolicy",
];

/// What a plugin's constructor gets.
#[derive(Clone)]
#[allow(dead_code)] // Each field is read by some part of issue 10's plugins.
pub struct PluginContext {
    /// Informers over every built-in store (never a storage read per request).
    pub informers: SharedInformers,
    /// The authorizer (for plugins that check permissions), set before the chain runs.
    pub authz: AuthzHandle,
    /// The plugin's configuration from `--admission-control-config-file` (the file of `path`,
    /// or the inline `configuration`), as JSON; `None` when the file names none.
    pub config: Option<Value>,
    /// The directory of the admission configuration file, against which relative paths in a
    /// plugin's configuration resolve (upstream resolves `kubeConfigFile` this way).
    pub config_dir: Option<PathBuf>,
    /// Resolves `service` references to a host and port as the aggregator does.
    pub service_resolver: Option<kube_aggregator::ServiceResolver>,
    /// `--proxy-client-cert-file` and `--proxy-client-key-file`: the client identity for
    /// calls to webhooks.
    pub proxy_client: Option<(PathBuf, PathBuf)>,
    /// All flags.
    pub options: Arc<Options>,
    /// Fires when the server stops (for plugins' background tasks).
    pub stop: CancellationToken,
    /// Custom resources by kind (policy params of custom kinds); `None` in unit tests.
    pub custom_resources: Option<Arc<custom_resources::CustomResources>>,
}

impl std::fmt::Debug for PluginContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginContext")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Builds one plugin; a one-line error fails the start-up.
pub type Constructor = fn(&PluginContext) -> Result<Arc<dyn Plugin>, String>;

/// The plugins this binary implements, by name.
#[derive(Default)]
pub struct Registry {
    constructors: BTreeMap<&'static str, Constructor>,
}

impl Registry {
    /// Registers `name` (one of [`ALL_ORDERED_PLUGINS`]).
    pub fn register(&mut self, name: &'static str, constructor: Constructor) {
        debug_assert!(ALL_ORDERED_PLUGINS.contains(&name), "unknown plugin {name}");
        self.constructors.insert(name, constructor);
    }

    /// The constructor of `name`, if implemented.
    pub fn get(&self, name: &str) -> Option<Constructor> {
        self.constructors.get(name).copied()
    }

    /// Every implemented plugin.
    pub fn all() -> Self {
        let mut registry = Registry::default();
        plugins::register(&mut registry);
        podsecurity::register(&mut registry);
        quota::register(&mut registry);
        policy::register(&mut registry);
        webhook::register(&mut registry);
        registry
    }
}

/// The enabled plugins in upstream's order, from the flags; the flag errors upstream's
/// validation reports, joined.
pub fn enabled_plugins(opts: &Options) -> Result<Vec<&'static str>, String> {
    let known = |name: &str| ALL_ORDERED_PLUGINS.contains(&name);
    let mut errors = Vec::new();
    for name in &opts.enable_admission_plugins {
        if !known(name) {
            errors.push(format!(
                "enable-admission-plugins plugin {name:?} is unknown"
            ));
        }
    }
    for name in &opts.disable_admission_plugins {
        if !known(name) {
            errors.push(format!(
                "disable-admission-plugins plugin {name:?} is unknown"
            ));
        }
    }
    let mut overlap: Vec<&String> = opts
        .enable_admission_plugins
        .iter()
        .filter(|n| opts.disable_admission_plugins.contains(n))
        .collect();
    overlap.sort();
    overlap.dedup();
    if !overlap.is_empty() {
        let list: Vec<&str> = overlap.iter().map(|s| s.as_str()).collect();
        errors.push(format!(
            "[{}] in enable-admission-plugins and disable-admission-plugins overlapped",
            list.join(" ")
        ));
    }
    if !opts.admission_control.is_empty()
        && (!opts.enable_admission_plugins.is_empty() || !opts.disable_admission_plugins.is_empty())
    {
        errors.push(
            "admission-control and enable-admission-plugins/disable-admission-plugins flags are mutually exclusive"
                .to_string(),
        );
    }
    for name in &opts.admission_control {
        if !known(name) {
            errors.push(format!("admission-control plugin {name:?} is unknown"));
        }
    }
    if !errors.is_empty() {
        return Err(errors.join(", "));
    }
    let enabled = |name: &str| {
        if !opts.admission_control.is_empty() {
            return opts.admission_control.iter().any(|n| n == name);
        }
        opts.enable_admission_plugins.iter().any(|n| n == name)
            || (DEFAULT_ON_PLUGINS.contains(&name)
                && !opts.disable_admission_plugins.iter().any(|n| n == name))
    };
    Ok(ALL_ORDERED_PLUGINS
        .iter()
        .copied()
        .filter(|name| enabled(name))
        .collect())
}

/// Builds the chain of the enabled plugins with their configurations. Enabled plugins this
/// binary does not implement are left out (logged).
pub fn build_chain(
    opts: &Options,
    base: &PluginContext,
    registry: &Registry,
) -> Result<Chain, String> {
    let names = enabled_plugins(opts)?;
    let configs = match &opts.admission_control_config_file {
        Some(path) => config::read(path)?,
        None => config::PluginConfigs::default(),
    };
    let mut plugins: Vec<Arc<dyn Plugin>> = Vec::new();
    let mut missing = Vec::new();
    for name in names {
        let Some(constructor) = registry.get(name) else {
            missing.push(name);
            continue;
        };
        let ctx = PluginContext {
            config: configs.plugin(name)?,
            config_dir: configs.dir.clone(),
            ..base.clone()
        };
        plugins.push(constructor(&ctx).map_err(|e| format!("admission plugin {name:?}: {e}"))?);
    }
    if !missing.is_empty() {
        tracing::warn!(plugins = ?missing, "enabled admission plugins not implemented here are skipped");
    }
    let chain = Chain::new(plugins);
    let mutating: Vec<&str> = chain
        .plugins()
        .iter()
        .filter(|p| p.mutates())
        .map(|p| p.name())
        .collect();
    let validating: Vec<&str> = chain
        .plugins()
        .iter()
        .filter(|p| p.validates())
        .map(|p| p.name())
        .collect();
    tracing::info!(
        "Loaded {} mutating admission controller(s) successfully in the following order: {}.",
        mutating.len(),
        mutating.join(",")
    );
    tracing::info!(
        "Loaded {} validating admission controller(s) successfully in the following order: {}.",
        validating.len(),
        validating.join(",")
    );
    Ok(chain)
}

#[cfg(test)]
mod tests;
