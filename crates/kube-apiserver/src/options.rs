//! kube-apiserver's command-line flags, with upstream's names, defaults, Go-style values
//! (`1m30s` durations, `--flag`/`--flag=false` booleans, repeatable and comma-separated lists),
//! `--help` grouped in upstream's named sections, and upstream's validation rules.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use apiserver::util::duration;
use clap::{ArgAction, Parser};

/// A Go duration flag value that may be negative (validation rejects negatives with
/// upstream's messages rather than a parse error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GoDuration {
    /// Whether the value was negative.
    pub negative: bool,
    /// The magnitude.
    pub value: Duration,
}

impl GoDuration {
    /// The duration, or zero when negative (only used after validation).
    pub fn get(self) -> Duration {
        if self.negative {
            Duration::ZERO
        } else {
            self.value
        }
    }
}

fn parse_go_duration(s: &str) -> Result<GoDuration, String> {
    duration::parse_signed(s)
        .map(|(negative, value)| GoDuration { negative, value })
        .map_err(|e| e.to_string())
}

/// What `--version` asks for (upstream `verflag`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VersionFlag {
    /// `--version` / `--version=true`: `Kubernetes v1.35.0`, then exit.
    Print,
    /// `--version=raw`: the whole `version.Info` in Go's `%#v`, then exit.
    Raw,
    /// `--version=false`: run as usual.
    Off,
}

/// `raw` or a boolean as Go's `strconv.ParseBool` reads it.
fn parse_version_flag(s: &str) -> Result<VersionFlag, String> {
    match s {
        "raw" => Ok(VersionFlag::Raw),
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(VersionFlag::Print),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(VersionFlag::Off),
        _ => Err(format!("strconv.ParseBool: parsing {s:?}: invalid syntax")),
    }
}

