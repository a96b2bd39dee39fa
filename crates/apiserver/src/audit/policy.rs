//! The audit policy (`audit.k8s.io/v1` `Policy`, from `--audit-policy-file`) and its rule
//! evaluator (upstream `pkg/audit/policy`).
//!
//! Rules are tried in order and the first match decides the level; no match means `None`.
//! Policy-level `omitStages` are added to every rule's, and a rule's `omitManagedFields`
//! overrides the policy default.

use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;

use super::AuditError;
use super::level::{Level, Stage};
use crate::request::{AuthenticatedUser, RequestInfo, RequestUser, UserInfo};

/// The audit.k8s.io API versions a policy file may declare. v1alpha1 and v1beta1 were removed
/// upstream in 1.24, but their `Policy` is identical, so old files keep working here.
const POLICY_API_VERSIONS: [&str; 3] = [
    "audit.k8s.io/v1",
    "audit.k8s.io/v1beta1",
    "audit.k8s.io/v1alpha1",
];

/// An audit policy.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    /// `audit.k8s.io/v1` (v1beta1, v1alpha1 accepted).
    #[serde(default)]
    pub api_version: String,
    /// `Policy`.
    #[serde(default)]
    pub kind: String,
    /// The rules, first match wins.
    #[serde(default)]
    pub rules: Vec<PolicyRule>,
    /// Stages never recorded, for any rule.
    #[serde(default)]
    pub omit_stages: Vec<Stage>,
    /// Default for rules that don't set `omitManagedFields`.
    #[serde(default)]
    pub omit_managed_fields: bool,
}

/// One rule of a [`Policy`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRule {
    /// The level of matching requests (required).
    pub level: Option<Level>,
    /// User names this rule applies to (empty = all).
    #[serde(default)]
    pub users: Vec<String>,
    /// Groups this rule applies to (a user in any of them matches; empty = all).
    #[serde(default)]
    pub user_groups: Vec<String>,
    /// Verbs this rule applies to (empty = all).
    #[serde(default)]
    pub verbs: Vec<String>,
    /// Resources this rule applies to (resource requests only).
    #[serde(default)]
    pub resources: Vec<GroupResources>,
    /// Namespaces this rule applies to; `""` matches cluster-scoped requests.
    #[serde(default)]
    pub namespaces: Vec<String>,
    /// Non-resource paths: `*`, exact, or a prefix ending in `*`.
    #[serde(default, rename = "nonResourceURLs")]
    pub non_resource_urls: Vec<String>,
    /// Stages not recorded for matching requests.
    #[serde(default)]
    pub omit_stages: Vec<Stage>,
    /// Overrides the policy's `omitManagedFields`.
    #[serde(default)]
    pub omit_managed_fields: Option<bool>,
}

/// Resources of one API group in a rule.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupResources {
    /// The API group, `""` for core.
    #[serde(default)]
    pub group: String,
    /// Resources: `pods`, `pods/log`, `*`, `*/log`, `pods/*`. Empty = all of the group.
    #[serde(default)]
    pub resources: Vec<String>,
    /// Object names (empty = all).
    #[serde(default)]
    pub resource_names: Vec<String>,
}

/// What the audit filter learns from the policy for one request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestAuditConfig {
    /// The level; `None` means the request is not audited.
    pub level: Level,
    /// Stages not to emit.
    pub omit_stages: Vec<Stage>,
    /// Whether managed fields are stripped from logged objects.
    pub omit_managed_fields: bool,
}

impl RequestAuditConfig {
    /// Whether events at `stage` are omitted.
    pub fn omits(&self, stage: Stage) -> bool {
        self.omit_stages.contains(&stage)
    }
}

