//! Tables ported from upstream's schema tests (structural validation, pruning,
//! defaulting, custom resource validation, list types, embedded resources).

use serde_json::{Value, json};

use super::Structural;
use super::node::Node;

fn node(schema: Value) -> Node {
    Node::parse(&schema, "").unwrap()
}

/// A Structural without the structural checks (upstream's tests build Structurals by hand).
fn raw(schema: Value) -> Structural {
    Structural::from_node(node(schema))
}

fn sorted(errs: Vec<apiserver::registry::FieldError>) -> Vec<String> {
    let mut v: Vec<String> = errs.iter().map(ToString::to_string).collect();
    v.sort();
    v
}

fn sorted_str(v: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = v.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

#[test]
fn structural_errors() {
    let p = "spec.versions[0].schema.openAPIV3Schema";
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (json!({"type": "object"}), vec![]),
        (
            json!({}),
            vec![
                "spec.versions[0].schema.openAPIV3Schema.type: Required value: must not be empty at the root",
            ],
        ),
        (
            json!({"type": "string"}),
            vec![
                r#"spec.versions[0].schema.openAPIV3Schema.type: Invalid value: "string": must be object at the root"#,
            ],
        ),
        (
            json!({"type": "object", "properties": {"spec": {"properties": {"a": {"type": "array"}}}}}),
            vec![
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[a].items: Required value: must be specified",
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields",
            ],
        ),
        (
            json!({"type": "object", "properties": {"l": {"type": "array", "items": {}}}}),
            vec![
                "spec.versions[0].schema.openAPIV3Schema.properties[l].items.type: Required value: must not be empty for specified array items",
            ],
        ),
        (
            json!({"type": "object", "additionalProperties": {"type": "string"}}),
            vec![
                "spec.versions[0].schema.openAPIV3Schema.additionalProperties: Forbidden: must not be used at the root",
            ],
        ),
        (
            json!({"type": "object", "properties": {"x": {"x-kubernetes-int-or-string": true, "x-kubernetes-preserve-unknown-fields": true}}}),
            vec![
                "spec.versions[0].schema.openAPIV3Schema.properties[x].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if x-kubernetes-int-or-string is true",
            ],
        ),
        // int-or-string with its anyOf pattern is structural.
        (
            json!({"type": "object", "properties": {"x": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]}}}),
            vec![],
        ),
        (
            json!({"type": "object", "properties": {"x": {"type": "string", "anyOf": [{"type": "integer"}, {"description": "d", "default": 1}]}}}),
            vec![
                "spec.versions[0].schema.openAPIV3Schema.properties[x].anyOf[0].type: Forbidden: must be empty to be structural",
                "spec.versions[0].schema.openAPIV3Schema.properties[x].anyOf[1].default: Forbidden: must be undefined to be structural",
                "spec.versions[0].schema.openAPIV3Schema.properties[x].anyOf[1].description: Forbidden: must be empty to be structural",
            ],
        ),
        (
            json!({"type": "object", "properties": {"foo": {"type": "string"}}, "allOf": [{"properties": {"foo": {}, "bar": {"items": {}}}}]}),
            vec![
                "spec.versions[0].schema.openAPIV3Schema.properties[bar]: Required value: because it is defined in spec.versions[0].schema.openAPIV3Schema.allOf[0].properties[bar]",
            ],
        ),
        (
            json!({"type": "object", "properties": {"e": {"type": "object", "x-kubernetes-embedded-resource": true}}}),
            vec![
                "spec.versions[0].schema.openAPIV3Schema.properties[e].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
            ],
        ),
        (
            json!({"type": "object", "properties": {"e": {"type": "string", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}}),
            vec![
                r#"spec.versions[0].schema.openAPIV3Schema.properties[e].type: Invalid value: "string": must be object if x-kubernetes-embedded-resource is true"#,
            ],
        ),
        (
            json!({"type": "object", "properties": {"kind": {"type": "integer"}, "metadata": {"type": "object", "properties": {"name": {"type": "string"}, "labels": {"type": "object"}}}}}),
            vec![
                r#"spec.versions[0].schema.openAPIV3Schema.properties[kind].type: Invalid value: "integer": must be string"#,
                "spec.versions[0].schema.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
            ],
        ),
        (
            json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}}}}}),
            vec![],
        ),
        (
            json!({"type": "object", "properties": {"s": {"type": "object", "properties": {"x": {"type": "string"}}, "not": {"properties": {"metadata": {}}}}}}),
            vec![
                // Upstream checks completeness only for the root's value validations.
                "spec.versions[0].schema.openAPIV3Schema.properties[s].not.properties[metadata]: Forbidden: must not be specified in a nested context",
            ],
        ),
        (
            json!({"type": "object", "properties": {"s": {"type": "string", "pattern": "+"}}}),
            vec![
                r#"spec.versions[0].schema.openAPIV3Schema.properties[s].pattern: Invalid value: "+": must be a valid regular expression, but isn't: error parsing regexp: missing argument to repetition operator: `+`"#,
            ],
        ),
        (
            json!({"type": "object", "properties": {"x": {"$ref": "#/definitions/foo"}}}),
            vec![
                r#"spec.versions[0].schema.openAPIV3Schema: Invalid value: "": OpenAPIV3Schema '$ref' is not supported"#,
            ],
        ),
        (
            json!({"type": "object", "properties": {"x": {"type": "array", "items": [{"type": "string"}, {"type": "string"}]}}}),
            vec![
                r#"spec.versions[0].schema.openAPIV3Schema: Invalid value: "": OpenAPIV3Schema 'items' must be a schema, but is an array"#,
            ],
        ),
    ];
    for (schema, want) in cases {
        let got = match Structural::new(&schema, p) {
            Ok(_) => Vec::new(),
            Err(errs) => sorted(errs),
        };
        assert_eq!(got, sorted_str(&want), "{schema}");
    }
}

