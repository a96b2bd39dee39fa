//! `Config` → `CompletedConfig` → `GenericApiServer`: the configuration of a generic server,
//! with upstream's defaults (`NewConfig`), its completion (`Complete`) and construction
//! (`New(name, delegate)`).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::audit::Auditor;
use crate::authn::Authenticator;
use crate::authz::Authorizer;
use crate::filters::HttpService;
use crate::filters::max_inflight::MaxInFlight;
use crate::request::requestinfo::{LongRunningRequestCheck, RequestInfoResolver};
use crate::server::healthz::{SharedHealthChecker, log_check, ping_check};
use crate::server::hooks::PostStartHookFn;
use crate::server::lifecycle::{LifecycleSignals, SignalObserver};
use crate::server::loopback::{LoopbackClientConfig, new_loopback_token};
use crate::server::routes::flags::FlagSetter;
use crate::server::routes::version::VersionInfo;
use crate::server::serving::SecureServingInfo;
use crate::server::serving::selfsigned::{LOOPBACK_SERVER_NAME, loopback_cert};
use crate::server::waitgroup::{RateLimitedSafeWaitGroup, SafeWaitGroup};
use tokio_util::sync::CancellationToken;

/// Builds the handler chain around the director (upstream `BuildHandlerChainFunc`).
pub type BuildHandlerChainFn =
    Arc<dyn Fn(HttpService, &CompletedConfig) -> HttpService + Send + Sync>;

/// The configuration of a generic API server. [`Config::new`] gives upstream's defaults.
pub struct Config {
    /// HTTPS serving; `None` runs without a listener (tests that drive the handler directly).
    pub secure_serving: Option<SecureServingInfo>,
    /// The authenticator; `None` lets every request through unauthenticated (with a warning).
    pub authenticator: Option<Arc<dyn Authenticator>>,
    /// The API audiences (`--api-audiences`): a credential valid only for other audiences is
    /// refused (empty: any audience).
    pub api_audiences: Vec<String>,
    /// The authorizer; `None` skips authorization.
    pub authorizer: Option<Arc<dyn Authorizer>>,
    /// Audit policy and backend; `None` disables auditing.
    pub auditor: Option<Arc<Auditor>>,
    /// CORS origin regular expressions (empty = no CORS filter).
    pub cors_allowed_origins: Vec<String>,
    /// HSTS directives (empty = no HSTS header).
    pub hsts_directives: Vec<String>,
    /// Non-mutating requests in flight (400); 0 disables that limit.
    pub max_requests_in_flight: usize,
    /// Mutating requests in flight (200); 0 disables that limit.
    pub max_mutating_requests_in_flight: usize,
    /// Default request timeout (60 s); also the HTTP server's shutdown timeout.
    pub request_timeout: Duration,
    /// Base of watch timeouts (1800 s).
    pub min_request_timeout: Duration,
    /// Largest request body (3 MiB); 0 = unlimited.
    pub max_request_body_bytes: usize,
    /// How long post-start-hook livez checks report success after start.
    pub livez_grace_period: Duration,
    /// How long /readyz fails before the server stops accepting requests.
    pub shutdown_delay_duration: Duration,
    /// Keep listening during termination and answer 429 + Retry-After.
    pub shutdown_send_retry_after: bool,
    /// Not upstream: once shutdown is initiated, close each connection after its response
    /// ([`crate::filters::shutdown_close`]), so keep-alive clients move to another replica
    /// during the shutdown delay. Off by default (upstream's chain).
    pub close_connections_during_shutdown: bool,
    /// How long to drain watches (0 = do not wait; they end when the server stops).
    pub shutdown_watch_termination_grace_period: Duration,
    /// Probability of a GOAWAY after an HTTP/2 response (0..0.02).
    pub goaway_chance: f64,
    /// Which requests are long-running (not timed out, not counted in flight).
    pub long_running_check: LongRunningRequestCheck,
    /// Prefixes accepted by `install_legacy_api_group` (`/api`).
    pub legacy_api_group_prefixes: Vec<String>,
    /// Checks of /healthz (`ping`, `log`).
    pub healthz_checks: Vec<SharedHealthChecker>,
    /// Checks of /livez (`ping`, `log`).
    pub livez_checks: Vec<SharedHealthChecker>,
    /// Checks of /readyz (`ping`, `log`; `shutdown` is added by `prepare_run`).
    pub readyz_checks: Vec<SharedHealthChecker>,
    /// Post-start hooks to register at construction.
    pub post_start_hooks: Vec<(String, PostStartHookFn)>,
    /// Hooks that are silently not registered.
    pub disabled_post_start_hooks: BTreeSet<String>,
    /// Serve `/` and `/index.html`, and the index-lister 404.
    pub enable_index: bool,
    /// Serve `/debug/pprof`.
    pub enable_profiling: bool,
    /// Serve `/metrics`.
    pub enable_metrics: bool,
    /// An unauthenticated profiling socket.
    pub debug_socket_path: Option<PathBuf>,
    /// Sets the log verbosity (`PUT /debug/flags/v`, with profiling).
    pub verbosity_setter: Option<FlagSetter>,
    /// What `/version` reports.
    pub version: VersionInfo,
    /// The handler chain builder (default: the upstream-order chain).
    pub build_handler_chain: BuildHandlerChainFn,
    /// The lifecycle signals, shared by the filters that watch them and by `run`.
    pub lifecycle_signals: LifecycleSignals,
    /// Counts non-long-running requests for draining.
    pub non_long_running_request_wait_group: SafeWaitGroup,
    /// Counts watches for draining.
    pub watch_request_wait_group: RateLimitedSafeWaitGroup,
    /// How the server's own hooks reach it.
    pub loopback: LoopbackClientConfig,
    /// Sends systemd's `READY=1` once serving (see [`crate::server::systemd`]).
    pub systemd_notify: bool,
    /// Cancelled when the HTTP server stops. With a shutdown watch grace period of 0, watches
    /// are not drained but end on this, with the server.
    pub watches_end: CancellationToken,
}