/// All flags of the binary.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "kube-apiserver",
    version,
    about = "The Kubernetes API server validates and configures data for the api objects which \
             include pods, services, replicationcontrollers, and others.",
    long_about = None,
    disable_version_flag = true,
    next_line_help = false
)]
pub struct Options {
    // ----- Generic flags -----
    /// Maximum number of non-mutating requests in flight at a given time. When the server
    /// exceeds this, it rejects requests. Zero for no limit.
    #[arg(
        long,
        default_value_t = 400,
        allow_negative_numbers = true,
        help_heading = "Generic flags"
    )]
    pub max_requests_inflight: i64,
    /// Maximum number of mutating requests in flight at a given time. Zero for no limit.
    #[arg(
        long,
        default_value_t = 200,
        allow_negative_numbers = true,
        help_heading = "Generic flags"
    )]
    pub max_mutating_requests_inflight: i64,
    /// Default request timeout; may be overridden lower by the ?timeout= query parameter.
    #[arg(long, default_value = "1m0s", value_parser = parse_go_duration, allow_hyphen_values = true, help_heading = "Generic flags")]
    pub request_timeout: GoDuration,
    /// Minimum number of seconds a handler must keep a request open before timing it out
    /// (watches last between this and twice this).
    #[arg(
        long,
        default_value_t = 1800,
        allow_negative_numbers = true,
        help_heading = "Generic flags"
    )]
    pub min_request_timeout: i64,
    /// Largest accepted request body in bytes (create, update, patch, delete). 0 = unlimited.
    #[arg(long, default_value_t = 3 * 1024 * 1024, allow_negative_numbers = true, help_heading = "Generic flags")]
    pub max_request_body_bytes: i64,
    /// Grace period during which livez checks of post-start hooks report success.
    #[arg(long, default_value = "0s", value_parser = parse_go_duration, allow_hyphen_values = true, help_heading = "Generic flags")]
    pub livez_grace_period: GoDuration,
    /// Time to delay the termination: /readyz fails while requests are still served.
    #[arg(long, default_value = "0s", value_parser = parse_go_duration, allow_hyphen_values = true, help_heading = "Generic flags")]
    pub shutdown_delay_duration: GoDuration,
    /// Keep listening during graceful termination and answer new requests with 429 and
    /// Retry-After instead of closing the listener.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", action = ArgAction::Set, help_heading = "Generic flags")]
    pub shutdown_send_retry_after: bool,
    /// How long to let active watches drain during graceful termination (0 = don't wait).
    #[arg(long, default_value = "0s", value_parser = parse_go_duration, allow_hyphen_values = true, help_heading = "Generic flags")]
    pub shutdown_watch_termination_grace_period: GoDuration,
    /// Allowed origins for CORS, as regular expressions (comma separated, repeatable).
    /// Each must be anchored: start with `^` or `//` and end with `$` or `:`.
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, help_heading = "Generic flags")]
    pub cors_allowed_origins: Vec<String>,
    /// HSTS directives (comma separated): max-age=N, includeSubDomains, preload.
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, help_heading = "Generic flags")]
    pub strict_transport_security_directives: Vec<String>,
    /// Probability (0..0.02) to send a GOAWAY to an HTTP/2 client after a response.
    #[arg(
        long,
        default_value_t = 0.0,
        allow_negative_numbers = true,
        help_heading = "Generic flags"
    )]
    pub goaway_chance: f64,
    /// If set, an unauthenticated unix socket at this path serves profiling.
    #[arg(long, help_heading = "Generic flags")]
    pub debug_socket_path: Option<PathBuf>,
    /// Enable profiling via the web interface host:port/debug/pprof/.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "true", action = ArgAction::Set, help_heading = "Generic flags")]
    pub profiling: bool,

    // ----- Etcd flags -----
    /// Directory of the embedded storage, generated certificates and the admin kubeconfig
    /// (default ./apiserver-data; with --etcd-servers and --cert-dir, the cert dir).
    #[arg(long, help_heading = "Etcd flags")]
    pub data_dir: Option<PathBuf>,
    /// etcd servers to connect to (scheme://ip:port, comma separated). Empty = embedded storage.
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, help_heading = "Etcd flags")]
    pub etcd_servers: Vec<String>,
    /// The prefix to prepend to all resource paths in etcd.
    #[arg(long, default_value = "/registry", help_heading = "Etcd flags")]
    pub etcd_prefix: String,
    /// SSL Certificate Authority file used to secure etcd communication.
    #[arg(long, help_heading = "Etcd flags")]
    pub etcd_cafile: Option<PathBuf>,
    /// SSL certification file used to secure etcd communication.
    #[arg(long, help_heading = "Etcd flags")]
    pub etcd_certfile: Option<PathBuf>,
    /// SSL key file used to secure etcd communication.
    #[arg(long, help_heading = "Etcd flags")]
    pub etcd_keyfile: Option<PathBuf>,
    /// The interval of compaction requests. 0 disables compaction.
    #[arg(long, default_value = "5m0s", value_parser = parse_go_duration, allow_hyphen_values = true, help_heading = "Etcd flags")]
    pub etcd_compaction_interval: GoDuration,
    // ----- etcd backend selection, overrides, health and watch cache (issue 11) -----
    /// The storage backend for persistence. Options: 'etcd3' (default). The etcd3 backend
    /// is used when --etcd-servers is given, the embedded store otherwise.
    #[arg(long, default_value = "", help_heading = "Etcd flags")]
    pub storage_backend: String,
    /// Per-resource etcd servers overrides, comma separated. The individual override format:
    /// group/resource#servers, where servers are URLs, semicolon separated. Note that this
    /// applies only to resources compiled into this server binary. e.g.
    /// "/pods#http://etcd4:2379;http://etcd5:2379,/events#http://etcd6:2379"
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, help_heading = "Etcd flags")]
    pub etcd_servers_overrides: Vec<String>,
    /// The timeout to use when checking etcd health.
    #[arg(long, default_value = "2s", value_parser = parse_go_duration, allow_hyphen_values = true, help_heading = "Etcd flags")]
    pub etcd_healthcheck_timeout: GoDuration,
    /// The timeout to use when checking etcd readiness
    #[arg(long, default_value = "2s", value_parser = parse_go_duration, allow_hyphen_values = true, help_heading = "Etcd flags")]
    pub etcd_readycheck_timeout: GoDuration,
    /// Enable watch caching in the apiserver
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "true", action = ArgAction::Set, help_heading = "Etcd flags")]
    pub watch_cache: bool,
    /// Watch cache size settings for some resources (pods, nodes, etc.), comma separated. The
    /// individual setting format: resource[.group]#size. The only meaningful size is zero,
    /// which disables watch caching for the resource; all non-zero values are equivalent.
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, help_heading = "Etcd flags")]
    pub watch_cache_sizes: Vec<String>,
    /// DEPRECATED: Watch caches are sized automatically. This flag is no-op and it will be
    /// removed in a future version.
    #[arg(long, allow_hyphen_values = true, help_heading = "Etcd flags")]
    pub default_watch_cache_size: Option<i64>,
    /// The file containing configuration for encryption providers to be used for storing
    /// secrets in etcd
    #[arg(long, help_heading = "Etcd flags")]
    pub encryption_provider_config: Option<PathBuf>,
    /// Determines if the file set by --encryption-provider-config should be automatically
    /// reloaded if the disk contents change. Setting this to true disables the ability to
    /// uniquely identify distinct KMS plugins via the API server healthz endpoints.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", action = ArgAction::Set, help_heading = "Etcd flags")]
    pub encryption_provider_config_automatic_reload: bool,

    // ----- Secure serving flags -----
    /// The IP address on which to listen for the --secure-port port.
    #[arg(long, default_value = "0.0.0.0", help_heading = "Secure serving flags")]
    pub bind_address: IpAddr,
    /// The port on which to serve HTTPS with authentication and authorization.
    /// 0 picks a free port (logged as `Serving securely on …`).
    #[arg(
        long,
        default_value_t = 6443,
        allow_negative_numbers = true,
        help_heading = "Secure serving flags"
    )]
    pub secure_port: i64,
    /// The directory where generated TLS certificates are kept (default `<data-dir>/pki`).
    /// Ignored if --tls-cert-file and --tls-private-key-file are provided.
    #[arg(long, help_heading = "Secure serving flags")]
    pub cert_dir: Option<PathBuf>,
    /// File containing the default x509 certificate for HTTPS (CA cert, if any, after it).
    #[arg(long, help_heading = "Secure serving flags")]
    pub tls_cert_file: Option<PathBuf>,
    /// File containing the default x509 private key matching --tls-cert-file.
    #[arg(long, help_heading = "Secure serving flags")]
    pub tls_private_key_file: Option<PathBuf>,
    /// A pair of x509 certificate and private key file paths, optionally suffixed with a list
    /// of domain patterns: `cert,key[:name1,name2]`. Repeatable.
    #[arg(long, action = ArgAction::Append, help_heading = "Secure serving flags")]
    pub tls_sni_cert_key: Vec<String>,
    /// Minimum TLS version supported: VersionTLS12, VersionTLS13.
    #[arg(long, help_heading = "Secure serving flags")]
    pub tls_min_version: Option<String>,
    /// Comma-separated list of cipher suites for the server (IANA names).
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, help_heading = "Secure serving flags")]
    pub tls_cipher_suites: Vec<String>,
    /// The limit that the server gives to clients for the maximum number of streams in an
    /// HTTP/2 connection. Zero means 100.
    #[arg(
        long,
        default_value_t = 0,
        allow_negative_numbers = true,
        help_heading = "Secure serving flags"
    )]
    pub http2_max_streams_per_connection: i64,
    /// If true, HTTP2 serving will be disabled [default=false]
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", action = ArgAction::Set, help_heading = "Secure serving flags")]
    pub disable_http2_serving: bool,

    // ----- Auditing flags -----
    /// If set, all requests coming to the apiserver will be logged to this file ('-' = stdout).
    #[arg(long, help_heading = "Auditing flags")]
    pub audit_log_path: Option<String>,
    /// The maximum number of days to retain old audit log files.
    #[arg(
        long,
        default_value_t = 0,
        allow_negative_numbers = true,
        help_heading = "Auditing flags"
    )]
    pub audit_log_maxage: i64,
    /// The maximum number of old audit log files to retain (0 = no limit).
    #[arg(
        long,
        default_value_t = 0,
        allow_negative_numbers = true,
        help_heading = "Auditing flags"
    )]
    pub audit_log_maxbackup: i64,
    /// The maximum size in megabytes of the audit log file before it gets rotated.
    #[arg(
        long,
        default_value_t = 0,
        allow_negative_numbers = true,
        help_heading = "Auditing flags"
    )]
    pub audit_log_maxsize: i64,
    /// Path to the file that defines the audit policy configuration.
    #[arg(long, help_heading = "Auditing flags")]
    pub audit_policy_file: Option<PathBuf>,
    /// Format of saved audits: "legacy" (1-line text per event) or "json".
    #[arg(long, default_value = "json", help_heading = "Auditing flags")]
    pub audit_log_format: String,
    /// If set, the rotated log files will be compressed using gzip.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = ArgAction::Set, default_value = "false", help_heading = "Auditing flags")]
    pub audit_log_compress: bool,
    /// API group and version used for serializing audit events written to log.
    #[arg(
        long,
        default_value = "audit.k8s.io/v1",
        help_heading = "Auditing flags"
    )]
    pub audit_log_version: String,
    /// Strategy for sending audit events to the log: blocking, blocking-strict or batch.
    #[arg(long, default_value = "blocking", help_heading = "Auditing flags")]
    pub audit_log_mode: String,
    /// The size of the buffer to store events before batching and writing (batch mode).
    #[arg(
        long,
        default_value_t = 10000,
        allow_negative_numbers = true,
        help_heading = "Auditing flags"
    )]
    pub audit_log_batch_buffer_size: i64,
    /// The maximum size of a batch (batch mode).
    #[arg(
        long,
        default_value_t = 1,
        allow_negative_numbers = true,
        help_heading = "Auditing flags"
    )]
    pub audit_log_batch_max_size: i64,
    /// The amount of time to wait before force writing a batch that hadn't reached the max size.
    #[arg(long, default_value = "0s", value_parser = parse_go_duration, allow_hyphen_values = true, help_heading = "Auditing flags")]
    pub audit_log_batch_max_wait: GoDuration,
    /// Whether batching throttling is enabled (batch mode).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = ArgAction::Set, default_value = "false", help_heading = "Auditing flags")]
    pub audit_log_batch_throttle_enable: bool,
    /// Maximum average number of batches per second (batch mode).
    #[arg(
        long,
        default_value_t = 0.0,
        allow_negative_numbers = true,
        help_heading = "Auditing flags"
    )]
    pub audit_log_batch_throttle_qps: f32,
    /// Maximum number of requests sent at the same moment if ThrottleQPS was not utilized before.
    #[arg(
        long,
        default_value_t = 0,
        allow_negative_numbers = true,
        help_heading = "Auditing flags"
    )]
    pub audit_log_batch_throttle_burst: i64,
    /// Whether event and batch truncating is enabled.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = ArgAction::Set, default_value = "false", help_heading = "Auditing flags")]
    pub audit_log_truncate_enabled: bool,
    /// Maximum size of the batch sent to the underlying backend; larger batches are split.
    #[arg(
        long,
        default_value_t = 10485760,
        allow_negative_numbers = true,
        help_heading = "Auditing flags"
    )]
    pub audit_log_truncate_max_batch_size: i64,
    /// Maximum size of the audit event sent to the underlying backend; larger events lose
    /// their request and response, or are discarded.
    #[arg(
        long,
        default_value_t = 102400,
        allow_negative_numbers = true,
        help_heading = "Auditing flags"
    )]
    pub audit_log_truncate_max_event_size: i64,
    /// Path to a kubeconfig formatted file that defines the audit webhook configuration.
    #[arg(long, help_heading = "Auditing flags")]
    pub audit_webhook_config_file: Option<PathBuf>,
    /// The amount of time to wait before retrying the first failed request.
    #[arg(long, default_value = "10s", value_parser = parse_go_duration, allow_hyphen_values = true, help_heading = "Auditing flags")]
    pub audit_webhook_initial_backoff: GoDuration,
    /// DEPRECATED: use --audit-webhook-initial-backoff instead.
    #[arg(long, value_parser = parse_go_duration, allow_hyphen_values = true, help_heading = "Auditing flags")]
    pub audit_webhook_batch_initial_backoff: Option<GoDuration>,
    /// Strategy for sending audit events to the webhook: batch, blocking or blocking-strict.
    #[arg(long, default_value = "batch", help_heading = "Auditing flags")]
    pub audit_webhook_mode: String,
    /// The size of the buffer to store events before batching and writing (batch mode).
    #[arg(
        long,
        default_value_t = 10000,
        allow_negative_numbers = true,
        help_heading = "Auditing flags"
    )]
    pub audit_webhook_batch_buffer_size: i64,
    /// The maximum size of a batch (batch mode).
    #[arg(
        long,
        default_value_t = 400,
        allow_negative_numbers = true,
        help_heading = "Auditing flags"
    )]
    pub audit_webhook_batch_max_size: i64,
    /// The amount of time to wait before force writing a batch that hadn't reached the max size.
    #[arg(long, default_value = "30s", value_parser = parse_go_duration, allow_hyphen_values = true, help_heading = "Auditing flags")]
    pub audit_webhook_batch_max_wait: GoDuration,
    /// Whether batching throttling is enabled (batch mode).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = ArgAction::Set, default_value = "true", help_heading = "Auditing flags")]
    pub audit_webhook_batch_throttle_enable: bool,
    /// Maximum average number of batches per second (batch mode).
    #[arg(
        long,
        default_value_t = 10.0,
        allow_negative_numbers = true,
        help_heading = "Auditing flags"
    )]
    pub audit_webhook_batch_throttle_qps: f32,
    /// Maximum number of requests sent at the same moment if ThrottleQPS was not utilized before.
    #[arg(
        long,
        default_value_t = 15,
        allow_negative_numbers = true,
        help_heading = "Auditing flags"
    )]
    pub audit_webhook_batch_throttle_burst: i64,
    /// Whether event and batch truncating is enabled.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = ArgAction::Set, default_value = "false", help_heading = "Auditing flags")]
    pub audit_webhook_truncate_enabled: bool,
    /// Maximum size of the batch sent to the underlying backend; larger batches are split.
    #[arg(
        long,
        default_value_t = 10485760,
        allow_negative_numbers = true,
        help_heading = "Auditing flags"
    )]
    pub audit_webhook_truncate_max_batch_size: i64,
    /// Maximum size of the audit event sent to the underlying backend; larger events lose
    /// their request and response, or are discarded.
    #[arg(
        long,
        default_value_t = 102400,
        allow_negative_numbers = true,
        help_heading = "Auditing flags"
    )]
    pub audit_webhook_truncate_max_event_size: i64,
    /// API group and version used for serializing audit events written to webhook.
    #[arg(
        long,
        default_value = "audit.k8s.io/v1",
        help_heading = "Auditing flags"
    )]
    pub audit_webhook_version: String,

    // ----- Authentication flags -----
    /// Enables anonymous requests to the secure port.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "true", action = ArgAction::Set, help_heading = "Authentication flags")]
    pub anonymous_auth: bool,
    /// Any request presenting a client certificate signed by one of the authorities in this
    /// file is authenticated with an identity corresponding to the certificate's CommonName.
    #[arg(long, help_heading = "Authentication flags")]
    pub client_ca_file: Option<PathBuf>,
    /// If set, the file that will be used to secure the secure port via token authentication.
    #[arg(long, help_heading = "Authentication flags")]
    pub token_auth_file: Option<PathBuf>,
    /// Root certificate bundle to use to verify client certificates on incoming requests
    /// before trusting usernames in headers specified by --requestheader-username-headers.
    /// WARNING: generally do not depend on authorization being already done for incoming
    /// requests.
    #[arg(long, help_heading = "Authentication flags")]
    pub requestheader_client_ca_file: Option<PathBuf>,
    /// List of client certificate common names to allow to provide usernames in headers
    /// specified by --requestheader-username-headers. If empty, any client certificate
    /// validated by the authorities in --requestheader-client-ca-file is allowed.
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, help_heading = "Authentication flags")]
    pub requestheader_allowed_names: Vec<String>,
    /// List of request headers to inspect for usernames. X-Remote-User is common.
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, help_heading = "Authentication flags")]
    pub requestheader_username_headers: Vec<String>,
    /// List of request headers to inspect for UIDs. X-Remote-Uid is suggested.
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, help_heading = "Authentication flags")]
    pub requestheader_uid_headers: Vec<String>,
    /// List of request headers to inspect for groups. X-Remote-Group is suggested.
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, help_heading = "Authentication flags")]
    pub requestheader_group_headers: Vec<String>,
    /// List of request header prefixes to inspect. X-Remote-Extra- is suggested.
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, help_heading = "Authentication flags")]
    pub requestheader_extra_headers_prefix: Vec<String>,

    /// Identifiers of the API. The service account token authenticator will validate that
    /// tokens used against the API are bound to at least one of these audiences. If the
    /// --service-account-issuer flag is configured and this flag is not, this field defaults
    /// to a single element list containing the issuer URL.
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, help_heading = "Authentication flags")]
    pub api_audiences: Vec<String>,
    /// Enable to allow secrets of type 'bootstrap.kubernetes.io/token' in the 'kube-system'
    /// namespace to be used for TLS bootstrapping authentication.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", action = ArgAction::Set, help_heading = "Authentication flags")]
    pub enable_bootstrap_token_auth: bool,
    /// Turns on projected service account expiration extension during token generation,
    /// which helps safe transition from legacy token to bound service account token feature.
    /// If this flag is enabled, admission injected tokens would be extended up to 1 year to
    /// prevent unexpected failure during transition, ignoring value of
    /// service-account-max-token-expiration.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "true", action = ArgAction::Set, help_heading = "Authentication flags")]
    pub service_account_extend_token_expiration: bool,
    /// Identifier of the service account token issuer. The issuer will assert this identifier
    /// in "iss" claim of issued tokens. When this flag is specified multiple times, the first
    /// is used to generate tokens and all are used to determine which issuers are accepted
    /// (default https://kubernetes.default.svc.cluster.local).
    #[arg(long, action = ArgAction::Append, help_heading = "Authentication flags")]
    pub service_account_issuer: Vec<String>,
    /// Overrides the URI for the JSON Web Key Set in the discovery doc served at
    /// /.well-known/openid-configuration.
    #[arg(long, help_heading = "Authentication flags")]
    pub service_account_jwks_uri: Option<String>,
    /// File containing PEM-encoded x509 RSA or ECDSA private or public keys, used to verify
    /// ServiceAccount tokens. The specified file can contain multiple keys, and the flag can
    /// be specified multiple times with different files (default: the signing key).
    #[arg(long, action = ArgAction::Append, help_heading = "Authentication flags")]
    pub service_account_key_file: Vec<PathBuf>,
    /// If true, validate ServiceAccount tokens exist in etcd as part of authentication.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "true", action = ArgAction::Set, help_heading = "Authentication flags")]
    pub service_account_lookup: bool,
    /// The maximum validity duration of a token created by the service account token issuer.
    /// If an otherwise valid TokenRequest with a validity duration larger than this value is
    /// requested, a token will be issued with a validity duration of this value.
    #[arg(long, default_value = "0s", value_parser = parse_go_duration, allow_hyphen_values = true, help_heading = "Authentication flags")]
    pub service_account_max_token_expiration: GoDuration,
    /// Path to the file that contains the current private key of the service account token
    /// issuer. The issuer will sign issued ID tokens with this private key (default: a P-256
    /// key generated in the certificate directory).
    #[arg(long, help_heading = "Authentication flags")]
    pub service_account_signing_key_file: Option<PathBuf>,
    // ----- Authentication flags: webhook token authentication and JWT (OIDC) -----
    /// File with Authentication Configuration to configure the JWT Token authenticator or
    /// the anonymous authenticator. This flag is mutually exclusive with the --oidc-* flags
    /// if the file configures the JWT Token authenticator.
    #[arg(long, help_heading = "Authentication flags")]
    pub authentication_config: Option<PathBuf>,
    /// The duration to cache responses from the webhook token authenticator.
    #[arg(long, default_value = "2m0s", value_parser = parse_go_duration, help_heading = "Authentication flags")]
    pub authentication_token_webhook_cache_ttl: GoDuration,
    /// File with webhook configuration for token authentication in kubeconfig format. The
    /// API server will query the remote service to determine authentication for bearer
    /// tokens.
    #[arg(long, help_heading = "Authentication flags")]
    pub authentication_token_webhook_config_file: Option<PathBuf>,
    /// The API version of the authentication.k8s.io TokenReview to send to and expect from
    /// the webhook.
    #[arg(long, default_value = "v1", help_heading = "Authentication flags")]
    pub authentication_token_webhook_version: String,
    /// If set, the OpenID server's certificate will be verified by one of the authorities in
    /// the oidc-ca-file, otherwise the host's root CA set will be used.
    #[arg(long, help_heading = "Authentication flags")]
    pub oidc_ca_file: Option<PathBuf>,
    /// The client ID for the OpenID Connect client, must be set if oidc-issuer-url is set.
    #[arg(long, default_value = "", help_heading = "Authentication flags")]
    pub oidc_client_id: String,
    /// If provided, the name of a custom OpenID Connect claim for specifying user groups.
    /// The claim value is expected to be a string or array of strings.
    #[arg(long, default_value = "", help_heading = "Authentication flags")]
    pub oidc_groups_claim: String,
    /// If provided, all groups will be prefixed with this value to prevent conflicts with
    /// other authentication strategies.
    #[arg(long, default_value = "", help_heading = "Authentication flags")]
    pub oidc_groups_prefix: String,
    /// The URL of the OpenID issuer, only HTTPS scheme will be accepted. If set, it will be
    /// used to verify the OIDC JSON Web Token (JWT).
    #[arg(long, default_value = "", help_heading = "Authentication flags")]
    pub oidc_issuer_url: String,
    /// A key=value pair that describes a required claim in the ID Token. If set, the claim
    /// is verified to be present in the ID Token with a matching value. Repeat this flag to
    /// specify multiple claims.
    #[arg(long, action = ArgAction::Append, help_heading = "Authentication flags")]
    pub oidc_required_claim: Vec<String>,
    /// Comma-separated list of allowed JOSE asymmetric signing algorithms. JWTs with a
    /// supported 'alg' header values are: RS256, RS384, RS512, ES256, ES384, ES512, PS256,
    /// PS384, PS512. Values are defined by RFC 7518 https://tools.ietf.org/html/rfc7518#section-3.1.
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, default_value = "RS256", help_heading = "Authentication flags")]
    pub oidc_signing_algs: Vec<String>,
    /// The OpenID claim to use as the user name. Note that claims other than the default
    /// ('sub') is not guaranteed to be unique and immutable.
    #[arg(long, default_value = "sub", help_heading = "Authentication flags")]
    pub oidc_username_claim: String,
    /// If provided, all usernames will be prefixed with this value. If not provided,
    /// username claims other than 'email' are prefixed by the issuer URL to avoid clashes.
    /// To skip any prefixing, provide the value '-'.
    #[arg(long, default_value = "", help_heading = "Authentication flags")]
    pub oidc_username_prefix: String,

    // ----- Admission flags -----
    /// Admission is divided into two phases. In the first phase, only mutating admission
    /// plugins run. In the second phase, only validating admission plugins run. The names in
    /// the below list may represent a validating plugin, a mutating plugin, or both. The order
    /// of plugins in which they are passed to this flag does not matter. Comma-delimited list
    /// of: admission plugins that should be enabled in addition to default enabled ones.
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, help_heading = "Admission flags")]
    pub enable_admission_plugins: Vec<String>,
    /// Admission plugins that should be disabled although they are in the default enabled
    /// plugins list. Comma-delimited list; the order does not matter.
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, help_heading = "Admission flags")]
    pub disable_admission_plugins: Vec<String>,
    /// Admission is divided into two phases. In the first phase, only mutating admission
    /// plugins run. In the second phase, only validating admission plugins run. The order of
    /// plugins does not matter. Comma-delimited list of plugins to enable in place of the
    /// default set. (DEPRECATED: Use --enable-admission-plugins or --disable-admission-plugins
    /// instead. Will be removed in a future version.)
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, help_heading = "Admission flags")]
    pub admission_control: Vec<String>,
    /// File with admission control configuration.
    #[arg(long, help_heading = "Admission flags")]
    pub admission_control_config_file: Option<PathBuf>,
    /// Indicates the tolerationSeconds of the toleration for notReady:NoExecute that is added
    /// by default to every pod that does not already have such a toleration.
    #[arg(long, default_value_t = 300, help_heading = "Admission flags")]
    pub default_not_ready_toleration_seconds: i64,
    /// Indicates the tolerationSeconds of the toleration for unreachable:NoExecute that is
    /// added by default to every pod that does not already have such a toleration.
    #[arg(long, default_value_t = 300, help_heading = "Admission flags")]
    pub default_unreachable_toleration_seconds: i64,

    // ----- Feature gate and API enablement flags -----
    /// A set of key=value pairs that describe feature gates for alpha/experimental features.
    /// Known here: MutatingAdmissionPolicy=true|false (BETA - default=false).
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, help_heading = "Feature gate flags")]
    pub feature_gates: Vec<String>,
    /// A set of key=value pairs that enable or disable built-in APIs. Supported options are:
    /// v1=true|false for the core API group; <group>/<version>=true|false for a specific API
    /// group and version (e.g. apps/v1=true); api/all=true|false controls all API versions;
    /// api/ga=true|false controls all API versions of the form v[0-9]+; api/beta=true|false
    /// controls all API versions of the form v[0-9]+beta[0-9]+; api/alpha=true|false
    /// controls all API versions of the form v[0-9]+alpha[0-9]+.
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, help_heading = "API enablement flags")]
    pub runtime_config: Vec<String>,

    // ----- Authorization flags -----
    /// Ordered list of plug-ins to do authorization on secure port. Comma-delimited list of:
    /// AlwaysAllow,AlwaysDeny,ABAC,Webhook,RBAC,Node.
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, default_value = "AlwaysAllow", help_heading = "Authorization flags")]
    pub authorization_mode: Vec<String>,

    // ----- Authorization flags: webhook and structured configuration -----
    /// File with Authorization Configuration to configure the authorizer chain. This flag
    /// is mutually exclusive with the other --authorization-mode and
    /// --authorization-webhook-* flags.
    #[arg(long, help_heading = "Authorization flags")]
    pub authorization_config: Option<PathBuf>,
    /// The duration to cache 'authorized' responses from the webhook authorizer.
    #[arg(long, default_value = "5m0s", value_parser = parse_go_duration, help_heading = "Authorization flags")]
    pub authorization_webhook_cache_authorized_ttl: GoDuration,
    /// The duration to cache 'unauthorized' responses from the webhook authorizer.
    #[arg(long, default_value = "30s", value_parser = parse_go_duration, help_heading = "Authorization flags")]
    pub authorization_webhook_cache_unauthorized_ttl: GoDuration,
    /// File with webhook configuration in kubeconfig format, used with
    /// --authorization-mode=Webhook. The API server will query the remote service to
    /// determine access on the API server's secure port.
    #[arg(long, help_heading = "Authorization flags")]
    pub authorization_webhook_config_file: Option<PathBuf>,
    /// The API version of the authorization.k8s.io SubjectAccessReview to send to and
    /// expect from the webhook.
    #[arg(long, default_value = "v1", help_heading = "Authorization flags")]
    pub authorization_webhook_version: String,

    // ----- Misc flags -----
    /// A CIDR notation IP range from which to assign service cluster IPs. This must not
    /// overlap with any IP ranges assigned to nodes or pods. Max of two dual-stack CIDRs is
    /// allowed.
    #[arg(long, default_value = "10.0.0.0/24", help_heading = "Misc flags")]
    pub service_cluster_ip_range: String,
    /// Aggregator reject forwarding redirect response back to client.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "true", action = ArgAction::Set, help_heading = "Misc flags")]
    pub aggregator_reject_forwarding_redirect: bool,
    /// Turns on aggregator routing requests to endpoints IP rather than cluster IP.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", action = ArgAction::Set, help_heading = "Misc flags")]
    pub enable_aggregator_routing: bool,
    /// Client certificate used to prove the identity of the aggregator or kube-apiserver
    /// when it must call out during a request. This includes proxying requests to a user
    /// api-server and calling out to webhook admission plugins. It is expected that this cert
    /// includes a signature from the CA in the --requestheader-client-ca-file flag.
    /// Components receiving calls from kube-aggregator should use that CA to perform their
    /// half of the mutual TLS verification.
    #[arg(long, help_heading = "Misc flags")]
    pub proxy_client_cert_file: Option<PathBuf>,
    /// Private key for the client certificate used to prove the identity of the aggregator
    /// or kube-apiserver when it must call out during a request. This includes proxying
    /// requests to a user api-server and calling out to webhook admission plugins.
    #[arg(long, help_heading = "Misc flags")]
    pub proxy_client_key_file: Option<PathBuf>,

    // ----- Drop-in flag sets: what envtest and kubeadm pass that was missing -----
    /// If true, allow privileged containers. [default=false]
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", action = ArgAction::Set, help_heading = "Misc flags")]
    pub allow_privileged: bool,
    /// The IP address on which to advertise the apiserver to members of the cluster. This
    /// address must be reachable by the rest of the cluster. If blank, the --bind-address will
    /// be used. If --bind-address is unspecified, the host's default interface will be used.
    #[arg(long, help_heading = "Generic flags")]
    pub advertise_address: Option<IpAddr>,
    /// If true, replace the max-in-flight handler with an enhanced one that queues and
    /// dispatches with priority and fairness (accepted; this server always uses the
    /// max-in-flight limits).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "true", action = ArgAction::Set, help_heading = "Features flags")]
    pub enable_priority_and_fairness: bool,
    /// Path to a client cert file for TLS (for kubelet connections).
    #[arg(long, help_heading = "Misc flags")]
    pub kubelet_client_certificate: Option<PathBuf>,
    /// Path to a client key file for TLS (for kubelet connections).
    #[arg(long, help_heading = "Misc flags")]
    pub kubelet_client_key: Option<PathBuf>,
    /// Path to a cert file for the certificate authority (of kubelet serving certificates).
    #[arg(long, help_heading = "Misc flags")]
    pub kubelet_certificate_authority: Option<PathBuf>,
    /// List of the preferred NodeAddressTypes to use for kubelet connections.
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, default_value = "Hostname,InternalDNS,InternalIP,ExternalDNS,ExternalIP", help_heading = "Misc flags")]
    pub kubelet_preferred_address_types: Vec<String>,
    /// Timeout for kubelet operations.
    #[arg(long, default_value = "5s", value_parser = parse_go_duration, allow_hyphen_values = true, help_heading = "Misc flags")]
    pub kubelet_timeout: GoDuration,
    /// DEPRECATED: kubelet port (default 10250).
    #[arg(long, help_heading = "Misc flags")]
    pub kubelet_port: Option<u32>,
    /// DEPRECATED: kubelet read only port (default 10255).
    #[arg(long, help_heading = "Misc flags")]
    pub kubelet_read_only_port: Option<u32>,

    // ----- Drop-in flag sets: upstream flags accepted without their feature (see
    // accepted_flags.rs), or refused with a clear line where ignoring them is unsafe -----
    /// The hostname to use when generating externalized URLs for this master (e.g. Swagger
    /// API Docs or OpenID Discovery).
    #[arg(long, help_heading = "Generic flags")]
    pub external_hostname: Option<String>,
    /// The versions different components emulate (major.minor, `[kube=]1.35`). This server
    /// emulates kube 1.35 only.
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, help_heading = "Generic flags")]
    pub emulated_version: Vec<String>,
    /// The min version of control plane components the server should be compatible with
    /// (`[kube=]1.32` … `1.35`, default 1.34).
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, help_heading = "Generic flags")]
    pub min_compatibility_version: Vec<String>,
    /// Auto-enable future versions of beta+ APIs (only with an older emulation version).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", action = ArgAction::Set, help_heading = "Generic flags")]
    pub emulation_forward_compatible: bool,
    /// Install --runtime-config APIs newer than the emulation version (only with an older
    /// emulation version).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", action = ArgAction::Set, help_heading = "Generic flags")]
    pub runtime_config_emulation_forward_compatible: bool,
    /// Enable block profiling, if profiling is enabled (accepted; no block profiles here).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", action = ArgAction::Set, help_heading = "Features flags")]
    pub contention_profiling: bool,
    /// The previous version for which you want to show hidden metrics (only the previous
    /// minor version, 1.34, is allowed).
    #[arg(long, help_heading = "Metrics flags")]
    pub show_hidden_metrics_for_version: Option<String>,
    /// Fully qualified metric names to disable (accepted; every metric is served).
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, help_heading = "Metrics flags")]
    pub disabled_metrics: Vec<String>,
    /// The map from metric-label to value allow-list of this label (accepted; labels are
    /// not filtered).
    #[arg(long, action = ArgAction::Append, help_heading = "Metrics flags")]
    pub allow_metric_labels: Vec<String>,
    /// The path to the manifest file that contains the allow-list mapping (accepted).
    #[arg(long, help_heading = "Metrics flags")]
    pub allow_metric_labels_manifest: Option<PathBuf>,
    /// Sets the log format. Permitted formats: "text".
    #[arg(long, default_value = "text", help_heading = "Logs flags")]
    pub logging_format: String,
    /// Maximum number of seconds between log flushes (accepted; every line is written at
    /// once).
    #[arg(long, default_value = "5s", value_parser = parse_go_duration, allow_hyphen_values = true, help_heading = "Logs flags")]
    pub log_flush_frequency: GoDuration,
    /// comma-separated list of pattern=N settings for file-filtered logging (accepted; Go
    /// source file patterns match nothing here).
    #[arg(long, help_heading = "Logs flags")]
    pub vmodule: Option<String>,
    /// File with apiserver tracing configuration (accepted; no traces are exported).
    #[arg(long, help_heading = "Traces flags")]
    pub tracing_config_file: Option<PathBuf>,
    /// File with apiserver egress selector configuration (refused: not supported).
    #[arg(long, help_heading = "Egress selector flags")]
    pub egress_selector_config_file: Option<PathBuf>,
    /// File with authorization policy for --authorization-mode=ABAC (refused: no ABAC).
    #[arg(long, help_heading = "Authorization flags")]
    pub authorization_policy_file: Option<PathBuf>,
    /// Path to socket where an external JWT signer is listening (refused: not supported).
    #[arg(long, help_heading = "Misc flags")]
    pub service_account_signing_endpoint: Option<PathBuf>,
    /// Amount of time to retain events (accepted; events are kept until deleted).
    #[arg(long, default_value = "1h0m0s", value_parser = parse_go_duration, allow_hyphen_values = true, help_heading = "Misc flags")]
    pub event_ttl: GoDuration,
    /// DEPRECATED: If true, install a /logs handler for the apiserver logs.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = ArgAction::Set, help_heading = "Misc flags")]
    pub enable_logs_handler: Option<bool>,
    /// If non-zero, throttle each user connection to this number of bytes/sec (accepted;
    /// no throttling here).
    #[arg(
        long,
        default_value_t = 0,
        allow_negative_numbers = true,
        help_heading = "Misc flags"
    )]
    pub max_connection_bytes_per_sec: i64,
    /// A port range to reserve for services with NodePort visibility, `N1-N2`.
    #[arg(long, default_value = "30000-32767", help_heading = "Misc flags")]
    pub service_node_port_range: String,
    /// The duration of the lease used for Coordinated Leader Election.
    #[arg(long, default_value = "15s", value_parser = parse_go_duration, allow_hyphen_values = true, help_heading = "Misc flags")]
    pub coordinated_leadership_lease_duration: GoDuration,
    /// The deadline for renewing a coordinated leader election lease.
    #[arg(long, default_value = "10s", value_parser = parse_go_duration, allow_hyphen_values = true, help_heading = "Misc flags")]
    pub coordinated_leadership_renew_deadline: GoDuration,
    /// The period for retrying to renew a coordinated leader election lease.
    #[arg(long, default_value = "2s", value_parser = parse_go_duration, allow_hyphen_values = true, help_heading = "Misc flags")]
    pub coordinated_leadership_retry_period: GoDuration,
    /// CA bundle verifying peer kube-apiservers (UnknownVersionInteroperabilityProxy).
    #[arg(long, help_heading = "Misc flags")]
    pub peer_ca_file: Option<PathBuf>,
    /// IP peers proxy to (UnknownVersionInteroperabilityProxy).
    #[arg(long, help_heading = "Misc flags")]
    pub peer_advertise_ip: Option<String>,
    /// Port peers proxy to (UnknownVersionInteroperabilityProxy).
    #[arg(long, help_heading = "Misc flags")]
    pub peer_advertise_port: Option<String>,
    // ----- Replicas: advertise address and the kubernetes Service's endpoints -----
    /// Use an endpoint reconciler (master-count, lease, none) master-count is deprecated, and
    /// will be removed in a future version.
    #[arg(long, default_value = "lease", help_heading = "Misc flags")]
    pub endpoint_reconciler_type: String,
    /// The number of apiservers running in the cluster, must be a positive number. (In use
    /// when --endpoint-reconciler-type=master-count is enabled.) DEPRECATED.
    #[arg(long, allow_negative_numbers = true, help_heading = "Misc flags")]
    pub apiserver_count: Option<i64>,

    // ----- Global flags -----
    /// --version, --version=raw prints version information and quits.
    #[arg(
        long = "version",
        value_name = "version",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true",
        value_parser = parse_version_flag,
        help_heading = "Global flags"
    )]
    pub version: Option<VersionFlag>,

    // ----- Logs flags -----
    /// Number for the log level verbosity.
    #[arg(
        short = 'v',
        long = "v",
        default_value_t = 0,
        help_heading = "Logs flags"
    )]
    pub verbosity: u8,
}

