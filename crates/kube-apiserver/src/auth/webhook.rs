//! The webhooks of the legacy flags: `--authentication-token-webhook-*` (a TokenReview
//! webhook behind its cache) and `--authorization-webhook-*` (a SubjectAccessReview webhook
//! for `--authorization-mode=Webhook`, failing open with no opinion as upstream).

use std::sync::Arc;

use apiserver::authn::bearertoken::TokenAuthenticator;
use apiserver::authn::tokencache::CachedTokenAuthenticator;
use apiserver::authn::webhook::{TokenReviewVersion, WebhookTokenAuthenticator};
use apiserver::authz::webhook::{WebhookAuthorizer, WebhookAuthorizerConfig};
use apiserver::authz::{Authorizer, Decision};
use apiserver::util::webhook::{
    Backoff, DEFAULT_REQUEST_TIMEOUT, WebhookClient, WebhookKubeconfig,
};

use crate::options::Options;

/// The webhook token authenticator of `--authentication-token-webhook-config-file`, wrapped
/// by its cache (`--authentication-token-webhook-cache-ttl`, for successes and rejections
/// alike, errors not cached, as upstream), or `None` without the flag.
pub fn token_webhook(
    opts: &Options,
    api_audiences: &[String],
) -> Result<Option<Arc<dyn TokenAuthenticator>>, String> {
    let Some(path) = &opts.authentication_token_webhook_config_file else {
        return Ok(None);
    };
    let version: TokenReviewVersion = opts.authentication_token_webhook_version.parse()?;
    let webhook = WebhookTokenAuthenticator::from_kubeconfig(path, version, api_audiences.to_vec())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let ttl = opts.authentication_token_webhook_cache_ttl.get();
    let webhook: Arc<dyn TokenAuthenticator> = Arc::new(webhook);
    if ttl.is_zero() {
        return Ok(Some(webhook));
    }
    // Upstream's webhook cache keeps successes and rejections, not errors.
    Ok(Some(Arc::new(
        CachedTokenAuthenticator::new(webhook, ttl, ttl).caching_errors(false),
    )))
}

/// The webhook authorizer of `--authorization-mode=Webhook` with
/// `--authorization-webhook-config-file`, `-version` and the two cache TTLs.
pub fn legacy_webhook_authorizer(opts: &Options) -> Result<Arc<dyn Authorizer>, String> {
    let path = opts
        .authorization_webhook_config_file
        .as_ref()
        .ok_or("authorization-mode Webhook's authorization config file not passed")?;
    let config = WebhookKubeconfig::load(path).map_err(|e| e.to_string())?;
    let client = WebhookClient::new(&config, DEFAULT_REQUEST_TIMEOUT, Backoff::default())?;
    Ok(Arc::new(WebhookAuthorizer::new(WebhookAuthorizerConfig {
        client,
        version: opts.authorization_webhook_version.parse()?,
        authorized_ttl: opts.authorization_webhook_cache_authorized_ttl.get(),
        unauthorized_ttl: opts.authorization_webhook_cache_unauthorized_ttl.get(),
        decision_on_error: Decision::NoOpinion,
        match_conditions: Vec::new(),
        name: "webhook".into(),
    })))
}
