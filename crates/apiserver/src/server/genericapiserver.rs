//! `GenericApiServer`: one generic server of a delegation chain, built from a
//! [`CompletedConfig`] by [`CompletedConfig::new`]; [`GenericApiServer::prepare_run`] installs
//! the health endpoints and [`PreparedGenericApiServer::run`] serves until stopped.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use crate::body::go_not_found;
use crate::filters::max_inflight::MaxInFlight;
use crate::filters::{HttpService, service_fn};
use crate::metrics::RequestKind;
use crate::server::config::CompletedConfig;
use crate::server::delegation::DelegationTarget;
use crate::server::handler::ApiServerHandler;
use crate::server::healthz::{self, HealthError, HealthRegistry, SharedHealthChecker};
use crate::server::hooks::{
    HookError, PostStartHookEntry, PostStartHookFn, PostStartHooks, PreShutdownHookFn,
    PreShutdownHooks,
};
use crate::server::lifecycle::{LifecycleSignals, Signal};
use crate::server::routes;
use crate::server::serving::SecureServingInfo;

/// Errors of [`CompletedConfig::new`] and of registrations on a server.
#[derive(Debug, thiserror::Error)]
pub enum NewServerError {
    /// A hook could not be registered.
    #[error(transparent)]
    Hook(#[from] HookError),
    /// A health check could not be registered.
    #[error(transparent)]
    Health(#[from] HealthError),
    /// A mux-and-discovery-complete signal name was used twice.
    #[error("{0} already registered")]
    DuplicateSignal(String),
    /// A route could not be installed.
    #[error("{0}")]
    Route(String),
}

/// One generic API server. Cloning shares it (a chain keeps using a server after handing it to
/// the server that delegates to it).
#[derive(Clone)]
pub struct GenericApiServer {
    pub(crate) inner: Arc<ServerInner>,
}

pub(crate) struct ServerInner {
    pub(crate) name: String,
    pub(crate) config: CompletedConfig,
    pub(crate) handler: ApiServerHandler,
    pub(crate) post_start_hooks: PostStartHooks,
    pub(crate) pre_shutdown_hooks: PreShutdownHooks,
    pub(crate) healthz: HealthRegistry,
    pub(crate) livez: HealthRegistry,
    pub(crate) readyz: HealthRegistry,
    pub(crate) mux_complete_signals: Mutex<BTreeMap<String, Signal>>,
    pub(crate) destroy_fns: Mutex<Vec<Box<dyn FnOnce() + Send>>>,
    pub(crate) destroyed: AtomicBool,
    pub(crate) prepared: AtomicBool,
    pub(crate) delegate: Arc<dyn DelegationTarget>,
    pub(crate) secure_serving: Mutex<Option<SecureServingInfo>>,
    pub(crate) apis: crate::server::apis::ApisState,
}

impl CompletedConfig {
    /// Builds a generic server named `name` that delegates unknown paths to `delegate`
    /// (upstream `completedConfig.New`; the name is kept so upstream's sequence reads the same).
    #[allow(clippy::new_ret_no_self)]
    pub fn new(
        mut self,
        name: &str,
        delegate: Arc<dyn DelegationTarget>,
    ) -> Result<GenericApiServer, NewServerError> {
        let not_found: HttpService = match delegate.unprotected_handler() {
            Some(handler) => handler,
            None => service_fn(|_req| async { go_not_found() }),
        };
        let index_not_found = delegate.unprotected_handler().is_none() && self.enable_index;
        let chain_builder = self.build_handler_chain.clone();
        let handler =
            ApiServerHandler::new(name, not_found, |director| chain_builder(director, &self));
        let secure_serving = self.config.secure_serving.take();
        let server = GenericApiServer {
            inner: Arc::new(ServerInner {
                name: name.to_string(),
                handler,
                post_start_hooks: PostStartHooks::default(),
                pre_shutdown_hooks: PreShutdownHooks::default(),
                healthz: HealthRegistry::new("/healthz"),
                livez: HealthRegistry::new("/livez"),
                readyz: HealthRegistry::new("/readyz"),
                mux_complete_signals: Mutex::default(),
                destroy_fns: Mutex::default(),
                destroyed: AtomicBool::new(false),
                prepared: AtomicBool::new(false),
                delegate: delegate.clone(),
                secure_serving: Mutex::new(secure_serving),
                apis: Default::default(),
                config: self,
            }),
        };
        let inner = &server.inner;
        inner
            .healthz
            .add_checks(inner.config.healthz_checks.clone())?;
        inner.livez.add_checks(inner.config.livez_checks.clone())?;
        inner
            .readyz
            .add_checks(inner.config.readyz_checks.clone())?;

        // Hooks of the delegate are copied as they are: their health checks come along with
        // the delegate's health checks below, and share the same "done" token.
        for (hook_name, entry) in delegate.post_start_hooks() {
            inner.post_start_hooks.add_entry(&hook_name, entry)?;
        }
        for (hook_name, hook) in delegate.pre_shutdown_hooks() {
            inner.pre_shutdown_hooks.add(&hook_name, hook)?;
        }
        for (hook_name, hook) in inner.config.post_start_hooks.clone() {
            server.add_post_start_hook(&hook_name, hook)?;
        }
        for (signal_name, signal) in delegate.mux_and_discovery_complete_signals() {
            server.register_mux_and_discovery_complete_signal(&signal_name, signal)?;
        }
        if inner.config.max_requests_in_flight > 0
            || inner.config.max_mutating_requests_in_flight > 0
        {
            // A delegate with in-flight limits registered this hook already (upstream checks
            // `isPostStartHookRegistered`); registering it twice would fail `New`.
            if !server.is_post_start_hook_registered(MAX_IN_FLIGHT_HOOK) {
                server.add_post_start_hook(
                    MAX_IN_FLIGHT_HOOK,
                    max_in_flight_hook(inner.config.max_in_flight.clone()),
                )?;
            }
        }
        let own: Vec<String> = inner
            .config
            .healthz_checks
            .iter()
            .map(|c| c.name().to_string())
            .collect();
        let delegate_checks: Vec<SharedHealthChecker> = delegate
            .healthz_checks()
            .into_iter()
            .filter(|c| !own.iter().any(|n| n == c.name()))
            .collect();
        server.add_health_checks(delegate_checks)?;
        server.install_api_routes(index_not_found)?;
        Ok(server)
    }
}

/// The post-start hook of the in-flight limiter's gauges (upstream `max-in-flight-filter`).
const MAX_IN_FLIGHT_HOOK: &str = "max-in-flight-filter";

fn max_in_flight_hook(limiter: MaxInFlight) -> PostStartHookFn {
    // Upstream starts the in-flight watermark maintenance here; ours publishes the current
    // in-flight counts as gauges until the server stops.
    Arc::new(move |ctx| {
        let limiter = limiter.clone();
        Box::pin(async move {
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
                loop {
                    tokio::select! {
                        _ = ctx.stop.cancelled() => return,
                        _ = tick.tick() => {
                            let counts = limiter.in_flight();
                            crate::metrics::set_inflight(RequestKind::ReadOnly, counts.read_only);
                            crate::metrics::set_inflight(RequestKind::Mutating, counts.mutating);
                        }
                    }
                }
            });
            Ok(())
        })
    })
}

