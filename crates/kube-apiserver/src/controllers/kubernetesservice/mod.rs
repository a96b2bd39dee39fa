//! The `kubernetes` Service and its endpoints (upstream
//! `pkg/controlplane/controller/kubernetesservice`), run by the `bootstrap-controller`
//! post-start hook and stopped by the `stop-kubernetes-service-controller` pre-shutdown hook:
//! the Service is created on the first address of the service range (and again if deleted);
//! once this server is ready, its advertise address and secure port are added to the
//! Service's Endpoints and EndpointSlice every reconcile interval by the configured
//! [`reconcilers::EndpointReconciler`]; at shutdown, before the delay and the drain, the server
//! takes itself out, so load balancers and in-cluster clients stop sending it requests.

pub mod adapter;
pub mod masterleases;
pub mod reconcilers;

use std::sync::Arc;
use std::time::Duration;

use apiserver::registry::rest::{CreateOptions, GetOptions, RequestContext, RestStorage};
use apiserver::registry::store::Store;
use apiserver::server::hooks::{PostStartHookContext, PostStartHookFn, PreShutdownHookFn};
use apiserver::server::loopback::LoopbackClientConfig;
use apiserver::status::{ApiError, reason};
use apiserver::util::webhook::client::{Backoff, WebhookClient, WebhookError};
use apiserver::util::webhook::kubeconfig::WebhookKubeconfig;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use self::adapter::{EndpointPort, SERVICE_NAME, SERVICE_NAMESPACE};
use self::reconcilers::{EndpointReconciler, TYPES};
use crate::options::Options;

/// The post-start hook that creates the Service and starts reconciling its endpoints.
pub const HOOK_NAME: &str = "bootstrap-controller";
/// The pre-shutdown hook that takes this server out of the endpoints.
pub const PRE_SHUTDOWN_HOOK_NAME: &str = "stop-kubernetes-service-controller";
/// How often readiness is polled before the first reconcile (upstream: 100 ms).
const READY_POLL: Duration = Duration::from_millis(100);
/// The longest wait between attempts to create the Service at start.
const MAX_SERVICE_BACKOFF: Duration = Duration::from_secs(5);

/// Upstream's checks of `--endpoint-reconciler-type`, `--apiserver-count` and the advertise
/// address's family.
pub fn validate_flags(opts: &Options) -> Vec<String> {
    let mut errors = Vec::new();
    if !TYPES.contains(&opts.endpoint_reconciler_type.as_str()) {
        errors.push(format!(
            "Reconciler not implemented: {}",
            opts.endpoint_reconciler_type
        ));
    }
    if let Some(count) = opts.apiserver_count
        && count <= 0
    {
        errors.push(format!(
            "--apiserver-count should be a positive number, but value '{count}' provided"
        ));
    }
    // The service range is IPv4: the endpoints must be too (upstream
    // validatePublicIPServiceClusterIPRangeIPFamilies).
    if let Some(ip) = opts.advertise_address
        && ip.is_ipv6()
        && opts.endpoint_reconciler_type != "none"
    {
        errors.push(format!(
            "service IP family {:?} must match public address family {:?}",
            opts.service_cluster_ip_range,
            ip.to_string()
        ));
    }
    errors
}

/// What the controller keeps.
#[derive(Clone, Debug)]
pub struct Config {
    /// The advertise address (upstream `PublicIP`).
    pub public_ip: String,
    /// The secure port (upstream `PublicServicePort`), the endpoints' port.
    pub public_port: u16,
    /// The Service's cluster IP, the first of the service range.
    pub service_ip: String,
    /// The Service's port (443).
    pub service_port: u16,
    /// How often the endpoints are reconciled.
    pub interval: Duration,
}

/// The controller: shared by its post-start and pre-shutdown hooks.
pub struct Controller {
    config: Config,
    reconciler: Arc<EndpointReconciler>,
    namespaces: Store,
    services: Store,
    /// Ends the reconcile loop (upstream `Stop`).
    stop: CancellationToken,
}

fn context(namespace: &str) -> RequestContext {
    RequestContext {
        namespace: namespace.into(),
        ..Default::default()
    }
}

impl Controller {
    /// A controller over the namespace and service stores.
    pub fn new(
        config: Config,
        reconciler: EndpointReconciler,
        namespaces: Store,
        services: Store,
    ) -> Arc<Self> {
        Arc::new(Controller {
            config,
            reconciler: Arc::new(reconciler),
            namespaces,
            services,
            stop: CancellationToken::new(),
        })
    }

    fn port(&self) -> EndpointPort {
        EndpointPort::https(self.config.public_port)
    }

