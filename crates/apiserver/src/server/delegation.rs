//! Delegation: a generic server passes paths it does not serve to the next server in the chain
//! (aggregator → kube API → apiextensions → not found), and merges that server's hooks, health
//! checks and mux-complete signals into its own (upstream `DelegationTarget`).

use std::collections::BTreeMap;

use crate::filters::HttpService;
use crate::server::healthz::SharedHealthChecker;
use crate::server::hooks::{PostStartHookEntry, PreShutdownHookFn};
use crate::server::lifecycle::Signal;

/// What a server exposes to the server that delegates to it.
pub trait DelegationTarget: Send + Sync {
    /// The server's director (routing without any filter), used as the delegating server's
    /// not-found handler. `None` for the end of a chain without a custom handler.
    fn unprotected_handler(&self) -> Option<HttpService>;
    /// Post-start hooks to copy into the delegating server.
    fn post_start_hooks(&self) -> BTreeMap<String, PostStartHookEntry>;
    /// Pre-shutdown hooks to copy into the delegating server.
    fn pre_shutdown_hooks(&self) -> BTreeMap<String, PreShutdownHookFn>;
    /// Health checks to merge into the delegating server's healthz, livez and readyz.
    fn healthz_checks(&self) -> Vec<SharedHealthChecker>;
    /// Paths listed at `/`.
    fn listed_paths(&self) -> Vec<String>;
    /// Signals that must fire before MuxAndDiscoveryComplete.
    fn mux_and_discovery_complete_signals(&self) -> BTreeMap<String, Signal>;
    /// Installs what a server installs right before running (recursing down the chain).
    fn prepare_run(&self);
    /// Releases resources (recursing down the chain); idempotent.
    fn destroy(&self);
}

/// The end of a delegation chain (upstream `NewEmptyDelegate` /
/// `NewEmptyDelegateWithCustomHandler`).
#[derive(Clone, Default)]
pub struct EmptyDelegate {
    handler: Option<HttpService>,
}

impl EmptyDelegate {
    /// An empty delegate: unknown paths get the index-lister 404 (or Go's 404).
    pub fn new() -> Self {
        EmptyDelegate { handler: None }
    }

    /// An empty delegate with a custom end-of-chain handler (kube-apiserver uses the
    /// not-found handler that answers 503 before the mux is complete).
    pub fn with_handler(handler: HttpService) -> Self {
        EmptyDelegate {
            handler: Some(handler),
        }
    }
}

impl DelegationTarget for EmptyDelegate {
    fn unprotected_handler(&self) -> Option<HttpService> {
        self.handler.clone()
    }
    fn post_start_hooks(&self) -> BTreeMap<String, PostStartHookEntry> {
        BTreeMap::new()
    }
    fn pre_shutdown_hooks(&self) -> BTreeMap<String, PreShutdownHookFn> {
        BTreeMap::new()
    }
    fn healthz_checks(&self) -> Vec<SharedHealthChecker> {
        Vec::new()
    }
    fn listed_paths(&self) -> Vec<String> {
        Vec::new()
    }
    fn mux_and_discovery_complete_signals(&self) -> BTreeMap<String, Signal> {
        BTreeMap::new()
    }
    fn prepare_run(&self) {}
    fn destroy(&self) {}
}