const HSTS_HELP: &str = "--strict-transport-security-directives invalid, allowed values: \
max-age=expireTime, includeSubDomains, preload. see https://tools.ietf.org/html/rfc6797#section-6.1 \
for more information";

/// The `--data-dir` used when none is given.
pub const DEFAULT_DATA_DIR: &str = "./apiserver-data";

impl Options {
    /// Where the server keeps what it owns: the embedded storage, the generated PKI (unless
    /// --cert-dir says otherwise) and the admin kubeconfig. Without --data-dir, a server on
    /// etcd with --cert-dir keeps the kubeconfig with its certificates, so nothing is written
    /// to the current directory.
    pub fn data_dir(&self) -> PathBuf {
        match (&self.data_dir, &self.cert_dir) {
            (Some(dir), _) => dir.clone(),
            (None, Some(cert_dir)) if !self.etcd_servers.is_empty() => cert_dir.clone(),
            _ => PathBuf::from(DEFAULT_DATA_DIR),
        }
    }

    /// The `--audit-*` flags as the library's options.
    pub fn audit_options(&self) -> apiserver::audit::AuditOptions {
        use apiserver::audit::{AuditOptions, BatchOptions, TruncateOptions};
        let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
        AuditOptions {
            policy_file: path(&self.audit_policy_file),
            log_path: self.audit_log_path.clone(),
            log_max_age: self.audit_log_maxage,
            log_max_backups: self.audit_log_maxbackup,
            log_max_size: self.audit_log_maxsize,
            log_format: self.audit_log_format.clone(),
            log_compress: self.audit_log_compress,
            log_version: self.audit_log_version.clone(),
            log_batch: BatchOptions {
                mode: self.audit_log_mode.clone(),
                buffer_size: self.audit_log_batch_buffer_size,
                max_batch_size: self.audit_log_batch_max_size,
                max_batch_wait: self.audit_log_batch_max_wait.get(),
                throttle_enable: self.audit_log_batch_throttle_enable,
                throttle_qps: self.audit_log_batch_throttle_qps,
                throttle_burst: self.audit_log_batch_throttle_burst,
            },
            log_truncate: TruncateOptions {
                enabled: self.audit_log_truncate_enabled,
                max_batch_size: self.audit_log_truncate_max_batch_size,
                max_event_size: self.audit_log_truncate_max_event_size,
            },
            webhook_config_file: path(&self.audit_webhook_config_file),
            webhook_initial_backoff: self
                .audit_webhook_batch_initial_backoff
                .unwrap_or(self.audit_webhook_initial_backoff)
                .get(),
            webhook_batch: BatchOptions {
                mode: self.audit_webhook_mode.clone(),
                buffer_size: self.audit_webhook_batch_buffer_size,
                max_batch_size: self.audit_webhook_batch_max_size,
                max_batch_wait: self.audit_webhook_batch_max_wait.get(),
                throttle_enable: self.audit_webhook_batch_throttle_enable,
                throttle_qps: self.audit_webhook_batch_throttle_qps,
                throttle_burst: self.audit_webhook_batch_throttle_burst,
            },
            webhook_truncate: TruncateOptions {
                enabled: self.audit_webhook_truncate_enabled,
                max_batch_size: self.audit_webhook_truncate_max_batch_size,
                max_event_size: self.audit_webhook_truncate_max_event_size,
            },
            webhook_version: self.audit_webhook_version.clone(),
        }
    }

