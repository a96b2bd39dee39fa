//! `serviceaccounts/{name}/token` (upstream `TokenREST` in
//! `pkg/registry/core/serviceaccount/storage/token.go`): a TokenRequest mints a bound token for
//! the service account, optionally bound to a pod, secret or node that must exist with the
//! uid the request names.

use std::sync::Arc;

use apiserver::registry::rest::{
    BoxFuture, CreateOptions, GetOptions, RequestContext, RestStorage,
};
use apiserver::registry::store::Store;
use apiserver::registry::{FieldError, ResourceInfo};
use apiserver::status::ApiError;
use serde_json::{Map, Value, json};

use super::pod::StoreCell;
use crate::apis::json::str_at;
use crate::serviceaccount::TokenIssuer;
use crate::serviceaccount::claims::{
    EXPIRATION_EXTENSION_SECONDS, ObjectRef, TokenSpec, WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS,
};

const GROUP: &str = "authentication.k8s.io";
const KIND: &str = "TokenRequest";
/// `TokenRequestSpec.expirationSeconds` when unset (upstream defaulting: one hour).
const DEFAULT_EXPIRATION_SECONDS: i64 = 60 * 60;
/// The shortest lifetime a request may ask for (upstream `ValidateTokenRequest`).
const MIN_EXPIRATION_SECONDS: i64 = 10 * 60;
/// The longest.
const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;

/// The token subresource.
pub struct TokenRequestStorage {
    info: ResourceInfo,
    issuer: Arc<TokenIssuer>,
    serviceaccounts: Store,
    pods: StoreCell,
    secrets: StoreCell,
    nodes: StoreCell,
}

impl TokenRequestStorage {
    /// The subresource over the service accounts' store; the other stores are looked up when
    /// a request binds to one of their objects.
    pub fn new(
        issuer: Arc<TokenIssuer>,
        serviceaccounts: Store,
        pods: StoreCell,
        secrets: StoreCell,
        nodes: StoreCell,
    ) -> Self {
        let info = ResourceInfo {
            group: GROUP.into(),
            version: "v1".into(),
            kind: KIND.into(),
            resource: serviceaccounts.info().resource.clone(),
            namespaced: true,
            ..Default::default()
        };
        TokenRequestStorage {
            info,
            issuer,
            serviceaccounts,
            pods,
            secrets,
            nodes,
        }
    }

    async fn get_from(
        cell: &StoreCell,
        ctx: &RequestContext,
        namespace: &str,
        resource: &str,
        name: &str,
    ) -> Result<Value, ApiError> {
        let store = cell
            .get()
            .ok_or_else(|| ApiError::internal(format!("the {resource} store is not installed")))?;
        let scoped = RequestContext {
            namespace: namespace.to_string(),
            name: name.to_string(),
            user: ctx.user.clone(),
            warnings: ctx.warnings.clone(),
            ..Default::default()
        };
        store.get(&scoped, name, &GetOptions::default()).await
    }