#[test]
fn defaulting_ported() {
    let cases: Vec<(&str, Value, Value, Value)> = vec![
        ("scalar", json!({"default": "foo"}), json!(4), json!(4)),
        (
            "object array",
            json!({"items": {"properties": {"a": {"default": "A"}, "b": {"default": "B"}, "c": {"default": "C"}}}}),
            json!([{"a": 1}, {"b": 1}, {"c": 1}]),
            json!([{"a": 1, "b": "B", "c": "C"}, {"a": "A", "b": 1, "c": "C"}, {"a": "A", "b": "B", "c": 1}]),
        ),
        (
            "object array object",
            json!({"properties": {
                "array": {"items": {"properties": {"a": {"default": "A"}, "b": {"default": "B"}}}},
                "object": {"properties": {"a": {"default": "N"}, "b": {"default": "O"}}},
                "additionalProperties": {"additionalProperties": {"properties": {"a": {"default": "alpha"}, "b": {"default": "beta"}}}},
                "foo": {"default": "bar"}
            }}),
            json!({"array": [{"a": 1}, {"b": 2}], "object": {"a": 1}, "additionalProperties": {"x": {"a": 1}, "y": {"b": 2}}}),
            json!({"array": [{"a": 1, "b": "B"}, {"a": "A", "b": 2}], "object": {"a": 1, "b": "O"}, "additionalProperties": {"x": {"a": 1, "b": "beta"}, "y": {"a": "alpha", "b": 2}}, "foo": "bar"}),
        ),
        (
            "empty and null",
            json!({"items": {"properties": {"a": {"default": "A"}}}}),
            json!([{}, {"a": 1}, {"a": 0}, {"a": 0.0}, {"a": ""}, {"a": null}, {"a": []}, {"a": {}}]),
            json!([{"a": "A"}, {"a": 1}, {"a": 0}, {"a": 0.0}, {"a": ""}, {"a": "A"}, {"a": []}, {"a": {}}]),
        ),
        (
            "null in nullable list",
            json!({"nullable": true, "items": {"properties": {"a": {"default": "A"}}}}),
            json!([null]),
            json!([null]),
        ),
        (
            "null in non-nullable list",
            json!({"items": {"default": "A"}}),
            json!([null]),
            json!(["A"]),
        ),
        (
            "null in nullable object",
            json!({"properties": {"a": {"nullable": true, "default": "A"}}}),
            json!({"a": null}),
            json!({"a": null}),
        ),
        (
            "null in non-nullable object",
            json!({"properties": {"a": {"default": "A"}}}),
            json!({"a": null}),
            json!({"a": "A"}),
        ),
        (
            "null in nullable map",
            json!({"additionalProperties": {"nullable": true, "properties": {"a": {"default": "A"}}}}),
            json!({"a": null}),
            json!({"a": null}),
        ),
        (
            "null in non-nullable map",
            json!({"additionalProperties": {"default": "A"}}),
            json!({"a": null}),
            json!({"a": "A"}),
        ),
    ];
    for (name, schema, input, want) in cases {
        let mut x = input;
        super::defaults::default(&mut x, Some(&node(schema)));
        assert_eq!(x, want, "{name}");
    }
}

#[test]
fn apply_defaults_prunes_non_nullable_nulls() {
    let s = raw(json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "a": {"type": "string"},
            "b": {"type": "string", "nullable": true},
            "c": {"type": "integer", "default": 3},
            "d": {"type": "object", "properties": {"e": {"type": "string", "default": "x"}}}
        }}
    }}));
    let mut obj = json!({"spec": {"a": null, "b": null, "c": null, "d": {}}});
    s.apply_defaults(&mut obj);
    assert_eq!(obj, json!({"spec": {"b": null, "c": 3, "d": {"e": "x"}}}));
}

#[test]
fn pruning_ported() {
    let cases: Vec<(&str, Value, Value, Value, Vec<&str>)> = vec![
        (
            "unknown fields at the root and below",
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}}),
            json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "n"}, "spec": {"a": "x", "b": 1}, "status": {}}),
            json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "n"}, "spec": {"a": "x"}}),
            vec!["spec.b", "status"],
        ),
        (
            "preserve unknown fields",
            json!({"type": "object", "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"o": {"type": "object", "properties": {"a": {"type": "string"}}}}}}}),
            json!({"spec": {"free": {"x": 1}, "o": {"a": "1", "b": "2"}}}),
            json!({"spec": {"free": {"x": 1}, "o": {"a": "1"}}}),
            vec!["spec.o.b"],
        ),
        (
            "arrays and maps",
            json!({"type": "object", "properties": {
                "l": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
                "m": {"type": "object", "additionalProperties": {"type": "object", "properties": {"a": {"type": "string"}}}},
                "anything": {"type": "object", "additionalProperties": true}
            }}),
            json!({"l": [{"a": "x", "b": "y"}, {"c": 1}], "m": {"k": {"a": "1", "z": 2}}, "anything": {"deep": {"x": 1}}}),
            json!({"l": [{"a": "x"}, {}], "m": {"k": {"a": "1"}}, "anything": {"deep": {}}}),
            vec!["anything.deep.x", "l[0].b", "l[1].c", "m.k.z"],
        ),
        (
            "embedded resource keeps its type meta and cuts metadata to ObjectMeta",
            json!({"type": "object", "properties": {"e": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object"}}}}}),
            json!({"metadata": {"name": "a", "bogus": 1, "labels": {}, "namespace": "", "creationTimestamp": null, "generation": 0}, "e": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "foo": 1}, "spec": {"x": 1}, "status": {}}}),
            json!({"metadata": {"name": "a"}, "e": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}}),
            vec!["e.metadata.foo", "e.spec.x", "e.status", "metadata.bogus"],
        ),
        (
            "nested type meta is pruned outside embedded resources",
            json!({"type": "object", "properties": {"spec": {"type": "object"}}}),
            json!({"spec": {"kind": "x", "apiVersion": "y", "metadata": {}}}),
            json!({"spec": {}}),
            vec!["spec.apiVersion", "spec.kind", "spec.metadata"],
        ),
        (
            "preserve unknown fields at the root",
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}}),
            json!({"foo": 1, "spec": {"a": "x", "b": 1}}),
            json!({"foo": 1, "spec": {"a": "x"}}),
            vec!["spec.b"],
        ),
    ];
    for (name, schema, input, want, want_paths) in cases {
        let s = raw(schema);
        let mut x = input;
        let paths = s.prune(&mut x);
        assert_eq!(x, want, "{name}");
        assert_eq!(paths, want_paths, "{name}");
    }
}

fn object_schema(props: Value) -> Structural {
    raw(json!({"type": "object", "properties": props}))
}

