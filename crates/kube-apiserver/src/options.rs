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

    // ----- Insecure serving flags -----
    /// DEPRECATED: plain-HTTP port without authentication or authorization (0 = off).
    #[arg(
        long,
        default_value_t = 0,
        allow_negative_numbers = true,
        help_heading = "Insecure serving flags"
    )]
    pub insecure_port: i64,
    /// DEPRECATED: the IP address for --insecure-port.
    #[arg(
        long,
        default_value = "127.0.0.1",
        help_heading = "Insecure serving flags"
    )]
    pub insecure_bind_address: IpAddr,
    /// Allow a non-loopback --insecure-bind-address.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", action = ArgAction::Set, help_heading = "Insecure serving flags")]
    pub insecure_allow_remote: bool,

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

    // ----- Authorization flags -----
    /// Ordered list of plug-ins to do authorization on secure port: AlwaysAllow, AlwaysDeny.
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, default_value = "AlwaysAllow", help_heading = "Authorization flags")]
    pub authorization_mode: Vec<String>,

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

    /// Upstream's validation rules; every problem found, in flag order.
    pub fn validate(&self) -> Vec<String> {
        let mut errors = Vec::new();
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
        non_negative(
            self.audit_log_maxage,
            "--audit-log-maxage can not be negative value",
        );
        non_negative(
            self.audit_log_maxbackup,
            "--audit-log-maxbackup can not be negative value",
        );
        non_negative(
            self.audit_log_maxsize,
            "--audit-log-maxsize can not be negative value",
        );
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
        if !(0..=65535).contains(&self.insecure_port) {
            errors.push(format!(
                "--insecure-port {} must be between 0 and 65535, inclusive. 0 for turning off insecure (HTTP) port",
                self.insecure_port
            ));
        }
        if self.insecure_port > 0
            && !self.insecure_bind_address.is_loopback()
            && !self.insecure_allow_remote
        {
            errors.push(format!(
                "--insecure-bind-address {} is not a loopback address; pass --insecure-allow-remote to serve plain HTTP on it",
                self.insecure_bind_address
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
        for mode in &self.authorization_mode {
            if !matches!(mode.as_str(), "AlwaysAllow" | "AlwaysDeny") {
                errors.push(format!(
                    "--authorization-mode: authorization mode {mode:?} is not supported (supported: AlwaysAllow, AlwaysDeny)"
                ));
            }
        }
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
        if self.proxy_client_cert_file.is_some() != self.proxy_client_key_file.is_some() {
            errors.push(
                "--proxy-client-cert-file and --proxy-client-key-file must be given together"
                    .into(),
            );
        }
        if self.etcd_certfile.is_some() != self.etcd_keyfile.is_some() {
            errors.push("--etcd-certfile and --etcd-keyfile must be given together".into());
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
            (&["--authorization-mode=Webhook"], "is not supported"),
            (
                &["--requestheader-username-headers=X-Remote-User,"],
                "empty value in \"requestheader-username-headers\"",
            ),
            (
                &["--proxy-client-cert-file=a.crt"],
                "--proxy-client-cert-file and --proxy-client-key-file must be given together",
            ),
            (
                &["--insecure-port=8080", "--insecure-bind-address=0.0.0.0"],
                "--insecure-allow-remote",
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
