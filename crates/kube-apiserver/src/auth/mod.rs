//! kube-apiserver's authentication and authorization configuration
//! (`pkg/kubeapiserver/authenticator`, `pkg/kubeapiserver/authorizer`): the generic
//! authenticators and authorizers of the `apiserver` crate, plus those that need the server's
//! own API objects (service accounts, RBAC, the node graph …), built once the stores exist.

pub mod authenticator;
pub mod authorization_config;
pub mod authorizer;
pub mod jwt;
pub mod webhook;

use tokio_util::sync::CancellationToken;

use crate::informers::SharedInformers;
use crate::options::Options;

/// What the authenticators and authorizers that read API objects are built from.
// Read by the authenticators and authorizers of issue 9 as they land.
#[allow(dead_code)]
#[derive(Clone, Debug)]
pub struct AuthDeps<'a> {
    /// The server's flags.
    pub opts: &'a Options,
    /// Shared informers over the server's stores (never a storage read per request).
    pub informers: SharedInformers,
    /// Fires when the server stops; background work (reloads, refreshes) ends then.
    pub stop: CancellationToken,
}
