//! The service-account token authenticators (upstream `serviceaccount/jwt.go`
//! `JWTTokenAuthenticator`): one for bound tokens of the configured issuers, one for legacy
//! secret-based tokens of issuer `kubernetes/serviceaccount`.
//!
//! A token that is not a JWS, or names another issuer, is none of their business (no
//! opinion); one whose signature no key verifies, whose audiences miss the requested ones or
//! whose claims fail the checks of [`claims`](super::claims) is an error.

use std::sync::Arc;

use apiserver::audit::AuditContext;
use apiserver::authn::bearertoken::TokenAuthenticator;
use apiserver::authn::{ApiAudiences, AuthError, AuthResponse};
use apiserver::request::warning::add_warning;

use super::claims::{self, LEGACY_ISSUER, ObjectGetter};
use super::jws::{self, CRYPTO_ERROR};
use super::keys::PublicKey;
use super::metrics;

/// Which tokens an authenticator accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenKind {
    /// Bound tokens (TokenRequest), checked by [`claims::validate_bound`].
    Bound,
    /// Legacy secret-based tokens, checked by [`claims::validate_legacy`]; `lookup` is
    /// `--service-account-lookup`.
    Legacy {
        /// Whether the secret and service account must still exist.
        lookup: bool,
    },
}

/// A JWT authenticator for service-account tokens.
pub struct ServiceAccountAuthenticator {
    issuers: Vec<String>,
    keys: Arc<Vec<PublicKey>>,
    implicit_audiences: Vec<String>,
    kind: TokenKind,
    getter: Arc<dyn ObjectGetter>,
}

impl ServiceAccountAuthenticator {
    /// Bound tokens of `issuers`, verified with `keys`, valid for `api_audiences` unless
    /// the request asks for others.
    pub fn bound(
        issuers: Vec<String>,
        keys: Arc<Vec<PublicKey>>,
        api_audiences: Vec<String>,
        getter: Arc<dyn ObjectGetter>,
    ) -> Self {
        ServiceAccountAuthenticator {
            issuers,
            keys,
            implicit_audiences: api_audiences,
            kind: TokenKind::Bound,
            getter,
        }
    }

    /// Legacy secret-based tokens.
    pub fn legacy(
        keys: Arc<Vec<PublicKey>>,
        api_audiences: Vec<String>,
        lookup: bool,
        getter: Arc<dyn ObjectGetter>,
    ) -> Self {
        ServiceAccountAuthenticator {
            issuers: vec![LEGACY_ISSUER.to_string()],
            keys,
            implicit_audiences: api_audiences,
            kind: TokenKind::Legacy { lookup },
            getter,
        }
    }
}

/// Go's `%q` of a string slice: `["a" "b"]`.
fn go_quoted_list(list: &[String]) -> String {
    let quoted: Vec<String> = list.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", quoted.join(" "))
}

fn now() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// Adds an annotation to the request's audit event, if it is audited.
fn annotate(req: &http::request::Parts, key: &str, value: &str) {
    if let Some(audit) = req.extensions.get::<Arc<AuditContext>>() {
        audit.add_annotation(key, value);
    }
}

