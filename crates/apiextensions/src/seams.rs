//! Where the structural-schema library plugs in: a compiled per-version schema of custom
//! resources ([`CustomResourceSchema`]), the compiler that turns a version's
//! `openAPIV3Schema` into one ([`SchemaCompiler`]), and the CRD validator ([`CrdValidator`]).
//!
//! The serving code only talks to these traits. [`MinimalSchema`] and [`MinimalCrdValidator`]
//! are stand-ins with the simplest honest behaviour (pruning by `properties`, `default`s,
//! `type`/`required`/`enum`/`minimum`/`maximum` checks; the CRD's names, scope and versions),
//! to be replaced by the structural-schema library (`schema::Structural`, `validate_crd`).

use std::sync::Arc;

use apiserver::registry::FieldError;
use serde_json::{Map, Value};

/// The compiled schema of one served version of a custom resource.
pub trait CustomResourceSchema: Send + Sync {
    /// Drops the fields the schema does not know; returns their paths (`spec.foo`) for
    /// `fieldValidation`.
    fn prune(&self, obj: &mut Value) -> Vec<String>;
    /// Applies the schema's `default`s.
    fn apply_defaults(&self, obj: &mut Value);
    /// Validates a new object (field paths as upstream: `spec.replicas`).
    fn validate(&self, obj: &Value) -> Vec<FieldError>;
    /// Validates an update (transition rules see `old`).
    fn validate_update(&self, obj: &Value, old: &Value) -> Vec<FieldError>;
    /// The OpenAPI v3 schema of the kind (for `/openapi/v3` and `kubectl explain`).
    fn openapi_v3(&self) -> Value;
    /// The Swagger 2.0 schema of the kind (for `/openapi/v2`).
    fn openapi_v2(&self) -> Value;
}

/// Compiles a version's `openAPIV3Schema` (the JSON value of
/// `spec.versions[i].schema.openAPIV3Schema`; `Null` when absent).
pub trait SchemaCompiler: Send + Sync {
    /// The compiled schema, or the errors that make it unusable.
    fn compile(
        &self,
        version_schema: &Value,
    ) -> Result<Arc<dyn CustomResourceSchema>, Vec<FieldError>>;
}

/// Validates a CustomResourceDefinition (create: `old` is `None`), structural-schema rules
/// included.
pub trait CrdValidator: Send + Sync {
    /// The errors, with upstream's field paths.
    fn validate(&self, crd: &Value, old: Option<&Value>) -> Vec<FieldError>;
}

/// The pluggable parts of the apiextensions server.
#[derive(Clone)]
pub struct Seams {
    /// Custom-resource schemas.
    pub compiler: Arc<dyn SchemaCompiler>,
    /// CRD validation.
    pub validator: Arc<dyn CrdValidator>,
}

impl Default for Seams {
    /// The stand-ins [`MinimalCompiler`] and [`MinimalCrdValidator`].
    fn default() -> Self {
        Seams {
            compiler: Arc::new(MinimalCompiler),
            validator: Arc::new(MinimalCrdValidator),
        }
    }
}

/// Compiles to [`MinimalSchema`] (stand-in for the structural-schema library).
#[derive(Clone, Copy, Debug, Default)]
pub struct MinimalCompiler;

impl SchemaCompiler for MinimalCompiler {
    fn compile(
        &self,
        version_schema: &Value,
    ) -> Result<Arc<dyn CustomResourceSchema>, Vec<FieldError>> {
        Ok(Arc::new(MinimalSchema {
            schema: version_schema.clone(),
        }))
    }
}

/// A stand-in schema: prunes by `properties`/`items`/`additionalProperties` (keeping what
/// `x-kubernetes-preserve-unknown-fields` keeps, and `apiVersion`, `kind`, `metadata` at the
/// root), applies `default`s, and checks `type`, `required`, `enum`, `minimum`, `maximum`.
/// No CEL, formats, embedded resources or metadata pruning.
#[derive(Clone, Debug)]
pub struct MinimalSchema {
    schema: Value,
}