#[test]
fn validation_ported() {
    let int_or_string = object_schema(json!({"field": {"x-kubernetes-int-or-string": true}}));
    let any_of = object_schema(
        json!({"field": {"nullable": true, "x-kubernetes-int-or-string": true,
        "anyOf": [{"type": "integer"}, {"type": "string"}]}}),
    );
    let all_of = object_schema(
        json!({"field": {"nullable": true, "x-kubernetes-int-or-string": true,
        "allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}]}}),
    );
    let cases: Vec<(&str, Structural, Value, Vec<&str>)> = vec![
        (
            "object",
            object_schema(json!({"field": {"type": "object"}})),
            json!({"field": "foo"}),
            vec![
                r#"field: Invalid value: "string": field in body must be of type object: "string""#,
            ],
        ),
        (
            "object int",
            object_schema(json!({"field": {"type": "object"}})),
            json!({"field": 42}),
            vec![
                r#"field: Invalid value: "integer": field in body must be of type object: "integer""#,
            ],
        ),
        (
            "object float",
            object_schema(json!({"field": {"type": "object"}})),
            json!({"field": 1.2}),
            vec![
                r#"field: Invalid value: "number": field in body must be of type object: "number""#,
            ],
        ),
        (
            "object null",
            object_schema(json!({"field": {"type": "object"}})),
            json!({"field": null}),
            vec![r#"field: Invalid value: "null": field in body must be of type object: "null""#],
        ),
        (
            "nullable object",
            object_schema(json!({"field": {"type": "object", "nullable": true}})),
            json!({"field": null}),
            vec![],
        ),
        (
            "int-or-string ok",
            int_or_string.clone(),
            json!({"field": 42}),
            vec![],
        ),
        (
            "int-or-string ok string",
            int_or_string.clone(),
            json!({"field": "foo"}),
            vec![],
        ),
        (
            "int-or-string null",
            int_or_string.clone(),
            json!({"field": null}),
            vec![
                r#"field: Invalid value: "null": field in body must be of type integer,string: "null""#,
            ],
        ),
        (
            "int-or-string bool",
            int_or_string.clone(),
            json!({"field": true}),
            vec![
                r#"field: Invalid value: "boolean": field in body must be of type integer,string: "boolean""#,
            ],
        ),
        (
            "int-or-string float",
            int_or_string.clone(),
            json!({"field": 1.2}),
            vec![
                r#"field: Invalid value: "number": field in body must be of type integer,string: "number""#,
            ],
        ),
        (
            "anyOf ok null",
            any_of.clone(),
            json!({"field": null}),
            vec![],
        ),
        (
            "anyOf bool",
            any_of.clone(),
            json!({"field": true}),
            vec![
                r#"<nil>: Invalid value: "": "field" must validate at least one schema (anyOf)"#,
                r#"field: Invalid value: "boolean": field in body must be of type integer,string: "boolean""#,
                r#"field: Invalid value: "boolean": field in body must be of type integer: "boolean""#,
            ],
        ),
        (
            "anyOf float",
            any_of.clone(),
            json!({"field": 1.2}),
            vec![
                r#"<nil>: Invalid value: "": "field" must validate at least one schema (anyOf)"#,
                r#"field: Invalid value: "number": field in body must be of type integer,string: "number""#,
                r#"field: Invalid value: "number": field in body must be of type integer: "number""#,
                r#"<nil>: Invalid value: "": Checked value must be of type integer (default format) in field"#,
            ],
        ),
        (
            "allOf array",
            all_of.clone(),
            json!({"field": []}),
            vec![
                r#"<nil>: Invalid value: "": "field" must validate all the schemas (allOf). None validated"#,
                r#"<nil>: Invalid value: "": "field" must validate at least one schema (anyOf)"#,
                r#"field: Invalid value: "array": field in body must be of type integer,string: "array""#,
                r#"field: Invalid value: "array": field in body must be of type integer: "array""#,
            ],
        ),
        (
            "invalid regex",
            object_schema(json!({"field": {"type": "string", "pattern": "+"}})),
            json!({"field": "foo"}),
            vec![
                "field: Invalid value: \"foo\": field in body should match '+, but pattern is invalid: error parsing regexp: missing argument to repetition operator: `+`'",
            ],
        ),
        (
            "required",
            raw(
                json!({"type": "object", "required": ["field"], "properties": {"field": {"type": "object", "required": ["nested"], "properties": {"nested": {}}}}}),
            ),
            json!({"test": "a"}),
            vec!["field: Required value"],
        ),
        (
            "required nested",
            raw(
                json!({"type": "object", "required": ["field"], "properties": {"field": {"type": "object", "required": ["nested"], "properties": {"nested": {}}}}}),
            ),
            json!({"field": {}}),
            vec!["field.nested: Required value"],
        ),
        (
            "enum",
            object_schema(
                json!({"field": {"type": "object", "required": ["nestedint", "nestedstring"], "properties": {
                "nestedint": {"type": "integer", "enum": [1, 2]}, "nestedstring": {"type": "string", "enum": ["a", "b"]}}}}),
            ),
            json!({"field": {"nestedint": "x", "nestedstring": true}}),
            vec![
                r#"field.nestedint: Invalid value: "string": field.nestedint in body must be of type integer: "string""#,
                r#"field.nestedint: Unsupported value: "x": supported values: "1", "2""#,
                r#"field.nestedstring: Invalid value: "boolean": field.nestedstring in body must be of type string: "boolean""#,
                r#"field.nestedstring: Unsupported value: true: supported values: "a", "b""#,
            ],
        ),
        (
            "maxProperties",
            object_schema(json!({"fieldX": {"type": "object", "maxProperties": 2}})),
            json!({"fieldX": {"a": true, "b": true, "c": true}}),
            vec!["fieldX: Too many: 3: must have at most 2 items"],
        ),
        (
            "maxItems",
            object_schema(
                json!({"fieldX": {"type": "array", "maxItems": 2, "items": {"type": "string"}}}),
            ),
            json!({"fieldX": ["a", "b", "c"]}),
            vec!["fieldX: Too many: 3: must have at most 2 items"],
        ),
        (
            "maxLength",
            object_schema(json!({"fieldX": {"type": "string", "maxLength": 2}})),
            json!({"fieldX": "abc"}),
            vec!["fieldX: Too long: may not be more than 2 bytes"],
        ),
        (
            "k8s-long-name",
            object_schema(json!({"fieldX": {"type": "string", "format": "k8s-long-name"}})),
            json!({"fieldX": "a.-"}),
            vec![
                r#"fieldX: Invalid value: "a.-": fieldX in body must be of type k8s-long-name: "a.-""#,
            ],
        ),
        (
            "k8s-short-name",
            object_schema(json!({"fieldX": {"type": "string", "format": "k8s-short-name"}})),
            json!({"fieldX": "a-"}),
            vec![
                r#"fieldX: Invalid value: "a-": fieldX in body must be of type k8s-short-name: "a-""#,
            ],
        ),
        (
            "int32 overflow",
            object_schema(json!({"intThirtyTwo": {"type": "integer", "format": "int32"}})),
            json!({"intThirtyTwo": 2147483648_i64}),
            vec![
                r#"<nil>: Invalid value: "": Checked value must be of type integer with format int32 in intThirtyTwo"#,
            ],
        ),
        (
            "int32 ok",
            object_schema(json!({"intThirtyTwo": {"type": "integer", "format": "int32"}})),
            json!({"intThirtyTwo": -2147483648_i64}),
            vec![],
        ),
        (
            "minimum",
            object_schema(
                json!({"spec": {"type": "object", "properties": {"replicas": {"type": "integer", "minimum": 1}}}}),
            ),
            json!({"spec": {"replicas": 0}}),
            vec![
                "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1",
            ],
        ),
        (
            "exclusive maximum float",
            object_schema(
                json!({"n": {"type": "number", "maximum": 1.5, "exclusiveMaximum": true}}),
            ),
            json!({"n": 1.5}),
            vec!["n: Invalid value: 1.5: n in body should be less than 1.5"],
        ),
        (
            "multipleOf",
            object_schema(json!({"n": {"type": "integer", "multipleOf": 3}})),
            json!({"n": 7}),
            vec!["n: Invalid value: 7: n in body should be a multiple of 3"],
        ),
        (
            "minLength and pattern",
            object_schema(json!({"s": {"type": "string", "minLength": 2, "pattern": "^a"}})),
            json!({"s": "b"}),
            vec![r#"s: Invalid value: "b": s in body should be at least 2 chars long"#],
        ),
        (
            "pattern",
            object_schema(json!({"s": {"type": "string", "pattern": "^a"}})),
            json!({"s": "b"}),
            vec![r#"s: Invalid value: "b": s in body should match '^a'"#],
        ),
        (
            "minItems, uniqueItems",
            object_schema(
                json!({"l": {"type": "array", "minItems": 3, "uniqueItems": true, "items": {"type": "integer"}}}),
            ),
            json!({"l": [1, 1]}),
            vec![
                "l: Invalid value: 2: l in body should have at least 3 items",
                r#"l: Invalid value: "": l in body shouldn't contain duplicates"#,
            ],
        ),
        (
            "minProperties",
            object_schema(json!({"o": {"type": "object", "minProperties": 1}})),
            json!({"o": {}}),
            vec!["o: Invalid value: 0: o in body should have at least 1 properties"],
        ),
        (
            "additionalProperties false",
            object_schema(json!({"o": {"type": "object", "additionalProperties": false}})),
            json!({"o": {"x": 1}}),
            vec![r#"o: Invalid value: "x": o.x in body is a forbidden property"#],
        ),
        (
            "additionalProperties schema",
            object_schema(
                json!({"o": {"type": "object", "additionalProperties": {"type": "string"}}}),
            ),
            json!({"o": {"x": 1}}),
            vec![r#"o.x: Invalid value: "integer": o.x in body must be of type string: "integer""#],
        ),
        (
            "items",
            object_schema(json!({"l": {"type": "array", "items": {"type": "string"}}})),
            json!({"l": ["a", 2]}),
            vec![
                r#"l[1]: Invalid value: "integer": l[1] in body must be of type string: "integer""#,
            ],
        ),
        (
            "integral float is an integer",
            object_schema(json!({"i": {"type": "integer"}})),
            json!({"i": 3.0}),
            vec![],
        ),
        (
            "format date-time",
            object_schema(json!({"t": {"type": "string", "format": "date-time"}})),
            json!({"t": "yesterday"}),
            vec![
                r#"t: Invalid value: "yesterday": t in body must be of type date-time: "yesterday""#,
            ],
        ),
        (
            "unsupported format ignored",
            object_schema(json!({"t": {"type": "string", "format": "made-up"}})),
            json!({"t": "x"}),
            vec![],
        ),
        (
            "oneOf",
            object_schema(
                json!({"o": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}}),
            ),
            json!({"o": {"a": "x", "b": "y"}}),
            vec![
                r#"<nil>: Invalid value: "": "o" must validate one and only one schema (oneOf). Found 2 valid alternatives"#,
            ],
        ),
        (
            "not",
            object_schema(json!({"o": {"type": "string", "not": {"enum": ["x"]}}})),
            json!({"o": "x"}),
            vec![r#"<nil>: Invalid value: "": "o" must not validate the schema (not)"#],
        ),
        (
            "root type",
            raw(json!({"type": "object"})),
            json!("x"),
            vec![r#"<nil>: Invalid value: "string":  in body must be of type object: "string""#],
        ),
    ];
    for (name, s, obj, want) in cases {
        assert_eq!(sorted(s.validate(&obj)), sorted_str(&want), "{name}");
    }
}

#[test]
fn list_types() {
    let s = object_schema(json!({
        "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "map": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
            "items": {"type": "object", "properties": {"k": {"type": "string"}, "v": {"type": "string"}}}},
        "map2": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a", "b"],
            "items": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}}
    }));
    let obj = json!({
        "set": ["a", "b", "a", "a"],
        "map": [{"k": "x", "v": "1"}, {"k": "x", "v": "2"}, {"v": "3"}, {"v": "4"}],
        "map2": [{"a": "x", "b": 1}, {"a": "x", "b": 2}, {"a": "x", "b": 1}]
    });
    assert_eq!(
        sorted(s.validate(&obj)),
        sorted_str(&[
            r#"set[2]: Duplicate value: "a""#,
            r#"map[1]: Duplicate value: {"k":"x"}"#,
            "map[3]: Duplicate value: {}",
            r#"map2[2]: Duplicate value: {"a":"x","b":1}"#,
        ])
    );
    // On update, a list that was already invalid is not re-checked.
    assert_eq!(s.validate_update(&obj, &obj), Vec::new());
}

#[test]
fn embedded_resources() {
    let s = object_schema(json!({
        "e": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}
    }));
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (
            json!({"e": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}}),
            vec![],
        ),
        (
            json!({"e": {}}),
            vec!["e.apiVersion: Required value", "e.kind: Required value"],
        ),
        (
            json!({"e": {"apiVersion": "", "kind": "a_b", "metadata": {"name": "a/b"}}}),
            vec![
                r#"e.apiVersion: Invalid value: "": must not be empty"#,
                r#"e.kind: Invalid value: "a_b": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"#,
                r#"e.metadata.name: Invalid value: "a/b": may not contain '/'"#,
            ],
        ),
        (
            json!({"e": {"apiVersion": 1, "kind": "K"}}),
            vec!["e.apiVersion: Invalid value: 1: must be a string"],
        ),
    ];
    for (obj, want) in cases {
        assert_eq!(sorted(s.validate(&obj)), sorted_str(&want), "{obj}");
    }
}

#[test]
fn ratcheting_keeps_unchanged_invalid_values() {
    let s = object_schema(json!({"spec": {"type": "object", "properties": {
        "a": {"type": "string", "maxLength": 1},
        "b": {"type": "string", "maxLength": 1}
    }}}));
    let old = json!({"spec": {"a": "toolong", "b": "x"}});
    let new = json!({"spec": {"a": "toolong", "b": "also"}});
    assert_eq!(
        sorted(s.validate_update(&new, &old)),
        sorted_str(&["spec.b: Too long: may not be more than 1 bytes"])
    );
    assert_eq!(s.validate(&new).len(), 2);
}

fn crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "foos.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "foos", "kind": "Foo"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"replicas": {"type": "integer", "default": 1, "minimum": 0}}}
                }}},
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                "additionalPrinterColumns": [{"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}]
            }]
        }
    })
}

