//! NamespaceExists and NamespaceAutoProvision (upstream `plugin/pkg/admission/namespace/exists`
//! and `autoprovision`), the older alternatives to NamespaceLifecycle: requests into a
//! namespace that does not exist get 404, or the namespace is created on the first create.

use std::sync::Arc;
use std::time::Duration;

use apiserver::admission::{Attributes, Operation, Plugin, forbidden};
use apiserver::registry::informer::Informer;
use apiserver::registry::rest::{CreateOptions, GetOptions, RequestContext, RestStorage};
use apiserver::registry::store::Store;
use apiserver::status::{ApiError, reason};
use async_trait::async_trait;
use serde_json::json;

use crate::admission::PluginContext;

/// The name of the plugin refusing requests into missing namespaces.
pub const EXISTS: &str = "NamespaceExists";
/// The name of the plugin creating missing namespaces.
pub const AUTO_PROVISION: &str = "NamespaceAutoProvision";

/// How long to wait for the namespace informer's first list.
const READY_WAIT: Duration = Duration::from_secs(10);

/// The namespace informer and store both plugins read.
struct Namespaces {
    informer: Informer,
    store: Store,
}

impl Namespaces {
    fn from(ctx: &PluginContext, plugin: &str) -> Result<Self, String> {
        let missing = format!("{plugin} needs the namespaces resource");
        Ok(Namespaces {
            informer: ctx
                .informers
                .informer("", "namespaces")
                .ok_or_else(|| missing.clone())?,
            store: ctx
                .informers
                .stores()
                .get(&(String::new(), "namespaces".to_string()))
                .cloned()
                .ok_or(missing)?,
        })
    }

    /// Whether the request is one into a namespace.
    fn applies(attrs: &Attributes) -> bool {
        let namespace_kind = attrs.kind.group.is_empty() && attrs.kind.kind == "Namespace";
        !attrs.namespace.is_empty() && !namespace_kind
    }

    async fn ready(&self, attrs: &Attributes) -> Result<(), ApiError> {
        tokio::time::timeout(READY_WAIT, self.informer.wait_synced())
            .await
            .map_err(|_| forbidden(attrs, "not yet ready to handle request"))
    }
}

/// NamespaceExists.
pub struct NamespaceExists(Namespaces);

/// NamespaceAutoProvision.
pub struct NamespaceAutoProvision(Namespaces);

/// Builds NamespaceExists.
pub fn exists(ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(NamespaceExists(Namespaces::from(ctx, EXISTS)?)))
}

/// Builds NamespaceAutoProvision.
pub fn auto_provision(ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(NamespaceAutoProvision(Namespaces::from(
        ctx,
        AUTO_PROVISION,
    )?)))
}

#[async_trait]
impl Plugin for NamespaceExists {
    fn name(&self) -> &str {
        EXISTS
    }

    fn handles(&self, op: Operation) -> bool {
        matches!(
            op,
            Operation::Create | Operation::Update | Operation::Delete
        )
    }

    fn validates(&self) -> bool {
        true
    }

    async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError> {
        if !Namespaces::applies(attrs) {
            return Ok(());
        }
        self.0.ready(attrs).await?;
        if self.0.informer.get("", &attrs.namespace).is_some() {
            return Ok(());
        }
        // The informer may lag behind a namespace created just before.
        self.0
            .store
            .get(
                &RequestContext::default(),
                &attrs.namespace,
                &GetOptions::default(),
            )
            .await
            .map(|_| ())
    }
}

#[async_trait]
impl Plugin for NamespaceAutoProvision {
    fn name(&self) -> &str {
        AUTO_PROVISION
    }

    fn handles(&self, op: Operation) -> bool {
        op == Operation::Create
    }

    fn mutates(&self) -> bool {
        true
    }

    async fn admit(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
        if !Namespaces::applies(attrs) {
            return Ok(());
        }
        self.0.ready(attrs).await?;
        if self.0.informer.get("", &attrs.namespace).is_some() {
            return Ok(());
        }
        let namespace = json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": attrs.namespace},
        });
        match self
            .0
            .store
            .create(
                &RequestContext::default(),
                namespace,
                &CreateOptions::default(),
            )
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.reason() == reason::ALREADY_EXISTS => Ok(()),
            Err(e) => Err(forbidden(attrs, &e.to_string())),
        }
    }
}