    /// Upstream's validation rules; every problem found, in flag order.
    pub fn validate(&self) -> Vec<String> {
        let mut errors = Vec::new();
        if let Err(e) = crate::admission::enabled_plugins(self) {
            errors.push(e);
        }
        errors.extend(crate::features::validate_feature_gates(&self.feature_gates));
        errors.extend(crate::features::validate_runtime_config(
            &self.runtime_config,
        ));
        if self.encryption_provider_config.is_none()
            && self.encryption_provider_config_automatic_reload
        {
            errors.push(
                "--encryption-provider-config-automatic-reload must be set with --encryption-provider-config"
                    .to_string(),
            );
        }
        let mut non_negative = |value: i64, message: &str| {
            if value < 0 {
                errors.push(message.to_string());
            }
        };
        non_negative(
            self.max_requests_inflight,
            "--max-requests-inflight can not be negative value",
        );
        non_negative(
            self.max_mutating_requests_inflight,
            "--max-mutating-requests-inflight can not be negative value",
        );
        non_negative(
            self.min_request_timeout,
            "--min-request-timeout can not be negative value",
        );
        non_negative(
            self.max_request_body_bytes,
            "--max-request-body-bytes can not be negative value",
        );
        non_negative(
            self.http2_max_streams_per_connection,
            "--http2-max-streams-per-connection can not be negative value",
        );
        errors.extend(self.audit_options().validation_errors());
        if self.request_timeout.negative {
            errors.push("--request-timeout can not be negative value".into());
        }
        if self.livez_grace_period.negative {
            errors.push("--livez-grace-period can not be a negative value".into());
        }
        if self.shutdown_delay_duration.negative {
            errors.push("--shutdown-delay-duration can not be negative value".into());
        }
        if self.shutdown_watch_termination_grace_period.negative {
            errors.push(
                "shutdown-watch-termination-grace-period, if provided, can not be a negative value"
                    .into(),
            );
        }
        if self.etcd_compaction_interval.negative {
            errors.push("--etcd-compaction-interval can not be negative value".into());
        }
        if let Err(e) =
            crate::registry::service::ServiceRange::parse(&self.service_cluster_ip_range)
        {
            errors.push(format!("--service-cluster-ip-range: {e}"));
        }
        if !(0.0..=0.02).contains(&self.goaway_chance) || self.goaway_chance.is_nan() {
            errors.push("--goaway-chance can not be less than 0 or greater than 0.02".into());
        }
        if !(0..=65535).contains(&self.secure_port) {
            errors.push(format!(
                "--secure-port {} must be between 0 and 65535, inclusive. 0 picks a free port",
                self.secure_port
            ));
        }
        if self.tls_cert_file.is_some() != self.tls_private_key_file.is_some() {
            errors.push("--tls-cert-file and --tls-private-key-file must be given together".into());
        }
        if let Some(version) = &self.tls_min_version {
            match version.as_str() {
                "VersionTLS12" | "VersionTLS13" => {}
                "VersionTLS10" | "VersionTLS11" => errors.push(format!(
                    "--tls-min-version {version} is not supported: this server speaks TLS 1.2 and 1.3 only"
                )),
                other => errors.push(format!(
                    "--tls-min-version: unknown tls version {other:?}; allowed values: VersionTLS12, VersionTLS13"
                )),
            }
        }
        for directive in &self.strict_transport_security_directives {
            let ok = directive == "includeSubDomains"
                || directive == "preload"
                || directive
                    .strip_prefix("max-age=")
                    .is_some_and(|n| n.parse::<u64>().is_ok());
            if !ok {
                errors.push(HSTS_HELP.into());
                break;
            }
        }
        if let Err(err) =
            apiserver::filters::cors::validate_cors_allowed_origins(&self.cors_allowed_origins)
        {
            errors.push(err.to_string());
        }
        for sni in &self.tls_sni_cert_key {
            if let Err(err) = parse_sni_cert_key(sni) {
                errors.push(err);
            }
        }
        errors.extend(validate_authorization_modes(&self.authorization_mode));
        for (flag, values) in [
            (
                "requestheader-username-headers",
                &self.requestheader_username_headers,
            ),
            ("requestheader-uid-headers", &self.requestheader_uid_headers),
            (
                "requestheader-group-headers",
                &self.requestheader_group_headers,
            ),
            (
                "requestheader-extra-headers-prefix",
                &self.requestheader_extra_headers_prefix,
            ),
        ] {
            if values.iter().any(|v| v.trim().is_empty()) {
                errors.push(format!("empty value in {flag:?}"));
            }
        }
        errors.extend(self.validate_service_accounts());
        if self.proxy_client_cert_file.is_some() != self.proxy_client_key_file.is_some() {
            errors.push(
                "--proxy-client-cert-file and --proxy-client-key-file must be given together"
                    .into(),
            );
        }
        errors.extend(crate::accepted_flags::validate(self));
        if self.kubelet_client_certificate.is_some() != self.kubelet_client_key.is_some() {
            errors.push(
                "--kubelet-client-certificate and --kubelet-client-key must be given together"
                    .into(),
            );
        }
        self.validate_etcd(&mut errors);
        if self.etcd_certfile.is_some() != self.etcd_keyfile.is_some() {
            errors.push("--etcd-certfile and --etcd-keyfile must be given together".into());
        }
        self.validate_webhook_and_jwt(&mut errors);
        errors.extend(crate::controllers::kubernetesservice::validate_flags(self));
        errors
    }

