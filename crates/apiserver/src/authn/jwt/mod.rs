//! JWT (OIDC) token authentication (upstream `plugin/pkg/authenticator/token/oidc`): a
//! token whose unverified `iss` names this authenticator's issuer is verified (signature
//! with the issuer's keys, issuer, audience, expiry, not-before) and its claims mapped to a
//! user by the claim mappings (claims with prefixes, or CEL expressions), after the claim
//! validation rules and before the user validation rules. Tokens of other issuers get no
//! opinion, so the next authenticator can try them.

pub mod es512;
pub mod issuer;
pub mod keys;
pub mod metrics;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use kube_cel::cel;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::bearertoken::TokenAuthenticator;
use super::{AuthError, AuthResponse};
use crate::apis::apiserver::authentication::{CompiledJwtExpressions, JwtAuthenticator as Config};
use crate::request::UserInfo;
use crate::util::cel::string_list;
use issuer::IssuerKeys;
use keys::{ALLOWED_SIGNING_ALGS, CompactJws};

/// How far in the future `nbf` may be (go-oidc's leeway).
const NOT_BEFORE_LEEWAY_SECS: f64 = 300.0;

/// Authenticates JWTs of one issuer.
pub struct JwtAuthenticator {
    config: Config,
    compiled: CompiledJwtExpressions,
    signing_algs: Vec<String>,
    keys: Arc<IssuerKeys>,
}

impl std::fmt::Debug for JwtAuthenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtAuthenticator")
            .field("issuer", &self.config.issuer.url)
            .finish()
    }
}

impl JwtAuthenticator {
    /// An authenticator for `config` (validated and compiled again here) accepting tokens
    /// signed with `signing_algs` (empty: upstream's default, RS256 only); its key set
    /// fetches are recorded in the metrics under `apiserver_id`.
    pub fn new(
        config: &Config,
        signing_algs: &[String],
        apiserver_id: &str,
    ) -> Result<Self, String> {
        let (compiled, errs) = config.compile_and_validate("jwt", &[]);
        if !errs.is_empty() {
            return Err(errs.to_string());
        }
        let signing_algs = if signing_algs.is_empty() {
            vec!["RS256".to_string()]
        } else {
            signing_algs.to_vec()
        };
        if let Some(bad) = signing_algs
            .iter()
            .find(|a| !ALLOWED_SIGNING_ALGS.contains(&a.as_str()))
        {
            return Err(format!("oidc: unsupported signing alg: {bad:?}"));
        }
        let keys = Arc::new(IssuerKeys::new(
            &config.issuer.url,
            config.issuer.discovery_url.as_deref(),
            config.issuer.certificate_authority.as_bytes().to_vec(),
            apiserver_id,
        ));
        Ok(JwtAuthenticator {
            config: config.clone(),
            compiled,
            signing_algs,
            keys,
        })
    }

    /// Starts discovery (retried until it succeeds) and key refreshes, until `stop`.
    pub fn start(&self, stop: CancellationToken) {
        tokio::spawn(self.keys.clone().run(stop));
    }

    /// Whether the issuer's keys are known (the authenticator can verify tokens).
    pub fn initialized(&self) -> bool {
        self.keys.initialized()
    }

    /// Tries discovery once now (used before a reloaded configuration is swapped in).
    pub async fn discover(&self) -> Result<(), String> {
        self.keys.discover().await
    }

    /// The issuer URL.
    pub fn issuer(&self) -> &str {
        &self.config.issuer.url
    }

