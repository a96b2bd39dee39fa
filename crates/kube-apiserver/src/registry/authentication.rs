//! authentication.k8s.io's reviews (upstream `pkg/registry/authentication`): TokenReview runs
//! the server's authenticator on a token, SelfSubjectReview returns the requesting user.

use std::sync::{Arc, OnceLock};

use apiserver::authn::{ApiAudiences, Authenticator};
use apiserver::registry::rest::{BoxFuture, CreateOptions, RequestContext, RestStorage};
use apiserver::registry::{ResourceInfo, SharedStrategy};
use apiserver::request::UserInfo;
use apiserver::status::ApiError;
use serde_json::{Map, Value, json};

/// The server's request authenticator, set once it is built (after the APIs are installed).
pub type AuthenticatorCell = Arc<OnceLock<Arc<dyn Authenticator>>>;

/// `authentication.k8s.io/v1` `UserInfo` of a user; `uid` and `extra` only when set.
fn user_info_json(user: &UserInfo) -> Value {
    let mut info = Map::new();
    info.insert("username".into(), json!(user.name));
    if !user.uid.is_empty() {
        info.insert("uid".into(), json!(user.uid));
    }
    if !user.groups.is_empty() {
        info.insert("groups".into(), json!(user.groups));
    }
    if !user.extra.is_empty() {
        info.insert("extra".into(), json!(user.extra));
    }
    Value::Object(info)
}

/// `POST /apis/authentication.k8s.io/v1/tokenreviews`.
pub struct TokenReviewStorage {
    strategy: SharedStrategy,
    authenticator: AuthenticatorCell,
    api_audiences: Vec<String>,
}

impl TokenReviewStorage {
    /// Reviews tokens with the authenticator the cell will hold; `api_audiences` are those a
    /// review without `spec.audiences` checks against.
    pub fn new(
        strategy: SharedStrategy,
        authenticator: AuthenticatorCell,
        api_audiences: Vec<String>,
    ) -> Self {
        TokenReviewStorage {
            strategy,
            authenticator,
            api_audiences,
        }
    }

    async fn review(&self, ctx: &RequestContext, mut review: Value) -> Result<Value, ApiError> {
        if !ctx.namespace.is_empty() {
            return Err(ApiError::bad_request(format!(
                "namespace is not allowed on this type: {}",
                ctx.namespace
            )));
        }
        let token = review
            .pointer("/spec/token")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if token.is_empty() {
            return Err(ApiError::bad_request(
                "token is required for TokenReview in authentication",
            ));
        }
        let obj = review
            .as_object_mut()
            .ok_or_else(|| ApiError::bad_request("not a TokenReview"))?;
        // The review object is not stored: upstream answers with a zero creation timestamp.
        obj.insert("metadata".into(), json!({"creationTimestamp": null}));
        let Some(authenticator) = self.authenticator.get() else {
            obj.insert("status".into(), json!({}));
            return Ok(review);
        };
        let requested: Vec<String> = obj
            .get("spec")
            .and_then(|s| s.get("audiences"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let audiences = if requested.is_empty() {
            self.api_audiences.clone()
        } else {
            requested
        };
        // A request carrying nothing but the token.
        let (mut parts, _) = http::Request::builder()
            .header(http::header::AUTHORIZATION, format!("Bearer {token}"))
            .body(())
            .map_err(|_| ApiError::bad_request("token is not a valid header value"))?
            .into_parts();
        if !audiences.is_empty() {
            parts.extensions.insert(ApiAudiences(audiences.clone()));
        }
        let result = authenticator.authenticate(&parts).await;
        let mut status = Map::new();
        match result {
            Ok(Some(response)) => {
                // Audience-agnostic authenticators answer for whatever was asked.
                let granted = if response.audiences.is_empty() {
                    audiences.clone()
                } else {
                    response.audiences.clone()
                };
                if !audiences.is_empty() && !granted.iter().any(|a| audiences.contains(a)) {
                    return Err(ApiError::internal("error validating audiences"));
                }
                status.insert("authenticated".into(), json!(true));
                status.insert("user".into(), user_info_json(&response.user));
                if !granted.is_empty() {
                    status.insert("audiences".into(), json!(granted));
                }
            }
            Ok(None) => {
                status.insert("user".into(), json!({}));
            }
            Err(err) => {
                status.insert("user".into(), json!({}));
                status.insert("error".into(), json!(err.to_string()));
            }
        }
        obj.insert("status".into(), Value::Object(status));
        Ok(review)
    }
}

impl RestStorage for TokenReviewStorage {
    fn info(&self) -> &ResourceInfo {
        self.strategy.info()
    }

    fn is_stored(&self) -> bool {
        false
    }

    fn verbs(&self) -> Vec<&'static str> {
        vec!["create"]
    }

    fn create<'a>(
        &'a self,
        ctx: &'a RequestContext,
        obj: Value,
        _opts: &'a CreateOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(self.review(ctx, obj))
    }
}

/// `POST /apis/authentication.k8s.io/v1/selfsubjectreviews`.
pub struct SelfSubjectReviewStorage {
    strategy: SharedStrategy,
}

impl SelfSubjectReviewStorage {
    /// The storage.
    pub fn new(strategy: SharedStrategy) -> Self {
        SelfSubjectReviewStorage { strategy }
    }
}

impl RestStorage for SelfSubjectReviewStorage {
    fn info(&self) -> &ResourceInfo {
        self.strategy.info()
    }

    fn is_stored(&self) -> bool {
        false
    }

    fn verbs(&self) -> Vec<&'static str> {
        vec!["create"]
    }

    fn create<'a>(
        &'a self,
        ctx: &'a RequestContext,
        _obj: Value,
        _opts: &'a CreateOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(async move {
            let user = ctx
                .user
                .as_ref()
                .ok_or_else(|| ApiError::bad_request("no user present on request"))?;
            Ok(json!({
                "kind": "SelfSubjectReview",
                "apiVersion": "authentication.k8s.io/v1",
                "metadata": {"creationTimestamp": apiserver::registry::store::meta::now_rfc3339()},
                "status": {"userInfo": user_info_json(user)},
            }))
        })
    }
}
