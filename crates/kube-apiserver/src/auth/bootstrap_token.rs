//! Bootstrap tokens (`--enable-bootstrap-token-auth`, upstream
//! `plugin/pkg/auth/authenticator/token/bootstrap`): `<id>.<secret>` tokens backed by
//! `bootstrap-token-<id>` secrets of type `bootstrap.kubernetes.io/token` in `kube-system`,
//! as kubeadm creates them for joining nodes.
//!
//! Every way a token can fail (no such secret, wrong secret, expired, not for authentication)
//! is "no opinion", as upstream: the request then fails as an unknown bearer token.

use std::sync::Arc;

use apiserver::authn::bearertoken::TokenAuthenticator;
use apiserver::authn::{AuthError, AuthResponse};
use apiserver::request::UserInfo;
use base64::Engine;
use serde_json::Value;

/// The namespace of bootstrap-token secrets.
pub const NAMESPACE: &str = "kube-system";
/// The secrets' type.
pub const SECRET_TYPE: &str = "bootstrap.kubernetes.io/token";
/// Secret names are this prefix and the token ID.
pub const SECRET_PREFIX: &str = "bootstrap-token-";
/// Users are this prefix and the token ID.
pub const USER_PREFIX: &str = "system:bootstrap:";
/// The group every bootstrap token user is in.
pub const DEFAULT_GROUP: &str = "system:bootstrappers";

/// Finds `kube-system` secrets by name (the secrets informer's cache).
pub trait SecretLister: Send + Sync {
    /// The secret, if cached.
    fn get(&self, name: &str) -> Option<Arc<Value>>;
}

/// The bootstrap-token authenticator.
pub struct BootstrapTokenAuthenticator {
    secrets: Arc<dyn SecretLister>,
}

impl BootstrapTokenAuthenticator {
    /// Looks tokens up in `secrets`.
    pub fn new(secrets: Arc<dyn SecretLister>) -> Self {
        BootstrapTokenAuthenticator { secrets }
    }
}

/// `<6 of [a-z0-9]>.<16 of [a-z0-9]>` split in two (upstream `ParseToken`).
pub fn parse_token(token: &str) -> Option<(&str, &str)> {
    let (id, secret) = token.split_once('.')?;
    let valid = |s: &str, len: usize| {
        s.len() == len
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    };
    (valid(id, 6) && valid(secret, 16)).then_some((id, secret))
}

/// A data value of the secret, decoded.
fn data(secret: &Value, key: &str) -> String {
    secret
        .get("data")
        .and_then(|d| d.get(key))
        .and_then(Value::as_str)
        .and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok())
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .unwrap_or_default()
}

/// Upstream `ValidateBootstrapGroupName`: `system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]`.
fn valid_group(group: &str) -> bool {
    let Some(rest) = group.strip_prefix("system:bootstrappers:") else {
        return false;
    };
    let allowed = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    !rest.is_empty()
        && rest.len() <= 256
        && rest.bytes().all(|b| allowed(b) || b == b':' || b == b'-')
        && rest.bytes().last().is_some_and(allowed)
}

/// The token's groups: `system:bootstrappers` and the valid `auth-extra-groups`, sorted and
/// unique; `None` when an extra group is invalid (upstream `GetGroups`).
fn groups(secret: &Value) -> Option<Vec<String>> {
    let mut groups = std::collections::BTreeSet::from([DEFAULT_GROUP.to_string()]);
    let extra = data(secret, "auth-extra-groups");
    if !extra.is_empty() {
        for group in extra.split(',') {
            if !valid_group(group) {
                tracing::debug!("bootstrap token group {group:?} is invalid");
                return None;
            }
            groups.insert(group.to_string());
        }
    }
    Some(groups.into_iter().collect())
}

/// Whether the `expiration` (RFC 3339) has passed; one that does not parse counts as passed.
fn expired(secret: &Value, now: jiff::Timestamp) -> bool {
    let expiration = data(secret, "expiration");
    if expiration.is_empty() {
        return false;
    }
    match expiration.parse::<jiff::Timestamp>() {
        Ok(at) => now >= at,
        Err(_) => true,
    }
}

/// Constant-time equality of the presented and stored secrets.
fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

