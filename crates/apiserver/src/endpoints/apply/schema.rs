//! What server-side apply needs to know about a type: how lists merge (atomic, set, or map
//! keyed by some fields), whether maps are granular or atomic, and which map keys are declared
//! struct fields (structured-merge-diff's `schema` package, reduced to the facts its walkers
//! read).
//!
//! [`OpenApiSchema`] reads them from an OpenAPI document as kube's type converter does:
//! `x-kubernetes-list-type` / `x-kubernetes-list-map-keys` / `x-kubernetes-map-type`, and for
//! lists without a list type, `x-kubernetes-patch-strategy: merge` with
//! `x-kubernetes-patch-merge-key` (a keyed list, or a set without a key). [`DeducedSchema`]
//! is upstream's deduced type for objects without a schema: maps granular, lists atomic.

use serde_json::{Map, Value};

use crate::endpoints::patch::meta::{
    LIST_MAP_KEYS_EXTENSION, LIST_TYPE_EXTENSION, PATCH_MERGE_KEY_EXTENSION,
    PATCH_STRATEGY_EXTENSION,
};

/// OpenAPI extension declaring a map or struct `atomic` (replaced whole) or `granular`.
pub const MAP_TYPE_EXTENSION: &str = "x-kubernetes-map-type";

/// How far `$ref`/`allOf` chains are followed (guards against cycles).
const MAX_REFERENCE_DEPTH: usize = 32;

/// How a list merges and how its items are identified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListType {
    /// Replaced whole; owned as one leaf.
    Atomic,
    /// A set of scalars; items are identified by their value (`v:`).
    Set,
    /// A list of maps identified by these key fields (`k:`).
    Map(Vec<String>),
}

/// The schema of a map entry or struct field.
pub struct FieldSchema<'s> {
    /// The schema of the field's value.
    pub schema: Box<dyn ApplySchema + 's>,
    /// Whether the field is a declared struct field (as opposed to an entry of a string-keyed
    /// map). Upstream owns a map entry itself, but a struct field only through its contents.
    pub declared: bool,
    /// The value a Go typed object carries for the field when it is unset: `{}` for a
    /// non-pointer struct, `null` for a field serialized without `omitempty`; `None` when an
    /// unset field is absent. Such a field is never reported as added or removed itself,
    /// which decides where kube writes the `"."` entry of `FieldsV1`.
    pub implicit_value: Option<Value>,
}

/// The schema lookup of server-side apply (one node of a type).
pub trait ApplySchema {
    /// How a list at this node merges.
    fn list_type(&self) -> ListType;
    /// Whether a map at this node is atomic (replaced and owned whole).
    fn map_is_atomic(&self) -> bool;
    /// The schema of field `name` of a map at this node.
    fn field(&self, name: &str) -> FieldSchema<'_>;
    /// The schema of the items of a list at this node.
    fn items(&self) -> Box<dyn ApplySchema + '_>;
    /// The default of key field `key` of a `map` list at this node, used when an item omits it
    /// (e.g. `protocol: TCP` for container ports).
    fn key_default(&self, _key: &str) -> Option<Value> {
        None
    }
    /// Whether a map at this node is a struct whose fields are all declared: a field it does
    /// not declare is an error in an applied object (`field not declared in schema`). Maps,
    /// objects that preserve unknown fields and undescribed types are open.
    fn is_closed_struct(&self) -> bool {
        false
    }
}

/// The schema of objects without one: every map granular, every list atomic, no declared
/// fields (upstream's deduced type).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeducedSchema;

impl ApplySchema for DeducedSchema {
    fn list_type(&self) -> ListType {
        ListType::Atomic
    }

    fn map_is_atomic(&self) -> bool {
        false
    }

    fn field(&self, _name: &str) -> FieldSchema<'_> {
        FieldSchema {
            schema: Box::new(DeducedSchema),
            declared: false,
            implicit_value: None,
        }
    }

    fn items(&self) -> Box<dyn ApplySchema + '_> {
        Box::new(DeducedSchema)
    }
}

/// A schema node of an OpenAPI document (Swagger 2.0 `definitions` or OpenAPI 3
/// `components.schemas`), following `$ref` and `allOf[0]` as the patch metadata does.
///
/// Parts the document does not describe (unknown fields, unresolvable references) fall back to
/// [`DeducedSchema`] behaviour.
#[derive(Clone, Copy, Debug)]
pub struct OpenApiSchema<'a> {
    definitions: Option<&'a Map<String, Value>>,
    /// The node as written at its use site (where list and patch extensions sit).
    raw: Option<&'a Value>,
    /// The node after following references.
    resolved: Option<&'a Value>,
    /// The definition name the reference chain ended at.
    definition: Option<&'a str>,
    /// Whether objects of this schema are Go typed objects (built-in types), whose unset
    /// non-pointer structs and required fields are still serialized.
    go_typed: bool,
}

