//! OwnerReferencesPermissionEnforcement (upstream `plugin/pkg/admission/gc`): changing an
//! object's owner references needs permission to delete the object, and making a reference
//! block its owner's deletion (`blockOwnerDeletion: true`) needs `update` on the owner's
//! `finalizers` subresource.

use std::collections::HashMap;
use std::sync::Arc;

use apiserver::admission::{Attributes, Operation, Plugin, forbidden};
use apiserver::authz::{Attributes as AuthzAttributes, Decision};
use apiserver::status::ApiError;
use async_trait::async_trait;
use serde_json::Value;

use crate::admission::PluginContext;
use crate::apis::json::{array_at, get, str_at};
use crate::auth::AuthzHandle;

/// The plugin's name.
pub const NAME: &str = "OwnerReferencesPermissionEnforcement";

/// Maps a kind to the resources serving it (upstream's RESTMapper).
pub type KindResolver = Arc<dyn Fn(&str, &str, &str) -> Vec<String> + Send + Sync>;

/// The OwnerReferencesPermissionEnforcement plugin.
pub struct OwnerReferencesPermissionEnforcement {
    authz: AuthzHandle,
    resources: KindResolver,
}

/// Builds the plugin over the server's authorizer and its resources.
pub fn new(ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    let mut kinds: HashMap<(String, String), Vec<String>> = HashMap::new();
    for store in ctx.informers.stores().values() {
        let info = apiserver::registry::rest::RestStorage::info(store);
        kinds
            .entry((info.group.clone(), info.kind.clone()))
            .or_default()
            .push(info.resource.clone());
    }
    let custom = ctx.custom_resources.clone();
    let resources: KindResolver = Arc::new(move |group, _version, kind| {
        match kinds.get(&(group.to_string(), kind.to_string())) {
            Some(resources) => resources.clone(),
            None => custom
                .as_ref()
                .map(|c| c.resources_for_kind(group, kind))
                .unwrap_or_default(),
        }
    });
    Ok(Arc::new(OwnerReferencesPermissionEnforcement {
        authz: ctx.authz.clone(),
        resources,
    }))
}

fn owner_references(obj: Option<&Value>) -> &[Value] {
    obj.map(|o| array_at(o, "metadata.ownerReferences"))
        .unwrap_or_default()
}

fn blocks(reference: &Value) -> bool {
    get(reference, "blockOwnerDeletion").and_then(Value::as_bool) == Some(true)
}

/// References that block their owner's deletion now and did not before (new ones, or ones
/// whose `blockOwnerDeletion` turned true), matched by owner uid.
fn newly_blocking<'a>(new: &'a [Value], old: &[Value]) -> Vec<&'a Value> {
    new.iter()
        .filter(|r| blocks(r))
        .filter(|r| {
            let uid = str_at(r, "uid");
            !old.iter().any(|o| str_at(o, "uid") == uid && blocks(o))
        })
        .collect()
}

/// Splits an owner reference's `apiVersion` into group and version.
fn group_version(api_version: &str) -> Result<(&str, &str), String> {
    match api_version.split('/').collect::<Vec<_>>().as_slice() {
        [version] if !version.is_empty() => Ok(("", version)),
        [group, version] if !version.is_empty() => Ok((group, version)),
        _ => Err(format!("unexpected GroupVersion string: {api_version}")),
    }
}

fn reason_and_error(reason: &str, error: Option<&impl std::fmt::Display>) -> String {
    let error = error.map_or_else(|| "<nil>".to_string(), |e| e.to_string());
    format!("{reason}, {error}")
}