    async fn create_token(&self, ctx: &RequestContext, mut req: Value) -> Result<Value, ApiError> {
        let name = ctx.name.as_str();
        let namespace = ctx.namespace.as_str();
        let invalid = |field: &str, value: &str, detail: &str, object: &str| {
            ApiError::invalid(
                GROUP,
                KIND,
                object,
                vec![FieldError::invalid(field, value, detail).to_cause()],
            )
        };
        let body_name = str_at(&req, "metadata.name")
            .unwrap_or_default()
            .to_string();
        if !body_name.is_empty() && body_name != name {
            return Err(invalid(
                "metadata.name",
                &body_name,
                "must match the service account name if specified",
                name,
            ));
        }
        let body_namespace = str_at(&req, "metadata.namespace")
            .unwrap_or_default()
            .to_string();
        if !body_namespace.is_empty() && body_namespace != namespace {
            return Err(invalid(
                "metadata.namespace",
                &body_namespace,
                "must match the service account namespace if specified",
                name,
            ));
        }
        let sa_ctx = RequestContext {
            namespace: namespace.to_string(),
            name: name.to_string(),
            user: ctx.user.clone(),
            warnings: ctx.warnings.clone(),
            ..Default::default()
        };
        let sa = self
            .serviceaccounts
            .get(&sa_ctx, name, &GetOptions::default())
            .await?;

        let spec = req.get("spec").cloned().unwrap_or(Value::Null);
        let mut audiences: Vec<String> = spec
            .get("audiences")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        if audiences.is_empty() {
            audiences = self.issuer.api_audiences.clone();
        }
        let mut expiration = spec
            .get("expirationSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(DEFAULT_EXPIRATION_SECONDS);
        let mut errors = Vec::new();
        if expiration < MIN_EXPIRATION_SECONDS {
            errors.push(FieldError::invalid(
                "spec.expirationSeconds",
                expiration,
                "may not specify a duration less than 10 minutes",
            ));
        }
        if expiration > MAX_EXPIRATION_SECONDS {
            errors.push(FieldError::invalid(
                "spec.expirationSeconds",
                expiration,
                "may not specify a duration larger than 2^32 seconds",
            ));
        }
        if !errors.is_empty() {
            return Err(ApiError::invalid(
                GROUP,
                KIND,
                "",
                errors.iter().map(FieldError::to_cause).collect(),
            ));
        }

        let sa_ref = ObjectRef::of(&sa);
        let mut token = TokenSpec {
            namespace: namespace.to_string(),
            service_account: sa_ref,
            ..Default::default()
        };
        if let Some(bound) = spec.get("boundObjectRef").filter(|b| b.is_object()) {
            self.bind(ctx, name, namespace, bound, &mut token).await?;
        }

        let max = self.issuer.max_expiration_seconds;
        if max > 0 && expiration > max {
            ctx.warn(&format!(
                "requested expiration of {expiration} seconds shortened to {max} seconds"
            ));
            expiration = max;
        }
        // Safe rollout of bound pod tokens: the admission plugin's 3607 s tokens stay valid
        // for a year, with a warning after the requested lifetime.
        let mut lifetime = expiration;
        let kube_audiences = !self.issuer.api_audiences.is_empty()
            && audiences
                .iter()
                .all(|a| self.issuer.api_audiences.contains(a));
        if self.issuer.extend_expiration
            && token.pod.is_some()
            && expiration == WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS
            && kube_audiences
        {
            token.warn_after = expiration;
            lifetime = EXPIRATION_EXTENSION_SECONDS;
        }
        token.expiration_seconds = lifetime;
        token.audiences = audiences.clone();

        let now = jiff::Timestamp::now();
        let jti = uuid::Uuid::new_v4().to_string();
        let signed = self
            .issuer
            .mint(&token, now.as_second(), &jti)
            .map_err(|e| ApiError::internal(format!("failed to generate token: {e}")))?;
        let rfc3339 = |t: jiff::Timestamp| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
        let expires = now
            .checked_add(jiff::SignedDuration::from_secs(expiration))
            .map_err(ApiError::internal)?;

        let obj = req
            .as_object_mut()
            .ok_or_else(|| ApiError::bad_request("not a TokenRequest"))?;
        let meta = obj
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if !meta.is_object() {
            *meta = Value::Object(Map::new());
        }
        if let Some(meta) = meta.as_object_mut() {
            meta.insert("name".into(), json!(name));
            meta.insert("namespace".into(), json!(namespace));
            meta.insert("creationTimestamp".into(), json!(rfc3339(now)));
            meta.remove("managedFields");
        }
        let mut spec = match spec {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        spec.insert("audiences".into(), json!(audiences));
        spec.insert("expirationSeconds".into(), json!(expiration));
        if spec.get("boundObjectRef").is_some_and(Value::is_null) {
            spec.remove("boundObjectRef");
        }
        obj.insert("spec".into(), Value::Object(spec));
        obj.insert(
            "status".into(),
            json!({"token": signed, "expirationTimestamp": rfc3339(expires)}),
        );
        Ok(req)
    }

    /// Resolves `boundObjectRef`: the object must exist (404 otherwise) and, when the request
    /// names a uid, have it (409).
    async fn bind(
        &self,
        ctx: &RequestContext,
        sa_name: &str,
        namespace: &str,
        bound: &Value,
        token: &mut TokenSpec,
    ) -> Result<(), ApiError> {
        let text = |k: &str| bound.get(k).and_then(Value::as_str).unwrap_or_default();
        let (api_version, kind, name, want_uid) =
            (text("apiVersion"), text("kind"), text("name"), text("uid"));
        let (group, version) = match api_version.rsplit_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        let uid = match (group, kind) {
            ("", "Pod") => {
                let pod = Self::get_from(&self.pods, ctx, namespace, "pods", name).await?;
                if str_at(&pod, "spec.serviceAccountName").unwrap_or_default() != sa_name {
                    return Err(ApiError::bad_request(format!(
                        "cannot bind token for serviceaccount {sa_name:?} to pod running with different serviceaccount name."
                    )));
                }
                // The pod's node goes into the token when it can be read.
                if let Some(node_name) = str_at(&pod, "spec.nodeName").filter(|n| !n.is_empty())
                    && let Ok(node) = Self::get_from(&self.nodes, ctx, "", "nodes", node_name).await
                {
                    token.node = Some(ObjectRef::of(&node));
                }
                let pod_ref = ObjectRef::of(&pod);
                let uid = pod_ref.uid.clone();
                token.pod = Some(pod_ref);
                uid
            }
            ("", "Node") => {
                let node = Self::get_from(&self.nodes, ctx, "", "nodes", name).await?;
                let node_ref = ObjectRef::of(&node);
                let uid = node_ref.uid.clone();
                token.node = Some(node_ref);
                uid
            }
            ("", "Secret") => {
                let secret = Self::get_from(&self.secrets, ctx, namespace, "secrets", name).await?;
                let secret_ref = ObjectRef::of(&secret);
                let uid = secret_ref.uid.clone();
                token.secret = Some(secret_ref);
                uid
            }
            _ => {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token for serviceaccount {sa_name:?} to object of type {group}/{version}, Kind={kind}."
                )));
            }
        };
        if !want_uid.is_empty() && uid != want_uid {
            return Err(ApiError::conflict(
                group,
                kind,
                name,
                &format!(
                    "the UID in the bound object reference ({want_uid}) does not match the UID in record. The object might have been deleted and then recreated"
                ),
            ));
        }
        Ok(())
    }
}

impl RestStorage for TokenRequestStorage {
    fn info(&self) -> &ResourceInfo {
        &self.info
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
        Box::pin(self.create_token(ctx, obj))
    }
}