impl Config {
    /// Upstream's defaults (`NewConfig`), with lifecycle signals optionally observed.
    pub fn new(observer: Option<Arc<dyn SignalObserver>>) -> Self {
        let default_checks = || vec![ping_check(), log_check()];
        Config {
            secure_serving: None,
            authenticator: None,
            api_audiences: Vec::new(),
            authorizer: None,
            auditor: None,
            cors_allowed_origins: Vec::new(),
            hsts_directives: Vec::new(),
            max_requests_in_flight: 400,
            max_mutating_requests_in_flight: 200,
            request_timeout: Duration::from_secs(60),
            min_request_timeout: Duration::from_secs(1800),
            max_request_body_bytes: 3 * 1024 * 1024,
            livez_grace_period: Duration::ZERO,
            shutdown_delay_duration: Duration::ZERO,
            shutdown_send_retry_after: false,
            close_connections_during_shutdown: false,
            shutdown_watch_termination_grace_period: Duration::ZERO,
            goaway_chance: 0.0,
            long_running_check: LongRunningRequestCheck::basic(&["watch"], &[]),
            legacy_api_group_prefixes: vec!["/api".into()],
            healthz_checks: default_checks(),
            livez_checks: default_checks(),
            readyz_checks: default_checks(),
            post_start_hooks: Vec::new(),
            disabled_post_start_hooks: BTreeSet::new(),
            enable_index: true,
            enable_profiling: true,
            enable_metrics: true,
            debug_socket_path: None,
            verbosity_setter: None,
            version: VersionInfo::default(),
            build_handler_chain: Arc::new(crate::filters::chain::build_default_handler_chain),
            lifecycle_signals: LifecycleSignals::new(observer),
            non_long_running_request_wait_group: SafeWaitGroup::new(),
            watch_request_wait_group: RateLimitedSafeWaitGroup::new(),
            loopback: LoopbackClientConfig {
                bearer_token: new_loopback_token(),
                ..Default::default()
            },
            systemd_notify: true,
            watches_end: CancellationToken::new(),
        }
    }

    /// Completes the configuration (upstream `Complete`): derives the request-info resolver
    /// and lets the loopback client's bearer token authenticate as `system:apiserver` in
    /// `system:masters` (`AuthorizeClientBearerToken`).
    pub fn complete(mut self) -> CompletedConfig {
        let api_prefixes: Vec<String> = std::iter::once("apis".to_string())
            .chain(
                self.legacy_api_group_prefixes
                    .iter()
                    .map(|p| p.trim_matches('/').to_string()),
            )
            .collect();
        let groupless: Vec<String> = self
            .legacy_api_group_prefixes
            .iter()
            .map(|p| p.trim_matches('/').to_string())
            .collect();
        let request_info_resolver = RequestInfoResolver {
            api_prefixes: api_prefixes.into_iter().collect(),
            groupless_api_prefixes: groupless.into_iter().collect(),
        };
        // The loopback client reaches the server through an in-memory certificate served for
        // the SNI name `apiserver-loopback-client` (upstream `serving_with_loopback`).
        if let Some(serving) = &mut self.secure_serving
            && self.loopback.ca_pem.is_none()
        {
            match loopback_cert() {
                Ok(cert) => {
                    serving.static_sni_certs.insert(0, cert.sni_cert());
                    self.loopback.ca_pem = Some(cert.ca_pem.clone());
                    self.loopback.server_name = Some(LOOPBACK_SERVER_NAME.to_string());
                }
                Err(err) => tracing::error!("failed to generate the loopback certificate: {err}"),
            }
        }
        if let (Some(authn), Some(_)) = (&self.authenticator, &self.authorizer)
            && !self.loopback.bearer_token.is_empty()
        {
            self.authenticator = Some(crate::authn::with_loopback_token(
                authn.clone(),
                &self.loopback.bearer_token,
            ));
        }
        let max_in_flight = MaxInFlight::new(
            self.max_requests_in_flight,
            self.max_mutating_requests_in_flight,
        );
        CompletedConfig {
            config: self,
            request_info_resolver,
            max_in_flight,
        }
    }
}

/// A completed configuration, ready for [`CompletedConfig::new`].
pub struct CompletedConfig {
    /// The configuration.
    pub config: Config,
    /// How request paths are parsed.
    pub request_info_resolver: RequestInfoResolver,
    /// The in-flight limiter (shared so its counts can be published as gauges).
    pub max_in_flight: MaxInFlight,
}

impl std::ops::Deref for CompletedConfig {
    type Target = Config;
    fn deref(&self) -> &Config {
        &self.config
    }
}
