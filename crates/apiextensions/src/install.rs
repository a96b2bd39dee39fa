//! Installs the apiextensions server: the `apiextensions.k8s.io/v1` group
//! (`customresourcedefinitions` and its `status`), the CRD controllers as upstream's post-start
//! hooks, and the mux-complete signal that holds custom-resource paths at 503 until the
//! existing CRDs are served.

use std::collections::BTreeMap;
use std::sync::Arc;

use apiserver::registry::SharedStrategy;
use apiserver::registry::rest::RestStorage;
use apiserver::registry::store::{StatusStore, Store, attrs_func};
use apiserver::server::GenericApiServer;
use apiserver::server::apis::{ApiGroupInfo, ApiGroupVersion};
use apiserver::server::lifecycle::Signal;
use apiserver::storage::Storage;
use apiserver::storage::cacher::{CacherConfig, decorated_storage};
use tokio_util::sync::CancellationToken;

use crate::controller::CrdController;
use crate::crd::{CrdStrategy, GROUP};
use crate::openapi::OpenApiPublisher;
use crate::seams::Seams;
use crate::serving::CrdServing;

/// The mux-complete signal of the apiextensions server (upstream's name).
pub const CRD_SYNCED_SIGNAL: &str = "CRDInformerHasNotSynced";

/// Why the apiextensions server could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// Installing the group failed.
    #[error(transparent)]
    Group(#[from] apiserver::server::apis::InstallError),
    /// Registering a hook or signal failed.
    #[error(transparent)]
    Server(#[from] apiserver::server::genericapiserver::NewServerError),
}

/// What [`install`] set up.
#[derive(Clone)]
pub struct ApiextensionsHandle {
    /// The CRD store.
    pub crds: Store,
    /// The custom resources being served.
    pub serving: Arc<CrdServing>,
    /// Fires once the CRDs that existed at start are served.
    pub synced: Signal,
    /// Cancelled by the server's `destroy` (stops the controllers).
    pub destroyed: CancellationToken,
}

/// Installs the CRD API and the controllers on `server` (the apiextensions server of the
/// chain; its discovery manager should be the shared one). CRDs are stored under
/// `<prefix>/apiextensions.k8s.io/customresourcedefinitions`, custom resources under
/// `<prefix>/<group>/<plural>`, as upstream lays keys out. Call inside a tokio runtime.
pub fn install(
    server: &GenericApiServer,
    storage: Arc<dyn Storage>,
    prefix: &str,
    openapi: Arc<dyn OpenApiPublisher>,
    seams: Seams,
) -> Result<ApiextensionsHandle, InstallError> {
    let prefix = prefix.trim_end_matches('/');
    let strategy: SharedStrategy = Arc::new(CrdStrategy::new(seams.validator.clone()));
    let root = format!("{prefix}/{GROUP}/customresourcedefinitions");
    let mut cache_config = CacherConfig::new(&format!("{root}/"));
    cache_config.get_attrs = attrs_func(strategy.clone());
    let cached = decorated_storage(
        &storage,
        GROUP,
        "customresourcedefinitions",
        true,
        cache_config,
    );
    let crds = Store::new(strategy, cached, &root);

    let mut resources: BTreeMap<String, Arc<dyn RestStorage>> = BTreeMap::new();
    resources.insert("customresourcedefinitions".into(), Arc::new(crds.clone()));
    resources.insert(
        "customresourcedefinitions/status".into(),
        Arc::new(StatusStore::new(&crds)),
    );
    server.install_api_groups(&[ApiGroupInfo {
        group: GROUP.into(),
        versions: vec![ApiGroupVersion {
            version: "v1".into(),
            resources,
        }],
    }])?;

    let serving = Arc::new(CrdServing::new(
        server.clone(),
        server.discovery_manager().clone(),
        storage,
        prefix,
        seams.compiler.clone(),
        seams.service_resolver.clone(),
        openapi,
    ));
    let synced = Signal::new(CRD_SYNCED_SIGNAL);
    server.register_mux_and_discovery_complete_signal(CRD_SYNCED_SIGNAL, synced.clone())?;

    let destroyed = CancellationToken::new();
    {
        let destroyed = destroyed.clone();
        server.register_destroy_fn(move || destroyed.cancel());
    }
    server.add_post_start_hook(
        "start-apiextensions-informers",
        Arc::new(|_ctx| Box::pin(async { Ok(()) })),
    )?;
    {
        let crds = crds.clone();
        let serving = serving.clone();
        let synced = synced.clone();
        let destroyed_for_hook = destroyed.clone();
        server.add_post_start_hook(
            "start-apiextensions-controllers",
            Arc::new(move |ctx| {
                let controller = CrdController::new(crds.clone(), serving.clone(), synced.clone());
                let stop = ctx.stop.child_token();
                let destroyed = destroyed_for_hook.clone();
                tokio::spawn(async move {
                    tokio::select! {
                        _ = destroyed.cancelled() => {}
                        _ = controller.run(stop) => {}
                    }
                });
                Box::pin(async { Ok(()) })
            }),
        )?;
    }
    {
        let synced = synced.clone();
        server.add_post_start_hook(
            "crd-informer-synced",
            Arc::new(move |ctx| {
                let synced = synced.clone();
                Box::pin(async move {
                    tokio::select! {
                        _ = synced.wait() => Ok(()),
                        _ = ctx.stop.cancelled() => Err("stopped before the CRDs were synced".to_string()),
                    }
                })
            }),
        )?;
    }
    Ok(ApiextensionsHandle {
        crds,
        serving,
        synced,
        destroyed,
    })
}
