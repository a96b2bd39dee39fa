//! The built-in admission plugins that are not webhooks, policies, PodSecurity or quota
//! (upstream `plugin/pkg/admission/*` and the generic NamespaceLifecycle): one module per
//! plugin, and a few shared helpers.

use std::sync::Arc;

use apiserver::admission::Plugin;

use super::{PluginContext, Registry};

pub mod always;
pub mod always_pull_images;
pub mod certificate_approval;
pub mod certificate_signing;
pub mod certificate_subject_restriction;
mod certificates;
mod default_class;
pub mod default_ingress_class;
pub mod default_storage_class;
pub mod default_toleration_seconds;
pub mod deny_service_external_ips;
pub mod event_rate_limit;
pub mod extended_resource_toleration;
pub mod inactive;
pub mod limit_pod_hard_anti_affinity_topology;
pub mod namespace_exists;
pub mod namespace_lifecycle;
pub mod node_restriction;
pub mod owner_references_permission_enforcement;
pub mod persistent_volume_claim_resize;
pub mod pod_node_selector;
pub mod pod_toleration_restriction;
mod pods;
pub mod priority;
mod quantity;
pub mod runtime_class;
pub mod service_account;
pub mod storage_object_in_use_protection;
pub mod taint_nodes_by_condition;
mod tolerations;

/// ClusterTrustBundleAttest: inactive while the ClusterTrustBundle API is off (its default).
fn cluster_trust_bundle_attest(_: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(inactive::inactive(
        "ClusterTrustBundleAttest",
        "ClusterTrustBundle",
    ))
}

/// PodTopologyLabels: inactive while its gate is off (its default).
fn pod_topology_labels(_: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(inactive::inactive(
        "PodTopologyLabels",
        "PodTopologyLabelsAdmission",
    ))
}

/// ImagePolicyWebhook asks a webhook about every image; there is no such client here, and a
/// security plugin that silently admitted everything would be worse than none.
fn image_policy_webhook(_: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Err("ImagePolicyWebhook is not supported by this server".into())
}

/// Registers this module's plugins.
pub fn register(plugins: &mut Registry) {
    plugins.register("AlwaysAdmit", always::admit);
    plugins.register("AlwaysDeny", always::deny);
    plugins.register(
        namespace_exists::AUTO_PROVISION,
        namespace_exists::auto_provision,
    );
    plugins.register(namespace_lifecycle::NAME, namespace_lifecycle::new);
    plugins.register(namespace_exists::EXISTS, namespace_exists::exists);
    plugins.register(
        limit_pod_hard_anti_affinity_topology::NAME,
        limit_pod_hard_anti_affinity_topology::new,
    );
    plugins.register(service_account::NAME, service_account::new);
    plugins.register(node_restriction::NAME, node_restriction::new);
    plugins.register(
        taint_nodes_by_condition::NAME,
        taint_nodes_by_condition::new,
    );
    plugins.register(always_pull_images::NAME, always_pull_images::new);
    plugins.register("ImagePolicyWebhook", image_policy_webhook);
    plugins.register(pod_node_selector::NAME, pod_node_selector::new);
    plugins.register(priority::NAME, priority::new);
    plugins.register(
        default_toleration_seconds::NAME,
        default_toleration_seconds::new,
    );
    plugins.register(
        pod_toleration_restriction::NAME,
        pod_toleration_restriction::new,
    );
    plugins.register(event_rate_limit::NAME, event_rate_limit::new);
    plugins.register(
        extended_resource_toleration::NAME,
        extended_resource_toleration::new,
    );
    plugins.register(default_storage_class::NAME, default_storage_class::new);
    plugins.register(
        storage_object_in_use_protection::NAME,
        storage_object_in_use_protection::new,
    );
    plugins.register(
        owner_references_permission_enforcement::NAME,
        owner_references_permission_enforcement::new,
    );
    plugins.register(
        persistent_volume_claim_resize::NAME,
        persistent_volume_claim_resize::new,
    );
    plugins.register(runtime_class::NAME, runtime_class::new);
    plugins.register(certificate_approval::NAME, certificate_approval::new);
    plugins.register(certificate_signing::NAME, certificate_signing::new);
    plugins.register("ClusterTrustBundleAttest", cluster_trust_bundle_attest);
    plugins.register(
        certificate_subject_restriction::NAME,
        certificate_subject_restriction::new,
    );
    plugins.register(default_ingress_class::NAME, default_ingress_class::new);
    plugins.register(
        deny_service_external_ips::NAME,
        deny_service_external_ips::new,
    );
    plugins.register("PodTopologyLabels", pod_topology_labels);
}
