//! kube-apiserver 1.35 flags whose features this server does not have: each is parsed and
//! validated as upstream validates it, then accepted with a start-up warning when ignoring
//! it is safe (the server behaves as upstream does with the flag's default), or refused with
//! one clear line when ignoring it would silently weaken what the flag asks for (egress
//! proxies, ABAC, an external token signer, another emulated version, JSON logs).

use std::net::SocketAddr;

use crate::options::Options;

/// The Kubernetes minor version this server is.
const BINARY_MINOR: u32 = 35;
/// The oldest minor version 1.35 can emulate or be compatible with.
const FLOOR_MINOR: u32 = 32;

/// Upstream's checks of these flags, plus the refusals; every problem, in flag order.
pub fn validate(opts: &Options) -> Vec<String> {
    let mut errors = Vec::new();
    let emulated = match versions("emulated-version", &opts.emulated_version) {
        Ok(Some(minor)) if !(FLOOR_MINOR..=BINARY_MINOR).contains(&minor) => {
            errors.push(format!(
                "emulation version 1.{minor} is not between [1.{FLOOR_MINOR}, 1.{BINARY_MINOR}]"
            ));
            BINARY_MINOR
        }
        Ok(Some(minor)) if minor != BINARY_MINOR => {
            errors.push(format!(
                "--emulated-version=kube=1.{minor}: this server emulates kube 1.{BINARY_MINOR} only"
            ));
            BINARY_MINOR
        }
        Ok(_) => BINARY_MINOR,
        Err(e) => {
            errors.push(e);
            BINARY_MINOR
        }
    };
    match versions("min-compatibility-version", &opts.min_compatibility_version) {
        Ok(Some(minor)) if !(FLOOR_MINOR..=emulated).contains(&minor) => errors.push(format!(
            "minCompatibilityVersion version 1.{minor} is not between [1.{FLOOR_MINOR}, 1.{emulated}]"
        )),
        Ok(_) => {}
        Err(e) => errors.push(e),
    }
    if opts.emulation_forward_compatible {
        errors.push(
            "ServerRunOptions.EmulationForwardCompatible cannot be set to true if the emulation version is the same as the binary version".into(),
        );
    }
    if opts.runtime_config_emulation_forward_compatible {
        errors.push(
            "ServerRunOptions.RuntimeConfigEmulationForwardCompatible cannot be set to true if the emulation version is the same as the binary version".into(),
        );
    }
    if let Some(version) = opts.show_hidden_metrics_for_version.as_deref()
        && !version.is_empty()
        && version != format!("1.{}", BINARY_MINOR - 1)
    {
        errors.push(format!(
            "--show-hidden-metrics-for-version must be omitted or have the value '1.{}'. Only the previous minor version is allowed",
            BINARY_MINOR - 1
        ));
    }
    if opts
        .allow_metric_labels
        .iter()
        .flat_map(|v| v.split(','))
        .any(|kv| !kv.is_empty() && !kv.contains('='))
    {
        errors.push(
            "--allow-metric-labels must have a list of kv pair with format `metricName,labelName=labelValue, labelValue,...`".into(),
        );
    }
    match opts.logging_format.as_str() {
        "text" => {}
        "json" => errors.push(
            "--logging-format=json is not supported by this server: its log is text only".into(),
        ),
        other => errors.push(format!(
            "format: Invalid value: {other:?}: Unsupported log format"
        )),
    }
    if opts.log_flush_frequency.negative || opts.event_ttl.negative {
        errors.push("durations can not be negative values".into());
    }
    if let Err(e) = parse_port_range(&opts.service_node_port_range) {
        errors.push(format!(
            "invalid argument {:?} for \"--service-node-port-range\" flag: {e}",
            opts.service_node_port_range
        ));
    }
    if opts.max_connection_bytes_per_sec < 0 {
        errors.push("--max-connection-bytes-per-sec can not be negative value".into());
    }
    if opts.egress_selector_config_file.is_some() {
        errors.push(
            "--egress-selector-config-file is not supported by this server: its outgoing connections cannot go through the configured egress proxies".into(),
        );
    }
    if opts.authorization_policy_file.is_some() {
        errors.push(
            "--authorization-policy-file is not supported by this server: authorization mode ABAC is not supported".into(),
        );
    }
    if opts.service_account_signing_endpoint.is_some() {
        errors.push(
            "--service-account-signing-endpoint is not supported by this server: use --service-account-signing-key-file".into(),
        );
    }
    errors
}

