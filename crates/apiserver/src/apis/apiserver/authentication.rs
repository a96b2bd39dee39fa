//! `AuthenticationConfiguration` (`--authentication-config`): JWT authenticators with their
//! issuer, claim validation rules, claim mappings (claims with prefixes, or CEL expressions)
//! and user validation rules, validated as upstream's `ValidateAuthenticationConfiguration`.

use std::collections::HashSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::field::{FieldError, FieldErrors};
use super::{ConfigFileError, decode, read};
use crate::util::cel::Expression;

/// The kind.
pub const KIND: &str = "AuthenticationConfiguration";

/// The file's contents.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuthenticationConfiguration {
    /// `apiserver.config.k8s.io/v1` (or `v1beta1`, `v1alpha1`).
    #[serde(default)]
    pub api_version: String,
    /// `AuthenticationConfiguration`.
    #[serde(default)]
    pub kind: String,
    /// The JWT authenticators, tried in order.
    #[serde(default)]
    pub jwt: Vec<JwtAuthenticator>,
    /// Anonymous authentication (mutually exclusive with `--anonymous-auth`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anonymous: Option<AnonymousAuthConfig>,
}

/// `anonymous`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AnonymousAuthConfig {
    /// Whether anonymous requests are authenticated.
    #[serde(default)]
    pub enabled: bool,
    /// When set, only requests for these paths are.
    #[serde(default)]
    pub conditions: Vec<AnonymousAuthCondition>,
}

/// One `anonymous.conditions` entry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AnonymousAuthCondition {
    /// The exact path.
    pub path: String,
}

/// One `jwt` entry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JwtAuthenticator {
    /// The issuer.
    pub issuer: Issuer,
    /// Rules every token's claims must pass.
    #[serde(default)]
    pub claim_validation_rules: Vec<ClaimValidationRule>,
    /// How claims become the user.
    #[serde(default)]
    pub claim_mappings: ClaimMappings,
    /// Rules the resulting user must pass.
    #[serde(default)]
    pub user_validation_rules: Vec<UserValidationRule>,
}

/// `issuer`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Issuer {
    /// The issuer URL (`iss`), https.
    #[serde(default)]
    pub url: String,
    /// Where the discovery document is, if not under `url`.
    #[serde(
        default,
        rename = "discoveryURL",
        skip_serializing_if = "Option::is_none"
    )]
    pub discovery_url: Option<String>,
    /// PEM CA bundle to verify the issuer's serving certificate.
    #[serde(default)]
    pub certificate_authority: String,
    /// Accepted `aud` values.
    #[serde(default)]
    pub audiences: Vec<String>,
    /// `MatchAny` (required with several audiences).
    #[serde(default)]
    pub audience_match_policy: String,
    /// The egress selector (not supported here; accepted when empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub egress_selector_type: String,
}

/// One `claimValidationRules` entry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClaimValidationRule {
    /// A claim that must be present with `required_value`.
    #[serde(default)]
    pub claim: String,
    /// The value the claim must have.
    #[serde(default)]
    pub required_value: String,
    /// A CEL expression on `claims` that must be true.
    #[serde(default)]
    pub expression: String,
    /// The message when the expression is false.
    #[serde(default)]
    pub message: String,
}

/// `claimMappings`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClaimMappings {
    /// The user name.
    #[serde(default)]
    pub username: PrefixedClaimOrExpression,
    /// The groups.
    #[serde(default)]
    pub groups: PrefixedClaimOrExpression,
    /// The uid.
    #[serde(default)]
    pub uid: ClaimOrExpression,
    /// Extra attributes.
    #[serde(default)]
    pub extra: Vec<ExtraMapping>,
}

/// A claim with a prefix, or an expression.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PrefixedClaimOrExpression {
    /// The claim.
    #[serde(default)]
    pub claim: String,
    /// The prefix (required with `claim`; may be empty).
    #[serde(default)]
    pub prefix: Option<String>,
    /// A CEL expression on `claims`.
    #[serde(default)]
    pub expression: String,
}

