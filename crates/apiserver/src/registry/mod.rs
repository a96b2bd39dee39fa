//! The generic registry (upstream `pkg/registry`): one [`store::Store`] that every resource
//! reuses, parameterised by a per-resource [`Strategy`], behind the [`rest::RestStorage`] trait
//! the REST handlers call.
//!
//! Objects travel as JSON values (`serde_json::Value`, i.e. unstructured objects): the REST
//! layer decodes request bodies into them, strategies validate and default them (typed
//! strategies deserialize them into their Rust types), and storage keeps their JSON.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::status::{ApiError, StatusCause};

pub mod field;
pub mod informer;
pub mod names;
pub mod rest;
pub mod store;
pub mod typed;

pub use field::{FieldError, FieldErrorType};

/// What the API says about a resource (its discovery facts and naming).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceInfo {
    /// API group, empty for the core group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind, e.g. `ConfigMap`.
    pub kind: String,
    /// List kind, e.g. `ConfigMapList`.
    pub list_kind: String,
    /// Resource (plural, lower-case), e.g. `configmaps`.
    pub resource: String,
    /// Singular name, e.g. `configmap`.
    pub singular: String,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Short names (`cm`).
    pub short_names: Vec<String>,
    /// Categories (`all`).
    pub categories: Vec<String>,
}

impl ResourceInfo {
    /// `group/version`, or just `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// A column of a `Table` (`metav1.TableColumnDefinition`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TableColumn {
    /// Column header, e.g. `Name`.
    pub name: String,
    /// OpenAPI type: `string`, `integer`, `number`, `boolean`, `date`.
    #[serde(rename = "type")]
    pub type_: String,
    /// OpenAPI format, e.g. `name`.
    pub format: String,
    /// Description.
    pub description: String,
    /// 0 for the default columns, higher for `-o wide`.
    pub priority: i32,
}

impl TableColumn {
    /// A column definition.
    pub fn new(name: &str, type_: &str, format: &str, description: &str, priority: i32) -> Self {
        TableColumn {
            name: name.into(),
            type_: type_.into(),
            format: format.into(),
            description: description.into(),
            priority,
        }
    }
}

/// Field values an object exposes to field selectors (always `metadata.name` and, for
/// namespaced resources, `metadata.namespace`; resources add their own, e.g. `spec.nodeName`).
pub type SelectableFields = BTreeMap<String, String>;

/// The per-resource behaviour of the generic store (upstream's `RESTCreateStrategy`,
/// `RESTUpdateStrategy`, `RESTDeleteStrategy` and `TableConvertor` rolled into one).
///
/// Every method has the default of a plain resource, so a simple resource only describes
/// itself with [`Strategy::info`].
pub trait Strategy: Send + Sync {
    /// The resource this strategy is for.
    fn info(&self) -> &ResourceInfo;

    /// Clears what a create may not set (e.g. `status` on resources with a status
    /// subresource) and applies defaults.
    fn prepare_for_create(&self, _obj: &mut Value) {}

    /// Keeps what an update may not change (e.g. `status` on the main resource, `spec` on the
    /// status subresource).
    fn prepare_for_update(&self, _new: &mut Value, _old: &Value) {}

    /// Validates a new object. Field paths as upstream (`spec.replicas`).
    fn validate(&self, _obj: &Value) -> Vec<FieldError> {
        Vec::new()
    }

