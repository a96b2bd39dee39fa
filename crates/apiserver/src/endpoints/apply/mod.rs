//! Server-side apply and `managedFields` tracking.
//!
//! Ports the behaviour of `sigs.k8s.io/structured-merge-diff` (field sets, merge, ownership
//! and conflicts) and of k8s.io/apiserver's field manager (managed fields entries, manager
//! identities, stripped metadata, `before-first-apply`, unchanged timestamps on no-op writes)
//! over unstructured JSON objects.
//!
//! - [`apply`] serves `application/apply-patch+yaml` PATCHes (and creates when the object is
//!   missing): it merges the applied configuration, removes what the manager stopped applying
//!   unless someone else owns it, and answers [`ApplyError::Conflicts`] (409) when another
//!   manager owns a field whose value would change, unless forced.
//! - [`update_managed_fields`] records every other write (create, update, patch): the writer
//!   takes ownership of what it changed.

pub mod fieldpath;
pub mod managed;
pub mod schema;
pub mod typed;

#[cfg(test)]
mod tests;

use http::StatusCode;
use serde_json::{Map, Value};

use crate::status::{ApiError, StatusCause, StatusDetails, reason};

pub use fieldpath::{Path, PathElement, Set};
pub use managed::{ManagedEntry, ManagedFields, ManagerKey, Operation};
pub use schema::{ApplySchema, DeducedSchema, FieldSchema, ListType, OpenApiSchema};

use managed::{BEFORE_FIRST_APPLY, ManagedEntry as Entry, stripped_fields};
use typed::{TypedErrors, compare, ensure_named_fields_are_members, merge, remove_items};

/// The `StatusCause` type of an apply conflict.
pub const CAUSE_FIELD_MANAGER_CONFLICT: &str = "FieldManagerConflict";

/// A field owned by another manager that an apply would change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The manager owning the field.
    pub manager: ManagerKey,
    /// The field.
    pub path: Path,
}

/// Why an apply failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// Other managers own fields the apply would change (409 Conflict).
    #[error("{}", conflict_message(.0))]
    Conflicts(Vec<Conflict>),
    /// The applied object is malformed (400 BadRequest), e.g. without apiVersion or kind.
    #[error("{0}")]
    BadRequest(String),
    /// The object does not fit its schema, e.g. duplicate keys in an associative list; kube
    /// reports these as bare errors (500 with an empty reason).
    #[error("{0}")]
    Internal(String),
}

/// Upstream's conflict message: one conflict inline, several grouped by manager.
fn conflict_message(conflicts: &[Conflict]) -> String {
    if let [only] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            only.manager.describe(),
            only.path
        );
    }
    let mut managers: Vec<&ManagerKey> = conflicts.iter().map(|c| &c.manager).collect();
    managers.sort_by_key(|m| m.identifier());
    managers.dedup();
    let mut lines = Vec::new();
    for manager in managers {
        lines.push(format!("conflicts with {}:", manager.describe()));
        for conflict in conflicts.iter().filter(|c| &c.manager == manager) {
            lines.push(format!("- {}", conflict.path));
        }
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}

impl From<ApplyError> for ApiError {
    fn from(error: ApplyError) -> Self {
        match &error {
            ApplyError::Conflicts(conflicts) => {
                let causes = conflicts
                    .iter()
                    .map(|c| StatusCause {
                        reason: CAUSE_FIELD_MANAGER_CONFLICT.to_owned(),
                        message: format!("conflict with {}", c.manager.describe()),
                        field: c.path.to_string(),
                    })
                    .collect();
                ApiError::new(StatusCode::CONFLICT, reason::CONFLICT, error.to_string())
                    .with_details(StatusDetails {
                        causes,
                        ..StatusDetails::default()
                    })
            }
            ApplyError::BadRequest(message) => ApiError::bad_request(message.clone()),
            ApplyError::Internal(message) => {
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "", message.clone())
            }
        }
    }
}

/// Options of [`apply_with`].
#[derive(Clone, Copy, Debug, Default)]
pub struct ApplyOptions<'a> {
    /// The field manager (`fieldManager`), required for apply.
    pub manager: &'a str,
    /// `force=true`: take ownership of conflicting fields instead of failing.
    pub force: bool,
    /// The subresource applied through (`status`), or empty.
    pub subresource: &'a str,
    /// The time to record (RFC 3339, seconds); the current time when `None`.
    pub now: Option<&'a str>,
    /// Fields nobody takes ownership of through this endpoint (upstream's reset fields,
    /// e.g. `status` on the main resource, everything but `status` on `/status`).
    pub ignored: Option<&'a Set>,
}