/// A claim or an expression.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClaimOrExpression {
    /// The claim.
    #[serde(default)]
    pub claim: String,
    /// A CEL expression on `claims`.
    #[serde(default)]
    pub expression: String,
}

/// One `claimMappings.extra` entry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExtraMapping {
    /// The extra key (a domain-prefixed path).
    #[serde(default)]
    pub key: String,
    /// A CEL expression on `claims` giving a string or a list of strings.
    #[serde(default)]
    pub value_expression: String,
}

/// One `userValidationRules` entry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UserValidationRule {
    /// A CEL expression on `user` that must be true.
    #[serde(default)]
    pub expression: String,
    /// The message when it is false.
    #[serde(default)]
    pub message: String,
}

/// The CEL expressions of one JWT authenticator, compiled.
#[derive(Clone, Debug, Default)]
pub struct CompiledJwtExpressions {
    /// `claimMappings.username.expression`.
    pub username: Option<Expression>,
    /// `claimMappings.groups.expression`.
    pub groups: Option<Expression>,
    /// `claimMappings.uid.expression`.
    pub uid: Option<Expression>,
    /// `claimMappings.extra`: key and expression.
    pub extra: Vec<(String, Expression)>,
    /// `claimValidationRules` with an expression: expression and message.
    pub claim_validation: Vec<(Expression, String)>,
    /// `userValidationRules`: expression and message.
    pub user_validation: Vec<(Expression, String)>,
}

const VERSIONS: &[&str] = &["v1", "v1beta1", "v1alpha1"];

impl AuthenticationConfiguration {
    /// Reads, decodes and validates the file at `path`. `disallowed_issuers` are the
    /// service-account issuers, which a JWT authenticator may not claim.
    pub fn load(path: &Path, disallowed_issuers: &[String]) -> Result<Self, ConfigFileError> {
        let data = read(path)?;
        Self::parse(&data, disallowed_issuers)
    }

    /// Decodes and validates `data`.
    pub fn parse(data: &str, disallowed_issuers: &[String]) -> Result<Self, ConfigFileError> {
        let config: AuthenticationConfiguration = decode(data, KIND, VERSIONS)?;
        let errors = config.validate(disallowed_issuers);
        if !errors.is_empty() {
            return Err(ConfigFileError::Invalid(errors));
        }
        Ok(config)
    }

    /// Upstream's validation.
    pub fn validate(&self, disallowed_issuers: &[String]) -> FieldErrors {
        let mut errs = FieldErrors::default();
        let mut seen = HashSet::new();
        for (i, jwt) in self.jwt.iter().enumerate() {
            let path = format!("jwt[{i}]");
            let (_, jwt_errs) = jwt.compile_and_validate(&path, disallowed_issuers);
            errs.0.extend(jwt_errs.0);
            if !jwt.issuer.url.is_empty() && !seen.insert(jwt.issuer.url.clone()) {
                errs.push(FieldError::duplicate(
                    &format!("{path}.issuer.url"),
                    &jwt.issuer.url,
                ));
            }
        }
        if let Some(anonymous) = &self.anonymous {
            if !anonymous.enabled && !anonymous.conditions.is_empty() {
                errs.push(FieldError::invalid(
                    "anonymous.conditions",
                    "",
                    "enabled should be set to true when conditions are defined",
                ));
            }
            let mut paths = HashSet::new();
            for (i, c) in anonymous.conditions.iter().enumerate() {
                if !paths.insert(c.path.as_str()) {
                    errs.push(FieldError::duplicate(
                        &format!("anonymous.conditions[{i}].path"),
                        &c.path,
                    ));
                }
            }
        }
        errs
    }
}

