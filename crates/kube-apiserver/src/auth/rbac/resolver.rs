//! Which rules apply to a user in a namespace (upstream's `DefaultRuleResolver`): the rules of
//! every ClusterRoleBinding naming the user, then of every RoleBinding in the namespace naming
//! it, each with the binding that granted it.

use std::fmt;
use std::ops::ControlFlow;
use std::sync::Arc;

use apiserver::authz::AuthzError;
use apiserver::request::UserInfo;

use super::index::{Binding, PolicyIndex, PolicyState, RoleRef, Subject, applies_to};
use super::rule::PolicyRule;

/// Why a binding's rules could not be resolved; the other bindings still count.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// The referenced Role or ClusterRole does not exist (the lister's NotFound text, e.g.
    /// `clusterrole.rbac.authorization.k8s.io "x" not found`).
    #[error("{kind}.rbac.authorization.k8s.io {name:?} not found")]
    RoleNotFound {
        /// `role` or `clusterrole`.
        kind: &'static str,
        /// The role's name.
        name: String,
    },
    /// A roleRef kind other than Role and ClusterRole.
    #[error("unsupported role reference kind: {0:?}")]
    UnsupportedKind(String),
}

/// The binding and subject that granted a rule, described as upstream's reasons do:
/// `ClusterRoleBinding "b" of ClusterRole "r" to User "u"`.
pub struct RuleSource<'a> {
    binding: &'a Binding,
    subject: &'a Subject,
}

impl fmt::Display for RuleSource<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.binding;
        let namespace = b.metadata.namespace.as_str();
        if namespace.is_empty() {
            write!(f, "ClusterRoleBinding {:?}", b.metadata.name)?;
        } else {
            write!(
                f,
                "RoleBinding {:?}",
                format!("{}/{namespace}", b.metadata.name)
            )?;
        }
        write!(f, " of {} {:?} to ", b.role_ref.kind, b.role_ref.name)?;
        let s = self.subject;
        if s.kind == "ServiceAccount" {
            let sa_namespace = if s.namespace.is_empty() {
                namespace
            } else {
                s.namespace.as_str()
            };
            write!(f, "{} {:?}", s.kind, format!("{}/{sa_namespace}", s.name))
        } else {
            write!(f, "{} {:?}", s.kind, s.name)
        }
    }
}

/// What a visitor sees: a rule with its source, or an error resolving one binding.
pub enum Visit<'a> {
    /// A rule that applies.
    Rule(&'a RuleSource<'a>, &'a PolicyRule),
    /// A binding whose role could not be resolved.
    Error(ResolveError),
}

/// Resolves rules from a [`PolicyIndex`].
#[derive(Clone)]
pub struct RuleResolver {
    index: Arc<PolicyIndex>,
}

/// The rules of `role_ref` as seen from a binding in `namespace`.
fn role_ref_rules(
    state: &PolicyState,
    role_ref: &RoleRef,
    namespace: &str,
) -> Result<Arc<[PolicyRule]>, ResolveError> {
    let found = match role_ref.kind.as_str() {
        "Role" => state.role(namespace, &role_ref.name).ok_or("role"),
        "ClusterRole" => state.cluster_role(&role_ref.name).ok_or("clusterrole"),
        other => return Err(ResolveError::UnsupportedKind(other.to_string())),
    };
    found.map_err(|kind| ResolveError::RoleNotFound {
        kind,
        name: role_ref.name.clone(),
    })
}

impl RuleResolver {
    /// A resolver over `index`.
    pub fn new(index: Arc<PolicyIndex>) -> Self {
        RuleResolver { index }
    }

