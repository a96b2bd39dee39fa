//! `--authorization-mode`: the authorizer chain (`pkg/kubeapiserver/authorizer/config.go`).
//! `system:masters` is always allowed first; AlwaysAllow and AlwaysDeny come from the generic
//! library; the modes that need the server's API objects are built here.

use std::sync::Arc;

use apiserver::authz::modes::AuthorizerConfigError;
use apiserver::authz::{AuthorizationMode, Authorizer, build_authorizer_with};

use super::AuthDeps;
use super::rbac::authorizer::RbacAuthorizer;

/// Builds the authorizer for `modes`, in order.
pub fn build(
    modes: &[AuthorizationMode],
    deps: &AuthDeps<'_>,
) -> Result<Arc<dyn Authorizer>, AuthorizerConfigError> {
    build_authorizer_with(modes, |mode| plugin(mode, deps))
}

/// The chain of `--authorization-config` (with this file's RBAC and Node authorizers);
/// `None` without the flag.
pub fn build_from_config(deps: &AuthDeps<'_>) -> Result<Option<Arc<dyn Authorizer>>, String> {
    let Some(path) = &deps.opts.authorization_config else {
        return Ok(None);
    };
    let mut builtin = |type_: &str| {
        let mode = type_
            .parse::<AuthorizationMode>()
            .map_err(|e| e.to_string())?;
        plugin(mode, deps).map_err(|e| e.to_string())
    };
    super::authorization_config::load(path, &mut builtin, &deps.stop, &deps.apiserver_id).map(Some)
}

/// The authorizer of a mode that needs the server's objects; `Ok(None)` when not supported.
/// Each authorizer also answers [`Authorizer::rules_for`] for SelfSubjectRulesReview as its
/// upstream counterpart does (RBAC lists its rules; the Node authorizer and webhooks answer
/// `UserRules::unsupported` with upstream's text for the identities they may allow).
fn plugin(
    mode: AuthorizationMode,
    deps: &AuthDeps<'_>,
) -> Result<Option<Arc<dyn Authorizer>>, AuthorizerConfigError> {
    match mode {
        AuthorizationMode::Rbac => Ok(Some(Arc::new(RbacAuthorizer::new(deps.rbac.clone())))),
        AuthorizationMode::Node => Ok(Some(Arc::new(super::node::node_authorizer(
            &deps.informers,
        )))),
        AuthorizationMode::Webhook => super::webhook::legacy_webhook_authorizer(deps.opts)
            .map(Some)
            .map_err(AuthorizerConfigError::Invalid),
        AuthorizationMode::Abac
        | AuthorizationMode::AlwaysAllow
        | AuthorizationMode::AlwaysDeny => Ok(None),
    }
}
