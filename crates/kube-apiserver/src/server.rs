//! Builds and runs kube-apiserver from its flags: certificates (generated on first start when
//! none are given), the admin kubeconfig, authentication, authorization, audit, serving, and
//! the server chain.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use apiserver::audit::Auditor;
use apiserver::authn::requestheader::{RequestHeaderConfig, RequestHeaderNames};
use apiserver::authn::{AuthenticatorOptions, StaticClientCa, build_authenticator};
use apiserver::authz::AuthorizationMode;
use apiserver::endpoints::discovery::DiscoveryManager;
use apiserver::registry::rest::RestStorage;
use apiserver::request::requestinfo::LongRunningRequestCheck;
use apiserver::server::GenericApiServer;
use apiserver::server::routes::flags::FlagSetter;
use apiserver::server::routes::notfound::not_found_handler;
use apiserver::server::routes::version::VersionInfo;
use apiserver::server::serving::kubeconfig::write_admin_kubeconfig;
use apiserver::server::serving::selfsigned::ensure_pki;
use apiserver::server::serving::{
    BindAddress, CertKeyFiles, DynamicClientCa, SecureServingInfo, SniCertKey, TlsVersion,
};
use apiserver::server::{Config, EmptyDelegate};
use apiserver::storage::factory::{StorageBackend, StorageOptions};
use apiserver::storage::health::{PROBE_INTERVAL, storage_checks};
use apiserver::util::files::create_private_dir;
use kube_aggregator::{AggregatorConfig, LocalApis, ProxyClientCertFiles};
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use tokio_util::sync::CancellationToken;

use crate::auth::rbac::RbacPolicy;
use crate::auth::{self, AuthDeps, AuthzHandle, AuthzParts};
use crate::bootstrap::system_namespaces_hook;
use crate::frontproxy;
use crate::informers::SharedInformers;
use crate::install::{AuthSetup, install_builtin_apis};
use crate::options::Options;
use crate::registry::authentication::AuthenticatorCell;
use crate::registry::service::ServiceRange;
use crate::serviceaccount::{ServiceAccountConfig, ServiceAccountFlags, openid};
use crate::webhook_resolver::WebhookServiceResolver;

/// The Kubernetes version this server speaks.
pub const KUBERNETES_VERSION: &str = "v1.35.0";

/// This build's `version.Info` (what `/version` and `--version=raw` show).
pub fn version_info() -> VersionInfo {
    VersionInfo::for_build(
        KUBERNETES_VERSION,
        option_env!("APISERVER_GIT_COMMIT").unwrap_or("unknown"),
        option_env!("APISERVER_BUILD_DATE").unwrap_or("1970-01-01T00:00:00Z"),
    )
}

/// `version.Info` in Go's `%#v` notation, as `--version=raw` prints it.
pub fn raw_version(info: &VersionInfo) -> String {
    let fields = [
        ("Major", &info.major),
        ("Minor", &info.minor),
        ("EmulationMajor", &info.emulation_major),
        ("EmulationMinor", &info.emulation_minor),
        ("MinCompatibilityMajor", &info.min_compatibility_major),
        ("MinCompatibilityMinor", &info.min_compatibility_minor),
        ("GitVersion", &info.git_version),
        ("GitCommit", &info.git_commit),
        ("GitTreeState", &info.git_tree_state),
        ("BuildDate", &info.build_date),
        ("GoVersion", &info.go_version),
        ("Compiler", &info.compiler),
        ("Platform", &info.platform),
    ];
    let body: Vec<String> = fields
        .iter()
        .map(|(name, value)| format!("{name}:{value:?}"))
        .collect();
    format!("version.Info{{{}}}", body.join(", "))
}

/// Why the server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A file or directory could not be prepared.
    #[error("{0}")]
    Setup(String),
    /// The server failed while running.
    #[error(transparent)]
    Run(#[from] apiserver::server::run::RunError),
}

fn setup<E: std::fmt::Display>(context: &str) -> impl FnOnce(E) -> StartError + '_ {
    move |err| StartError::Setup(format!("{context}: {err}"))
}

/// Serving certificate, client CA, and (when generated) the admin identity.
struct Certificates {
    serving: CertKeyFiles,
    client_ca: Option<PathBuf>,
    /// Whether the PKI was generated (or reused from an earlier start).
    generated: bool,
    /// The admin kubeconfig's CA, certificate and key, when the client CA trusts them.
    admin: Option<(PathBuf, PathBuf, PathBuf)>,
}

