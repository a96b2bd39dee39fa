//! The kubelet client flags (upstream `KubeletClientConfig`: `--kubelet-client-certificate`,
//! `--kubelet-client-key`, `--kubelet-certificate-authority`,
//! `--kubelet-preferred-address-types`, `--kubelet-timeout`, the deprecated ports).
//!
//! Upstream builds its kubelet transport at start-up, so unreadable or mismatched files stop
//! the server there; this server does the same checks. No request is proxied to a kubelet
//! here (`pods/log`, `exec`, `attach`, `portforward` answer without one), so the loaded
//! configuration is kept for the start-up log only.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::options::Options;

/// The node address types upstream knows (`core.NodeAddressType`).
const ADDRESS_TYPES: &[&str] = &[
    "Hostname",
    "InternalIP",
    "ExternalIP",
    "InternalDNS",
    "ExternalDNS",
];

/// The kubelet client settings the flags describe, their files read and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeletClientConfig {
    /// The client certificate file and key file, when given.
    pub client_cert: Option<(PathBuf, PathBuf)>,
    /// The CA bundle that verifies kubelets' serving certificates, when given.
    pub certificate_authority: Option<PathBuf>,
    /// Node address types in the order they are tried.
    pub preferred_address_types: Vec<String>,
    /// Timeout of kubelet operations.
    pub timeout: Duration,
    /// The kubelet port (deprecated flag).
    pub port: u32,
}

impl KubeletClientConfig {
    /// Reads the flags and the files they name: a certificate without its key (or the
    /// reverse), or a file that does not hold what it should, is the start-up error. An
    /// address type upstream does not know is accepted, as upstream does (it never matches
    /// a node address), with a warning.
    pub fn from_options(opts: &Options) -> Result<Self, String> {
        // pflag's deprecation notices, for the flags upstream marks deprecated.
        if opts.kubelet_port.is_some() {
            tracing::warn!(
                "Flag --kubelet-port has been deprecated, kubelet-port is deprecated and will be removed."
            );
        }
        if opts.kubelet_read_only_port.is_some() {
            tracing::warn!(
                "Flag --kubelet-read-only-port has been deprecated, kubelet-read-only-port is deprecated and will be removed."
            );
        }
        for kind in unknown_address_types(&opts.kubelet_preferred_address_types) {
            tracing::warn!(
                "--kubelet-preferred-address-types: {kind:?} is not a node address type ({}); it never matches",
                ADDRESS_TYPES.join(", ")
            );
        }
        let client_cert = match (&opts.kubelet_client_certificate, &opts.kubelet_client_key) {
            (Some(cert), Some(key)) => {
                read_certificates(cert, "--kubelet-client-certificate")?;
                read_private_key(key)?;
                Some((cert.clone(), key.clone()))
            }
            (None, None) => None,
            _ => {
                return Err(
                    "--kubelet-client-certificate and --kubelet-client-key must be given together"
                        .into(),
                );
            }
        };
        if let Some(ca) = &opts.kubelet_certificate_authority {
            read_certificates(ca, "--kubelet-certificate-authority")?;
        }
        Ok(KubeletClientConfig {
            client_cert,
            certificate_authority: opts.kubelet_certificate_authority.clone(),
            preferred_address_types: opts.kubelet_preferred_address_types.clone(),
            timeout: opts.kubelet_timeout.get(),
            port: opts.kubelet_port.unwrap_or(10250),
        })
    }

    /// Whether any kubelet TLS file was configured (worth a line in the log, since nothing
    /// here dials kubelets).
    pub fn has_tls_files(&self) -> bool {
        self.client_cert.is_some() || self.certificate_authority.is_some()
    }
}

/// The entries that name no node address type.
fn unknown_address_types(types: &[String]) -> impl Iterator<Item = &String> {
    types
        .iter()
        .filter(|kind| !ADDRESS_TYPES.contains(&kind.as_str()))
}

fn read_certificates(path: &Path, flag: &str) -> Result<(), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{flag} {}: {e}", path.display()))?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{flag} {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "{flag} {}: no PEM certificate found",
            path.display()
        ));
    }
    Ok(())
}

fn read_private_key(path: &Path) -> Result<(), String> {
    PrivateKeyDer::from_pem_file(path)
        .map(drop)
        .map_err(|e| format!("--kubelet-client-key {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn opts(args: &[String]) -> Options {
        let mut argv = vec!["kube-apiserver".to_string()];
        argv.extend_from_slice(args);
        Options::try_parse_from(argv).unwrap()
    }

    #[test]
    fn defaults_are_upstreams() {
        let config = KubeletClientConfig::from_options(&opts(&[])).unwrap();
        assert_eq!(
            config.preferred_address_types,
            [
                "Hostname",
                "InternalDNS",
                "InternalIP",
                "ExternalDNS",
                "ExternalIP"
            ]
        );
        assert_eq!(config.timeout, Duration::from_secs(5));
        assert_eq!(config.port, 10250);
        assert!(!config.has_tls_files());
    }

    #[test]
    fn kubeadm_files_are_read_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let ca = apiserver::server::serving::selfsigned::new_ca("kubernetes").unwrap();
        let cert = dir.path().join("apiserver-kubelet-client.crt");
        let key = dir.path().join("apiserver-kubelet-client.key");
        std::fs::write(&cert, &ca.cert_pem).unwrap();
        std::fs::write(&key, &ca.key_pem).unwrap();
        let flags = [
            format!("--kubelet-client-certificate={}", cert.display()),
            format!("--kubelet-client-key={}", key.display()),
            "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname".to_string(),
        ];
        let config = KubeletClientConfig::from_options(&opts(&flags)).unwrap();
        assert!(config.has_tls_files());
        assert_eq!(
            config.preferred_address_types,
            ["InternalIP", "ExternalIP", "Hostname"]
        );

        let only_cert = [flags[0].clone()];
        assert_eq!(
            KubeletClientConfig::from_options(&opts(&only_cert)).unwrap_err(),
            "--kubelet-client-certificate and --kubelet-client-key must be given together"
        );
        let swapped = [
            format!("--kubelet-client-certificate={}", key.display()),
            format!("--kubelet-client-key={}", key.display()),
        ];
        assert!(
            KubeletClientConfig::from_options(&opts(&swapped))
                .unwrap_err()
                .contains("no PEM certificate found")
        );
        let missing = [format!(
            "--kubelet-certificate-authority={}",
            dir.path().join("nope.crt").display()
        )];
        assert!(
            KubeletClientConfig::from_options(&opts(&missing))
                .unwrap_err()
                .starts_with("--kubelet-certificate-authority ")
        );
        let odd_type = ["--kubelet-preferred-address-types=InternalIP,Public".to_string()];
        assert!(KubeletClientConfig::from_options(&opts(&odd_type)).is_ok());
        let parsed = opts(&odd_type);
        let odd: Vec<&String> =
            unknown_address_types(&parsed.kubelet_preferred_address_types).collect();
        assert_eq!(odd, ["Public"]);
    }
}
