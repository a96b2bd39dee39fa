//! Service-account token claims (upstream `serviceaccount/claims.go` and `legacy.go`): the
//! claims a TokenRequest mints, and the checks a presented token's claims must pass once its
//! signature and issuer are known good: expiry, and that the service account (and the pod,
//! secret or node it is bound to) still exists with the uid the token names.

use std::sync::Arc;

use apiserver::request::UserInfo;
use apiserver::status::ApiError;
use serde_json::{Map, Value, json};

/// The expiration the service-account admission plugin asks for, which triggers the one-year
/// extension (upstream `WarnOnlyBoundTokenExpirationSeconds`).
pub const WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS: i64 = 60 * 60 + 7;
/// The extended lifetime of such tokens (upstream `ExpirationExtensionSeconds`).
pub const EXPIRATION_EXTENSION_SECONDS: i64 = 24 * 365 * 60 * 60;
/// The issuer of legacy secret-based tokens.
pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";
/// go-jose's clock skew allowance (`jwt.DefaultLeeway`).
pub const LEEWAY_SECONDS: i64 = 60;

/// The label marking a legacy token secret invalid (upstream `InvalidSinceLabelKey`).
pub const INVALID_SINCE_LABEL: &str = "kubernetes.io/legacy-token-invalid-since";
/// The label recording the day a legacy token was last used (upstream `LastUsedLabelKey`).
pub const LAST_USED_LABEL: &str = "kubernetes.io/legacy-token-last-used";
/// The warning for a token of a secret the service account lists (one the token controller
/// generated), as upstream's legacy-token tracking gives it.
pub const AUTO_GENERATED_WARNING: &str = "Use tokens from the TokenRequest API or manually created secret-based tokens instead of auto-generated secret-based tokens.";

/// Extra keys of a service-account user (`k8s.io/apiserver/pkg/authentication/serviceaccount`).
pub mod extra {
    /// The bound pod's name.
    pub const POD_NAME: &str = "authentication.kubernetes.io/pod-name";
    /// The bound pod's uid.
    pub const POD_UID: &str = "authentication.kubernetes.io/pod-uid";
    /// The bound (or the pod's) node's name.
    pub const NODE_NAME: &str = "authentication.kubernetes.io/node-name";
    /// The bound (or the pod's) node's uid.
    pub const NODE_UID: &str = "authentication.kubernetes.io/node-uid";
    /// `JTI=<jti>` of the token.
    pub const CREDENTIAL_ID: &str = apiserver::authn::CREDENTIAL_ID_KEY;
}

/// The audit annotation of a TokenRequest naming the credential ID of the token it issued
/// (upstream `serviceaccount.IssuedCredentialIDAuditAnnotationKey`).
pub const ISSUED_CREDENTIAL_ID_AUDIT_ANNOTATION: &str =
    "authentication.kubernetes.io/issued-credential-id";

/// The credential ID of a token with ID `jti`: `JTI=<jti>` (upstream `CredentialIDForJTI`).
pub fn credential_id_for_jti(jti: &str) -> String {
    format!("JTI={jti}")
}

/// `system:serviceaccount:<namespace>:<name>`.
pub fn username(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

/// The namespace and name of a service-account username (upstream `SplitUsername`).
pub fn split_username(username: &str) -> Option<(&str, &str)> {
    let rest = username.strip_prefix("system:serviceaccount:")?;
    let (namespace, name) = rest.split_once(':')?;
    if namespace.is_empty() || name.is_empty() || name.contains(':') {
        return None;
    }
    Some((namespace, name))
}

/// A name and uid, as the `kubernetes.io` claim records objects.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectRef {
    /// Name.
    pub name: String,
    /// UID.
    pub uid: String,
}

