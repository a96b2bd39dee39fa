//! The parsed form of an OpenAPI v3 schema object (a CRD's `JSONSchemaProps`).
//!
//! One node type serves both the structural part of a schema (type, properties, items,
//! extensions) and the value validations nested under `allOf`/`anyOf`/`oneOf`/`not`; the
//! structural checks ([`super::structural`]) decide which fields are allowed where, as
//! upstream's separate `Structural`/`NestedValueValidation` types do.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// `additionalProperties`: a boolean or a schema.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Additional {
    /// `additionalProperties: true|false`.
    Bool(bool),
    /// `additionalProperties: {...}`.
    Schema(Box<Node>),
}

/// A compiled `pattern` (never part of a schema's identity).
#[derive(Clone, Debug, Default)]
pub(crate) struct Compiled(pub Option<regex::Regex>);

impl PartialEq for Compiled {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// One schema object.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Node {
    pub type_: String,
    pub description: String,
    pub title: String,
    pub default: Option<Value>,
    pub nullable: bool,
    pub external_docs: Option<Value>,
    pub example: Option<Value>,

    pub format: String,
    pub maximum: Option<f64>,
    pub exclusive_maximum: bool,
    pub minimum: Option<f64>,
    pub exclusive_minimum: bool,
    pub max_length: Option<i64>,
    pub min_length: Option<i64>,
    pub pattern: String,
    /// `pattern`, compiled once (RE2 semantics, as Go's `regexp`).
    pub compiled: Compiled,
    pub max_items: Option<i64>,
    pub min_items: Option<i64>,
    pub unique_items: bool,
    pub multiple_of: Option<f64>,
    pub enum_: Option<Vec<Value>>,
    pub max_properties: Option<i64>,
    pub min_properties: Option<i64>,
    pub required: Vec<String>,
    pub all_of: Vec<Node>,
    pub one_of: Vec<Node>,
    pub any_of: Vec<Node>,
    pub not: Option<Box<Node>>,

    pub items: Option<Box<Node>>,
    /// `items` given as an array of schemas (never structural; kept for the error).
    pub items_array: bool,
    pub properties: BTreeMap<String, Node>,
    pub additional_properties: Option<Additional>,

    /// `x-kubernetes-preserve-unknown-fields` as written (`Some(false)` is an error).
    pub x_preserve_unknown_fields: Option<bool>,
    pub x_embedded_resource: bool,
    pub x_int_or_string: bool,
    pub x_list_map_keys: Vec<String>,
    pub x_list_type: Option<String>,
    pub x_map_type: Option<String>,
    pub x_validations: Vec<Value>,

    /// Fields OpenAPI allows but CRDs never support (`id`, `$schema`, `$ref`,
    /// `patternProperties`, `dependencies`, `additionalItems`, `definitions`), by JSON name.
    pub unsupported: Vec<&'static str>,
    /// The schema object as written (for the OpenAPI publishing).
    pub raw: Map<String, Value>,
}

/// A schema object that could not be decoded (a wrong JSON type for a known field), with
/// the path of the offending field.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct DecodeError {
    pub path: String,
    pub value: Value,
    pub detail: String,
}

fn err(path: &str, value: &Value, detail: &str) -> DecodeError {
    DecodeError {
        path: path.to_string(),
        value: value.clone(),
        detail: detail.to_string(),
    }
}

fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

fn string(path: &str, v: &Value) -> Result<String, DecodeError> {
    v.as_str()
        .map(str::to_string)
        .ok_or_else(|| err(path, v, "must be a string"))
}

fn boolean(path: &str, v: &Value) -> Result<bool, DecodeError> {
    v.as_bool().ok_or_else(|| err(path, v, "must be a boolean"))
}

fn float(path: &str, v: &Value) -> Result<f64, DecodeError> {
    v.as_f64().ok_or_else(|| err(path, v, "must be a number"))
}

fn int(path: &str, v: &Value) -> Result<i64, DecodeError> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
            .ok_or_else(|| err(path, v, "must be an integer")),
        _ => Err(err(path, v, "must be an integer")),
    }
}