/// Checks an issuer or discovery URL as upstream's `validateURL`.
fn validate_url(url: &str, disallowed: &[String], path: &str, errs: &mut FieldErrors) {
    if disallowed.iter().any(|d| d == url) {
        let mut list = disallowed.to_vec();
        list.sort();
        errs.push(FieldError::invalid(
            path,
            url,
            &format!(
                "URL must not overlap with disallowed issuers: [{}]",
                list.join(" ")
            ),
        ));
    }
    // A fragment is not part of an http::Uri: look for it before parsing.
    let (url_only, fragment) = match url.split_once('#') {
        Some((u, f)) => (u, f),
        None => (url, ""),
    };
    let parsed: http::Uri = match url_only.parse() {
        Ok(u) => u,
        Err(e) => {
            errs.push(FieldError::invalid(path, url, &e.to_string()));
            return;
        }
    };
    if parsed.scheme_str() != Some("https") {
        errs.push(FieldError::invalid(path, url, "URL scheme must be https"));
    }
    if parsed.authority().is_some_and(|a| a.as_str().contains('@')) {
        errs.push(FieldError::invalid(
            path,
            url,
            "URL must not contain a username or password",
        ));
    }
    if parsed.query().is_some_and(|q| !q.is_empty()) {
        errs.push(FieldError::invalid(
            path,
            url,
            "URL must not contain a query",
        ));
    }
    if !fragment.is_empty() {
        errs.push(FieldError::invalid(
            path,
            url,
            "URL must not contain a fragment",
        ));
    }
}

fn compile(text: &str, variable: &str, path: &str, errs: &mut FieldErrors) -> Option<Expression> {
    match Expression::compile(text, &[variable]) {
        Ok(e) => Some(e),
        Err(detail) => {
            errs.push(FieldError::invalid(path, text, &detail));
            None
        }
    }
}

/// Whether an extra key is a lower-case, domain-prefixed path outside the reserved domains.
fn validate_extra_key(key: &str, path: &str, errs: &mut FieldErrors) {
    let Some((domain, rest)) = key.split_once('/') else {
        errs.push(FieldError::invalid(
            path,
            key,
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        ));
        return;
    };
    if domain.is_empty()
        || rest.is_empty()
        || !domain.contains('.')
        || !domain
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
    {
        errs.push(FieldError::invalid(
            path,
            key,
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        ));
        return;
    }
    let d = domain.to_ascii_lowercase();
    for reserved in ["kubernetes.io", "k8s.io"] {
        if d == reserved || d.ends_with(&format!(".{reserved}")) {
            errs.push(FieldError::invalid(
                path,
                key,
                "k8s.io, kubernetes.io and their subdomains are reserved for Kubernetes use",
            ));
        }
    }
    if key.to_lowercase() != key {
        errs.push(FieldError::invalid(path, key, "key must be lowercase"));
    }
}

