//! The TLS client configuration of a webhook or an issuer: the kubeconfig's CA (or no
//! verification with `insecure-skip-tls-verify`) and its client certificate.

use std::sync::Arc;

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
        builder.with_root_certificates(roots_from_pem(&config.ca_pem)?)
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
}