/// What the server logs at start for the accepted flags it does not act on.
pub fn warnings(opts: &Options) -> Vec<String> {
    let mut warnings = Vec::new();
    let mut ignored = |set: bool, what: &str| {
        if set {
            warnings.push(format!(
                "{what} is accepted but has no effect on this server"
            ));
        }
    };
    ignored(
        !opts.min_compatibility_version.is_empty(),
        "--min-compatibility-version",
    );
    ignored(opts.contention_profiling, "--contention-profiling");
    ignored(
        opts.show_hidden_metrics_for_version.is_some(),
        "--show-hidden-metrics-for-version",
    );
    ignored(!opts.disabled_metrics.is_empty(), "--disabled-metrics");
    ignored(
        !opts.allow_metric_labels.is_empty() || opts.allow_metric_labels_manifest.is_some(),
        "--allow-metric-labels",
    );
    ignored(opts.vmodule.is_some(), "--vmodule");
    ignored(
        opts.tracing_config_file.is_some(),
        "--tracing-config-file (no traces are exported)",
    );
    ignored(
        opts.event_ttl.get() != std::time::Duration::from_secs(3600),
        "--event-ttl (events are kept until deleted)",
    );
    ignored(
        opts.max_connection_bytes_per_sec != 0,
        "--max-connection-bytes-per-sec",
    );
    ignored(
        opts.peer_ca_file.is_some()
            || opts.peer_advertise_ip.is_some()
            || opts.peer_advertise_port.is_some(),
        "--peer-ca-file/--peer-advertise-ip/--peer-advertise-port (no mixed-version proxy)",
    );
    if let Some(enabled) = opts.enable_logs_handler {
        warnings.push(
            "Flag --enable-logs-handler has been deprecated, Log handler functionality is deprecated"
                .into(),
        );
        if enabled {
            warnings
                .push("--enable-logs-handler=true: this server installs no /logs handler".into());
        }
    }
    warnings
}

/// Upstream's external address: `--external-hostname`, else the advertise address, else
/// the bound address (its default route's address for a wildcard bind), with the port.
pub fn external_address(opts: &Options, bound: SocketAddr) -> String {
    match opts.external_hostname.as_deref().filter(|h| !h.is_empty()) {
        Some(host) if host.contains(':') && !host.starts_with('[') => {
            format!("[{host}]:{}", bound.port())
        }
        Some(host) => format!("{host}:{}", bound.port()),
        None => crate::serviceaccount::openid::external_address(SocketAddr::new(
            opts.advertise_address.unwrap_or(bound.ip()),
            bound.port(),
        )),
    }
}

/// The `kube` minor version of a `--emulated-version`/`--min-compatibility-version` value
/// (`[kube=]1.N`, comma separated), with upstream's errors.
fn versions(flag: &str, values: &[String]) -> Result<Option<u32>, String> {
    let mut found = None;
    for item in values.iter().map(|v| v.trim()).filter(|v| !v.is_empty()) {
        let (component, version) = match item.split_once('=') {
            Some((c, v)) => (c.trim(), v.trim()),
            None => ("kube", item),
        };
        if component != "kube" {
            return Err(format!("component not registered: {component}"));
        }
        let mut parts = version.trim_start_matches('v').split('.');
        let (Some("1"), Some(minor), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(format!(
                "invalid argument {item:?} for \"--{flag}\" flag: patch version not allowed, or not major.minor: {version}"
            ));
        };
        let minor = minor.parse::<u32>().map_err(|_| {
            format!("invalid argument {item:?} for \"--{flag}\" flag: {version} is not a version")
        })?;
        if found.replace(minor).is_some() {
            return Err(format!(
                "duplicate version flag, kube=1.{minor} and kube={version}"
            ));
        }
    }
    Ok(found)
}

