//! A self-signed PKI for the embedded default configuration: a CA, a serving certificate and an
//! admin client certificate (like upstream's `MaybeDefaultWithSelfSignedCerts`, plus an admin
//! identity in `system:masters`).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

use super::kubeconfig::{write_private, write_public};

const YEAR: Duration = Duration::from_secs(365 * 24 * 60 * 60);
/// Validity of the generated CA.
pub const CA_VALIDITY: Duration = Duration::from_secs(10 * 365 * 24 * 60 * 60);
/// Validity of the generated serving and client certificates.
pub const LEAF_VALIDITY: Duration = YEAR;

/// The files of the PKI.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PkiPaths {
    /// `ca.crt`.
    pub ca_cert: PathBuf,
    /// `ca.key`.
    pub ca_key: PathBuf,
    /// `apiserver.crt`: the serving certificate.
    pub serving_cert: PathBuf,
    /// `apiserver.key`.
    pub serving_key: PathBuf,
    /// `admin.crt`: client certificate, CN `admin`, O `system:masters`.
    pub admin_cert: PathBuf,
    /// `admin.key`.
    pub admin_key: PathBuf,
}

impl PkiPaths {
    /// The file names inside `dir`.
    pub fn in_dir(dir: &Path) -> Self {
        PkiPaths {
            ca_cert: dir.join("ca.crt"),
            ca_key: dir.join("ca.key"),
            serving_cert: dir.join("apiserver.crt"),
            serving_key: dir.join("apiserver.key"),
            admin_cert: dir.join("admin.crt"),
            admin_key: dir.join("admin.key"),
        }
    }

    fn all(&self) -> [&PathBuf; 6] {
        [
            &self.ca_cert,
            &self.ca_key,
            &self.serving_cert,
            &self.serving_key,
            &self.admin_cert,
            &self.admin_key,
        ]
    }
}

/// Why the PKI could not be created.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Certificate generation failed.
    #[error("generating certificates: {0}")]
    Generate(#[from] rcgen::Error),
    /// A certificate without its key, or a key without its certificate.
    #[error(
        "{present} exists but {missing} does not: add it, or remove both to have them generated"
    )]
    Incomplete {
        /// The file that exists.
        present: PathBuf,
        /// The file that is missing.
        missing: PathBuf,
    },
}

/// The machine's host name, if known.
fn host_name() -> Option<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()?;
    let name = name.trim();
    (!name.is_empty()).then(|| name.to_string())
}

fn validity(params: &mut CertificateParams, valid_for: Duration) {
    let now = SystemTime::now();
    params.not_before = now.into();
    params.not_after = (now + valid_for).into();
}

/// A generated certificate and its private key, both PEM.
pub struct GeneratedCert {
    /// The certificate.
    pub cert_pem: String,
    /// The private key.
    pub key_pem: String,
}

/// A generated CA: its certificate and key, and the issuer that signs leaf certificates.
pub struct GeneratedCa {
    /// The CA certificate.
    pub cert_pem: String,
    /// The CA private key.
    pub key_pem: String,
    /// Signs certificates with the CA.
    pub issuer: Issuer<'static, KeyPair>,
}

/// A new self-signed CA with common name `cn`, valid for [`CA_VALIDITY`].
pub fn new_ca(cn: &str) -> Result<GeneratedCa, rcgen::Error> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name.push(DnType::CommonName, cn);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    validity(&mut params, CA_VALIDITY);
    let cert = params.self_signed(&key)?;
    let key_pem = key.serialize_pem();
    Ok(GeneratedCa {
        cert_pem: cert.pem(),
        key_pem,
        issuer: Issuer::new(params, key),
    })
}

