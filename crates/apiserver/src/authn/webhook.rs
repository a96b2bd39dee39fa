//! Webhook token authentication (upstream `plugin/pkg/authenticator/token/webhook`): a
//! `TokenReview` (`authentication.k8s.io/v1` or `v1beta1`) is POSTed to a remote service
//! named by a kubeconfig file, and its `status` decides. Wrap it in
//! [`super::tokencache::CachedTokenAuthenticator`] (`--authentication-token-webhook-cache-ttl`).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use super::bearertoken::TokenAuthenticator;
use super::{ApiAudiences, AuthError, AuthResponse};
use crate::request::UserInfo;
use crate::util::webhook::{Backoff, WebhookClient, WebhookKubeconfig};

/// The TokenReview version a webhook speaks (`--authentication-token-webhook-version`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenReviewVersion {
    /// `authentication.k8s.io/v1` (the default).
    V1,
    /// `authentication.k8s.io/v1beta1`.
    V1beta1,
}

impl std::str::FromStr for TokenReviewVersion {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "v1" => Ok(TokenReviewVersion::V1),
            "v1beta1" => Ok(TokenReviewVersion::V1beta1),
            other => Err(format!(
                "unsupported authentication webhook version {other:?}, supported versions are \"v1\", \"v1beta1\""
            )),
        }
    }
}

impl TokenReviewVersion {
    fn api_version(self) -> &'static str {
        match self {
            TokenReviewVersion::V1 => "authentication.k8s.io/v1",
            TokenReviewVersion::V1beta1 => "authentication.k8s.io/v1beta1",
        }
    }
}

/// Authenticates bearer tokens by asking a TokenReview webhook.
#[derive(Debug)]
pub struct WebhookTokenAuthenticator {
    client: WebhookClient,
    version: TokenReviewVersion,
    implicit_audiences: Vec<String>,
}

impl WebhookTokenAuthenticator {
    /// A webhook authenticator for the kubeconfig at `path`. `implicit_audiences` are the
    /// server's API audiences, assumed when the webhook's answer names none.
    pub fn from_kubeconfig(
        path: &Path,
        version: TokenReviewVersion,
        implicit_audiences: Vec<String>,
    ) -> Result<Self, String> {
        let config = WebhookKubeconfig::load(path).map_err(|e| e.to_string())?;
        let client = WebhookClient::new(
            &config,
            crate::util::webhook::DEFAULT_REQUEST_TIMEOUT,
            Backoff::default(),
        )?;
        Ok(Self::new(client, version, implicit_audiences))
    }

    /// A webhook authenticator calling `client`.
    pub fn new(
        client: WebhookClient,
        version: TokenReviewVersion,
        implicit_audiences: Vec<String>,
    ) -> Self {
        WebhookTokenAuthenticator {
            client,
            version,
            implicit_audiences,
        }
    }

    /// The TokenReview sent for `token` and the wanted audiences.
    fn review(&self, token: &str, audiences: &[String]) -> Value {
        let mut spec = json!({ "token": token });
        if !audiences.is_empty() {
            spec["audiences"] = json!(audiences);
        }
        json!({
            "apiVersion": self.version.api_version(),
            "kind": "TokenReview",
            "metadata": { "creationTimestamp": null },
            "spec": spec,
            "status": { "user": {} },
        })
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The user of a TokenReview status (`v1` and `v1beta1` share the shape).
fn user_from_status(user: Option<&Value>) -> UserInfo {
    let text = |k: &str| {
        user.and_then(|u| u.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let extra: BTreeMap<String, Vec<String>> = user
        .and_then(|u| u.get("extra"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), strings(Some(v))))
                .collect()
        })
        .unwrap_or_default();
    UserInfo {
        name: text("username"),
        uid: text("uid"),
        groups: strings(user.and_then(|u| u.get("groups"))),
        extra,
    }
}

/// Upstream's audience rule: when the request is audience-limited, the answer's audiences
/// (or, without any, the server's implicit ones) must intersect the wanted ones.
fn intersect(want: &[String], got: &[String]) -> Vec<String> {
    want.iter().filter(|a| got.contains(a)).cloned().collect()
}

#[async_trait::async_trait]
impl TokenAuthenticator for WebhookTokenAuthenticator {
    async fn authenticate_token(
        &self,
        req: &http::request::Parts,
        token: &str,
    ) -> Result<Option<AuthResponse>, AuthError> {
        let want: &[String] = req
            .extensions
            .get::<ApiAudiences>()
            .map(|a| a.0.as_slice())
            .unwrap_or(&[]);
        let result = match self.client.post_json(&self.review(token, want)).await {
            Ok(r) => r,
            Err(e) => {
                tracing::error!("Failed to make webhook authenticator request: {e}");
                return Err(AuthError::Other(e.to_string()));
            }
        };
        let status = result.get("status");
        let mut audiences = Vec::new();
        if !want.is_empty() {
            let returned = strings(status.and_then(|s| s.get("audiences")));
            let got = if returned.is_empty() {
                &self.implicit_audiences
            } else {
                &returned
            };
            audiences = intersect(want, got);
            if audiences.is_empty() {
                return Ok(None);
            }
        }
        let authenticated = status
            .and_then(|s| s.get("authenticated"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if !authenticated {
            let error = status
                .and_then(|s| s.get("error"))
                .and_then(Value::as_str)
                .unwrap_or("");
            if !error.is_empty() {
                return Err(AuthError::Other(error.to_string()));
            }
            return Ok(None);
        }
        Ok(Some(AuthResponse {
            user: user_from_status(status.and_then(|s| s.get("user"))),
            audiences,
        }))
    }
}

/// The default of `--authentication-token-webhook-cache-ttl`.
pub const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(120);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_with_upstream_message() {
        assert_eq!(
            "v1".parse::<TokenReviewVersion>().unwrap(),
            TokenReviewVersion::V1
        );
        assert_eq!(
            "v2".parse::<TokenReviewVersion>().unwrap_err(),
            "unsupported authentication webhook version \"v2\", supported versions are \"v1\", \"v1beta1\""
        );
    }

    #[test]
    fn status_user_maps_every_field() {
        let user = user_from_status(Some(&json!({
            "username": "jane", "uid": "42", "groups": ["a", "b"],
            "extra": {"scopes": ["x", "y"]}
        })));
        assert_eq!(user.name, "jane");
        assert_eq!(user.uid, "42");
        assert_eq!(user.groups, vec!["a", "b"]);
        assert_eq!(user.extra["scopes"], vec!["x", "y"]);
    }

    #[test]
    fn audiences_intersect() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(intersect(&s(&["a", "b"]), &s(&["b", "c"])), s(&["b"]));
        assert!(intersect(&s(&["a"]), &s(&["c"])).is_empty());
    }
}
