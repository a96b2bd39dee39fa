//! JWT (OIDC) authentication from the `--oidc-*` flags or the `jwt` authenticators of
//! `--authentication-config` (upstream `pkg/kubeapiserver/authenticator/config.go`). The
//! configuration file is watched: a changed file that decodes, validates and whose issuers
//! answer discovery replaces the authenticators; anything else is logged and the running
//! configuration kept, as upstream does. The `anonymous` section is read once at start:
//! a file that changes it is refused on reload (upstream's `anonymous: Forbidden: changed
//! from initial configuration file`). Each reload is counted in
//! `apiserver_authentication_config_controller_*`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use apiserver::apis::apiserver::authentication::{
    AnonymousAuthConfig, AuthenticationConfiguration, ClaimMappings, ClaimValidationRule, Issuer,
    JwtAuthenticator as JwtConfig, PrefixedClaimOrExpression,
};
use apiserver::authn::bearertoken::TokenAuthenticator;
use apiserver::authn::jwt::JwtAuthenticator;
use apiserver::authn::{AuthError, AuthResponse};
use apiserver::server::authconfig_metrics::{self, ConfigKind};
use apiserver::util::file_watch::watch_file_content;
use arc_swap::ArcSwap;
use tokio_util::sync::CancellationToken;

use crate::options::Options;

/// How often the configuration file is re-read besides inotify's notices.
const RELOAD_INTERVAL: Duration = Duration::from_secs(60);

/// How long a reloaded configuration's issuers may take to answer discovery.
const RELOAD_DISCOVERY_TIMEOUT: Duration = Duration::from_secs(10);

/// The JWT authenticator configuration of the `--oidc-*` flags (upstream builds the same
/// `JWTAuthenticator` from them), or `None` without `--oidc-issuer-url`.
pub fn oidc_flags_config(opts: &Options) -> Result<Option<JwtConfig>, String> {
    if opts.oidc_issuer_url.is_empty() {
        return Ok(None);
    }
    let certificate_authority = match &opts.oidc_ca_file {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| format!("--oidc-ca-file {}: {e}", path.display()))?,
        None => String::new(),
    };
    // Upstream: without a prefix, claims other than `email` are prefixed with the issuer
    // URL and `#`; `-` means no prefix.
    let username_prefix = match opts.oidc_username_prefix.as_str() {
        "-" => String::new(),
        "" if opts.oidc_username_claim != "email" => format!("{}#", opts.oidc_issuer_url),
        other => other.to_string(),
    };
    let mut claim_validation_rules = Vec::new();
    for pair in &opts.oidc_required_claim {
        let (claim, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("--oidc-required-claim {pair:?}: expected key=value"))?;
        claim_validation_rules.push(ClaimValidationRule {
            claim: claim.to_string(),
            required_value: value.to_string(),
            ..Default::default()
        });
    }
    let groups = if opts.oidc_groups_claim.is_empty() {
        PrefixedClaimOrExpression::default()
    } else {
        PrefixedClaimOrExpression {
            claim: opts.oidc_groups_claim.clone(),
            prefix: Some(opts.oidc_groups_prefix.clone()),
            expression: String::new(),
        }
    };
    Ok(Some(JwtConfig {
        issuer: Issuer {
            url: opts.oidc_issuer_url.clone(),
            certificate_authority,
            audiences: vec![opts.oidc_client_id.clone()],
            audience_match_policy: "MatchAny".into(),
            ..Default::default()
        },
        claim_validation_rules,
        claim_mappings: ClaimMappings {
            username: PrefixedClaimOrExpression {
                claim: opts.oidc_username_claim.clone(),
                prefix: Some(username_prefix),
                expression: String::new(),
            },
            groups,
            ..Default::default()
        },
        user_validation_rules: Vec::new(),
    }))
}

/// The current JWT authenticators, tried in order (the first that accepts a token wins;
/// authenticators of other issuers have no opinion).
pub struct JwtAuthenticators {
    current: ArcSwap<Generation>,
    /// The API server identity the reload and key set metrics are labelled with.
    apiserver_id: String,
    /// The `anonymous` section of the file the server started with (reloads may not change
    /// it).
    anonymous: Option<AnonymousAuthConfig>,
}

