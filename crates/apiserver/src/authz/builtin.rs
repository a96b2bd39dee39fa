//! The built-in authorizers (`authorization/authorizerfactory/builtin.go`).

use super::{Attributes, AuthorizeResult, Authorizer, AuthzError, Decision};

/// Allows everything (`--authorization-mode=AlwaysAllow`).
#[derive(Clone, Copy, Debug, Default)]
pub struct AlwaysAllow;

#[async_trait::async_trait]
impl Authorizer for AlwaysAllow {
    async fn authorize(&self, _attrs: &Attributes) -> AuthorizeResult {
        (Decision::Allow, String::new(), None)
    }
}

/// Has no opinion on anything, with reason `Everything is forbidden.`
/// (`--authorization-mode=AlwaysDeny`; other authorizers may still allow).
#[derive(Clone, Copy, Debug, Default)]
pub struct AlwaysDeny;

/// The reason [`AlwaysDeny`] gives.
pub const ALWAYS_DENY_REASON: &str = "Everything is forbidden.";

#[async_trait::async_trait]
impl Authorizer for AlwaysDeny {
    async fn authorize(&self, _attrs: &Attributes) -> AuthorizeResult {
        (Decision::NoOpinion, ALWAYS_DENY_REASON.to_string(), None)
    }
}

/// Allows members of any of the given groups (kube-apiserver always puts `system:masters`
/// first).
#[derive(Clone, Debug, Default)]
pub struct PrivilegedGroups {
    groups: Vec<String>,
}

impl PrivilegedGroups {
    /// Allows members of `groups`.
    pub fn new(groups: Vec<String>) -> Self {
        PrivilegedGroups { groups }
    }
}

#[async_trait::async_trait]
impl Authorizer for PrivilegedGroups {
    async fn authorize(&self, attrs: &Attributes) -> AuthorizeResult {
        let Some(user) = attrs.user.as_deref() else {
            return (
                Decision::NoOpinion,
                "Error".to_string(),
                Some(AuthzError::NoUser),
            );
        };
        if user.groups.iter().any(|g| self.groups.contains(g)) {
            return (Decision::Allow, String::new(), None);
        }
        (Decision::NoOpinion, String::new(), None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::UserInfo;
    use std::sync::Arc;

    fn attrs(groups: Option<&[&str]>) -> Attributes {
        Attributes {
            user: groups.map(|g| {
                Arc::new(UserInfo {
                    name: "u".into(),
                    groups: g.iter().map(|s| s.to_string()).collect(),
                    ..Default::default()
                })
            }),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn new_always_allow_authorizer() {
        let (d, reason, err) = AlwaysAllow.authorize(&attrs(None)).await;
        assert_eq!(d, Decision::Allow);
        assert!(reason.is_empty() && err.is_none());
    }

    #[tokio::test]
    async fn new_always_deny_authorizer() {
        let (d, reason, err) = AlwaysDeny.authorize(&attrs(Some(&[]))).await;
        assert_eq!(d, Decision::NoOpinion);
        assert_eq!(reason, "Everything is forbidden.");
        assert!(err.is_none());
    }

    #[tokio::test]
    async fn privileged_group_authorizer() {
        let auth = PrivilegedGroups::new(vec!["allow-01".into(), "allow-02".into()]);
        let (d, _, _) = auth.authorize(&attrs(Some(&["no", "allow-02"]))).await;
        assert_eq!(d, Decision::Allow);
        let (d, _, err) = auth.authorize(&attrs(Some(&["no", "allow-03"]))).await;
        assert_eq!(d, Decision::NoOpinion);
        assert!(err.is_none());
        let (d, reason, err) = auth.authorize(&attrs(None)).await;
        assert_eq!(d, Decision::NoOpinion);
        assert_eq!(reason, "Error");
        assert_eq!(err.unwrap().to_string(), "no user on request.");
    }
}
