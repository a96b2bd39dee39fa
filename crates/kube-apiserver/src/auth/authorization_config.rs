//! `--authorization-config`: the authorizer chain of an `AuthorizationConfiguration` file
//! (upstream `pkg/kubeapiserver/authorizer/reload.go`). `system:masters` is allowed first,
//! as with `--authorization-mode`; then each configured authorizer in order. The file is
//! watched: a changed file that decodes and validates, and whose webhooks can be set up,
//! replaces the chain; anything else is logged and the running chain kept.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use apiserver::apis::apiserver::authorization::AuthorizationConfiguration;
use apiserver::authz::builtin::{AlwaysAllow, AlwaysDeny, PrivilegedGroups};
use apiserver::authz::metrics::InstrumentedAuthorizer;
use apiserver::authz::union::UnionAuthorizer;
use apiserver::authz::webhook::{WebhookAuthorizer, WebhookAuthorizerConfig};
use apiserver::authz::{Attributes, AuthorizeResult, Authorizer, Decision};
use apiserver::request::names;
use apiserver::server::authconfig_metrics::{self, ConfigKind};
use apiserver::util::file_watch::watch_file_content;
use apiserver::util::webhook::{Backoff, WebhookClient, WebhookKubeconfig};
use arc_swap::ArcSwap;
use tokio_util::sync::CancellationToken;

/// How often the configuration file is re-read besides inotify's notices.
const RELOAD_INTERVAL: Duration = Duration::from_secs(60);

/// The authorizers the binary implements (`RBAC`, `Node`), by type, built when the server
/// starts for the types its configuration lists (a reloaded file may reorder them, or drop
/// them, but not add a type the server did not start with).
pub type BuiltinAuthorizers = HashMap<String, Arc<dyn Authorizer>>;

/// Builds the authorizer the binary implements for a type (`None`: not implemented).
pub type MakeBuiltin<'a> = dyn FnMut(&str) -> Result<Option<Arc<dyn Authorizer>>, String> + 'a;

/// The authorizer types a configuration lists, in order (to decide, e.g., whether anonymous
/// requests stay allowed: not with AlwaysAllow).
pub fn configured_types(config: &AuthorizationConfiguration) -> Vec<String> {
    config.authorizers.iter().map(|a| a.type_.clone()).collect()
}

/// Builds the chain of `config`.
pub fn build_chain(
    config: &AuthorizationConfiguration,
    builtin: &BuiltinAuthorizers,
) -> Result<Arc<dyn Authorizer>, String> {
    let mut chain: Vec<Arc<dyn Authorizer>> = vec![Arc::new(PrivilegedGroups::new(vec![
        names::SYSTEM_MASTERS.to_string(),
    ]))];
    for (i, entry) in config.authorizers.iter().enumerate() {
        let authorizer: Arc<dyn Authorizer> = match entry.type_.as_str() {
            "AlwaysAllow" => Arc::new(AlwaysAllow),
            "AlwaysDeny" => Arc::new(AlwaysDeny),
            "Webhook" => {
                let path = format!("authorizers[{i}]");
                let webhook = entry.webhook.as_ref().ok_or_else(|| {
                    format!("{path}.webhook: Required value: required when type=Webhook")
                })?;
                let (checked, errs) = webhook.check(&path);
                if !errs.is_empty() {
                    return Err(errs.to_string());
                }
                let kubeconfig = match &checked.kubeconfig {
                    Some(file) => WebhookKubeconfig::load(std::path::Path::new(file))
                        .map_err(|e| format!("{path}: {e}"))?,
                    None => WebhookKubeconfig::in_cluster().map_err(|e| format!("{path}: {e}"))?,
                };
                let client = WebhookClient::new(&kubeconfig, checked.timeout, Backoff::default())
                    .map_err(|e| format!("{path}: {e}"))?;
                Arc::new(WebhookAuthorizer::new(WebhookAuthorizerConfig {
                    client,
                    version: checked.version.parse()?,
                    authorized_ttl: checked.authorized_ttl,
                    unauthorized_ttl: checked.unauthorized_ttl,
                    decision_on_error: if checked.deny_on_failure {
                        Decision::Deny
                    } else {
                        Decision::NoOpinion
                    },
                    match_conditions: checked.match_conditions,
                    name: entry.name.clone(),
                }))
            }
            other => builtin.get(other).cloned().ok_or_else(|| {
                format!(
                    "authorizers[{i}].type: authorizer type {other} was not configured when the server started"
                )
            })?,
        };
        chain.push(InstrumentedAuthorizer::wrap(
            &entry.type_,
            &entry.name,
            authorizer,
        ));
    }
    Ok(Arc::new(UnionAuthorizer::new(chain)))
}

