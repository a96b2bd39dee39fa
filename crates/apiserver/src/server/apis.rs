//! Installing API groups on a [`GenericApiServer`] (upstream `InstallLegacyAPIGroup` and
//! `InstallAPIGroups`): REST routes per group-version, discovery documents, and the `/api`,
//! `/apis` and `/apis/<group>` roots. Install everything before MuxAndDiscoveryComplete fires.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

use crate::endpoints::discovery::{Addresses, DiscoveryError, DiscoveryManager};
use crate::endpoints::handlers::{HandlerConfig, ProtobufDecoder, ProtobufDecoderSlot};
use crate::endpoints::installer::{GroupVersionHandler, api_resource};
use crate::registry::rest::RestStorage;
use crate::server::GenericApiServer;
use crate::server::serving::BindAddress;

/// One version of a group and its resources.
#[derive(Clone)]
pub struct ApiGroupVersion {
    /// The version (`v1`).
    pub version: String,
    /// Resource path (`deployments`, `deployments/status`) → storage.
    pub resources: BTreeMap<String, Arc<dyn RestStorage>>,
}

impl ApiGroupVersion {
    /// A version with its top-level resources, each keyed by its `info().resource`.
    pub fn new(version: &str, storages: Vec<Arc<dyn RestStorage>>) -> Self {
        let resources = storages
            .into_iter()
            .map(|s| (s.info().resource.clone(), s))
            .collect();
        ApiGroupVersion {
            version: version.to_string(),
            resources,
        }
    }

    /// Adds a resource at `path` (`deployments/status` for a subresource).
    pub fn with(mut self, path: &str, storage: Arc<dyn RestStorage>) -> Self {
        self.resources.insert(path.to_string(), storage);
        self
    }
}

/// An API group to install (upstream `APIGroupInfo`): versions in priority order, the first
/// being the preferred one.
#[derive(Clone, Default)]
pub struct ApiGroupInfo {
    /// The group, empty for the legacy core group.
    pub group: String,
    /// Prioritized versions.
    pub versions: Vec<ApiGroupVersion>,
}

impl std::fmt::Debug for ApiGroupInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let versions: Vec<(&str, Vec<&String>)> = self
            .versions
            .iter()
            .map(|v| (v.version.as_str(), v.resources.keys().collect()))
            .collect();
        f.debug_struct("ApiGroupInfo")
            .field("group", &self.group)
            .field("versions", &versions)
            .finish()
    }
}

/// Why a group could not be installed (upstream's messages).
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The legacy prefix is not configured.
    #[error("{prefix:?} is not in the allowed legacy API prefixes: [{}]", .allowed.join(" "))]
    NotLegacyPrefix {
        /// The prefix asked for.
        prefix: String,
        /// The configured prefixes.
        allowed: Vec<String>,
    },
    /// No versions.
    #[error("no version priority set for {0:?}")]
    NoVersionPriority(ApiGroupInfo),
    /// An empty group name in `install_api_groups`.
    #[error("cannot register handler with an empty group for {0:?}")]
    EmptyGroup(ApiGroupInfo),
    /// An empty version.
    #[error("cannot register handler with an empty version for {0:?}")]
    EmptyVersion(ApiGroupInfo),
    /// A resource path with upper-case letters.
    #[error("resource names must be lowercase only, not {0:?}")]
    UppercaseResource(String),
    /// Discovery refused the group-version.
    #[error(transparent)]
    Discovery(#[from] DiscoveryError),
}

/// What the server keeps for installed APIs.
#[derive(Default)]
pub(crate) struct ApisState {
    discovery: OnceLock<DiscoveryManager>,
    protobuf_decoder: ProtobufDecoderSlot,
    admission: crate::endpoints::handlers::AdmissionSlot,
}

impl GenericApiServer {
    /// The server's discovery manager, created on first use advertising the secure serving
    /// address (or `127.0.0.1:443`) unless [`set_discovery_addresses`](Self::set_discovery_addresses)
    /// ran first.
    pub fn discovery_manager(&self) -> &DiscoveryManager {
        self.inner.apis.discovery.get_or_init(|| {
            let address = self
                .inner
                .secure_serving
                .lock()
                .ok()
                .and_then(|s| match s.as_ref().map(|s| &s.bind) {
                    Some(BindAddress::Addr(addr)) => Some(*addr),
                    Some(BindAddress::Listener(l)) => l.local_addr().ok(),
                    None => None,
                })
                .map(|addr: SocketAddr| addr.to_string())
                .unwrap_or_else(|| "127.0.0.1:443".to_string());
            DiscoveryManager::new(Addresses::new(address))
        })
    }

