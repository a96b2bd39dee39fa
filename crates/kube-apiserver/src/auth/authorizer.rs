//! `--authorization-mode`: the authorizer chain (`pkg/kubeapiserver/authorizer/config.go`).
//! `system:masters` is always allowed first; AlwaysAllow and AlwaysDeny come from the generic
//! library; the modes that need the server's API objects are built here.

use std::sync::Arc;

use apiserver::authz::modes::AuthorizerConfigError;
use apiserver::authz::{AuthorizationMode, Authorizer, build_authorizer_with};

use super::AuthDeps;

/// Builds the authorizer for `modes`, in order.
pub fn build(
    modes: &[AuthorizationMode],
    deps: &AuthDeps<'_>,
) -> Result<Arc<dyn Authorizer>, AuthorizerConfigError> {
    build_authorizer_with(modes, |mode| plugin(mode, deps))
}

/// The authorizer of a mode that needs the server's objects; `Ok(None)` when not supported.
fn plugin(
    mode: AuthorizationMode,
    deps: &AuthDeps<'_>,
) -> Result<Option<Arc<dyn Authorizer>>, AuthorizerConfigError> {
    let _ = deps;
    match mode {
        AuthorizationMode::Rbac
        | AuthorizationMode::Node
        | AuthorizationMode::Webhook
        | AuthorizationMode::Abac
        | AuthorizationMode::AlwaysAllow
        | AuthorizationMode::AlwaysDeny => Ok(None),
    }
}
