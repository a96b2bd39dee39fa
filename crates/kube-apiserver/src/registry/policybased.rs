//! The RBAC storages that prevent privilege escalation (upstream's
//! `pkg/registry/rbac/{role,clusterrole,rolebinding,clusterrolebinding}/policybased`): a user
//! may create or change a role only with rules it holds itself (or the `escalate` verb on it),
//! and bind a role only when it holds the role's rules itself (or the `bind` verb on it).
//! `system:masters` is never checked.

use std::sync::Arc;

use apiserver::authz::{Attributes, Decision};
use apiserver::registry::rest::{
    BoxFuture, CreateOptions, GetOptions, RequestContext, RestStorage, UpdateFunc, UpdateOptions,
    WrappingStorage,
};
use apiserver::registry::store::Store;
use apiserver::request::UserInfo;
use apiserver::request::names::SYSTEM_MASTERS;
use apiserver::status::ApiError;
use http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::auth::AuthzHandle;
use crate::auth::rbac::GROUP;
use crate::auth::rbac::escalation::confirm_no_escalation;
use crate::auth::rbac::index::RoleRef;
use crate::auth::rbac::rule::PolicyRule;

/// Which RBAC resource a storage guards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Guarded {
    /// `roles`: rules checked in the request's namespace.
    Roles,
    /// `clusterroles`: rules checked cluster-wide; an aggregation rule needs `*` on `*`.
    ClusterRoles,
    /// `rolebindings`: the referenced role's rules checked in the binding's namespace.
    RoleBindings,
    /// `clusterrolebindings`: the referenced cluster role's rules checked cluster-wide.
    ClusterRoleBindings,
}

impl Guarded {
    /// The resource name.
    pub fn resource(self) -> &'static str {
        match self {
            Guarded::Roles => "roles",
            Guarded::ClusterRoles => "clusterroles",
            Guarded::RoleBindings => "rolebindings",
            Guarded::ClusterRoleBindings => "clusterrolebindings",
        }
    }

    fn is_role(self) -> bool {
        matches!(self, Guarded::Roles | Guarded::ClusterRoles)
    }
}

/// A role or binding storage with escalation checks on create and update.
pub struct PolicyBasedStorage {
    inner: Arc<dyn RestStorage>,
    guarded: Guarded,
    authz: AuthzHandle,
    /// Where bindings look up the rules of the role they reference (upstream reads the
    /// registry, not the authorizer's cache: a just-created role is found).
    roles: Store,
    cluster_roles: Store,
}

/// Upstream's `EscalationAllowed`: members of `system:masters` (which the loopback identity
/// is) skip every check.
fn escalation_allowed(user: Option<&UserInfo>) -> bool {
    user.is_some_and(|u| u.in_group(SYSTEM_MASTERS))
}

/// Upstream's `fullAuthority`: what an aggregation rule may gather.
fn full_authority() -> [PolicyRule; 2] {
    [
        PolicyRule::resource(&["*"], &["*"], &["*"]),
        PolicyRule::non_resource(&["*"], &["*"]),
    ]
}

fn rules_of(obj: &Value) -> Result<Vec<PolicyRule>, ApiError> {
    match obj.get("rules") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(rules) => Vec::<PolicyRule>::deserialize(rules)
            .map_err(|e| ApiError::bad_request(format!("rules: {e}"))),
    }
}

fn has_aggregation_rule(obj: Option<&Value>) -> bool {
    obj.and_then(|o| o.pointer("/aggregationRule/clusterRoleSelectors"))
        .and_then(Value::as_array)
        .is_some_and(|selectors| !selectors.is_empty())
}