    /// Whether any `--oidc-*` flag is set (upstream `areFlagsConfigured`).
    pub fn oidc_flags_set(&self) -> bool {
        !self.oidc_issuer_url.is_empty()
            || !self.oidc_client_id.is_empty()
            || self.oidc_ca_file.is_some()
            || self.oidc_username_claim != "sub"
            || !self.oidc_username_prefix.is_empty()
            || !self.oidc_groups_claim.is_empty()
            || !self.oidc_groups_prefix.is_empty()
            || !self.oidc_required_claim.is_empty()
            || self.oidc_signing_algs != ["RS256"]
    }

    /// Whether any `--authorization-webhook-*` flag differs from its default.
    fn authorization_webhook_flags_set(&self) -> bool {
        self.authorization_webhook_config_file.is_some()
            || self.authorization_webhook_version != "v1"
            || self.authorization_webhook_cache_authorized_ttl.get() != Duration::from_secs(300)
            || self.authorization_webhook_cache_unauthorized_ttl.get() != Duration::from_secs(30)
    }

    /// Upstream's checks of the webhook, OIDC and structured-configuration flags.
    /// The etcd flags of issue 11, as upstream's EtcdOptions.Validate and Complete check them.
    fn validate_etcd(&self, errors: &mut Vec<String>) {
        use apiserver::storage::factory::{
            STORAGE_TYPE_ETCD3, parse_etcd_servers_overrides, parse_watch_cache_sizes,
        };
        if !self.storage_backend.is_empty() && self.storage_backend != STORAGE_TYPE_ETCD3 {
            errors.push(format!("--storage-backend invalid, allowed values: {STORAGE_TYPE_ETCD3}. If not specified, it will default to '{STORAGE_TYPE_ETCD3}'"));
        }
        if let Err(e) = parse_etcd_servers_overrides(&self.etcd_servers_overrides) {
            errors.push(e);
        } else if !self.etcd_servers_overrides.is_empty() && self.etcd_servers.is_empty() {
            errors.push("--etcd-servers-overrides needs --etcd-servers (the embedded store takes no overrides)".into());
        }
        if self.watch_cache
            && let Err(e) = parse_watch_cache_sizes(&self.watch_cache_sizes)
        {
            errors.push(e);
        }
    }

