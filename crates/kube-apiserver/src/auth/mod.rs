//! kube-apiserver's authentication and authorization configuration
//! (`pkg/kubeapiserver/authenticator`, `pkg/kubeapiserver/authorizer`): the generic
//! authenticators and authorizers of the `apiserver` crate, plus those that need the server's
//! own API objects (service accounts, RBAC, the node graph …), built once the stores exist.

pub mod authenticator;
pub mod authorization_config;
pub mod authorizer;
pub mod bootstrap_token;
pub mod jwt;
pub mod node;
pub mod rbac;
pub mod serviceaccounts;
pub mod webhook;

use std::sync::{Arc, OnceLock};

use apiserver::authz::Authorizer;
use apiserver::status::ApiError;
use tokio_util::sync::CancellationToken;

use self::rbac::RbacPolicy;
use crate::informers::SharedInformers;
use crate::options::Options;
use crate::serviceaccount::ServiceAccountConfig;

/// What the authenticators and authorizers that read API objects are built from.
#[derive(Clone)]
pub struct AuthDeps<'a> {
    /// The server's flags.
    pub opts: &'a Options,
    /// Shared informers over the server's stores (never a storage read per request).
    pub informers: SharedInformers,
    /// Fires when the server stops; background work (reloads, refreshes) ends then.
    pub stop: CancellationToken,
    /// The resolved `--service-account-*` settings, with the API audiences.
    pub service_accounts: Arc<ServiceAccountConfig>,
    /// The RBAC policy (followed whatever the modes: the RBAC storages check escalations
    /// against it in every mode, as upstream's do).
    pub rbac: Arc<RbacPolicy>,
    /// The API server's identity, whose hash labels the reload and key set metrics.
    pub apiserver_id: String,
}

/// What the server authorizes with, for the REST storages installed before it exists (the
/// access reviews ask the authorizer; the RBAC storages check escalations). Set once at
/// start-up, before the server serves.
#[derive(Clone, Default)]
pub struct AuthzHandle {
    parts: Arc<OnceLock<AuthzParts>>,
}

/// The server's authorizer and RBAC policy.
pub struct AuthzParts {
    /// The authorizer of `--authorization-mode` (`system:masters` first).
    pub authorizer: Arc<dyn Authorizer>,
    /// The RBAC policy.
    pub rbac: Arc<RbacPolicy>,
}

impl AuthzHandle {
    /// Sets the parts (once; later calls are ignored).
    pub fn set(&self, parts: AuthzParts) {
        let _ = self.parts.set(parts);
    }

    /// The parts; a 503 before start-up has set them (no request can get here earlier).
    pub fn get(&self) -> Result<&AuthzParts, ApiError> {
        self.parts
            .get()
            .ok_or_else(|| ApiError::service_unavailable("the authorizer is not ready yet"))
    }
}