/// The request attributes a policy is evaluated against (the subset of authorizer
/// attributes upstream uses).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuditAttributes {
    /// The authenticated user (before impersonation), if any.
    pub user: Option<Arc<UserInfo>>,
    /// The Kubernetes verb (lower-cased HTTP method for non-resource requests).
    pub verb: String,
    /// Whether this is a resource request.
    pub resource_request: bool,
    /// The URL path.
    pub path: String,
    /// Namespace.
    pub namespace: String,
    /// API group.
    pub api_group: String,
    /// API version.
    pub api_version: String,
    /// Resource.
    pub resource: String,
    /// Subresource.
    pub subresource: String,
    /// Object name.
    pub name: String,
}

impl AuditAttributes {
    /// The attributes of a request: the user from [`AuthenticatedUser`] (else
    /// [`RequestUser`]), the rest from [`RequestInfo`] (else method and path).
    pub fn from_parts(parts: &http::request::Parts) -> Self {
        let user = parts
            .extensions
            .get::<AuthenticatedUser>()
            .map(|u| u.0.clone())
            .or_else(|| parts.extensions.get::<RequestUser>().map(|u| u.0.clone()));
        let mut attrs = match parts.extensions.get::<RequestInfo>() {
            Some(info) => Self::from_request_info(info),
            None => AuditAttributes {
                verb: parts.method.as_str().to_ascii_lowercase(),
                path: parts.uri.path().to_string(),
                ..Default::default()
            },
        };
        attrs.user = user;
        attrs
    }

    /// The attributes described by `info` (without user).
    pub fn from_request_info(info: &RequestInfo) -> Self {
        AuditAttributes {
            user: None,
            verb: info.verb.clone(),
            resource_request: info.is_resource_request,
            path: info.path.clone(),
            namespace: info.namespace.clone(),
            api_group: info.api_group.clone(),
            api_version: info.api_version.clone(),
            resource: info.resource.clone(),
            subresource: info.subresource.clone(),
            name: info.name.clone(),
        }
    }
}

impl Policy {
    /// Reads and validates a policy file (YAML or JSON).
    pub fn load_file(path: impl AsRef<Path>) -> Result<Policy, AuditError> {
        let path = path.as_ref();
        let display = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|source| AuditError::ReadPolicy {
            path: display.clone(),
            source,
        })?;
        let policy = Self::from_bytes(&bytes).map_err(|message| AuditError::InvalidPolicy {
            path: display.clone(),
            message,
        })?;
        if policy.rules.is_empty() {
            // Upstream refuses an empty policy: it would silently audit nothing.
            return Err(AuditError::InvalidPolicy {
                path: display.clone(),
                message: format!("loaded illegal policy with 0 rules from file {display}"),
            });
        }
        Ok(policy)
    }

    /// Decodes and validates a policy from YAML or JSON text.
    pub fn from_bytes(bytes: &[u8]) -> Result<Policy, String> {
        let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))?;
        // Decode into a JSON value first (sigs.k8s.io/yaml behaviour), then into the types.
        let value: serde_json::Value = if text.trim_start().starts_with('{') {
            serde_json::from_str(text).map_err(|e| e.to_string())?
        } else {
            serde_saphyr::from_str(text).map_err(|e| e.to_string())?
        };
        if !value.is_object() {
            return Err("the policy must be an object".to_string());
        }
        let policy: Policy = serde_json::from_value(value).map_err(|e| e.to_string())?;
        if policy.kind != "Policy" {
            return Err(format!(
                "unexpected kind {:?}, expected \"Policy\"",
                policy.kind
            ));
        }
        if !POLICY_API_VERSIONS.contains(&policy.api_version.as_str()) {
            return Err(format!(
                "unsupported apiVersion {:?}, expected one of {}",
                policy.api_version,
                POLICY_API_VERSIONS.join(", ")
            ));
        }
        policy.validate()?;
        Ok(policy)
    }

    /// Checks the rules as upstream's policy validation does; all problems are reported.
    pub fn validate(&self) -> Result<(), String> {
        let mut errors = Vec::new();
        for (i, rule) in self.rules.iter().enumerate() {
            let at = format!("rules[{i}]");
            if rule.level.is_none() {
                errors.push(format!("{at}.level: Required value"));
            }
            if !rule.non_resource_urls.is_empty()
                && (!rule.resources.is_empty() || !rule.namespaces.is_empty())
            {
                errors.push(format!(
                    "{at}.nonResourceURLs: Invalid value: rules cannot apply to both regular resources and non-resource URLs"
                ));
            }
            for (j, url) in rule.non_resource_urls.iter().enumerate() {
                if url == "*" {
                    continue;
                }
                if !url.starts_with('/') {
                    errors.push(format!(
                        "{at}.nonResourceURLs[{j}]: Invalid value: {url:?}: non-resource URL rules must begin with a '/' character"
                    ));
                }
                if url.find('*').is_some_and(|pos| pos != url.len() - 1) {
                    errors.push(format!(
                        "{at}.nonResourceURLs[{j}]: Invalid value: {url:?}: non-resource URL wildcards '*' must be the final character of the rule"
                    ));
                }
            }
            for (j, gr) in rule.resources.iter().enumerate() {
                if !gr.resource_names.is_empty() && gr.resources.is_empty() {
                    errors.push(format!(
                        "{at}.resources[{j}].resourceNames: Invalid value: using resourceNames requires at least one resource"
                    ));
                }
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join(", "))
        }
    }
}