impl MinimalSchema {
    /// A schema over `schema` (an `openAPIV3Schema`).
    pub fn new(schema: Value) -> Self {
        MinimalSchema { schema }
    }
}

fn preserves(schema: &Value) -> bool {
    schema
        .get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
        == Some(true)
}

fn join(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

fn prune_value(value: &mut Value, schema: &Value, path: &str, root: bool, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties");
            let mut doomed = Vec::new();
            for (key, child) in map.iter_mut() {
                if root && matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                let child_schema = properties
                    .and_then(|p| p.get(key))
                    .or_else(|| additional.filter(|a| a.is_object()));
                match child_schema {
                    Some(s) => prune_value(child, s, &join(path, key), false, out),
                    None if preserves(schema) || additional == Some(&Value::Bool(true)) => {}
                    None => doomed.push(key.clone()),
                }
            }
            for key in doomed {
                map.remove(&key);
                out.push(join(path, &key));
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    prune_value(item, item_schema, &format!("{path}[{i}]"), false, out);
                }
            }
        }
        _ => {}
    }
}

fn default_value(value: &mut Value, schema: &Value) {
    match value {
        Value::Object(map) => {
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                for (key, child_schema) in properties {
                    if !map.contains_key(key)
                        && let Some(default) = child_schema.get("default")
                    {
                        map.insert(key.clone(), default.clone());
                    }
                    if let Some(child) = map.get_mut(key) {
                        default_value(child, child_schema);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    default_value(item, item_schema);
                }
            }
        }
        _ => {}
    }
}

/// The JSON type name Go's validator reports for a value.
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_matches(expected: &str, value: &Value) -> bool {
    match expected {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        _ => true,
    }
}

fn validate_value(value: &Value, schema: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let shown = if path.is_empty() { "<root>" } else { path };
    if value.is_null() {
        if schema.get("nullable").and_then(Value::as_bool) != Some(true)
            && let Some(expected) = schema.get("type").and_then(Value::as_str)
        {
            errs.push(FieldError::invalid(
                path,
                "null",
                &format!("{shown} in body must be of type {expected}: \"null\""),
            ));
        }
        return;
    }
    if let Some(expected) = schema.get("type").and_then(Value::as_str)
        && !type_matches(expected, value)
    {
        let actual = type_name(value);
        errs.push(FieldError::invalid(
            path,
            actual,
            &format!("{shown} in body must be of type {expected}: \"{actual}\""),
        ));
        return;
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        let valid: Vec<String> = allowed
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
            .collect();
        let valid: Vec<&str> = valid.iter().map(String::as_str).collect();
        errs.push(FieldError::not_supported(path, value.clone(), &valid));
    }
    if let Some(n) = value.as_f64() {
        if let Some(max) = schema.get("maximum").and_then(Value::as_f64)
            && n > max
        {
            errs.push(FieldError::invalid(
                path,
                value.clone(),
                &format!(
                    "{shown} in body should be less than or equal to {}",
                    schema["maximum"]
                ),
            ));
        }
        if let Some(min) = schema.get("minimum").and_then(Value::as_f64)
            && n < min
        {
            errs.push(FieldError::invalid(
                path,
                value.clone(),
                &format!(
                    "{shown} in body should be greater than or equal to {}",
                    schema["minimum"]
                ),
            ));
        }
    }
    match value {
        Value::Object(map) => {
            if let Some(required) = schema.get("required").and_then(Value::as_array) {
                for field in required.iter().filter_map(Value::as_str) {
                    if !map.contains_key(field) {
                        errs.push(FieldError::required(&join(path, field), ""));
                    }
                }
            }
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            for (key, child) in map {
                if path.is_empty() && matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                if let Some(s) = properties.and_then(|p| p.get(key)).or(additional) {
                    validate_value(child, s, &join(path, key), errs);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    validate_value(item, item_schema, &format!("{path}[{i}]"), errs);
                }
            }
        }
        _ => {}
    }
}