    fn validate_webhook_and_jwt(&self, errors: &mut Vec<String>) {
        if self.authentication_config.is_some() && self.oidc_flags_set() {
            errors
                .push("authentication-config file and oidc-* flags are mutually exclusive".into());
        }
        if self.oidc_issuer_url.is_empty() != self.oidc_client_id.is_empty() {
            errors.push("oidc-issuer-url and oidc-client-id should be specified together".into());
        }
        for claim in &self.oidc_required_claim {
            if !claim.contains('=') {
                errors.push(format!(
                    "invalid argument {claim:?} for \"--oidc-required-claim\" flag: malformed pair, expect string=string"
                ));
            }
        }
        if let Err(e) = self
            .authentication_token_webhook_version
            .parse::<apiserver::authn::webhook::TokenReviewVersion>()
        {
            errors.push(e);
        }
        for (flag, d) in [
            (
                "authentication-token-webhook-cache-ttl",
                self.authentication_token_webhook_cache_ttl,
            ),
            (
                "authorization-webhook-cache-authorized-ttl",
                self.authorization_webhook_cache_authorized_ttl,
            ),
            (
                "authorization-webhook-cache-unauthorized-ttl",
                self.authorization_webhook_cache_unauthorized_ttl,
            ),
        ] {
            if d.negative {
                errors.push(format!("--{flag} must not be negative"));
            }
        }
        let modes_given = self.authorization_mode != ["AlwaysAllow"];
        if self.authorization_config.is_some() {
            if modes_given || self.authorization_webhook_flags_set() {
                errors.push(
                    "--authorization-config can not be specified when --authorization-mode or --authorization-webhook-* flags are defined"
                        .into(),
                );
            }
            return;
        }
        let webhook_mode = self.authorization_mode.iter().any(|m| m == "Webhook");
        if !webhook_mode && self.authorization_webhook_config_file.is_some() {
            errors.push(
                "cannot specify --authorization-webhook-config-file without mode Webhook".into(),
            );
        }
        if webhook_mode && self.authorization_webhook_config_file.is_none() {
            errors.push("authorization-mode Webhook's authorization config file not passed".into());
        }
        if !matches!(
            self.authorization_webhook_version.as_str(),
            "v1" | "v1beta1"
        ) {
            errors.push(format!(
                "--authorization-webhook-version must be v1 or v1beta1, got {:?}",
                self.authorization_webhook_version
            ));
        }
    }
}

