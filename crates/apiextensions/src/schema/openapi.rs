//! The schema as published in OpenAPI (upstream `pkg/controller/openapi/builder`'s
//! `buildKubeNative`, `Structural.ToKubeOpenAPI`, `Unfold` and, for v2,
//! `ToStructuralOpenAPIV2`): the kind's schema with `apiVersion`, `kind` and a `metadata`
//! reference to ObjectMeta, also inside embedded resources. The caller adds the
//! `x-kubernetes-group-version-kind` extension.

use serde_json::{Map, Value, json};

use super::node::{Additional, Node};

const API_VERSION_DESCRIPTION: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DESCRIPTION: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const EMBEDDED_API_VERSION_DESCRIPTION: &str = "apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const EMBEDDED_KIND_DESCRIPTION: &str = "kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const METADATA_DESCRIPTION: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// OpenAPI v3 (`components/schemas` entry).
pub(crate) fn to_v3(n: &Node) -> Value {
    kube_native(n, false)
}

/// OpenAPI v2 (`definitions` entry).
pub(crate) fn to_v2(n: &Node) -> Value {
    kube_native(n, true)
}

fn kube_native(n: &Node, v2: bool) -> Value {
    if v2 && n.preserve_unknown() {
        return json!({"type": "object"});
    }
    let mut s = n.clone();
    unfold(&mut s);
    if v2 {
        to_structural_v2(&mut s);
    }
    let mut out = to_kube(&s);
    set_property(&mut out, "metadata", metadata_ref(v2));
    set_property(
        &mut out,
        "apiVersion",
        json!({"description": API_VERSION_DESCRIPTION, "type": "string"}),
    );
    set_property(
        &mut out,
        "kind",
        json!({"description": KIND_DESCRIPTION, "type": "string"}),
    );
    add_embedded(&mut out, v2);
    out
}

fn metadata_ref(v2: bool) -> Value {
    if v2 {
        json!({"$ref": format!("#/definitions/{OBJECT_META}"), "description": METADATA_DESCRIPTION})
    } else {
        // OpenAPI v3 puts a reference with siblings into allOf.
        json!({
            "allOf": [{"$ref": format!("#/components/schemas/{OBJECT_META}")}],
            "description": METADATA_DESCRIPTION
        })
    }
}

fn set_property(s: &mut Value, name: &str, schema: Value) {
    if let Some(obj) = s.as_object_mut() {
        let props = obj
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(props) = props.as_object_mut() {
            props.insert(name.to_string(), schema);
        }
    }
}

/// Embedded resources get `apiVersion`, `kind` and `metadata`, and require the first two.
fn add_embedded(s: &mut Value, v2: bool) {
    let Some(obj) = s.as_object_mut() else {
        return;
    };
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        for v in props.values_mut() {
            add_embedded(v, v2);
        }
    }
    if let Some(items) = obj.get_mut("items") {
        add_embedded(items, v2);
    }
    if let Some(ap) = obj
        .get_mut("additionalProperties")
        .filter(|a| a.is_object())
    {
        add_embedded(ap, v2);
    }
    let flag = |k: &str| obj.get(k).and_then(Value::as_bool) == Some(true);
    if v2 && flag("x-kubernetes-preserve-unknown-fields") {
        return;
    }
    if !flag("x-kubernetes-embedded-resource") {
        return;
    }
    let mut s = Value::Object(std::mem::take(obj));
    set_property(
        &mut s,
        "apiVersion",
        json!({"description": EMBEDDED_API_VERSION_DESCRIPTION, "type": "string"}),
    );
    set_property(
        &mut s,
        "kind",
        json!({"description": EMBEDDED_KIND_DESCRIPTION, "type": "string"}),
    );
    set_property(&mut s, "metadata", metadata_ref(v2));
    let Value::Object(mut m) = s else {
        return;
    };
    let required = m
        .entry("required")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Some(req) = required.as_array_mut() {
        for k in ["kind", "apiVersion"] {
            if !req.iter().any(|r| r == k) {
                req.push(Value::String(k.into()));
            }
        }
    }
    *obj = m;
}

/// Upstream `Unfold`: int-or-string gets its implicit `anyOf` of integer and string.
fn unfold(n: &mut Node) {
    if let Some(items) = n.items.as_deref_mut() {
        unfold(items);
    }
    for p in n.properties.values_mut() {
        unfold(p);
    }
    if let Some(Additional::Schema(ap)) = &mut n.additional_properties {
        unfold(ap);
    }
    if !n.x_int_or_string {
        return;
    }
    let only = |c: &Node, t: &str| {
        c.type_ == t && {
            let mut x = c.clone();
            x.type_.clear();
            x.is_empty_structurally()
        }
    };
    let pair = |l: &[Node]| l.len() == 2 && only(&l[0], "integer") && only(&l[1], "string");
    if pair(&n.any_of) || n.all_of.first().is_some_and(|a| pair(&a.any_of)) {
        return;
    }
    let typed = |t: &str| Node {
        type_: t.into(),
        ..Node::default()
    };
    let any_of = vec![typed("integer"), typed("string")];
    if n.any_of.is_empty() {
        n.any_of = any_of;
    } else {
        n.all_of.insert(
            0,
            Node {
                any_of,
                ..Node::default()
            },
        );
    }
}