/// A client certificate (common name `cn`, organization `org`: the user's group) signed by
/// `issuer`, valid for [`LEAF_VALIDITY`].
pub fn new_client_cert(
    issuer: &Issuer<'_, KeyPair>,
    cn: &str,
    org: Option<&str>,
) -> Result<GeneratedCert, rcgen::Error> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name.push(DnType::CommonName, cn);
    if let Some(org) = org {
        params
            .distinguished_name
            .push(DnType::OrganizationName, org);
    }
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    validity(&mut params, LEAF_VALIDITY);
    let cert = params.signed_by(&key, issuer)?;
    Ok(GeneratedCert {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// Creates what is missing of the PKI in `dir`; files that exist are used as they are, never
/// overwritten (a serving pair put there by hand stays). A missing CA is generated; missing
/// serving or admin pairs are signed by the CA in `dir`. The serving certificate covers
/// `localhost`, `127.0.0.1`, `::1`, the host name and `hosts` (DNS names or IPs). Private keys
/// are written with mode 0600, every file atomically.
pub fn ensure_pki(dir: &Path, hosts: &[String]) -> Result<PkiPaths, PkiError> {
    let paths = PkiPaths::in_dir(dir);
    if paths.all().iter().all(|p| p.is_file()) {
        return Ok(paths);
    }
    let ca_present = pair_present(&paths.ca_cert, &paths.ca_key)?;
    let serving_present = pair_present(&paths.serving_cert, &paths.serving_key)?;
    let admin_present = pair_present(&paths.admin_cert, &paths.admin_key)?;
    crate::util::files::create_private_dir(dir).map_err(|source| PkiError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let write = |path: &PathBuf, data: &str, private: bool| -> Result<(), PkiError> {
        let result = if private {
            write_private(path, data.as_bytes())
        } else {
            write_public(path, data.as_bytes())
        };
        result.map_err(|source| PkiError::Io {
            path: path.clone(),
            source,
        })
    };
    let read = |path: &PathBuf| -> Result<String, PkiError> {
        std::fs::read_to_string(path).map_err(|source| PkiError::Io {
            path: path.clone(),
            source,
        })
    };

    // Keys before certificates: a crash in between leaves a key without its certificate,
    // which the next start reports instead of silently pairing it with something else.
    let issuer = if ca_present {
        let key = KeyPair::from_pem(&read(&paths.ca_key)?)?;
        Issuer::from_ca_cert_pem(&read(&paths.ca_cert)?, key)?
    } else {
        let ca = new_ca(&format!("apiserver-ca@{unix}"))?;
        write(&paths.ca_key, &ca.key_pem, true)?;
        write(&paths.ca_cert, &ca.cert_pem, false)?;
        ca.issuer
    };
    if !serving_present {
        let mut names = vec![
            "localhost".to_string(),
            "127.0.0.1".to_string(),
            "::1".to_string(),
        ];
        for host in host_name().iter().chain(hosts) {
            if !names.contains(host) {
                names.push(host.clone());
            }
        }
        let serving_key = KeyPair::generate()?;
        let mut serving = CertificateParams::new(names)?;
        serving
            .distinguished_name
            .push(DnType::CommonName, format!("apiserver@{unix}"));
        serving.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        validity(&mut serving, LEAF_VALIDITY);
        let serving_cert = serving.signed_by(&serving_key, &issuer)?;
        write(&paths.serving_key, &serving_key.serialize_pem(), true)?;
        write(&paths.serving_cert, &serving_cert.pem(), false)?;
    }
    if !admin_present {
        let admin = new_client_cert(&issuer, "admin", Some("system:masters"))?;
        write(&paths.admin_key, &admin.key_pem, true)?;
        write(&paths.admin_cert, &admin.cert_pem, false)?;
    }
    Ok(paths)
}

/// Whether a certificate and its key are both there; one without the other is an error
/// (generating the missing half would not match, and replacing the other would overwrite it).
fn pair_present(cert: &Path, key: &Path) -> Result<bool, PkiError> {
    match (cert.is_file(), key.is_file()) {
        (true, true) => Ok(true),
        (false, false) => Ok(false),
        (true, false) => Err(PkiError::Incomplete {
            present: cert.to_path_buf(),
            missing: key.to_path_buf(),
        }),
        (false, true) => Err(PkiError::Incomplete {
            present: key.to_path_buf(),
            missing: cert.to_path_buf(),
        }),
    }
}

/// The SNI name of the loopback client's certificate (upstream `LoopbackClientServerNameOverride`).
pub const LOOPBACK_SERVER_NAME: &str = "apiserver-loopback-client";

/// An in-memory certificate for the loopback client (upstream `serving_with_loopback.go`).
#[derive(Clone, Debug)]
pub struct LoopbackCert {
    /// Leaf then CA, PEM: serve this (as a [`super::StaticSniCert`] named
    /// [`LOOPBACK_SERVER_NAME`]).
    pub cert_pem: String,
    /// The leaf's private key, PEM.
    pub key_pem: String,
    /// The CA the loopback client trusts, PEM.
    pub ca_pem: String,
}

impl LoopbackCert {
    /// The certificate as an SNI entry selected by [`LOOPBACK_SERVER_NAME`].
    pub fn sni_cert(&self) -> super::StaticSniCert {
        super::StaticSniCert {
            cert_pem: self.cert_pem.clone().into_bytes(),
            key_pem: self.key_pem.clone().into_bytes(),
            names: vec![LOOPBACK_SERVER_NAME.to_string()],
        }
    }
}

/// Generates the loopback certificate (valid one year, like upstream's), signed by a fresh CA
/// (`<name>-ca@<unix time>`), for [`LOOPBACK_SERVER_NAME`].
pub fn loopback_cert() -> Result<LoopbackCert, PkiError> {
    let unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.distinguished_name.push(
        DnType::CommonName,
        format!("{LOOPBACK_SERVER_NAME}-ca@{unix}"),
    );
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    validity(&mut ca_params, LEAF_VALIDITY);
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(vec![LOOPBACK_SERVER_NAME.to_string()])?;
    params
        .distinguished_name
        .push(DnType::CommonName, format!("{LOOPBACK_SERVER_NAME}@{unix}"));
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    validity(&mut params, LEAF_VALIDITY);
    let cert = params.signed_by(&key, &issuer)?;
    Ok(LoopbackCert {
        cert_pem: format!("{}{}", cert.pem(), ca_cert.pem()),
        key_pem: key.serialize_pem(),
        ca_pem: ca_cert.pem(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject;

    fn der(path: &Path) -> CertificateDer<'static> {
        CertificateDer::from_pem_file(path).unwrap()
    }

    #[test]
    fn generates_and_reuses_pki() {
        let dir = tempfile::tempdir().unwrap();
        let pki_dir = dir.path().join("pki");
        let paths = ensure_pki(
            &pki_dir,
            &["api.example.com".to_string(), "10.1.2.3".to_string()],
        )
        .unwrap();
        let ca = der(&paths.ca_cert);
        let (_, ca_x509) = x509_parser::parse_x509_certificate(&ca).unwrap();
        let cn = ca_x509.subject().iter_common_name().next().unwrap();
        assert!(cn.as_str().unwrap().starts_with("apiserver-ca@"));
        let ca_days = (ca_x509.validity().not_after.timestamp()
            - ca_x509.validity().not_before.timestamp())
            / 86400;
        assert!((3649..=3651).contains(&ca_days), "{ca_days}");

        // The serving certificate verifies for every name against the CA.
        let anchor = webpki::anchor_from_trusted_cert(&ca).unwrap().to_owned();
        let serving = der(&paths.serving_cert);
        let ee = webpki::EndEntityCert::try_from(&serving).unwrap();
        let now = rustls_pki_types::UnixTime::now();
        ee.verify_for_usage(
            webpki::ALL_VERIFICATION_ALGS,
            std::slice::from_ref(&anchor),
            &[],
            now,
            webpki::KeyUsage::server_auth(),
            None,
            None,
        )
        .unwrap();
        for name in [
            "localhost",
            "127.0.0.1",
            "::1",
            "api.example.com",
            "10.1.2.3",
        ] {
            let server_name = rustls_pki_types::ServerName::try_from(name).unwrap();
            ee.verify_is_valid_for_subject_name(&server_name).unwrap();
        }

        // The admin certificate is a client certificate for admin / system:masters.
        let admin = der(&paths.admin_cert);
        let ee = webpki::EndEntityCert::try_from(&admin).unwrap();
        ee.verify_for_usage(
            webpki::ALL_VERIFICATION_ALGS,
            &[anchor],
            &[],
            now,
            webpki::KeyUsage::client_auth(),
            None,
            None,
        )
        .unwrap();
        let (_, admin_x509) = x509_parser::parse_x509_certificate(&admin).unwrap();
        let subject = admin_x509.subject();
        assert_eq!(
            subject.iter_common_name().next().unwrap().as_str().unwrap(),
            "admin"
        );
        assert_eq!(
            subject
                .iter_organization()
                .next()
                .unwrap()
                .as_str()
                .unwrap(),
            "system:masters"
        );

        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            for key in [&paths.ca_key, &paths.serving_key, &paths.admin_key] {
                let mode = std::fs::metadata(key).unwrap().permissions().mode();
                assert_eq!(mode & 0o777, 0o600);
            }
        }

        // A second call reuses the files.
        let before = std::fs::read(&paths.ca_cert).unwrap();
        let again = ensure_pki(&pki_dir, &[]).unwrap();
        assert_eq!(again, paths);
        assert_eq!(std::fs::read(&paths.ca_cert).unwrap(), before);
    }

    #[test]
    fn existing_serving_pair_is_kept_and_only_missing_files_are_generated() {
        let dir = tempfile::tempdir().unwrap();
        let paths = PkiPaths::in_dir(dir.path());
        // A serving pair of the user's own, signed by another CA.
        let theirs = new_ca("their-ca").unwrap();
        let mine = new_client_cert(&theirs.issuer, "their-server", None).unwrap();
        std::fs::write(&paths.serving_cert, &mine.cert_pem).unwrap();
        std::fs::write(&paths.serving_key, &mine.key_pem).unwrap();
        ensure_pki(dir.path(), &[]).unwrap();
        assert_eq!(
            std::fs::read_to_string(&paths.serving_cert).unwrap(),
            mine.cert_pem
        );
        assert_eq!(
            std::fs::read_to_string(&paths.serving_key).unwrap(),
            mine.key_pem
        );
        for p in paths.all() {
            assert!(p.is_file(), "{}", p.display());
        }

        // A lost admin pair is signed again by the CA that is there.
        let ca_before = std::fs::read(&paths.ca_cert).unwrap();
        std::fs::remove_file(&paths.admin_cert).unwrap();
        std::fs::remove_file(&paths.admin_key).unwrap();
        ensure_pki(dir.path(), &[]).unwrap();
        assert_eq!(std::fs::read(&paths.ca_cert).unwrap(), ca_before);
        let anchor = webpki::anchor_from_trusted_cert(&der(&paths.ca_cert))
            .unwrap()
            .to_owned();
        let admin = der(&paths.admin_cert);
        webpki::EndEntityCert::try_from(&admin)
            .unwrap()
            .verify_for_usage(
                webpki::ALL_VERIFICATION_ALGS,
                &[anchor],
                &[],
                rustls_pki_types::UnixTime::now(),
                webpki::KeyUsage::client_auth(),
                None,
                None,
            )
            .unwrap();

        // Half a pair is an error, and nothing is overwritten.
        std::fs::remove_file(&paths.admin_key).unwrap();
        let admin_before = std::fs::read(&paths.admin_cert).unwrap();
        let err = ensure_pki(dir.path(), &[]).unwrap_err();
        assert!(err.to_string().contains("admin.key does not"), "{err}");
        assert_eq!(std::fs::read(&paths.admin_cert).unwrap(), admin_before);
    }
}