/// Options of [`update_managed_fields_with`].
#[derive(Clone, Copy, Debug)]
pub struct UpdateOptions<'a> {
    /// The field manager.
    pub manager: &'a str,
    /// The operation recorded (normally [`Operation::Update`]).
    pub operation: Operation,
    /// The API version of the request.
    pub api_version: &'a str,
    /// The subresource written through, or empty.
    pub subresource: &'a str,
    /// The time to record (RFC 3339, seconds); the current time when `None`.
    pub now: Option<&'a str>,
    /// Fields nobody takes ownership of through this endpoint (see [`ApplyOptions::ignored`]).
    pub ignored: Option<&'a Set>,
}

/// The current time as managed fields record it (RFC 3339, whole seconds, UTC).
pub fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// Applies `applied` to `live` (`None` when creating) for `manager`; returns the new object
/// with its `metadata.managedFields`.
pub fn apply(
    live: Option<&Value>,
    applied: &Value,
    manager: &str,
    force: bool,
    schema: &dyn ApplySchema,
) -> Result<Value, ApplyError> {
    apply_with(
        live,
        applied,
        &ApplyOptions {
            manager,
            force,
            ..ApplyOptions::default()
        },
        schema,
    )
}

fn text<'v>(object: &'v Value, pointer: &str) -> &'v str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Go's `schema.GroupVersionKind` string: `group/version, Kind=kind`.
fn gvk_string(api_version: &str, kind: &str) -> String {
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    format!("{group}/{version}, Kind={kind}")
}

/// A copy of `object` without `metadata.managedFields`.
fn without_managed_fields(object: &Value) -> Value {
    let mut copy = object.clone();
    if let Some(meta) = copy.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    copy
}

/// Stores `managed` as `metadata.managedFields` (removing it when no manager remains).
fn set_managed_fields(object: &mut Value, managed: &ManagedFields) {
    let Some(map) = object.as_object_mut() else {
        return;
    };
    match managed.encode() {
        Some(list) => {
            let meta = map
                .entry("metadata")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert("managedFields".into(), list);
            }
        }
        None => {
            if let Some(meta) = map.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("managedFields");
            }
        }
    }
}

/// The annotation in which client-side apply keeps the last applied configuration.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The manager of `kubectl apply --server-side`, which upstream lets take over from
/// client-side apply and keep its annotation in sync.
const KUBECTL_MANAGER: &str = "kubectl";

/// Upstream's limit on the size of all annotations together.
const MAX_ANNOTATIONS_BYTES: usize = 256 * 1024;

/// [`apply`] with all options.
///
/// For the `kubectl` manager this also follows kube's client-side-apply upgrade path:
/// conflicts on fields that the `last-applied-configuration` annotation holds with their live
/// value are forced, and an existing annotation is rewritten to the applied configuration.
pub fn apply_with(
    live: Option<&Value>,
    applied: &Value,
    options: &ApplyOptions<'_>,
    schema: &dyn ApplySchema,
) -> Result<Value, ApplyError> {
    let mut result = match apply_once(live, applied, options, options.force, schema) {
        Err(ApplyError::Conflicts(conflicts)) if options.manager == KUBECTL_MANAGER => {
            let Some(allowed) = live.and_then(|l| allowed_conflicts_from_last_applied(l, schema))
            else {
                return Err(ApplyError::Conflicts(conflicts));
            };
            let remaining: Vec<Conflict> = conflicts
                .into_iter()
                .filter(|c| !allowed.has(&c.path.0))
                .collect();
            if !remaining.is_empty() {
                return Err(ApplyError::Conflicts(remaining));
            }
            apply_once(live, applied, options, true, schema)?
        }
        other => other?,
    };
    if options.manager == KUBECTL_MANAGER {
        sync_last_applied(&mut result, applied);
    }
    if let Some(live) = live {
        keep_timestamps_of_noop(live, &mut result);
    }
    Ok(result)
}

