//! Patch metadata: how each field of an object merges (upstream's `LookupPatchMeta`).
//!
//! A strategic merge patch needs, for every map or list field it descends into, the field's
//! patch strategies (`merge`, `replace`, `retainKeys`, or a comma-separated combination such as
//! `merge,retainKeys`), the merge key of lists of maps, and the schema of the field's value (or
//! of the list's items) to continue the walk. Kubernetes publishes these facts in its OpenAPI
//! documents as `x-kubernetes-patch-strategy` and `x-kubernetes-patch-merge-key`.

use serde_json::{Map, Value};

use super::PatchError;
use super::gofmt::go_type_name;

/// OpenAPI extension naming a field's patch strategies, comma-separated.
pub const PATCH_STRATEGY_EXTENSION: &str = "x-kubernetes-patch-strategy";
/// OpenAPI extension naming the key that identifies items of a merging list of maps.
pub const PATCH_MERGE_KEY_EXTENSION: &str = "x-kubernetes-patch-merge-key";
/// OpenAPI extension declaring a list's semantics (`atomic`, `set` or `map`).
pub const LIST_TYPE_EXTENSION: &str = "x-kubernetes-list-type";
/// OpenAPI extension naming the keys of a `map` list.
pub const LIST_MAP_KEYS_EXTENSION: &str = "x-kubernetes-list-map-keys";

/// How many `$ref`/`allOf` indirections we follow before giving up (guards against cycles).
const MAX_REFERENCE_DEPTH: usize = 32;

/// The patch facts of one field (upstream's `PatchMeta`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldPatchMeta {
    /// The patch strategies, e.g. `["merge"]` or `["merge", "retainKeys"]`; empty for none.
    pub strategies: Vec<String>,
    /// The merge key of a list of maps with the `merge` strategy.
    pub merge_key: Option<String>,
}

impl FieldPatchMeta {
    /// Metadata of a field with the given strategies and merge key.
    pub fn new(strategies: &[&str], merge_key: Option<&str>) -> Self {
        Self {
            strategies: strategies.iter().map(|s| (*s).to_owned()).collect(),
            merge_key: merge_key.map(str::to_owned),
        }
    }

    /// The merge key, or `""` when none is declared (upstream treats both alike).
    pub fn merge_key(&self) -> &str {
        self.merge_key.as_deref().unwrap_or("")
    }

    /// Splits off `retainKeys` and returns the remaining strategy (`""`, `merge` or `replace`).
    ///
    /// `retainKeys` is honoured through the `$retainKeys` directive in the patch itself, so
    /// only the other strategy decides how the field merges. More than one other strategy is
    /// a schema error, reported with upstream's message.
    pub fn merge_strategy(&self) -> Result<&str, PatchError> {
        const RETAIN_KEYS: &str = "retainKeys";
        match self.strategies.as_slice() {
            [] => Ok(""),
            [only] if only == RETAIN_KEYS => Ok(""),
            [only] => Ok(only),
            [first, second] if first == RETAIN_KEYS => Ok(second),
            [first, second] if second == RETAIN_KEYS => Ok(first),
            all => Err(PatchError::UnexpectedPatchStrategy(format!(
                "[{}]",
                all.join(" ")
            ))),
        }
    }
}

/// A field's metadata plus the schema to use below it.
pub struct FieldLookup<'a> {
    /// How the field merges.
    pub meta: FieldPatchMeta,
    /// The schema of the field's value (a map field) or of its items (a list field).
    pub schema: Box<dyn PatchMeta + 'a>,
}

impl std::fmt::Debug for FieldLookup<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FieldLookup")
            .field("meta", &self.meta)
            .field("schema", &self.schema.name())
            .finish()
    }
}

/// The schema lookup a strategic merge patch walks (upstream's `LookupPatchMeta`).
///
/// An implementation describes one object type; lookups return the field's [`FieldPatchMeta`]
/// and the implementation describing the type one level down.
pub trait PatchMeta {
    /// Looks up field `key` whose value is a map (a nested struct or a string-keyed map).
    fn lookup_map_field(&self, key: &str) -> Result<FieldLookup<'_>, PatchError>;
    /// Looks up field `key` whose value is a list; the returned schema describes its items.
    fn lookup_list_field(&self, key: &str) -> Result<FieldLookup<'_>, PatchError>;
    /// A short name of the type, used in error messages.
    fn name(&self) -> String;
}

/// The lookup for objects without a known schema: no field declares a strategy.
///
/// Maps then merge recursively (with `null` deleting keys) and lists are replaced whole, which
/// is JSON merge patch semantics plus the `$patch` directives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoMeta;

impl PatchMeta for NoMeta {
    fn lookup_map_field(&self, _key: &str) -> Result<FieldLookup<'_>, PatchError> {
        Ok(FieldLookup {
            meta: FieldPatchMeta::default(),
            schema: Box::new(NoMeta),
        })
    }

    fn lookup_list_field(&self, key: &str) -> Result<FieldLookup<'_>, PatchError> {
        self.lookup_map_field(key)
    }

    fn name(&self) -> String {
        "Struct".to_owned()
    }
}