fn certificates(opts: &Options) -> Result<Certificates, StartError> {
    if let (Some(cert), Some(key)) = (&opts.tls_cert_file, &opts.tls_private_key_file) {
        return Ok(Certificates {
            serving: CertKeyFiles {
                cert: cert.clone(),
                key: key.clone(),
            },
            client_ca: opts.client_ca_file.clone(),
            generated: false,
            admin: None,
        });
    }
    let dir = opts
        .cert_dir
        .clone()
        .unwrap_or_else(|| opts.data_dir().join("pki"));
    let mut hosts = Vec::new();
    if !opts.bind_address.is_unspecified() {
        hosts.push(opts.bind_address.to_string());
    }
    let pki = ensure_pki(&dir, &hosts).map_err(setup("generating certificates"))?;
    // Without an explicit client CA, the generated CA signs the admin certificate and
    // authenticates it. An explicit one authenticates it only if it includes that CA: an
    // admin kubeconfig that cannot authenticate is not written.
    let admin_trusted = match &opts.client_ca_file {
        None => true,
        Some(file) => bundle_contains(file, &pki.ca_cert)?,
    };
    Ok(Certificates {
        serving: CertKeyFiles {
            cert: pki.serving_cert.clone(),
            key: pki.serving_key.clone(),
        },
        client_ca: Some(opts.client_ca_file.clone().unwrap_or(pki.ca_cert.clone())),
        generated: true,
        admin: admin_trusted.then_some((pki.ca_cert, pki.admin_cert, pki.admin_key)),
    })
}

/// Whether the PEM bundle `bundle` holds the (first) certificate of `ca`.
fn bundle_contains(bundle: &Path, ca: &Path) -> Result<bool, StartError> {
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject;
    let wanted = CertificateDer::from_pem_file(ca).map_err(setup("reading the generated CA"))?;
    let bundle = std::fs::read(bundle).map_err(setup("--client-ca-file"))?;
    Ok(CertificateDer::pem_slice_iter(&bundle)
        .filter_map(Result::ok)
        .any(|cert| cert == wanted))
}

fn write_kubeconfig(
    path: &Path,
    addr: SocketAddr,
    (ca, cert, key): &(PathBuf, PathBuf, PathBuf),
) -> Result<(), StartError> {
    let read = |p: &PathBuf| std::fs::read(p).map_err(setup("reading generated certificates"));
    // The bound address (127.0.0.1 for a wildcard bind), which the serving certificate names.
    let host = if addr.ip().is_unspecified() {
        SocketAddr::from(([127, 0, 0, 1], addr.port()))
    } else {
        addr
    };
    write_admin_kubeconfig(
        path,
        &format!("https://{host}"),
        &read(ca)?,
        &read(cert)?,
        &read(key)?,
    )
    .map_err(setup("writing the admin kubeconfig"))
}

/// Settings every server of the chain shares: how requests are classified and limited, and
/// what `/version` says (upstream copies the generic config for each server).
fn apply_shared_settings(config: &mut Config, opts: &Options) {
    // kube-apiserver's long-running requests.
    config.long_running_check = LongRunningRequestCheck::basic(
        &["watch", "proxy"],
        &["attach", "exec", "proxy", "log", "portforward"],
    );
    config.version = version_info();
    config.request_timeout = opts.request_timeout.get();
    config.min_request_timeout =
        std::time::Duration::from_secs(u64::try_from(opts.min_request_timeout).unwrap_or(0));
    config.max_request_body_bytes = usize::try_from(opts.max_request_body_bytes).unwrap_or(0);
    // Every server of the chain installs its own `/debug/pprof` unless profiling is off.
    config.enable_profiling = opts.profiling;
}

/// The authorizer modes in force: those of `--authorization-config` when given, else
/// `--authorization-mode`'s.
fn authorizer_modes(
    opts: &Options,
    flag_modes: &[AuthorizationMode],
) -> Result<Vec<AuthorizationMode>, StartError> {
    let Some(path) = &opts.authorization_config else {
        return Ok(flag_modes.to_vec());
    };
    let config = apiserver::apis::apiserver::authorization::AuthorizationConfiguration::load(path)
        .map_err(|e| {
            StartError::Setup(format!(
                "failed to load authorization config from file {:?}: {e}",
                path.display()
            ))
        })?;
    Ok(auth::authorization_config::configured_types(&config)
        .iter()
        .filter_map(|t| t.parse().ok())
        .collect())
}

/// Whether anonymous requests are authenticated: upstream turns `--anonymous-auth` off when
/// AlwaysAllow is one of the authorizers (otherwise anyone could do anything), with a warning.
fn anonymous_allowed(anonymous_auth: bool, modes: &[AuthorizationMode]) -> bool {
    if anonymous_auth && modes.contains(&AuthorizationMode::AlwaysAllow) {
        tracing::warn!(
            "AnonymousAuth is not allowed with the AlwaysAllow authorizer. Resetting AnonymousAuth to false. You should use a different authorizer"
        );
        return false;
    }
    anonymous_auth
}

/// The configuration of a server the aggregator delegates to: it never listens, authenticates
/// or filters (the running server's handler chain has done that); what it contributes is its
/// routes, hooks, health checks and mux-complete signals.
fn delegate_config(opts: &Options) -> Config {
    let mut config = Config::new(None);
    apply_shared_settings(&mut config, opts);
    config
}