/// The fields the live object still holds with the value its last client-side apply set.
fn allowed_conflicts_from_last_applied(live: &Value, schema: &dyn ApplySchema) -> Option<Set> {
    let annotation = live
        .pointer("/metadata/annotations")?
        .get(LAST_APPLIED_ANNOTATION)?
        .as_str()
        .filter(|t| !t.is_empty())?;
    let last_applied: Value = serde_json::from_str(annotation).ok()?;
    if !last_applied.is_object() || text(&last_applied, "/apiVersion") != text(live, "/apiVersion")
    {
        return None;
    }
    let live = without_managed_fields(live);
    let set = typed::to_field_set(&last_applied, schema).ok()?;
    let comparison = compare(Some(&last_applied), Some(&live), schema).ok()?;
    Some(
        set.difference(&comparison.modified)
            .difference(&comparison.added)
            .difference(&comparison.removed),
    )
}

/// Rewrites an existing `last-applied-configuration` annotation to `applied` (without the
/// annotation itself), as kube does for `kubectl apply --server-side`; drops it when the
/// annotations would grow beyond their size limit.
fn sync_last_applied(result: &mut Value, applied: &Value) {
    let Some(annotations) = result
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    if !annotations.contains_key(LAST_APPLIED_ANNOTATION) {
        return;
    }
    let mut config = applied.clone();
    if let Some(map) = config
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        map.remove(LAST_APPLIED_ANNOTATION);
    }
    let text = crate::util::gojson::to_line(&config)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok());
    let Some(text) = text else {
        return;
    };
    annotations.insert(LAST_APPLIED_ANNOTATION.into(), Value::String(text));
    let size: usize = annotations
        .iter()
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .sum();
    if size > MAX_ANNOTATIONS_BYTES {
        annotations.remove(LAST_APPLIED_ANNOTATION);
    }
}

/// One pass of the structured merge: merge, prune, ownership and conflicts.
fn apply_once(
    live: Option<&Value>,
    applied: &Value,
    options: &ApplyOptions<'_>,
    force: bool,
    schema: &dyn ApplySchema,
) -> Result<Value, ApplyError> {
    if !applied.is_object() {
        return Err(ApplyError::BadRequest(
            "error decoding YAML: the applied configuration is not an object".to_owned(),
        ));
    }
    let api_version = text(applied, "/apiVersion");
    let kind = text(applied, "/kind");
    let type_mismatch = live.is_some_and(|l| {
        let (lv, lk) = (text(l, "/apiVersion"), text(l, "/kind"));
        (!lv.is_empty() && lv != api_version) || (!lk.is_empty() && lk != kind)
    });
    if api_version.is_empty() || kind.is_empty() || type_mismatch {
        return Err(ApplyError::BadRequest(format!(
            "invalid object type: {}",
            gvk_string(api_version, kind)
        )));
    }
    if applied
        .pointer("/metadata/managedFields")
        .is_some_and(|v| !v.is_null())
    {
        return Err(ApplyError::BadRequest(
            "metadata.managedFields must be nil".to_owned(),
        ));
    }
    if let Some(live) = live {
        let (name, live_name) = (
            text(applied, "/metadata/name"),
            text(live, "/metadata/name"),
        );
        if !name.is_empty() && !live_name.is_empty() && name != live_name {
            return Err(ApplyError::BadRequest(format!(
                "the name of the object ({name}) does not match the name on the URL ({live_name})"
            )));
        }
    }
    let describe = || {
        // Upstream's `namespace/name; gvk` of the applied object (`/name` when it names no
        // namespace, as for cluster-scoped objects).
        format!(
            "{}/{}; {}",
            text(applied, "/metadata/namespace"),
            text(applied, "/metadata/name"),
            gvk_string(api_version, kind)
        )
    };

    let live_object = live
        .map(without_managed_fields)
        .unwrap_or_else(|| Value::Object(Map::new()));
    let mut managers = match live {
        Some(l) => ManagedFields::decode(l.pointer("/metadata/managedFields"))
            .map_err(|e| ApplyError::Internal(format!("failed to decode managed fields: {e}")))?,
        None => ManagedFields::default(),
    };
    let strip = stripped_fields();
    if live.is_some() && managers.is_empty() {
        // An object written before fields were tracked: everything it holds is attributed to
        // one updater, so that the first apply does not silently take it over.
        let set = typed::to_field_set(&live_object, schema).map_err(|e| {
            ApplyError::Internal(format!(
                "failed to create typed live object ({}): {e}",
                describe()
            ))
        })?;
        managers.entries.insert(
            ManagerKey::new(BEFORE_FIRST_APPLY, Operation::Update, api_version, ""),
            Entry {
                set: set.difference(&strip),
                api_version: api_version.to_owned(),
                time: None,
            },
        );
    }

    // The applied configuration is the client's input: a field its schema does not declare
    // is a 400 (upstream answers its typed-conversion error with a 500).
    let mut config_set = typed::to_declared_field_set(applied, schema).map_err(|e| {
        ApplyError::BadRequest(format!(
            "failed to create typed patch object ({}): {e}",
            describe()
        ))
    })?;
    if let Some(ignored) = options.ignored {
        config_set = config_set.recursive_difference(ignored);
    }
    let merged = merge(&live_object, applied, schema)
        .map_err(|e| ApplyError::Internal(format!("failed to merge config: {e}")))?;
    let key = ManagerKey::new(
        options.manager,
        Operation::Apply,
        api_version,
        options.subresource,
    );
    let last = managers.entries.remove(&key);
    managers.entries.insert(
        key.clone(),
        Entry {
            set: config_set,
            api_version: api_version.to_owned(),
            time: None,
        },
    );
    let pruned = prune(&merged, &managers, last.as_ref().map(|e| &e.set), schema)
        .map_err(|e| ApplyError::Internal(format!("failed to prune fields: {e}")))?;
    let comparison = compare(Some(&live_object), Some(&pruned), schema)
        .map_err(|e| ApplyError::Internal(format!("failed to compare objects: {e}")))?
        .excluding(options.ignored);
    let conflicts = take_changed_fields(&mut managers, &comparison, Some(&key), force);
    if !conflicts.is_empty() {
        return Err(ApplyError::Conflicts(conflicts));
    }
    managers.strip(&strip);
    let now = options.now.map(str::to_owned).unwrap_or_else(now_rfc3339);
    if let Some(entry) = managers.entries.get_mut(&key) {
        entry.time = Some(now);
    }
    managers.cap_update_managers(managed::MAX_UPDATE_MANAGERS);
    let mut result = pruned;
    set_managed_fields(&mut result, &managers);
    Ok(result)
}

