//! One [`Strategy`] implementation for every built-in resource, configured per resource with
//! plain functions (defaulting, validation, table, selectable fields) and its k8s-openapi type
//! (type errors and unknown fields).

use apiserver::registry::rest::DeleteOptions;
use apiserver::registry::{FieldError, ResourceInfo, SelectableFields, Strategy, TableColumn};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::typed;
use super::validation::{NameRule, validate_object_meta};

/// Defaulting of an object (applied on create and on update, as upstream defaults every
/// decoded object).
pub type DefaultFn = fn(&mut Value);
/// Extra preparation on create (after `status` was cleared), e.g. a status phase.
pub type PrepareCreateFn = fn(&mut Value);
/// Extra preparation on update (after `status` was kept), e.g. allocated fields.
pub type PrepareUpdateFn = fn(&mut Value, &Value);
/// Resource validation of a well-typed object (metadata is validated already).
pub type ValidateFn = fn(&Value) -> Vec<FieldError>;
/// Update-only validation (immutable fields), added to [`ValidateFn`]'s errors.
pub type ValidateUpdateFn = fn(&Value, &Value) -> Vec<FieldError>;
/// Extra field-selector fields.
pub type SelectableFn = fn(&Value) -> SelectableFields;
/// Upstream `CheckGracefulDelete`: whether to delete gracefully, with the period to use set
/// in the options.
pub type GracefulDeleteFn = fn(&Value, &mut DeleteOptions) -> bool;
/// Table columns.
pub type ColumnsFn = fn() -> Vec<TableColumn>;
/// The cells of one row.
pub type RowFn = fn(&Value) -> Vec<Value>;

/// A built-in resource's strategy.
pub struct BuiltinStrategy {
    info: ResourceInfo,
    name_rule: NameRule,
    type_error: fn(&Value) -> Option<FieldError>,
    drop_unknown_fields: fn(&mut Value) -> Vec<String>,
    /// Whether `status` is a subresource (main-resource updates keep the stored one).
    status_subresource: bool,
    /// What a create starts `status` as (`None` keeps the client's, as for nodes).
    initial_status: Option<fn() -> Value>,
    tracks_generation: bool,
    create_on_update: bool,
    unconditional_update: bool,
    defaults: Option<DefaultFn>,
    prepare_create: Option<PrepareCreateFn>,
    prepare_update: Option<PrepareUpdateFn>,
    validate: Option<ValidateFn>,
    validate_update: Option<ValidateUpdateFn>,
    selectable: Option<SelectableFn>,
    table: Option<(ColumnsFn, RowFn)>,
    graceful_delete: Option<GracefulDeleteFn>,
}

fn empty_status() -> Value {
    Value::Object(Default::default())
}

impl BuiltinStrategy {
    /// A strategy for `info` whose objects decode as `T`; names are DNS-1123 subdomains.
    pub fn new<T: DeserializeOwned>(info: ResourceInfo) -> Self {
        BuiltinStrategy {
            info,
            name_rule: NameRule::Subdomain,
            type_error: typed::type_error::<T>,
            drop_unknown_fields: typed::drop_unknown_fields::<T>,
            status_subresource: false,
            initial_status: None,
            tracks_generation: false,
            create_on_update: false,
            unconditional_update: true,
            defaults: None,
            prepare_create: None,
            prepare_update: None,
            validate: None,
            validate_update: None,
            selectable: None,
            table: None,
            graceful_delete: None,
        }
    }

    /// Names follow `rule`.
    pub fn name_rule(mut self, rule: NameRule) -> Self {
        self.name_rule = rule;
        self
    }

    /// A status subresource: create starts from an empty `status`, main-resource updates keep
    /// the stored one.
    pub fn status(mut self) -> Self {
        self.status_subresource = true;
        self.initial_status = Some(empty_status);
        self
    }

    /// A status subresource whose create-time status is `initial` (e.g. a phase, or the
    /// zero counters Go serializes because they lack `omitempty`).
    pub fn status_from(mut self, initial: fn() -> Value) -> Self {
        self.status_subresource = true;
        self.initial_status = Some(initial);
        self
    }

    /// A status subresource whose create keeps the client's status (nodes: the kubelet
    /// registers a node with its status).
    pub fn status_kept_on_create(mut self) -> Self {
        self.status_subresource = true;
        self.initial_status = None;
        self
    }

    /// Spec changes bump `metadata.generation`.
    pub fn generation(mut self) -> Self {
        self.tracks_generation = true;
        self
    }

    /// PUT on a missing object creates it.
    pub fn create_on_update(mut self) -> Self {
        self.create_on_update = true;
        self
    }

    /// Defaulting.
    pub fn defaults(mut self, f: DefaultFn) -> Self {
        self.defaults = Some(f);
        self
    }

