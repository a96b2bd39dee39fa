//! Composition of the configured authenticators, in kube-apiserver's order
//! (`pkg/kubeapiserver/authenticator/config.go`, `authenticatorfactory/delegating.go`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::anonymous::AnonymousAuthenticator;
use super::bearertoken::{BearerTokenAuthenticator, TokenAuthenticator, TokenUnion};
use super::group::AuthenticatedGroupAdder;
use super::requestheader::{self, RequestHeaderConfig};
use super::tokencache::CachedTokenAuthenticator;
use super::tokenfile::{TokenFileAuthenticator, TokenFileError};
use super::union::{UnionAuthenticator, union};
use super::websocket::WebSocketProtocolAuthenticator;
use super::x509::X509Authenticator;
use super::{Authenticator, ClientCaSource};

/// What to authenticate with (the `--client-ca-file`, `--token-auth-file`,
/// `--anonymous-auth` and `--requestheader-*` flags).
#[derive(Clone, Default)]
pub struct AuthenticatorOptions {
    /// The client CA for x509 client certificates.
    pub client_ca: Option<Arc<dyn ClientCaSource>>,
    /// A static token CSV file.
    pub token_file: Option<PathBuf>,
    /// Whether anonymous requests are allowed.
    pub anonymous: bool,
    /// When anonymous is enabled, restricts it to these exact paths (empty = any path).
    pub anonymous_paths: Vec<String>,
    /// The front proxy.
    pub request_header: Option<RequestHeaderConfig>,
    /// Further bearer-token authenticators, asked after the token file in this order
    /// (kube-apiserver's: service accounts, bootstrap tokens, JWT, webhook).
    pub token_authenticators: Vec<Arc<dyn TokenAuthenticator>>,
    /// How long successful token authentications are cached (kube-apiserver: 10 s); zero
    /// caches nothing. Failures are never cached, as in kube-apiserver.
    pub token_success_cache_ttl: Duration,
}

impl std::fmt::Debug for AuthenticatorOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthenticatorOptions")
            .field("client_ca", &self.client_ca)
            .field("token_file", &self.token_file)
            .field("anonymous", &self.anonymous)
            .field("anonymous_paths", &self.anonymous_paths)
            .field("request_header", &self.request_header)
            .field("token_authenticators", &self.token_authenticators.len())
            .field("token_success_cache_ttl", &self.token_success_cache_ttl)
            .finish()
    }
}

