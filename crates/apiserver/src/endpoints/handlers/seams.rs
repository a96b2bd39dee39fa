//! Seams the server-side apply work plugs into (`crate::endpoints::apply`, built separately):
//! managedFields bookkeeping on every write, and the apply patch itself. Until it lands, these
//! keep the fields a client cannot lose and apply like a JSON merge patch.

use serde_json::Value;

use crate::registry::Strategy;
use crate::status::ApiError;

/// The kind of write a managedFields entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ManagedFieldsOperation {
    /// create, update and non-apply patches.
    Update,
    /// `application/apply-patch+yaml`.
    Apply,
}

/// Updates `new`'s `metadata.managedFields` for a write by `manager` (`old` is the current
/// object, `None` on create). Replace the body with the server-side apply implementation's
/// `update_managed_fields`. For now: an object that does not carry managedFields keeps the
/// current ones, as upstream's field manager does when a client omits them.
pub fn update_managed_fields(
    old: Option<&Value>,
    new: &mut Value,
    _manager: &str,
    _operation: ManagedFieldsOperation,
    _subresource: &str,
) -> Result<(), ApiError> {
    let Some(previous) = old.and_then(|o| o.pointer("/metadata/managedFields")) else {
        return Ok(());
    };
    if let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut)
        && !meta.contains_key("managedFields")
    {
        meta.insert("managedFields".into(), previous.clone());
    }
    Ok(())
}

/// One server-side apply request, as the PATCH handler hands it over.
pub struct ApplyRequest<'a> {
    /// The current object; `None` when it does not exist (apply creates it).
    pub current: Option<&'a Value>,
    /// The applied configuration (decoded from YAML or JSON).
    pub applied: &'a Value,
    /// The field manager (required for apply).
    pub manager: &'a str,
    /// `force=true`: take over conflicting fields.
    pub force: bool,
    /// The subresource patched (`status`), empty for the main resource.
    pub subresource: &'a str,
    /// The resource's strategy (schema for merge semantics).
    pub strategy: &'a dyn Strategy,
}

/// Server-side apply: the object after applying. Replace the body with the server-side apply
/// implementation's `apply`. For now: the applied object when creating, else the applied
/// configuration merged into the current object like a JSON merge patch (no conflicts).
pub fn apply(req: ApplyRequest<'_>) -> Result<Value, ApiError> {
    match req.current {
        None => Ok(req.applied.clone()),
        Some(current) => {
            let mut merged = current.clone();
            json_patch::merge(&mut merged, req.applied);
            Ok(merged)
        }
    }
}