    /// Sets the addresses discovery advertises (`serverAddressByClientCIDRs`); `false` when the
    /// discovery manager already exists (call it before installing groups).
    pub fn set_discovery_addresses(&self, addresses: Addresses) -> bool {
        self.inner
            .apis
            .discovery
            .set(DiscoveryManager::new(addresses))
            .is_ok()
    }

    /// Makes the server advertise through `manager`, shared with the other servers of a chain so
    /// that `/api` and `/apis` list every server's groups (upstream's aggregator merges them);
    /// `false` when the discovery manager already exists (call it before installing groups).
    pub fn share_discovery(&self, manager: DiscoveryManager) -> bool {
        self.inner.apis.discovery.set(manager).is_ok()
    }

    /// Plugs in the decoder of `application/vnd.kubernetes.protobuf` request bodies, for every
    /// installed resource (before or after installation). Without one they get 415.
    pub fn set_protobuf_decoder(&self, decoder: ProtobufDecoder) {
        self.inner
            .apis
            .protobuf_decoder
            .store(Some(Arc::new(decoder)));
    }

    /// Plugs in the admission chain every installed resource's requests pass through (before
    /// or after installation); `None` removes it.
    pub fn set_admission(&self, chain: Option<Arc<crate::admission::Chain>>) {
        self.inner.apis.admission.store(chain);
    }

    /// The settings REST handlers of this server use.
    pub fn handler_config(&self) -> HandlerConfig {
        HandlerConfig {
            max_request_body_bytes: self.inner.config.max_request_body_bytes,
            min_request_timeout: self.inner.config.min_request_timeout,
            protobuf_decoder: self.inner.apis.protobuf_decoder.clone(),
            admission: self.inner.apis.admission.clone(),
        }
    }

    /// Installs the legacy core group at `prefix` (`/api`): `/api` (APIVersions or aggregated
    /// discovery) and `/api/<version>` for every version with resources.
    pub fn install_legacy_api_group(
        &self,
        prefix: &str,
        info: ApiGroupInfo,
    ) -> Result<(), InstallError> {
        let allowed = &self.inner.config.legacy_api_group_prefixes;
        if !allowed.iter().any(|p| p == prefix) {
            return Err(InstallError::NotLegacyPrefix {
                prefix: prefix.to_string(),
                allowed: allowed.clone(),
            });
        }
        check_group(&info)?;
        let discovery = self.discovery_manager().clone();
        self.install_versions(prefix, &info)?;
        self.handler()
            .api_routes
            .register(prefix, discovery.legacy_root_service());
        Ok(())
    }

    /// Installs named groups below `/apis`: `/apis/<g>/<v>` per version with resources,
    /// `/apis/<g>` (APIGroup) and `/apis` (APIGroupList or aggregated discovery). Every group
    /// is checked before anything is installed.
    pub fn install_api_groups(&self, infos: &[ApiGroupInfo]) -> Result<(), InstallError> {
        for info in infos {
            if info.versions.is_empty() {
                return Err(InstallError::NoVersionPriority(info.clone()));
            }
            if info.group.is_empty() {
                return Err(InstallError::EmptyGroup(info.clone()));
            }
            check_group(info)?;
        }
        let discovery = self.discovery_manager().clone();
        for info in infos {
            let prefix = format!("/apis/{}", info.group);
            self.install_versions(&prefix, info)?;
            self.handler()
                .api_routes
                .register(&prefix, discovery.group_service(&info.group));
        }
        self.handler()
            .api_routes
            .register("/apis", discovery.apis_root_service());
        Ok(())
    }

    fn install_versions(&self, prefix: &str, info: &ApiGroupInfo) -> Result<(), InstallError> {
        let discovery = self.discovery_manager();
        let config = self.handler_config();
        for version in &info.versions {
            if version.resources.is_empty() {
                tracing::warn!(
                    "Skipping API {}/{} because it has no resources.",
                    info.group,
                    version.version
                );
                continue;
            }
            let resources = version
                .resources
                .iter()
                .map(|(path, storage)| {
                    api_resource(path, storage.as_ref(), &info.group, &version.version)
                })
                .collect();
            discovery.add_group_version(&info.group, &version.version, resources, None)?;
            let root = format!("{prefix}/{}", version.version);
            let handler = GroupVersionHandler::new(
                &root,
                &info.group,
                &version.version,
                &version.resources,
                &config,
                discovery.group_version_service(&info.group, &version.version),
            );
            self.handler().api_routes.register(&root, handler.service());
        }
        Ok(())
    }
}

fn check_group(info: &ApiGroupInfo) -> Result<(), InstallError> {
    for version in &info.versions {
        if version.version.is_empty() {
            return Err(InstallError::EmptyVersion(info.clone()));
        }
        for path in version.resources.keys() {
            if path.chars().any(|c| c.is_uppercase()) {
                return Err(InstallError::UppercaseResource(path.clone()));
            }
        }
    }
    Ok(())
}
