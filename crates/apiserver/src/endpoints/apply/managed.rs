//! `metadata.managedFields`: decoding it into per-manager field sets and encoding it back, as
//! k8s.io/apiserver's field manager does (`managedfields/internal`).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::fieldpath::{Path, Set};

/// The manager that a live object without any managed fields is attributed to on its first
/// apply (upstream's `before-first-apply`).
pub const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// The operation of a managed fields entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    /// Server-side apply.
    Apply,
    /// Any other write (create, update, patch).
    Update,
}

impl Operation {
    /// `Apply` or `Update`.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// Who manages a set of fields: the identity upstream encodes as the manager identifier.
///
/// Appliers are identified without API version (re-applying at another version replaces the
/// entry); updaters per API version.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ManagerKey {
    /// The field manager name.
    pub manager: String,
    /// Apply or Update.
    pub operation: Operation,
    /// The API version for `Update` entries; empty for `Apply`.
    pub api_version: String,
    /// The subresource written through (`status`, `scale`), or empty.
    pub subresource: String,
}

impl ManagerKey {
    /// The key of a manager writing through `operation` at `api_version`.
    pub fn new(manager: &str, operation: Operation, api_version: &str, subresource: &str) -> Self {
        Self {
            manager: manager.to_owned(),
            operation,
            api_version: match operation {
                Operation::Apply => String::new(),
                Operation::Update => api_version.to_owned(),
            },
            subresource: subresource.to_owned(),
        }
    }

    /// Upstream's manager identifier (the entry's JSON without time and fields), the order in
    /// which conflicts are reported.
    pub fn identifier(&self) -> String {
        let mut out = format!(
            "{{\"manager\":{},\"operation\":\"{}\"",
            quote(&self.manager),
            self.operation.as_str()
        );
        if !self.api_version.is_empty() {
            out.push_str(&format!(",\"apiVersion\":{}", quote(&self.api_version)));
        }
        if !self.subresource.is_empty() {
            out.push_str(&format!(",\"subresource\":{}", quote(&self.subresource)));
        }
        out.push('}');
        out
    }

    /// How conflict messages name the manager: `"name"`, with ` with subresource "s"`, and
    /// for updaters ` using <apiVersion>`.
    pub fn describe(&self) -> String {
        let mut out = quote(&self.manager);
        if !self.subresource.is_empty() {
            out.push_str(&format!(" with subresource {}", quote(&self.subresource)));
        }
        if self.operation == Operation::Update {
            out.push_str(&format!(" using {}", self.api_version));
        }
        out
    }
}

/// Go's `%q` for the strings managers are made of (JSON quoting agrees for printable text).
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// One manager's fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManagedEntry {
    /// The fields owned.
    pub set: Set,
    /// The API version the fields are expressed in.
    pub api_version: String,
    /// When the manager last changed the object (RFC 3339, seconds).
    pub time: Option<String>,
}

/// All managers of an object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ManagedFields {
    /// Entries by manager.
    pub entries: BTreeMap<ManagerKey, ManagedEntry>,
}

impl ManagedFields {
    /// Decodes `metadata.managedFields` (absent or null means none), with upstream's checks.
    pub fn decode(list: Option<&Value>) -> Result<Self, String> {
        let mut out = ManagedFields::default();
        let items = match list {
            None | Some(Value::Null) => return Ok(out),
            Some(Value::Array(items)) => items,
            Some(_) => return Err("managedFields must be a list".to_owned()),
        };
        for (i, item) in items.iter().enumerate() {
            let text = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or("");
            let operation = match text("operation") {
                "Apply" => Operation::Apply,
                "Update" => Operation::Update,
                _ => return Err("operation must be `Apply` or `Update`".to_owned()),
            };
            let api_version = text("apiVersion");
            if api_version.is_empty() {
                return Err("apiVersion must not be empty".to_owned());
            }
            match text("fieldsType") {
                "FieldsV1" => {}
                "" => return Err(format!("missing fieldsType in managed fields entry {i}")),
                other => {
                    return Err(format!(
                        "invalid fieldsType {other:?} in managed fields entry {i}"
                    ));
                }
            }
            let set = match item.get("fieldsV1") {
                None | Some(Value::Null) => Set::new(),
                Some(fields) => Set::from_fields_v1(fields)
                    .map_err(|e| format!("error decoding versioned set: {e}"))?,
            };
            let key = ManagerKey::new(text("manager"), operation, api_version, text("subresource"));
            let time = item.get("time").and_then(Value::as_str).map(str::to_owned);
            out.entries.insert(
                key,
                ManagedEntry {
                    set,
                    api_version: api_version.to_owned(),
                    time,
                },
            );
        }
        Ok(out)
    }

    /// Whether no manager is recorded.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Removes `strip` (exact paths) from every manager and drops managers left empty.
    pub fn strip(&mut self, strip: &Set) {
        for entry in self.entries.values_mut() {
            entry.set = entry.set.difference(strip);
        }
        self.drop_empty();
    }