fn strings(path: &str, v: &Value) -> Result<Vec<String>, DecodeError> {
    match v {
        Value::Null => Ok(Vec::new()),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .map(|(i, x)| string(&format!("{path}[{i}]"), x))
            .collect(),
        _ => Err(err(path, v, "must be an array of strings")),
    }
}

fn schemas(path: &str, v: &Value) -> Result<Vec<Node>, DecodeError> {
    match v {
        Value::Null => Ok(Vec::new()),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .map(|(i, x)| Node::parse(x, &format!("{path}[{i}]")))
            .collect(),
        _ => Err(err(path, v, "must be an array of schemas")),
    }
}

impl Node {
    /// Decodes a schema object; `path` names it in errors.
    pub(crate) fn parse(v: &Value, path: &str) -> Result<Node, DecodeError> {
        let Value::Object(map) = v else {
            return Err(err(path, v, "must be an object"));
        };
        let mut n = Node {
            raw: map.clone(),
            ..Node::default()
        };
        for (key, val) in map {
            let p = child(path, key);
            let p = p.as_str();
            match key.as_str() {
                "type" => n.type_ = string(p, val)?,
                "description" => n.description = string(p, val)?,
                "title" => n.title = string(p, val)?,
                "default" => n.default = Some(val.clone()).filter(|d| !d.is_null()),
                "nullable" => n.nullable = boolean(p, val)?,
                "externalDocs" => n.external_docs = Some(val.clone()).filter(|d| !d.is_null()),
                "example" => n.example = Some(val.clone()).filter(|d| !d.is_null()),
                "format" => n.format = string(p, val)?,
                "maximum" => n.maximum = Some(float(p, val)?),
                "exclusiveMaximum" => n.exclusive_maximum = boolean(p, val)?,
                "minimum" => n.minimum = Some(float(p, val)?),
                "exclusiveMinimum" => n.exclusive_minimum = boolean(p, val)?,
                "maxLength" => n.max_length = Some(int(p, val)?),
                "minLength" => n.min_length = Some(int(p, val)?),
                "pattern" => {
                    n.pattern = string(p, val)?;
                    n.compiled = Compiled(regex::Regex::new(&n.pattern).ok());
                }
                "maxItems" => n.max_items = Some(int(p, val)?),
                "minItems" => n.min_items = Some(int(p, val)?),
                "uniqueItems" => n.unique_items = boolean(p, val)?,
                "multipleOf" => n.multiple_of = Some(float(p, val)?),
                "enum" => match val {
                    Value::Array(a) => n.enum_ = Some(a.clone()),
                    Value::Null => {}
                    _ => return Err(err(p, val, "must be an array")),
                },
                "maxProperties" => n.max_properties = Some(int(p, val)?),
                "minProperties" => n.min_properties = Some(int(p, val)?),
                "required" => n.required = strings(p, val)?,
                "allOf" => n.all_of = schemas(p, val)?,
                "oneOf" => n.one_of = schemas(p, val)?,
                "anyOf" => n.any_of = schemas(p, val)?,
                "not" if !val.is_null() => {
                    n.not = Some(Box::new(Node::parse(val, p)?));
                }
                "items" => match val {
                    Value::Null => {}
                    Value::Array(_) => {
                        n.items_array = true;
                        let mut all = schemas(p, val)?;
                        if all.len() == 1 {
                            n.items = all.pop().map(Box::new);
                        }
                    }
                    _ => n.items = Some(Box::new(Node::parse(val, p)?)),
                },
                "properties" => match val {
                    Value::Null => {}
                    Value::Object(props) => {
                        for (name, s) in props {
                            n.properties
                                .insert(name.clone(), Node::parse(s, &format!("{p}[{name}]"))?);
                        }
                    }
                    _ => return Err(err(p, val, "must be an object")),
                },
                "additionalProperties" => match val {
                    Value::Null => {}
                    Value::Bool(b) => n.additional_properties = Some(Additional::Bool(*b)),
                    _ => {
                        n.additional_properties =
                            Some(Additional::Schema(Box::new(Node::parse(val, p)?)))
                    }
                },
                "x-kubernetes-preserve-unknown-fields" if !val.is_null() => {
                    n.x_preserve_unknown_fields = Some(boolean(p, val)?)
                }
                "x-kubernetes-embedded-resource" => n.x_embedded_resource = boolean(p, val)?,
                "x-kubernetes-int-or-string" => n.x_int_or_string = boolean(p, val)?,
                "x-kubernetes-list-map-keys" => n.x_list_map_keys = strings(p, val)?,
                "x-kubernetes-list-type" if !val.is_null() => n.x_list_type = Some(string(p, val)?),
                "x-kubernetes-map-type" if !val.is_null() => n.x_map_type = Some(string(p, val)?),
                "x-kubernetes-validations" => match val {
                    Value::Null => {}
                    Value::Array(a) => n.x_validations = a.clone(),
                    _ => return Err(err(p, val, "must be an array")),
                },
                "id" => push_unsupported(&mut n, "id", val, |v| v.as_str() != Some("")),
                "$schema" => push_unsupported(&mut n, "$schema", val, |v| v.as_str() != Some("")),
                "$ref" => push_unsupported(&mut n, "$ref", val, |v| v.as_str() != Some("")),
                "patternProperties" => push_unsupported(&mut n, "patternProperties", val, |v| {
                    v.as_object().is_none_or(|m| !m.is_empty())
                }),
                "dependencies" => push_unsupported(&mut n, "dependencies", val, |v| {
                    v.as_object().is_none_or(|m| !m.is_empty())
                }),
                "additionalItems" => push_unsupported(&mut n, "additionalItems", val, |_| true),
                "definitions" => push_unsupported(&mut n, "definitions", val, |v| {
                    v.as_object().is_none_or(|m| !m.is_empty())
                }),
                // Unknown fields are dropped when the CRD itself is decoded.
                _ => {}
            }
        }
        Ok(n)
    }