impl Options {
    /// Upstream's checks of the service-account flags, with its messages.
    fn validate_service_accounts(&self) -> Vec<String> {
        let mut errors = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for issuer in &self.service_account_issuer {
            if issuer.is_empty() {
                errors.push("service-account-issuer should not be an empty string".into());
            } else if issuer.starts_with(':') {
                errors.push(format!(
                    "service-account-issuer {issuer:?} contained a ':' but was not a valid URL: parse {issuer:?}: missing protocol scheme"
                ));
            } else if !seen.insert(issuer) {
                errors.push(format!(
                    "service-account-issuer {issuer:?} is already specified"
                ));
            }
        }
        if let Some(uri) = self
            .service_account_jwks_uri
            .as_deref()
            .filter(|u| !u.is_empty())
            && !uri.starts_with("https://")
        {
            errors.push(format!(
                "service-account-jwks-uri requires https scheme, parsed as: {uri}"
            ));
        }
        let max = self.service_account_max_token_expiration;
        if max.negative
            || (!max.value.is_zero()
                && (max.value < Duration::from_secs(60 * 60)
                    || max.value > Duration::from_secs(1 << 32)))
        {
            errors.push(
                "the service-account-max-token-expiration must be between 1 hour and 2^32 seconds"
                    .into(),
            );
        }
        errors
    }
}

/// One `--tls-sni-cert-key` value: `cert,key[:name1,name2]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SniCertKey {
    /// Certificate file.
    pub cert: PathBuf,
    /// Key file.
    pub key: PathBuf,
    /// Explicit names (empty = derive from the certificate).
    pub names: Vec<String>,
}

/// Upstream's checks of `--authorization-mode` (`BuiltInAuthorizationOptions.Validate`): at
/// least one mode, each one known, none twice. ABAC (no policy-file flag here) is refused as
/// not supported.
pub fn validate_authorization_modes(modes: &[String]) -> Vec<String> {
    use apiserver::authz::AuthorizationMode;
    let mut errors = Vec::new();
    // pflag reads `--authorization-mode=` as an empty list (but `RBAC,` as `RBAC` and `""`).
    let modes: Vec<&String> = if modes.len() == 1 && modes[0].is_empty() {
        Vec::new()
    } else {
        modes.iter().collect()
    };
    if modes.is_empty() {
        errors.push("at least one authorization-mode must be passed".to_string());
    }
    for mode in &modes {
        match mode.parse::<AuthorizationMode>() {
            Ok(AuthorizationMode::Abac) => errors.push(format!(
                "authorization mode {} is not supported by this server",
                AuthorizationMode::Abac
            )),
            Ok(_) => {}
            Err(err) => errors.push(err.to_string()),
        }
    }
    let distinct: std::collections::BTreeSet<&String> = modes.iter().copied().collect();
    if distinct.len() != modes.len() {
        let quoted: Vec<String> = modes
            .iter()
            .map(|m| apiserver::filters::authorization::go_quote(m))
            .collect();
        errors.push(format!(
            "authorization-mode [{}] has mode specified more than once",
            quoted.join(" ")
        ));
    }
    errors
}