impl BootstrapTokenAuthenticator {
    /// The user of `token` at `now`, if it is a valid bootstrap token.
    pub fn lookup(&self, token: &str, now: jiff::Timestamp) -> Option<UserInfo> {
        let (id, token_secret) = parse_token(token)?;
        let secret = self.secrets.get(&format!("{SECRET_PREFIX}{id}"))?;
        if secret
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|v| !v.is_null())
        {
            return None;
        }
        if secret.get("type").and_then(Value::as_str) != Some(SECRET_TYPE)
            || secret.get("data").is_none_or(Value::is_null)
        {
            return None;
        }
        if !same_secret(&data(&secret, "token-secret"), token_secret) {
            return None;
        }
        if data(&secret, "token-id") != id {
            return None;
        }
        if expired(&secret, now) {
            return None;
        }
        if data(&secret, "usage-bootstrap-authentication") != "true" {
            return None;
        }
        Some(UserInfo {
            name: format!("{USER_PREFIX}{id}"),
            groups: groups(&secret)?,
            ..Default::default()
        })
    }
}

#[async_trait::async_trait]
impl TokenAuthenticator for BootstrapTokenAuthenticator {
    async fn authenticate_token(
        &self,
        _req: &http::request::Parts,
        token: &str,
    ) -> Result<Option<AuthResponse>, AuthError> {
        Ok(self
            .lookup(token, jiff::Timestamp::now())
            .map(AuthResponse::new))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;

    struct Secrets(BTreeMap<String, Arc<Value>>);
    impl SecretLister for Secrets {
        fn get(&self, name: &str) -> Option<Arc<Value>> {
            self.0.get(name).cloned()
        }
    }

    fn secret(fields: &[(&str, &str)], type_: &str) -> Value {
        let data: serde_json::Map<String, Value> = fields
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string(),
                    json!(base64::engine::general_purpose::STANDARD.encode(v)),
                )
            })
            .collect();
        json!({"metadata": {"name": "bootstrap-token-abcdef", "namespace": "kube-system"},
               "type": type_, "data": data})
    }

    fn auth(secret: Value) -> BootstrapTokenAuthenticator {
        BootstrapTokenAuthenticator::new(Arc::new(Secrets(BTreeMap::from([(
            "bootstrap-token-abcdef".to_string(),
            Arc::new(secret),
        )]))))
    }

    const GOOD: &[(&str, &str)] = &[
        ("token-id", "abcdef"),
        ("token-secret", "0123456789abcdef"),
        ("usage-bootstrap-authentication", "true"),
        (
            "auth-extra-groups",
            "system:bootstrappers:kubeadm:default-node-token",
        ),
        ("expiration", "2099-01-01T00:00:00Z"),
    ];

    fn now() -> jiff::Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    #[test]
    fn a_valid_token_is_its_bootstrap_user() {
        let user = auth(secret(GOOD, SECRET_TYPE))
            .lookup("abcdef.0123456789abcdef", now())
            .unwrap();
        assert_eq!(user.name, "system:bootstrap:abcdef");
        assert_eq!(
            user.groups,
            vec![
                "system:bootstrappers",
                "system:bootstrappers:kubeadm:default-node-token"
            ]
        );
    }

    #[test]
    fn invalid_tokens_have_no_user() {
        let with = |key: &str, value: &str| {
            let fields: Vec<(&str, &str)> = GOOD
                .iter()
                .map(|(k, v)| (*k, if *k == key { value } else { *v }))
                .collect();
            secret(&fields, SECRET_TYPE)
        };
        let token = "abcdef.0123456789abcdef";
        for (why, s) in [
            ("wrong secret", with("token-secret", "0000000000000000")),
            ("wrong id", with("token-id", "zzzzzz")),
            ("expired", with("expiration", "2020-01-01T00:00:00Z")),
            ("bad expiration", with("expiration", "soon")),
            (
                "not for authentication",
                with("usage-bootstrap-authentication", "false"),
            ),
            ("bad group", with("auth-extra-groups", "system:masters")),
            ("wrong type", secret(GOOD, "Opaque")),
        ] {
            assert_eq!(auth(s).lookup(token, now()), None, "{why}");
        }
        let a = auth(secret(GOOD, SECRET_TYPE));
        for token in [
            "abcdef.0123456789abcde",
            "ABCDEF.0123456789abcdef",
            "abcdef0123456789abcdef",
            "zzzzzz.0123456789abcdef",
        ] {
            assert_eq!(a.lookup(token, now()), None, "{token}");
        }
    }
}