fn crd_errors(mut c: Value, edit: impl FnOnce(&mut Value)) -> Vec<String> {
    edit(&mut c);
    super::default_crd(&mut c);
    sorted(super::validate_crd(&c, None))
}

#[test]
fn crd_defaults() {
    let mut c = crd();
    super::default_crd(&mut c);
    assert_eq!(c["spec"]["names"]["singular"], "foo");
    assert_eq!(c["spec"]["names"]["listKind"], "FooList");
    assert_eq!(c["spec"]["conversion"], json!({"strategy": "None"}));
    assert_eq!(c["status"]["storedVersions"], json!(["v1"]));
}

#[test]
fn crd_validation() {
    assert_eq!(crd_errors(crd(), |_| {}), Vec::<String>::new());
    type Edit = Box<dyn FnOnce(&mut Value)>;
    let cases: Vec<(&str, Edit, Vec<&str>)> = vec![
        (
            "name",
            Box::new(|c| c["metadata"]["name"] = json!("bars.example.com")),
            vec![
                r#"metadata.name: Invalid value: "bars.example.com": must be spec.names.plural+"."+spec.group"#,
            ],
        ),
        (
            "group",
            Box::new(|c| {
                c["spec"]["group"] = json!("example");
                c["metadata"]["name"] = json!("foos.example");
            }),
            vec![
                r#"spec.group: Invalid value: "example": should be a domain with at least one dot"#,
            ],
        ),
        (
            "scope",
            Box::new(|c| c["spec"]["scope"] = json!("Galaxy")),
            vec![
                r#"spec.scope: Unsupported value: "Galaxy": supported values: "Cluster", "Namespaced""#,
            ],
        ),
        (
            "no storage",
            Box::new(|c| c["spec"]["versions"][0]["storage"] = json!(false)),
            vec![
                "spec.versions: Invalid value: [{\"additionalPrinterColumns\":[{\"jsonPath\":\".spec.replicas\",\"name\":\"Replicas\",\"type\":\"integer\"}],\"name\":\"v1\",\"schema\":{\"openAPIV3Schema\":{\"properties\":{\"spec\":{\"properties\":{\"replicas\":{\"default\":1,\"minimum\":0,\"type\":\"integer\"}},\"type\":\"object\"}},\"type\":\"object\"}},\"served\":true,\"storage\":false,\"subresources\":{\"scale\":{\"specReplicasPath\":\".spec.replicas\",\"statusReplicasPath\":\".status.replicas\"},\"status\":{}}}]: must have exactly one version marked as storage version",
                "status.storedVersions: Invalid value: []: must have at least one stored version",
            ],
        ),
        (
            "version name",
            Box::new(|c| c["spec"]["versions"][0]["name"] = json!("V1")),
            vec![
                "spec.versions[0].name: Invalid value: \"V1\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            ],
        ),
        (
            "missing schema",
            Box::new(|c| {
                c["spec"]["versions"][0]
                    .as_object_mut()
                    .unwrap()
                    .remove("schema");
            }),
            vec!["spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"],
        ),
        (
            "non-structural (hoisted to spec.validation)",
            Box::new(|c| {
                c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] =
                    json!({"properties": {}})
            }),
            vec![
                "spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields",
            ],
        ),
        (
            "bad default",
            Box::new(|c| {
                c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
                    ["replicas"]["default"] = json!(-1)
            }),
            vec![
                "spec.validation.openAPIV3Schema.properties[spec].properties[replicas].default: Invalid value: -1:  in body should be greater than or equal to 0",
            ],
        ),
        (
            "unpruned default",
            Box::new(|c| {
                c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["default"] =
                    json!({"x": 1})
            }),
            vec![
                r#"spec.validation.openAPIV3Schema.properties[spec].default: Invalid value: {"x":1}: must not have unknown fields"#,
            ],
        ),
        (
            "metadata default",
            Box::new(|c| {
                c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["metadata"] =
                    json!({"type": "object", "default": {}})
            }),
            vec![
                "spec.validation.openAPIV3Schema.properties[metadata].default: Forbidden: must not be set in top-level metadata",
            ],
        ),
        (
            "root with status",
            Box::new(|c| {
                c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["anyOf"] =
                    json!([{"required": ["spec"]}])
            }),
            vec![
                "spec.validation.openAPIV3Schema: Invalid value: {\"anyOf\":[{\"required\":[\"spec\"]}],\"properties\":{\"spec\":{\"properties\":{\"replicas\":{\"default\":1,\"minimum\":0,\"type\":\"integer\"}},\"type\":\"object\"}},\"type\":\"object\"}: only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the status subresource is enabled",
            ],
        ),
        (
            "scale path",
            Box::new(|c| {
                c["spec"]["versions"][0]["subresources"]["scale"]["specReplicasPath"] =
                    json!(".status.x")
            }),
            vec![
                r#"spec.subresources.scale.specReplicasPath: Invalid value: ".status.x": should be a json path under .spec"#,
            ],
        ),
        (
            "printer column",
            Box::new(|c| {
                c["spec"]["versions"][0]["additionalPrinterColumns"][0]["type"] = json!("float")
            }),
            vec![
                r#"spec.additionalPrinterColumns[0].type: Invalid value: "float": must be one of boolean,date,integer,number,string"#,
            ],
        ),
        (
            "list type",
            Box::new(|c| {
                c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
                    ["l"] = json!({"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object", "properties": {"k": {"type": "string"}}}})
            }),
            vec![
                "spec.validation.openAPIV3Schema.properties[spec].properties[l].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map",
            ],
        ),
        (
            "unique items",
            Box::new(|c| {
                c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
                    ["l"] =
                    json!({"type": "array", "uniqueItems": true, "items": {"type": "string"}})
            }),
            vec![
                "spec.validation.openAPIV3Schema.properties[spec].properties[l].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            ],
        ),
        (
            "conversion webhook",
            Box::new(
                |c| c["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "http://x/convert"}, "conversionReviewVersions": ["v2"]}}),
            ),
            vec![
                r#"spec.conversion.conversionReviewVersions: Invalid value: ["v2"]: must include at least one of v1, v1beta1"#,
                r#"spec.conversion.webhookClientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]"#,
            ],
        ),
        (
            "protected group",
            Box::new(|c| {
                c["spec"]["group"] = json!("x.k8s.io");
                c["metadata"]["name"] = json!("foos.x.k8s.io");
            }),
            vec![
                r#"metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation "api-approved.kubernetes.io", see https://github.com/kubernetes/enhancements/pull/1111"#,
            ],
        ),
        (
            "kind equals listKind",
            Box::new(|c| c["spec"]["names"]["listKind"] = json!("Foo")),
            vec![
                r#"spec.names.listKind: Invalid value: "Foo": kind and listKind may not be the same"#,
            ],
        ),
        (
            "preserveUnknownFields",
            Box::new(|c| c["spec"]["preserveUnknownFields"] = json!(true)),
            vec![
                "spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
                "spec.preserveUnknownFields: Invalid value: true: must be false in order to use defaults in the schema",
            ],
        ),
    ];
    for (name, edit, want) in cases {
        assert_eq!(crd_errors(crd(), edit), sorted_str(&want), "{name}");
    }
}

#[test]
fn crd_per_version_paths_and_update() {
    // Different schemas per version are reported under each version.
    let mut c = crd();
    let mut v2 = c["spec"]["versions"][0].clone();
    v2["name"] = json!("v2");
    v2["storage"] = json!(false);
    v2["schema"]["openAPIV3Schema"]["properties"]["x"] = json!({});
    c["spec"]["versions"].as_array_mut().unwrap().push(v2);
    assert_eq!(
        crd_errors(c.clone(), |_| {}),
        sorted_str(&[
            "spec.versions[1].schema.openAPIV3Schema.properties[x].type: Required value: must not be empty for specified object fields"
        ])
    );
    // Updates: group and plural are immutable; a stored version must stay.
    let mut old = crd();
    super::default_crd(&mut old);
    let mut new = old.clone();
    new["spec"]["group"] = json!("other.com");
    new["metadata"]["name"] = json!("foos.other.com");
    new["status"]["storedVersions"] = json!(["v0", "v1"]);
    assert_eq!(
        sorted(super::validate_crd(&new, Some(&old))),
        sorted_str(&[
            r#"spec.group: Invalid value: "other.com": field is immutable"#,
            r#"status.storedVersions[0]: Invalid value: "v0": missing from spec.versions; v0 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v0 and removes v0 from status.storedVersions"#,
        ])
    );
}

#[test]
fn openapi_publishing() {
    let s = raw(json!({"type": "object", "properties": {
        "spec": {"type": "object", "required": ["n", "x"], "properties": {
            "n": {"type": "string", "nullable": true},
            "x": {"x-kubernetes-int-or-string": true},
            "l": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "o": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"a": {"type": "string"}}},
            "e": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}
        }, "oneOf": [{"required": ["n"]}]}
    }}));
    let meta3 = json!({"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}],
        "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"});
    let v3 = s.to_openapi_v3();
    assert_eq!(v3["properties"]["metadata"], meta3);
    assert_eq!(v3["properties"]["kind"]["type"], "string");
    assert_eq!(
        v3["properties"]["spec"]["oneOf"],
        json!([{"required": ["n"]}])
    );
    assert_eq!(
        v3["properties"]["spec"]["properties"]["n"],
        json!({"type": "string", "nullable": true})
    );
    assert_eq!(
        v3["properties"]["spec"]["properties"]["x"],
        json!({"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": true})
    );
    let e3 = &v3["properties"]["spec"]["properties"]["e"];
    assert_eq!(e3["required"], json!(["kind", "apiVersion"]));
    assert_eq!(e3["properties"]["metadata"], meta3);

    let v2 = s.to_openapi_v2();
    assert_eq!(
        v2["properties"]["metadata"]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    let spec2 = &v2["properties"]["spec"];
    assert_eq!(spec2.get("oneOf"), None);
    assert_eq!(spec2["required"], json!(["x"]));
    assert_eq!(spec2["properties"]["n"], json!({}));
    assert_eq!(
        spec2["properties"]["x"],
        json!({"x-kubernetes-int-or-string": true})
    );
    assert_eq!(
        spec2["properties"]["o"],
        json!({"x-kubernetes-preserve-unknown-fields": true})
    );
    // Preserve-unknown embedded resources get no type meta in v2.
    assert_eq!(
        spec2["properties"]["e"],
        json!({"x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true})
    );
    assert_eq!(
        spec2["properties"]["l"],
        json!({"type": "array", "items": {"type": "string"}, "minItems": 1})
    );

    let preserve = raw(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    assert_eq!(preserve.to_openapi_v2(), json!({"type": "object"}));
}

#[test]
fn cel_rules_ported() {
    let immutable = object_schema(
        json!({"field": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}),
    );
    assert_eq!(immutable.validate(&json!({"field": "y"})), Vec::new());
    assert_eq!(
        immutable.validate_update(&json!({"field": "x"}), &json!({"field": "x"})),
        Vec::new()
    );
    assert_eq!(
        sorted(immutable.validate_update(&json!({"field": "y"}), &json!({"field": "x"}))),
        sorted_str(&[r#"field: Invalid value: "y": failed rule: self == oldSelf"#])
    );

    let correlatable = object_schema(
        json!({"field": {"type": "array", "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["k1", "k2"],
        "items": {"type": "object", "properties": {"k1": {"type": "string"}, "k2": {"type": "string"},
            "v1": {"type": "number", "x-kubernetes-validations": [{"rule": "self >= oldSelf"}]}}}}}),
    );
    let old = json!({"field": [{"k1": "a", "k2": "b", "v1": 1.0}]});
    assert_eq!(
        correlatable.validate_update(&json!({"field": [{"k1": "a", "k2": "b", "v1": 1.2}]}), &old),
        Vec::new()
    );
    assert_eq!(
        sorted(
            correlatable
                .validate_update(&json!({"field": [{"k1": "a", "k2": "b", "v1": 0.9}]}), &old)
        ),
        sorted_str(&["field[0].v1: Invalid value: 0.9: failed rule: self >= oldSelf"])
    );

    let nested = object_schema(
        json!({"field": {"type": "array", "items": {"type": "object",
        "properties": {"x": {"type": "string", "x-kubernetes-validations": [{"rule": "self == 'x'"}]}}}}}),
    );
    assert_eq!(nested.validate(&json!({"field": [{"x": "x"}]})), Vec::new());
    assert_eq!(
        sorted(nested.validate(&json!({"field": [{"x": "y"}]}))),
        sorted_str(&[r#"field[0].x: Invalid value: "y": failed rule: self == 'x'"#])
    );

    let rich = raw(
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"min": {"type": "integer"}, "max": {"type": "integer"}, "max-count": {"type": "integer"}},
        "x-kubernetes-validations": [
            {"rule": "self.min <= self.max", "message": "min must not exceed max"},
            {"rule": "self.min <= self.max", "messageExpression": "'min ' + string(self.min) + ' > max ' + string(self.max)", "fieldPath": ".min"},
            {"rule": "!has(self.max__dash__count) || self.max__dash__count < 10", "reason": "FieldValueForbidden"},
            {"rule": "self.min >= 0", "reason": "FieldValueRequired", "message": "min must be set"}
        ]}},
        "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith('a')"}]}),
    );
    let obj = json!({"metadata": {"name": "bad", "labels": {"x": "y"}}, "spec": {"min": -3, "max": -5, "max-count": 20}});
    assert_eq!(
        sorted(rich.validate(&obj)),
        sorted_str(&[
            "<nil>: Invalid value: failed rule: self.metadata.name.startsWith('a')",
            "spec: Invalid value: min must not exceed max",
            "spec.min: Invalid value: min -3 > max -5",
            "spec: Forbidden: failed rule: !has(self.max__dash__count) || self.max__dash__count < 10",
            "spec: Required value: min must be set",
        ])
    );
}

