//! Writing a ResourceQuota's status with optimistic concurrency: the write only lands on the
//! version the new usage was computed from, so neither the controller nor admission
//! overwrites a charge it did not see.

use apiserver::registry::rest::{RequestContext, RestStorage, UpdateOptions};
use apiserver::registry::store::StatusStore;
use apiserver::status::ApiError;
use serde_json::Value;

use super::resources::{self, ResourceList};

/// Sets `status.hard` (when given) and `status.used` of the quota `namespace/name` if it is
/// still at `resource_version`; the stored quota after the write. A quota changed meanwhile
/// is a 409 Conflict.
pub async fn write_status(
    store: &StatusStore,
    namespace: &str,
    name: &str,
    resource_version: &str,
    hard: Option<&ResourceList>,
    used: &ResourceList,
) -> Result<Value, ApiError> {
    let ctx = RequestContext {
        namespace: namespace.to_string(),
        name: name.to_string(),
        ..RequestContext::default()
    };
    let version = resource_version.to_string();
    let hard = hard.map(resources::to_json);
    let used = resources::to_json(used);
    let quota_name = name.to_string();
    let update = Box::new(move |current: Option<&Value>| {
        let mut quota = current
            .cloned()
            .ok_or_else(|| ApiError::not_found("", "resourcequotas", &quota_name))?;
        quota["metadata"]["resourceVersion"] = Value::String(version.clone());
        if !quota.get("status").is_some_and(Value::is_object) {
            quota["status"] = Value::Object(Default::default());
        }
        if let Some(hard) = &hard {
            quota["status"]["hard"] = hard.clone();
        }
        quota["status"]["used"] = used.clone();
        Ok(quota)
    });
    store
        .update(&ctx, name, update, &UpdateOptions::default(), false)
        .await
        .map(|(quota, _)| quota)
}