#[async_trait::async_trait]
impl TokenAuthenticator for ServiceAccountAuthenticator {
    async fn authenticate_token(
        &self,
        req: &http::request::Parts,
        token: &str,
    ) -> Result<Option<AuthResponse>, AuthError> {
        let Some(parsed) = jws::parse(token) else {
            return Ok(None);
        };
        let issuer = parsed
            .claims
            .get("iss")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default();
        if !self.issuers.iter().any(|i| i == issuer) {
            return Ok(None);
        }
        if !parsed.verify(&self.keys) {
            return Err(AuthError::Other(CRYPTO_ERROR.to_string()));
        }
        let subject = parsed
            .claims
            .get("sub")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default();
        let mut token_audiences = claims::audiences(&parsed.claims);
        if token_audiences.is_empty() {
            // Tokens without audiences (legacy ones) are valid for the API only.
            annotate(req, "authentication.k8s.io/legacy-token", subject);
            metrics::inc(|m| &m.legacy_tokens);
            token_audiences = self.implicit_audiences.clone();
        }
        let requested = req
            .extensions
            .get::<ApiAudiences>()
            .map(|a| a.0.clone())
            .unwrap_or_else(|| self.implicit_audiences.clone());
        let audiences: Vec<String> = requested
            .iter()
            .filter(|a| token_audiences.contains(a))
            .cloned()
            .collect();
        if audiences.is_empty() && !self.implicit_audiences.is_empty() {
            return Err(AuthError::Other(format!(
                "token audiences {} is invalid for the target audiences {}",
                go_quoted_list(&token_audiences),
                go_quoted_list(&requested)
            )));
        }
        let now = now();
        let info = match self.kind {
            TokenKind::Bound => {
                claims::validate_bound(&parsed.claims, now, self.getter.as_ref()).await
            }
            TokenKind::Legacy { lookup } => {
                claims::validate_legacy(&parsed.claims, token, lookup, self.getter.as_ref()).await
            }
        }
        .map_err(|e| AuthError::Other(e.0))?;
        if info.auto_generated_secret {
            add_warning(&req.extensions, "", claims::AUTO_GENERATED_WARNING);
        }
        let stale = parsed
            .claims
            .get("kubernetes.io")
            .and_then(|k| k.get("warnafter"))
            .and_then(serde_json::Value::as_i64)
            .filter(|w| *w != 0 && now > *w);
        match (self.kind, stale) {
            (TokenKind::Bound, Some(_)) => metrics::inc(|m| &m.stale_tokens),
            (TokenKind::Bound, None) => metrics::inc(|m| &m.valid_tokens),
            (TokenKind::Legacy { .. }, _) if info.auto_generated_secret => {
                metrics::inc(|m| &m.legacy_auto_token_uses)
            }
            (TokenKind::Legacy { .. }, _) => metrics::inc(|m| &m.legacy_manual_token_uses),
        }
        // A token past its `warnafter` (the extended lifetime of an admission pod token).
        if let Some(warn_after) = stale {
            annotate(
                req,
                "authentication.k8s.io/stale-token",
                &format!(
                    "subject: {subject}, seconds after warning threshold: {}",
                    now - warn_after
                ),
            );
        }
        Ok(Some(AuthResponse {
            user: info.user_info(),
            audiences,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serviceaccount::claims::testing::Objects;
    use crate::serviceaccount::claims::{Kind, ObjectRef, TokenSpec, bound_claims, legacy_claims};
    use crate::serviceaccount::keys::{parse_signing_key_pem, testkeys};
    use serde_json::json;

    struct Fixture {
        key: crate::serviceaccount::keys::SigningKey,
        objects: Arc<Objects>,
    }

    fn fixture() -> Fixture {
        let objects = Arc::new(Objects::default());
        objects.put(
            Kind::ServiceAccount,
            "ns",
            json!({"metadata": {"name": "sa", "uid": "u1"}}),
        );
        Fixture {
            key: parse_signing_key_pem(testkeys::p256_pem().as_bytes()).unwrap(),
            objects,
        }
    }

    fn bound(f: &Fixture) -> ServiceAccountAuthenticator {
        ServiceAccountAuthenticator::bound(
            vec!["https://iss".into(), "https://old".into()],
            Arc::new(vec![f.key.public_key().clone()]),
            vec!["api".into()],
            f.objects.clone(),
        )
    }

    fn token(f: &Fixture, issuer: &str, audiences: &[&str], exp_offset: i64) -> String {
        let spec = TokenSpec {
            namespace: "ns".into(),
            service_account: ObjectRef {
                name: "sa".into(),
                uid: "u1".into(),
            },
            expiration_seconds: exp_offset,
            audiences: audiences.iter().map(|a| a.to_string()).collect(),
            ..Default::default()
        };
        jws::sign(&f.key, &bound_claims(&spec, issuer, now(), "jti-1")).unwrap()
    }

    fn parts(audiences: Option<&[&str]>) -> http::request::Parts {
        let (mut parts, _) = http::Request::new(()).into_parts();
        if let Some(a) = audiences {
            parts
                .extensions
                .insert(ApiAudiences(a.iter().map(|s| s.to_string()).collect()));
        }
        parts
    }

    #[tokio::test]
    async fn accepts_tokens_of_every_configured_issuer() {
        let f = fixture();
        let auth = bound(&f);
        for issuer in ["https://iss", "https://old"] {
            let resp = auth
                .authenticate_token(&parts(None), &token(&f, issuer, &["api"], 600))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(resp.user.name, "system:serviceaccount:ns:sa");
            assert_eq!(resp.audiences, vec!["api"]);
        }
    }

    #[tokio::test]
    async fn other_issuers_and_garbage_are_no_opinion() {
        let f = fixture();
        let auth = bound(&f);
        for t in [
            token(&f, "https://elsewhere", &["api"], 600),
            "garbage".into(),
            "a.b.c".into(),
        ] {
            assert_eq!(auth.authenticate_token(&parts(None), &t).await, Ok(None));
        }
    }

    #[tokio::test]
    async fn wrong_key_wrong_audience_and_expired_are_errors() {
        let f = fixture();
        let auth = bound(&f);
        let other = fixture();
        let err = auth
            .authenticate_token(&parts(None), &token(&other, "https://iss", &["api"], 600))
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), CRYPTO_ERROR);
        let err = auth
            .authenticate_token(&parts(None), &token(&f, "https://iss", &["vault"], 600))
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"token audiences ["vault"] is invalid for the target audiences ["api"]"#
        );
        // The request may ask for another audience (TokenReview's spec.audiences).
        let resp = auth
            .authenticate_token(
                &parts(Some(&["vault"])),
                &token(&f, "https://iss", &["vault"], 600),
            )
            .await
            .unwrap()
            .unwrap();
        assert_eq!(resp.audiences, vec!["vault"]);
        let err = auth
            .authenticate_token(&parts(None), &token(&f, "https://iss", &["api"], -120))
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "service account token has expired");
    }