#[test]
fn crd_cel_compilation() {
    let errs = crd_errors(crd(), |c| {
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["x-kubernetes-validations"] = json!([{"rule": "self.spec ==="}, {"rule": "true", "optionalOldSelf": true}, {"rule": ""}]);
    });
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].starts_with("spec.validation.openAPIV3Schema.x-kubernetes-validations[2].rule: Required value: rule is not specified"));
    let errs = crd_errors(crd(), |c| {
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["x-kubernetes-validations"] =
            json!([{"rule": "self.spec ==="}, {"rule": "true", "optionalOldSelf": true}]);
    });
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert!(errs[0].starts_with("spec.validation.openAPIV3Schema.x-kubernetes-validations[0].rule: Invalid value: {\"rule\":\"self.spec ===\"}: compilation failed: "), "{errs:?}");
    assert_eq!(
        errs[1],
        "spec.validation.openAPIV3Schema.x-kubernetes-validations[1].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule"
    );
}

#[test]
fn structural_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Structural>();
}

#[test]
fn pruning_nested_preserve_unknown_fields_ported() {
    let schema = node(
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {
            "alpha": {"type": "string"},
            "beta": {"type": "number"},
            "pruning": {"type": "object", "properties": {
                "preserving": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "pruning": {"type": "object"}
            }},
            "preserving": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {
                "preserving": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "preservingUnknownType": {"x-kubernetes-preserve-unknown-fields": true},
                "pruning": {"type": "object"}
            }},
            "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields": {"type": "object",
                "x-kubernetes-preserve-unknown-fields": true,
                "additionalProperties": {"type": "object", "properties": {"specified": {"type": "object"}}}},
            "preservingAdditionalPropertiesKeyPruneValues": {"type": "object",
                "additionalProperties": {"type": "object", "properties": {"specified": {"type": "object"}}}}
        }}),
    );
    let mut obj = json!({
        "unspecified": "bar", "alpha": "abc", "beta": 42.0,
        "unspecifiedObject": {"unspecified": "bar"},
        "pruning": {"unspecified": "bar", "unspecifiedObject": {"unspecified": "bar"}, "pruning": {"unspecified": "bar"},
            "apiVersion": "unknown", "preserving": {"unspecified": "bar"}},
        "preserving": {"unspecified": "bar", "unspecifiedObject": {"unspecified": "bar"}, "pruning": {"unspecified": "bar"},
            "preserving": {"unspecified": "bar"}, "preservingUnknownType": [{"foo": true}, {"bar": true}]},
        "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields": {"foo": {"specified": {"unspecified": "bar"}, "unspecified": "bar"}},
        "preservingAdditionalPropertiesKeyPruneValues": {"foo": {"specified": {"unspecified": "bar"}, "unspecified": "bar"}}
    });
    let pruned = super::prune::prune_value(&mut obj, &schema, false);
    assert_eq!(
        obj,
        json!({
            "unspecified": "bar", "alpha": "abc", "beta": 42.0,
            "unspecifiedObject": {"unspecified": "bar"},
            "pruning": {"pruning": {}, "preserving": {"unspecified": "bar"}},
            "preserving": {"unspecified": "bar", "unspecifiedObject": {"unspecified": "bar"}, "pruning": {},
                "preserving": {"unspecified": "bar"}, "preservingUnknownType": [{"foo": true}, {"bar": true}]},
            "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields": {"foo": {"specified": {}}},
            "preservingAdditionalPropertiesKeyPruneValues": {"foo": {"specified": {}}}
        })
    );
    assert_eq!(
        pruned,
        vec![
            "preserving.pruning.unspecified",
            "preservingAdditionalPropertiesKeyPruneValues.foo.specified.unspecified",
            "preservingAdditionalPropertiesKeyPruneValues.foo.unspecified",
            "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields.foo.specified.unspecified",
            "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields.foo.unspecified",
            "pruning.apiVersion",
            "pruning.pruning.unspecified",
            "pruning.unspecified",
            "pruning.unspecifiedObject",
        ]
    );

    // additionalProperties: false keeps nothing below it, and reports every pruned field.
    let schema = node(json!({"properties": {"a": {}, "c": {"additionalProperties": false}}}));
    let mut obj =
        json!({"a": 1, "b": 1, "c": {"a": 1, "b": 2, "c": {"a": 1, "apiVersion": "unknown"}}});
    let pruned = super::prune::prune_value(&mut obj, &schema, false);
    assert_eq!(obj, json!({"a": 1, "c": {"a": 1, "b": 2, "c": {}}}));
    assert_eq!(pruned, vec!["b", "c.c.a", "c.c.apiVersion"]);

    // Object arrays without a schema.
    let mut obj = json!([{"a": 1}, {"b": 1}, {"a": 1, "b": 2, "c": 3}]);
    let mut p = super::prune::Pruner::default();
    p.prune(&mut obj, None, "", false);
    assert_eq!(obj, json!([{}, {}, {}]));
    assert_eq!(p.unknown, vec!["[0].a", "[1].b", "[2].a", "[2].b", "[2].c"]);
}