/// Upstream `ToStructuralOpenAPIV2`: drops what OpenAPI v2 cannot express.
fn to_structural_v2(s: &mut Node) {
    s.all_of.clear();
    s.one_of.clear();
    s.any_of.clear();
    s.not = None;
    if s.nullable {
        s.type_.clear();
        s.nullable = false;
        s.items = None;
        s.properties.clear();
    }
    if s.preserve_unknown() {
        s.items = None;
        s.properties.clear();
    }
    if s.items.is_none() && s.type_ == "array" {
        s.type_.clear();
    }
    if s.preserve_unknown() && s.type_ == "object" {
        s.type_.clear();
    }
    let nullable_props: Vec<String> = s
        .properties
        .iter()
        .filter(|(_, p)| p.nullable)
        .map(|(k, _)| k.clone())
        .collect();
    s.required.retain(|r| !nullable_props.contains(r));
    if s.additional_schema().is_some_and(|a| a.nullable) {
        s.required.clear();
    }
    if let Some(items) = s.items.as_deref_mut() {
        to_structural_v2(items);
    }
    for p in s.properties.values_mut() {
        to_structural_v2(p);
    }
    if let Some(Additional::Schema(ap)) = &mut s.additional_properties {
        to_structural_v2(ap);
    }
}

/// `ToKubeOpenAPI`: the schema's JSON (omitting empty fields, as kube-openapi's spec.Schema
/// marshals).
fn to_kube(n: &Node) -> Value {
    let mut m = Map::new();
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    if !n.description.is_empty() {
        put("description", json!(n.description));
    }
    if !n.type_.is_empty() {
        put("type", json!(n.type_));
    }
    if n.nullable {
        put("nullable", json!(true));
    }
    if !n.format.is_empty() {
        put("format", json!(n.format));
    }
    if !n.title.is_empty() {
        put("title", json!(n.title));
    }
    if let Some(d) = &n.default {
        put("default", d.clone());
    }
    let num = |f: f64| {
        serde_json::Number::from_f64(f).map_or(Value::Null, |n| {
            // Integral bounds print as integers, as Go's JSON does for float64.
            if f.fract() == 0.0 && f.abs() < 1e15 {
                Value::from(f as i64)
            } else {
                Value::Number(n)
            }
        })
    };
    if let Some(x) = n.maximum {
        put("maximum", num(x));
    }
    if n.exclusive_maximum {
        put("exclusiveMaximum", json!(true));
    }
    if let Some(x) = n.minimum {
        put("minimum", num(x));
    }
    if n.exclusive_minimum {
        put("exclusiveMinimum", json!(true));
    }
    for (k, v) in [
        ("maxLength", n.max_length),
        ("minLength", n.min_length),
        ("maxItems", n.max_items),
        ("minItems", n.min_items),
        ("maxProperties", n.max_properties),
        ("minProperties", n.min_properties),
    ] {
        if let Some(v) = v {
            put(k, json!(v));
        }
    }
    if !n.pattern.is_empty() {
        put("pattern", json!(n.pattern));
    }
    if n.unique_items {
        put("uniqueItems", json!(true));
    }
    if let Some(x) = n.multiple_of {
        put("multipleOf", num(x));
    }
    if let Some(e) = &n.enum_ {
        put("enum", Value::Array(e.clone()));
    }
    if !n.required.is_empty() {
        put("required", json!(n.required));
    }
    if let Some(items) = &n.items {
        put("items", to_kube(items));
    }
    for (k, list) in [
        ("allOf", &n.all_of),
        ("oneOf", &n.one_of),
        ("anyOf", &n.any_of),
    ] {
        if !list.is_empty() {
            put(k, Value::Array(list.iter().map(to_kube).collect()));
        }
    }
    if let Some(not) = &n.not {
        put("not", to_kube(not));
    }
    if !n.properties.is_empty() {
        let props: Map<String, Value> = n
            .properties
            .iter()
            .map(|(k, v)| (k.clone(), to_kube(v)))
            .collect();
        put("properties", Value::Object(props));
    }
    match &n.additional_properties {
        Some(Additional::Schema(s)) => put("additionalProperties", to_kube(s)),
        Some(Additional::Bool(b)) => put("additionalProperties", json!(b)),
        None => {}
    }
    if let Some(d) = &n.external_docs {
        put("externalDocs", d.clone());
    }
    if let Some(e) = &n.example {
        put("example", e.clone());
    }
    if n.preserve_unknown() {
        put("x-kubernetes-preserve-unknown-fields", json!(true));
    }
    if n.x_embedded_resource {
        put("x-kubernetes-embedded-resource", json!(true));
    }
    if n.x_int_or_string {
        put("x-kubernetes-int-or-string", json!(true));
    }
    if !n.x_list_map_keys.is_empty() {
        put("x-kubernetes-list-map-keys", json!(n.x_list_map_keys));
    }
    if let Some(t) = &n.x_list_type {
        put("x-kubernetes-list-type", json!(t));
    }
    if let Some(t) = &n.x_map_type {
        put("x-kubernetes-map-type", json!(t));
    }
    if !n.x_validations.is_empty() {
        put(
            "x-kubernetes-validations",
            Value::Array(n.x_validations.clone()),
        );
    }
    Value::Object(m)
}
