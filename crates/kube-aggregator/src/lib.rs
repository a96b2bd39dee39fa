//! The API aggregation layer: the `apiregistration.k8s.io` API, proxying of remote APIServices,
//! and the generic server at the front of kube-apiserver's chain (the Rust analogue of
//! k8s.io/kube-aggregator).
//!
//! [`install`] puts it on the aggregator's generic server: the APIService storage, and
//! post-start hooks running the [`controller::Controller`] (autoregistration of local
//! APIServices, proxy routes, availability, discovery merge).

#![warn(missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use apiserver::filters::HttpService;
use apiserver::registry::SharedStrategy;
use apiserver::registry::rest::RestStorage;
use apiserver::registry::store::{StatusStore, Store, attrs_func};
use apiserver::server::GenericApiServer;
use apiserver::server::apis::{ApiGroupInfo, ApiGroupVersion};
use apiserver::server::healthz::named_check;
use apiserver::server::hooks::PostStartHookFn;
use apiserver::storage::Storage;
use apiserver::storage::cacher::{CacherConfig, decorated_storage};
use tokio_util::sync::CancellationToken;

pub mod age;
pub mod apiservice;
pub mod controller;
pub mod discovery;
pub mod openapi;
pub mod priorities;
pub mod proxy;
pub mod resolver;
pub mod transport;

pub use apiservice::ApiServiceStrategy;
pub use controller::{Controller, ControllerOptions, LocalApis};
pub use openapi::OpenApiAggregator;
pub use resolver::ServiceResolver;
pub use transport::ProxyClientCertFiles;

/// What the aggregator needs from the rest of kube-apiserver.
pub struct AggregatorConfig {
    /// The storage APIServices are kept in.
    pub storage: Arc<dyn Storage>,
    /// The key prefix (`--etcd-prefix`, e.g. `/registry`); APIServices live under
    /// `<prefix>/apiregistration.k8s.io/apiservices`.
    pub prefix: String,
    /// The Service storage (to resolve `spec.service`).
    pub services: Arc<dyn RestStorage>,
    /// The Endpoints storage (endpoint checks and `--enable-aggregator-routing`).
    pub endpoints: Option<Arc<dyn RestStorage>>,
    /// `--enable-aggregator-routing`: dial endpoint addresses instead of the cluster IP.
    pub enable_aggregator_routing: bool,
    /// `--aggregator-reject-forwarding-redirect`: redirects from remote servers become 502.
    pub reject_forwarding_redirects: bool,
    /// `--proxy-client-cert-file` / `--proxy-client-key-file`.
    pub proxy_client_cert: Option<ProxyClientCertFiles>,
    /// Where the local group-versions come from.
    pub local: LocalApis,
    /// How often remote APIServices are re-checked (upstream: 30 s).
    pub resync_interval: Duration,
    /// The unprotected handler of the next server of the chain, whose OpenAPI documents the
    /// aggregator serves merged with the remote ones; `None` leaves OpenAPI to the delegates.
    pub openapi_delegate: Option<HttpService>,
}