/// The front-proxy authentication of `--requestheader-*` (upstream builds it only when
/// `--requestheader-client-ca-file` is set). The CA bundle is read once, at start.
fn request_header_config(opts: &Options) -> Result<Option<RequestHeaderConfig>, StartError> {
    let Some(ca) = opts.requestheader_client_ca_file.as_ref() else {
        return Ok(None);
    };
    let certs = CertificateDer::pem_file_iter(ca)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(setup("--requestheader-client-ca-file"))?;
    if certs.is_empty() {
        return Err(StartError::Setup(format!(
            "--requestheader-client-ca-file: no certificates in {}",
            ca.display()
        )));
    }
    Ok(Some(RequestHeaderConfig {
        names: RequestHeaderNames {
            username_headers: opts.requestheader_username_headers.clone(),
            uid_headers: opts.requestheader_uid_headers.clone(),
            group_headers: opts.requestheader_group_headers.clone(),
            extra_header_prefixes: opts.requestheader_extra_headers_prefix.clone(),
        },
        client_ca: Arc::new(StaticClientCa(Arc::new(certs))),
        allowed_names: opts.requestheader_allowed_names.clone(),
    }))
}

/// Installs the aggregation layer on the running server of the chain: APIServices, the
/// local ones for every group-version of the kube API and apiextensions servers, and the
/// proxy to remote ones.
fn install_aggregator(
    aggregator: &GenericApiServer,
    opts: &Options,
    backend: &StorageBackend,
    stores: &crate::install::Stores,
    kube: &GenericApiServer,
    apiextensions: &GenericApiServer,
) -> Result<kube_aggregator::Controller, StartError> {
    let store = |resource: &str| {
        stores
            .get(&(String::new(), resource.to_string()))
            .map(|s| Arc::new(s.clone()) as Arc<dyn RestStorage>)
    };
    let services = store("services")
        .ok_or_else(|| StartError::Setup("the aggregator needs the services storage".into()))?;
    let proxy_client_cert = match (&opts.proxy_client_cert_file, &opts.proxy_client_key_file) {
        (Some(cert), Some(key)) => Some(ProxyClientCertFiles {
            cert: cert.clone(),
            key: key.clone(),
        }),
        _ => None,
    };
    kube_aggregator::install(
        aggregator,
        AggregatorConfig {
            storage: backend.storage.clone(),
            prefix: backend.prefix.clone(),
            services,
            endpoints: store("endpoints"),
            enable_aggregator_routing: opts.enable_aggregator_routing,
            reject_forwarding_redirects: opts.aggregator_reject_forwarding_redirect,
            proxy_client_cert,
            local: LocalApis {
                builtin: vec![kube.handler().api_routes.clone()],
                custom: vec![apiextensions.handler().api_routes.clone()],
                own: Vec::new(),
            },
            resync_interval: AGGREGATOR_RESYNC,
            openapi_delegate: Some(kube.handler().director.clone()),
        },
    )
    .map_err(setup("installing the aggregator"))
}

/// The admission chain of the flags and the admission configuration file, built on the
/// server's informers.
fn build_admission(
    opts: &Options,
    deps: &AuthDeps<'_>,
    stores: &crate::install::Stores,
    authz: &crate::auth::AuthzHandle,
    crds: &apiextensions::ApiextensionsHandle,
) -> Result<Arc<apiserver::admission::Chain>, StartError> {
    let store = |resource: &str| {
        stores
            .get(&(String::new(), resource.to_string()))
            .map(|s| Arc::new(s.clone()) as Arc<dyn RestStorage>)
    };
    let service_resolver = store("services").map(|services| {
        kube_aggregator::ServiceResolver::new(
            services,
            store("endpoints"),
            opts.enable_aggregator_routing,
        )
    });
    let proxy_client = match (&opts.proxy_client_cert_file, &opts.proxy_client_key_file) {
        (Some(cert), Some(key)) => Some((cert.clone(), key.clone())),
        _ => None,
    };
    let base = crate::admission::PluginContext {
        informers: deps.informers.clone(),
        authz: authz.clone(),
        config: None,
        config_dir: None,
        service_resolver,
        proxy_client,
        options: Arc::new(opts.clone()),
        stop: deps.stop.clone(),
        custom_resources: Some(Arc::new(
            crate::admission::custom_resources::CustomResources::new(
                {
                    let informer =
                        apiserver::registry::informer::Informer::new(Arc::new(crds.crds.clone()));
                    informer.start(deps.stop.clone());
                    informer
                },
                {
                    let serving = crds.serving.clone();
                    Arc::new(move |name: &str| serving.store_of(name))
                },
                deps.stop.clone(),
            ),
        )),
    };
    crate::admission::build_chain(opts, &base, &crate::admission::Registry::all())
        .map(Arc::new)
        .map_err(StartError::Setup)
}

