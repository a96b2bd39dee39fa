//! Authentication: authenticators (x509, token file, anonymous …) and their union
//! (`k8s.io/apiserver/pkg/authentication`).
//!
//! An [`Authenticator`] looks at a request and answers one of three ways, as upstream's
//! `AuthenticateRequest` does with `(response, ok, err)`:
//! * `Ok(Some(response))`: the request carries valid credentials for `response.user`;
//! * `Ok(None)`: no opinion (no credentials of this kind);
//! * `Err(err)`: credentials of this kind were presented but are invalid.

use std::sync::Arc;

use rustls_pki_types::CertificateDer;

use crate::request::UserInfo;

pub mod anonymous;
pub mod bearertoken;
pub mod delegating;
pub mod group;
pub mod loopback;
pub mod requestheader;
pub mod tokencache;
pub mod tokenfile;
pub mod union;
pub mod websocket;
pub mod x509;

pub use delegating::{AuthenticatorOptions, build_authenticator};
pub use loopback::{InsecureSuperuser, with_loopback_token};

/// The extra key under which authenticators record an identifier of the credential used.
pub const CREDENTIAL_ID_KEY: &str = "authentication.kubernetes.io/credential-id";

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

/// A successful authentication (`authenticator.Response`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuthResponse {
    /// The authenticated user.
    pub user: UserInfo,
    /// The audiences the credential is valid for; empty means "any" (audience agnostic).
    pub audiences: Vec<String>,
}

impl AuthResponse {
    /// A response for `user`, valid for any audience.
    pub fn new(user: UserInfo) -> Self {
        AuthResponse {
            user,
            audiences: Vec::new(),
        }
    }
}

/// Why presented credentials were rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// A bearer token no token authenticator accepted.
    #[error("invalid bearer token")]
    InvalidBearerToken,
    /// A client certificate that did not verify against the client CA.
    #[error("verifying certificate {identifier} failed: {reason}")]
    CertificateVerification {
        /// `SN=<serial>, SKID=<hex>, AKID=<hex>`.
        identifier: String,
        /// The verifier's reason, e.g. `x509: certificate signed by unknown authority`.
        reason: String,
    },
    /// A front-proxy client certificate whose CN is not in the allowed list.
    #[error("x509: subject with cn={0} is not in the allowed list")]
    CommonNameNotAllowed(String),
    /// Any other reason (bad certificate contents, a token authenticator's own error …).
    #[error("{0}")]
    Other(String),
    /// Several authenticators failed (upstream's `utilerrors.Aggregate`).
    #[error("{}", format_aggregate(.0))]
    Aggregate(Vec<AuthError>),
}

impl AuthError {
    /// Aggregates `errors` the way upstream's `NewAggregate` does: none → `None`, one → that
    /// error, several → an aggregate.
    pub fn aggregate(mut errors: Vec<AuthError>) -> Option<AuthError> {
        match errors.len() {
            0 => None,
            1 => errors.pop(),
            _ => Some(AuthError::Aggregate(errors)),
        }
    }
}

/// Formats errors as Go's `utilerrors.Aggregate` does: one message bare, several as
/// `[a, b]` (duplicate messages shown once).
pub(crate) fn format_aggregate<E: std::fmt::Display>(errors: &[E]) -> String {
    let mut seen: Vec<String> = Vec::new();
    for e in errors {
        let text = e.to_string();
        if !seen.contains(&text) {
            seen.push(text);
        }
    }
    if seen.len() == 1 {
        seen.remove(0)
    } else {
        format!("[{}]", seen.join(", "))
    }
}

/// Authenticates requests (`authenticator.Request`).
#[async_trait::async_trait]
pub trait Authenticator: Send + Sync {
    /// Authenticates the request described by `req`; see the module docs for the meaning of
    /// the result. Authenticators may add warnings through the request's extensions.
    async fn authenticate(
        &self,
        req: &http::request::Parts,
    ) -> Result<Option<AuthResponse>, AuthError>;
}

/// The API audiences the server accepts, inserted into the request extensions by the
/// authentication filter when configured (upstream's `authenticator.WithAudiences`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApiAudiences(pub Vec<String>);

/// Decodes `%XX` escapes in an extra key like Go's `url.PathUnescape`, returning the input
/// unchanged when it is malformed (upstream records malformed keys verbatim).
pub(crate) fn unescape_extra_key(encoded: &str) -> String {
    let bytes = encoded.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).and_then(|h| {
                std::str::from_utf8(h)
                    .ok()
                    .and_then(|s| u8::from_str_radix(s, 16).ok())
                    .filter(|_| h.iter().all(u8::is_ascii_hexdigit))
            });
            match hex {
                Some(b) => {
                    out.push(b);
                    i += 3;
                }
                None => return encoded.to_string(),
            }
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| encoded.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unescape_extra_keys() {
        assert_eq!(unescape_extra_key("example.com%2fkey"), "example.com/key");
        assert_eq!(unescape_extra_key("plain"), "plain");
        assert_eq!(unescape_extra_key("bad%zzkey"), "bad%zzkey");
        assert_eq!(unescape_extra_key("trailing%2"), "trailing%2");
        assert_eq!(unescape_extra_key("a+b"), "a+b");
    }

    #[test]
    fn aggregate_formatting() {
        assert_eq!(AuthError::aggregate(vec![]), None);
        let one = AuthError::aggregate(vec![AuthError::InvalidBearerToken]).unwrap();
        assert_eq!(one.to_string(), "invalid bearer token");
        let two = AuthError::aggregate(vec![
            AuthError::Other("first".into()),
            AuthError::Other("second".into()),
        ])
        .unwrap();
        assert_eq!(two.to_string(), "[first, second]");
    }
}