/// Why the aggregator could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// Installing the API group failed.
    #[error(transparent)]
    Api(#[from] apiserver::server::apis::InstallError),
    /// Registering hooks or checks failed.
    #[error(transparent)]
    Server(#[from] apiserver::server::genericapiserver::NewServerError),
}

/// The post-start hooks the aggregator registers (upstream's names).
pub const HOOKS: [&str; 8] = [
    "start-kube-aggregator-informers",
    "apiservice-registration-controller",
    "apiservice-status-local-available-controller",
    "apiservice-status-remote-available-controller",
    "apiservice-discovery-controller",
    "kube-apiserver-autoregistration",
    "apiservice-openapi-controller",
    "apiservice-openapiv3-controller",
];

fn waiting_hook(signal: CancellationToken) -> PostStartHookFn {
    Arc::new(move |ctx| {
        let signal = signal.clone();
        Box::pin(async move {
            tokio::select! {
                _ = signal.cancelled() => Ok(()),
                _ = ctx.stop.cancelled() => Ok(()),
            }
        })
    })
}

/// Installs the aggregator on `server` (the running server of the chain): the
/// `apiregistration.k8s.io/v1` API, its controllers as post-start hooks, and the
/// `autoregister-completion` health check. Returns the controller.
pub fn install(
    server: &GenericApiServer,
    config: AggregatorConfig,
) -> Result<Controller, InstallError> {
    let strategy: SharedStrategy = Arc::new(ApiServiceStrategy::new());
    let root = format!(
        "{}/{}/{}",
        config.prefix.trim_end_matches('/'),
        apiservice::GROUP,
        apiservice::RESOURCE
    );
    let mut cache_config = CacherConfig::new(&format!("{root}/"));
    cache_config.get_attrs = attrs_func(strategy.clone());
    let cached = decorated_storage(
        &config.storage,
        apiservice::GROUP,
        apiservice::RESOURCE,
        true,
        cache_config,
    );
    let store = Store::new(strategy.clone(), cached, &root);
    let version = ApiGroupVersion::new(apiservice::VERSION, vec![Arc::new(store.clone())]).with(
        &format!("{}/status", strategy.info().resource),
        Arc::new(StatusStore::new(&store)),
    );
    server.install_api_groups(&[ApiGroupInfo {
        group: apiservice::GROUP.to_string(),
        versions: vec![version],
    }])?;

    // The aggregator's /apis lists groups by priority, as upstream's does.
    server.handler().api_routes.register(
        "/apis",
        discovery::apis_service(server.discovery_manager().clone()),
    );

    let resolver = ServiceResolver::new(
        config.services,
        config.endpoints,
        config.enable_aggregator_routing,
    );
    let mut local = config.local;
    local
        .own
        .push((apiservice::GROUP.into(), apiservice::VERSION.into()));
    let controller = Controller::new(
        store,
        server.handler().api_routes.clone(),
        server.discovery_manager().clone(),
        resolver,
        local,
        ControllerOptions {
            resync_interval: config.resync_interval,
            proxy_client_cert: config.proxy_client_cert,
            reject_forwarding_redirects: config.reject_forwarding_redirects,
        },
        config
            .openapi_delegate
            .map(|delegate| OpenApiAggregator::new(server.handler().non_api_mux.clone(), delegate)),
    );

    let synced = controller.synced();
    let autoregistered = controller.autoregistered();
    server.add_post_start_hook(
        "start-kube-aggregator-informers",
        Arc::new(|_| Box::pin(async { Ok(()) })),
    )?;
    // The controllers stop with the server, or when the chain is destroyed.
    let shutdown = CancellationToken::new();
    let on_destroy = shutdown.clone();
    server.register_destroy_fn(move || on_destroy.cancel());
    let runner = controller.clone();
    let started = synced.clone();
    server.add_post_start_hook(
        "apiservice-registration-controller",
        Arc::new(move |ctx| {
            let runner = runner.clone();
            let started = started.clone();
            let shutdown = shutdown.clone();
            Box::pin(async move {
                let stop = shutdown.child_token();
                let server_stop = ctx.stop.clone();
                let linked = stop.clone();
                tokio::spawn(async move {
                    tokio::select! {
                        _ = server_stop.cancelled() => linked.cancel(),
                        _ = linked.cancelled() => {}
                    }
                });
                tokio::spawn(runner.clone().run(stop));
                runner.trigger();
                tokio::select! {
                    _ = started.cancelled() => Ok(()),
                    _ = ctx.stop.cancelled() => Ok(()),
                }
            })
        }),
    )?;
    for name in [
        "apiservice-status-local-available-controller",
        "apiservice-status-remote-available-controller",
        "apiservice-discovery-controller",
        "apiservice-openapi-controller",
        "apiservice-openapiv3-controller",
    ] {
        server.add_post_start_hook(name, waiting_hook(synced.clone()))?;
    }
    server.add_post_start_hook(
        "kube-apiserver-autoregistration",
        waiting_hook(autoregistered.clone()),
    )?;
    let (done_a, done_s) = (autoregistered, synced);
    server.add_health_checks(vec![named_check("autoregister-completion", move |_| {
        if done_a.is_cancelled() && done_s.is_cancelled() {
            Ok(())
        } else {
            Err("missing APIService: local APIServices are not registered yet".to_string())
        }
    })])?;
    Ok(controller)
}