fn name_of(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Upstream's `IsOnlyMutatingGCFields`: the change touches only owner references, finalizers
/// and the self link (what the garbage collector writes).
fn is_only_mutating_gc_fields(new: &Value, old: Option<&Value>) -> bool {
    let Some(old) = old else {
        return false;
    };
    let mut copied = new.clone();
    let Some(meta) = copied.get_mut("metadata").and_then(Value::as_object_mut) else {
        return false;
    };
    for field in ["ownerReferences", "finalizers", "selfLink"] {
        match old.pointer(&format!("/metadata/{field}")) {
            Some(value) => {
                meta.insert(field.to_string(), value.clone());
            }
            None => {
                meta.remove(field);
            }
        }
    }
    copied == *old
}

/// The part of an update the escalation check looked at: if a retried update computes
/// another one, the check no longer holds.
fn checked_part(guarded: Guarded, new: &Value, old: Option<&Value>) -> Value {
    let at = |obj: Option<&Value>, field: &str| {
        obj.and_then(|o| o.get(field))
            .cloned()
            .unwrap_or(Value::Null)
    };
    if guarded.is_role() {
        json!([
            at(Some(new), "rules"),
            at(Some(new), "aggregationRule"),
            at(old, "aggregationRule")
        ])
    } else {
        json!([at(Some(new), "roleRef")])
    }
}

impl PolicyBasedStorage {
    /// Guards `inner` (the `guarded` resource's storage); bindings read referenced roles from
    /// `roles` and `cluster_roles`.
    pub fn new(
        inner: Arc<dyn RestStorage>,
        guarded: Guarded,
        authz: AuthzHandle,
        roles: Store,
        cluster_roles: Store,
    ) -> Self {
        PolicyBasedStorage {
            inner,
            guarded,
            authz,
            roles,
            cluster_roles,
        }
    }

    fn forbidden(&self, name: &str, why: &str) -> ApiError {
        ApiError::forbidden(GROUP, self.guarded.resource(), name, why)
    }

    /// Whether the authorizer allows `attrs`; its errors only count as "no".
    async fn allows(&self, attrs: Attributes) -> Result<bool, ApiError> {
        let authorizer = self.authz.get()?.authorizer.clone();
        let (decision, _, err) = authorizer.authorize(&attrs).await;
        if let Some(err) = err {
            tracing::warn!(verb = %attrs.verb, user = %attrs.user_name(), %err, "error authorizing an RBAC escalation check");
        }
        Ok(decision == Decision::Allow)
    }

    /// Upstream's `RoleEscalationAuthorized`: the `escalate` verb on this role.
    async fn escalate_authorized(&self, ctx: &RequestContext) -> Result<bool, ApiError> {
        let Some(user) = ctx.user.clone() else {
            return Ok(false);
        };
        self.allows(Attributes {
            user: Some(user),
            verb: "escalate".into(),
            api_group: GROUP.into(),
            api_version: "*".into(),
            resource: self.guarded.resource().into(),
            name: ctx.name.clone(),
            namespace: ctx.namespace.clone(),
            resource_request: true,
            ..Default::default()
        })
        .await
    }

    /// Upstream's `BindingAuthorized`: the `bind` verb on the referenced role, in the
    /// binding's namespace (empty for cluster role bindings).
    async fn bind_authorized(
        &self,
        ctx: &RequestContext,
        role_ref: &RoleRef,
        namespace: &str,
    ) -> Result<bool, ApiError> {
        let Some(user) = ctx.user.clone() else {
            return Ok(false);
        };
        let resource = match role_ref.kind.as_str() {
            "ClusterRole" => "clusterroles",
            "Role" => "roles",
            _ => return Ok(false),
        };
        self.allows(Attributes {
            user: Some(user),
            verb: "bind".into(),
            api_group: role_ref.api_group.clone(),
            api_version: "*".into(),
            resource: resource.into(),
            name: role_ref.name.clone(),
            namespace: namespace.into(),
            resource_request: true,
            ..Default::default()
        })
        .await
    }

    /// The rules of the role a binding in `namespace` references, from the registry: a
    /// missing role is its 404.
    async fn role_ref_rules(
        &self,
        role_ref: &RoleRef,
        namespace: &str,
    ) -> Result<Vec<PolicyRule>, ApiError> {
        let (store, namespace) = match role_ref.kind.as_str() {
            "Role" => (&self.roles, namespace),
            "ClusterRole" => (&self.cluster_roles, ""),
            other => {
                return Err(ApiError::internal(format!(
                    "unsupported role reference kind: {other:?}"
                )));
            }
        };
        let ctx = RequestContext {
            namespace: namespace.into(),
            ..Default::default()
        };
        let role = store
            .get(&ctx, &role_ref.name, &GetOptions::default())
            .await?;
        rules_of(&role)
    }

    /// Confirms that the user holds `rules` in `namespace`.
    fn confirm(
        &self,
        ctx: &RequestContext,
        namespace: &str,
        name: &str,
        rules: &[PolicyRule],
    ) -> Result<(), ApiError> {
        let Some(user) = ctx.user.as_deref() else {
            return Err(self.forbidden(name, "no user on context"));
        };
        let resolver = self.authz.get()?.rbac.resolver();
        confirm_no_escalation(&resolver, user, namespace, rules)
            .map_err(|why| self.forbidden(name, &why))
    }

    /// Whether the request skips the checks altogether: `system:masters`, and for roles the
    /// `escalate` verb.
    async fn unchecked(&self, ctx: &RequestContext) -> Result<bool, ApiError> {
        if escalation_allowed(ctx.user.as_deref()) {
            return Ok(true);
        }
        if self.guarded.is_role() {
            return self.escalate_authorized(ctx).await;
        }
        Ok(false)
    }

    /// The checks of the new object `obj` (`old` on update; `None` on create).
    async fn check(
        &self,
        ctx: &RequestContext,
        obj: &Value,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let name = name_of(obj);
        match self.guarded {
            Guarded::Roles | Guarded::ClusterRoles => {
                self.confirm(ctx, &ctx.namespace, name, &rules_of(obj)?)?;
                let aggregates = self.guarded == Guarded::ClusterRoles
                    && (has_aggregation_rule(Some(obj)) || has_aggregation_rule(old));
                if aggregates && self.confirm(ctx, "", name, &full_authority()).is_err() {
                    return Err(self.forbidden(
                        name,
                        "must have cluster-admin privileges to use the aggregationRule",
                    ));
                }
                Ok(())
            }
            Guarded::RoleBindings | Guarded::ClusterRoleBindings => {
                let namespace = if self.guarded == Guarded::RoleBindings {
                    if ctx.namespace.is_empty() {
                        return Err(ApiError::bad_request("namespace is required"));
                    }
                    ctx.namespace.as_str()
                } else {
                    ""
                };
                let role_ref = obj
                    .get("roleRef")
                    .map(RoleRef::deserialize)
                    .transpose()
                    .map_err(|e| ApiError::bad_request(format!("roleRef: {e}")))?
                    .unwrap_or_default();
                if self.bind_authorized(ctx, &role_ref, namespace).await? {
                    return Ok(());
                }
                let rules = self.role_ref_rules(&role_ref, namespace).await?;
                self.confirm(ctx, namespace, name, &rules)
            }
        }
    }

    async fn checked_update(
        &self,
        ctx: &RequestContext,
        name: &str,
        mut update: UpdateFunc,
        opts: &UpdateOptions,
        force_allow_create: bool,
    ) -> Result<(Value, bool), ApiError> {
        if self.unchecked(ctx).await? {
            return self
                .inner
                .update(ctx, name, update, opts, force_allow_create)
                .await;
        }
        // The checks ask the authorizer and the registry, which the synchronous update
        // function cannot: they run on the update computed from the current object, and the
        // update goes through only if it computes the same checked content again.
        let current = match self.inner.get(ctx, name, &GetOptions::default()).await {
            Ok(current) => Some(current),
            Err(err) if err.code() == StatusCode::NOT_FOUND => None,
            Err(err) => return Err(err),
        };
        let candidate = update(current.as_ref())?;
        let checked = if is_only_mutating_gc_fields(&candidate, current.as_ref()) {
            None
        } else {
            self.check(ctx, &candidate, current.as_ref()).await?;
            Some(checked_part(self.guarded, &candidate, current.as_ref()))
        };
        let guarded = self.guarded;
        let resource = guarded.resource();
        let object_name = name.to_string();
        let verified: UpdateFunc = Box::new(move |current: Option<&Value>| {
            let new = update(current)?;
            if is_only_mutating_gc_fields(&new, current)
                || checked.as_ref() == Some(&checked_part(guarded, &new, current))
            {
                return Ok(new);
            }
            Err(ApiError::conflict(
                GROUP,
                resource,
                &object_name,
                "the object has been modified; please apply your changes to the latest version and try again",
            ))
        });
        self.inner
            .update(ctx, name, verified, opts, force_allow_create)
            .await
    }
}

impl WrappingStorage for PolicyBasedStorage {
    fn inner(&self) -> &dyn RestStorage {
        self.inner.as_ref()
    }

    fn create<'a>(
        &'a self,
        ctx: &'a RequestContext,
        obj: Value,
        opts: &'a CreateOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(async move {
            if !self.unchecked(ctx).await? {
                self.check(ctx, &obj, None).await?;
            }
            self.inner.create(ctx, obj, opts).await
        })
    }

    fn update<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        update: UpdateFunc,
        opts: &'a UpdateOptions,
        force_allow_create: bool,
    ) -> BoxFuture<'a, Result<(Value, bool), ApiError>> {
        Box::pin(self.checked_update(ctx, name, update, opts, force_allow_create))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gc_only_changes_are_owner_references_finalizers_and_self_link() {
        let old = json!({"metadata": {"name": "r", "finalizers": ["a"]}, "rules": []});
        let mut new = old.clone();
        new["metadata"]["finalizers"] = json!([]);
        new["metadata"]["ownerReferences"] = json!([{"name": "o"}]);
        assert!(is_only_mutating_gc_fields(&new, Some(&old)));
        new["rules"] = json!([{"verbs": ["get"]}]);
        assert!(!is_only_mutating_gc_fields(&new, Some(&old)));
        assert!(!is_only_mutating_gc_fields(&old, None));
    }

    #[test]
    fn aggregation_rules_count_only_with_selectors() {
        assert!(has_aggregation_rule(Some(
            &json!({"aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}})
        )));
        assert!(!has_aggregation_rule(Some(
            &json!({"aggregationRule": {"clusterRoleSelectors": []}})
        )));
        assert!(!has_aggregation_rule(None));
    }
}