    /// Validates an update.
    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        self.validate(new)
    }

    /// Removes the fields of a request body that the resource's type does not declare (upstream
    /// decodes bodies into their Go type, so such fields are never stored) and names them for
    /// `fieldValidation`, as upstream's strict decoding does (`spec.foo`). Typed strategies
    /// drop what their type does not know; the default knows every field.
    fn drop_unknown_fields(&self, _obj: &mut Value) -> Vec<String> {
        Vec::new()
    }

    /// Whether `spec` changes bump `metadata.generation` (true for most resources with a
    /// spec; the store compares everything but `metadata` and `status`).
    fn tracks_generation(&self) -> bool {
        false
    }

    /// Whether PUT on a missing object creates it.
    fn allow_create_on_update(&self) -> bool {
        false
    }

    /// Whether an update without `metadata.resourceVersion` is allowed (unconditional).
    fn allow_unconditional_update(&self) -> bool {
        true
    }

    /// Extra field-selector fields of `obj`.
    fn selectable_fields(&self, _obj: &Value) -> SelectableFields {
        SelectableFields::new()
    }

    /// The table columns (default: `Name`, `Created At`).
    fn table_columns(&self) -> Vec<TableColumn> {
        vec![
            TableColumn::new(
                "Name",
                "string",
                "name",
                "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
                0,
            ),
            TableColumn::new(
                "Created At",
                "date",
                "",
                "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
                0,
            ),
        ]
    }

    /// The cells of one table row, matching [`Strategy::table_columns`].
    fn table_row(&self, obj: &Value) -> Vec<Value> {
        let meta = obj.get("metadata");
        vec![
            meta.and_then(|m| m.get("name"))
                .cloned()
                .unwrap_or(Value::String(String::new())),
            meta.and_then(|m| m.get("creationTimestamp"))
                .cloned()
                .unwrap_or(Value::Null),
        ]
    }

    /// The OpenAPI document and the definition name of this kind (e.g.
    /// `io.k8s.api.core.v1.ConfigMap`), from which strategic-merge-patch metadata (patch
    /// strategies and merge keys) is read. `None` merges like a JSON merge patch.
    fn patch_schema(&self) -> Option<(Arc<Value>, String)> {
        None
    }

    /// Whether strategic merge patch is accepted (built-in types: yes; custom resources: 415).
    fn supports_strategic_merge_patch(&self) -> bool {
        true
    }

    /// Checks before deleting (e.g. namespaces); an error aborts the delete.
    fn before_delete(&self, _obj: &Value) -> Result<(), ApiError> {
        Ok(())
    }

    /// Whether the resource is deleted gracefully (upstream: the strategy implements
    /// `RESTGracefulDeleteStrategy`). Only then do deletions get a grace period, and a second
    /// delete of an object whose graceful deletion is pending may only shorten it.
    fn supports_graceful_delete(&self) -> bool {
        false
    }

    /// Upstream `CheckGracefulDelete`, asked when an object not yet being deleted is deleted
    /// (only if [`supports_graceful_delete`](Self::supports_graceful_delete)): whether to
    /// delete it gracefully, with `opts.grace_period_seconds` set to the period to use (`0`:
    /// mark it and remove it at once).
    fn check_graceful_delete(&self, _obj: &Value, _opts: &mut rest::DeleteOptions) -> bool {
        false
    }
}

/// A shared strategy.
pub type SharedStrategy = Arc<dyn Strategy>;

/// The 422 `Invalid` error for `errs` on `kind` `name` (upstream `NewInvalid`).
pub fn invalid(info: &ResourceInfo, name: &str, errs: &[FieldError]) -> ApiError {
    let causes: Vec<StatusCause> = errs.iter().map(FieldError::to_cause).collect();
    let summary: Vec<String> = errs.iter().map(FieldError::to_string).collect();
    let qualified = if info.group.is_empty() {
        info.kind.clone()
    } else {
        format!("{}.{}", info.kind, info.group)
    };
    let message = match summary.len() {
        1 => format!("{qualified} {name:?} is invalid: {}", summary[0]),
        _ => format!("{qualified} {name:?} is invalid: [{}]", summary.join(", ")),
    };
    ApiError::new(
        http::StatusCode::UNPROCESSABLE_ENTITY,
        crate::status::reason::INVALID,
        message,
    )
    .with_details(crate::status::StatusDetails {
        name: name.to_string(),
        group: info.group.clone(),
        kind: info.kind.clone(),
        causes,
        ..Default::default()
    })
}
