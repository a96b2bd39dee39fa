//! The RBAC authorizer (upstream's `RBACAuthorizer`): allowed when a rule of a binding that
//! names the user allows the request; otherwise no opinion, with the errors met on the way
//! as the reason.

use std::ops::ControlFlow;
use std::sync::Arc;

use apiserver::authz::rules::{NonResourceRule, ResourceRule, UserRules};
use apiserver::authz::{Attributes, AuthorizeResult, Authorizer, AuthzError, Decision};
use apiserver::request::UserInfo;

use super::RbacPolicy;
use super::resolver::{ResolveError, Visit};

/// Authorizes from the RBAC policy.
pub struct RbacAuthorizer {
    policy: Arc<RbacPolicy>,
}

impl RbacAuthorizer {
    /// An authorizer over `policy`.
    pub fn new(policy: Arc<RbacPolicy>) -> Self {
        RbacAuthorizer { policy }
    }
}

#[async_trait::async_trait]
impl Authorizer for RbacAuthorizer {
    async fn authorize(&self, attrs: &Attributes) -> AuthorizeResult {
        let Some(user) = attrs.user.as_deref() else {
            return (Decision::NoOpinion, String::new(), None);
        };
        // Until the stored policy is loaded every request would be denied.
        self.policy.wait_synced().await;
        let mut allowed_by = None;
        let mut errors: Vec<ResolveError> = Vec::new();
        self.policy
            .resolver()
            .visit_rules_for(user, &attrs.namespace, &mut |visit| match visit {
                Visit::Rule(source, rule) if rule.allows(attrs) => {
                    allowed_by = Some(format!("RBAC: allowed by {source}"));
                    ControlFlow::Break(())
                }
                Visit::Rule(..) => ControlFlow::Continue(()),
                Visit::Error(err) => {
                    errors.push(err);
                    ControlFlow::Continue(())
                }
            });
        if let Some(reason) = allowed_by {
            return (Decision::Allow, reason, None);
        }
        tracing::debug!(
            user = %user.name,
            groups = ?user.groups,
            verb = %attrs.verb,
            resource = %attrs.resource,
            subresource = %attrs.subresource,
            path = %attrs.path,
            namespace = %attrs.namespace,
            "RBAC: no rules authorize the user"
        );
        let errors: Vec<AuthzError> = errors
            .into_iter()
            .map(|e| AuthzError::Other(e.to_string()))
            .collect();
        // Resolution errors explain the denial but are not evaluation errors: the request is
        // still answered with 403, not 500.
        let reason = AuthzError::aggregate(errors)
            .map(|err| format!("RBAC: {err}"))
            .unwrap_or_default();
        (Decision::NoOpinion, reason, None)
    }

