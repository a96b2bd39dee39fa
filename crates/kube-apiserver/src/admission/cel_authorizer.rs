//! The `authorizer` CEL variable of admission policies and webhook match conditions: checks
//! asked by an expression go to the server's authorizer as the requesting user (or as the
//! service account named by `authorizer.serviceAccount(…)`), as upstream's authz library.

use std::sync::Arc;

use apiserver::admission::Attributes;
use apiserver::authz::{self, Decision};
use apiserver::request::UserInfo;
use apiserver::util::cel_authorizer::{
    CheckFn, CheckRequest, CheckResult, RequestResource, authorizer_variable,
};
use kube_cel::cel;

use crate::auth::AuthzHandle;

/// The user of `system:serviceaccount:<namespace>:<name>` (upstream
/// `serviceaccount.UserInfo`).
fn service_account_user(namespace: &str, name: &str) -> UserInfo {
    UserInfo {
        name: format!("system:serviceaccount:{namespace}:{name}"),
        groups: vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{namespace}"),
        ],
        ..UserInfo::default()
    }
}

/// Asks `authorizer` synchronously (CEL evaluation is), on the current multi-threaded
/// runtime; anywhere else the check errors rather than blocking a scheduler thread.
fn ask(authorizer: &Arc<dyn authz::Authorizer>, attrs: &authz::Attributes) -> CheckResult {
    let handle = match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => h,
        _ => {
            return CheckResult {
                error: Some("authorizer unavailable outside the server's runtime".into()),
                ..CheckResult::default()
            };
        }
    };
    let (decision, reason, error) =
        tokio::task::block_in_place(|| handle.block_on(authorizer.authorize(attrs)));
    CheckResult {
        allowed: decision == Decision::Allow,
        reason,
        error: error.map(|e| e.to_string()),
    }
}

/// The `authorizer` variable for the request of `attrs` (`requestResource` is its resource).
pub fn for_request(authz: &AuthzHandle, attrs: &Attributes) -> cel::Value {
    let authorizer = authz.get().ok().map(|parts| parts.authorizer.clone());
    let requester = attrs.user.clone();
    let check: CheckFn = Arc::new(move |req: &CheckRequest| {
        let Some(authorizer) = &authorizer else {
            return CheckResult {
                error: Some("the authorizer is not ready yet".into()),
                ..CheckResult::default()
            };
        };
        let user = match &req.service_account {
            Some((namespace, name)) => Arc::new(service_account_user(namespace, name)),
            None => requester.clone(),
        };
        let attrs = authz::Attributes {
            user: Some(user),
            verb: req.verb.clone(),
            namespace: req.namespace.clone(),
            api_group: req.group.clone(),
            api_version: req.version.clone(),
            resource: req.resource.clone(),
            subresource: req.subresource.clone(),
            name: req.name.clone(),
            path: req.path.clone(),
            resource_request: req.path.is_empty(),
            ..authz::Attributes::default()
        };
        ask(authorizer, &attrs)
    });
    let resource = RequestResource {
        group: attrs.resource.group.clone(),
        version: attrs.resource.version.clone(),
        resource: attrs.resource.resource.clone(),
        subresource: attrs.subresource.clone(),
        namespace: attrs.namespace.clone(),
        name: attrs.name.clone(),
    };
    authorizer_variable(check, Some(&resource))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_accounts_are_users_with_their_groups() {
        let user = service_account_user("kube-system", "bot");
        assert_eq!(user.name, "system:serviceaccount:kube-system:bot");
        assert_eq!(
            user.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:kube-system"
            ]
        );
    }
}