/// The chain of the configuration file, replaced when the file changes.
pub struct ReloadingAuthorizer {
    current: ArcSwap<Arc<dyn Authorizer>>,
}

#[async_trait::async_trait]
impl Authorizer for ReloadingAuthorizer {
    async fn authorize(&self, attrs: &Attributes) -> AuthorizeResult {
        let current = self.current.load_full();
        current.authorize(attrs).await
    }

    async fn rules_for(
        &self,
        user: &apiserver::request::UserInfo,
        namespace: &str,
    ) -> apiserver::authz::rules::UserRules {
        let current = self.current.load_full();
        current.rules_for(user, namespace).await
    }
}

/// Loads `path`, builds its chain (with `make_builtin` for the RBAC and Node entries: `None`
/// when the server does not implement that type), and keeps it current while `stop` is not
/// cancelled; reloads are counted in `apiserver_authorization_config_controller_*` under
/// `apiserver_id`.
pub fn load(
    path: &PathBuf,
    make_builtin: &mut MakeBuiltin<'_>,
    stop: &CancellationToken,
    apiserver_id: &str,
) -> Result<Arc<dyn Authorizer>, String> {
    let data = std::fs::read(path).map_err(|e| {
        format!(
            "failed to read authorization config file {:?}: {e}",
            path.display()
        )
    })?;
    let config =
        AuthorizationConfiguration::parse(&String::from_utf8_lossy(&data)).map_err(|e| {
            format!(
                "failed to load authorization config from file {:?}: {e}",
                path.display()
            )
        })?;
    let mut builtin = BuiltinAuthorizers::new();
    for entry in &config.authorizers {
        if matches!(entry.type_.as_str(), "RBAC" | "Node") && !builtin.contains_key(&entry.type_) {
            let authorizer = make_builtin(&entry.type_)?.ok_or_else(|| {
                format!(
                    "authorizer type {} is not supported by this server",
                    entry.type_
                )
            })?;
            builtin.insert(entry.type_.clone(), authorizer);
        }
    }
    let chain = build_chain(&config, &builtin)?;
    authconfig_metrics::record_last_config(ConfigKind::Authorization, apiserver_id, &data);
    let apiserver_id = apiserver_id.to_string();
    let reloading = Arc::new(ReloadingAuthorizer {
        current: ArcSwap::from_pointee(chain),
    });
    let mut changes = watch_file_content(path, data, RELOAD_INTERVAL, stop.clone());
    let target = reloading.clone();
    tokio::spawn(async move {
        while let Some(data) = changes.recv().await {
            let text = String::from_utf8_lossy(&data);
            let chain = AuthorizationConfiguration::parse(&text)
                .map_err(|e| e.to_string())
                .and_then(|c| build_chain(&c, &builtin));
            match chain {
                Ok(chain) => {
                    target.current.store(Arc::new(chain));
                    authconfig_metrics::record_reload_success(
                        ConfigKind::Authorization,
                        &apiserver_id,
                        &data,
                    );
                    tracing::info!("reloaded authorization config");
                }
                Err(e) => {
                    authconfig_metrics::record_reload_failure(
                        ConfigKind::Authorization,
                        &apiserver_id,
                    );
                    tracing::error!(
                        "reloading authorization config failed, keeping the running one: {e}"
                    )
                }
            }
        }
    });
    Ok(reloading)
}