/// Publishes custom resources' OpenAPI documents, then has the aggregator re-read them.
struct ThenResyncAggregator {
    inner: apiextensions::ServicePublisher,
    aggregator: kube_aggregator::Controller,
}

impl apiextensions::OpenApiPublisher for ThenResyncAggregator {
    fn publish(&self, served: &[apiextensions::CustomResourceOpenApi]) {
        self.inner.publish(served);
        self.aggregator.trigger();
    }
}

/// How often remote APIServices are re-checked besides on changes (upstream: 30 s).
const AGGREGATOR_RESYNC: std::time::Duration = std::time::Duration::from_secs(30);

/// The `--service-account-*` and `--api-audiences` settings, the signing key generated in
/// the certificate directory when none is given.
fn service_accounts(opts: &Options) -> Result<ServiceAccountConfig, StartError> {
    let cert_dir = opts
        .cert_dir
        .clone()
        .unwrap_or_else(|| opts.data_dir().join("pki"));
    let flags = ServiceAccountFlags {
        issuers: opts.service_account_issuer.clone(),
        key_files: opts.service_account_key_file.clone(),
        signing_key_file: opts.service_account_signing_key_file.clone(),
        api_audiences: opts.api_audiences.clone(),
        max_expiration: opts.service_account_max_token_expiration.get(),
        extend_expiration: opts.service_account_extend_token_expiration,
        lookup: opts.service_account_lookup,
        jwks_uri: opts.service_account_jwks_uri.clone(),
    };
    ServiceAccountConfig::resolve(&flags, &cert_dir).map_err(|e| StartError::Setup(e.to_string()))
}

/// Serves the issuer's discovery documents on `mux`; when the issuer is not an https URL they
/// are left out with upstream's log line.
fn install_issuer_discovery(
    mux: &apiserver::server::mux::PathRecorderMux,
    sa: &ServiceAccountConfig,
    external_address: &str,
) {
    let jwks_uri = openid::jwks_uri(sa.jwks_uri.as_deref(), external_address);
    match openid::render(sa.issuer(), &jwks_uri, &sa.public_keys) {
        Ok(metadata) => openid::install(mux, metadata),
        Err(err) => tracing::info!(
            "Could not construct pre-rendered responses for ServiceAccountIssuerDiscovery endpoints. Endpoints will not be enabled. Error: {err}"
        ),
    }
}

/// The storage options of the etcd flags of issue 11 (`--etcd-servers-overrides`, the check
/// timeouts, `--watch-cache`, `--watch-cache-sizes`); validation has parsed them already.
fn etcd_storage_options(opts: &Options) -> StorageOptions {
    use apiserver::storage::factory::{
        DEFAULT_CHECK_TIMEOUT, parse_etcd_servers_overrides, parse_watch_cache_sizes,
    };
    if opts.default_watch_cache_size.is_some() {
        tracing::warn!(
            "Flag --default-watch-cache-size has been deprecated, Watch caches are sized automatically. This flag is no-op and it will be removed in a future version."
        );
    }
    let sizes = parse_watch_cache_sizes(&opts.watch_cache_sizes).unwrap_or_default();
    for ((group, resource), size) in &sizes {
        if *size > 0 {
            let resource = if group.is_empty() {
                resource.clone()
            } else {
                format!("{resource}.{group}")
            };
            tracing::warn!(
                "Dropping watch-cache-size for {resource} - watchCache size is now dynamic"
            );
        }
    }
    let timeout = |d: crate::options::GoDuration| match d.get() {
        std::time::Duration::ZERO => DEFAULT_CHECK_TIMEOUT,
        d => d,
    };
    StorageOptions {
        etcd_servers_overrides: parse_etcd_servers_overrides(&opts.etcd_servers_overrides)
            .unwrap_or_default(),
        healthcheck_timeout: timeout(opts.etcd_healthcheck_timeout),
        readycheck_timeout: timeout(opts.etcd_readycheck_timeout),
        watch_cache: apiserver::storage::router::WatchCachePolicy {
            enabled: opts.watch_cache,
            sizes,
        },
        ..StorageOptions::default()
    }
}