    /// The `default` namespace, then the Service when missing (upstream
    /// `CreateOrUpdateMasterServiceIfNeeded`; an existing one is not changed).
    async fn ensure_service(&self) -> Result<(), ApiError> {
        let namespace =
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}});
        match self
            .namespaces
            .create(&context(""), namespace, &CreateOptions::default())
            .await
        {
            Ok(_) => {}
            Err(e) if e.reason() == reason::ALREADY_EXISTS => {}
            Err(e) => return Err(e),
        }
        let ctx = context(SERVICE_NAMESPACE);
        match self
            .services
            .get(&ctx, SERVICE_NAME, &GetOptions::default())
            .await
        {
            Ok(_) => return Ok(()),
            Err(e) if e.reason() == reason::NOT_FOUND => {}
            Err(e) => return Err(e),
        }
        let service = json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": SERVICE_NAME,
                "namespace": SERVICE_NAMESPACE,
                "labels": {"component": "apiserver", "provider": "kubernetes"}
            },
            "spec": {
                "type": "ClusterIP",
                "clusterIP": self.config.service_ip,
                "clusterIPs": [self.config.service_ip],
                "ipFamilies": ["IPv4"],
                "ipFamilyPolicy": "SingleStack",
                "sessionAffinity": "None",
                "ports": [{
                    "name": "https",
                    "port": self.config.service_port,
                    "protocol": "TCP",
                    "targetPort": self.config.public_port
                }]
            }
        });
        match self
            .services
            .create(&ctx, service, &CreateOptions::default())
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.reason() == reason::ALREADY_EXISTS => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// One round (upstream `UpdateKubernetesService(false)`): the Service, then this server's
    /// endpoints.
    async fn update_kubernetes_service(&self) {
        if let Err(err) = self.ensure_service().await {
            tracing::error!("unable to sync kubernetes service: {err}");
            return;
        }
        if let Err(err) = self
            .reconciler
            .reconcile(&self.config.public_ip, &self.port(), false)
            .await
        {
            tracing::error!("unable to sync kubernetes service: {err}");
        }
    }

    /// Reconciles every interval until stopped, starting once this server is ready.
    async fn run(self: Arc<Self>, loopback: LoopbackClientConfig, server_stop: CancellationToken) {
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        let (own, server) = (self.stop.clone(), server_stop.clone());
        tokio::spawn(async move {
            tokio::select! {
                _ = own.cancelled() => {}
                _ = server.cancelled() => {}
            }
            stopped.cancel();
        });
        let ready = wait_ready(&loopback, &stop);
        tokio::select! {
            _ = stop.cancelled() => return,
            () = ready => {}
        }
        loop {
            // The interval runs from the start of one round to the next (upstream's
            // NonSlidingUntil).
            let next = tokio::time::Instant::now() + self.config.interval;
            tokio::select! {
                _ = stop.cancelled() => return,
                () = self.update_kubernetes_service() => {}
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                () = tokio::time::sleep_until(next) => {}
            }
        }
    }

    /// `bootstrap-controller`: creates the Service, removes this server's endpoints a previous
    /// run left behind, and starts the reconcile loop.
    pub fn post_start_hook(self: &Arc<Self>) -> PostStartHookFn {
        let controller = self.clone();
        Arc::new(move |ctx: PostStartHookContext| {
            let controller = controller.clone();
            Box::pin(async move {
                // Retried until it succeeds (the hook, and so /readyz, waits for it): storage
                // that is unreachable at start delays readiness instead of failing the server.
                let mut backoff = READY_POLL;
                while let Err(err) = controller.ensure_service().await {
                    tracing::error!("unable to sync kubernetes service: {err}");
                    tokio::select! {
                        _ = ctx.stop.cancelled() => return Ok(()),
                        () = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(MAX_SERVICE_BACKOFF);
                }
                // Out of the endpoints until this server is ready.
                match controller
                    .reconciler
                    .remove(&controller.config.public_ip, &controller.port())
                    .await
                {
                    // Logged whenever removing succeeds, as upstream does (also for the
                    // `none` and `master-count` reconcilers, which have nothing to find).
                    Ok(()) => tracing::error!(
                        "Found stale data, removed previous endpoints on kubernetes service, apiserver didn't exit successfully previously"
                    ),
                    Err(err) if err.is_not_found() => {}
                    Err(err) => {
                        tracing::error!(
                            "Error removing old endpoints from kubernetes service: {err}"
                        )
                    }
                }
                tokio::spawn(controller.run(ctx.loopback, ctx.stop));
                Ok(())
            })
        })
    }

    /// `stop-kubernetes-service-controller`: stops reconciling and takes this server out of
    /// the endpoints, waiting at most two intervals (storage may be unreachable).
    pub fn pre_shutdown_hook(self: &Arc<Self>) -> PreShutdownHookFn {
        let controller = self.clone();
        Arc::new(move || {
            let controller = controller.clone();
            Box::pin(async move {
                controller.stop.cancel();
                tracing::info!("Shutting down kubernetes service endpoint reconciler");
                controller.reconciler.stop_reconciling();
                let port = controller.port();
                let remove = controller
                    .reconciler
                    .remove(&controller.config.public_ip, &port);
                match tokio::time::timeout(2 * controller.config.interval, remove).await {
                    Ok(Ok(())) => {}
                    Ok(Err(err)) => tracing::error!("{err}"),
                    Err(_) => tracing::warn!("RemoveEndpoints() timed out"),
                }
                Ok(())
            })
        })
    }
}

