//! Pruning of unknown fields (upstream `pruning/algorithm.go`) and the coercion of
//! `metadata` to ObjectMeta's fields (upstream `objectmeta/coerce.go`).

use serde_json::{Map, Value};

use super::node::Node;

/// The fields of ObjectMeta: a resource's `metadata` keeps only these (upstream decodes it
/// into the typed ObjectMeta, which drops the rest).
const OBJECT_META_FIELDS: [&str; 16] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
    "clusterName",
];

fn is_meta(k: &str) -> bool {
    matches!(k, "apiVersion" | "kind" | "metadata")
}

#[derive(Default)]
pub(crate) struct Pruner {
    pub(crate) unknown: Vec<String>,
    /// Whether `metadata` of resources is cut to ObjectMeta (the request decoder's
    /// coercion); upstream's pruning alone, used to check defaults, leaves it.
    pub(crate) coerce_metadata: bool,
}

fn join(parent: &str, k: &str) -> String {
    if parent.is_empty() {
        k.to_string()
    } else {
        format!("{parent}.{k}")
    }
}

/// Prunes `obj` (a whole resource, so its root is treated as an embedded resource) and
/// returns the pruned paths, sorted (`spec.foo`, `metadata.bar`).
pub(crate) fn prune_resource(obj: &mut Value, root: &Node) -> Vec<String> {
    let mut p = Pruner {
        unknown: Vec::new(),
        coerce_metadata: true,
    };
    p.prune(obj, Some(root), "", true);
    p.unknown.sort();
    p.unknown
}

/// Prunes a value as upstream's pruning algorithm alone does (for a schema's `default`):
/// as a resource when `is_resource` (keeping its type meta and metadata untouched).
pub(crate) fn prune_value(obj: &mut Value, s: &Node, is_resource: bool) -> Vec<String> {
    let mut p = Pruner::default();
    p.prune(obj, Some(s), "", is_resource);
    p.unknown.sort();
    p.unknown
}

impl Pruner {
    pub(crate) fn prune(
        &mut self,
        x: &mut Value,
        s: Option<&Node>,
        path: &str,
        embedded_root: bool,
    ) {
        if let Some(s) = s
            && s.preserve_unknown()
        {
            self.skip_prune(x, s, path, embedded_root);
            return;
        }
        match x {
            Value::Object(map) => {
                let Some(s) = s else {
                    for k in map.keys() {
                        self.unknown.push(join(path, k));
                    }
                    map.clear();
                    return;
                };
                let embedded = embedded_root || s.x_embedded_resource;
                if embedded {
                    self.coerce_metadata(map, path);
                }
                let keys: Vec<String> = map.keys().cloned().collect();
                for k in keys {
                    if embedded && is_meta(&k) {
                        continue;
                    }
                    let child = join(path, &k);
                    if let Some(prop) = s.properties.get(&k) {
                        if let Some(v) = map.get_mut(&k) {
                            self.prune(v, Some(prop), &child, false);
                        }
                    } else if s.has_additional() {
                        if let Some(v) = map.get_mut(&k) {
                            self.prune(v, s.additional_schema(), &child, false);
                        }
                    } else {
                        if !is_meta(&k) || !path.is_empty() {
                            self.unknown.push(child);
                        }
                        map.remove(&k);
                    }
                }
            }
            Value::Array(items) => {
                let item_schema = s.and_then(|s| s.items.as_deref());
                for (i, v) in items.iter_mut().enumerate() {
                    self.prune(v, item_schema, &format!("{path}[{i}]"), false);
                }
            }
            _ => {}
        }
    }

    fn skip_prune(&mut self, x: &mut Value, s: &Node, path: &str, embedded_root: bool) {
        match x {
            Value::Object(map) => {
                let embedded = embedded_root || s.x_embedded_resource;
                if embedded {
                    self.coerce_metadata(map, path);
                }
                for (k, v) in map.iter_mut() {
                    if embedded && is_meta(k) {
                        continue;
                    }
                    let child = join(path, k);
                    if let Some(prop) = s.properties.get(k) {
                        self.prune(v, Some(prop), &child, false);
                    } else if s.has_additional() {
                        self.prune(v, s.additional_schema(), &child, false);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item_schema) = s.items.as_deref() {
                    for (i, v) in items.iter_mut().enumerate() {
                        self.skip_prune(v, item_schema, &format!("{path}[{i}]"), false);
                    }
                }
            }
            _ => {}
        }
    }

    /// Drops the fields of an embedded resource's `metadata` that ObjectMeta does not have.
    fn coerce_metadata(&mut self, map: &mut Map<String, Value>, path: &str) {
        if !self.coerce_metadata {
            return;
        }
        let Some(Value::Object(meta)) = map.get_mut("metadata") else {
            return;
        };
        let prefix = join(path, "metadata");
        meta.retain(|k, v| {
            let known = OBJECT_META_FIELDS.contains(&k.as_str());
            if !known {
                self.unknown.push(format!("{prefix}.{k}"));
                return false;
            }
            // The round trip through the typed ObjectMeta drops empty (omitempty) fields.
            !is_empty_meta_value(k, v)
        });
    }
}

/// Whether the typed ObjectMeta would omit this field (`omitempty`, and a zero
/// `creationTimestamp`, which upstream removes explicitly).
fn is_empty_meta_value(k: &str, v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Number(n) => k == "generation" && n.as_i64() == Some(0),
        Value::Bool(_) => false,
    }
}