/// A lookup backed by an OpenAPI-style schema description (a `serde_json::Value`).
///
/// The description uses OpenAPI's vocabulary: `properties`, `additionalProperties`, `items`,
/// `$ref` (`#/definitions/<name>` or `#/components/schemas/<name>`), `allOf` (its first entry
/// is followed, as OpenAPI v3 wraps references in it) and the `x-kubernetes-patch-strategy` /
/// `x-kubernetes-patch-merge-key` extensions on the field's schema.
///
/// Fields the description does not know merge like [`NoMeta`] fields: upstream rejects them
/// only when the typed object holds them, which a decoded object never does.
#[derive(Debug, Clone, Copy)]
pub struct SchemaPatchMeta<'a> {
    definitions: Option<&'a Map<String, Value>>,
    schema: Option<&'a Value>,
    list_type_fallback: bool,
}

impl<'a> SchemaPatchMeta<'a> {
    /// A lookup for the type `schema` describes, resolving references against the
    /// `definitions` or `components.schemas` of `schema` itself.
    pub fn new(schema: &'a Value) -> Result<Self, PatchError> {
        Self::with_definitions(schema, definitions_of(schema))
    }

    /// A lookup for the definition `name` of `document` (a Swagger 2.0 document with
    /// `definitions`, or an OpenAPI 3 document with `components.schemas`).
    pub fn for_definition(document: &'a Value, name: &str) -> Result<Self, PatchError> {
        let definitions = definitions_of(document);
        let schema = definitions
            .and_then(|defs| defs.get(name))
            .ok_or_else(|| PatchError::UnresolvedReference(name.to_owned()))?;
        Self::with_definitions(schema, definitions)
    }

    /// A lookup for `schema` whose references resolve against `definitions`.
    pub fn with_definitions(
        schema: &'a Value,
        definitions: Option<&'a Map<String, Value>>,
    ) -> Result<Self, PatchError> {
        let mut meta = Self {
            definitions,
            schema: None,
            list_type_fallback: false,
        };
        meta.schema = Some(meta.resolve(schema)?);
        Ok(meta)
    }

    /// Derives a merge strategy from `x-kubernetes-list-type` where a list declares no patch
    /// strategy: `map` with a single `x-kubernetes-list-map-keys` key merges by that key, `set`
    /// merges as a primitive set.
    ///
    /// Off by default, because upstream's strategic merge patch ignores list types (such lists
    /// are replaced whole); only enable it for types that have no patch strategies at all.
    pub fn with_list_type_fallback(mut self, enabled: bool) -> Self {
        self.list_type_fallback = enabled;
        self
    }

    /// Follows `allOf[0]` and `$ref` until a concrete schema is reached.
    fn resolve(&self, mut node: &'a Value) -> Result<&'a Value, PatchError> {
        for _ in 0..MAX_REFERENCE_DEPTH {
            if let Some(first) = node.get("allOf").and_then(|all| all.get(0)) {
                node = first;
                continue;
            }
            let Some(reference) = node.get("$ref").and_then(Value::as_str) else {
                return Ok(node);
            };
            let name = reference
                .strip_prefix("#/definitions/")
                .or_else(|| reference.strip_prefix("#/components/schemas/"))
                .unwrap_or(reference);
            node = self
                .definitions
                .and_then(|defs| defs.get(name))
                .ok_or_else(|| PatchError::UnresolvedReference(reference.to_owned()))?;
        }
        Err(PatchError::UnresolvedReference(
            node.get("$ref")
                .and_then(Value::as_str)
                .unwrap_or("allOf")
                .to_owned(),
        ))
    }

    /// The schema of field `key`: a declared property, else the `additionalProperties` schema.
    fn field_schema(&self, key: &str) -> Option<&'a Value> {
        let schema = self.schema?;
        schema
            .get("properties")
            .and_then(|props| props.get(key))
            .or_else(|| schema.get("additionalProperties").filter(|v| v.is_object()))
    }