impl ObjectRef {
    /// The name and uid of a stored object.
    pub fn of(obj: &Value) -> ObjectRef {
        let text = |field: &str| {
            obj.pointer(&format!("/metadata/{field}"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        ObjectRef {
            name: text("name"),
            uid: text("uid"),
        }
    }

    fn to_json(&self) -> Value {
        let mut map = Map::new();
        if !self.name.is_empty() {
            map.insert("name".into(), json!(self.name));
        }
        if !self.uid.is_empty() {
            map.insert("uid".into(), json!(self.uid));
        }
        Value::Object(map)
    }

    fn from_json(value: Option<&Value>) -> Option<ObjectRef> {
        let value = value.filter(|v| v.is_object())?;
        let text = |k: &str| value.get(k).and_then(Value::as_str).unwrap_or_default();
        Some(ObjectRef {
            name: text("name").to_string(),
            uid: text("uid").to_string(),
        })
    }
}

/// What a bound token is minted for (upstream `Claims`).
#[derive(Clone, Debug, Default)]
pub struct TokenSpec {
    /// The service account's namespace.
    pub namespace: String,
    /// The service account.
    pub service_account: ObjectRef,
    /// A bound pod.
    pub pod: Option<ObjectRef>,
    /// A bound secret.
    pub secret: Option<ObjectRef>,
    /// A bound node, or the node of the bound pod.
    pub node: Option<ObjectRef>,
    /// Lifetime in seconds.
    pub expiration_seconds: i64,
    /// Seconds after which use is only warned about (0: none).
    pub warn_after: i64,
    /// The `aud` claim.
    pub audiences: Vec<String>,
}

/// The claims of a bound token issued by `issuer` at `now` (Unix seconds) with ID `jti`; keys
/// sorted as go-jose writes its merged claims.
pub fn bound_claims(spec: &TokenSpec, issuer: &str, now: i64, jti: &str) -> Value {
    let mut kubernetes = Map::new();
    kubernetes.insert("namespace".into(), json!(spec.namespace));
    kubernetes.insert("serviceaccount".into(), spec.service_account.to_json());
    if let Some(pod) = &spec.pod {
        kubernetes.insert("pod".into(), pod.to_json());
    }
    if let Some(secret) = &spec.secret {
        kubernetes.insert("secret".into(), secret.to_json());
    }
    if let Some(node) = &spec.node {
        kubernetes.insert("node".into(), node.to_json());
    }
    if spec.warn_after != 0 {
        kubernetes.insert("warnafter".into(), json!(now + spec.warn_after));
    }
    let mut claims = Map::new();
    if !spec.audiences.is_empty() {
        claims.insert("aud".into(), json!(spec.audiences));
    }
    claims.insert("exp".into(), json!(now + spec.expiration_seconds));
    claims.insert("iat".into(), json!(now));
    claims.insert("iss".into(), json!(issuer));
    claims.insert("jti".into(), json!(jti));
    claims.insert("kubernetes.io".into(), Value::Object(kubernetes));
    claims.insert("nbf".into(), json!(now));
    claims.insert(
        "sub".into(),
        json!(username(&spec.namespace, &spec.service_account.name)),
    );
    Value::Object(claims)
}

/// The claims of a legacy secret-based token (upstream `LegacyClaims`), issuer included.
/// No controller here creates such secrets; tests sign these claims as one would.
#[cfg(test)]
pub fn legacy_claims(namespace: &str, service_account: &ObjectRef, secret_name: &str) -> Value {
    json!({
        "iss": LEGACY_ISSUER,
        "kubernetes.io/serviceaccount/namespace": namespace,
        "kubernetes.io/serviceaccount/secret.name": secret_name,
        "kubernetes.io/serviceaccount/service-account.name": service_account.name,
        "kubernetes.io/serviceaccount/service-account.uid": service_account.uid,
        "sub": username(namespace, &service_account.name),
    })
}

/// The `aud` claim: a string or a list of strings.
pub fn audiences(claims: &Map<String, Value>) -> Vec<String> {
    match claims.get("aud") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(list)) => list
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

/// The identity a valid token stands for (upstream `ServiceAccountInfo`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceAccountInfo {
    /// Namespace.
    pub namespace: String,
    /// Service account name.
    pub name: String,
    /// Service account uid.
    pub uid: String,
    /// Bound pod name and uid.
    pub pod: Option<ObjectRef>,
    /// Node name and uid (the uid may be empty).
    pub node: Option<ObjectRef>,
    /// `JTI=<jti>` when the token has an ID.
    pub credential_id: Option<String>,
    /// A legacy token of a secret the service account lists (auto-generated).
    pub auto_generated_secret: bool,
}

impl ServiceAccountInfo {
    /// The user: `system:serviceaccount:<ns>:<name>` in `system:serviceaccounts` and
    /// `system:serviceaccounts:<ns>`, with the binding's extras (upstream `UserInfo`).
    pub fn user_info(&self) -> UserInfo {
        let mut user = UserInfo {
            name: username(&self.namespace, &self.name),
            uid: self.uid.clone(),
            groups: vec![
                "system:serviceaccounts".to_string(),
                format!("system:serviceaccounts:{}", self.namespace),
            ],
            ..Default::default()
        };
        if let Some(pod) = self
            .pod
            .as_ref()
            .filter(|p| !p.name.is_empty() && !p.uid.is_empty())
        {
            user.extra
                .insert(extra::POD_NAME.into(), vec![pod.name.clone()]);
            user.extra
                .insert(extra::POD_UID.into(), vec![pod.uid.clone()]);
        }
        if let Some(id) = &self.credential_id {
            user.extra
                .insert(extra::CREDENTIAL_ID.into(), vec![id.clone()]);
        }
        if let Some(node) = self.node.as_ref().filter(|n| !n.name.is_empty()) {
            user.extra
                .insert(extra::NODE_NAME.into(), vec![node.name.clone()]);
            if !node.uid.is_empty() {
                user.extra
                    .insert(extra::NODE_UID.into(), vec![node.uid.clone()]);
            }
        }
        user
    }
}

/// The objects a token's validity depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `serviceaccounts`.
    ServiceAccount,
    /// `secrets`.
    Secret,
    /// `pods`.
    Pod,
    /// `nodes` (cluster-scoped: the namespace is ignored).
    Node,
}

/// Looks up the objects tokens are bound to (upstream `ServiceAccountTokenGetter`): from the
/// informers' caches, falling back to storage on a miss.
#[async_trait::async_trait]
pub trait ObjectGetter: Send + Sync {
    /// The object, or the API error (404 `serviceaccounts "x" not found`) why not.
    async fn get(&self, kind: Kind, namespace: &str, name: &str) -> Result<Arc<Value>, ApiError>;