/// Removes from the other managers what changed (forced: conflicts are taken over) and what
/// was removed; returns the conflicts instead when not forced.
fn take_changed_fields(
    managers: &mut ManagedFields,
    comparison: &typed::Comparison,
    workflow: Option<&ManagerKey>,
    force: bool,
) -> Vec<Conflict> {
    let changed = comparison.modified.union(&comparison.added);
    let mut conflicts = Vec::new();
    let mut by_identifier: Vec<(&ManagerKey, &Entry)> = managers.entries.iter().collect();
    by_identifier.sort_by_key(|(k, _)| k.identifier());
    for (key, entry) in by_identifier {
        if Some(key) == workflow {
            continue;
        }
        for path in entry.set.intersection(&changed).paths() {
            conflicts.push(Conflict {
                manager: key.clone(),
                path,
            });
        }
    }
    if !force && !conflicts.is_empty() {
        return conflicts;
    }
    for (key, entry) in &mut managers.entries {
        if Some(key) == workflow {
            continue;
        }
        entry.set = entry
            .set
            .difference(&changed)
            .difference(&comparison.removed);
    }
    managers.drop_empty();
    Vec::new()
}

/// Drops from `merged` what the applier owned before (`last`) but no longer applies, unless
/// another manager owns it (upstream's prune, add-back-owned and add-back-dangling steps).
fn prune(
    merged: &Value,
    managers: &ManagedFields,
    last: Option<&Set>,
    schema: &dyn ApplySchema,
) -> Result<Value, TypedErrors> {
    let Some(last) = last.filter(|s| !s.is_empty()) else {
        return Ok(merged.clone());
    };
    let ensure = |set: &Set| ensure_named_fields_are_members(set, schema);
    let field_set = |value: &Value| typed::to_field_set(value, schema).map(|s| ensure(&s));
    let removed = |set: &Set| remove_items(merged, set, schema).unwrap_or_else(empty_object);

    let last = ensure(last);
    let pruned = removed(&last);
    let owned = managers
        .entries
        .values()
        .fold(Set::new(), |acc, e| acc.union(&e.set));
    let merged_set = field_set(merged)?;
    let pruned_set = field_set(&pruned)?;
    let pruned = removed(&merged_set.difference(&pruned_set.union(&ensure(&owned))));
    let pruned_set = field_set(&pruned)?;
    Ok(removed(
        &merged_set.difference(&pruned_set).intersection(&last),
    ))
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// Records a non-apply write of `new` over `old` (`None` on create) by `manager`: the manager
/// takes ownership of every field it added or changed, which other managers lose, and
/// `metadata.managedFields` of `new` is rewritten.
///
/// As upstream, managed fields sent in `new` replace the live ones when they decode and are
/// not empty; `[{}]` resets them. A failure to track (an object that does not fit its schema)
/// is not an error of the write: `new` is stored without managed fields.
pub fn update_managed_fields(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    operation: Operation,
    api_version: &str,
    schema: &dyn ApplySchema,
) {
    update_managed_fields_with(
        old,
        new,
        &UpdateOptions {
            manager,
            operation,
            api_version,
            subresource: "",
            now: None,
            ignored: None,
        },
        schema,
    );
}

/// [`update_managed_fields`] with all options.
pub fn update_managed_fields_with(
    old: Option<&Value>,
    new: &mut Value,
    options: &UpdateOptions<'_>,
    schema: &dyn ApplySchema,
) {
    let mut managers = live_or_new_managers(old, new);
    let old_object = old.map(without_managed_fields).unwrap_or_else(empty_object);
    if let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    let comparison = match compare(Some(&old_object), Some(new), schema) {
        Ok(c) => c.excluding(options.ignored),
        Err(error) => {
            tracing::warn!(%error, "managed fields not tracked for an object that does not fit its schema");
            return;
        }
    };
    // Every manager, the writer's earlier entry included, loses what this write changed or
    // removed; the writer then owns what it added or changed.
    take_changed_fields(&mut managers, &comparison, None, true);
    let owned = comparison.modified.union(&comparison.added);
    let strip = stripped_fields();
    let owned = owned.difference(&strip);
    if !owned.is_empty() {
        let key = ManagerKey::new(
            options.manager,
            options.operation,
            options.api_version,
            options.subresource,
        );
        let now = options.now.map(str::to_owned).unwrap_or_else(now_rfc3339);
        let previous = managers.entries.remove(&key).map(|e| e.set);
        managers.entries.insert(
            key,
            Entry {
                set: match previous {
                    Some(previous) => owned.union(&previous),
                    None => owned,
                },
                api_version: options.api_version.to_owned(),
                time: Some(now),
            },
        );
    }
    managers.strip(&strip);
    managers.cap_update_managers(managed::MAX_UPDATE_MANAGERS);
    set_managed_fields(new, &managers);
    if let Some(old) = old {
        keep_timestamps_of_noop(old, new);
    }
}

/// The managers a non-apply write starts from (upstream's `decodeLiveOrNew`).
fn live_or_new_managers(old: Option<&Value>, new: &Value) -> ManagedFields {
    let sent = new.pointer("/metadata/managedFields");
    if let Some(Value::Array(items)) = sent
        && items.len() == 1
        && items[0].as_object().is_some_and(Map::is_empty)
    {
        return ManagedFields::default();
    }
    match ManagedFields::decode(sent) {
        Ok(managed) if !managed.is_empty() => managed,
        _ => old
            .and_then(|o| ManagedFields::decode(o.pointer("/metadata/managedFields")).ok())
            .unwrap_or_default(),
    }
}

/// Keeps the old `managedFields` when a write changes nothing but their timestamps, so that
/// a no-op apply or update stays a no-op (upstream's `IgnoreManagedFieldsTimestampsTransformer`).
pub fn keep_timestamps_of_noop(old: &Value, new: &mut Value) {
    let strip_times = |list: Option<&Value>| -> Option<Vec<Value>> {
        let items = list?.as_array()?;
        Some(
            items
                .iter()
                .map(|item| {
                    let mut item = item.clone();
                    if let Some(map) = item.as_object_mut() {
                        map.remove("time");
                    }
                    item
                })
                .collect(),
        )
    };
    let old_list = old.pointer("/metadata/managedFields");
    let new_list = new.pointer("/metadata/managedFields");
    if old_list == new_list {
        return;
    }
    let (Some(old_items), Some(new_items)) = (strip_times(old_list), strip_times(new_list)) else {
        return;
    };
    if old_items != new_items || without_managed_fields(old) != without_managed_fields(new) {
        return;
    }
    if let (Some(list), Some(meta)) = (
        old_list.cloned(),
        new.get_mut("metadata").and_then(Value::as_object_mut),
    ) {
        meta.insert("managedFields".into(), list);
    }
}