impl GenericApiServer {
    /// The server's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The handler (chain, director, API routes, non-API mux).
    pub fn handler(&self) -> &ApiServerHandler {
        &self.inner.handler
    }

    /// The lifecycle signals.
    pub fn lifecycle_signals(&self) -> &LifecycleSignals {
        &self.inner.config.lifecycle_signals
    }

    /// The completed configuration the server was built from.
    pub fn config(&self) -> &CompletedConfig {
        &self.inner.config
    }

    /// Registers a post-start hook and its `poststarthook/<name>` check on healthz, livez
    /// (with the livez grace period) and readyz. Disabled hooks are skipped silently. A name
    /// registered before is an error naming where (upstream `AddPostStartHook`; its
    /// `AddPostStartHookOrDie` exits on that error, and so does the binary).
    #[track_caller]
    pub fn add_post_start_hook(
        &self,
        name: &str,
        hook: PostStartHookFn,
    ) -> Result<(), NewServerError> {
        if name.is_empty() {
            return Err(HookError::MissingName.into());
        }
        if self.inner.config.disabled_post_start_hooks.contains(name) {
            return Ok(());
        }
        let done = CancellationToken::new();
        self.inner.post_start_hooks.add_entry(
            name,
            PostStartHookEntry {
                hook,
                done: done.clone(),
                registered_by: std::panic::Location::caller().to_string(),
            },
        )?;
        let check = healthz::named_check(format!("poststarthook/{name}"), move |_| {
            if done.is_cancelled() {
                Ok(())
            } else {
                Err("not finished".to_string())
            }
        });
        self.inner.healthz.add_checks([check.clone()])?;
        self.inner
            .livez
            .add_delayed_checks(self.inner.config.livez_grace_period, [check.clone()])?;
        self.inner.readyz.add_checks([check])?;
        Ok(())
    }

