//! Custom resources for admission plugins: the informer of a custom resource kind, found
//! through the CRDs (for policies whose `paramKind` is a custom resource, as upstream's
//! dynamic informers serve any served kind).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use apiserver::registry::informer::Informer;
use apiserver::registry::store::Store;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::apis::json::str_at;

/// The served store of a CRD, by CRD name.
pub type StoreOf = Arc<dyn Fn(&str) -> Option<Store> + Send + Sync>;

/// Finds and informs on custom resources by kind.
pub struct CustomResources {
    crds: Informer,
    store_of: StoreOf,
    stop: CancellationToken,
    /// Started informers by CRD uid (a re-created CRD gets new ones).
    started: Mutex<HashMap<String, Informer>>,
}

impl std::fmt::Debug for CustomResources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CustomResources").finish_non_exhaustive()
    }
}

impl CustomResources {
    /// Lookups over the CRD informer `crds` and the served stores of `store_of`; informers
    /// run until `stop`.
    pub fn new(crds: Informer, store_of: StoreOf, stop: CancellationToken) -> Self {
        CustomResources {
            crds,
            store_of,
            stop,
            started: Mutex::default(),
        }
    }

    /// The resources (plurals) of CRDs serving `group` `kind` (upstream's RESTMapper over
    /// custom resources).
    pub fn resources_for_kind(&self, group: &str, kind: &str) -> Vec<String> {
        self.crds
            .list()
            .iter()
            .filter(|crd| {
                str_at(crd, "spec.group") == Some(group)
                    && str_at(crd, "spec.names.kind") == Some(kind)
            })
            .filter_map(|crd| str_at(crd, "spec.names.plural").map(str::to_string))
            .collect()
    }

    /// The informer of the custom resources of `group`/`version` `kind` and whether they are
    /// namespaced; `None` unless a CRD serves that version of the kind.
    pub fn informer(&self, group: &str, version: &str, kind: &str) -> Option<(Informer, bool)> {
        let crd = self.crds.list().into_iter().find(|crd| {
            str_at(crd, "spec.group") == Some(group)
                && str_at(crd, "spec.names.kind") == Some(kind)
                && crd
                    .pointer("/spec/versions")
                    .and_then(Value::as_array)
                    .is_some_and(|versions| {
                        versions.iter().any(|v| {
                            str_at(v, "name") == Some(version)
                                && v.get("served").and_then(Value::as_bool) == Some(true)
                        })
                    })
        })?;
        let namespaced = str_at(&crd, "spec.scope") == Some("Namespaced");
        let uid = str_at(&crd, "metadata.uid").unwrap_or_default().to_string();
        let mut started = self.started.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(informer) = started.get(&uid) {
            return Some((informer.clone(), namespaced));
        }
        let store = (self.store_of)(str_at(&crd, "metadata.name")?)?;
        let informer = Informer::new(Arc::new(store));
        informer.start(self.stop.clone());
        started.insert(uid, informer.clone());
        Some((informer, namespaced))
    }
}