/// Evaluates a [`Policy`] for requests.
#[derive(Clone, Debug, Default)]
pub struct PolicyRuleEvaluator {
    policy: Policy,
}

impl PolicyRuleEvaluator {
    /// An evaluator for `policy`; policy-level `omitStages` are merged into every rule here.
    pub fn new(mut policy: Policy) -> Self {
        let policy_stages = policy.omit_stages.clone();
        for rule in &mut policy.rules {
            rule.omit_stages = union_stages(&policy_stages, &rule.omit_stages);
        }
        PolicyRuleEvaluator { policy }
    }

    /// The policy (with merged stages).
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The audit configuration of a request: the first matching rule's, or level `None`.
    pub fn evaluate(&self, attrs: &AuditAttributes) -> RequestAuditConfig {
        for rule in &self.policy.rules {
            if rule_matches(rule, attrs) {
                return RequestAuditConfig {
                    level: rule.level.unwrap_or_default(),
                    omit_stages: rule.omit_stages.clone(),
                    omit_managed_fields: rule
                        .omit_managed_fields
                        .unwrap_or(self.policy.omit_managed_fields),
                };
            }
        }
        // No rule: not audited, but the policy's omitted stages still apply (as upstream).
        RequestAuditConfig {
            level: Level::None,
            omit_stages: self.policy.omit_stages.clone(),
            omit_managed_fields: false,
        }
    }
}

/// The union of two stage lists, without duplicates, in first-seen order.
pub fn union_stages(a: &[Stage], b: &[Stage]) -> Vec<Stage> {
    let mut out = Vec::new();
    for s in a.iter().chain(b) {
        if !out.contains(s) {
            out.push(*s);
        }
    }
    out
}

fn has(list: &[String], value: &str) -> bool {
    list.iter().any(|v| v == value)
}

fn rule_matches(rule: &PolicyRule, attrs: &AuditAttributes) -> bool {
    if !rule.users.is_empty() {
        match &attrs.user {
            Some(user) if has(&rule.users, &user.name) => {}
            _ => return false,
        }
    }
    if !rule.user_groups.is_empty() {
        match &attrs.user {
            Some(user) if user.groups.iter().any(|g| has(&rule.user_groups, g)) => {}
            _ => return false,
        }
    }
    if !rule.verbs.is_empty() && !has(&rule.verbs, &attrs.verb) {
        return false;
    }
    if !rule.namespaces.is_empty() || !rule.resources.is_empty() {
        return rule_matches_resource(rule, attrs);
    }
    if !rule.non_resource_urls.is_empty() {
        return !attrs.resource_request
            && rule
                .non_resource_urls
                .iter()
                .any(|spec| path_matches(&attrs.path, spec));
    }
    true
}