    #[tokio::test]
    async fn stale_and_legacy_tokens_are_annotated_for_audit() {
        let f = fixture();
        let auth = bound(&f);
        let mut spec = TokenSpec {
            namespace: "ns".into(),
            service_account: ObjectRef {
                name: "sa".into(),
                uid: "u1".into(),
            },
            expiration_seconds: 3600,
            warn_after: -10,
            audiences: vec!["api".into()],
            ..Default::default()
        };
        let stale = jws::sign(&f.key, &bound_claims(&spec, "https://iss", now(), "j")).unwrap();
        let mut req = parts(None);
        let audit = AuditContext::new("id".into());
        req.extensions.insert(audit.clone());
        assert!(
            auth.authenticate_token(&req, &stale)
                .await
                .unwrap()
                .is_some()
        );
        let annotations = audit.annotations();
        let note = &annotations["authentication.k8s.io/stale-token"];
        assert!(
            note.starts_with(
                "subject: system:serviceaccount:ns:sa, seconds after warning threshold: "
            ),
            "{note}"
        );
        spec.warn_after = 0;
        spec.audiences.clear();
        let no_audience =
            jws::sign(&f.key, &bound_claims(&spec, "https://iss", now(), "j")).unwrap();
        let audit = AuditContext::new("id".into());
        req.extensions.insert(audit.clone());
        auth.authenticate_token(&req, &no_audience).await.unwrap();
        assert_eq!(
            audit.annotations()["authentication.k8s.io/legacy-token"],
            "system:serviceaccount:ns:sa"
        );
    }

    #[tokio::test]
    async fn legacy_tokens_need_the_legacy_issuer_and_their_secret() {
        let f = fixture();
        let legacy = ServiceAccountAuthenticator::legacy(
            Arc::new(vec![f.key.public_key().clone()]),
            vec!["api".into()],
            true,
            f.objects.clone(),
        );
        let sa = ObjectRef {
            name: "sa".into(),
            uid: "u1".into(),
        };
        let t = jws::sign(&f.key, &legacy_claims("ns", &sa, "sa-token")).unwrap();
        assert_eq!(
            legacy
                .authenticate_token(&parts(None), &t)
                .await
                .unwrap_err()
                .to_string(),
            "Token has been invalidated"
        );
        use base64::Engine;
        f.objects.put(
            Kind::Secret,
            "ns",
            json!({"metadata": {"name": "sa-token", "uid": "s"},
                   "data": {"token": base64::engine::general_purpose::STANDARD.encode(&t)}}),
        );
        let resp = legacy
            .authenticate_token(&parts(None), &t)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(resp.user.name, "system:serviceaccount:ns:sa");
        // Legacy tokens have no audience: valid for the API audiences.
        assert_eq!(resp.audiences, vec!["api"]);
        // A bound authenticator has no opinion on them.
        assert_eq!(
            bound(&f).authenticate_token(&parts(None), &t).await,
            Ok(None)
        );
    }
}