    /// Whether a post-start hook of that name is registered (upstream
    /// `isPostStartHookRegistered`), for hooks that several servers of a chain may add.
    pub fn is_post_start_hook_registered(&self, name: &str) -> bool {
        self.inner.post_start_hooks.contains(name)
    }

    /// Registers a pre-shutdown hook.
    pub fn add_pre_shutdown_hook(
        &self,
        name: &str,
        hook: PreShutdownHookFn,
    ) -> Result<(), NewServerError> {
        Ok(self.inner.pre_shutdown_hooks.add(name, hook)?)
    }

    /// Adds checks to healthz, livez and readyz.
    pub fn add_health_checks(
        &self,
        checks: Vec<SharedHealthChecker>,
    ) -> Result<(), NewServerError> {
        self.inner.healthz.add_checks(checks.clone())?;
        self.inner.livez.add_checks(checks.clone())?;
        self.inner.readyz.add_checks(checks)?;
        Ok(())
    }

    /// Adds checks to healthz and readyz, not livez (upstream's `addHealthChecksWithoutLivez`).
    /// A server delegating to this one merges them into all three, as upstream's does.
    pub fn add_health_checks_without_livez(
        &self,
        checks: Vec<SharedHealthChecker>,
    ) -> Result<(), NewServerError> {
        self.inner.healthz.add_checks(checks.clone())?;
        self.inner.readyz.add_checks(checks)?;
        Ok(())
    }

    /// Adds checks to readyz only.
    pub fn add_readyz_checks(
        &self,
        checks: Vec<SharedHealthChecker>,
    ) -> Result<(), NewServerError> {
        Ok(self.inner.readyz.add_checks(checks)?)
    }

    /// Adds checks to livez only, reporting success for `delay` after registration.
    pub fn add_livez_checks(
        &self,
        delay: std::time::Duration,
        checks: Vec<SharedHealthChecker>,
    ) -> Result<(), NewServerError> {
        Ok(self.inner.livez.add_delayed_checks(delay, checks)?)
    }

    /// Registers a signal that must fire before MuxAndDiscoveryComplete.
    pub fn register_mux_and_discovery_complete_signal(
        &self,
        name: &str,
        signal: Signal,
    ) -> Result<(), NewServerError> {
        let mut signals = self
            .inner
            .mux_complete_signals
            .lock()
            .map_err(|_| NewServerError::DuplicateSignal(name.to_string()))?;
        if signals.contains_key(name) {
            return Err(NewServerError::DuplicateSignal(name.to_string()));
        }
        signals.insert(name.to_string(), signal);
        Ok(())
    }

    /// Registers a function run once by `destroy`.
    pub fn register_destroy_fn(&self, f: impl FnOnce() + Send + 'static) {
        if let Ok(mut fns) = self.inner.destroy_fns.lock() {
            fns.push(Box::new(f));
        }
    }

