//! The TLS client configuration of a webhook or an issuer: the kubeconfig's CA (or no
//! verification with `insecure-skip-tls-verify`) and its client certificate.

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use super::kubeconfig::WebhookKubeconfig;

/// Accepts any server certificate, still checking handshake signatures
/// (`insecure-skip-tls-verify: true` of a kubeconfig, an APIService's
/// `insecureSkipTLSVerify`).
#[derive(Debug)]
pub struct SkipServerVerification(pub Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for SkipServerVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Verifies against a CA bundle as Go's `x509.Verify` does: a chain to one of the bundle's
/// certificates, or a server certificate that is itself one of the bundle's certificates (a
/// self-signed certificate given as its own CA, which webpki refuses when it is marked as a CA
/// and Go accepts), still checked for its validity period, host name and key usage.
#[derive(Debug)]
struct BundleVerifier {
    chain: Arc<WebPkiServerVerifier>,
    bundle: Vec<CertificateDer<'static>>,
}

impl BundleVerifier {
    /// Accepts `leaf` when it is one of the bundle's certificates and valid for `server_name`
    /// at `now`.
    fn verify_bundled_leaf(
        &self,
        leaf: &CertificateDer<'_>,
        server_name: &ServerName<'_>,
        now: UnixTime,
    ) -> Result<(), String> {
        if !self.bundle.iter().any(|c| c.as_ref() == leaf.as_ref()) {
            return Err("not in the CA bundle".into());
        }
        let (_, cert) = x509_parser::parse_x509_certificate(leaf.as_ref())
            .map_err(|e| format!("unparsable certificate: {e}"))?;
        let at = x509_parser::time::ASN1Time::from_timestamp(now.as_secs() as i64)
            .map_err(|e| e.to_string())?;
        if !cert.validity().is_valid_at(at) {
            return Err("certificate has expired or is not yet valid".into());
        }
        if let Ok(Some(eku)) = cert.extended_key_usage()
            && !eku.value.any
            && !eku.value.server_auth
        {
            return Err("certificate specifies an incompatible key usage".into());
        }
        let end_entity = webpki::EndEntityCert::try_from(leaf).map_err(|e| e.to_string())?;
        end_entity
            .verify_is_valid_for_subject_name(server_name)
            .map_err(|e| e.to_string())
    }
}

impl ServerCertVerifier for BundleVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.chain.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Ok(verified) => Ok(verified),
            Err(err) => match self.verify_bundled_leaf(end_entity, server_name, now) {
                Ok(()) => Ok(ServerCertVerified::assertion()),
                Err(_) => Err(err),
            },
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.chain.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.chain.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.chain.supported_verify_schemes()
    }
}

/// The verifier of server certificates issued by (or identical to) a certificate of `pem`.
fn bundle_verifier(
    pem: &[u8],
    provider: Arc<rustls::crypto::CryptoProvider>,
) -> Result<Arc<BundleVerifier>, String> {
    let roots = roots_from_pem(pem)?;
    let bundle = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("unable to load root certificates: {e}"))?;
    let chain = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .map_err(|e| format!("unable to load root certificates: {e}"))?;
    Ok(Arc::new(BundleVerifier { chain, bundle }))
}

/// A root store of the PEM certificates in `pem`.
pub fn roots_from_pem(pem: &[u8]) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem) {
        let cert = cert.map_err(|e| format!("unable to load root certificates: {e}"))?;
        roots
            .add(cert)
            .map_err(|e| format!("unable to load root certificates: {e}"))?;
    }
    if !pem.is_empty() && roots.is_empty() {
        return Err("unable to load root certificates: no certificates found".into());
    }
    Ok(roots)
}

/// The host's trusted CAs (what Go uses when no CA is configured); certificates that do not
/// load are skipped.
fn system_roots() -> RootCertStore {
    let mut roots = RootCertStore::empty();
    let found = rustls_native_certs::load_native_certs();
    for cert in found.certs {
        let _ = roots.add(cert);
    }
    roots
}

/// The TLS client configuration for `config` (HTTP/1.1 by ALPN).
pub fn client_tls(config: &WebhookKubeconfig) -> Result<Arc<ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = if config.insecure_skip_tls_verify {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(SkipServerVerification(provider)))
    } else if config.ca_pem.is_empty() {
        builder.with_root_certificates(system_roots())
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(bundle_verifier(&config.ca_pem, provider)?)
    };
    let mut tls = match &config.client_cert {
        Some((cert, key)) => {
            let certs = CertificateDer::pem_slice_iter(cert)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("unable to load client certificate: {e}"))?;
            let key = PrivateKeyDer::from_pem_slice(key)
                .map_err(|e| format!("unable to load client key: {e}"))?;
            builder
                .with_client_auth_cert(certs, key)
                .map_err(|e| format!("unable to load client certificate: {e}"))?
        }
        None => builder.with_no_client_auth(),
    };
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(tls))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_ca_and_key_are_errors() {
        let bad_ca = WebhookKubeconfig {
            ca_pem: b"-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n"
                .to_vec(),
            ..Default::default()
        };
        assert!(client_tls(&bad_ca).is_err());
        let bad_key = WebhookKubeconfig {
            insecure_skip_tls_verify: true,
            client_cert: Some((b"".to_vec(), b"nope".to_vec())),
            ..Default::default()
        };
        assert!(client_tls(&bad_key).is_err());
        assert!(client_tls(&WebhookKubeconfig::default()).is_ok());
    }

    fn self_signed_ca(name: &str) -> String {
        let mut params = rcgen::CertificateParams::new(vec![name.to_string()]).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().pem()
    }

    #[test]
    fn a_self_signed_ca_certificate_in_the_bundle_is_accepted_as_the_server_certificate() {
        let pem = self_signed_ca("webhook.example");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = bundle_verifier(pem.as_bytes(), provider).unwrap();
        let leaf = CertificateDer::from_pem_slice(pem.as_bytes()).unwrap();
        let now = UnixTime::now();
        let name = ServerName::try_from("webhook.example").unwrap();
        assert!(
            verifier
                .verify_server_cert(&leaf, &[], &name, &[], now)
                .is_ok()
        );
        // Still checked for the host name.
        let other = ServerName::try_from("other.example").unwrap();
        assert!(
            verifier
                .verify_server_cert(&leaf, &[], &other, &[], now)
                .is_err()
        );
        // A CA certificate that is not in the bundle is refused.
        let stranger = self_signed_ca("webhook.example");
        let stranger = CertificateDer::from_pem_slice(stranger.as_bytes()).unwrap();
        assert!(
            verifier
                .verify_server_cert(&stranger, &[], &name, &[], now)
                .is_err()
        );
    }
}
