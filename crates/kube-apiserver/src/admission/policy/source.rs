//! The policies and bindings a plugin evaluates, kept current by informers (upstream
//! `policy/generic/policy_source.go`): each policy compiled once per change, each binding
//! attached to the policy it names.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use apiserver::registry::informer::{Informer, InformerEvent};
use serde_json::Value;

use super::compiled::CompiledPolicy;
use crate::apis::json::str_at;

/// How long a request waits for the informers' first list.
const SYNC_WAIT: Duration = Duration::from_secs(1);

#[derive(Default)]
struct State {
    policies: BTreeMap<String, Arc<CompiledPolicy>>,
    bindings: BTreeMap<String, Arc<Value>>,
}

/// A policy with the bindings that name it (sorted by name).
pub type Hook = (Arc<CompiledPolicy>, Vec<Arc<Value>>);

/// Policies and bindings of one plugin.
#[derive(Clone)]
pub struct PolicySource {
    state: Arc<RwLock<State>>,
    policies: Informer,
    bindings: Informer,
}

impl std::fmt::Debug for PolicySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state.read().unwrap_or_else(|e| e.into_inner());
        f.debug_struct("PolicySource")
            .field("policies", &state.policies.len())
            .field("bindings", &state.bindings.len())
            .finish()
    }
}

fn name_of(obj: &Value) -> String {
    str_at(obj, "metadata.name").unwrap_or_default().to_string()
}

impl PolicySource {
    /// Follows `policies` and `bindings` (informers over the policy and binding resources).
    pub fn new(policies: Informer, bindings: Informer) -> Self {
        let state: Arc<RwLock<State>> = Arc::default();
        let s = state.clone();
        policies.add_handler(Arc::new(move |event: &InformerEvent| {
            let mut state = s.write().unwrap_or_else(|e| e.into_inner());
            match event {
                InformerEvent::Deleted(obj) => {
                    state.policies.remove(&name_of(obj));
                }
                InformerEvent::Added(obj) | InformerEvent::Modified { new: obj, .. } => {
                    let compiled = CompiledPolicy::compile(obj.clone());
                    state.policies.insert(name_of(obj), Arc::new(compiled));
                }
            }
        }));
        let s = state.clone();
        bindings.add_handler(Arc::new(move |event: &InformerEvent| {
            let mut state = s.write().unwrap_or_else(|e| e.into_inner());
            match event {
                InformerEvent::Deleted(obj) => {
                    state.bindings.remove(&name_of(obj));
                }
                InformerEvent::Added(obj) | InformerEvent::Modified { new: obj, .. } => {
                    state.bindings.insert(name_of(obj), obj.clone());
                }
            }
        }));
        PolicySource {
            state,
            policies,
            bindings,
        }
    }

    /// Waits (at most a second) for the first lists; whether both are loaded.
    pub async fn wait_synced(&self) -> bool {
        if self.policies.has_synced() && self.bindings.has_synced() {
            return true;
        }
        tokio::time::timeout(SYNC_WAIT, async {
            self.policies.wait_synced().await;
            self.bindings.wait_synced().await;
        })
        .await
        .is_ok()
    }

    /// Whether there is no binding at all (the common case: nothing to evaluate).
    pub fn is_empty(&self) -> bool {
        self.state
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .bindings
            .is_empty()
    }

    /// Every policy that has bindings, with them, in name order.
    pub fn hooks(&self) -> Vec<Hook> {
        let state = self.state.read().unwrap_or_else(|e| e.into_inner());
        let mut by_policy: BTreeMap<&str, Vec<Arc<Value>>> = BTreeMap::new();
        for binding in state.bindings.values() {
            let policy = str_at(binding, "spec.policyName").unwrap_or_default();
            by_policy.entry(policy).or_default().push(binding.clone());
        }
        by_policy
            .into_iter()
            .filter_map(|(name, bindings)| state.policies.get(name).map(|p| (p.clone(), bindings)))
            .collect()
    }
}