impl<'a> OpenApiSchema<'a> {
    /// The node for definition `name` of `document`; `None` when the document lacks it.
    pub fn for_definition(document: &'a Value, name: &str) -> Option<Self> {
        let definitions = definitions_of(document);
        let (key, schema) = definitions?.get_key_value(name)?;
        let mut node = Self::with_definitions(schema, definitions);
        node.definition.get_or_insert(key.as_str());
        Some(node)
    }

    /// The node for `schema`, resolving references against `definitions`.
    pub fn with_definitions(
        schema: &'a Value,
        definitions: Option<&'a Map<String, Value>>,
    ) -> Self {
        let mut node = Self {
            definitions,
            raw: Some(schema),
            resolved: None,
            definition: None,
            go_typed: true,
        };
        let (resolved, definition) = node.resolve(schema);
        node.resolved = resolved;
        node.definition = definition;
        node
    }

    /// Treats objects as unstructured (custom resources): no field is implicitly present,
    /// since kube's empty unstructured object holds nothing.
    pub fn unstructured(mut self) -> Self {
        self.go_typed = false;
        self
    }

    fn resolve(&self, mut node: &'a Value) -> (Option<&'a Value>, Option<&'a str>) {
        let mut definition = None;
        for _ in 0..MAX_REFERENCE_DEPTH {
            if let Some(first) = node.get("allOf").and_then(|all| all.get(0)) {
                node = first;
                continue;
            }
            let Some(reference) = node.get("$ref").and_then(Value::as_str) else {
                return (Some(node), definition);
            };
            let name = reference
                .strip_prefix("#/definitions/")
                .or_else(|| reference.strip_prefix("#/components/schemas/"))
                .unwrap_or(reference);
            match self.definitions.and_then(|defs| defs.get_key_value(name)) {
                Some((key, target)) => {
                    definition = Some(key.as_str());
                    node = target;
                }
                None => return (None, None),
            }
        }
        (None, None)
    }

    fn child(&self, raw: Option<&'a Value>) -> Self {
        let mut node = Self {
            definitions: self.definitions,
            raw,
            resolved: None,
            definition: None,
            go_typed: self.go_typed,
        };
        if let Some(raw) = raw {
            let (resolved, definition) = node.resolve(raw);
            node.resolved = resolved;
            node.definition = definition;
        }
        node
    }

    /// An extension read from the use site first, then from the resolved definition.
    fn extension(&self, name: &str) -> Option<&'a Value> {
        self.raw
            .and_then(|r| r.get(name))
            .or_else(|| self.resolved.and_then(|r| r.get(name)))
    }

    /// Whether Go's typed object always serializes this struct: kube's value (non-pointer)
    /// structs are the object, list and template specs and statuses, `ObjectMeta`, the
    /// workload update strategies and container resources. OpenAPI does not say whether a
    /// field is a pointer, so this is decided by the definition's name.
    fn is_value_struct(&self) -> bool {
        let Some(definition) = self.definition else {
            return false;
        };
        let short = definition.rsplit('.').next().unwrap_or(definition);
        short.ends_with("Spec")
            || short.ends_with("Status")
            || short.ends_with("Strategy")
            || short == "ObjectMeta"
            || short == "ResourceRequirements"
    }
}

/// The definitions map of a Swagger 2.0 or OpenAPI 3 document.
fn definitions_of(document: &Value) -> Option<&Map<String, Value>> {
    document
        .get("definitions")
        .or_else(|| document.get("components").and_then(|c| c.get("schemas")))
        .and_then(Value::as_object)
}

