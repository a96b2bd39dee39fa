//! Where the REST handlers meet server-side apply (`crate::endpoints::apply`): managedFields
//! bookkeeping on every write, and the apply patch itself.

use serde_json::Value;

use crate::endpoints::apply::{self, ApplySchema, DeducedSchema, OpenApiSchema};
use crate::registry::Strategy;
use crate::registry::rest::RestStorage;
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
/// object, `None` on create): the manager owns what it changed (everything on create). An
/// apply has already recorded its fields, so only `Update` writes are tracked here.
pub fn update_managed_fields(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    operation: ManagedFieldsOperation,
    _subresource: &str,
    storage: &dyn RestStorage,
) -> Result<(), ApiError> {
    if operation == ManagedFieldsOperation::Apply {
        return Ok(());
    }
    let api_version = storage.info().api_version();
    with_schema(storage.strategy(), |schema| {
        apply::update_managed_fields(
            old,
            new,
            manager,
            apply::Operation::Update,
            &api_version,
            schema,
        )
    });
    Ok(())
}

/// Runs `f` with the apply schema of the strategy's OpenAPI definition, or a deduced one.
fn with_schema<R>(strategy: Option<&dyn Strategy>, f: impl FnOnce(&dyn ApplySchema) -> R) -> R {
    let schema = strategy.and_then(|s| s.patch_schema());
    if let Some((document, definition)) = &schema
        && let Some(openapi) = OpenApiSchema::for_definition(document, definition)
    {
        return f(&openapi);
    }
    f(&DeducedSchema)
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

/// Server-side apply (structured merge with managedFields, 409 on conflicts unless forced).
pub fn apply(req: ApplyRequest<'_>) -> Result<Value, ApiError> {
    let options = apply::ApplyOptions {
        manager: req.manager,
        force: req.force,
        subresource: req.subresource,
        ..Default::default()
    };
    with_schema(Some(req.strategy), |schema| {
        apply::apply_with(req.current, req.applied, &options, schema)
    })
    .map_err(ApiError::from)
}