/// The addresses discovery names (upstream kube-apiserver's `DiscoveryAddresses`): the
/// external address for everyone, and the `kubernetes` Service's IP and port for clients inside
/// the service range (pods).
pub fn discovery_addresses(
    external: std::net::SocketAddr,
    service_range: &str,
) -> apiserver::endpoints::discovery::Addresses {
    use apiserver::endpoints::discovery::{Addresses, CidrRule, IpCidr};
    let mut addresses = Addresses::new(external.to_string());
    if let (Ok(cidr), Ok(range)) = (
        service_range.parse::<IpCidr>(),
        crate::registry::service::ServiceRange::parse(service_range),
    ) {
        addresses.cidr_rules.push(CidrRule {
            cidr,
            address: std::net::SocketAddr::from((range.first(), 443)).to_string(),
        });
    }
    addresses
}

/// What [`register`] wires.
pub struct Registration<'a> {
    /// The flags.
    pub opts: &'a Options,
    /// The built-in stores.
    pub stores: &'a crate::install::Stores,
    /// The backend the master leases are kept in, and its key prefix.
    pub storage: Arc<dyn apiserver::storage::Storage>,
    /// `--etcd-prefix`, normalized.
    pub prefix: &'a str,
    /// The advertise address.
    pub advertise: std::net::IpAddr,
    /// The secure port.
    pub port: u16,
    /// The Service's cluster IP.
    pub service_ip: String,
    /// The reconcile interval and the master leases' time to live.
    pub intervals: super::intervals::Intervals,
}

/// Registers `bootstrap-controller` and `stop-kubernetes-service-controller` on `server`, with
/// the reconciler `--endpoint-reconciler-type` names.
pub fn register(
    server: &apiserver::server::GenericApiServer,
    r: Registration<'_>,
) -> Result<(), String> {
    let store = |group: &str, resource: &str| {
        r.stores
            .get(&(group.to_string(), resource.to_string()))
            .cloned()
    };
    let (Some(namespaces), Some(services), Some(endpoints)) = (
        store("", "namespaces"),
        store("", "services"),
        store("", "endpoints"),
    ) else {
        return Err(
            "the bootstrap controller needs the namespaces, services and endpoints storages".into(),
        );
    };
    let adapter =
        adapter::EndpointsAdapter::new(endpoints, store("discovery.k8s.io", "endpointslices"));
    tracing::info!("Using reconciler: {}", r.opts.endpoint_reconciler_type);
    let reconciler = match r.opts.endpoint_reconciler_type.as_str() {
        "master-count" => EndpointReconciler::master_count(
            adapter,
            usize::try_from(r.opts.apiserver_count.unwrap_or(1)).unwrap_or(1),
        ),
        "none" => EndpointReconciler::none(adapter),
        _ => EndpointReconciler::lease(
            adapter,
            masterleases::MasterLeases::new(r.storage, r.prefix, r.intervals.master_lease_ttl),
        ),
    };
    if r.opts.apiserver_count.is_some() {
        tracing::warn!(
            "Flag --apiserver-count has been deprecated, apiserver-count is deprecated and will be removed in a future version."
        );
    }
    let controller = Controller::new(
        Config {
            public_ip: r.advertise.to_string(),
            public_port: r.port,
            service_ip: r.service_ip,
            service_port: 443,
            interval: r.intervals.endpoint_reconciler,
        },
        reconciler,
        namespaces,
        services,
    );
    server
        .add_post_start_hook(HOOK_NAME, controller.post_start_hook())
        .map_err(|e| e.to_string())?;
    server
        .add_pre_shutdown_hook(PRE_SHUTDOWN_HOOK_NAME, controller.pre_shutdown_hook())
        .map_err(|e| e.to_string())
}

/// Polls `/readyz` over loopback until it answers 200 (upstream's `PollImmediateUntil` before
/// the first reconcile), or until `stop`.
async fn wait_ready(loopback: &LoopbackClientConfig, stop: &CancellationToken) {
    let config = WebhookKubeconfig {
        server: format!("{}/readyz", loopback.host),
        ca_pem: loopback.ca_pem.clone().unwrap_or_default().into_bytes(),
        tls_server_name: loopback.server_name.clone(),
        token: Some(loopback.bearer_token.clone()).filter(|t| !t.is_empty()),
        ..Default::default()
    };
    let one_attempt = Backoff {
        steps: 1,
        ..Backoff::default()
    };
    let client = match WebhookClient::new(&config, Duration::from_secs(10), one_attempt) {
        Ok(client) => client,
        Err(err) => {
            tracing::error!("unable to check readiness over loopback: {err}");
            return;
        }
    };
    while !stop.is_cancelled() {
        // `/readyz` answers 200 with a plain-text `ok`: a body that is not JSON means ready.
        if let Ok(_) | Err(WebhookError::Decode(_)) = client.get_json().await {
            return;
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            () = tokio::time::sleep(READY_POLL) => {}
        }
    }
}
