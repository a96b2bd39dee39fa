//! What a user may do in a namespace, as authorizers can enumerate it (upstream's
//! `authorizer.RuleResolver` with `ResourceRuleInfo` and `NonResourceRuleInfo`): what
//! SelfSubjectRulesReview (`kubectl auth can-i --list`) reports.

use super::AuthzError;

/// A rule on resources.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceRule {
    /// Verbs (`*` for all).
    pub verbs: Vec<String>,
    /// API groups (`*` for all).
    pub api_groups: Vec<String>,
    /// Resources, `resource/subresource` (`*` for all).
    pub resources: Vec<String>,
    /// Object names; empty for all.
    pub resource_names: Vec<String>,
}

/// A rule on non-resource URLs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NonResourceRule {
    /// Verbs (`*` for all).
    pub verbs: Vec<String>,
    /// URL paths, `*` suffixes matching any rest.
    pub non_resource_urls: Vec<String>,
}

/// The rules an authorizer knows for a user in a namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserRules {
    /// Rules on resources.
    pub resource_rules: Vec<ResourceRule>,
    /// Rules on non-resource URLs.
    pub non_resource_rules: Vec<NonResourceRule>,
    /// The authorizer may allow more than these rules say (it cannot enumerate them).
    pub incomplete: bool,
    /// What went wrong while resolving (the rules found still hold).
    pub error: Option<AuthzError>,
}

impl UserRules {
    /// Everything on every resource and URL (what AlwaysAllow reports).
    pub fn everything() -> Self {
        let all = || vec!["*".to_string()];
        UserRules {
            resource_rules: vec![ResourceRule {
                verbs: all(),
                api_groups: all(),
                resources: all(),
                resource_names: Vec::new(),
            }],
            non_resource_rules: vec![NonResourceRule {
                verbs: all(),
                non_resource_urls: all(),
            }],
            incomplete: false,
            error: None,
        }
    }

    /// An authorizer that cannot list rules for this user: none listed, `incomplete`, with
    /// `error` as the evaluation error.
    pub fn unsupported(error: &str) -> Self {
        UserRules {
            incomplete: true,
            error: Some(AuthzError::Other(error.to_string())),
            ..Default::default()
        }
    }

    /// The union of several authorizers' rules (upstream's `unionAuthzRulesHandler`): all
    /// rules, incomplete if any is, errors aggregated.
    pub fn union(all: impl IntoIterator<Item = UserRules>) -> Self {
        let mut out = UserRules::default();
        let mut errors = Vec::new();
        for rules in all {
            out.resource_rules.extend(rules.resource_rules);
            out.non_resource_rules.extend(rules.non_resource_rules);
            out.incomplete |= rules.incomplete;
            errors.extend(rules.error);
        }
        out.error = AuthzError::aggregate(errors);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_keeps_every_rule_and_error() {
        let a = UserRules::everything();
        let b = UserRules::unsupported("webhook authorizer does not support user rule resolution");
        let c = UserRules {
            error: Some(AuthzError::Other("x".into())),
            ..Default::default()
        };
        let u = UserRules::union([a.clone(), b, c]);
        assert_eq!(u.resource_rules, a.resource_rules);
        assert_eq!(u.non_resource_rules, a.non_resource_rules);
        assert!(u.incomplete);
        assert_eq!(
            u.error.unwrap().to_string(),
            "[webhook authorizer does not support user rule resolution, x]"
        );
        assert_eq!(UserRules::union([]), UserRules::default());
    }
}
