//! RBAC policy rules and how one matches a request (upstream's `rbac.RuleAllows` and the
//! `pkg/apis/rbac/v1` evaluation helpers), plus the compact text escalation errors print.

use apiserver::authz::Attributes;
use apiserver::filters::authorization::go_quote;
use serde::{Deserialize, Deserializer, Serialize};

/// Matches every verb, API group, resource or non-resource URL.
pub const ALL: &str = "*";

/// One rule of a Role or ClusterRole (`rbac/v1.PolicyRule`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PolicyRule {
    /// Verbs (`get`, `list`, … or `*`).
    #[serde(deserialize_with = "null_as_empty")]
    pub verbs: Vec<String>,
    /// API groups (`""` is core, `*` all).
    #[serde(
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub api_groups: Vec<String>,
    /// Resources, `resource/subresource`, `*/subresource` or `*`.
    #[serde(
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub resources: Vec<String>,
    /// Object names; empty means every object.
    #[serde(
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub resource_names: Vec<String>,
    /// Non-resource URL paths, a trailing `*` matching any suffix.
    #[serde(
        rename = "nonResourceURLs",
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub non_resource_urls: Vec<String>,
}

impl From<&k8s_openapi::api::rbac::v1::PolicyRule> for PolicyRule {
    fn from(rule: &k8s_openapi::api::rbac::v1::PolicyRule) -> Self {
        let list = |items: &Option<Vec<String>>| items.clone().unwrap_or_default();
        PolicyRule {
            verbs: rule.verbs.clone(),
            api_groups: list(&rule.api_groups),
            resources: list(&rule.resources),
            resource_names: list(&rule.resource_names),
            non_resource_urls: list(&rule.non_resource_urls),
        }
    }
}

impl From<PolicyRule> for k8s_openapi::api::rbac::v1::PolicyRule {
    fn from(rule: PolicyRule) -> Self {
        let list = |items: Vec<String>| (!items.is_empty()).then_some(items);
        k8s_openapi::api::rbac::v1::PolicyRule {
            verbs: rule.verbs,
            api_groups: list(rule.api_groups),
            resources: list(rule.resources),
            resource_names: list(rule.resource_names),
            non_resource_urls: list(rule.non_resource_urls),
        }
    }
}

/// A JSON `null` list reads as an empty one (Go's nil slice).
fn null_as_empty<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(Option::<Vec<String>>::deserialize(d)?.unwrap_or_default())
}

fn contains(set: &[String], wanted: &str) -> bool {
    set.iter().any(|s| s == wanted)
}

impl PolicyRule {
    /// A rule of `verbs` on `resources` in `api_groups` (for tests and fixed policies).
    pub fn resource(verbs: &[&str], api_groups: &[&str], resources: &[&str]) -> Self {
        let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        PolicyRule {
            verbs: owned(verbs),
            api_groups: owned(api_groups),
            resources: owned(resources),
            ..Default::default()
        }
    }

    /// A rule of `verbs` on non-resource `urls`.
    pub fn non_resource(verbs: &[&str], urls: &[&str]) -> Self {
        let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        PolicyRule {
            verbs: owned(verbs),
            non_resource_urls: owned(urls),
            ..Default::default()
        }
    }

