//! Role-based access control (upstream's `plugin/pkg/auth/authorizer/rbac` and
//! `pkg/registry/rbac/validation`): policy rules and their matching, the in-memory policy kept
//! by informers over the four RBAC resources, the rule resolver, the authorizer and the
//! escalation check.

pub mod authorizer;
pub mod covers;
pub mod escalation;
pub mod index;
pub mod resolver;
pub mod rule;

use std::sync::Arc;

use apiserver::registry::informer::{Informer, InformerEvent};

use self::index::{PolicyIndex, PolicyKind};
use self::resolver::RuleResolver;
use crate::informers::SharedInformers;

/// The RBAC group.
pub const GROUP: &str = "rbac.authorization.k8s.io";

/// The RBAC policy of the server: the index of roles and bindings, fed by informers.
pub struct RbacPolicy {
    index: Arc<PolicyIndex>,
    informers: Vec<Informer>,
}

impl RbacPolicy {
    /// Starts following the four RBAC resources through `informers`.
    pub fn start(informers: &SharedInformers) -> Result<Arc<Self>, String> {
        let index = Arc::new(PolicyIndex::new());
        let mut started = Vec::new();
        for (resource, kind) in [
            ("roles", PolicyKind::Role),
            ("clusterroles", PolicyKind::ClusterRole),
            ("rolebindings", PolicyKind::RoleBinding),
            ("clusterrolebindings", PolicyKind::ClusterRoleBinding),
        ] {
            let informer = informers
                .informer(GROUP, resource)
                .ok_or_else(|| format!("RBAC needs the {resource} store"))?;
            let sink = index.clone();
            informer.add_handler(Arc::new(move |event: &InformerEvent| match event {
                InformerEvent::Added(obj) | InformerEvent::Modified { new: obj, .. } => {
                    sink.upsert(kind, obj)
                }
                InformerEvent::Deleted(obj) => sink.delete(kind, obj),
            }));
            started.push(informer);
        }
        Ok(Arc::new(RbacPolicy {
            index,
            informers: started,
        }))
    }

    /// A policy over `index` alone, without informers (for tests).
    #[cfg(test)]
    pub fn from_index(index: Arc<PolicyIndex>) -> Arc<Self> {
        Arc::new(RbacPolicy {
            index,
            informers: Vec::new(),
        })
    }

    /// The rule resolver over this policy.
    pub fn resolver(&self) -> RuleResolver {
        RuleResolver::new(self.index.clone())
    }

    /// Waits until every RBAC object stored at start-up is in the index (at once afterwards).
    pub async fn wait_synced(&self) {
        for informer in &self.informers {
            if !informer.has_synced() {
                informer.wait_synced().await;
            }
        }
    }
}
