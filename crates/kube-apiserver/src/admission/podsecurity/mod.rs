//! The PodSecurity admission plugin (upstream `plugin/pkg/admission/security/podsecurity` over
//! `k8s.io/pod-security-admission`): the Pod Security Standards enforced, audited and warned
//! per namespace from its `pod-security.kubernetes.io/*` labels, with defaults and exemptions
//! from its `PodSecurityConfiguration`.
//!
//! Namespaces and pods come from the server's informers; a namespace the informer has not seen
//! yet (created a moment ago) is read from its store, as upstream falls back from its lister to
//! a live GET.

use std::collections::BTreeMap;
use std::sync::Arc;

use apiserver::admission::{self as adm, Attributes, Plugin};
use apiserver::registry::informer::Informer;
use apiserver::registry::rest::{GetOptions, RequestContext, RestStorage};
use apiserver::registry::store::Store;
use apiserver::status::ApiError;
use async_trait::async_trait;
use serde_json::Value;

use super::{PluginContext, Registry};

pub mod admission;
pub mod api;
pub mod checks;
pub mod config;
pub mod metrics;
mod namespace_scan;
pub mod pod;

use admission::{Admission, Cluster, Denial, Operation, Request};
use config::{ConfigError, PodSecurityConfig};

/// The plugin's name.
pub const PLUGIN_NAME: &str = "PodSecurity";

/// Registers this module's plugins.
pub fn register(plugins: &mut Registry) {
    plugins.register(PLUGIN_NAME, new_plugin);
}

/// The PodSecurity constructor: reads and validates the configuration, builds the checks and
/// starts the namespace and pod informers.
fn new_plugin(ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    let config = PodSecurityConfig::load(ctx.config.as_ref()).map_err(|e| match e {
        ConfigError::Decode(e) => e,
        ConfigError::Invalid(e) => format!("{PLUGIN_NAME} invalid: {e}"),
    })?;
    let evaluator = checks::Evaluator::new(&checks::default_checks())
        .map_err(|e| format!("could not create PodSecurityRegistry: {e}"))?;
    let namespaces = ctx
        .informers
        .informer("", "namespaces")
        .ok_or("no namespaces resource")?;
    let pods = ctx
        .informers
        .informer("", "pods")
        .ok_or("no pods resource")?;
    let namespace_store = ctx
        .informers
        .stores()
        .get(&(String::new(), "namespaces".to_string()))
        .cloned()
        .ok_or("no namespaces store")?;
    metrics::register();
    Ok(Arc::new(PodSecurity {
        admission: Admission::new(config, evaluator),
        cluster: InformerCluster {
            namespaces,
            pods,
            namespace_store,
        },
    }))
}

/// The plugin: the decisions and where they read the cluster from.
struct PodSecurity {
    admission: Admission,
    cluster: InformerCluster,
}

/// Namespaces and pods from the informers.
struct InformerCluster {
    namespaces: Informer,
    pods: Informer,
    namespace_store: Store,
}

#[async_trait]
impl Cluster for InformerCluster {
    async fn namespace_labels(&self, name: &str) -> Result<BTreeMap<String, String>, String> {
        if let Some(ns) = self.namespaces.get("", name) {
            return Ok(admission::labels_of(&ns));
        }
        let ns = self
            .namespace_store
            .get(&RequestContext::default(), name, &GetOptions::default())
            .await
            .map_err(|e| e.to_string())?;
        Ok(admission::labels_of(&ns))
    }

    fn pods(&self, namespace: &str) -> Vec<Arc<Value>> {
        self.pods
            .list()
            .into_iter()
            .filter(|p| p.pointer("/metadata/namespace").and_then(Value::as_str) == Some(namespace))
            .collect()
    }
}

#[async_trait]
impl Plugin for PodSecurity {
    fn name(&self) -> &str {
        PLUGIN_NAME
    }

    fn handles(&self, operation: adm::Operation) -> bool {
        matches!(operation, adm::Operation::Create | adm::Operation::Update)
    }

    fn validates(&self) -> bool {
        true
    }

    async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError> {
        let operation = match attrs.operation {
            adm::Operation::Create => Operation::Create,
            adm::Operation::Update => Operation::Update,
            adm::Operation::Delete | adm::Operation::Connect => return Ok(()),
        };
        let (group, resource) = (&attrs.resource.group, &attrs.resource.resource);
        if !admission::applies_to(group, resource) {
            return Ok(());
        }
        let name = attrs.reported_name();
        // A namespace's own namespace is itself (upstream's create handler sets it so).
        let namespace = if group.is_empty() && resource == "namespaces" {
            name.as_str()
        } else {
            attrs.namespace.as_str()
        };
        let request = Request {
            operation,
            group,
            resource,
            subresource: &attrs.subresource,
            namespace,
            name: &name,
            object: attrs.object.as_ref(),
            old_object: attrs.old_object.as_ref(),
            user: &attrs.user.name,
        };
        let response = self.admission.validate(&request, &self.cluster).await;
        for warning in &response.warnings {
            attrs.warn(warning);
        }
        for (key, value) in &response.audit_annotations {
            attrs.add_annotation(&format!("{}{key}", api::LABEL_PREFIX), value);
        }
        match response.denial {
            None => Ok(()),
            Some(Denial::Forbidden(message)) => Err(adm::forbidden(attrs, &message)),
            Some(Denial::Invalid(errs)) => Err(ApiError::invalid(
                &attrs.kind.group,
                &attrs.kind.kind,
                &name,
                errs.iter().map(|e| e.to_cause()).collect(),
            )),
            // Upstream keeps the details of the generic Forbidden it starts from.
            Some(Denial::BadRequest(message)) => {
                let mut err = ApiError::bad_request(message);
                err.0.details = adm::forbidden(attrs, "").0.details;
                Err(err)
            }
            Some(Denial::Internal(message)) => Err(ApiError::internal(message)),
        }
    }
}
