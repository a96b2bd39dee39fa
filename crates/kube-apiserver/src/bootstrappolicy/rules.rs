//! RBAC policy rules: a small builder for the bootstrap policy's rules, and the coverage check
//! upstream's reconciliation uses (`Covers`, the RBAC authorizer's implementation on the
//! k8s-openapi rules the policy is written in).

use k8s_openapi::api::rbac::v1::PolicyRule;

use crate::auth::rbac::covers::covers;
use crate::auth::rbac::rule::PolicyRule as RbacRule;

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

/// The pieces of `servant` (one verb, group, resource and name, or one verb and URL each) that
/// no rule of `owner` covers; empty when `owner` grants everything `servant` does (upstream
/// `Covers`, evaluated by the RBAC authorizer's implementation).
pub fn uncovered(owner: &[PolicyRule], servant: &[PolicyRule]) -> Vec<PolicyRule> {
    let owner: Vec<RbacRule> = owner.iter().map(RbacRule::from).collect();
    let servant: Vec<RbacRule> = servant.iter().map(RbacRule::from).collect();
    covers(&owner, &servant)
        .1
        .into_iter()
        .map(PolicyRule::from)
        .collect()
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