    /// Calls `visitor` with each rule that applies to `user` in `namespace` (cluster-wide
    /// bindings first, then the namespace's) and each resolution error, until it breaks.
    pub fn visit_rules_for(
        &self,
        user: &UserInfo,
        namespace: &str,
        visitor: &mut dyn FnMut(Visit<'_>) -> ControlFlow<()>,
    ) {
        let state = self.index.read();
        let mut bindings = state.cluster_role_bindings_for(user);
        if !namespace.is_empty() {
            bindings.extend(state.role_bindings_for(user, namespace));
        }
        for binding in &bindings {
            let binding_namespace = binding.metadata.namespace.as_str();
            let Some(subject) = binding
                .subjects
                .iter()
                .find(|s| applies_to(user, s, binding_namespace))
            else {
                continue;
            };
            let rules = match role_ref_rules(&state, &binding.role_ref, binding_namespace) {
                Ok(rules) => rules,
                Err(err) => {
                    if visitor(Visit::Error(err)).is_break() {
                        return;
                    }
                    continue;
                }
            };
            let source = RuleSource { binding, subject };
            for rule in rules.iter() {
                if visitor(Visit::Rule(&source, rule)).is_break() {
                    return;
                }
            }
        }
    }

    /// Every rule that applies to `user` in `namespace`, and the aggregated resolution errors
    /// (the rules found still count: policy is additive).
    pub fn rules_for(
        &self,
        user: &UserInfo,
        namespace: &str,
    ) -> (Vec<PolicyRule>, Option<AuthzError>) {
        let mut rules = Vec::new();
        let mut errors = Vec::new();
        self.visit_rules_for(user, namespace, &mut |visit| {
            match visit {
                Visit::Rule(_, rule) => rules.push(rule.clone()),
                Visit::Error(err) => errors.push(AuthzError::Other(err.to_string())),
            }
            ControlFlow::Continue(())
        });
        (rules, AuthzError::aggregate(errors))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::rbac::index::PolicyKind;
    use serde_json::json;

    fn resolver() -> RuleResolver {
        let index = Arc::new(PolicyIndex::new());
        index.upsert(
            PolicyKind::ClusterRole,
            &json!({"metadata": {"name": "view"},
                "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]}),
        );
        index.upsert(
            PolicyKind::Role,
            &json!({"metadata": {"name": "edit", "namespace": "ns"},
                "rules": [{"verbs": ["update"], "apiGroups": [""], "resources": ["pods"]}]}),
        );
        index.upsert(
            PolicyKind::ClusterRoleBinding,
            &json!({"metadata": {"name": "viewers"}, "roleRef": {"kind": "ClusterRole", "name": "view"},
                "subjects": [{"kind": "Group", "name": "devs"}, {"kind": "User", "name": "alice"}]}),
        );
        index.upsert(
            PolicyKind::ClusterRoleBinding,
            &json!({"metadata": {"name": "broken"}, "roleRef": {"kind": "ClusterRole", "name": "missing"},
                "subjects": [{"kind": "User", "name": "alice"}]}),
        );
        index.upsert(
            PolicyKind::RoleBinding,
            &json!({"metadata": {"name": "editors", "namespace": "ns"},
                "roleRef": {"kind": "Role", "name": "edit"},
                "subjects": [{"kind": "ServiceAccount", "name": "bot"}]}),
        );
        RuleResolver::new(index)
    }

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn sources_describe_the_binding_and_the_first_applying_subject() {
        let r = resolver();
        let mut seen = Vec::new();
        r.visit_rules_for(&user("alice", &["devs"]), "", &mut |v| {
            if let Visit::Rule(source, _) = v {
                seen.push(source.to_string());
            }
            ControlFlow::Continue(())
        });
        assert_eq!(
            seen,
            [r#"ClusterRoleBinding "viewers" of ClusterRole "view" to Group "devs""#]
        );
        let mut seen = Vec::new();
        r.visit_rules_for(&user("system:serviceaccount:ns:bot", &[]), "ns", &mut |v| {
            if let Visit::Rule(source, _) = v {
                seen.push(source.to_string());
            }
            ControlFlow::Continue(())
        });
        assert_eq!(
            seen,
            [r#"RoleBinding "editors/ns" of Role "edit" to ServiceAccount "bot/ns""#]
        );
    }

    #[test]
    fn rules_for_keeps_found_rules_and_reports_missing_roles() {
        let r = resolver();
        let (rules, err) = r.rules_for(&user("alice", &[]), "ns");
        assert_eq!(rules, [PolicyRule::resource(&["get"], &[""], &["pods"])]);
        assert_eq!(
            err.unwrap().to_string(),
            r#"clusterrole.rbac.authorization.k8s.io "missing" not found"#
        );
        let (rules, err) = r.rules_for(&user("system:serviceaccount:ns:bot", &[]), "ns");
        assert_eq!(rules, [PolicyRule::resource(&["update"], &[""], &["pods"])]);
        assert!(err.is_none());
        // Namespaced bindings do not count cluster-wide.
        assert!(
            r.rules_for(&user("system:serviceaccount:ns:bot", &[]), "")
                .0
                .is_empty()
        );
    }
}