impl CustomResourceSchema for MinimalSchema {
    fn prune(&self, obj: &mut Value) -> Vec<String> {
        let mut out = Vec::new();
        if self.schema.is_object() && !preserves(&self.schema) {
            prune_value(obj, &self.schema, "", true, &mut out);
        }
        out.sort();
        out
    }

    fn apply_defaults(&self, obj: &mut Value) {
        default_value(obj, &self.schema);
    }

    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        validate_value(obj, &self.schema, "", &mut errs);
        errs
    }

    fn validate_update(&self, obj: &Value, _old: &Value) -> Vec<FieldError> {
        self.validate(obj)
    }

    fn openapi_v3(&self) -> Value {
        self.schema.clone()
    }

    fn openapi_v2(&self) -> Value {
        // Swagger 2.0 lacks `nullable`; upstream drops it (and more) when converting.
        fn strip(value: &Value) -> Value {
            match value {
                Value::Object(map) => Value::Object(
                    map.iter()
                        .filter(|(k, _)| k.as_str() != "nullable")
                        .map(|(k, v)| (k.clone(), strip(v)))
                        .collect::<Map<String, Value>>(),
                ),
                Value::Array(items) => Value::Array(items.iter().map(strip).collect()),
                other => other.clone(),
            }
        }
        strip(&self.schema)
    }
}

/// The stand-in CRD validator: the checks of [`crate::crd::validate_basics`] (names, group,
/// scope, versions and their storage flag), without the structural-schema rules.
#[derive(Clone, Copy, Debug, Default)]
pub struct MinimalCrdValidator;

impl CrdValidator for MinimalCrdValidator {
    fn validate(&self, crd: &Value, old: Option<&Value>) -> Vec<FieldError> {
        crate::crd::validate_basics(crd, old)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> MinimalSchema {
        MinimalSchema::new(json!({"type": "object", "properties": {
            "spec": {"type": "object", "required": ["size"], "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 10},
                "color": {"type": "string", "default": "blue", "enum": ["blue", "red"]},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "items": {"type": "array", "items": {"type": "object",
                    "properties": {"name": {"type": "string"}}}}}},
            "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}}))
    }

    #[test]
    fn prunes_unknown_fields_and_reports_paths() {
        let mut obj = json!({"apiVersion": "x/v1", "kind": "W", "metadata": {"name": "a"},
            "spec": {"size": 1, "bogus": 1, "free": {"any": {"thing": 1}},
                     "items": [{"name": "a", "extra": true}]}, "top": 1});
        let pruned = schema().prune(&mut obj);
        assert_eq!(pruned, vec!["spec.bogus", "spec.items[0].extra", "top"]);
        assert_eq!(obj["spec"]["free"], json!({"any": {"thing": 1}}));
        assert_eq!(obj["metadata"], json!({"name": "a"}));
    }

    #[test]
    fn defaults_then_validates() {
        let mut obj = json!({"spec": {"size": 3}});
        schema().apply_defaults(&mut obj);
        assert_eq!(obj["spec"]["color"], "blue");
        assert!(schema().validate(&obj).is_empty());
        let bad = json!({"spec": {"size": "three", "color": "green"}});
        let errs: Vec<String> = schema()
            .validate(&bad)
            .iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(
            errs,
            vec![
                "spec.color: Unsupported value: \"green\": supported values: \"blue\", \"red\"",
                "spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\""
            ]
        );
        let errs: Vec<String> = schema()
            .validate(&json!({"spec": {"size": 11}}))
            .iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(
            errs,
            vec![
                "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10"
            ]
        );
        let errs: Vec<String> = schema()
            .validate(&json!({"spec": {}}))
            .iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(errs, vec!["spec.size: Required value"]);
    }
}