impl JwtAuthenticator {
    /// Validates this authenticator (at `path`, e.g. `jwt[0]`) and compiles its
    /// expressions (upstream `CompileAndValidateJWTAuthenticator`).
    pub fn compile_and_validate(
        &self,
        path: &str,
        disallowed_issuers: &[String],
    ) -> (CompiledJwtExpressions, FieldErrors) {
        let mut errs = FieldErrors::default();
        let mut out = CompiledJwtExpressions::default();
        let issuer = &self.issuer;
        let ipath = format!("{path}.issuer");
        if issuer.url.is_empty() {
            errs.push(FieldError::required(
                &format!("{ipath}.url"),
                "URL is required",
            ));
        } else {
            validate_url(
                &issuer.url,
                disallowed_issuers,
                &format!("{ipath}.url"),
                &mut errs,
            );
        }
        if let Some(discovery) = &issuer.discovery_url
            && !discovery.is_empty()
        {
            let dpath = format!("{ipath}.discoveryURL");
            if discovery.trim_end_matches('/') == issuer.url.trim_end_matches('/') {
                errs.push(FieldError::invalid(
                    &dpath,
                    discovery,
                    "discoveryURL must be different from URL",
                ));
            }
            validate_url(discovery, &[], &dpath, &mut errs);
        }
        let apath = format!("{ipath}.audiences");
        if issuer.audiences.is_empty() {
            errs.push(FieldError::required(
                &apath,
                &format!("at least one {apath} is required"),
            ));
        }
        let mut auds = HashSet::new();
        for (i, a) in issuer.audiences.iter().enumerate() {
            if a.is_empty() {
                errs.push(FieldError::required(
                    &format!("{apath}[{i}]"),
                    "audience can't be empty",
                ));
            }
            if !auds.insert(a.as_str()) {
                errs.push(FieldError::duplicate(&format!("{apath}[{i}]"), a));
            }
        }
        let ppath = format!("{ipath}.audienceMatchPolicy");
        if issuer.audiences.len() > 1 && issuer.audience_match_policy != "MatchAny" {
            errs.push(FieldError::invalid(
                &ppath,
                &issuer.audience_match_policy,
                "audienceMatchPolicy must be MatchAny for multiple audiences",
            ));
        }
        if issuer.audiences.len() == 1
            && !matches!(issuer.audience_match_policy.as_str(), "" | "MatchAny")
        {
            errs.push(FieldError::invalid(
                &ppath,
                &issuer.audience_match_policy,
                "audienceMatchPolicy must be empty or MatchAny for single audience",
            ));
        }
        if !issuer.certificate_authority.is_empty()
            && let Err(e) =
                crate::util::webhook::tls::roots_from_pem(issuer.certificate_authority.as_bytes())
        {
            errs.push(FieldError::invalid(
                &format!("{ipath}.certificateAuthority"),
                "<omitted>",
                &e,
            ));
        }
        if !issuer.egress_selector_type.is_empty() {
            errs.push(FieldError::not_supported(
                &format!("{ipath}.egressSelectorType"),
                &issuer.egress_selector_type,
                &[],
            ));
        }

        let mut claims_seen = HashSet::new();
        let mut expressions_seen = HashSet::new();
        for (i, rule) in self.claim_validation_rules.iter().enumerate() {
            let rpath = format!("{path}.claimValidationRules[{i}]");
            match (rule.claim.is_empty(), rule.expression.is_empty()) {
                (false, false) => errs.push(FieldError::invalid(
                    &rpath,
                    &rule.claim,
                    "claim and expression can't both be set",
                )),
                (true, true) => errs.push(FieldError::required(
                    &rpath,
                    "claim or expression is required",
                )),
                (false, true) => {
                    if !claims_seen.insert(rule.claim.as_str()) {
                        errs.push(FieldError::duplicate(
                            &format!("{rpath}.claim"),
                            &rule.claim,
                        ));
                    }
                    if !rule.message.is_empty() {
                        errs.push(FieldError::invalid(
                            &format!("{rpath}.message"),
                            &rule.message,
                            "message can't be set when claim is set",
                        ));
                    }
                }
                (true, false) => {
                    if !rule.required_value.is_empty() {
                        errs.push(FieldError::invalid(
                            &format!("{rpath}.requiredValue"),
                            &rule.required_value,
                            "requiredValue can't be set when expression is set",
                        ));
                    }
                    if !expressions_seen.insert(rule.expression.as_str()) {
                        errs.push(FieldError::duplicate(
                            &format!("{rpath}.expression"),
                            &rule.expression,
                        ));
                        continue;
                    }
                    if let Some(e) = compile(
                        &rule.expression,
                        "claims",
                        &format!("{rpath}.expression"),
                        &mut errs,
                    ) {
                        out.claim_validation.push((e, rule.message.clone()));
                    }
                }
            }
        }

        let mpath = format!("{path}.claimMappings");
        let username = &self.claim_mappings.username;
        let upath = format!("{mpath}.username");
        match (username.claim.is_empty(), username.expression.is_empty()) {
            (false, false) => errs.push(FieldError::invalid(
                &upath,
                "",
                "claim and expression can't both be set",
            )),
            (true, true) => errs.push(FieldError::required(
                &upath,
                "claim or expression is required",
            )),
            (false, true) => {
                if username.prefix.is_none() {
                    errs.push(FieldError::required(
                        &format!("{upath}.prefix"),
                        "prefix is required when claim is set. It can be set to an empty string to disable prefixing",
                    ));
                }
            }
            (true, false) => {
                if let Some(p) = &username.prefix {
                    errs.push(FieldError::invalid(
                        &format!("{upath}.prefix"),
                        p,
                        "prefix can't be set when expression is set",
                    ));
                }
                out.username = compile(
                    &username.expression,
                    "claims",
                    &format!("{upath}.expression"),
                    &mut errs,
                );
            }
        }
        let groups = &self.claim_mappings.groups;
        let gpath = format!("{mpath}.groups");
        match (groups.claim.is_empty(), groups.expression.is_empty()) {
            (false, false) => errs.push(FieldError::invalid(
                &gpath,
                "",
                "claim and expression can't both be set",
            )),
            (false, true) => {
                if groups.prefix.is_none() {
                    errs.push(FieldError::required(
                        &format!("{gpath}.prefix"),
                        "prefix is required when claim is set. It can be set to an empty string to disable prefixing",
                    ));
                }
            }
            (true, false) => {
                if let Some(p) = &groups.prefix {
                    errs.push(FieldError::invalid(
                        &format!("{gpath}.prefix"),
                        p,
                        "prefix can't be set when expression is set",
                    ));
                }
                out.groups = compile(
                    &groups.expression,
                    "claims",
                    &format!("{gpath}.expression"),
                    &mut errs,
                );
            }
            (true, true) => {}
        }
        let uid = &self.claim_mappings.uid;
        let uidpath = format!("{mpath}.uid");
        match (uid.claim.is_empty(), uid.expression.is_empty()) {
            (false, false) => errs.push(FieldError::invalid(
                &uidpath,
                "",
                "claim and expression can't both be set",
            )),
            (true, false) => {
                out.uid = compile(
                    &uid.expression,
                    "claims",
                    &format!("{uidpath}.expression"),
                    &mut errs,
                );
            }
            _ => {}
        }
        let mut keys = HashSet::new();
        for (i, extra) in self.claim_mappings.extra.iter().enumerate() {
            let epath = format!("{mpath}.extra[{i}]");
            if extra.key.is_empty() {
                errs.push(FieldError::required(&format!("{epath}.key"), ""));
            } else {
                validate_extra_key(&extra.key, &format!("{epath}.key"), &mut errs);
            }
            if !keys.insert(extra.key.as_str()) {
                errs.push(FieldError::duplicate(&format!("{epath}.key"), &extra.key));
                continue;
            }
            if extra.value_expression.is_empty() {
                errs.push(FieldError::required(
                    &format!("{epath}.valueExpression"),
                    "valueExpression is required",
                ));
            } else if let Some(e) = compile(
                &extra.value_expression,
                "claims",
                &format!("{epath}.valueExpression"),
                &mut errs,
            ) {
                out.extra.push((extra.key.clone(), e));
            }
        }
        // Upstream: a user name from claims.email must be checked against email_verified.
        if let Some(u) = &out.username
            && u.mentions("claims", "email")
        {
            let verified = u.mentions("claims", "email_verified")
                || out
                    .extra
                    .iter()
                    .any(|(_, e)| e.mentions("claims", "email_verified"))
                || out
                    .claim_validation
                    .iter()
                    .any(|(e, _)| e.mentions("claims", "email_verified"));
            if !verified {
                errs.push(FieldError::invalid(
                    &format!("{upath}.expression"),
                    u.text(),
                    "claims.email_verified must be used in claimMappings.username.expression or claimMappings.extra[*].valueExpression or claimValidationRules[*].expression when claims.email is used in claimMappings.username.expression",
                ));
            }
        }
        let mut user_expressions = HashSet::new();
        for (i, rule) in self.user_validation_rules.iter().enumerate() {
            let rpath = format!("{path}.userValidationRules[{i}]");
            if rule.expression.is_empty() {
                errs.push(FieldError::required(
                    &format!("{rpath}.expression"),
                    "expression is required",
                ));
            } else if !user_expressions.insert(rule.expression.as_str()) {
                errs.push(FieldError::duplicate(
                    &format!("{rpath}.expression"),
                    &rule.expression,
                ));
            } else if let Some(e) = compile(
                &rule.expression,
                "user",
                &format!("{rpath}.expression"),
                &mut errs,
            ) {
                out.user_validation.push((e, rule.message.clone()));
            }
        }
        (out, errs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<AuthenticationConfiguration, String> {
        AuthenticationConfiguration::parse(text, &["https://kubernetes.default.svc".into()])
            .map_err(|e| e.to_string())
    }

    const GOOD: &str = r#"
apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: https://issuer.example.com
    audiences: [a, b]
    audienceMatchPolicy: MatchAny
  claimValidationRules:
  - claim: hd
    requiredValue: example.com
  - expression: "claims.exp - claims.iat <= 86400"
    message: too long
  claimMappings:
    username:
      expression: "'oidc:' + claims.sub"
    groups:
      claim: groups
      prefix: "oidc:"
    extra:
    - key: example.com/team
      valueExpression: claims.team
  userValidationRules:
  - expression: "!user.username.startsWith('system:')"
    message: no system users
"#;

    #[test]
    fn a_full_configuration_loads() {
        let config = parse(GOOD).unwrap();
        assert_eq!(config.jwt.len(), 1);
        let (compiled, errs) = config.jwt[0].compile_and_validate("jwt[0]", &[]);
        assert!(errs.is_empty());
        assert!(compiled.username.is_some());
        assert_eq!(compiled.claim_validation.len(), 1);
        assert_eq!(compiled.user_validation.len(), 1);
        assert_eq!(compiled.extra.len(), 1);
    }

    #[test]
    fn errors_have_upstream_paths_and_texts() {
        let bad = r#"
apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: http://issuer.example.com
    audiences: [a, b]
  claimMappings:
    username:
      claim: sub
"#;
        assert_eq!(
            parse(bad).unwrap_err(),
            "[jwt[0].issuer.url: Invalid value: \"http://issuer.example.com\": URL scheme must be https, jwt[0].issuer.audienceMatchPolicy: Invalid value: \"\": audienceMatchPolicy must be MatchAny for multiple audiences, jwt[0].claimMappings.username.prefix: Required value: prefix is required when claim is set. It can be set to an empty string to disable prefixing]"
        );
        let cel = r#"
apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: https://kubernetes.default.svc
    audiences: [a]
  claimMappings:
    username:
      expression: "claims.email"
    extra:
    - key: Example.com/x
      valueExpression: "claims.("
"#;
        let err = parse(cel).unwrap_err();
        assert!(
            err.contains("URL must not overlap with disallowed issuers"),
            "{err}"
        );
        assert!(err.contains("claims.email_verified must be used"), "{err}");
        assert!(err.contains("key must be lowercase"), "{err}");
        assert!(
            err.contains("jwt[0].claimMappings.extra[0].valueExpression: Invalid value: \"claims.(\": compilation failed"),
            "{err}"
        );
    }

    #[test]
    fn decoding_is_strict() {
        let unknown = "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n- issuer:\n    url: https://x\n    audiences: [a]\n    bogus: 1\n  claimMappings:\n    username:\n      claim: sub\n      prefix: ''\n";
        let err = parse(unknown).unwrap_err();
        assert!(err.starts_with("strict decoding error: "), "{err}");
        assert!(err.contains("bogus"), "{err}");
        let wrong_kind =
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\n";
        assert!(parse(wrong_kind).unwrap_err().contains("no kind"));
        assert!(parse("jwt: [").is_err());
    }
}
