//! The server's shared informers: one [`Informer`] per resource, created on first use and
//! started at once, shared by every controller and authorizer that needs the current objects
//! of a resource without a storage read (client-go's `SharedInformerFactory`, in process).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use apiserver::registry::informer::Informer;
use tokio_util::sync::CancellationToken;

use crate::install::Stores;

/// Informers over the server's stores, stopped together.
#[derive(Clone)]
pub struct SharedInformers {
    stores: Arc<Stores>,
    started: Arc<Mutex<BTreeMap<(String, String), Informer>>>,
    stop: CancellationToken,
}

impl std::fmt::Debug for SharedInformers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let started = self.started.lock().map(|m| m.len()).unwrap_or(0);
        f.debug_struct("SharedInformers")
            .field("started", &started)
            .finish()
    }
}

impl SharedInformers {
    /// Informers over `stores`, all stopped when `stop` fires.
    pub fn new(stores: Stores, stop: CancellationToken) -> Self {
        SharedInformers {
            stores: Arc::new(stores),
            started: Arc::default(),
            stop,
        }
    }

    /// The informer of `group`/`resource` (empty group for core), started on first use;
    /// `None` when the server has no such resource.
    pub fn informer(&self, group: &str, resource: &str) -> Option<Informer> {
        let key = (group.to_string(), resource.to_string());
        let mut started = self.started.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(informer) = started.get(&key) {
            return Some(informer.clone());
        }
        let store = self.stores.get(&key)?;
        let informer = Informer::new(Arc::new(store.clone()));
        informer.start(self.stop.clone());
        started.insert(key, informer.clone());
        Some(informer)
    }

    /// The stores the informers read from.
    pub fn stores(&self) -> &Stores {
        &self.stores
    }
}