impl ApplySchema for OpenApiSchema<'_> {
    fn list_type(&self) -> ListType {
        if self.resolved.is_none() {
            return ListType::Atomic;
        }
        match self.extension(LIST_TYPE_EXTENSION).and_then(Value::as_str) {
            Some("set") => return ListType::Set,
            Some("map") => {
                let keys = self
                    .extension(LIST_MAP_KEYS_EXTENSION)
                    .and_then(Value::as_array)
                    .map(|keys| {
                        keys.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect::<Vec<_>>()
                    })
                    .unwrap_or_default();
                return if keys.is_empty() {
                    ListType::Set
                } else {
                    ListType::Map(keys)
                };
            }
            Some(_) => return ListType::Atomic,
            None => {}
        }
        // kube's type converter maps the strategic-merge facts onto list types when no list
        // type is declared: `merge` with a key is a keyed list, without a key a set.
        let strategy = self
            .extension(PATCH_STRATEGY_EXTENSION)
            .and_then(Value::as_str)
            .unwrap_or("");
        if strategy.split(',').any(|s| s == "merge") {
            return match self
                .extension(PATCH_MERGE_KEY_EXTENSION)
                .and_then(Value::as_str)
            {
                Some(key) => ListType::Map(vec![key.to_owned()]),
                None => ListType::Set,
            };
        }
        ListType::Atomic
    }

    fn map_is_atomic(&self) -> bool {
        self.extension(MAP_TYPE_EXTENSION).and_then(Value::as_str) == Some("atomic")
    }

    fn is_closed_struct(&self) -> bool {
        let Some(schema) = self.resolved else {
            return false;
        };
        let flag = |name: &str| schema.get(name).and_then(Value::as_bool) == Some(true);
        schema.get("properties").is_some_and(Value::is_object)
            && !schema
                .get("additionalProperties")
                .is_some_and(|a| a.is_object() || a.as_bool() == Some(true))
            && !flag("x-kubernetes-preserve-unknown-fields")
            && !flag("x-kubernetes-embedded-resource")
    }

    fn field(&self, name: &str) -> FieldSchema<'_> {
        let Some(schema) = self.resolved else {
            return DeducedSchema.field(name);
        };
        if let Some(property) = schema.get("properties").and_then(|p| p.get(name)) {
            let required = schema
                .get("required")
                .and_then(Value::as_array)
                .is_some_and(|r| r.iter().any(|n| n.as_str() == Some(name)));
            let child = self.child(Some(property));
            let implicit_value = if !self.go_typed {
                None
            } else if child.is_value_struct() {
                Some(Value::Object(Map::new()))
            } else {
                required.then_some(Value::Null)
            };
            return FieldSchema {
                schema: Box::new(child),
                declared: true,
                implicit_value,
            };
        }
        match schema.get("additionalProperties").filter(|v| v.is_object()) {
            Some(values) => FieldSchema {
                schema: Box::new(self.child(Some(values))),
                declared: false,
                implicit_value: None,
            },
            None => DeducedSchema.field(name),
        }
    }

    fn items(&self) -> Box<dyn ApplySchema + '_> {
        match self.resolved.and_then(|s| s.get("items")) {
            Some(items) => Box::new(self.child(Some(items))),
            None => Box::new(DeducedSchema),
        }
    }

    fn key_default(&self, key: &str) -> Option<Value> {
        let items = self.resolved?.get("items")?;
        let item = self.child(Some(items));
        let property = item.resolved?.get("properties")?.get(key)?;
        let field = item.child(Some(property));
        field
            .raw
            .and_then(|r| r.get("default"))
            .or_else(|| field.resolved.and_then(|r| r.get("default")))
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn document() -> Value {
        json!({"definitions": {
            "Pod": {"properties": {
                "metadata": {"$ref": "#/definitions/ObjectMeta"},
                "spec": {"$ref": "#/definitions/PodSpec"}
            }},
            "ObjectMeta": {"properties": {
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "finalizers": {"type": "array", "items": {"type": "string"},
                    "x-kubernetes-patch-strategy": "merge"}
            }},
            "PodSpec": {"required": ["containers"], "properties": {
                "containers": {"type": "array",
                    "items": {"$ref": "#/definitions/Container"},
                    "x-kubernetes-patch-strategy": "merge",
                    "x-kubernetes-patch-merge-key": "name"},
                "selector": {"$ref": "#/definitions/LabelSelector"},
                "ports": {"type": "array", "items": {"$ref": "#/definitions/Port"},
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["containerPort", "protocol"]},
                "args": {"type": "array", "items": {"type": "string"}}
            }},
            "Port": {"properties": {"containerPort": {"type": "integer"},
                "protocol": {"type": "string", "default": "TCP"}}},
            "LabelSelector": {"type": "object", "x-kubernetes-map-type": "atomic"},
            "Container": {"properties": {"name": {"type": "string"}}}
        }})
    }

    #[test]
    fn list_and_map_types_come_from_extensions() {
        let doc = document();
        let pod = OpenApiSchema::for_definition(&doc, "Pod").unwrap();
        let meta = pod.field("metadata");
        assert!(meta.declared && meta.implicit_value == Some(json!({})));
        let labels = meta.schema.field("labels");
        assert!(labels.declared && labels.implicit_value.is_none());
        let entry = labels.schema.field("app");
        assert!(!entry.declared);
        assert_eq!(
            meta.schema.field("finalizers").schema.list_type(),
            ListType::Set
        );
        let spec = pod.field("spec");
        let containers = spec.schema.field("containers");
        assert_eq!(containers.implicit_value, Some(Value::Null));
        assert_eq!(
            containers.schema.list_type(),
            ListType::Map(vec!["name".into()])
        );
        assert!(spec.schema.field("selector").schema.map_is_atomic());
        let ports = spec.schema.field("ports");
        assert_eq!(
            ports.schema.list_type(),
            ListType::Map(vec!["containerPort".into(), "protocol".into()])
        );
        assert_eq!(ports.schema.key_default("protocol"), Some(json!("TCP")));
        assert_eq!(
            spec.schema.field("args").schema.list_type(),
            ListType::Atomic
        );
        assert_eq!(
            DeducedSchema.field("x").schema.list_type(),
            ListType::Atomic
        );
    }
}