    /// Extra create preparation.
    pub fn prepare_create(mut self, f: PrepareCreateFn) -> Self {
        self.prepare_create = Some(f);
        self
    }

    /// Extra update preparation.
    pub fn prepare_update(mut self, f: PrepareUpdateFn) -> Self {
        self.prepare_update = Some(f);
        self
    }

    /// Validation.
    pub fn validate(mut self, f: ValidateFn) -> Self {
        self.validate = Some(f);
        self
    }

    /// Update validation.
    pub fn validate_update(mut self, f: ValidateUpdateFn) -> Self {
        self.validate_update = Some(f);
        self
    }

    /// Selectable fields.
    pub fn selectable(mut self, f: SelectableFn) -> Self {
        self.selectable = Some(f);
        self
    }

    /// Table columns and rows.
    pub fn table(mut self, columns: ColumnsFn, row: RowFn) -> Self {
        self.table = Some((columns, row));
        self
    }

    /// Graceful deletion (upstream `RESTGracefulDeleteStrategy`).
    pub fn graceful_delete(mut self, f: GracefulDeleteFn) -> Self {
        self.graceful_delete = Some(f);
        self
    }

    fn validate_common(&self, obj: &Value) -> Vec<FieldError> {
        // A mistyped object cannot be validated further; upstream's decoder stops there too.
        if let Some(err) = (self.type_error)(obj) {
            return vec![err];
        }
        let mut errs = validate_object_meta(obj, self.name_rule);
        if let Some(validate) = self.validate {
            errs.extend(validate(obj));
        }
        errs
    }
}

impl Strategy for BuiltinStrategy {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if let (Some(initial), Value::Object(map)) = (self.initial_status, &mut *obj) {
            map.insert("status".into(), initial());
        }
        if let Some(defaults) = self.defaults {
            defaults(obj);
        }
        if let Some(prepare) = self.prepare_create {
            prepare(obj);
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        if self.status_subresource
            && let Value::Object(map) = new
        {
            match old.get("status") {
                Some(status) => map.insert("status".into(), status.clone()),
                None => map.remove("status"),
            };
        }
        if let Some(defaults) = self.defaults {
            defaults(new);
        }
        if let Some(prepare) = self.prepare_update {
            prepare(new, old);
        }
    }

    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        self.validate_common(obj)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        if let Some(err) = (self.type_error)(new) {
            return vec![err];
        }
        let mut errs = self.validate_common(new);
        if let Some(validate_update) = self.validate_update {
            errs.extend(validate_update(new, old));
        }
        errs
    }

    fn drop_unknown_fields(&self, obj: &mut Value) -> Vec<String> {
        (self.drop_unknown_fields)(obj)
    }

    fn tracks_generation(&self) -> bool {
        self.tracks_generation
    }

    fn allow_create_on_update(&self) -> bool {
        self.create_on_update
    }

    fn allow_unconditional_update(&self) -> bool {
        self.unconditional_update
    }

    fn selectable_fields(&self, obj: &Value) -> SelectableFields {
        self.selectable.map(|f| f(obj)).unwrap_or_default()
    }

    fn supports_graceful_delete(&self) -> bool {
        self.graceful_delete.is_some()
    }

    fn check_graceful_delete(&self, obj: &Value, opts: &mut DeleteOptions) -> bool {
        self.graceful_delete.is_some_and(|f| f(obj, opts))
    }

    fn table_columns(&self) -> Vec<TableColumn> {
        match self.table {
            Some((columns, _)) => columns(),
            None => default_columns(),
        }
    }

    fn table_row(&self, obj: &Value) -> Vec<Value> {
        match self.table {
            Some((_, row)) => row(obj),
            None => default_row(obj),
        }
    }
}

/// The generic `Name`, `Created At` columns.
fn default_columns() -> Vec<TableColumn> {
    struct Plain;
    impl Strategy for Plain {
        fn info(&self) -> &ResourceInfo {
            static EMPTY: std::sync::OnceLock<ResourceInfo> = std::sync::OnceLock::new();
            EMPTY.get_or_init(ResourceInfo::default)
        }
    }
    Plain.table_columns()
}

fn default_row(obj: &Value) -> Vec<Value> {
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

/// The discovery facts of a resource.
#[allow(clippy::too_many_arguments)]
pub fn info(
    group: &str,
    version: &str,
    kind: &str,
    resource: &str,
    namespaced: bool,
    short_names: &[&str],
    categories: &[&str],
) -> ResourceInfo {
    ResourceInfo {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        list_kind: format!("{kind}List"),
        resource: resource.into(),
        singular: kind.to_lowercase(),
        namespaced,
        short_names: short_names.iter().map(|s| s.to_string()).collect(),
        categories: categories.iter().map(|s| s.to_string()).collect(),
    }
}
