//! Whether one set of rules covers another (upstream's `validation.Covers` from
//! component-helpers) and the compaction of uncovered rules for escalation errors
//! (`CompactRules`).

use std::collections::BTreeMap;

use super::rule::{ALL, PolicyRule};

/// Whether `owner` covers every rule of `servant`, and the atomic rules it does not cover.
pub fn covers(owner: &[PolicyRule], servant: &[PolicyRule]) -> (bool, Vec<PolicyRule>) {
    let uncovered: Vec<PolicyRule> = servant
        .iter()
        .flat_map(breakdown)
        .filter(|sub| !owner.iter().any(|o| rule_covers(o, sub)))
        .collect();
    (uncovered.is_empty(), uncovered)
}

/// Splits a rule into rules of one verb, one group, one resource and at most one name (and
/// one verb per non-resource URL).
pub fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let one = |s: &String| vec![s.clone()];
    let mut out = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                let base = PolicyRule {
                    verbs: one(verb),
                    api_groups: one(group),
                    resources: one(resource),
                    ..Default::default()
                };
                if rule.resource_names.is_empty() {
                    out.push(base);
                } else {
                    for name in &rule.resource_names {
                        out.push(PolicyRule {
                            resource_names: one(name),
                            ..base.clone()
                        });
                    }
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(PolicyRule {
                verbs: one(verb),
                non_resource_urls: one(url),
                ..Default::default()
            });
        }
    }
    out
}

fn has(set: &[String], wanted: &str) -> bool {
    set.iter().any(|s| s == wanted)
}

fn has_all(set: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|w| has(set, w))
}

fn resources_cover(owner: &[String], wanted: &[String]) -> bool {
    if has(owner, ALL) || has_all(owner, wanted) {
        return true;
    }
    wanted.iter().all(|path| {
        has(owner, path)
            || path
                .split_once('/')
                .is_some_and(|(_, sub)| has(owner, &format!("*/{sub}")))
    })
}

fn non_resource_url_covers(owner: &str, path: &str) -> bool {
    owner == path || (owner.ends_with('*') && path.starts_with(owner.trim_end_matches('*')))
}

fn urls_cover(owner: &[String], wanted: &[String]) -> bool {
    wanted
        .iter()
        .all(|path| owner.iter().any(|o| non_resource_url_covers(o, path)))
}

/// Whether `owner` covers the atomic rule `sub` (upstream's `ruleCovers`).
fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, ALL) || has_all(&owner.verbs, &sub.verbs);
    let groups = has(&owner.api_groups, ALL) || has_all(&owner.api_groups, &sub.api_groups);
    let names = if sub.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &sub.resource_names)
    };
    verbs
        && groups
        && resources_cover(&owner.resources, &sub.resources)
        && names
        && urls_cover(&owner.non_resource_urls, &sub.non_resource_urls)
}

/// Merges rules of one group, one resource and at most one name that differ only in their
/// verbs (upstream's `CompactRules`); other rules are kept as they are.
pub fn compact(rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut out = Vec::with_capacity(rules.len());
    let mut simple: BTreeMap<(String, String, Option<String>), PolicyRule> = BTreeMap::new();
    for rule in rules {
        let is_simple = rule.resource_names.len() <= 1
            && rule.non_resource_urls.is_empty()
            && rule.api_groups.len() == 1
            && rule.resources.len() == 1;
        if !is_simple {
            out.push(rule);
            continue;
        }
        let key = (
            rule.api_groups[0].clone(),
            rule.resources[0].clone(),
            rule.resource_names.first().cloned(),
        );
        match simple.get_mut(&key) {
            Some(existing) => existing.verbs.extend(rule.verbs),
            None => {
                simple.insert(key, rule);
            }
        }
    }
    out.extend(simple.into_values());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(mut rule: PolicyRule, names: &[&str]) -> PolicyRule {
        rule.resource_names = names.iter().map(|s| s.to_string()).collect();
        rule
    }

    #[test]
    fn star_covers_everything_and_exact_rules_cover_themselves() {
        let admin = [
            PolicyRule::resource(&["*"], &["*"], &["*"]),
            PolicyRule::non_resource(&["*"], &["*"]),
        ];
        let wanted = [
            PolicyRule::resource(
                &["get", "escalate"],
                &["", "rbac.authorization.k8s.io"],
                &["pods", "roles/status"],
            ),
            PolicyRule::non_resource(&["get"], &["/healthz"]),
        ];
        assert_eq!(covers(&admin, &wanted), (true, vec![]));
        assert!(covers(&wanted, &wanted).0);
    }

    #[test]
    fn uncovered_rules_are_broken_down_to_single_verbs() {
        let owner = [PolicyRule::resource(&["get"], &[""], &["pods"])];
        let wanted = [PolicyRule::resource(
            &["get", "list", "delete"],
            &[""],
            &["pods"],
        )];
        let (ok, missing) = covers(&owner, &wanted);
        assert!(!ok);
        assert_eq!(
            missing,
            vec![
                PolicyRule::resource(&["list"], &[""], &["pods"]),
                PolicyRule::resource(&["delete"], &[""], &["pods"]),
            ]
        );
        assert_eq!(
            compact(missing),
            vec![PolicyRule::resource(&["list", "delete"], &[""], &["pods"])]
        );
    }

    #[test]
    fn subresources_are_covered_by_star_slash_and_names_by_unnamed_rules() {
        let owner = [
            PolicyRule::resource(&["get"], &[""], &["*/status"]),
            PolicyRule::resource(&["update"], &[""], &["configmaps"]),
        ];
        assert!(
            covers(
                &owner,
                &[PolicyRule::resource(&["get"], &[""], &["pods/status"])]
            )
            .0
        );
        assert!(!covers(&owner, &[PolicyRule::resource(&["get"], &[""], &["pods"])]).0);
        let wanted = named(
            PolicyRule::resource(&["update"], &[""], &["configmaps"]),
            &["a", "b"],
        );
        assert!(covers(&owner, std::slice::from_ref(&wanted)).0);
        // A named rule does not cover an unnamed one, nor other names.
        let owner = [named(
            PolicyRule::resource(&["update"], &[""], &["configmaps"]),
            &["a"],
        )];
        let (ok, missing) = covers(&owner, &[wanted]);
        assert!(!ok);
        assert_eq!(
            missing,
            vec![named(
                PolicyRule::resource(&["update"], &[""], &["configmaps"]),
                &["b"]
            )]
        );
        assert!(
            !covers(
                &owner,
                &[PolicyRule::resource(&["update"], &[""], &["configmaps"])]
            )
            .0
        );
    }

    #[test]
    fn non_resource_urls_are_covered_by_prefixes() {
        let owner = [PolicyRule::non_resource(&["get"], &["/apis/*"])];
        assert!(
            covers(
                &owner,
                &[PolicyRule::non_resource(&["get"], &["/apis/apps"])]
            )
            .0
        );
        assert!(!covers(&owner, &[PolicyRule::non_resource(&["get"], &["/api"])]).0);
        assert!(!covers(&owner, &[PolicyRule::non_resource(&["post"], &["/apis/x"])]).0);
    }
}
