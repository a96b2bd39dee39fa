//! Authorization: authorizers (AlwaysAllow, AlwaysDeny, privileged groups …) and their union
//! (`k8s.io/apiserver/pkg/authorization`).

use std::sync::Arc;

use crate::request::{RequestInfo, UserInfo};

pub mod builtin;
pub mod metrics;
pub mod modes;
pub mod path;
pub mod rules;
pub mod union;
pub mod webhook;
pub mod webhook_metrics;

pub use modes::{AuthorizationMode, build_authorizer, build_authorizer_with};

/// What a request wants to do (`authorizer.AttributesRecord`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attributes {
    /// The user asking; `None` when the request was not authenticated.
    pub user: Option<Arc<UserInfo>>,
    /// The verb (`get`, `list`, `impersonate` …, or the lower-cased HTTP method).
    pub verb: String,
    /// The namespace, empty for cluster-scoped requests.
    pub namespace: String,
    /// The API group (empty for core).
    pub api_group: String,
    /// The API version.
    pub api_version: String,
    /// The resource.
    pub resource: String,
    /// The subresource.
    pub subresource: String,
    /// The object name.
    pub name: String,
    /// The URL path (non-resource requests).
    pub path: String,
    /// Whether this is a resource request.
    pub resource_request: bool,
    /// The raw `labelSelector` (list, watch, deletecollection).
    pub label_selector: String,
    /// The raw `fieldSelector` (list, watch, deletecollection).
    pub field_selector: String,
}

impl Attributes {
    /// The attributes of a request (upstream's `GetAuthorizerAttributes`).
    pub fn from_request(user: Option<Arc<UserInfo>>, info: &RequestInfo) -> Self {
        Attributes {
            user,
            verb: info.verb.clone(),
            namespace: info.namespace.clone(),
            api_group: info.api_group.clone(),
            api_version: info.api_version.clone(),
            resource: info.resource.clone(),
            subresource: info.subresource.clone(),
            name: info.name.clone(),
            path: info.path.clone(),
            resource_request: info.is_resource_request,
            label_selector: info.label_selector.clone(),
            field_selector: info.field_selector.clone(),
        }
    }

    /// The user's name, empty when there is no user.
    pub fn user_name(&self) -> &str {
        self.user.as_deref().map(|u| u.name.as_str()).unwrap_or("")
    }
}

/// An authorizer's decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The request is allowed.
    Allow,
    /// The request is denied; later authorizers are not asked.
    Deny,
    /// No opinion; later authorizers are asked.
    NoOpinion,
}

/// Why an authorizer could not decide.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AuthzError {
    /// The request carries no user.
    #[error("no user on request.")]
    NoUser,
    /// Any other error.
    #[error("{0}")]
    Other(String),
    /// Several authorizers failed (upstream's `utilerrors.Aggregate`).
    #[error("{}", crate::authn::format_aggregate(.0))]
    Aggregate(Vec<AuthzError>),
}

impl AuthzError {
    /// `None` for no errors, the error itself for one, an aggregate for several.
    pub fn aggregate(mut errors: Vec<AuthzError>) -> Option<AuthzError> {
        match errors.len() {
            0 => None,
            1 => errors.pop(),
            _ => Some(AuthzError::Aggregate(errors)),
        }
    }
}

/// An authorization result: decision, reason (may be empty) and an optional error. An
/// authorizer may allow *and* report an error (e.g. RBAC with a broken binding).
pub type AuthorizeResult = (Decision, String, Option<AuthzError>);

/// Authorizes requests (`authorizer.Authorizer`).
#[async_trait::async_trait]
pub trait Authorizer: Send + Sync {
    /// Decides on `attrs`.
    async fn authorize(&self, attrs: &Attributes) -> AuthorizeResult;

    /// The rules this authorizer grants `user` in `namespace` (upstream's
    /// `RuleResolver.RulesFor`, what SelfSubjectRulesReview reports). The default lists
    /// nothing and claims to be complete, as authorizers that never allow anything on their
    /// own (AlwaysDeny, privileged groups) do; authorizers that allow what they cannot list
    /// answer [`UserRules::unsupported`](rules::UserRules::unsupported).
    async fn rules_for(&self, user: &UserInfo, namespace: &str) -> rules::UserRules {
        let _ = (user, namespace);
        rules::UserRules::default()
    }
}