    async fn rules_for(&self, user: &UserInfo, namespace: &str) -> UserRules {
        self.policy.wait_synced().await;
        let (rules, error) = self.policy.resolver().rules_for(user, namespace);
        let mut out = UserRules {
            error,
            ..Default::default()
        };
        for rule in rules {
            if !rule.resources.is_empty() {
                out.resource_rules.push(ResourceRule {
                    verbs: rule.verbs.clone(),
                    api_groups: rule.api_groups.clone(),
                    resources: rule.resources.clone(),
                    resource_names: rule.resource_names.clone(),
                });
            }
            if !rule.non_resource_urls.is_empty() {
                out.non_resource_rules.push(NonResourceRule {
                    verbs: rule.verbs,
                    non_resource_urls: rule.non_resource_urls,
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::rbac::index::{PolicyIndex, PolicyKind};
    use serde_json::json;

    fn authorizer() -> RbacAuthorizer {
        let index = Arc::new(PolicyIndex::new());
        index.upsert(
            PolicyKind::ClusterRole,
            &json!({"metadata": {"name": "pod-reader"}, "rules": [
                {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "pods/log"]},
                {"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]}),
        );
        index.upsert(
            PolicyKind::RoleBinding,
            &json!({"metadata": {"name": "read-pods", "namespace": "ns"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "pod-reader"},
                "subjects": [{"kind": "User", "name": "alice"}]}),
        );
        index.upsert(
            PolicyKind::RoleBinding,
            &json!({"metadata": {"name": "dangling", "namespace": "ns"},
                "roleRef": {"kind": "Role", "name": "gone"},
                "subjects": [{"kind": "User", "name": "bob"}]}),
        );
        index.upsert(
            PolicyKind::ClusterRoleBinding,
            &json!({"metadata": {"name": "health"},
                "roleRef": {"kind": "ClusterRole", "name": "pod-reader"},
                "subjects": [{"kind": "Group", "name": "system:authenticated"}]}),
        );
        RbacAuthorizer::new(RbacPolicy::from_index(index))
    }

    fn user(name: &str) -> Option<Arc<UserInfo>> {
        Some(Arc::new(UserInfo {
            name: name.into(),
            ..Default::default()
        }))
    }

    fn pods(user_name: &str, verb: &str, namespace: &str) -> Attributes {
        Attributes {
            user: user(user_name),
            verb: verb.into(),
            namespace: namespace.into(),
            resource: "pods".into(),
            resource_request: true,
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn allowed_with_the_granting_binding_as_reason() {
        let a = authorizer();
        assert_eq!(
            a.authorize(&pods("alice", "list", "ns")).await,
            (
                Decision::Allow,
                r#"RBAC: allowed by RoleBinding "read-pods/ns" of ClusterRole "pod-reader" to User "alice""#.into(),
                None
            )
        );
        assert_eq!(
            a.authorize(&pods("alice", "delete", "ns")).await,
            (Decision::NoOpinion, String::new(), None)
        );
        assert_eq!(
            a.authorize(&pods("alice", "list", "other")).await.0,
            Decision::NoOpinion
        );
        assert_eq!(
            a.authorize(&pods("carol", "list", "ns")).await.0,
            Decision::NoOpinion
        );
    }

    #[tokio::test]
    async fn a_missing_role_is_the_reason_not_an_error() {
        assert_eq!(
            authorizer().authorize(&pods("bob", "list", "ns")).await,
            (
                Decision::NoOpinion,
                r#"RBAC: role.rbac.authorization.k8s.io "gone" not found"#.into(),
                None
            )
        );
    }

    #[tokio::test]
    async fn groups_and_non_resource_urls() {
        let a = authorizer();
        let mut attrs = Attributes {
            user: Some(Arc::new(UserInfo {
                name: "dave".into(),
                groups: vec!["system:authenticated".into()],
                ..Default::default()
            })),
            verb: "get".into(),
            path: "/healthz".into(),
            ..Default::default()
        };
        assert_eq!(
            a.authorize(&attrs).await.1,
            r#"RBAC: allowed by ClusterRoleBinding "health" of ClusterRole "pod-reader" to Group "system:authenticated""#
        );
        attrs.path = "/metrics".into();
        assert_eq!(a.authorize(&attrs).await.0, Decision::NoOpinion);
    }

    #[tokio::test]
    async fn rules_split_into_resource_and_non_resource_rules() {
        let rules = authorizer()
            .rules_for(
                &UserInfo {
                    name: "alice".into(),
                    ..Default::default()
                },
                "ns",
            )
            .await;
        assert_eq!(rules.resource_rules.len(), 1);
        assert_eq!(rules.resource_rules[0].resources, ["pods", "pods/log"]);
        assert_eq!(rules.non_resource_rules.len(), 1);
        assert_eq!(rules.non_resource_rules[0].non_resource_urls, ["/healthz"]);
        assert!(!rules.incomplete && rules.error.is_none());
        let rules = authorizer()
            .rules_for(
                &UserInfo {
                    name: "bob".into(),
                    ..Default::default()
                },
                "ns",
            )
            .await;
        assert!(rules.resource_rules.is_empty());
        assert_eq!(
            rules.error.unwrap().to_string(),
            r#"role.rbac.authorization.k8s.io "gone" not found"#
        );
    }
}
