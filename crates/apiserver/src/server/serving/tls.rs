//! The parts of the TLS configuration that do not change while serving: the crypto provider with
//! the configured cipher suites, the protocol versions, ALPN, and resumption state; plus the
//! `RequestClientCert` client-certificate verifier.

use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms, ring};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{ProducesTickets, ServerSessionMemoryCache, StoresServerSessions};
use rustls::{
    DigitallySignedStruct, DistinguishedName, ServerConfig, SignatureScheme, SupportedCipherSuite,
    SupportedProtocolVersion,
};
use rustls_pki_types::{CertificateDer, UnixTime};

use super::ServeError;

/// The minimum TLS version (`--tls-min-version`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TlsVersion {
    /// TLS 1.2 (the default).
    #[default]
    Tls12,
    /// TLS 1.3.
    Tls13,
}

impl TlsVersion {
    /// Parses the Go constant names kube accepts (`VersionTLS12`, `VersionTLS13`). TLS 1.0 and
    /// 1.1 are refused: this server cannot speak them.
    pub fn parse(name: &str) -> Result<Self, ServeError> {
        match name {
            "VersionTLS12" => Ok(TlsVersion::Tls12),
            "VersionTLS13" => Ok(TlsVersion::Tls13),
            other => Err(ServeError::UnsupportedTlsVersion(other.to_string())),
        }
    }

    fn versions(self) -> &'static [&'static SupportedProtocolVersion] {
        static BOTH: &[&SupportedProtocolVersion] =
            &[&rustls::version::TLS13, &rustls::version::TLS12];
        static ONLY13: &[&SupportedProtocolVersion] = &[&rustls::version::TLS13];
        match self {
            TlsVersion::Tls12 => BOTH,
            TlsVersion::Tls13 => ONLY13,
        }
    }
}

/// Go cipher suite names that rustls cannot offer (no CBC, RC4, 3DES or RSA key exchange).
const GO_ONLY_SUITES: &[&str] = &[
    "TLS_RSA_WITH_RC4_128_SHA",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
];

/// Maps a Go/IANA suite name to the rustls suite, `Ok(None)` for TLS 1.3 names (Go ignores
/// them: TLS 1.3 suites are not configurable).
fn suite_by_name(name: &str) -> Result<Option<SupportedCipherSuite>, ServeError> {
    use ring::cipher_suite as cs;
    let suite = match name {
        "TLS_AES_128_GCM_SHA256" | "TLS_AES_256_GCM_SHA384" | "TLS_CHACHA20_POLY1305_SHA256" => {
            return Ok(None);
        }
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256" => cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384" => cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"
        | "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305" => {
            cs::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256
        }
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256" => cs::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384" => cs::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256" | "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305" => {
            cs::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256
        }
        other if GO_ONLY_SUITES.contains(&other) => {
            return Err(ServeError::UnsupportedCipherSuite(other.to_string()));
        }
        other => return Err(ServeError::UnknownCipherSuite(other.to_string())),
    };
    Ok(Some(suite))
}

/// The ring provider restricted to the configured TLS 1.2 suites (TLS 1.3 suites stay on, as
/// in Go where `CipherSuites` only affects TLS 1.2 and below).
pub(crate) fn provider(cipher_suites: &[String]) -> Result<Arc<CryptoProvider>, ServeError> {
    let default = ring::default_provider();
    if cipher_suites.is_empty() {
        return Ok(Arc::new(default));
    }
    let mut suites: Vec<SupportedCipherSuite> = default
        .cipher_suites
        .iter()
        .copied()
        .filter(|s| matches!(s, SupportedCipherSuite::Tls13(_)))
        .collect();
    for name in cipher_suites {
        if let Some(suite) = suite_by_name(name.trim())?
            && !suites.contains(&suite)
        {
            suites.push(suite);
        }
    }
    Ok(Arc::new(CryptoProvider {
        cipher_suites: suites,
        ..default
    }))
}

/// What every rebuilt [`ServerConfig`] shares: provider, versions, ALPN, resumption state
/// (kept across rebuilds so a certificate reload does not reset session resumption).
#[derive(Clone)]
pub(crate) struct TlsBase {
    pub(crate) provider: Arc<CryptoProvider>,
    versions: &'static [&'static SupportedProtocolVersion],
    alpn: Vec<Vec<u8>>,
    session_storage: Arc<dyn StoresServerSessions + Send + Sync>,
    ticketer: Arc<dyn ProducesTickets>,
}

impl std::fmt::Debug for TlsBase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsBase")
            .field("versions", &self.versions)
            .field("alpn", &self.alpn)
            .finish_non_exhaustive()
    }
}