/// Builds the server from `opts` and runs it until `stop`.
pub async fn run(
    opts: Options,
    verbosity: FlagSetter,
    stop: CancellationToken,
) -> Result<(), StartError> {
    // Drop-in flag sets (envtest, kubeadm): feature gate warnings, --allow-privileged, the
    // kubelet client flags (their files are read and checked, as upstream does at start).
    crate::features::log_feature_gate_warnings(&opts.feature_gates);
    for warning in crate::accepted_flags::warnings(&opts) {
        tracing::warn!("{warning}");
    }
    crate::apis::podspec::set_allow_privileged(opts.allow_privileged);
    let kubelet = crate::kubelet_client::KubeletClientConfig::from_options(&opts)
        .map_err(StartError::Setup)?;
    if kubelet.has_tls_files() {
        tracing::info!(
            "kubelet client certificates loaded; this server proxies no requests to kubelets"
        );
    }
    if opts.enable_priority_and_fairness {
        tracing::debug!(
            "--enable-priority-and-fairness: no APF here; --max-requests-inflight and --max-mutating-requests-inflight apply"
        );
    }
    // The server's identity (upstream APIServerID: from the host name) and the replica
    // controllers' intervals.
    let hostname = crate::controllers::apiserveridentity::hostname().map_err(StartError::Setup)?;
    let apiserver_id = crate::controllers::apiserveridentity::apiserver_id(&hostname);
    let intervals =
        crate::controllers::intervals::Intervals::from_env().map_err(StartError::Setup)?;
    // Encryption at rest before anything touches storage: a bad configuration stops here.
    let encryption = Arc::new(
        crate::encryption::Encryption::from_flags(
            opts.encryption_provider_config.as_ref(),
            opts.encryption_provider_config_automatic_reload,
            &apiserver_id,
        )
        .map_err(StartError::Setup)?,
    );
    let data_dir = opts.data_dir();
    create_private_dir(&data_dir).map_err(setup("creating --data-dir"))?;
    // Storage first: it owns the data directory, so a second server on the same directory
    // stops here with a clear error before touching anything else.
    let backend = StorageBackend::open(&StorageOptions {
        data_dir: data_dir.clone(),
        etcd_servers: opts.etcd_servers.clone(),
        etcd_prefix: opts.etcd_prefix.clone(),
        etcd_cafile: opts.etcd_cafile.clone(),
        etcd_certfile: opts.etcd_certfile.clone(),
        etcd_keyfile: opts.etcd_keyfile.clone(),
        compaction_interval: opts.etcd_compaction_interval.get(),
        transformers: encryption.transformers.clone(),
        ..etcd_storage_options(&opts)
    })
    .await
    .map_err(setup("opening storage"))?;
    let certs = certificates(&opts)?;
    let service_accounts = Arc::new(service_accounts(&opts)?);
    let mut opts = opts;
    let no_front_proxy_flags = opts.requestheader_client_ca_file.is_none()
        && opts.proxy_client_cert_file.is_none()
        && opts.proxy_client_key_file.is_none();
    if certs.generated && no_front_proxy_flags {
        // First-start PKI: the aggregator gets a front-proxy identity too.
        let dir = opts
            .cert_dir
            .clone()
            .unwrap_or_else(|| opts.data_dir().join("pki"));
        let pki = frontproxy::ensure_front_proxy_pki(&dir).map_err(StartError::Setup)?;
        frontproxy::apply_defaults(&mut opts, &pki);
    }

    // Bind first, so the admin kubeconfig carries the real port (also with --secure-port=0).
    let port = u16::try_from(opts.secure_port).unwrap_or(0);
    let listener =
        std::net::TcpListener::bind(SocketAddr::new(opts.bind_address, port)).map_err(|e| {
            StartError::Setup(format!(
                "failed to listen on {}: {e}",
                SocketAddr::new(opts.bind_address, port)
            ))
        })?;
    let addr = listener.local_addr().map_err(setup("listener address"))?;
    if let Some(admin) = &certs.admin {
        let path = data_dir.join("admin.kubeconfig");
        write_kubeconfig(&path, addr, admin)?;
        let shown = std::fs::canonicalize(&path).unwrap_or(path);
        println!("kubectl --kubeconfig {} get --raw /readyz", shown.display());
    } else if let (true, Some(client_ca)) = (certs.generated, &opts.client_ca_file) {
        // A kubeconfig from an earlier start could not authenticate any more either.
        let _ = std::fs::remove_file(data_dir.join("admin.kubeconfig"));
        let token = if opts.token_auth_file.is_some() {
            " or a token from --token-auth-file"
        } else {
            ""
        };
        println!(
            "no admin kubeconfig written: --client-ca-file {} does not include the generated CA; authenticate to https://{addr} with a client certificate it trusts{token}",
            client_ca.display()
        );
    }

    let mut info = SecureServingInfo::new(BindAddress::Listener(listener), certs.serving);
    for value in &opts.tls_sni_cert_key {
        info.sni_certs
            .push(SniCertKey::parse(value).map_err(setup("--tls-sni-cert-key"))?);
    }
    if let Some(version) = &opts.tls_min_version {
        info.min_tls_version = TlsVersion::parse(version).map_err(setup("--tls-min-version"))?;
    }
    info.cipher_suites = opts.tls_cipher_suites.clone();
    info.http2_max_streams_per_connection =
        u32::try_from(opts.http2_max_streams_per_connection).unwrap_or(0);
    info.disable_http2 = opts.disable_http2_serving;
    let client_ca = certs.client_ca.as_ref().map(DynamicClientCa::new);
    info.client_ca = client_ca.clone();

    let mut config = Config::new(None);
    config.secure_serving = Some(info);
    let modes = opts
        .authorization_mode
        .iter()
        .map(|m| m.parse::<AuthorizationMode>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(setup("--authorization-mode"))?;
    // Built once the stores exist (below): some authenticators and authorizers read API
    // objects (service accounts, RBAC, the node graph).
    let mut authn_options = AuthenticatorOptions {
        client_ca: client_ca.map(|ca| Arc::new(ca) as _),
        token_file: opts.token_auth_file.clone(),
        anonymous: anonymous_allowed(opts.anonymous_auth, &authorizer_modes(&opts, &modes)?),
        anonymous_paths: Vec::new(),
        request_header: request_header_config(&opts)?,
        token_authenticators: Vec::new(),
        token_success_cache_ttl: apiserver::authn::tokencache::DEFAULT_SUCCESS_TTL,
    };
    if opts.audit_webhook_batch_initial_backoff.is_some() {
        tracing::warn!(
            "Flag --audit-webhook-batch-initial-backoff has been deprecated, Deprecated, use --audit-webhook-initial-backoff instead."
        );
    }
    config.auditor = Auditor::from_options(&opts.audit_options()).map_err(setup("audit"))?;
    config.api_audiences = service_accounts.api_audiences.clone();
    config.cors_allowed_origins = opts.cors_allowed_origins.clone();
    config.hsts_directives = opts.strict_transport_security_directives.clone();
    config.max_requests_in_flight = usize::try_from(opts.max_requests_inflight).unwrap_or(0);
    config.max_mutating_requests_in_flight =
        usize::try_from(opts.max_mutating_requests_inflight).unwrap_or(0);
    config.livez_grace_period = opts.livez_grace_period.get();
    config.shutdown_delay_duration = opts.shutdown_delay_duration.get();
    config.shutdown_send_retry_after = opts.shutdown_send_retry_after;
    // Keep-alive clients leave during the shutdown delay (README, "Rolling restart").
    config.close_connections_during_shutdown = true;
    config.shutdown_watch_termination_grace_period =
        opts.shutdown_watch_termination_grace_period.get();
    config.goaway_chance = opts.goaway_chance;
    config.debug_socket_path = opts.debug_socket_path.clone();
    config.verbosity_setter = Some(verbosity);
    apply_shared_settings(&mut config, &opts);

    // The chain, as upstream's CreateServerChain builds it: the aggregator runs and serves;
    // paths it does not serve fall through to the kube API server, then to the apiextensions
    // server, then to the not-found handler (503 until every path is installed, then 404).
    // All three advertise through one discovery manager, so /api and /apis list every group.
    // Discovery names the advertise address (upstream's external host), and the service IP to
    // clients inside the service range.
    let advertise = crate::advertise::advertise_address(opts.advertise_address, opts.bind_address);
    let discovery =
        DiscoveryManager::new(crate::controllers::kubernetesservice::discovery_addresses(
            SocketAddr::new(advertise, addr.port()),
            &opts.service_cluster_ip_range,
        ));
    let not_found = EmptyDelegate::with_handler(not_found_handler());
    let apiextensions = delegate_config(&opts)
        .complete()
        .new("apiextensions-apiserver", Arc::new(not_found))
        .map_err(setup("creating the apiextensions server"))?;
    apiextensions.share_discovery(discovery.clone());
    apiextensions.set_protobuf_decoder(Arc::new(|body: &[u8]| {
        apiserver::endpoints::protobuf::decode_kubernetes_protobuf(body)
    }));
    // Installed before the kube API server is built: a server copies its delegate's hooks,
    // health checks and mux-complete signals when it is created. OpenAPI publishing waits for
    // the built-in documents.
    let crd_openapi = Arc::new(apiextensions::DeferredPublisher::new());
    // Conversion webhooks' Service references resolve once the Service storage exists.
    let webhook_resolver = Arc::new(apiextensions::DeferredServiceResolver::new());
    let crds = apiextensions::install(
        &apiextensions,
        backend.storage.clone(),
        &backend.prefix,
        crd_openapi.clone(),
        apiextensions::Seams {
            service_resolver: webhook_resolver.clone(),
            ..apiextensions::Seams::default()
        },
    )
    .map_err(setup("installing the apiextensions API"))?;
    let server = delegate_config(&opts)
        .complete()
        .new("kube-apiserver", Arc::new(apiextensions.clone()))
        .map_err(setup("creating the server"))?;
    server.share_discovery(discovery.clone());
    server.set_protobuf_decoder(Arc::new(|body: &[u8]| {
        apiserver::endpoints::protobuf::decode_kubernetes_protobuf(body)
    }));
    let service_range = ServiceRange::parse(&opts.service_cluster_ip_range)
        .map_err(|e| StartError::Setup(format!("--service-cluster-ip-range: {e}")))?;
    let authenticator_cell = AuthenticatorCell::default();
    // The access reviews and the RBAC storages reach the authorizer through this handle,
    // filled in once the authorizer is built from the stores.
    let authz = AuthzHandle::default();
    let (stores, (openapi_service, openapi_v2)) = install_builtin_apis(
        &server,
        backend.storage.clone(),
        &backend.prefix,
        service_range,
        &AuthSetup {
            token_issuer: Arc::new(service_accounts.token_issuer()),
            authenticator: authenticator_cell.clone(),
            api_audiences: service_accounts.api_audiences.clone(),
            authz: authz.clone(),
        },
        crate::features::served_groups(&opts, crate::apis::builtin_groups()),
    )
    .map_err(|e| StartError::Setup(format!("installing the built-in APIs: {e}")))?;
    // Upstream's external host: --external-hostname, else the advertise address.
    let external = crate::accepted_flags::external_address(&opts, addr);
    install_issuer_discovery(&server.handler().non_api_mux, &service_accounts, &external);
    if let Some(services) = stores.get(&(String::new(), "services".to_string())) {
        let endpoints = stores
            .get(&(String::new(), "endpoints".to_string()))
            .map(|s| Arc::new(s.clone()) as Arc<dyn RestStorage>);
        webhook_resolver.set(Arc::new(WebhookServiceResolver::new(
            Arc::new(services.clone()),
            endpoints,
            opts.enable_aggregator_routing,
            addr,
        )));
    }
    server
        .add_post_start_hook(
            "start-system-namespaces-controller",
            system_namespaces_hook(&stores).map_err(StartError::Setup)?,
        )
        .map_err(setup("registering hooks"))?;
    // The kubernetes Service and its endpoints; this server's identity lease.
    crate::controllers::kubernetesservice::register(
        &server,
        crate::controllers::kubernetesservice::Registration {
            opts: &opts,
            stores: &stores,
            storage: backend.storage.clone(),
            prefix: &backend.prefix,
            advertise,
            port: addr.port(),
            service_ip: service_range.first().to_string(),
            intervals,
        },
    )
    .map_err(StartError::Setup)?;
    crate::controllers::apiserveridentity::register(
        &server,
        &stores,
        &apiserver_id,
        &hostname,
        &intervals,
    )
    .map_err(StartError::Setup)?;
    server
        .add_post_start_hook(
            crate::bootstrap::SYSTEM_PRIORITY_CLASSES_HOOK,
            crate::bootstrap::system_priority_classes_hook(&stores).map_err(StartError::Setup)?,
        )
        .map_err(setup("registering hooks"))?;
    server
        .add_post_start_hook(
            "namespace-controller",
            crate::registry::namespace::namespace_controller_hook(stores.clone()),
        )
        .map_err(setup("registering hooks"))?;
    if let Some(configmaps) = stores.get(&(String::new(), "configmaps".to_string())) {
        let data = frontproxy::authentication_info(certs.client_ca.as_deref(), &opts)
            .map_err(StartError::Setup)?;
        server
            .add_post_start_hook(
                "start-cluster-authentication-info-controller",
                frontproxy::authentication_info_hook(configmaps.clone(), data),
            )
            .map_err(setup("registering hooks"))?;
    }
    // Authentication and authorization of the aggregator's handler chain (the only one that
    // authenticates: the delegates serve behind it).
    let informers_stop = CancellationToken::new();
    let informers = SharedInformers::new(stores.clone(), informers_stop.clone());
    let rbac = RbacPolicy::start(&informers).map_err(StartError::Setup)?;
    let deps = AuthDeps {
        opts: &opts,
        informers,
        stop: informers_stop.clone(),
        service_accounts: service_accounts.clone(),
        rbac: rbac.clone(),
        apiserver_id: apiserver_id.clone(),
    };
    authn_options.token_authenticators =
        auth::authenticator::token_authenticators(&deps).map_err(StartError::Setup)?;
    if let Some(anonymous) = auth::jwt::anonymous_from_config(&opts).map_err(StartError::Setup)? {
        authn_options.anonymous = anonymous.enabled;
        authn_options.anonymous_paths = anonymous.paths;
    }
    config.authenticator =
        build_authenticator(&authn_options).map_err(setup("--token-auth-file"))?;
    if let Some(authenticator) = &config.authenticator {
        // TokenReview runs the server's own authenticator.
        let _ = authenticator_cell.set(authenticator.clone());
    }
    let authorizer = match auth::authorizer::build_from_config(&deps).map_err(StartError::Setup)? {
        Some(authorizer) => authorizer,
        None => auth::authorizer::build(&modes, &deps).map_err(setup("--authorization-mode"))?,
    };
    authz.set(AuthzParts {
        authorizer: authorizer.clone(),
        rbac,
    });
    config.authorizer = Some(authorizer);
    let admission = build_admission(&opts, &deps, &stores, &authz, &crds)?;
    server.set_admission(Some(admission.clone()));
    apiextensions.set_admission(Some(admission.clone()));
    // Every namespace's `default` service account, which the ServiceAccount plugin gives pods.
    if let (Some(namespaces), Some(accounts), Some(store)) = (
        deps.informers.informer("", "namespaces"),
        deps.informers.informer("", "serviceaccounts"),
        stores.get(&(String::new(), "serviceaccounts".to_string())),
    ) {
        server
            .add_post_start_hook(
                crate::controllers::serviceaccounts::HOOK_NAME,
                crate::controllers::serviceaccounts::service_account_controller_hook(
                    namespaces,
                    accounts,
                    store.clone(),
                ),
            )
            .map_err(setup("registering hooks"))?;
    }
    // The finalizers of StorageObjectInUseProtection, removed once claims and volumes are free.
    let informer = |resource: &str| deps.informers.informer("", resource);
    let store = |resource: &str| stores.get(&(String::new(), resource.to_string())).cloned();
    if let (Some(claims), Some(volumes), Some(pods), Some(claim_store), Some(volume_store)) = (
        informer("persistentvolumeclaims"),
        informer("persistentvolumes"),
        informer("pods"),
        store("persistentvolumeclaims"),
        store("persistentvolumes"),
    ) {
        use crate::controllers::storage_protection::{
            HOOK_NAME, Resources, storage_protection_hook,
        };
        server
            .add_post_start_hook(
                HOOK_NAME,
                storage_protection_hook(Resources {
                    claims,
                    volumes,
                    pods,
                    claim_store,
                    volume_store,
                }),
            )
            .map_err(setup("registering hooks"))?;
    }
    if let Some(hook) = crate::admission::policy::status::hook(&deps.informers) {
        server
            .add_post_start_hook(crate::admission::policy::status::HOOK_NAME, hook)
            .map_err(setup("registering hooks"))?;
    }
    // The default RBAC policy, then the ClusterRole aggregation controller on the shared
    // ClusterRole informer.
    server
        .add_post_start_hook(
            crate::bootstrappolicy::hook::HOOK_NAME,
            crate::bootstrappolicy::hook::bootstrap_roles_hook(
                &stores,
                deps.informers
                    .informer("rbac.authorization.k8s.io", "clusterroles"),
            )
            .map_err(StartError::Setup)?,
        )
        .map_err(setup("registering hooks"))?;
    // The resource quota controller keeps quotas' status.hard and status.used current.
    let crd_serving = crds.serving.clone();
    server
        .add_post_start_hook(
            crate::controllers::resourcequota::HOOK_NAME,
            crate::controllers::resourcequota::hook(
                deps.informers.clone(),
                Some(Arc::new(move |name: &str| crd_serving.store_of(name))),
            )
            .map_err(StartError::Setup)?,
        )
        .map_err(setup("registering hooks"))?;
    if let Some(hook) = encryption.reload_hook() {
        server
            .add_post_start_hook(crate::encryption::RELOAD_HOOK_NAME, hook)
            .map_err(setup("registering hooks"))?;
        server
            .add_health_checks_without_livez(encryption.health_checks())
            .map_err(setup("registering the encryption health checks"))?;
    }
    let probes = CancellationToken::new();
    let storage_checks = storage_checks(&backend, PROBE_INTERVAL, &probes);
    server
        .add_health_checks(storage_checks.health)
        .map_err(setup("registering the storage health checks"))?;
    let aggregator = config
        .complete()
        .new("kube-aggregator", Arc::new(server.clone()))
        .map_err(setup("creating the aggregator"))?;
    // Readyz-only checks are not inherited from a delegate: the served chain gets them itself.
    aggregator
        .add_readyz_checks(storage_checks.readiness)
        .map_err(setup("registering the storage readiness checks"))?;
    aggregator.share_discovery(discovery);
    aggregator.set_admission(Some(admission));
    let aggregator_controller = install_aggregator(
        &aggregator,
        &opts,
        &backend,
        &stores,
        &server,
        &apiextensions,
    )?;
    // Custom resources' OpenAPI goes into the kube API server's documents; the aggregator, which
    // serves the merged documents, re-reads them when they change.
    crd_openapi.set(Arc::new(ThenResyncAggregator {
        inner: apiextensions::ServicePublisher::new(openapi_service, Some(openapi_v2)),
        aggregator: aggregator_controller,
    }));
    let server = aggregator;
    let result = server.prepare_run().run(stop).await;
    probes.cancel();
    informers_stop.cancel();
    drop(backend);
    result?;
    tracing::info!("kube-apiserver stopped");
    Ok(())
}