    /// Whether the rule names the verb (or `*`).
    pub fn verb_matches(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == ALL || v == verb)
    }

    /// Whether the rule names the API group (or `*`).
    pub fn api_group_matches(&self, group: &str) -> bool {
        self.api_groups.iter().any(|g| g == ALL || g == group)
    }

    /// Whether the rule names `combined` (`resource` or `resource/subresource`), `*`, or
    /// `*/<subresource>` when a subresource is asked for.
    pub fn resource_matches(&self, combined: &str, subresource: &str) -> bool {
        self.resources.iter().any(|r| {
            r == ALL
                || r == combined
                || (!subresource.is_empty()
                    && r.len() == subresource.len() + 2
                    && r.starts_with("*/")
                    && r.ends_with(subresource))
        })
    }

    /// Whether the rule has no names (every object) or names `name`. A rule with names never
    /// matches a request without one (list, watch, create of a collection).
    pub fn resource_name_matches(&self, name: &str) -> bool {
        self.resource_names.is_empty() || contains(&self.resource_names, name)
    }

    /// Whether the rule names `path`, `*`, or a prefix of it ending in `*`.
    pub fn non_resource_url_matches(&self, path: &str) -> bool {
        self.non_resource_urls.iter().any(|u| {
            u == ALL || u == path || (u.ends_with('*') && path.starts_with(u.trim_end_matches('*')))
        })
    }

    /// Whether the rule allows the request (upstream's `RuleAllows`).
    pub fn allows(&self, attrs: &Attributes) -> bool {
        if !self.verb_matches(&attrs.verb) {
            return false;
        }
        if !attrs.resource_request {
            return self.non_resource_url_matches(&attrs.path);
        }
        let combined;
        let resource = if attrs.subresource.is_empty() {
            attrs.resource.as_str()
        } else {
            combined = format!("{}/{}", attrs.resource, attrs.subresource);
            combined.as_str()
        };
        self.api_group_matches(&attrs.api_group)
            && self.resource_matches(resource, &attrs.subresource)
            && self.resource_name_matches(&attrs.name)
    }

    /// Upstream's `CompactString`: `{APIGroups:["apps"], Resources:["deployments"],
    /// Verbs:["get"]}`, naming only the non-empty lists.
    pub fn compact_string(&self) -> String {
        let parts: Vec<String> = [
            ("APIGroups", &self.api_groups),
            ("Resources", &self.resources),
            ("NonResourceURLs", &self.non_resource_urls),
            ("ResourceNames", &self.resource_names),
            ("Verbs", &self.verbs),
        ]
        .iter()
        .filter(|(_, values)| !values.is_empty())
        .map(|(name, values)| format!("{name}:{}", go_quote_list(values)))
        .collect();
        format!("{{{}}}", parts.join(", "))
    }
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
pub fn go_quote_list(values: &[String]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
    format!("[{}]", quoted.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource_attrs(
        verb: &str,
        group: &str,
        resource: &str,
        sub: &str,
        name: &str,
    ) -> Attributes {
        Attributes {
            verb: verb.into(),
            api_group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
            resource_request: true,
            ..Default::default()
        }
    }

    fn path_attrs(verb: &str, path: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            path: path.into(),
            ..Default::default()
        }
    }

    #[test]
    fn verbs_groups_and_resources_match_exactly_or_by_star() {
        let rule = PolicyRule::resource(&["get", "list"], &[""], &["pods"]);
        assert!(rule.allows(&resource_attrs("get", "", "pods", "", "p")));
        assert!(rule.allows(&resource_attrs("list", "", "pods", "", "")));
        assert!(!rule.allows(&resource_attrs("delete", "", "pods", "", "p")));
        assert!(!rule.allows(&resource_attrs("get", "apps", "pods", "", "p")));
        assert!(!rule.allows(&resource_attrs("get", "", "services", "", "p")));
        let star = PolicyRule::resource(&["*"], &["*"], &["*"]);
        assert!(star.allows(&resource_attrs(
            "escalate",
            "rbac.authorization.k8s.io",
            "roles",
            "",
            ""
        )));
        assert!(star.allows(&resource_attrs("get", "", "pods", "log", "p")));
        // A resource rule never allows a non-resource request and the other way round.
        assert!(!star.allows(&path_attrs("get", "/healthz")));
        let urls = PolicyRule::non_resource(&["get"], &["*"]);
        assert!(!urls.allows(&resource_attrs("get", "", "pods", "", "")));
    }

    #[test]
    fn subresources_need_their_own_rule_or_star_slash() {
        let pods = PolicyRule::resource(&["get"], &[""], &["pods"]);
        assert!(!pods.allows(&resource_attrs("get", "", "pods", "log", "p")));
        let log = PolicyRule::resource(&["get"], &[""], &["pods/log"]);
        assert!(log.allows(&resource_attrs("get", "", "pods", "log", "p")));
        assert!(!log.allows(&resource_attrs("get", "", "pods", "", "p")));
        assert!(!log.allows(&resource_attrs("get", "", "pods", "status", "p")));
        let any_status = PolicyRule::resource(&["get"], &["*"], &["*/status"]);
        assert!(any_status.allows(&resource_attrs("get", "apps", "deployments", "status", "d")));
        assert!(!any_status.allows(&resource_attrs("get", "apps", "deployments", "", "d")));
        assert!(!any_status.allows(&resource_attrs("get", "apps", "deployments", "scale", "d")));
        // `resource/*` is not a wildcard upstream: it only matches a subresource named `*`.
        let slash_star = PolicyRule::resource(&["get"], &[""], &["pods/*"]);
        assert!(!slash_star.allows(&resource_attrs("get", "", "pods", "log", "p")));
        assert!(slash_star.allows(&resource_attrs("get", "", "pods", "*", "p")));
    }

    #[test]
    fn resource_names_never_match_requests_without_a_name() {
        let mut rule = PolicyRule::resource(&["get", "list", "update"], &[""], &["configmaps"]);
        rule.resource_names = vec!["allowed".into()];
        assert!(rule.allows(&resource_attrs("get", "", "configmaps", "", "allowed")));
        assert!(!rule.allows(&resource_attrs("get", "", "configmaps", "", "other")));
        assert!(!rule.allows(&resource_attrs("list", "", "configmaps", "", "")));
    }

    #[test]
    fn non_resource_urls_match_exactly_or_by_trailing_star() {
        let rule = PolicyRule::non_resource(&["get"], &["/healthz", "/apis/*", "/logs*"]);
        assert!(rule.allows(&path_attrs("get", "/healthz")));
        assert!(!rule.allows(&path_attrs("get", "/healthz/ping")));
        assert!(rule.allows(&path_attrs("get", "/apis/apps/v1")));
        assert!(!rule.allows(&path_attrs("get", "/apis")));
        assert!(rule.allows(&path_attrs("get", "/logs")));
        assert!(rule.allows(&path_attrs("get", "/logsfoo/x")));
        assert!(!rule.allows(&path_attrs("post", "/healthz")));
    }

    #[test]
    fn compact_string_names_only_non_empty_lists() {
        let mut rule = PolicyRule::resource(&["get", "list"], &["apps"], &["deployments"]);
        rule.resource_names = vec!["a\"b".into()];
        assert_eq!(
            rule.compact_string(),
            r#"{APIGroups:["apps"], Resources:["deployments"], ResourceNames:["a\"b"], Verbs:["get" "list"]}"#
        );
        assert_eq!(
            PolicyRule::non_resource(&["get"], &["/x"]).compact_string(),
            r#"{NonResourceURLs:["/x"], Verbs:["get"]}"#
        );
    }

    #[test]
    fn null_lists_read_as_empty() {
        let rule: PolicyRule = serde_json::from_value(
            serde_json::json!({"verbs": ["get"], "apiGroups": null, "resources": ["pods"]}),
        )
        .unwrap();
        assert!(rule.api_groups.is_empty());
        assert_eq!(rule.resources, vec!["pods"]);
    }
}