/// pflag's `PortRange`: `N1-N2` or `N1+offset`, ports 0..=65535, N1 ≤ N2.
fn parse_port_range(value: &str) -> Result<(u16, u16), String> {
    let value = value.trim();
    let (base, end) = if let Some((a, b)) = value.split_once('-') {
        let a: u16 = a
            .trim()
            .parse()
            .map_err(|_| format!("unable to parse port range: {value}"))?;
        let b: u16 = b
            .trim()
            .parse()
            .map_err(|_| format!("unable to parse port range: {value}"))?;
        (a, b)
    } else if let Some((a, offset)) = value.split_once('+') {
        let a: u16 = a
            .trim()
            .parse()
            .map_err(|_| format!("unable to parse port range: {value}"))?;
        let offset: u16 = offset
            .trim()
            .parse()
            .map_err(|_| format!("unable to parse port range: {value}"))?;
        (
            a,
            a.checked_add(offset)
                .ok_or_else(|| format!("port range out of range: {value}"))?,
        )
    } else {
        let a: u16 = value
            .parse()
            .map_err(|_| format!("unable to parse port range: {value}"))?;
        (a, a)
    };
    if end < base {
        return Err(format!("end port is less than base port: {value}"));
    }
    Ok((base, end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn opts(args: &[&str]) -> Options {
        let mut argv = vec!["kube-apiserver"];
        argv.extend_from_slice(args);
        Options::try_parse_from(argv).unwrap()
    }

    #[test]
    fn upstream_defaults_and_safe_values_are_accepted_quietly() {
        let o = opts(&[
            "--emulated-version=kube=1.35",
            "--min-compatibility-version=1.34",
            "--service-node-port-range=30000-32767",
            "--logging-format=text",
            "--event-ttl=1h",
            "--show-hidden-metrics-for-version=1.34",
        ]);
        assert!(validate(&o).is_empty(), "{:?}", validate(&o));
        let logged = warnings(&o);
        assert_eq!(
            logged,
            [
                "--min-compatibility-version is accepted but has no effect on this server",
                "--show-hidden-metrics-for-version is accepted but has no effect on this server",
            ]
        );
        assert!(warnings(&opts(&[])).is_empty());
    }

    #[test]
    fn unsupported_or_invalid_values_are_refused_with_one_line_each() {
        let cases: &[(&[&str], &str)] = &[
            (
                &["--emulated-version=1.34"],
                "--emulated-version=kube=1.34: this server emulates kube 1.35 only",
            ),
            (
                &["--emulated-version=1.30"],
                "emulation version 1.30 is not between [1.32, 1.35]",
            ),
            (
                &["--emulated-version=wardle=1.2"],
                "component not registered: wardle",
            ),
            (
                &["--min-compatibility-version=1.36"],
                "minCompatibilityVersion version 1.36 is not between [1.32, 1.35]",
            ),
            (
                &["--emulation-forward-compatible"],
                "ServerRunOptions.EmulationForwardCompatible cannot be set to true if the emulation version is the same as the binary version",
            ),
            (
                &["--show-hidden-metrics-for-version=1.30"],
                "--show-hidden-metrics-for-version must be omitted or have the value '1.34'. Only the previous minor version is allowed",
            ),
            (
                &["--logging-format=json"],
                "--logging-format=json is not supported",
            ),
            (
                &["--service-node-port-range=32767-30000"],
                "end port is less than base port",
            ),
            (
                &["--egress-selector-config-file=/e.yaml"],
                "--egress-selector-config-file is not supported by this server",
            ),
            (
                &["--authorization-policy-file=/p.jsonl"],
                "authorization mode ABAC is not supported",
            ),
            (
                &["--service-account-signing-endpoint=/run/signer.sock"],
                "--service-account-signing-endpoint is not supported by this server",
            ),
        ];
        for (args, expected) in cases {
            let errors = validate(&opts(args));
            assert!(
                errors.iter().any(|e| e.contains(expected)),
                "{args:?}: {errors:?}"
            );
        }
    }

    #[test]
    fn the_external_address_follows_external_hostname_then_advertise_address() {
        let bound: SocketAddr = "127.0.0.1:6443".parse().unwrap();
        assert_eq!(external_address(&opts(&[]), bound), "127.0.0.1:6443");
        assert_eq!(
            external_address(&opts(&["--advertise-address=10.1.2.3"]), bound),
            "10.1.2.3:6443"
        );
        assert_eq!(
            external_address(
                &opts(&[
                    "--advertise-address=10.1.2.3",
                    "--external-hostname=api.example.com"
                ]),
                bound
            ),
            "api.example.com:6443"
        );
    }

    #[test]
    fn port_ranges_read_as_pflag_reads_them() {
        assert_eq!(parse_port_range("30000-32767"), Ok((30000, 32767)));
        assert_eq!(parse_port_range("30000+100"), Ok((30000, 30100)));
        assert!(parse_port_range("abc").is_err());
    }
}