impl OwnerReferencesPermissionEnforcement {
    async fn check_owner(&self, attrs: &Attributes, reference: &Value) -> Result<(), ApiError> {
        let api_version = str_at(reference, "apiVersion").unwrap_or_default();
        let kind = str_at(reference, "kind").unwrap_or_default();
        let mapping = group_version(api_version).and_then(|(group, version)| {
            let resources = (self.resources)(group, version, kind);
            if resources.is_empty() {
                Err(format!(
                    "no matches for kind {kind:?} in version {api_version:?}"
                ))
            } else {
                Ok((group, version, resources))
            }
        });
        let (group, version, resources) = mapping.map_err(|e| {
            forbidden(
                attrs,
                &format!(
                    "cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion {api_version} Kind {kind}: {e}"
                ),
            )
        })?;
        for resource in resources {
            // Owners are in the object's namespace: references cannot cross namespaces.
            let record = AuthzAttributes {
                user: Some(attrs.user.clone()),
                verb: "update".into(),
                namespace: attrs.namespace.clone(),
                api_group: group.to_string(),
                api_version: version.to_string(),
                resource,
                subresource: "finalizers".into(),
                name: str_at(reference, "name").unwrap_or_default().to_string(),
                resource_request: true,
                ..Default::default()
            };
            let (decision, reason, error) = self.authz.get()?.authorizer.authorize(&record).await;
            if decision != Decision::Allow {
                return Err(forbidden(
                    attrs,
                    &format!(
                        "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: {}",
                        reason_and_error(&reason, error.as_ref())
                    ),
                ));
            }
        }
        Ok(())
    }
}

#[async_trait]
impl Plugin for OwnerReferencesPermissionEnforcement {
    fn name(&self) -> &str {
        NAME
    }

    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }

    fn validates(&self) -> bool {
        true
    }

    async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError> {
        // Old kubelets corrupt owner references through pods/status; its strategy keeps
        // them unchanged instead.
        if attrs.resource.group.is_empty()
            && attrs.resource.resource == "pods"
            && attrs.subresource == "status"
        {
            return Ok(());
        }
        let new = owner_references(attrs.object.as_ref());
        let old = owner_references(attrs.old_object.as_ref());
        let changing = match attrs.old_object {
            None => !new.is_empty(),
            Some(_) => new != old,
        };
        if !changing {
            return Ok(());
        }
        // Whoever creates an object could as well not have created it: only other changes
        // need the power to delete it.
        if attrs.operation != Operation::Create {
            let record = AuthzAttributes {
                user: Some(attrs.user.clone()),
                verb: "delete".into(),
                namespace: attrs.namespace.clone(),
                api_group: attrs.resource.group.clone(),
                api_version: attrs.resource.version.clone(),
                resource: attrs.resource.resource.clone(),
                subresource: attrs.subresource.clone(),
                name: attrs.name.clone(),
                resource_request: true,
                ..Default::default()
            };
            let (decision, reason, error) = self.authz.get()?.authorizer.authorize(&record).await;
            if decision != Decision::Allow {
                return Err(forbidden(
                    attrs,
                    &format!(
                        "cannot set an ownerRef on a resource you can't delete: {}",
                        reason_and_error(&reason, error.as_ref())
                    ),
                ));
            }
        }
        for reference in newly_blocking(new, old) {
            self.check_owner(attrs, reference).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_new_or_newly_blocking_references_need_finalizer_rights() {
        let old = [
            json!({"uid": "1", "blockOwnerDeletion": true}),
            json!({"uid": "2", "blockOwnerDeletion": false}),
        ];
        let new = [
            json!({"uid": "1", "blockOwnerDeletion": true}),
            json!({"uid": "2", "blockOwnerDeletion": true}),
            json!({"uid": "3", "blockOwnerDeletion": true}),
            json!({"uid": "4"}),
        ];
        let uids: Vec<_> = newly_blocking(&new, &old)
            .iter()
            .map(|r| r["uid"].as_str().unwrap())
            .collect();
        assert_eq!(uids, ["2", "3"]);
        assert_eq!(group_version("apps/v1"), Ok(("apps", "v1")));
        assert_eq!(group_version("v1"), Ok(("", "v1")));
        assert!(group_version("a/b/c").is_err());
    }
}
