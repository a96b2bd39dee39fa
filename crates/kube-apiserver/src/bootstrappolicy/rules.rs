//! RBAC policy rules: a small builder for the bootstrap policy's rules, and the coverage check
//! upstream's reconciliation uses (`pkg/registry/rbac/validation`: `Covers`, `BreakdownRule`).

use apiserver::authz::Attributes;
use k8s_openapi::api::rbac::v1::PolicyRule;

/// `get`, `list`, `watch`.
pub const READ: &[&str] = &["get", "list", "watch"];
/// `create`, `update`, `patch`, `delete`, `deletecollection`.
pub const WRITE: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];
/// [`READ`] and [`WRITE`].
pub const READ_WRITE: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];
/// `get`, `list`, `watch`, `update`, `patch`.
pub const READ_UPDATE: &[&str] = &["get", "list", "watch", "update", "patch"];

fn sorted(items: &[&str]) -> Vec<String> {
    let mut items: Vec<String> = items.iter().map(|s| (*s).to_string()).collect();
    items.sort();
    items
}

fn some_sorted(items: &[&str]) -> Option<Vec<String>> {
    (!items.is_empty()).then(|| sorted(items))
}

/// A resource rule: `verbs` on `resources` of `groups`. Every list is sorted, as upstream's
/// rule builder does, so the stored rules read the same as upstream's.
pub fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
    named_rule(verbs, groups, resources, &[])
}

/// A resource rule limited to the objects named `names`.
pub fn named_rule(
    verbs: &[&str],
    groups: &[&str],
    resources: &[&str],
    names: &[&str],
) -> PolicyRule {
    PolicyRule {
        verbs: sorted(verbs),
        api_groups: some_sorted(groups),
        resources: some_sorted(resources),
        resource_names: some_sorted(names),
        non_resource_urls: None,
    }
}

/// A non-resource rule: `verbs` on the URL paths `urls` (a trailing `*` is a prefix).
pub fn url_rule(verbs: &[&str], urls: &[&str]) -> PolicyRule {
    PolicyRule {
        verbs: sorted(verbs),
        non_resource_urls: some_sorted(urls),
        ..PolicyRule::default()
    }
}

/// The events rule every component gets: create, update and patch events in the core and
/// `events.k8s.io` groups.
pub fn events_rule() -> PolicyRule {
    rule(
        &["create", "update", "patch"],
        &["", "events.k8s.io"],
        &["events"],
    )
}

fn list(items: &Option<Vec<String>>) -> &[String] {
    items.as_deref().unwrap_or_default()
}

/// Splits `rule` into one rule per verb and resource (and resource name) or per verb and URL,
/// so each piece can be checked on its own (upstream `BreakdownRule`).
pub fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut pieces = Vec::new();
    for group in list(&rule.api_groups) {
        for resource in list(&rule.resources) {
            for verb in &rule.verbs {
                let one = |names: Option<Vec<String>>| PolicyRule {
                    verbs: vec![verb.clone()],
                    api_groups: Some(vec![group.clone()]),
                    resources: Some(vec![resource.clone()]),
                    resource_names: names,
                    non_resource_urls: None,
                };
                let names = list(&rule.resource_names);
                if names.is_empty() {
                    pieces.push(one(None));
                } else {
                    pieces.extend(names.iter().map(|n| one(Some(vec![n.clone()]))));
                }
            }
        }
    }
    for url in list(&rule.non_resource_urls) {
        for verb in &rule.verbs {
            pieces.push(PolicyRule {
                verbs: vec![verb.clone()],
                non_resource_urls: Some(vec![url.clone()]),
                ..PolicyRule::default()
            });
        }
    }
    pieces
}

fn has_all(owner: &[String], requested: &[String]) -> bool {
    owner.iter().any(|o| o == "*") || requested.iter().all(|r| owner.contains(r))
}

fn resources_cover(owner: &[String], requested: &[String]) -> bool {
    if owner.iter().any(|o| o == "*") {
        return true;
    }
    requested.iter().all(|r| {
        owner.contains(r)
            || r.split_once('/')
                .is_some_and(|(_, sub)| owner.iter().any(|o| *o == format!("*/{sub}")))
    })
}

fn urls_cover(owner: &[String], requested: &[String]) -> bool {
    requested.iter().all(|r| {
        owner.iter().any(|o| {
            o == r
                || o.strip_suffix('*')
                    .is_some_and(|prefix| r.starts_with(prefix))
        })
    })
}

/// Whether `owner` grants everything `servant` does (upstream `ruleCovers`).
pub fn rule_covers(owner: &PolicyRule, servant: &PolicyRule) -> bool {
    let owner_names = list(&owner.resource_names);
    has_all(&owner.verbs, &servant.verbs)
        && has_all(list(&owner.api_groups), list(&servant.api_groups))
        && resources_cover(list(&owner.resources), list(&servant.resources))
        && urls_cover(
            list(&owner.non_resource_urls),
            list(&servant.non_resource_urls),
        )
        && {
            // A rule limited to names never covers one that is not.
            let servant_names = list(&servant.resource_names);
            owner_names.is_empty()
                || (!servant_names.is_empty()
                    && servant_names.iter().all(|n| owner_names.contains(n)))
        }
}