/// Parses `cert,key[:name1,name2]` as upstream's `NamedCertKey` flag does.
pub fn parse_sni_cert_key(value: &str) -> Result<SniCertKey, String> {
    let (files, names) = match value.split_once(':') {
        Some((files, names)) => (files, names),
        None => (value, ""),
    };
    let mut parts = files.split(',').map(str::trim);
    let (Some(cert), Some(key), None) = (parts.next(), parts.next(), parts.next()) else {
        return Err(format!(
            "--tls-sni-cert-key {value:?}: expected comma separated certificate and key file paths"
        ));
    };
    if cert.is_empty() || key.is_empty() {
        return Err(format!(
            "--tls-sni-cert-key {value:?}: expected comma separated certificate and key file paths"
        ));
    }
    let names = names
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(String::from)
        .collect();
    Ok(SniCertKey {
        cert: cert.into(),
        key: key.into(),
        names,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, clap::Error> {
        let mut all = vec!["kube-apiserver"];
        all.extend_from_slice(args);
        Options::try_parse_from(all)
    }

    #[test]
    fn defaults_match_upstream() {
        let o = parse(&[]).unwrap();
        assert_eq!(o.secure_port, 6443);
        assert_eq!(o.max_requests_inflight, 400);
        assert_eq!(o.max_mutating_requests_inflight, 200);
        assert_eq!(o.request_timeout.get(), Duration::from_secs(60));
        assert_eq!(o.min_request_timeout, 1800);
        assert!(o.profiling);
        assert!(o.anonymous_auth);
        assert!(!o.shutdown_send_retry_after);
        assert_eq!(o.authorization_mode, vec!["AlwaysAllow".to_string()]);
        assert!(o.aggregator_reject_forwarding_redirect);
        assert!(!o.enable_aggregator_routing);
        assert!(o.service_account_lookup);
        assert!(o.service_account_extend_token_expiration);
        assert!(!o.enable_bootstrap_token_auth);
        assert!(o.service_account_issuer.is_empty());
        assert!(o.validate().is_empty());
    }

    #[test]
    fn go_style_values() {
        let o = parse(&[
            "--shutdown-delay-duration=1m30s",
            "--profiling=false",
            "--shutdown-send-retry-after",
            "--tls-sni-cert-key=a.crt,a.key:foo.com,*.bar.com",
            "--tls-sni-cert-key",
            "b.crt,b.key",
            "--cors-allowed-origins=^a$,//b:",
            "-v=4",
        ])
        .unwrap();
        assert_eq!(o.shutdown_delay_duration.get(), Duration::from_secs(90));
        assert!(!o.profiling);
        assert!(o.shutdown_send_retry_after);
        assert_eq!(o.tls_sni_cert_key.len(), 2);
        assert_eq!(o.cors_allowed_origins, vec!["^a$", "//b:"]);
        assert_eq!(o.verbosity, 4);
        assert_eq!(
            parse_sni_cert_key(&o.tls_sni_cert_key[0]).unwrap().names,
            vec!["foo.com", "*.bar.com"]
        );
        assert!(o.validate().is_empty(), "{:?}", o.validate());
    }

    #[test]
    fn audit_flags_have_upstreams_defaults_and_validation() {
        let defaults = parse(&[]).unwrap().audit_options();
        assert_eq!(defaults, apiserver::audit::AuditOptions::default());
        let o = parse(&[
            "--audit-log-path=-",
            "--audit-log-mode=batch",
            "--audit-log-batch-max-size=0",
            "--audit-log-format=xml",
            "--audit-log-maxage=-1",
            "--audit-webhook-config-file=hook.kubeconfig",
            "--audit-webhook-batch-initial-backoff=2s",
            "--audit-webhook-truncate-max-event-size=0",
        ])
        .unwrap();
        assert_eq!(
            o.audit_options().webhook_initial_backoff,
            Duration::from_secs(2)
        );
        assert_eq!(
            o.validate(),
            [
                "invalid audit batch log max batch size 0, must be a positive number",
                r#"invalid audit log format xml, allowed formats are "legacy,json""#,
                "--audit-log-maxage -1 can't be a negative number",
                "invalid audit truncate webhook max event size 0, must be a positive number",
            ]
        );
    }

    #[test]
    fn insecure_serving_flags_are_unknown_as_in_kube_apiserver_1_35() {
        for flag in [
            "--insecure-port=8080",
            "--insecure-bind-address=127.0.0.1",
            "--insecure-allow-remote",
        ] {
            let err = parse(&[flag])
                .err()
                .unwrap_or_else(|| panic!("{flag} accepted"));
            assert_eq!(
                err.kind(),
                clap::error::ErrorKind::UnknownArgument,
                "{flag}"
            );
        }
    }

    #[test]
    fn disable_http2_serving_is_a_pflag_bool() {
        assert!(!parse(&[]).unwrap().disable_http2_serving);
        assert!(
            parse(&["--disable-http2-serving"])
                .unwrap()
                .disable_http2_serving
        );
        assert!(
            !parse(&["--disable-http2-serving=false"])
                .unwrap()
                .disable_http2_serving
        );
    }

    #[test]
    fn invalid_values_are_rejected() {
        assert!(parse(&["--unknown-flag"]).is_err());
        assert!(parse(&["--request-timeout=abc"]).is_err());
        let cases: &[(&[&str], &str)] = &[
            (
                &["--max-requests-inflight=-1"],
                "--max-requests-inflight can not be negative value",
            ),
            (
                &["--shutdown-delay-duration=-1s"],
                "--shutdown-delay-duration can not be negative value",
            ),
            (
                &["--goaway-chance=0.5"],
                "--goaway-chance can not be less than 0 or greater than 0.02",
            ),
            (
                &["--strict-transport-security-directives=max-age=abc"],
                "--strict-transport-security-directives invalid",
            ),
            (
                &["--cors-allowed-origins=example.com"],
                "does not pin to start/end of host",
            ),
            (
                &["--secure-port=70000"],
                "--secure-port 70000 must be between",
            ),
            (&["--tls-min-version=VersionTLS10"], "is not supported"),
            (
                &["--authorization-mode=RBAC,Bogus"],
                "authorization-mode \"Bogus\" is not a valid mode",
            ),
            (
                &["--authorization-mode=RBAC,Node,RBAC"],
                "authorization-mode [\"RBAC\" \"Node\" \"RBAC\"] has mode specified more than once",
            ),
            (
                &["--authorization-mode=ABAC"],
                "authorization mode ABAC is not supported by this server",
            ),
            (
                &["--authorization-mode="],
                "at least one authorization-mode must be passed",
            ),
            (
                &["--authorization-mode=RBAC,"],
                "authorization-mode \"\" is not a valid mode",
            ),
            (
                &["--authorization-mode=Webhook"],
                "authorization-mode Webhook's authorization config file not passed",
            ),
            (
                &["--authorization-webhook-config-file=/k"],
                "cannot specify --authorization-webhook-config-file without mode Webhook",
            ),
            (
                &[
                    "--authorization-config=/c",
                    "--authorization-webhook-version=v1beta1",
                ],
                "--authorization-config can not be specified when --authorization-mode or --authorization-webhook-* flags are defined",
            ),
            (
                &["--authentication-config=/c", "--oidc-username-claim=email"],
                "authentication-config file and oidc-* flags are mutually exclusive",
            ),
            (
                &["--oidc-client-id=k8s"],
                "oidc-issuer-url and oidc-client-id should be specified together",
            ),
            (
                &[
                    "--oidc-issuer-url=https://i",
                    "--oidc-client-id=k",
                    "--oidc-required-claim=nokey",
                ],
                "malformed pair, expect string=string",
            ),
            (
                &["--authentication-token-webhook-version=v3"],
                "unsupported authentication webhook version \"v3\"",
            ),
            (
                &["--authorization-webhook-cache-authorized-ttl=-1s"],
                "--authorization-webhook-cache-authorized-ttl must not be negative",
            ),
            (
                &["--requestheader-username-headers=X-Remote-User,"],
                "empty value in \"requestheader-username-headers\"",
            ),
            (
                &["--proxy-client-cert-file=a.crt"],
                "--proxy-client-cert-file and --proxy-client-key-file must be given together",
            ),
            (
                &[
                    "--service-account-issuer=https://a",
                    "--service-account-issuer=https://a",
                ],
                "service-account-issuer \"https://a\" is already specified",
            ),
            (
                &["--service-account-issuer="],
                "service-account-issuer should not be an empty string",
            ),
            (
                &["--service-account-max-token-expiration=30m"],
                "the service-account-max-token-expiration must be between 1 hour and 2^32 seconds",
            ),
            (
                &["--service-account-jwks-uri=http://x/jwks"],
                "service-account-jwks-uri requires https scheme, parsed as: http://x/jwks",
            ),
        ];
        for (args, expected) in cases {
            let errors = parse(args).unwrap().validate();
            assert!(
                errors.iter().any(|e| e.contains(expected)),
                "{args:?}: {errors:?}"
            );
        }
    }
}
