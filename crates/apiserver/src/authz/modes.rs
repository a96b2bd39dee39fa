//! `--authorization-mode` and the authorizer it builds (kube-apiserver's
//! `pkg/kubeapiserver/authorizer/config.go`).

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use super::Authorizer;
use super::builtin::{AlwaysAllow, AlwaysDeny, PrivilegedGroups};
use super::metrics::{InstrumentedAuthorizer, name_for_mode};
use super::union::UnionAuthorizer;
use crate::request::names;

/// A value of `--authorization-mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AuthorizationMode {
    /// Allow everything.
    AlwaysAllow,
    /// No opinion on anything (so everything but `system:masters` is forbidden).
    AlwaysDeny,
    /// Attribute-based policy file (not supported).
    Abac,
    /// SubjectAccessReview webhook (not supported yet).
    Webhook,
    /// Role-based access control (not supported yet).
    Rbac,
    /// The node authorizer (not supported yet).
    Node,
}

impl AuthorizationMode {
    /// The flag spelling.
    pub fn as_str(&self) -> &'static str {
        match self {
            AuthorizationMode::AlwaysAllow => "AlwaysAllow",
            AuthorizationMode::AlwaysDeny => "AlwaysDeny",
            AuthorizationMode::Abac => "ABAC",
            AuthorizationMode::Webhook => "Webhook",
            AuthorizationMode::Rbac => "RBAC",
            AuthorizationMode::Node => "Node",
        }
    }
}

impl fmt::Display for AuthorizationMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why an authorizer could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AuthorizerConfigError {
    /// Not one of the modes kube-apiserver knows.
    #[error("authorization-mode {0:?} is not a valid mode")]
    UnknownMode(String),
    /// A mode this server does not implement.
    #[error("authorization mode {0} is not supported by this server")]
    Unsupported(AuthorizationMode),
    /// No mode given.
    #[error("at least one authorization-mode must be passed")]
    NoModes,
    /// A mode listed twice.
    #[error("authorization-mode {0} has mode specified more than once")]
    Duplicate(AuthorizationMode),
    /// A mode whose authorizer could not be built (its configuration is invalid).
    #[error("{0}")]
    Invalid(String),
}

impl FromStr for AuthorizationMode {
    type Err = AuthorizerConfigError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "AlwaysAllow" => AuthorizationMode::AlwaysAllow,
            "AlwaysDeny" => AuthorizationMode::AlwaysDeny,
            "ABAC" => AuthorizationMode::Abac,
            "Webhook" => AuthorizationMode::Webhook,
            "RBAC" => AuthorizationMode::Rbac,
            "Node" => AuthorizationMode::Node,
            other => return Err(AuthorizerConfigError::UnknownMode(other.to_string())),
        })
    }
}

/// Builds the authorizer for `modes`: `system:masters` is always allowed first (as
/// kube-apiserver does), then each mode in order. Only the modes this library implements are
/// accepted; see [`build_authorizer_with`] for the others.
pub fn build_authorizer(
    modes: &[AuthorizationMode],
) -> Result<Arc<dyn Authorizer>, AuthorizerConfigError> {
    build_authorizer_with(modes, |_| Ok(None))
}

/// Like [`build_authorizer`], with `plugin` building the modes this library does not implement
/// (RBAC, Node, Webhook, which need the server's API objects): it answers `Ok(None)` for a
/// mode it does not support either.
pub fn build_authorizer_with(
    modes: &[AuthorizationMode],
    mut plugin: impl FnMut(
        AuthorizationMode,
    ) -> Result<Option<Arc<dyn Authorizer>>, AuthorizerConfigError>,
) -> Result<Arc<dyn Authorizer>, AuthorizerConfigError> {
    if modes.is_empty() {
        return Err(AuthorizerConfigError::NoModes);
    }
    let mut authorizers: Vec<Arc<dyn Authorizer>> = vec![Arc::new(PrivilegedGroups::new(vec![
        names::SYSTEM_MASTERS.to_string(),
    ]))];
    for (i, mode) in modes.iter().enumerate() {
        if modes[..i].contains(mode) {
            return Err(AuthorizerConfigError::Duplicate(*mode));
        }
        let authorizer: Arc<dyn Authorizer> = match mode {
            AuthorizationMode::AlwaysAllow => Arc::new(AlwaysAllow),
            AuthorizationMode::AlwaysDeny => Arc::new(AlwaysDeny),
            other => match plugin(*other)? {
                Some(authorizer) => authorizer,
                None => return Err(AuthorizerConfigError::Unsupported(*other)),
            },
        };
        // Counted in `apiserver_authorization_decisions_total` as upstream names the
        // authorizers of the mode flag: the type, and the type lower-cased.
        authorizers.push(InstrumentedAuthorizer::wrap(
            mode.as_str(),
            &name_for_mode(mode.as_str()),
            authorizer,
        ));
    }
    Ok(Arc::new(UnionAuthorizer::new(authorizers)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::{Attributes, Decision};
    use crate::request::UserInfo;

    fn attrs(groups: &[&str]) -> Attributes {
        Attributes {
            user: Some(Arc::new(UserInfo {
                name: "u".into(),
                groups: groups.iter().map(|s| s.to_string()).collect(),
                ..Default::default()
            })),
            verb: "get".into(),
            ..Default::default()
        }
    }

    #[test]
    fn parse_modes() {
        assert_eq!(
            "AlwaysAllow".parse::<AuthorizationMode>().unwrap(),
            AuthorizationMode::AlwaysAllow
        );
        assert_eq!(
            "RBAC".parse::<AuthorizationMode>().unwrap().to_string(),
            "RBAC"
        );
        assert_eq!(
            "Bogus"
                .parse::<AuthorizationMode>()
                .unwrap_err()
                .to_string(),
            "authorization-mode \"Bogus\" is not a valid mode"
        );
    }

    #[tokio::test]
    async fn always_deny_still_allows_masters() {
        let a = build_authorizer(&[AuthorizationMode::AlwaysDeny]).unwrap();
        assert_eq!(
            a.authorize(&attrs(&["system:masters"])).await.0,
            Decision::Allow
        );
        let (d, reason, err) = a.authorize(&attrs(&["devs"])).await;
        assert_eq!(d, Decision::NoOpinion);
        assert_eq!(reason, "Everything is forbidden.");
        assert!(err.is_none());
    }

    #[tokio::test]
    async fn always_allow() {
        let a = build_authorizer(&[AuthorizationMode::AlwaysAllow]).unwrap();
        assert_eq!(a.authorize(&attrs(&[])).await.0, Decision::Allow);
    }

    #[test]
    fn unsupported_and_invalid() {
        assert_eq!(
            build_authorizer(&[AuthorizationMode::Rbac]).err().unwrap(),
            AuthorizerConfigError::Unsupported(AuthorizationMode::Rbac)
        );
        assert_eq!(
            build_authorizer(&[]).err().unwrap(),
            AuthorizerConfigError::NoModes
        );
        assert!(
            build_authorizer(&[
                AuthorizationMode::AlwaysAllow,
                AuthorizationMode::AlwaysAllow
            ])
            .is_err()
        );
    }
}