    /// Records that the legacy token of secret `namespace/name` was used on `day`
    /// (`YYYY-MM-DD`, UTC) in its [`LAST_USED_LABEL`]; best effort, in the background.
    fn mark_legacy_token_used(&self, _namespace: &str, _name: &str, _day: &str) {}
}

/// Labels the secret as used today unless its label already says today or tomorrow (a
/// clock ahead by a day), so each token's secret is written at most once a day.
fn track_legacy_token_use(secret: &Value, namespace: &str, getter: &dyn ObjectGetter) {
    let now = jiff::Timestamp::now();
    let day = |t: jiff::Timestamp| t.strftime("%Y-%m-%d").to_string();
    let today = day(now);
    let tomorrow = now
        .checked_add(jiff::SignedDuration::from_hours(24))
        .map(day)
        .unwrap_or_default();
    let last_used = secret
        .pointer(&format!(
            "/metadata/labels/{}",
            LAST_USED_LABEL.replace('/', "~1")
        ))
        .and_then(Value::as_str)
        .unwrap_or_default();
    if last_used != today && last_used != tomorrow {
        let name = secret
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        getter.mark_legacy_token_used(namespace, name, &today);
    }
}

/// Why a token's claims were refused; the text is what TokenReview reports.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ClaimsError(pub String);

fn err(text: impl Into<String>) -> ClaimsError {
    ClaimsError(text.into())
}

fn numeric(claims: &Map<String, Value>, key: &str) -> Option<i64> {
    claims
        .get(key)
        .and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64)))
}

