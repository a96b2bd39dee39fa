//! SNI certificate selection (upstream `named_certificates.go` and the `GetConfigForClient` of
//! `tlsconfig.go`, on top of Go's `NameToCertificate` lookup).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// One SNI certificate with the names it may be selected by.
#[derive(Clone, Debug)]
pub(crate) struct SniEntry {
    pub(crate) key: Arc<CertifiedKey>,
    /// From `--tls-sni-cert-key cert,key:names`.
    pub(crate) explicit_names: Vec<String>,
    /// From the certificate: CN (when a DNS name) and DNS SANs.
    pub(crate) derived_names: Vec<String>,
}

/// The certificates of one configuration generation.
#[derive(Debug, Default)]
pub(crate) struct NamedCerts {
    /// `Certificates[0]` in Go: the serving certificate, else the first SNI certificate.
    default: Option<Arc<CertifiedKey>>,
    by_name: HashMap<String, Arc<CertifiedKey>>,
}

impl NamedCerts {
    /// Builds the name map: explicit names of any certificate beat derived names; among names
    /// of the same kind, earlier certificates win. A certificate with explicit names gets no
    /// derived names.
    pub(crate) fn new(default: Option<Arc<CertifiedKey>>, sni: &[SniEntry]) -> Self {
        let mut by_name = HashMap::new();
        for entry in sni.iter().filter(|e| e.explicit_names.is_empty()) {
            for name in &entry.derived_names {
                by_name
                    .entry(name.clone())
                    .or_insert_with(|| entry.key.clone());
            }
        }
        let mut explicit: HashMap<String, Arc<CertifiedKey>> = HashMap::new();
        for entry in sni {
            for name in &entry.explicit_names {
                explicit
                    .entry(name.clone())
                    .or_insert_with(|| entry.key.clone());
            }
        }
        by_name.extend(explicit);
        let default = default.or_else(|| sni.first().map(|e| e.key.clone()));
        NamedCerts { default, by_name }
    }

    /// Go's selection: exact lower-cased server name, then the `*.` wildcard of its first label,
    /// then the default. Without a server name, a certificate explicitly named by the
    /// connection's local IP wins.
    pub(crate) fn select(
        &self,
        server_name: Option<&str>,
        local_ip: Option<IpAddr>,
    ) -> Option<Arc<CertifiedKey>> {
        match server_name.filter(|n| !n.is_empty()) {
            Some(name) => {
                let name = name.to_ascii_lowercase();
                if let Some(key) = self.by_name.get(&name) {
                    return Some(key.clone());
                }
                let wildcard = match name.split_once('.') {
                    Some((_, rest)) => format!("*.{rest}"),
                    None => "*".to_string(),
                };
                if let Some(key) = self.by_name.get(&wildcard) {
                    return Some(key.clone());
                }
            }
            None => {
                if let Some(ip) = local_ip
                    && let Some(key) = self.by_name.get(&ip.to_canonical().to_string())
                {
                    return Some(key.clone());
                }
            }
        }
        self.default.clone()
    }
}

/// The names upstream derives from a certificate: its CN when that is a DNS-1123 subdomain
/// (or `*` / `*.<subdomain>`) and not an IP, plus the DNS SANs. IP SANs are ignored: SNI never
/// carries IPs.
pub(crate) fn derived_names(leaf_der: &[u8]) -> Result<Vec<String>, String> {
    let (_, cert) = x509_parser::parse_x509_certificate(leaf_der)
        .map_err(|e| format!("failed to parse certificate: {e}"))?;
    let mut names = Vec::new();
    if let Some(cn) = cert
        .subject()
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
    {
        let is_ip = cn.parse::<IpAddr>().is_ok();
        let valid = cn == "*" || is_dns1123_subdomain(cn.strip_prefix("*.").unwrap_or(cn));
        if !is_ip && valid {
            names.push(cn.to_string());
        }
    }
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for name in &san.value.general_names {
            if let x509_parser::extensions::GeneralName::DNSName(dns) = name {
                names.push((*dns).to_string());
            }
        }
    }
    Ok(names)
}

/// `k8s.io/apimachinery/pkg/util/validation.IsDNS1123Subdomain`.
fn is_dns1123_subdomain(value: &str) -> bool {
    if value.is_empty() || value.len() > 253 {
        return false;
    }
    value.split('.').all(|label| {
        let bytes = label.as_bytes();
        !bytes.is_empty()
            && bytes
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
            && bytes[0] != b'-'
            && bytes[bytes.len() - 1] != b'-'
    })
}