#[test]
fn embedded_metadata_is_object_meta() {
    let s = object_schema(json!({
        "e": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}
    }));
    let obj = json!({"e": {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "Bad_NS", "labels": {"a": "b c"}}}});
    let errs = sorted(s.validate(&obj));
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert!(
        errs[0].starts_with(r#"e.metadata.labels: Invalid value: "b c": "#),
        "{errs:?}"
    );
    assert!(
        errs[1].starts_with(r#"e.metadata.namespace: Invalid value: "Bad_NS": "#),
        "{errs:?}"
    );
}

#[test]
fn cel_formats() {
    let s = object_schema(json!({
        "t": {"type": "string", "format": "date-time", "x-kubernetes-validations": [{"rule": "self > timestamp('2020-01-01T00:00:00Z')"}]},
        "d": {"type": "string", "format": "duration", "x-kubernetes-validations": [{"rule": "self < duration('1h')"}]}
    }));
    assert_eq!(
        s.validate(&json!({"t": "2021-01-01T00:00:00Z", "d": "30m"})),
        Vec::new()
    );
    assert_eq!(
        sorted(s.validate(&json!({"t": "2019-01-01T00:00:00Z", "d": "2h"}))),
        sorted_str(&[
            r#"d: Invalid value: "2h": failed rule: self < duration('1h')"#,
            r#"t: Invalid value: "2019-01-01T00:00:00Z": failed rule: self > timestamp('2020-01-01T00:00:00Z')"#,
        ])
    );
}

#[test]
fn crd_conversion_webhook() {
    let with = |cc: Value| {
        crd_errors(crd(), move |c| {
            c["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {"clientConfig": cc, "conversionReviewVersions": ["v1"]}});
        })
    };
    assert_eq!(
        with(json!({"url": "https://hook.example.com/convert"})),
        Vec::<String>::new()
    );
    assert_eq!(
        with(json!({"url": "https://u@h?q=1#f"})),
        sorted_str(&[
            r#"spec.conversion.webhookClientConfig.url: Invalid value: "f": fragments are not permitted in the URL"#,
            r#"spec.conversion.webhookClientConfig.url: Invalid value: "q=1": query parameters are not permitted in the URL"#,
            r#"spec.conversion.webhookClientConfig.url: Invalid value: "u": user information is not permitted in the URL"#,
        ])
    );
    let mut c = crd();
    c["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {"clientConfig": {"service": {"name": "s", "namespace": "n", "path": "/a//B"}}, "conversionReviewVersions": ["v1"]}});
    super::default_crd(&mut c);
    assert_eq!(
        c["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"],
        443
    );
    let errs = sorted(super::validate_crd(&c, None));
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert_eq!(
        errs[0],
        r#"spec.conversion.webhookClientConfig.service.path: Invalid value: "/a//B": segment[1] may not be empty"#
    );
    assert!(errs[1].starts_with(r#"spec.conversion.webhookClientConfig.service.path: Invalid value: "/a//B": segment[2]: a lowercase RFC 1123 subdomain"#));
}

#[test]
fn crd_old_self_under_uncorrelatable_lists() {
    let errs = crd_errors(crd(), |c| {
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            ["l"] = json!({
            "type": "array", "items": {"type": "object", "properties": {"a": {"type": "string",
                "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}});
    });
    assert_eq!(
        errs,
        sorted_str(&[
            r#"spec.validation.openAPIV3Schema.properties[spec].properties[l].items.properties[a].x-kubernetes-validations[0].rule: Invalid value: "self == oldSelf": oldSelf cannot be used on the uncorrelatable portion of the schema within spec.validation.openAPIV3Schema.properties[spec].properties[l]"#,
        ])
    );
}

/// Upstream's CRD validation tables match errors by path and type.
fn crd_matches(c: &Value) -> Vec<(String, &'static str)> {
    let mut v: Vec<(String, &'static str)> = super::validate_crd(c, None)
        .into_iter()
        .map(|e| (e.field.clone(), e.type_.reason()))
        .collect();
    v.sort();
    v
}

fn want(list: &[(&str, &'static str)]) -> Vec<(String, &'static str)> {
    let mut v: Vec<(String, &'static str)> =
        list.iter().map(|(p, t)| (p.to_string(), *t)).collect();
    v.sort();
    v
}

#[test]
fn crd_validation_tables_ported() {
    const INVALID: &str = "FieldValueInvalid";
    const REQUIRED: &str = "FieldValueRequired";
    const UNSUPPORTED: &str = "FieldValueNotSupported";
    // "missing values"
    assert_eq!(
        crd_matches(&json!({"metadata": {"name": "plural.group.com"}})),
        want(&[
            ("status.storedVersions", INVALID),
            ("metadata.name", INVALID),
            ("spec.versions", INVALID),
            ("spec.group", REQUIRED),
            ("spec.scope", REQUIRED),
            ("spec.names.plural", REQUIRED),
            ("spec.names.singular", REQUIRED),
            ("spec.names.kind", REQUIRED),
            ("spec.names.listKind", REQUIRED),
        ])
    );
    // "mismatched name"
    assert_eq!(
        crd_matches(&json!({"metadata": {"name": "plural.not.group.com"},
            "spec": {"group": "group.com", "names": {"plural": "plural"}}})),
        want(&[
            ("status.storedVersions", INVALID),
            ("metadata.name", INVALID),
            ("spec.versions", INVALID),
            ("spec.scope", REQUIRED),
            ("spec.names.singular", REQUIRED),
            ("spec.names.kind", REQUIRED),
            ("spec.names.listKind", REQUIRED),
        ])
    );
    // "bad names 01" (v1 has no spec.version)
    let bad = json!({"value": "value()*a"});
    let names = json!({"plural": "pl()*ural", "singular": bad["value"], "kind": bad["value"], "listKind": bad["value"]});
    assert_eq!(
        crd_matches(&json!({"metadata": {"name": "plural.group"},
            "spec": {"group": "group", "scope": "foo", "names": names},
            "status": {"acceptedNames": names}})),
        want(&[
            ("status.storedVersions", INVALID),
            ("metadata.name", INVALID),
            ("spec.group", INVALID),
            ("spec.scope", UNSUPPORTED),
            ("spec.names.plural", INVALID),
            ("spec.names.singular", INVALID),
            ("spec.names.kind", INVALID),
            ("spec.names.listKind", INVALID),
            ("spec.names.listKind", INVALID),
            ("status.acceptedNames.plural", INVALID),
            ("status.acceptedNames.singular", INVALID),
            ("status.acceptedNames.kind", INVALID),
            ("status.acceptedNames.listKind", INVALID),
            ("status.acceptedNames.listKind", INVALID),
            ("spec.versions", INVALID),
        ])
    );
}

#[test]
fn crd_invalid_defaults_ported() {
    let mut c = crd();
    c["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = json!({"type": "object", "properties": {
        "a": {"type": "object", "properties": {"foo": {"type": "string"}}, "default": {"foo": "abc", "bar": 42}},
        "b": {"type": "object", "properties": {"foo": {"type": "string"}}, "default": {"foo": "abc"}},
        "c": {"type": "object", "properties": {"foo": {"type": "string"}}, "default": {"foo": 42}},
        "d": {"type": "object", "properties": {"good": {"type": "string", "pattern": "a"}, "bad": {"type": "string", "pattern": "b"}},
            "default": {"good": "a", "bad": "a"}},
        "e": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {
            "preserveUnknownFields": {"type": "object", "default": {"foo": "abc", "bar": 42}},
            "nestedProperties": {"type": "object", "properties": {"foo": {"type": "string"}}, "default": {"foo": "abc", "bar": 42}}
        }},
        "embedded-fine": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"foo": {"type": "string"}},
            "default": {"foo": "abc", "apiVersion": "foo/v1", "kind": "v1", "metadata": {"name": "foo"}}},
        "embedded-preserve": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"foo": {"type": "string"}},
            "default": {"foo": "abc", "apiVersion": "foo/v1", "kind": "v1", "metadata": {"name": "foo"}, "bar": 42}},
        "embedded-preserve-unpruned-objectmeta": {"type": "object", "x-kubernetes-embedded-resource": true,
            "x-kubernetes-preserve-unknown-fields": true, "properties": {"foo": {"type": "string"}},
            "default": {"foo": "abc", "apiVersion": "foo/v1", "kind": "v1", "metadata": {"name": "foo", "unspecified": "bar"}, "bar": 42}}
    }});
    c["spec"]["versions"][0]["subresources"] = json!({});
    c["spec"]["versions"][0]["additionalPrinterColumns"] = json!([]);
    super::default_crd(&mut c);
    let p = "spec.validation.openAPIV3Schema";
    assert_eq!(
        crd_matches(&c),
        want(&[
            (&format!("{p}.properties[a].default"), "FieldValueInvalid"),
            (
                &format!("{p}.properties[c].default.foo"),
                "FieldValueTypeInvalid"
            ),
            (
                &format!("{p}.properties[d].default.bad"),
                "FieldValueInvalid"
            ),
            (
                &format!("{p}.properties[e].properties[preserveUnknownFields].default"),
                "FieldValueInvalid"
            ),
            (
                &format!("{p}.properties[e].properties[nestedProperties].default"),
                "FieldValueInvalid"
            ),
        ])
    );
}

#[test]
fn crd_metadata_defaults_ported() {
    let with_schema = |schema: Value| {
        let mut c = crd();
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = schema;
        c["spec"]["versions"][0]["subresources"] = json!({});
        c["spec"]["versions"][0]["additionalPrinterColumns"] = json!([]);
        super::default_crd(&mut c);
        sorted(super::validate_crd(&c, None))
    };
    assert_eq!(
        with_schema(
            json!({"type": "object", "properties": {"embedded": {"type": "object", "x-kubernetes-embedded-resource": true,
            "properties": {"metadata": {"type": "object", "properties": {"annotations": {"type": "object",
                "additionalProperties": {"type": "string", "default": "abc"}}}}}}}})
        ),
        sorted_str(&[
            "spec.validation.openAPIV3Schema.properties[embedded].properties[metadata].properties[annotations].additionalProperties.default: Forbidden: must not be set inside additionalProperties applying to object metadata"
        ])
    );
    assert_eq!(
        with_schema(
            json!({"type": "object", "properties": {"metadata": {"type": "object", "default": {"name": "foo"}}}})
        ),
        sorted_str(&[
            "spec.validation.openAPIV3Schema.properties[metadata].default: Forbidden: must not be set in top-level metadata"
        ])
    );
}

#[test]
fn cel_optional_old_self() {
    let s = object_schema(
        json!({"field": {"type": "string", "x-kubernetes-validations": [
            {"rule": "!oldSelf.hasValue() || self == oldSelf.value()", "optionalOldSelf": true, "message": "immutable once set"}
        ]}}),
    );
    assert_eq!(s.validate(&json!({"field": "a"})), Vec::new());
    assert_eq!(
        s.validate_update(&json!({"field": "a"}), &json!({"field": "a"})),
        Vec::new()
    );
    assert_eq!(
        sorted(s.validate_update(&json!({"field": "b"}), &json!({"field": "a"}))),
        sorted_str(&[r#"field: Invalid value: "b": immutable once set"#])
    );
}