fn uid(obj: &Value) -> &str {
    obj.pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The deletion timestamp in Unix seconds, if the object is being deleted.
fn deleted_at(obj: &Value) -> Option<i64> {
    let text = obj.pointer("/metadata/deletionTimestamp")?.as_str()?;
    text.parse::<jiff::Timestamp>().ok().map(|t| t.as_second())
}

/// Whether the object was deleted before `before` (a timestamp that does not parse counts as
/// deleted long ago).
fn deleted_before(obj: &Value, before: i64) -> bool {
    match obj.pointer("/metadata/deletionTimestamp") {
        None | Some(Value::Null) => false,
        Some(_) => deleted_at(obj).is_none_or(|t| t < before),
    }
}

const INVALIDATED: &str = "service account token has been invalidated";

/// Upstream `validator.Validate` for bound tokens at `now` (Unix seconds).
pub async fn validate_bound(
    claims: &Map<String, Value>,
    now: i64,
    getter: &dyn ObjectGetter,
) -> Result<ServiceAccountInfo, ClaimsError> {
    if let Some(nbf) = numeric(claims, "nbf")
        && now + LEEWAY_SECONDS < nbf
    {
        return Err(err("service account token is not valid yet"));
    }
    if let Some(exp) = numeric(claims, "exp")
        && now - LEEWAY_SECONDS > exp
    {
        return Err(err("service account token has expired"));
    }
    if let Some(iat) = numeric(claims, "iat")
        && now + LEEWAY_SECONDS < iat
    {
        return Err(err(
            "service account token claims could not be validated due to unexpected validation error",
        ));
    }
    let empty = Value::Object(Map::new());
    let private = claims.get("kubernetes.io").unwrap_or(&empty);
    let namespace = private
        .get("namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let sa_ref = ObjectRef::from_json(private.get("serviceaccount")).unwrap_or_default();
    let pod_ref = ObjectRef::from_json(private.get("pod"));
    let secret_ref = ObjectRef::from_json(private.get("secret"));
    let node_ref = ObjectRef::from_json(private.get("node"));
    let invalid_if_deleted_before = now - LEEWAY_SECONDS;

    let sa = getter
        .get(Kind::ServiceAccount, namespace, &sa_ref.name)
        .await
        .map_err(|e| err(e.to_string()))?;
    if deleted_before(&sa, invalid_if_deleted_before) {
        return Err(err(format!(
            "service account {namespace}/{} has been deleted",
            sa_ref.name
        )));
    }
    if uid(&sa) != sa_ref.uid {
        return Err(err(format!(
            "service account UID ({}) does not match claim ({})",
            uid(&sa),
            sa_ref.uid
        )));
    }
    if let Some(secret_ref) = &secret_ref {
        let secret = getter
            .get(Kind::Secret, namespace, &secret_ref.name)
            .await
            .map_err(|_| err(INVALIDATED))?;
        if deleted_before(&secret, invalid_if_deleted_before) {
            return Err(err(INVALIDATED));
        }
        if uid(&secret) != secret_ref.uid {
            return Err(err(format!(
                "secret UID ({}) does not match service account secret ref claim ({})",
                uid(&secret),
                secret_ref.uid
            )));
        }
    }
    if let Some(pod_ref) = &pod_ref {
        let pod = getter
            .get(Kind::Pod, namespace, &pod_ref.name)
            .await
            .map_err(|_| err(INVALIDATED))?;
        if deleted_before(&pod, invalid_if_deleted_before) {
            return Err(err(INVALIDATED));
        }
        if uid(&pod) != pod_ref.uid {
            return Err(err(format!(
                "pod UID ({}) does not match service account pod ref claim ({})",
                uid(&pod),
                pod_ref.uid
            )));
        }
    }
    let node = match (&node_ref, &pod_ref) {
        // A pod-bound token carries its pod's node for information only.
        (Some(node_ref), Some(_)) => Some(node_ref.clone()),
        (Some(node_ref), None) => {
            let node = getter
                .get(Kind::Node, "", &node_ref.name)
                .await
                .map_err(|_| err(INVALIDATED))?;
            if deleted_before(&node, invalid_if_deleted_before) {
                return Err(err(INVALIDATED));
            }
            if uid(&node) != node_ref.uid {
                return Err(err(format!(
                    "node UID ({}) does not match service account node ref claim ({})",
                    uid(&node),
                    node_ref.uid
                )));
            }
            Some(node_ref.clone())
        }
        (None, _) => None,
    };
    let jti = claims
        .get("jti")
        .and_then(Value::as_str)
        .filter(|j| !j.is_empty());
    Ok(ServiceAccountInfo {
        namespace: namespace.to_string(),
        name: sa_ref.name,
        uid: sa_ref.uid,
        pod: pod_ref,
        node,
        credential_id: jti.map(credential_id_for_jti),
        auto_generated_secret: false,
    })
}

/// Upstream `legacyValidator.Validate`: the claims must name a service account and its token
/// secret; with `lookup`, the secret must still hold exactly this token and the service
/// account must still exist with the claimed uid.
pub async fn validate_legacy(
    claims: &Map<String, Value>,
    token: &str,
    lookup: bool,
    getter: &dyn ObjectGetter,
) -> Result<ServiceAccountInfo, ClaimsError> {
    let text = |key: &str| {
        claims
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let subject = text("sub");
    if subject.is_empty() {
        return Err(err("sub claim is missing"));
    }
    let namespace = text("kubernetes.io/serviceaccount/namespace");
    if namespace.is_empty() {
        return Err(err("namespace claim is missing"));
    }
    let secret_name = text("kubernetes.io/serviceaccount/secret.name");
    if secret_name.is_empty() {
        return Err(err("secretName claim is missing"));
    }
    let sa_name = text("kubernetes.io/serviceaccount/service-account.name");
    if sa_name.is_empty() {
        return Err(err("serviceAccountName claim is missing"));
    }
    let sa_uid = text("kubernetes.io/serviceaccount/service-account.uid");
    if sa_uid.is_empty() {
        return Err(err("serviceAccountUID claim is missing"));
    }
    if split_username(&subject) != Some((namespace.as_str(), sa_name.as_str())) {
        return Err(err("sub claim is invalid"));
    }
    if lookup {
        let invalidated = || err("Token has been invalidated");
        let secret = getter
            .get(Kind::Secret, &namespace, &secret_name)
            .await
            .map_err(|_| invalidated())?;
        if secret
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|v| !v.is_null())
        {
            return Err(invalidated());
        }
        if secret
            .pointer(&format!(
                "/metadata/labels/{}",
                INVALID_SINCE_LABEL.replace('/', "~1")
            ))
            .and_then(Value::as_str)
            .is_some_and(|v| !v.is_empty())
        {
            track_legacy_token_use(&secret, &namespace, getter);
            super::metrics::inc(|m| &m.invalid_legacy_auto_token_uses);
            return Err(invalidated());
        }
        let stored = secret
            .pointer("/data/token")
            .and_then(Value::as_str)
            .and_then(|b64| {
                use base64::Engine;
                base64::engine::general_purpose::STANDARD.decode(b64).ok()
            })
            .unwrap_or_default();
        if stored != token.as_bytes() {
            return Err(err("Token does not match server's copy"));
        }
        let sa = getter
            .get(Kind::ServiceAccount, &namespace, &sa_name)
            .await
            .map_err(|e| err(e.to_string()))?;
        if sa
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|v| !v.is_null())
        {
            return Err(err(format!(
                "ServiceAccount {namespace}/{sa_name} has been deleted"
            )));
        }
        if uid(&sa) != sa_uid {
            return Err(err(format!(
                "ServiceAccount UID ({}) does not match claim ({sa_uid})",
                uid(&sa)
            )));
        }
        let auto_generated = sa
            .get("secrets")
            .and_then(Value::as_array)
            .is_some_and(|refs| {
                refs.iter()
                    .any(|r| r.get("name").and_then(Value::as_str) == Some(secret_name.as_str()))
            });
        track_legacy_token_use(&secret, &namespace, getter);
        return Ok(ServiceAccountInfo {
            namespace,
            name: sa_name,
            uid: sa_uid,
            auto_generated_secret: auto_generated,
            ..Default::default()
        });
    }
    Ok(ServiceAccountInfo {
        namespace,
        name: sa_name,
        uid: sa_uid,
        ..Default::default()
    })
}

#[cfg(test)]
pub(crate) mod testing {
    //! An in-memory [`ObjectGetter`] for the claim checks' unit tests (the server uses the
    //! informers; these tests exercise the rules, not the lookups).

    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};

    use apiserver::status::ApiError;
    use serde_json::Value;

    use super::{Kind, ObjectGetter};

    /// Objects by kind, namespace and name, and the legacy-token uses recorded.
    #[derive(Default)]
    pub struct Objects(
        pub Mutex<BTreeMap<(String, String, String), Arc<Value>>>,
        pub Mutex<Vec<(String, String, String)>>,
    );

    impl Objects {
        /// Adds an object.
        pub fn put(&self, kind: Kind, namespace: &str, obj: Value) {
            let name = obj["metadata"]["name"].as_str().unwrap().to_string();
            self.0.lock().unwrap().insert(
                (format!("{kind:?}"), namespace.to_string(), name),
                Arc::new(obj),
            );
        }

        /// Removes an object.
        pub fn remove(&self, kind: Kind, namespace: &str, name: &str) {
            self.0.lock().unwrap().remove(&(
                format!("{kind:?}"),
                namespace.to_string(),
                name.to_string(),
            ));
        }
    }

    #[async_trait::async_trait]
    impl ObjectGetter for Objects {
        async fn get(
            &self,
            kind: Kind,
            namespace: &str,
            name: &str,
        ) -> Result<Arc<Value>, ApiError> {
            let resource = match kind {
                Kind::ServiceAccount => "serviceaccounts",
                Kind::Secret => "secrets",
                Kind::Pod => "pods",
                Kind::Node => "nodes",
            };
            let namespace = if kind == Kind::Node { "" } else { namespace };
            self.0
                .lock()
                .unwrap()
                .get(&(format!("{kind:?}"), namespace.to_string(), name.to_string()))
                .cloned()
                .ok_or_else(|| ApiError::not_found("", resource, name))
        }

        fn mark_legacy_token_used(&self, namespace: &str, name: &str, day: &str) {
            self.1
                .lock()
                .unwrap()
                .push((namespace.into(), name.into(), day.into()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::Objects;
    use super::*;

    fn obj(name: &str, uid: &str) -> Value {
        json!({"metadata": {"name": name, "uid": uid}})
    }

    fn spec() -> TokenSpec {
        TokenSpec {
            namespace: "ns".into(),
            service_account: ObjectRef {
                name: "sa".into(),
                uid: "sa-uid".into(),
            },
            expiration_seconds: 3600,
            audiences: vec!["api".into()],
            ..Default::default()
        }
    }

    fn objects() -> Objects {
        let objects = Objects::default();
        objects.put(Kind::ServiceAccount, "ns", obj("sa", "sa-uid"));
        objects
    }

    fn as_map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn bound_claims_have_upstreams_shape() {
        let mut spec = spec();
        spec.pod = Some(ObjectRef {
            name: "p".into(),
            uid: "p-uid".into(),
        });
        spec.node = Some(ObjectRef {
            name: "n".into(),
            uid: "n-uid".into(),
        });
        spec.warn_after = 3607;
        let claims = bound_claims(&spec, "https://issuer", 1000, "id-1");
        assert_eq!(
            claims.to_string(),
            r#"{"aud":["api"],"exp":4600,"iat":1000,"iss":"https://issuer","jti":"id-1","kubernetes.io":{"namespace":"ns","node":{"name":"n","uid":"n-uid"},"pod":{"name":"p","uid":"p-uid"},"serviceaccount":{"name":"sa","uid":"sa-uid"},"warnafter":4607},"nbf":1000,"sub":"system:serviceaccount:ns:sa"}"#
        );
    }

    #[tokio::test]
    async fn valid_bound_token_gives_the_service_account_user() {
        let objects = objects();
        let mut spec = spec();
        spec.pod = Some(ObjectRef {
            name: "p".into(),
            uid: "p-uid".into(),
        });
        spec.node = Some(ObjectRef {
            name: "n".into(),
            uid: "n-uid".into(),
        });
        objects.put(Kind::Pod, "ns", obj("p", "p-uid"));
        let claims = as_map(bound_claims(&spec, "iss", 1000, "j"));
        let info = validate_bound(&claims, 1000, &objects).await.unwrap();
        let user = info.user_info();
        assert_eq!(user.name, "system:serviceaccount:ns:sa");
        assert_eq!(user.uid, "sa-uid");
        assert_eq!(
            user.groups,
            vec!["system:serviceaccounts", "system:serviceaccounts:ns"]
        );
        assert_eq!(user.extra[extra::POD_NAME], vec!["p"]);
        assert_eq!(user.extra[extra::POD_UID], vec!["p-uid"]);
        assert_eq!(user.extra[extra::NODE_NAME], vec!["n"]);
        assert_eq!(user.extra[extra::NODE_UID], vec!["n-uid"]);
        assert_eq!(user.extra[extra::CREDENTIAL_ID], vec!["JTI=j"]);
    }

    #[tokio::test]
    async fn expiry_and_not_before_allow_one_minute_of_skew() {
        let objects = objects();
        let claims = as_map(bound_claims(&spec(), "iss", 1000, "j"));
        assert!(validate_bound(&claims, 4600 + 60, &objects).await.is_ok());
        assert_eq!(
            validate_bound(&claims, 4600 + 61, &objects)
                .await
                .unwrap_err()
                .to_string(),
            "service account token has expired"
        );
        let mut early = claims.clone();
        early.insert("iat".into(), json!(900));
        assert!(validate_bound(&early, 1000 - 60, &objects).await.is_ok());
        assert_eq!(
            validate_bound(&early, 1000 - 61, &objects)
                .await
                .unwrap_err()
                .to_string(),
            "service account token is not valid yet"
        );
    }

    #[tokio::test]
    async fn bound_objects_must_exist_with_the_same_uid() {
        let objects = objects();
        let mut spec = spec();
        spec.pod = Some(ObjectRef {
            name: "p".into(),
            uid: "p-uid".into(),
        });
        let claims = as_map(bound_claims(&spec, "iss", 1000, "j"));
        assert_eq!(
            validate_bound(&claims, 1000, &objects).await.unwrap_err().0,
            "service account token has been invalidated"
        );
        objects.put(Kind::Pod, "ns", obj("p", "other"));
        assert_eq!(
            validate_bound(&claims, 1000, &objects).await.unwrap_err().0,
            "pod UID (other) does not match service account pod ref claim (p-uid)"
        );
        objects.put(Kind::Pod, "ns", obj("p", "p-uid"));
        assert!(validate_bound(&claims, 1000, &objects).await.is_ok());

        objects.put(Kind::ServiceAccount, "ns", obj("sa", "new"));
        assert_eq!(
            validate_bound(&claims, 1000, &objects).await.unwrap_err().0,
            "service account UID (new) does not match claim (sa-uid)"
        );
        objects.remove(Kind::ServiceAccount, "ns", "sa");
        assert_eq!(
            validate_bound(&claims, 1000, &objects).await.unwrap_err().0,
            "serviceaccounts \"sa\" not found"
        );
    }

    #[tokio::test]
    async fn node_bound_tokens_check_the_node() {
        let objects = objects();
        let mut spec = spec();
        spec.node = Some(ObjectRef {
            name: "n".into(),
            uid: "n-uid".into(),
        });
        let claims = as_map(bound_claims(&spec, "iss", 1000, "j"));
        assert_eq!(
            validate_bound(&claims, 1000, &objects).await.unwrap_err().0,
            "service account token has been invalidated"
        );
        objects.put(Kind::Node, "", obj("n", "x"));
        assert_eq!(
            validate_bound(&claims, 1000, &objects).await.unwrap_err().0,
            "node UID (x) does not match service account node ref claim (n-uid)"
        );
        objects.put(Kind::Node, "", obj("n", "n-uid"));
        let user = validate_bound(&claims, 1000, &objects)
            .await
            .unwrap()
            .user_info();
        assert_eq!(user.extra[extra::NODE_NAME], vec!["n"]);
        assert!(!user.extra.contains_key(extra::POD_NAME));
    }

    #[tokio::test]
    async fn deleted_objects_count_after_the_leeway() {
        let objects = objects();
        let mut spec = spec();
        spec.secret = Some(ObjectRef {
            name: "s".into(),
            uid: "s-uid".into(),
        });
        let claims = as_map(bound_claims(&spec, "iss", 1_700_000_000, "j"));
        objects.put(
            Kind::Secret,
            "ns",
            json!({"metadata": {"name": "s", "uid": "s-uid", "deletionTimestamp": "2023-11-14T22:13:20Z"}}),
        );
        // Deleted at 1_700_000_000: still valid within the minute, invalid after.
        assert!(
            validate_bound(&claims, 1_700_000_000 + 60, &objects)
                .await
                .is_ok()
        );
        assert_eq!(
            validate_bound(&claims, 1_700_000_000 + 61, &objects)
                .await
                .unwrap_err()
                .0,
            "service account token has been invalidated"
        );
    }

    fn secret(token: &str) -> Value {
        use base64::Engine;
        json!({"metadata": {"name": "sa-token", "uid": "s"}, "type": "kubernetes.io/service-account-token",
               "data": {"token": base64::engine::general_purpose::STANDARD.encode(token)}})
    }

    #[tokio::test]
    async fn legacy_tokens_need_their_secret_holding_them() {
        let objects = objects();
        let sa = ObjectRef {
            name: "sa".into(),
            uid: "sa-uid".into(),
        };
        let claims = as_map(legacy_claims("ns", &sa, "sa-token"));
        assert_eq!(
            validate_legacy(&claims, "tok", true, &objects)
                .await
                .unwrap_err()
                .0,
            "Token has been invalidated"
        );
        // Without lookup only the claims count.
        assert!(
            validate_legacy(&claims, "tok", false, &objects)
                .await
                .is_ok()
        );
        objects.put(Kind::Secret, "ns", secret("other"));
        assert_eq!(
            validate_legacy(&claims, "tok", true, &objects)
                .await
                .unwrap_err()
                .0,
            "Token does not match server's copy"
        );
        objects.put(Kind::Secret, "ns", secret("tok"));
        let info = validate_legacy(&claims, "tok", true, &objects)
            .await
            .unwrap();
        assert!(!info.auto_generated_secret);
        let user = info.user_info();
        assert_eq!(user.name, "system:serviceaccount:ns:sa");
        assert!(user.extra.is_empty());
        // The use is recorded once for today.
        let today = jiff::Timestamp::now().strftime("%Y-%m-%d").to_string();
        assert_eq!(
            objects.1.lock().unwrap().clone(),
            vec![("ns".to_string(), "sa-token".to_string(), today.clone())]
        );
        let mut labelled = secret("tok");
        labelled["metadata"]["labels"] = json!({LAST_USED_LABEL: today});
        objects.put(Kind::Secret, "ns", labelled);
        validate_legacy(&claims, "tok", true, &objects)
            .await
            .unwrap();
        assert_eq!(objects.1.lock().unwrap().len(), 1);
        // A secret the account lists was generated for it.
        objects.put(
            Kind::ServiceAccount,
            "ns",
            json!({"metadata": {"name": "sa", "uid": "sa-uid"}, "secrets": [{"name": "sa-token"}]}),
        );
        assert!(
            validate_legacy(&claims, "tok", true, &objects)
                .await
                .unwrap()
                .auto_generated_secret
        );
        objects.put(Kind::ServiceAccount, "ns", obj("sa", "new"));
        assert_eq!(
            validate_legacy(&claims, "tok", true, &objects)
                .await
                .unwrap_err()
                .0,
            "ServiceAccount UID (new) does not match claim (sa-uid)"
        );
        let mut bad = claims.clone();
        bad.insert("sub".into(), json!("system:serviceaccount:other:sa"));
        assert_eq!(
            validate_legacy(&bad, "tok", false, &objects)
                .await
                .unwrap_err()
                .0,
            "sub claim is invalid"
        );
        bad.remove("kubernetes.io/serviceaccount/secret.name");
        assert_eq!(
            validate_legacy(&bad, "tok", false, &objects)
                .await
                .unwrap_err()
                .0,
            "secretName claim is missing"
        );
    }

    #[test]
    fn usernames_split_as_upstream() {
        assert_eq!(
            split_username("system:serviceaccount:ns:sa"),
            Some(("ns", "sa"))
        );
        for bad in [
            "system:serviceaccount:ns",
            "system:serviceaccount::sa",
            "system:serviceaccount:ns:",
            "user",
            "system:serviceaccount:ns:a:b",
        ] {
            assert_eq!(split_username(bad), None, "{bad}");
        }
    }
}