    /// The preserve-unknown-fields extension is set (to true).
    pub(crate) fn preserve_unknown(&self) -> bool {
        self.x_preserve_unknown_fields == Some(true)
    }

    /// The schema of `additionalProperties`, if it is one.
    pub(crate) fn additional_schema(&self) -> Option<&Node> {
        match &self.additional_properties {
            Some(Additional::Schema(s)) => Some(s),
            _ => None,
        }
    }

    /// Whether `additionalProperties` is set at all (a schema or a boolean): pruning keeps
    /// unknown fields of such objects, as upstream's `StructuralOrBool` does.
    pub(crate) fn has_additional(&self) -> bool {
        self.additional_properties.is_some()
    }

    /// Whether any value validation is set (used for the metadata invariants at the root).
    pub(crate) fn has_value_validation(&self) -> bool {
        !self.format.is_empty()
            || self.maximum.is_some()
            || self.exclusive_maximum
            || self.minimum.is_some()
            || self.exclusive_minimum
            || self.max_length.is_some()
            || self.min_length.is_some()
            || !self.pattern.is_empty()
            || self.max_items.is_some()
            || self.min_items.is_some()
            || self.unique_items
            || self.multiple_of.is_some()
            || self.enum_.as_ref().is_some_and(|e| !e.is_empty())
            || self.max_properties.is_some()
            || self.min_properties.is_some()
            || !self.required.is_empty()
            || !self.all_of.is_empty()
            || !self.one_of.is_empty()
            || !self.any_of.is_empty()
            || self.not.is_some()
    }

    /// Whether anything (but nothing in `ignore`) is set: used to compare with upstream's
    /// zero-value checks.
    pub(crate) fn is_empty_structurally(&self) -> bool {
        self.type_.is_empty()
            && self.description.is_empty()
            && self.title.is_empty()
            && self.default.is_none()
            && !self.nullable
            && self.external_docs.is_none()
            && self.example.is_none()
            && !self.has_value_validation()
            && self.items.is_none()
            && self.properties.is_empty()
            && self.additional_properties.is_none()
            && !self.preserve_unknown()
            && !self.x_embedded_resource
            && !self.x_int_or_string
            && self.x_list_map_keys.is_empty()
            && self.x_list_type.is_none()
            && self.x_map_type.is_none()
            && self.x_validations.is_empty()
    }
}

fn push_unsupported(n: &mut Node, name: &'static str, v: &Value, set: impl Fn(&Value) -> bool) {
    if !v.is_null() && set(v) {
        n.unsupported.push(name);
    }
}