/// Builds the request authenticator:
/// `union(request-header, x509, bearer token, websocket token)` wrapped by the
/// authenticated-group adder, then anonymous appended with fail-on-error semantics (a rejected
/// token does not fall back to anonymous). `Ok(None)` means no authentication is configured
/// at all (the filter is then a pass-through, as upstream's nil authenticator).
pub fn build_authenticator(
    options: &AuthenticatorOptions,
) -> Result<Option<Arc<dyn Authenticator>>, TokenFileError> {
    let mut authenticators: Vec<Arc<dyn Authenticator>> = Vec::new();
    if let Some(config) = &options.request_header {
        authenticators.push(requestheader::new_secure(config));
    }
    if let Some(ca) = &options.client_ca {
        authenticators.push(Arc::new(X509Authenticator::new(ca.clone())));
    }
    let mut token_authenticators: Vec<Arc<dyn TokenAuthenticator>> = Vec::new();
    if let Some(path) = &options.token_file {
        token_authenticators.push(Arc::new(TokenFileAuthenticator::from_file(path)?));
    }
    token_authenticators.extend(options.token_authenticators.iter().cloned());
    if !token_authenticators.is_empty() {
        let mut tokens: Arc<dyn TokenAuthenticator> = if token_authenticators.len() == 1 {
            token_authenticators.remove(0)
        } else {
            Arc::new(TokenUnion::new(token_authenticators))
        };
        if !options.token_success_cache_ttl.is_zero() {
            tokens = Arc::new(CachedTokenAuthenticator::new(
                tokens,
                options.token_success_cache_ttl,
                Duration::ZERO,
            ));
        }
        authenticators.push(Arc::new(BearerTokenAuthenticator::new(tokens.clone())));
        authenticators.push(Arc::new(WebSocketProtocolAuthenticator::new(tokens)));
    }
    let anonymous = || -> Arc<dyn Authenticator> {
        Arc::new(AnonymousAuthenticator::with_paths(
            options.anonymous_paths.clone(),
        ))
    };
    if authenticators.is_empty() {
        return Ok(options.anonymous.then(anonymous));
    }
    let mut authenticator: Arc<dyn Authenticator> =
        Arc::new(AuthenticatedGroupAdder::new(union(authenticators)));
    if options.anonymous {
        authenticator = Arc::new(UnionAuthenticator::fail_on_error(vec![
            authenticator,
            anonymous(),
        ]));
    }
    Ok(Some(authenticator))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authn::StaticClientCa;
    use crate::authn::x509::testcerts::Ca;
    use crate::request::ConnectionInfo;

    fn parts(
        auth: Option<&str>,
        cert: Option<rustls_pki_types::CertificateDer<'static>>,
    ) -> http::request::Parts {
        let mut b = http::Request::builder();
        if let Some(a) = auth {
            b = b.header("Authorization", a);
        }
        let (mut p, _) = b.body(()).unwrap().into_parts();
        let mut conn = ConnectionInfo::local();
        conn.peer_certificates = cert.map(|c| Arc::new(vec![c]));
        p.extensions.insert(conn);
        p
    }

    #[tokio::test]
    async fn composed_chain() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.csv");
        std::fs::write(&path, "secret,alice,1,devs\n").unwrap();
        let ca = Ca::new("ca");
        let options = AuthenticatorOptions {
            client_ca: Some(Arc::new(StaticClientCa(Arc::new(vec![ca.der()])))),
            token_file: Some(path),
            anonymous: true,
            ..Default::default()
        };
        let auth = build_authenticator(&options).unwrap().unwrap();

        // Token user gets system:authenticated.
        let user = auth
            .authenticate(&parts(Some("Bearer secret"), None))
            .await
            .unwrap()
            .unwrap()
            .user;
        assert_eq!(user.name, "alice");
        assert_eq!(user.groups, vec!["devs", "system:authenticated"]);

        // Certificate user.
        let user = auth
            .authenticate(&parts(None, Some(ca.client("admin", &["system:masters"]))))
            .await
            .unwrap()
            .unwrap()
            .user;
        assert_eq!(user.groups, vec!["system:masters", "system:authenticated"]);

        // No credentials: anonymous, without system:authenticated.
        let user = auth
            .authenticate(&parts(None, None))
            .await
            .unwrap()
            .unwrap()
            .user;
        assert_eq!(user.name, "system:anonymous");
        assert_eq!(user.groups, vec!["system:unauthenticated"]);

        // A rejected token does not fall back to anonymous.
        assert_eq!(
            auth.authenticate(&parts(Some("Bearer wrong"), None))
                .await
                .unwrap_err()
                .to_string(),
            "invalid bearer token"
        );
        // Neither does a bad certificate.
        let other = Ca::new("other");
        assert!(
            auth.authenticate(&parts(None, Some(other.client("x", &[]))))
                .await
                .is_err()
        );
    }

    #[tokio::test]
    async fn anonymous_only_and_nothing() {
        let auth = build_authenticator(&AuthenticatorOptions {
            anonymous: true,
            ..Default::default()
        })
        .unwrap()
        .unwrap();
        assert_eq!(
            auth.authenticate(&parts(Some("Bearer x"), None))
                .await
                .unwrap()
                .unwrap()
                .user
                .name,
            "system:anonymous"
        );
        assert!(
            build_authenticator(&AuthenticatorOptions::default())
                .unwrap()
                .is_none()
        );
    }

    #[tokio::test]
    async fn without_anonymous_no_credentials_is_no_opinion() {
        let ca = Ca::new("ca");
        let auth = build_authenticator(&AuthenticatorOptions {
            client_ca: Some(Arc::new(StaticClientCa(Arc::new(vec![ca.der()])))),
            ..Default::default()
        })
        .unwrap()
        .unwrap();
        assert_eq!(auth.authenticate(&parts(None, None)).await.unwrap(), None);
    }

    #[test]
    fn bad_token_file_fails() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.csv");
        std::fs::write(&path, "a,b\n").unwrap();
        assert!(
            build_authenticator(&AuthenticatorOptions {
                token_file: Some(path),
                ..Default::default()
            })
            .is_err()
        );
    }
}