/// The pieces of `servant` (see [`breakdown`]) that no rule of `owner` covers; empty when
/// `owner` grants everything `servant` does (upstream `Covers`).
pub fn uncovered(owner: &[PolicyRule], servant: &[PolicyRule]) -> Vec<PolicyRule> {
    servant
        .iter()
        .flat_map(breakdown)
        .filter(|piece| !owner.iter().any(|o| rule_covers(o, piece)))
        .collect()
}

fn matches_or_all(values: &[String], wanted: &str) -> bool {
    values.iter().any(|v| v == "*" || v == wanted)
}

/// Whether `rule` allows the request (upstream RBAC `RuleAllows`): verb, group, resource
/// (`resource/subresource`, or `*/subresource`) and name for resource requests; verb and path
/// (a trailing `*` is a prefix) for the others.
pub fn rule_allows(attrs: &Attributes, rule: &PolicyRule) -> bool {
    if !matches_or_all(&rule.verbs, &attrs.verb) {
        return false;
    }
    if !attrs.resource_request {
        return list(&rule.non_resource_urls).iter().any(|url| {
            url == "*"
                || *url == attrs.path
                || url
                    .strip_suffix('*')
                    .is_some_and(|prefix| attrs.path.starts_with(prefix))
        });
    }
    let combined = if attrs.subresource.is_empty() {
        attrs.resource.clone()
    } else {
        format!("{}/{}", attrs.resource, attrs.subresource)
    };
    let resource_matches = list(&rule.resources).iter().any(|r| {
        r == "*"
            || *r == combined
            || (!attrs.subresource.is_empty() && *r == format!("*/{}", attrs.subresource))
    });
    let names = list(&rule.resource_names);
    matches_or_all(list(&rule.api_groups), &attrs.api_group)
        && resource_matches
        && (names.is_empty() || names.contains(&attrs.name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_are_built_sorted_as_upstream_stores_them() {
        let r = rule(
            READ_WRITE,
            &["rbac.authorization.k8s.io"],
            &["roles", "rolebindings"],
        );
        assert_eq!(
            r.verbs,
            [
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch"
            ]
        );
        assert_eq!(r.resources.unwrap(), ["rolebindings", "roles"]);
        assert_eq!(events_rule().api_groups.unwrap(), ["", "events.k8s.io"]);
    }

    #[test]
    fn breakdown_yields_one_rule_per_verb_resource_and_name() {
        let r = named_rule(&["get", "update"], &[""], &["configmaps"], &["a", "b"]);
        assert_eq!(breakdown(&r).len(), 4);
        assert_eq!(breakdown(&url_rule(&["get"], &["/a", "/b"])).len(), 2);
    }

    #[test]
    fn wildcards_cover_everything_of_their_kind() {
        let admin = [rule(&["*"], &["*"], &["*"]), url_rule(&["*"], &["*"])];
        let wanted = [
            rule(READ, &["apps"], &["deployments/scale"]),
            url_rule(&["get"], &["/healthz"]),
        ];
        assert!(uncovered(&admin, &wanted).is_empty());
    }

    #[test]
    fn subresource_wildcards_and_url_prefixes_cover_their_matches_only() {
        let owner = [
            rule(&["get"], &["*"], &["*/scale"]),
            url_rule(&["get"], &["/healthz/*"]),
        ];
        assert!(uncovered(&owner, &[rule(&["get"], &["apps"], &["deployments/scale"])]).is_empty());
        assert!(uncovered(&owner, &[url_rule(&["get"], &["/healthz/etcd"])]).is_empty());
        let missing = uncovered(
            &owner,
            &[rule(&["get", "update"], &["apps"], &["deployments"])],
        );
        assert_eq!(missing.len(), 2);
        assert_eq!(missing[1].verbs, ["update"]);
    }

    #[test]
    fn rules_allow_matching_requests_only() {
        let attrs = |verb: &str, resource: &str, sub: &str, name: &str| Attributes {
            verb: verb.into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
            resource_request: true,
            ..Attributes::default()
        };
        let pods = rule(READ, &[""], &["pods"]);
        assert!(rule_allows(&attrs("get", "pods", "", "p"), &pods));
        assert!(!rule_allows(&attrs("delete", "pods", "", "p"), &pods));
        assert!(!rule_allows(&attrs("get", "pods", "log", "p"), &pods));
        let scale = rule(&["get"], &["*"], &["*/scale"]);
        assert!(rule_allows(
            &attrs("get", "deployments", "scale", "d"),
            &scale
        ));
        let named = named_rule(&["get"], &[""], &["configmaps"], &["a"]);
        assert!(!rule_allows(&attrs("get", "configmaps", "", "b"), &named));
        let health = Attributes {
            verb: "get".into(),
            path: "/healthz/etcd".into(),
            ..Attributes::default()
        };
        assert!(rule_allows(&health, &url_rule(&["get"], &["/healthz/*"])));
        assert!(!rule_allows(&health, &url_rule(&["get"], &["/healthz"])));
    }

    #[test]
    fn resource_names_limit_what_a_rule_covers() {
        let owner = [named_rule(&["get"], &[""], &["configmaps"], &["a"])];
        assert!(
            uncovered(
                &owner,
                &[named_rule(&["get"], &[""], &["configmaps"], &["a"])]
            )
            .is_empty()
        );
        assert_eq!(
            uncovered(&owner, &[rule(&["get"], &[""], &["configmaps"])]).len(),
            1
        );
    }
}