impl TlsBase {
    /// The shared settings; validates the cipher-suite and version choice.
    pub(crate) fn new(
        min_version: TlsVersion,
        cipher_suites: &[String],
        disable_http2: bool,
    ) -> Result<Self, ServeError> {
        let provider = provider(cipher_suites)?;
        let alpn = if disable_http2 {
            vec![b"http/1.1".to_vec()]
        } else {
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        };
        let base = TlsBase {
            provider,
            versions: min_version.versions(),
            alpn,
            session_storage: ServerSessionMemoryCache::new(1024),
            ticketer: ring::Ticketer::new()?,
        };
        // Fail early (before binding) on an unusable suite/version combination.
        ServerConfig::builder_with_provider(base.provider.clone())
            .with_protocol_versions(base.versions)?;
        Ok(base)
    }

    /// A server config with `resolver` and, when `client_ca_subjects` is set, a request for a
    /// client certificate advertising those CA subjects.
    pub(crate) fn build(
        &self,
        resolver: Arc<dyn rustls::server::ResolvesServerCert>,
        client_ca_subjects: Option<Vec<DistinguishedName>>,
    ) -> Result<ServerConfig, ServeError> {
        let builder = ServerConfig::builder_with_provider(self.provider.clone())
            .with_protocol_versions(self.versions)?;
        let builder = match client_ca_subjects {
            Some(subjects) => builder.with_client_cert_verifier(Arc::new(RequestClientCert {
                subjects,
                algorithms: self.provider.signature_verification_algorithms,
            })),
            None => builder.with_no_client_auth(),
        };
        let mut config = builder.with_cert_resolver(resolver);
        config.alpn_protocols = self.alpn.clone();
        config.session_storage = self.session_storage.clone();
        config.ticketer = self.ticketer.clone();
        Ok(config)
    }
}

/// Go's `tls.RequestClientCert`: ask for a client certificate, accept any chain (the x509
/// authenticator verifies it per request against the current CA, and answers 401 instead of
/// failing the handshake), but do verify the handshake signature proving key possession.
#[derive(Debug)]
pub(crate) struct RequestClientCert {
    subjects: Vec<DistinguishedName>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl RequestClientCert {
    /// The handshake signature checked against the certificate's public key read by
    /// x509-parser: webpki refuses to parse X.509 v1 certificates, which Go accepts (the
    /// x509 authenticator then decides whether the certificate authenticates). `err` is the
    /// webpki verification's error, returned when the key does not verify either.
    fn verify_with_key_of_any_version(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
        err: rustls::Error,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        use x509_parser::prelude::{FromDer, X509Certificate};
        let Ok((_, parsed)) = X509Certificate::from_der(cert.as_ref()) else {
            return Err(err);
        };
        let spki = rustls_pki_types::SubjectPublicKeyInfoDer::from(parsed.public_key().raw);
        let Ok(key) = webpki::RawPublicKeyEntity::try_from(&spki) else {
            return Err(err);
        };
        let candidates = self
            .algorithms
            .mapping
            .iter()
            .find(|(scheme, _)| *scheme == dss.scheme)
            .map(|(_, algs)| *algs)
            .unwrap_or_default();
        if candidates
            .iter()
            .any(|alg| key.verify_signature(*alg, message, dss.signature()).is_ok())
        {
            Ok(HandshakeSignatureValid::assertion())
        } else {
            Err(err)
        }
    }
}

impl ClientCertVerifier for RequestClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &self.subjects
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
            .or_else(|err| self.verify_with_key_of_any_version(message, cert, dss, err))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
            .or_else(|err| self.verify_with_key_of_any_version(message, cert, dss, err))
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_go_cipher_suite_names() {
        let p = provider(&["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256".to_string()]).unwrap();
        let tls12: Vec<_> = p
            .cipher_suites
            .iter()
            .filter(|s| matches!(s, SupportedCipherSuite::Tls12(_)))
            .collect();
        assert_eq!(tls12.len(), 1);
        assert_eq!(
            tls12[0].suite(),
            rustls::CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
        );
        assert!(p.cipher_suites.len() > 1, "TLS 1.3 suites stay enabled");
        assert!(provider(&["TLS_AES_128_GCM_SHA256".to_string()]).is_ok());
        assert!(matches!(
            provider(&["TLS_RSA_WITH_AES_128_CBC_SHA".to_string()]),
            Err(ServeError::UnsupportedCipherSuite(_))
        ));
        assert!(matches!(
            provider(&["bogus".to_string()]),
            Err(ServeError::UnknownCipherSuite(_))
        ));
    }

    #[test]
    fn parses_tls_versions() {
        assert_eq!(
            TlsVersion::parse("VersionTLS12").unwrap(),
            TlsVersion::Tls12
        );
        assert_eq!(
            TlsVersion::parse("VersionTLS13").unwrap(),
            TlsVersion::Tls13
        );
        assert!(TlsVersion::parse("VersionTLS11").is_err());
    }
}