fn path_matches(path: &str, spec: &str) -> bool {
    if spec == "*" || spec == path {
        return true;
    }
    match spec.strip_suffix('*') {
        Some(_) => path.starts_with(spec.trim_end_matches('*')),
        None => false,
    }
}

fn rule_matches_resource(rule: &PolicyRule, attrs: &AuditAttributes) -> bool {
    if !attrs.resource_request {
        return false;
    }
    // Cluster-scoped requests have namespace "", which a rule lists as "".
    if !rule.namespaces.is_empty() && !has(&rule.namespaces, &attrs.namespace) {
        return false;
    }
    if rule.resources.is_empty() {
        return true;
    }
    let resource = attrs.resource.as_str();
    let subresource = attrs.subresource.as_str();
    let combined = if subresource.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}/{subresource}")
    };
    for gr in &rule.resources {
        if gr.group != attrs.api_group {
            continue;
        }
        if gr.resources.is_empty() {
            return true;
        }
        if !gr.resource_names.is_empty() && !has(&gr.resource_names, &attrs.name) {
            continue;
        }
        for res in &gr.resources {
            if res == &combined || res == "*" {
                return true;
            }
            if let Some(sub) = res.strip_prefix("*/")
                && !subresource.is_empty()
                && sub == subresource
            {
                return true;
            }
            if let Some(parent) = res.strip_suffix("/*")
                && parent == resource
            {
                return true;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn tim() -> Arc<UserInfo> {
        Arc::new(UserInfo {
            name: "tim@k8s.io".into(),
            groups: vec!["humans".into(), "developers".into()],
            ..Default::default()
        })
    }

    fn attrs() -> HashMap<&'static str, AuditAttributes> {
        let pod = AuditAttributes {
            user: Some(tim()),
            verb: "get".into(),
            resource_request: true,
            path: "/api/v1/namespaces/default/pods/busybox".into(),
            namespace: "default".into(),
            api_group: "".into(),
            api_version: "v1".into(),
            resource: "pods".into(),
            subresource: "".into(),
            name: "busybox".into(),
        };
        HashMap::from([
            ("namespaced", pod.clone()),
            (
                "cluster",
                AuditAttributes {
                    user: Some(tim()),
                    verb: "get".into(),
                    resource_request: true,
                    path: "/apis/rbac.authorization.k8s.io/v1beta1/clusterroles/edit".into(),
                    api_group: "rbac.authorization.k8s.io".into(),
                    api_version: "v1beta1".into(),
                    resource: "clusterroles".into(),
                    name: "edit".into(),
                    ..Default::default()
                },
            ),
            (
                "nonResource",
                AuditAttributes {
                    user: Some(tim()),
                    verb: "get".into(),
                    path: "/logs/kubelet.log".into(),
                    ..Default::default()
                },
            ),
            (
                "subresource",
                AuditAttributes {
                    subresource: "log".into(),
                    ..pod.clone()
                },
            ),
            ("Unauthorized", AuditAttributes { user: None, ..pod }),
        ])
    }

    fn gr(group: &str, resources: &[&str], names: &[&str]) -> GroupResources {
        GroupResources {
            group: group.into(),
            resources: resources.iter().map(|s| s.to_string()).collect(),
            resource_names: names.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn rules() -> HashMap<&'static str, PolicyRule> {
        let rule = |level| PolicyRule {
            level: Some(level),
            ..Default::default()
        };
        use Level::*;
        HashMap::from([
            ("default", rule(Metadata)),
            (
                "create",
                PolicyRule {
                    verbs: strings(&["create"]),
                    ..rule(Request)
                },
            ),
            (
                "tims",
                PolicyRule {
                    users: strings(&["tim@k8s.io"]),
                    ..rule(Metadata)
                },
            ),
            (
                "humans",
                PolicyRule {
                    user_groups: strings(&["humans"]),
                    ..rule(Metadata)
                },
            ),
            (
                "serviceAccounts",
                PolicyRule {
                    user_groups: strings(&["system:serviceaccounts"]),
                    ..rule(Request)
                },
            ),
            (
                "getPods",
                PolicyRule {
                    verbs: strings(&["get"]),
                    resources: vec![gr("", &["pods"], &[])],
                    ..rule(RequestResponse)
                },
            ),
            (
                "getPodLogs",
                PolicyRule {
                    verbs: strings(&["get"]),
                    resources: vec![gr("", &["pods/log"], &[])],
                    ..rule(Request)
                },
            ),
            (
                "getPodWildcardMatching",
                PolicyRule {
                    verbs: strings(&["get"]),
                    resources: vec![gr("", &["*"], &[])],
                    ..rule(Request)
                },
            ),
            (
                "getPodResourceWildcardMatching",
                PolicyRule {
                    verbs: strings(&["get"]),
                    resources: vec![gr("", &["*/log"], &[])],
                    ..rule(Request)
                },
            ),
            (
                "getPodSubResourceWildcardMatching",
                PolicyRule {
                    verbs: strings(&["get"]),
                    resources: vec![gr("", &["pods/*"], &[])],
                    ..rule(Request)
                },
            ),
            (
                "getClusterRoles",
                PolicyRule {
                    verbs: strings(&["get"]),
                    resources: vec![gr("rbac.authorization.k8s.io", &["clusterroles"], &[])],
                    namespaces: strings(&[""]),
                    ..rule(RequestResponse)
                },
            ),
            (
                "getLogs",
                PolicyRule {
                    verbs: strings(&["get"]),
                    non_resource_urls: strings(&["/logs*"]),
                    ..rule(RequestResponse)
                },
            ),
            (
                "getMetrics",
                PolicyRule {
                    verbs: strings(&["get"]),
                    non_resource_urls: strings(&["/metrics"]),
                    ..rule(Request)
                },
            ),
            (
                "clusterRoleEdit",
                PolicyRule {
                    resources: vec![gr(
                        "rbac.authorization.k8s.io",
                        &["clusterroles"],
                        &["edit"],
                    )],
                    ..rule(Request)
                },
            ),
            (
                "omit RequestReceived",
                PolicyRule {
                    omit_stages: vec![Stage::RequestReceived],
                    ..rule(Request)
                },
            ),
            (
                "only audit panic",
                PolicyRule {
                    omit_stages: vec![
                        Stage::RequestReceived,
                        Stage::ResponseStarted,
                        Stage::ResponseComplete,
                    ],
                    ..rule(Request)
                },
            ),
        ])
    }

    fn same_stages(a: &[Stage], b: &[Stage]) -> bool {
        let a: std::collections::HashSet<_> = a.iter().collect();
        let b: std::collections::HashSet<_> = b.iter().collect();
        a == b
    }

    fn check(
        req: &str,
        level: Level,
        policy_stages: &[Stage],
        exp_stages: &[Stage],
        names: &[&str],
    ) {
        let all_rules = rules();
        let policy = Policy {
            omit_stages: policy_stages.to_vec(),
            rules: names.iter().map(|n| all_rules[n].clone()).collect(),
            ..Default::default()
        };
        let config = PolicyRuleEvaluator::new(policy).evaluate(&attrs()[req]);
        assert_eq!(config.level, level, "request:{req} rules:{names:?}");
        assert!(
            same_stages(&config.omit_stages, exp_stages),
            "request:{req} rules:{names:?}: expected {exp_stages:?}, got {:?}",
            config.omit_stages
        );
    }

    fn audit_level_table(stages: &[Stage]) {
        use Level::*;
        let t = |req, level, names: &[&str]| check(req, level, stages, stages, names);
        t("namespaced", Metadata, &["default"]);
        t("namespaced", None, &["create"]);
        t("namespaced", Metadata, &["tims"]);
        t("namespaced", Metadata, &["humans"]);
        t("namespaced", None, &["serviceAccounts"]);
        t("namespaced", RequestResponse, &["getPods"]);
        t("namespaced", None, &["getClusterRoles"]);
        t("namespaced", None, &["getLogs"]);
        t("namespaced", None, &["getMetrics"]);
        t(
            "namespaced",
            Metadata,
            &["getMetrics", "serviceAccounts", "default"],
        );
        t(
            "namespaced",
            RequestResponse,
            &["getMetrics", "getPods", "default"],
        );
        t("namespaced", RequestResponse, &["getPodLogs", "getPods"]);

        t("cluster", Metadata, &["default"]);
        t("cluster", None, &["create"]);
        t("cluster", Metadata, &["tims"]);
        t("cluster", Metadata, &["humans"]);
        t("cluster", None, &["serviceAccounts"]);
        t("cluster", None, &["getPods"]);
        t("cluster", RequestResponse, &["getClusterRoles"]);
        t("cluster", Request, &["clusterRoleEdit", "getClusterRoles"]);
        t("cluster", None, &["getLogs"]);
        t("cluster", None, &["getMetrics"]);
        t(
            "cluster",
            Metadata,
            &["getMetrics", "serviceAccounts", "default"],
        );
        t(
            "cluster",
            RequestResponse,
            &["getMetrics", "getClusterRoles", "default"],
        );
        t("cluster", None, &["getPodLogs", "getPods"]);

        t("nonResource", Metadata, &["default"]);
        t("nonResource", None, &["create"]);
        t("nonResource", Metadata, &["tims"]);
        t("nonResource", Metadata, &["humans"]);
        t("nonResource", None, &["serviceAccounts"]);
        t("nonResource", None, &["getPods"]);
        t("nonResource", None, &["getClusterRoles"]);
        t("nonResource", RequestResponse, &["getLogs"]);
        t("nonResource", None, &["getMetrics"]);
        t(
            "nonResource",
            Metadata,
            &["getMetrics", "serviceAccounts", "default"],
        );
        t(
            "nonResource",
            RequestResponse,
            &["getLogs", "getClusterRoles", "default"],
        );
        t("nonResource", None, &["getPodLogs", "getPods"]);

        t("subresource", Request, &["getPodLogs", "getPods"]);
        t("subresource", Request, &["getPodWildcardMatching"]);
        t("subresource", Request, &["getPodResourceWildcardMatching"]);
        t(
            "subresource",
            Request,
            &["getPodSubResourceWildcardMatching"],
        );

        t("Unauthorized", None, &["tims"]);
        t("Unauthorized", Metadata, &["tims", "default"]);
        t("Unauthorized", None, &["humans"]);
        t("Unauthorized", Metadata, &["humans", "default"]);
    }

    use Stage::{RequestReceived as RR, ResponseComplete as RC, ResponseStarted as RS};

    #[test]
    fn checker() {
        audit_level_table(&[]);
        let omit_rr = &["omit RequestReceived", "getPods", "default"];
        let panic_only = &["only audit panic", "getPods", "default"];
        for req in ["namespaced", "cluster", "nonResource"] {
            check(req, Level::Request, &[], &[RR], omit_rr);
            check(req, Level::Request, &[], &[RR, RS, RC], panic_only);
        }
    }

    #[test]
    fn checker_policy_omit_stages() {
        let ps = &[RR, RS];
        audit_level_table(ps);
        let omit_rr = &["omit RequestReceived", "getPods", "default"];
        let panic_only = &["only audit panic", "getPods", "default"];
        check("namespaced", Level::Request, ps, &[RR, RS], omit_rr);
        check("namespaced", Level::Request, ps, &[RR, RS, RC], panic_only);
        check("cluster", Level::Request, ps, &[RR, RS], omit_rr);
        check("cluster", Level::Request, ps, &[RR, RS, RC], panic_only);
        check(
            "nonResource",
            Level::Metadata,
            ps,
            &[RR, RS],
            &["default", "omit RequestReceived", "getPods"],
        );
        check("nonResource", Level::Request, ps, &[RR, RS, RC], panic_only);
    }

    #[test]
    fn union_of_stages() {
        let cases: &[(&[Stage], &[Stage], &[Stage])] = &[
            (&[], &[], &[]),
            (&[RR], &[], &[RR]),
            (&[RR], &[RR], &[RR]),
            (&[RR], &[RS], &[RR, RS]),
            (&[RR, RR], &[RR, RR], &[RR]),
            (&[RR, RS], &[Stage::Panic, RR], &[RR, RS, Stage::Panic]),
        ];
        for (a, b, exp) in cases {
            let got = union_stages(a, b);
            assert_eq!(got.len(), exp.len());
            assert!(same_stages(&got, exp));
        }
    }

    #[test]
    fn omit_managed_fields() {
        let attributes = AuditAttributes {
            verb: "get".into(),
            ..Default::default()
        };
        let rule = PolicyRule {
            level: Some(Level::RequestResponse),
            verbs: strings(&["get"]),
            ..Default::default()
        };
        for (global, rule_value, want) in [
            (false, Option::None, false),
            (true, Option::None, true),
            (true, Some(false), false),
            (false, Some(true), true),
        ] {
            let policy = Policy {
                omit_managed_fields: global,
                rules: vec![PolicyRule {
                    omit_managed_fields: rule_value,
                    ..rule.clone()
                }],
                ..Default::default()
            };
            let got = PolicyRuleEvaluator::new(policy).evaluate(&attributes);
            assert_eq!(got.omit_managed_fields, want, "{global} {rule_value:?}");
        }
    }

    #[test]
    fn parses_yaml_and_json_policies() {
        let yaml = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: None
    nonResourceURLs: ["/healthz*", "/version"]
  - level: RequestResponse
    resources:
      - group: ""
        resources: ["pods", "pods/log"]
        resourceNames: ["a"]
    namespaces: ["kube-system"]
    omitManagedFields: true
  - level: Metadata
"#;
        let p = Policy::from_bytes(yaml.as_bytes()).unwrap();
        assert_eq!(p.rules.len(), 3);
        assert_eq!(p.omit_stages, vec![RR]);
        assert_eq!(
            p.rules[1].resources[0].resources,
            strings(&["pods", "pods/log"])
        );
        assert_eq!(p.rules[1].omit_managed_fields, Some(true));

        let json = r#"{"apiVersion":"audit.k8s.io/v1beta1","kind":"Policy","rules":[{"level":"Metadata"}]}"#;
        let p = Policy::from_bytes(json.as_bytes()).unwrap();
        assert_eq!(p.rules[0].level, Some(Level::Metadata));
    }

    #[test]
    fn rejects_invalid_policies() {
        let bad = |text: &str, needle: &str| {
            let err = Policy::from_bytes(text.as_bytes()).unwrap_err();
            assert!(err.contains(needle), "{err:?} should contain {needle:?}");
        };
        bad(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Verbose\n",
            "unsupported audit level \"Verbose\"",
        );
        bad(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- users: [a]\n",
            "rules[0].level: Required value",
        );
        bad(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [Sometimes]\nrules:\n- level: None\n",
            "unsupported audit stage",
        );
        bad(
            "apiVersion: v1\nkind: Policy\nrules:\n- level: None\n",
            "unsupported apiVersion",
        );
        bad(
            "apiVersion: audit.k8s.io/v1\nkind: Pod\nrules:\n- level: None\n",
            "unexpected kind",
        );
        bad(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: [\"/a*b\"]\n",
            "must be the final character",
        );
        bad(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: [\"/a\"]\n  namespaces: [\"x\"]\n",
            "cannot apply to both",
        );
    }

    #[test]
    fn load_file_rejects_empty_rules() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.yaml");
        std::fs::write(&path, "apiVersion: audit.k8s.io/v1\nkind: Policy\n").unwrap();
        let err = Policy::load_file(&path).unwrap_err().to_string();
        assert!(err.contains("0 rules"), "{err}");
        let err = Policy::load_file(dir.path().join("missing")).unwrap_err();
        assert!(matches!(err, AuditError::ReadPolicy { .. }));
    }
}