    /// Drops managers that own nothing.
    pub fn drop_empty(&mut self) {
        self.entries.retain(|_, e| !e.set.is_empty());
    }

    /// The entries in upstream's order: by operation (`Apply` first), time, manager, API
    /// version and subresource.
    pub fn sorted(&self) -> Vec<(&ManagerKey, &ManagedEntry)> {
        let mut all: Vec<_> = self.entries.iter().collect();
        all.sort_by(|(ka, ea), (kb, eb)| {
            ka.operation
                .cmp(&kb.operation)
                .then_with(|| {
                    ea.time
                        .as_deref()
                        .unwrap_or("")
                        .cmp(eb.time.as_deref().unwrap_or(""))
                })
                .then_with(|| ka.manager.cmp(&kb.manager))
                .then_with(|| ea.api_version.cmp(&eb.api_version))
                .then_with(|| ka.subresource.cmp(&kb.subresource))
        });
        all
    }

    /// The `metadata.managedFields` list, or `None` when no manager remains.
    pub fn encode(&self) -> Option<Value> {
        if self.entries.is_empty() {
            return None;
        }
        let items = self
            .sorted()
            .into_iter()
            .map(|(key, entry)| {
                let mut item = Map::new();
                item.insert("manager".into(), json!(key.manager));
                item.insert("operation".into(), json!(key.operation.as_str()));
                item.insert("apiVersion".into(), json!(entry.api_version));
                if let Some(time) = &entry.time {
                    item.insert("time".into(), json!(time));
                }
                item.insert("fieldsType".into(), json!("FieldsV1"));
                let fields =
                    serde_json::from_str(&entry.set.to_fields_v1()).unwrap_or_else(|_| json!({}));
                item.insert("fieldsV1".into(), fields);
                if !key.subresource.is_empty() {
                    item.insert("subresource".into(), json!(key.subresource));
                }
                Value::Object(item)
            })
            .collect();
        Some(Value::Array(items))
    }
}

/// The manager that the oldest updaters are merged into when there are too many
/// (upstream's `ancient-changes`).
pub const ANCIENT_CHANGES: &str = "ancient-changes";

/// How many `Update` entries an object keeps before the oldest are merged (upstream's
/// `DefaultMaxUpdateManagers`).
pub const MAX_UPDATE_MANAGERS: usize = 10;

impl ManagedFields {
    /// Merges the oldest `Update` entries, per API version, into an `ancient-changes` entry
    /// until at most `max` updaters remain (upstream's cap-managers manager).
    pub fn cap_update_managers(&mut self, max: usize) {
        let mut updaters: Vec<ManagerKey> = self
            .entries
            .keys()
            .filter(|k| k.operation == Operation::Update)
            .cloned()
            .collect();
        if updaters.len() <= max {
            return;
        }
        let time_of = |k: &ManagerKey| {
            self.entries
                .get(k)
                .and_then(|e| e.time.clone())
                .unwrap_or_default()
        };
        updaters.sort_by_cached_key(|k| (time_of(k), k.identifier()));
        let mut first_of_version: BTreeMap<String, ManagerKey> = BTreeMap::new();
        let mut remaining = updaters.len();
        for manager in updaters {
            if remaining <= max {
                break;
            }
            let Some(entry) = self.entries.get(&manager).cloned() else {
                continue;
            };
            let version = entry.api_version.clone();
            let bucket = ManagerKey::new(ANCIENT_CHANGES, Operation::Update, &version, "");
            if manager == bucket {
                continue;
            }
            let Some(first) = first_of_version.get(&version) else {
                first_of_version.insert(version, manager);
                continue;
            };
            if !self.entries.contains_key(&bucket)
                && let Some(first_entry) = self.entries.remove(first)
            {
                self.entries.insert(bucket.clone(), first_entry);
            }
            let merged = match self.entries.get(&bucket) {
                Some(existing) => entry.set.union(&existing.set),
                None => entry.set.clone(),
            };
            self.entries.insert(
                bucket,
                ManagedEntry {
                    set: merged,
                    api_version: version,
                    // The merged update is the more recent one.
                    time: entry.time.clone(),
                },
            );
            self.entries.remove(&manager);
            remaining -= 1;
        }
    }
}

/// The fields no manager owns, whatever the object (upstream's strip-meta manager): the type
/// identity and the server-maintained metadata.
pub fn stripped_fields() -> Set {
    Set::from_paths([
        Path::fields(&["apiVersion"]),
        Path::fields(&["kind"]),
        Path::fields(&["metadata"]),
        Path::fields(&["metadata", "name"]),
        Path::fields(&["metadata", "namespace"]),
        Path::fields(&["metadata", "creationTimestamp"]),
        Path::fields(&["metadata", "selfLink"]),
        Path::fields(&["metadata", "uid"]),
        Path::fields(&["metadata", "clusterName"]),
        Path::fields(&["metadata", "generation"]),
        Path::fields(&["metadata", "managedFields"]),
        Path::fields(&["metadata", "resourceVersion"]),
    ])
}
