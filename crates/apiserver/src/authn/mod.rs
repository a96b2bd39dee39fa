//! Authentication: authenticators (x509, token file, anonymous …) and their union.

use std::sync::Arc;

use rustls_pki_types::CertificateDer;

/// Where the x509 authenticator finds the client CA bundle it verifies client certificates
/// against. The serving layer implements it with a file that is reloaded when it changes, so
/// the authenticator always sees the current bundle.
pub trait ClientCaSource: Send + Sync + std::fmt::Debug {
    /// The current CA certificates, or `None` while none are loaded (the authenticator then
    /// has no opinion, as upstream's does before its first successful load).
    fn ca_certificates(&self) -> Option<Arc<Vec<CertificateDer<'static>>>>;
}

/// A fixed CA bundle.
#[derive(Debug, Clone)]
pub struct StaticClientCa(pub Arc<Vec<CertificateDer<'static>>>);

impl ClientCaSource for StaticClientCa {
    fn ca_certificates(&self) -> Option<Arc<Vec<CertificateDer<'static>>>> {
        Some(self.0.clone())
    }
}