    /// Verifies `token` (go-oidc's `IDTokenVerifier.Verify`) and returns its claims.
    async fn verify(&self, token: &str) -> Result<Map<String, Value>, String> {
        let jws = CompactJws::parse(token).map_err(|e| format!("oidc: malformed jwt: {e}"))?;
        let claims = &jws.claims;
        let iss = claims.get("iss").and_then(Value::as_str).unwrap_or("");
        if iss != self.config.issuer.url {
            return Err(format!(
                "oidc: id token issued by a different provider, expected {:?} got {iss:?}",
                self.config.issuer.url
            ));
        }
        let aud: Vec<&str> = match claims.get("aud") {
            Some(Value::String(s)) => vec![s.as_str()],
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let audiences = &self.config.issuer.audiences;
        if !aud.iter().any(|a| audiences.iter().any(|want| want == a)) {
            return Err(if audiences.len() == 1 {
                format!("oidc: expected audience {:?} got {aud:?}", audiences[0])
            } else {
                let mut sorted = audiences.clone();
                sorted.sort();
                format!("oidc: expected audience in {sorted:?} got {aud:?}")
            });
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        let exp = claims.get("exp").and_then(Value::as_f64).unwrap_or(0.0);
        if exp < now {
            return Err(format!(
                "oidc: token is expired (Token Expiry: {})",
                go_time(exp)
            ));
        }
        if let Some(nbf) = claims.get("nbf").and_then(Value::as_f64)
            && now + NOT_BEFORE_LEEWAY_SECS < nbf
        {
            return Err(format!(
                "oidc: current time {} before the nbf (not before) time: {}",
                go_time(now),
                go_time(nbf)
            ));
        }
        let alg = jws.alg();
        if !self.signing_algs.iter().any(|a| a == alg) {
            return Err(format!(
                "oidc: id token signed with unsupported algorithm, expected {:?} got {alg:?}",
                self.signing_algs
            ));
        }
        // Verify with the keys held; on an unknown key id or a failed verification the
        // issuer may have rotated its keys: fetch them again once and retry.
        for attempt in 0..2 {
            let generation = self.keys.generation();
            let keys = self
                .keys
                .keys()
                .ok_or("oidc: authenticator not initialized")?;
            let kid = jws.kid();
            let verified = keys
                .iter()
                .filter(|k| kid.is_empty() || k.kid == kid)
                .any(|k| k.verify(alg, jws.signing_input.as_bytes(), &jws.signature));
            if verified {
                return Ok(jws.claims.clone());
            }
            if attempt == 0 {
                self.keys.refresh(generation).await?;
            }
        }
        Err("failed to verify signature: failed to verify id token signature".into())
    }

    fn string_claim(claims: &Map<String, Value>, name: &str) -> Result<String, String> {
        match claims.get(name) {
            None => Err("claim not present".into()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(format!(
                "json: cannot unmarshal {} into Go value of type string",
                go_json_type(other)
            )),
        }
    }

    fn username(&self, claims: &Map<String, Value>, claims_v: &Value) -> Result<String, String> {
        if let Some(expr) = &self.compiled.username {
            let what = "oidc: error evaluating username claim expression";
            return match expr.eval(&[("claims", claims_v)]) {
                Ok(cel::Value::String(s)) => Ok(s.to_string()),
                Ok(_) => Err(format!(
                    "{what}: username claim expression must return a string"
                )),
                Err(e) => Err(format!("{what}: {e}")),
            };
        }
        let mapping = &self.config.claim_mappings.username;
        let claim = &mapping.claim;
        let name = Self::string_claim(claims, claim)
            .map_err(|e| format!("oidc: parse username claims {claim:?}: {e}"))?;
        if claim == "email"
            && let Some(verified) = claims.get("email_verified")
        {
            match verified {
                Value::Bool(true) => {}
                Value::Bool(false) => return Err("oidc: email not verified".into()),
                other => {
                    return Err(format!(
                        "oidc: parse 'email_verified' claim: json: cannot unmarshal {} into Go value of type bool",
                        go_json_type(other)
                    ));
                }
            }
        }
        Ok(format!("{}{name}", mapping.prefix.as_deref().unwrap_or("")))
    }

    fn groups(&self, claims: &Map<String, Value>, claims_v: &Value) -> Result<Vec<String>, String> {
        let mapping = &self.config.claim_mappings.groups;
        if !mapping.claim.is_empty()
            && let Some(v) = claims.get(&mapping.claim)
        {
            let prefix = mapping.prefix.as_deref().unwrap_or("");
            let groups: Vec<String> = match v {
                Value::String(s) => vec![s.clone()],
                Value::Array(items) if items.iter().all(Value::is_string) => items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect(),
                other => {
                    return Err(format!(
                        "oidc: parse groups claim {:?}: json: cannot unmarshal {} into Go value of type string",
                        mapping.claim,
                        go_json_type(other)
                    ));
                }
            };
            return Ok(groups.into_iter().map(|g| format!("{prefix}{g}")).collect());
        }
        let Some(expr) = &self.compiled.groups else {
            return Ok(Vec::new());
        };
        let what = "oidc: error evaluating group claim expression";
        let v = expr
            .eval(&[("claims", claims_v)])
            .map_err(|e| format!("{what}: {e}"))?;
        string_list(&v).map_err(|e| format!("{what}: {e}"))
    }

    fn uid(&self, claims: &Map<String, Value>, claims_v: &Value) -> Result<String, String> {
        let mapping = &self.config.claim_mappings.uid;
        if !mapping.claim.is_empty() {
            return Self::string_claim(claims, &mapping.claim)
                .map_err(|e| format!("oidc: parse uid claim {:?}: {e}", mapping.claim));
        }
        let Some(expr) = &self.compiled.uid else {
            return Ok(String::new());
        };
        let what = "oidc: error evaluating uid claim expression";
        match expr.eval(&[("claims", claims_v)]) {
            Ok(cel::Value::String(s)) => Ok(s.to_string()),
            Ok(_) => Err(format!("{what}: uid claim expression must return a string")),
            Err(e) => Err(format!("{what}: {e}")),
        }
    }

    /// The user's extra: the token's credential ID (`JTI=<jti>`, when `jti` is a string,
    /// as upstream sets it since 1.32), then the CEL extra mappings.
    fn extra(&self, claims_v: &Value) -> Result<BTreeMap<String, Vec<String>>, String> {
        let mut extra = BTreeMap::new();
        if let Some(jti) = claims_v.get("jti").and_then(Value::as_str) {
            extra.insert(
                super::CREDENTIAL_ID_KEY.to_string(),
                vec![format!("JTI={jti}")],
            );
        }
        for (key, expr) in &self.compiled.extra {
            let v = expr
                .eval(&[("claims", claims_v)])
                .map_err(|e| e.to_string())?;
            let values = string_list(&v).map_err(|e| {
                format!(
                    "oidc: error evaluating extra claim expression: {}: {e}",
                    expr.text()
                )
            })?;
            if !values.is_empty() {
                extra.insert(key.clone(), values);
            }
        }
        Ok(extra)
    }

    /// Maps verified claims to the user (upstream's order: user, required claims, claim
    /// validation rules, user validation rules).
    fn user(&self, claims: &Map<String, Value>) -> Result<UserInfo, String> {
        let claims_v = Value::Object(claims.clone());
        let mut user = UserInfo {
            name: self.username(claims, &claims_v)?,
            ..Default::default()
        };
        user.groups = self.groups(claims, &claims_v)?;
        user.uid = self.uid(claims, &claims_v)?;
        user.extra = self.extra(&claims_v)?;
        for rule in &self.config.claim_validation_rules {
            if rule.claim.is_empty() {
                continue;
            }
            if !claims.contains_key(&rule.claim) {
                return Err(format!(
                    "oidc: required claim {} not present in ID token",
                    rule.claim
                ));
            }
            let value = Self::string_claim(claims, &rule.claim)
                .map_err(|e| format!("oidc: parse claim {}: {e}", rule.claim))?;
            if value != rule.required_value {
                return Err(format!(
                    "oidc: required claim {} value does not match. Got = {value}, want = {}",
                    rule.claim, rule.required_value
                ));
            }
        }
        let check = |rules: &[(crate::util::cel::Expression, String)],
                     var: &str,
                     value: &Value,
                     what: &str|
         -> Result<(), String> {
            for (expr, message) in rules {
                match expr.eval(&[(var, value)]) {
                    Ok(cel::Value::Bool(true)) => {}
                    Ok(cel::Value::Bool(false)) => {
                        return Err(format!(
                            "oidc: {what}: validation expression '{}' failed: {message}",
                            expr.text()
                        ));
                    }
                    Ok(_) => {
                        return Err(format!(
                            "oidc: {what}: validation expression must return a boolean"
                        ));
                    }
                    Err(e) => return Err(format!("oidc: {what}: {e}")),
                }
            }
            Ok(())
        };
        check(
            &self.compiled.claim_validation,
            "claims",
            &claims_v,
            "error evaluating claim validation expression",
        )?;
        if !self.compiled.user_validation.is_empty() {
            let user_v = json!({
                "username": user.name,
                "uid": user.uid,
                "groups": user.groups,
                "extra": user.extra,
            });
            check(
                &self.compiled.user_validation,
                "user",
                &user_v,
                "error evaluating user info validation rule",
            )?;
        }
        Ok(user)
    }
}

/// The unverified `iss` of a token, if it is a JWT at all.
fn untrusted_issuer(token: &str) -> Option<String> {
    let jws = CompactJws::parse(token).ok()?;
    let iss = jws.claims.get("iss")?.as_str()?;
    Some(if iss == "accounts.google.com" {
        "https://accounts.google.com".into()
    } else {
        iss.to_string()
    })
}

fn go_json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A Unix time as Go prints a `time.Time` in UTC.
fn go_time(secs: f64) -> String {
    match jiff::Timestamp::from_second(secs as i64) {
        Ok(t) => t.strftime("%Y-%m-%d %H:%M:%S +0000 UTC").to_string(),
        Err(_) => secs.to_string(),
    }
}

impl JwtAuthenticator {
    /// The user of a token whose `iss` names this authenticator's issuer.
    async fn authenticate_own_token(&self, token: &str) -> Result<UserInfo, AuthError> {
        if !self.keys.initialized() {
            return Err(AuthError::Other(
                "oidc: authenticator not initialized".into(),
            ));
        }
        let claims = self
            .verify(token)
            .await
            .map_err(|e| AuthError::Other(format!("oidc: verify token: {e}")))?;
        self.user(&claims).map_err(AuthError::Other)
    }
}

#[async_trait::async_trait]
impl TokenAuthenticator for JwtAuthenticator {
    async fn authenticate_token(
        &self,
        _req: &http::request::Parts,
        token: &str,
    ) -> Result<Option<AuthResponse>, AuthError> {
        if untrusted_issuer(token).as_deref() != Some(self.config.issuer.url.as_str()) {
            return Ok(None);
        }
        let start = std::time::Instant::now();
        let result = self.authenticate_own_token(token).await;
        metrics::record_latency(&self.config.issuer.url, result.is_ok(), start.elapsed());
        result.map(|user| Some(AuthResponse::new(user)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::apiserver::authentication::AuthenticationConfiguration;

    fn authenticator(yaml: &str) -> JwtAuthenticator {
        let config = AuthenticationConfiguration::parse(yaml, &[]).unwrap();
        JwtAuthenticator::new(&config.jwt[0], &[], "apiserver-test").unwrap()
    }

    fn claims(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    const HEAD: &str = "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n- issuer:\n    url: https://issuer.test\n    audiences: [k8s]\n";

    #[test]
    fn claim_mappings_with_prefixes() {
        let a = authenticator(&format!(
            "{HEAD}  claimMappings:\n    username:\n      claim: sub\n      prefix: 'oidc:'\n    groups:\n      claim: groups\n      prefix: 'g:'\n    uid:\n      claim: uid\n"
        ));
        let u = a
            .user(&claims(
                json!({"sub": "alice", "groups": ["dev", "ops"], "uid": "7"}),
            ))
            .unwrap();
        assert_eq!(u.name, "oidc:alice");
        assert_eq!(u.groups, vec!["g:dev", "g:ops"]);
        assert_eq!(u.uid, "7");
        let single = a
            .user(&claims(
                json!({"sub": "bob", "groups": "admins", "uid": "8"}),
            ))
            .unwrap();
        assert_eq!(single.groups, vec!["g:admins"]);
        assert_eq!(
            a.user(&claims(json!({"groups": []}))).unwrap_err(),
            "oidc: parse username claims \"sub\": claim not present"
        );
    }

    #[test]
    fn email_needs_verification() {
        let a = authenticator(&format!(
            "{HEAD}  claimMappings:\n    username:\n      claim: email\n      prefix: ''\n"
        ));
        assert_eq!(
            a.user(&claims(json!({"email": "a@b.c", "email_verified": true})))
                .unwrap()
                .name,
            "a@b.c"
        );
        assert_eq!(
            a.user(&claims(json!({"email": "a@b.c", "email_verified": false})))
                .unwrap_err(),
            "oidc: email not verified"
        );
    }

    #[test]
    fn cel_mappings_and_rules() {
        let a = authenticator(&format!(
            "{HEAD}  claimValidationRules:\n  - claim: tenant\n    requiredValue: acme\n  - expression: claims.level > 2\n    message: level too low\n  claimMappings:\n    username:\n      expression: \"'cel:' + claims.sub\"\n    groups:\n      expression: claims.roles.map(r, 'role:' + r)\n    extra:\n    - key: acme.io/level\n      valueExpression: string(claims.level)\n  userValidationRules:\n  - expression: \"!user.username.startsWith('cel:root')\"\n    message: no root\n"
        ));
        let ok = json!({"sub": "ann", "roles": ["a", "b"], "level": 3, "tenant": "acme"});
        let u = a.user(&claims(ok)).unwrap();
        assert_eq!(u.name, "cel:ann");
        assert_eq!(u.groups, vec!["role:a", "role:b"]);
        assert_eq!(u.extra["acme.io/level"], vec!["3"]);
        assert!(!u.extra.contains_key(crate::authn::CREDENTIAL_ID_KEY));
        let with_jti =
            json!({"sub": "ann", "roles": [], "level": 3, "tenant": "acme", "jti": "t-1"});
        assert_eq!(
            a.user(&claims(with_jti)).unwrap().extra[crate::authn::CREDENTIAL_ID_KEY],
            vec!["JTI=t-1"]
        );
        // A jti that is not a string is ignored, not an error.
        let numeric = json!({"sub": "ann", "roles": [], "level": 3, "tenant": "acme", "jti": 7});
        assert!(
            !a.user(&claims(numeric))
                .unwrap()
                .extra
                .contains_key(crate::authn::CREDENTIAL_ID_KEY)
        );
        let low = json!({"sub": "ann", "roles": [], "level": 1, "tenant": "acme"});
        assert_eq!(
            a.user(&claims(low)).unwrap_err(),
            "oidc: error evaluating claim validation expression: validation expression 'claims.level > 2' failed: level too low"
        );
        let other_tenant = json!({"sub": "ann", "roles": [], "level": 5, "tenant": "x"});
        assert_eq!(
            a.user(&claims(other_tenant)).unwrap_err(),
            "oidc: required claim tenant value does not match. Got = x, want = acme"
        );
        let root = json!({"sub": "root", "roles": [], "level": 5, "tenant": "acme"});
        assert!(a.user(&claims(root)).unwrap_err().contains("no root"));
    }

    #[test]
    fn other_issuers_have_no_opinion() {
        use base64::Engine;
        let b64 = |v: Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        let token = format!(
            "{}.{}.c2ln",
            b64(json!({"alg": "ES256"})),
            b64(json!({"iss": "https://other"}))
        );
        assert_eq!(untrusted_issuer(&token).as_deref(), Some("https://other"));
        assert_eq!(untrusted_issuer("opaque-token"), None);
    }
}