    fn install_api_routes(&self, index_not_found: bool) -> Result<(), NewServerError> {
        let inner = &self.inner;
        let mux = &inner.handler.non_api_mux;
        let listed = {
            let weak = Arc::downgrade(&self.inner);
            move || -> Vec<String> {
                weak.upgrade()
                    .map(|inner| listed_paths(&inner))
                    .unwrap_or_default()
            }
        };
        if inner.config.enable_index {
            routes::index::install_index(mux, Arc::new(listed.clone()));
            if index_not_found {
                mux.set_not_found_handler(routes::index::index_lister_not_found(Arc::new(listed)));
            }
        }
        if inner.config.enable_profiling {
            // `cmdline` is not exposed on the secure port.
            routes::profiling::install_profiling(mux, false);
            if let Some(setter) = &inner.config.verbosity_setter {
                routes::flags::install_debug_flags(
                    mux,
                    BTreeMap::from([("v".to_string(), setter.clone())]),
                );
            }
        }
        if inner.config.enable_metrics {
            mux.handle(
                "/metrics",
                crate::metrics::metrics_handler(inner.config.enable_profiling),
            );
        }
        routes::version::install_version(mux, inner.config.version.clone());
        Ok(())
    }

    /// Installs the health endpoints and the readyz `shutdown` check (upstream `PrepareRun`),
    /// first for the delegates.
    pub fn prepare_run(self) -> PreparedGenericApiServer {
        prepare(&self.inner);
        PreparedGenericApiServer { server: self }
    }
}

fn listed_paths(inner: &ServerInner) -> Vec<String> {
    let mut paths = inner.handler.non_api_mux.listed_paths();
    paths.extend(inner.handler.api_routes.roots());
    paths.extend(inner.delegate.listed_paths());
    paths.sort();
    paths.dedup();
    paths
}

fn prepare(inner: &Arc<ServerInner>) {
    if inner.prepared.swap(true, Ordering::SeqCst) {
        return;
    }
    inner.delegate.prepare_run();
    let mux = &inner.handler.non_api_mux;
    healthz::install_handler(mux, "/healthz", &inner.healthz, None);
    healthz::install_handler(mux, "/livez", &inner.livez, None);
    let shutdown_initiated = inner.config.lifecycle_signals.shutdown_initiated.clone();
    // Adding to an uninstalled registry cannot fail.
    let _ = inner
        .readyz
        .add_checks([healthz::named_check("shutdown", move |_| {
            if shutdown_initiated.signaled() {
                Err("process is shutting down".to_string())
            } else {
                Ok(())
            }
        })]);
    let has_been_ready = inner.config.lifecycle_signals.has_been_ready.clone();
    healthz::install_handler(
        mux,
        "/readyz",
        &inner.readyz,
        Some(Box::new(move || {
            has_been_ready.fire();
        })),
    );
}

fn destroy(inner: &ServerInner) {
    if inner.destroyed.swap(true, Ordering::SeqCst) {
        return;
    }
    let fns = inner
        .destroy_fns
        .lock()
        .map(|mut f| std::mem::take(&mut *f))
        .unwrap_or_default();
    for f in fns {
        f();
    }
    inner.delegate.destroy();
}

impl DelegationTarget for GenericApiServer {
    fn unprotected_handler(&self) -> Option<HttpService> {
        Some(self.inner.handler.director.clone())
    }
    fn post_start_hooks(&self) -> BTreeMap<String, PostStartHookEntry> {
        self.inner.post_start_hooks.entries()
    }
    fn pre_shutdown_hooks(&self) -> BTreeMap<String, PreShutdownHookFn> {
        self.inner.pre_shutdown_hooks.entries()
    }
    fn healthz_checks(&self) -> Vec<SharedHealthChecker> {
        self.inner.healthz.checks()
    }
    fn listed_paths(&self) -> Vec<String> {
        listed_paths(&self.inner)
    }
    fn mux_and_discovery_complete_signals(&self) -> BTreeMap<String, Signal> {
        self.inner
            .mux_complete_signals
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default()
    }
    fn prepare_run(&self) {
        prepare(&self.inner);
    }
    fn destroy(&self) {
        destroy(&self.inner);
    }
}

/// A server whose health endpoints are installed, ready to [`run`](PreparedGenericApiServer::run).
pub struct PreparedGenericApiServer {
    pub(crate) server: GenericApiServer,
}

impl PreparedGenericApiServer {
    /// The server.
    pub fn server(&self) -> &GenericApiServer {
        &self.server
    }

    /// Runs `destroy` of the whole chain (idempotent).
    pub fn destroy(&self) {
        destroy(&self.server.inner);
    }
}
