//! The bearer-token authenticators that need the server's API objects or configuration files
//! beyond the generic ones, in kube-apiserver's order (`pkg/kubeapiserver/authenticator/
//! config.go`): after the token file come service-account tokens, bootstrap tokens, JWT (OIDC)
//! authenticators, and last the token webhook.

use std::sync::Arc;

use apiserver::authn::bearertoken::TokenAuthenticator;

use super::AuthDeps;

/// The token authenticators to ask after `--token-auth-file`, in order. An error is a
/// one-line start-up error (a bad key or configuration file).
pub fn token_authenticators(
    deps: &AuthDeps<'_>,
) -> Result<Vec<Arc<dyn TokenAuthenticator>>, String> {
    let mut authenticators: Vec<Arc<dyn TokenAuthenticator>> = Vec::new();
    authenticators.extend(super::serviceaccounts::token_authenticators(deps)?);
    // JWT (OIDC) authenticators, then the token webhook behind its cache.
    if let Some(jwt) = super::jwt::jwt_authenticators(
        deps.opts,
        &deps.service_accounts.issuers,
        &deps.stop,
        &deps.apiserver_id,
    )? {
        authenticators.push(jwt);
    }
    if let Some(webhook) =
        super::webhook::token_webhook(deps.opts, &deps.service_accounts.api_audiences)?
    {
        authenticators.push(webhook);
    }
    Ok(authenticators)
}