    fn child(&self, schema: Option<&'a Value>) -> Result<Box<dyn PatchMeta + 'a>, PatchError> {
        let schema = match schema {
            Some(node) => Some(self.resolve(node)?),
            None => None,
        };
        Ok(Box::new(Self {
            definitions: self.definitions,
            schema,
            list_type_fallback: self.list_type_fallback,
        }))
    }

    fn list_type_meta(&self, field: &Value) -> FieldPatchMeta {
        match field.get(LIST_TYPE_EXTENSION).and_then(Value::as_str) {
            Some("set") => FieldPatchMeta::new(&["merge"], None),
            Some("map") => match field.get(LIST_MAP_KEYS_EXTENSION).and_then(Value::as_array) {
                Some(keys) if keys.len() == 1 => FieldPatchMeta::new(&["merge"], keys[0].as_str()),
                _ => FieldPatchMeta::default(),
            },
            _ => FieldPatchMeta::default(),
        }
    }
}

/// The patch extensions of a field's own schema node (before resolving its reference).
fn declared_meta(field: &Value) -> Result<FieldPatchMeta, PatchError> {
    let strategies = match field.get(PATCH_STRATEGY_EXTENSION) {
        None => Vec::new(),
        Some(Value::String(s)) => s.split(',').map(str::to_owned).collect(),
        Some(other) => return Err(bad_extension_type(other)),
    };
    let merge_key = match field.get(PATCH_MERGE_KEY_EXTENSION) {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => return Err(bad_extension_type(other)),
    };
    Ok(FieldPatchMeta {
        strategies,
        merge_key,
    })
}

fn bad_extension_type(value: &Value) -> PatchError {
    PatchError::BadArgType {
        expected: "string",
        actual: go_type_name(value),
    }
}

/// The definitions map of a Swagger 2.0 (`definitions`) or OpenAPI 3 (`components.schemas`)
/// document.
fn definitions_of(document: &Value) -> Option<&Map<String, Value>> {
    document
        .get("definitions")
        .or_else(|| document.get("components").and_then(|c| c.get("schemas")))
        .and_then(Value::as_object)
}

impl PatchMeta for SchemaPatchMeta<'_> {
    fn lookup_map_field(&self, key: &str) -> Result<FieldLookup<'_>, PatchError> {
        let field = self.field_schema(key);
        let meta = field.map(declared_meta).transpose()?.unwrap_or_default();
        Ok(FieldLookup {
            meta,
            schema: self.child(field)?,
        })
    }

    fn lookup_list_field(&self, key: &str) -> Result<FieldLookup<'_>, PatchError> {
        let Some(field) = self.field_schema(key) else {
            return Ok(FieldLookup {
                meta: FieldPatchMeta::default(),
                schema: self.child(None)?,
            });
        };
        let mut meta = declared_meta(field)?;
        if meta.strategies.is_empty() && self.list_type_fallback {
            meta = self.list_type_meta(field);
        }
        // A field declared as a single object but sent as a list (upstream's tests patch a
        // pointer field that way) describes its items with its own schema.
        let resolved = self.resolve(field)?;
        Ok(FieldLookup {
            meta,
            schema: self.child(Some(resolved.get("items").unwrap_or(resolved)))?,
        })
    }

    fn name(&self) -> String {
        self.schema
            .and_then(|s| s.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("Struct")
            .to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strategies_split_off_retain_keys() {
        let meta = FieldPatchMeta::new(&["merge", "retainKeys"], Some("name"));
        assert_eq!(meta.merge_strategy(), Ok("merge"));
        assert_eq!(
            FieldPatchMeta::new(&["retainKeys"], None).merge_strategy(),
            Ok("")
        );
        assert_eq!(
            FieldPatchMeta::new(&["merge", "replace"], None)
                .merge_strategy()
                .unwrap_err()
                .to_string(),
            "unexpected patch strategy: [merge replace]"
        );
    }

    #[test]
    fn schema_lookup_follows_references() {
        let doc = json!({
            "definitions": {
                "Pod": {"properties": {"spec": {"$ref": "#/definitions/PodSpec"}}},
                "PodSpec": {"properties": {"containers": {
                    "type": "array",
                    "items": {"allOf": [{"$ref": "#/definitions/Container"}]},
                    "x-kubernetes-patch-strategy": "merge",
                    "x-kubernetes-patch-merge-key": "name"
                }}},
                "Container": {"properties": {"ports": {
                    "type": "array",
                    "items": {"type": "object"},
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["containerPort"]
                }}}
            }
        });
        let pod = SchemaPatchMeta::for_definition(&doc, "Pod").unwrap();
        let spec = pod.lookup_map_field("spec").unwrap();
        assert_eq!(spec.meta, FieldPatchMeta::default());
        let containers = spec.schema.lookup_list_field("containers").unwrap();
        assert_eq!(
            containers.meta,
            FieldPatchMeta::new(&["merge"], Some("name"))
        );
        let ports = containers.schema.lookup_list_field("ports").unwrap();
        assert_eq!(ports.meta, FieldPatchMeta::default());

        let pod = pod.with_list_type_fallback(true);
        let spec = pod.lookup_map_field("spec").unwrap();
        let containers = spec.schema.lookup_list_field("containers").unwrap();
        let ports = containers.schema.lookup_list_field("ports").unwrap();
        assert_eq!(
            ports.meta,
            FieldPatchMeta::new(&["merge"], Some("containerPort"))
        );
    }

    #[test]
    fn unresolvable_reference_is_an_error() {
        let schema = json!({"properties": {"spec": {"$ref": "#/definitions/Missing"}}});
        let meta = SchemaPatchMeta::new(&schema).unwrap();
        assert_eq!(
            meta.lookup_map_field("spec").unwrap_err().to_string(),
            "unable to resolve #/definitions/Missing in OpenAPI V3"
        );
    }

    #[test]
    fn unknown_fields_have_no_strategy() {
        let schema = json!({"properties": {}});
        let meta = SchemaPatchMeta::new(&schema).unwrap();
        let field = meta.lookup_list_field("bogus").unwrap();
        assert_eq!(field.meta, FieldPatchMeta::default());
        assert_eq!(
            NoMeta.lookup_map_field("x").unwrap().meta,
            FieldPatchMeta::default()
        );
    }
}