/// A resolver for one connection: knows the local IP used when the client sends no SNI.
#[derive(Debug)]
pub(crate) struct SniResolver {
    pub(crate) certs: Arc<NamedCerts>,
    pub(crate) local_ip: Option<IpAddr>,
}

impl ResolvesServerCert for SniResolver {
    fn resolve(&self, client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.certs.select(client_hello.server_name(), self.local_ip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(id: u8) -> Arc<CertifiedKey> {
        // A CertifiedKey whose "certificate" is a marker byte: selection never parses it.
        let signing =
            rustls::crypto::ring::sign::any_ecdsa_type(&signing_key_der()).expect("test key");
        Arc::new(CertifiedKey::new(
            vec![rustls_pki_types::CertificateDer::from(vec![id])],
            signing,
        ))
    }

    fn signing_key_der() -> rustls_pki_types::PrivateKeyDer<'static> {
        let kp = rcgen::KeyPair::generate().unwrap();
        rustls_pki_types::PrivateKeyDer::Pkcs8(kp.serialize_der().into())
    }

    fn id(k: &Option<Arc<CertifiedKey>>) -> u8 {
        k.as_ref().unwrap().cert[0].as_ref()[0]
    }

    fn entry(id: u8, explicit: &[&str], derived: &[&str]) -> SniEntry {
        SniEntry {
            key: key(id),
            explicit_names: explicit.iter().map(|s| s.to_string()).collect(),
            derived_names: derived.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn selection_table() {
        let certs = NamedCerts::new(
            Some(key(0)),
            &[
                entry(1, &[], &["test.com", "*.wild.com"]),
                entry(2, &["test.com"], &["other.com"]),
                entry(3, &[], &["test.com", "third.com"]),
                entry(4, &["127.0.0.1"], &[]),
                entry(5, &[], &["third.com"]),
            ],
        );
        // explicit name beats an earlier derived one
        assert_eq!(id(&certs.select(Some("test.com"), None)), 2);
        assert_eq!(id(&certs.select(Some("TEST.com"), None)), 2);
        // a certificate with explicit names gets no derived names
        assert_eq!(id(&certs.select(Some("other.com"), None)), 0);
        // earlier certificate wins among derived names
        assert_eq!(id(&certs.select(Some("third.com"), None)), 3);
        // wildcard of the first label
        assert_eq!(id(&certs.select(Some("a.wild.com"), None)), 1);
        assert_eq!(id(&certs.select(Some("a.b.wild.com"), None)), 0);
        // default fallback
        assert_eq!(id(&certs.select(Some("nope.com"), None)), 0);
        assert_eq!(id(&certs.select(None, None)), 0);
        // no SNI: the local IP selects an explicitly IP-named certificate
        assert_eq!(
            id(&certs.select(None, Some("127.0.0.1".parse().unwrap()))),
            4
        );
        assert_eq!(
            id(&certs.select(None, Some("10.0.0.1".parse().unwrap()))),
            0
        );
        // without a default, the first SNI certificate is the fallback
        let certs = NamedCerts::new(None, &[entry(7, &[], &["a.com"]), entry(8, &[], &[])]);
        assert_eq!(id(&certs.select(Some("zzz"), None)), 7);
    }

    #[test]
    fn derives_names_from_cn_and_dns_sans() {
        let mut params =
            rcgen::CertificateParams::new(vec!["san.example.com".to_string(), "10.0.0.1".into()])
                .unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "cn.example.com");
        let kp = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&kp).unwrap();
        assert_eq!(
            derived_names(cert.der()).unwrap(),
            vec!["cn.example.com", "san.example.com"]
        );

        for (cn, used) in [
            ("127.0.0.1", false),
            ("*", true),
            ("*.foo.com", true),
            ("Not_A_Name", false),
        ] {
            let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
            params
                .distinguished_name
                .push(rcgen::DnType::CommonName, cn);
            let cert = params.self_signed(&kp).unwrap();
            let names = derived_names(cert.der()).unwrap();
            assert_eq!(names.contains(&cn.to_string()), used, "{cn}");
        }
    }
}