struct Generation {
    authenticators: Vec<Arc<JwtAuthenticator>>,
    stop: CancellationToken,
}

impl Drop for Generation {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

fn build(
    configs: &[JwtConfig],
    signing_algs: &[String],
    stop: &CancellationToken,
    apiserver_id: &str,
) -> Result<Generation, String> {
    let authenticators = configs
        .iter()
        .enumerate()
        .map(|(i, c)| {
            JwtAuthenticator::new(c, signing_algs, apiserver_id)
                .map(Arc::new)
                .map_err(|e| format!("jwt[{i}]: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Generation {
        authenticators,
        stop: stop.child_token(),
    })
}

impl JwtAuthenticators {
    fn start(generation: &Generation) {
        for a in &generation.authenticators {
            a.start(generation.stop.clone());
        }
    }

    /// Applies a changed file: counted as a success once its authenticators are in force,
    /// as a failure (the running configuration kept) otherwise.
    async fn reload(&self, data: &[u8], disallowed: &[String], stop: &CancellationToken) {
        match self.try_reload(data, disallowed, stop).await {
            Ok(count) => {
                authconfig_metrics::record_reload_success(
                    ConfigKind::Authentication,
                    &self.apiserver_id,
                    data,
                );
                tracing::info!("reloaded authentication config with {count} jwt authenticators");
            }
            Err(e) => {
                authconfig_metrics::record_reload_failure(
                    ConfigKind::Authentication,
                    &self.apiserver_id,
                );
                tracing::error!(
                    "reloading authentication config failed, keeping the running one: {e}"
                );
            }
        }
    }

    async fn try_reload(
        &self,
        data: &[u8],
        disallowed: &[String],
        stop: &CancellationToken,
    ) -> Result<usize, String> {
        let text = String::from_utf8_lossy(data);
        let config =
            AuthenticationConfiguration::parse(&text, disallowed).map_err(|e| e.to_string())?;
        if config.anonymous != self.anonymous {
            return Err("anonymous: Forbidden: changed from initial configuration file".into());
        }
        // Every upstream algorithm is accepted for the structured configuration.
        let generation = build(&config.jwt, &all_algs(), stop, &self.apiserver_id)?;
        for a in &generation.authenticators {
            let ready = tokio::time::timeout(RELOAD_DISCOVERY_TIMEOUT, a.discover()).await;
            let err = match ready {
                Ok(Ok(())) => continue,
                Ok(Err(e)) => e,
                Err(_) => "discovery timed out".to_string(),
            };
            return Err(format!("issuer {}: {err}", a.issuer()));
        }
        Self::start(&generation);
        self.current.store(Arc::new(generation));
        Ok(config.jwt.len())
    }
}

fn all_algs() -> Vec<String> {
    apiserver::authn::jwt::keys::ALLOWED_SIGNING_ALGS
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// What `--authentication-config` configures besides JWT: anonymous authentication.
#[derive(Clone, Debug, Default)]
pub struct AnonymousFromConfig {
    /// Whether anonymous requests are authenticated.
    pub enabled: bool,
    /// When non-empty, only for these paths.
    pub paths: Vec<String>,
}

/// The anonymous settings of `--authentication-config`, when the file has any.
pub fn anonymous_from_config(opts: &Options) -> Result<Option<AnonymousFromConfig>, String> {
    let Some(path) = &opts.authentication_config else {
        return Ok(None);
    };
    let config = AuthenticationConfiguration::load(path, &[]).map_err(|e| {
        format!(
            "failed to load authentication config from file {:?}: {e}",
            path.display()
        )
    })?;
    Ok(config.anonymous.map(|a| AnonymousFromConfig {
        enabled: a.enabled,
        paths: a.conditions.into_iter().map(|c| c.path).collect(),
    }))
}

/// The JWT authenticators of the flags or the configuration file (reloaded while `stop` is
/// not cancelled). `disallowed_issuers` are the service-account issuers; `apiserver_id`
/// labels the metrics.
pub fn jwt_authenticators(
    opts: &Options,
    disallowed_issuers: &[String],
    stop: &CancellationToken,
    apiserver_id: &str,
) -> Result<Option<Arc<JwtAuthenticators>>, String> {
    if let Some(path) = &opts.authentication_config {
        let data = std::fs::read(path).map_err(|e| {
            format!(
                "failed to read authentication config file {:?}: {e}",
                path.display()
            )
        })?;
        let config =
            AuthenticationConfiguration::parse(&String::from_utf8_lossy(&data), disallowed_issuers)
                .map_err(|e| {
                    format!(
                        "failed to load authentication config from file {:?}: {e}",
                        path.display()
                    )
                })?;
        let generation = build(&config.jwt, &all_algs(), stop, apiserver_id)?;
        JwtAuthenticators::start(&generation);
        authconfig_metrics::record_last_config(ConfigKind::Authentication, apiserver_id, &data);
        let authenticators = Arc::new(JwtAuthenticators {
            current: ArcSwap::from_pointee(generation),
            apiserver_id: apiserver_id.to_string(),
            anonymous: config.anonymous.clone(),
        });
        spawn_reloader(
            authenticators.clone(),
            path.clone(),
            data,
            disallowed_issuers.to_vec(),
            stop.clone(),
        );
        return Ok(Some(authenticators));
    }
    let Some(config) = oidc_flags_config(opts)? else {
        return Ok(None);
    };
    let generation = build(&[config], &opts.oidc_signing_algs, stop, apiserver_id)
        .map_err(|e| e.trim_start_matches("jwt[0]: ").to_string())?;
    JwtAuthenticators::start(&generation);
    Ok(Some(Arc::new(JwtAuthenticators {
        current: ArcSwap::from_pointee(generation),
        apiserver_id: apiserver_id.to_string(),
        anonymous: None,
    })))
}

fn spawn_reloader(
    authenticators: Arc<JwtAuthenticators>,
    path: PathBuf,
    initial: Vec<u8>,
    disallowed: Vec<String>,
    stop: CancellationToken,
) {
    let mut changes = watch_file_content(Path::new(&path), initial, RELOAD_INTERVAL, stop.clone());
    tokio::spawn(async move {
        while let Some(data) = changes.recv().await {
            authenticators.reload(&data, &disallowed, &stop).await;
        }
    });
}

#[async_trait::async_trait]
impl TokenAuthenticator for JwtAuthenticators {
    async fn authenticate_token(
        &self,
        req: &http::request::Parts,
        token: &str,
    ) -> Result<Option<AuthResponse>, AuthError> {
        let generation = self.current.load_full();
        apiserver::authn::bearertoken::authenticate_in_order(&generation.authenticators, req, token)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn opts(args: &[&str]) -> Options {
        let mut all = vec!["kube-apiserver"];
        all.extend_from_slice(args);
        Options::try_parse_from(all).unwrap()
    }

    #[test]
    fn oidc_flags_become_a_jwt_authenticator() {
        let o = opts(&[
            "--oidc-issuer-url=https://issuer",
            "--oidc-client-id=k8s",
            "--oidc-groups-claim=groups",
            "--oidc-groups-prefix=oidc:",
            "--oidc-required-claim=hd=example.com",
        ]);
        let c = oidc_flags_config(&o).unwrap().unwrap();
        assert_eq!(c.issuer.audiences, vec!["k8s"]);
        assert_eq!(c.claim_mappings.username.claim, "sub");
        assert_eq!(
            c.claim_mappings.username.prefix.as_deref(),
            Some("https://issuer#")
        );
        assert_eq!(c.claim_mappings.groups.prefix.as_deref(), Some("oidc:"));
        assert_eq!(c.claim_validation_rules[0].required_value, "example.com");
        let email = opts(&[
            "--oidc-issuer-url=https://issuer",
            "--oidc-client-id=k8s",
            "--oidc-username-claim=email",
        ]);
        let c = oidc_flags_config(&email).unwrap().unwrap();
        assert_eq!(c.claim_mappings.username.prefix.as_deref(), Some(""));
        let dash = opts(&[
            "--oidc-issuer-url=https://issuer",
            "--oidc-client-id=k8s",
            "--oidc-username-prefix=-",
        ]);
        let c = oidc_flags_config(&dash).unwrap().unwrap();
        assert_eq!(c.claim_mappings.username.prefix.as_deref(), Some(""));
        assert!(oidc_flags_config(&opts(&[])).unwrap().is_none());
    }
}
