//! Converts a Swagger 2.0 JSON document into the gnostic protobuf [`Document`] (upstream
//! `kube-openapi` `ToProtoBinary`: JSON → gnostic model → protobuf bytes).
//!
//! Map-like fields become ordered `(name, value)` lists in the order of the JSON object
//! (`serde_json` keeps keys sorted). Unknown keys are dropped except `x-` vendor extensions, as
//! gnostic does.

use prost::Message;
use serde_json::{Map, Value};

use super::proto::{
    AdditionalPropertiesItem, Any, ApiKeySecurity, BasicAuthenticationSecurity, BodyParameter,
    Definitions, Document, Info, ItemsItem, JsonReference, NamedAny, NamedPathItem,
    NamedResponseValue, NamedSchema, NamedSecurityDefinitionsItem, NamedStringArray,
    NonBodyParameter, Operation, Parameter, ParametersItem, PathItem, Paths, PrimitivesItems,
    Properties, QueryParameterSubSchema, Response, ResponseValue, Responses, Schema, SchemaItem,
    SecurityDefinitions, SecurityDefinitionsItem, SecurityRequirement, SimpleParameterSubSchema,
    StringArray, TypeItem, additional_properties_item, non_body_parameter, parameter,
    parameters_item, response_value, schema_item, security_definitions_item,
};

/// Encodes a Swagger 2.0 JSON document as gnostic `openapi.v2.Document` protobuf bytes.
pub fn encode_v2(doc: &Value) -> Vec<u8> {
    document(doc).encode_to_vec()
}

/// The gnostic model of a Swagger 2.0 JSON document.
pub fn document(doc: &Value) -> Document {
    Document {
        swagger: string(doc, "swagger"),
        info: doc.get("info").map(info),
        host: string(doc, "host"),
        base_path: string(doc, "basePath"),
        schemes: strings(doc, "schemes"),
        consumes: strings(doc, "consumes"),
        produces: strings(doc, "produces"),
        paths: doc.get("paths").and_then(Value::as_object).map(paths),
        definitions: doc
            .get("definitions")
            .and_then(Value::as_object)
            .map(|defs| Definitions {
                additional_properties: named_schemas(defs),
            }),
        security: doc
            .get("security")
            .and_then(Value::as_array)
            .map(|reqs| reqs.iter().map(security_requirement).collect())
            .unwrap_or_default(),
        security_definitions: doc
            .get("securityDefinitions")
            .and_then(Value::as_object)
            .map(security_definitions),
        vendor_extension: extensions(doc),
    }
}

fn string(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn boolean(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or_default()
}

fn float(v: &Value, key: &str) -> f64 {
    v.get(key).and_then(Value::as_f64).unwrap_or_default()
}

fn int(v: &Value, key: &str) -> i64 {
    v.get(key).and_then(Value::as_i64).unwrap_or_default()
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    match v.get(key) {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        Some(Value::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    }
}

/// A free-form value; JSON text is valid flow-style YAML.
fn any(v: &Value) -> Any {
    Any {
        yaml: v.to_string(),
    }
}

fn any_list(v: &Value, key: &str) -> Vec<Any> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|items| items.iter().map(any).collect())
        .unwrap_or_default()
}

fn extensions(v: &Value) -> Vec<NamedAny> {
    v.as_object()
        .map(|obj| {
            obj.iter()
                .filter(|(k, _)| k.starts_with("x-"))
                .map(|(k, v)| NamedAny {
                    name: k.clone(),
                    value: Some(any(v)),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn info(v: &Value) -> Info {
    Info {
        title: string(v, "title"),
        version: string(v, "version"),
        description: string(v, "description"),
        vendor_extension: extensions(v),
    }
}

fn named_schemas(obj: &Map<String, Value>) -> Vec<NamedSchema> {
    obj.iter()
        .map(|(name, v)| NamedSchema {
            name: name.clone(),
            value: Some(schema(v)),
        })
        .collect()
}

/// One schema object.
pub fn schema(v: &Value) -> Schema {
    let additional_properties = match v.get("additionalProperties") {
        Some(Value::Bool(b)) => Some(Box::new(AdditionalPropertiesItem {
            oneof: Some(additional_properties_item::Oneof::Boolean(*b)),
        })),
        Some(s @ Value::Object(_)) => Some(Box::new(AdditionalPropertiesItem {
            oneof: Some(additional_properties_item::Oneof::Schema(Box::new(schema(
                s,
            )))),
        })),
        _ => None,
    };
    let items = match v.get("items") {
        Some(Value::Array(list)) => Some(ItemsItem {
            schema: list.iter().map(schema).collect(),
        }),
        Some(s @ Value::Object(_)) => Some(ItemsItem {
            schema: vec![schema(s)],
        }),
        _ => None,
    };
    let types = strings(v, "type");
    Schema {
        r#ref: string(v, "$ref"),
        format: string(v, "format"),
        title: string(v, "title"),
        description: string(v, "description"),
        default: v.get("default").map(any),
        multiple_of: float(v, "multipleOf"),
        maximum: float(v, "maximum"),
        exclusive_maximum: boolean(v, "exclusiveMaximum"),
        minimum: float(v, "minimum"),
        exclusive_minimum: boolean(v, "exclusiveMinimum"),
        max_length: int(v, "maxLength"),
        min_length: int(v, "minLength"),
        pattern: string(v, "pattern"),
        max_items: int(v, "maxItems"),
        min_items: int(v, "minItems"),
        unique_items: boolean(v, "uniqueItems"),
        max_properties: int(v, "maxProperties"),
        min_properties: int(v, "minProperties"),
        required: strings(v, "required"),
        r#enum: any_list(v, "enum"),
        additional_properties,
        r#type: (!types.is_empty()).then_some(TypeItem { value: types }),
        items,
        all_of: v
            .get("allOf")
            .and_then(Value::as_array)
            .map(|list| list.iter().map(schema).collect())
            .unwrap_or_default(),
        properties: v
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| Properties {
                additional_properties: named_schemas(props),
            }),
        discriminator: string(v, "discriminator"),
        read_only: boolean(v, "readOnly"),
        example: v.get("example").map(any),
        vendor_extension: extensions(v),
    }
}

fn paths(obj: &Map<String, Value>) -> Paths {
    Paths {
        vendor_extension: obj
            .iter()
            .filter(|(k, _)| k.starts_with("x-"))
            .map(|(k, v)| NamedAny {
                name: k.clone(),
                value: Some(any(v)),
            })
            .collect(),
        path: obj
            .iter()
            .filter(|(k, _)| k.starts_with('/'))
            .map(|(name, v)| NamedPathItem {
                name: name.clone(),
                value: Some(path_item(v)),
            })
            .collect(),
    }
}

fn path_item(v: &Value) -> PathItem {
    let op = |method: &str| v.get(method).map(operation);
    PathItem {
        r#ref: string(v, "$ref"),
        get: op("get"),
        put: op("put"),
        post: op("post"),
        delete: op("delete"),
        options: op("options"),
        head: op("head"),
        patch: op("patch"),
        parameters: parameters(v),
        vendor_extension: extensions(v),
    }
}

fn operation(v: &Value) -> Operation {
    Operation {
        tags: strings(v, "tags"),
        summary: string(v, "summary"),
        description: string(v, "description"),
        operation_id: string(v, "operationId"),
        produces: strings(v, "produces"),
        consumes: strings(v, "consumes"),
        parameters: parameters(v),
        responses: v.get("responses").and_then(Value::as_object).map(responses),
        schemes: strings(v, "schemes"),
        deprecated: boolean(v, "deprecated"),
        vendor_extension: extensions(v),
    }
}

fn parameters(v: &Value) -> Vec<ParametersItem> {
    v.get("parameters")
        .and_then(Value::as_array)
        .map(|list| list.iter().map(parameters_item).collect())
        .unwrap_or_default()
}

fn parameters_item(v: &Value) -> ParametersItem {
    if let Some(reference) = v.get("$ref").and_then(Value::as_str) {
        return ParametersItem {
            oneof: Some(parameters_item::Oneof::JsonReference(JsonReference {
                r#ref: reference.to_owned(),
                description: string(v, "description"),
            })),
        };
    }
    let location = string(v, "in");
    let parameter = if location == "body" {
        parameter::Oneof::BodyParameter(BodyParameter {
            description: string(v, "description"),
            name: string(v, "name"),
            r#in: location,
            required: boolean(v, "required"),
            schema: v.get("schema").map(schema),
            vendor_extension: extensions(v),
        })
    } else {
        let sub = match location.as_str() {
            "query" => non_body_parameter::Oneof::QueryParameterSubSchema(query_parameter(v)),
            "formData" => non_body_parameter::Oneof::FormDataParameterSubSchema(query_parameter(v)),
            "header" => non_body_parameter::Oneof::HeaderParameterSubSchema(simple_parameter(v)),
            _ => non_body_parameter::Oneof::PathParameterSubSchema(simple_parameter(v)),
        };
        parameter::Oneof::NonBodyParameter(NonBodyParameter { oneof: Some(sub) })
    };
    ParametersItem {
        oneof: Some(parameters_item::Oneof::Parameter(Parameter {
            oneof: Some(parameter),
        })),
    }
}

fn primitives_items(v: &Value) -> PrimitivesItems {
    PrimitivesItems {
        r#type: string(v, "type"),
        format: string(v, "format"),
        items: v.get("items").map(|i| Box::new(primitives_items(i))),
        collection_format: string(v, "collectionFormat"),
    }
}

fn simple_parameter(v: &Value) -> SimpleParameterSubSchema {
    SimpleParameterSubSchema {
        required: boolean(v, "required"),
        r#in: string(v, "in"),
        description: string(v, "description"),
        name: string(v, "name"),
        r#type: string(v, "type"),
        format: string(v, "format"),
        items: v.get("items").map(primitives_items),
        collection_format: string(v, "collectionFormat"),
        default: v.get("default").map(any),
        unique_items: boolean(v, "uniqueItems"),
        r#enum: any_list(v, "enum"),
        vendor_extension: extensions(v),
    }
}

fn query_parameter(v: &Value) -> QueryParameterSubSchema {
    QueryParameterSubSchema {
        required: boolean(v, "required"),
        r#in: string(v, "in"),
        description: string(v, "description"),
        name: string(v, "name"),
        allow_empty_value: boolean(v, "allowEmptyValue"),
        r#type: string(v, "type"),
        format: string(v, "format"),
        items: v.get("items").map(primitives_items),
        collection_format: string(v, "collectionFormat"),
        default: v.get("default").map(any),
        unique_items: boolean(v, "uniqueItems"),
        r#enum: any_list(v, "enum"),
        vendor_extension: extensions(v),
    }
}

fn responses(obj: &Map<String, Value>) -> Responses {
    Responses {
        response_code: obj
            .iter()
            .filter(|(k, _)| !k.starts_with("x-"))
            .map(|(code, v)| NamedResponseValue {
                name: code.clone(),
                value: Some(response_value(v)),
            })
            .collect(),
        vendor_extension: obj
            .iter()
            .filter(|(k, _)| k.starts_with("x-"))
            .map(|(k, v)| NamedAny {
                name: k.clone(),
                value: Some(any(v)),
            })
            .collect(),
    }
}

fn response_value(v: &Value) -> ResponseValue {
    let oneof = match v.get("$ref").and_then(Value::as_str) {
        Some(reference) => response_value::Oneof::JsonReference(JsonReference {
            r#ref: reference.to_owned(),
            description: string(v, "description"),
        }),
        None => response_value::Oneof::Response(Response {
            description: string(v, "description"),
            schema: v.get("schema").map(|s| SchemaItem {
                oneof: Some(schema_item::Oneof::Schema(schema(s))),
            }),
            vendor_extension: extensions(v),
        }),
    };
    ResponseValue { oneof: Some(oneof) }
}

fn security_definitions(obj: &Map<String, Value>) -> SecurityDefinitions {
    SecurityDefinitions {
        additional_properties: obj
            .iter()
            .filter_map(|(name, v)| {
                let oneof = match v.get("type").and_then(Value::as_str) {
                    Some("apiKey") => {
                        security_definitions_item::Oneof::ApiKeySecurity(ApiKeySecurity {
                            r#type: "apiKey".to_owned(),
                            name: string(v, "name"),
                            r#in: string(v, "in"),
                            description: string(v, "description"),
                        })
                    }
                    Some("basic") => security_definitions_item::Oneof::BasicAuthenticationSecurity(
                        BasicAuthenticationSecurity {
                            r#type: "basic".to_owned(),
                            description: string(v, "description"),
                        },
                    ),
                    // OAuth2 flows are never published by Kubernetes.
                    _ => return None,
                };
                Some(NamedSecurityDefinitionsItem {
                    name: name.clone(),
                    value: Some(SecurityDefinitionsItem { oneof: Some(oneof) }),
                })
            })
            .collect(),
    }
}

fn security_requirement(v: &Value) -> SecurityRequirement {
    SecurityRequirement {
        additional_properties: v
            .as_object()
            .map(|obj| {
                obj.iter()
                    .map(|(name, scopes)| NamedStringArray {
                        name: name.clone(),
                        value: Some(StringArray {
                            value: scopes
                                .as_array()
                                .map(|list| {
                                    list.iter()
                                        .filter_map(Value::as_str)
                                        .map(str::to_owned)
                                        .collect()
                                })
                                .unwrap_or_default(),
                        }),
                    })
                    .collect()
            })
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schema_fields_and_extensions_round_trip_through_protobuf() {
        let doc = json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": "v1.35.0"},
            "paths": {
                "/api/v1/namespaces/{namespace}/configmaps/{name}": {
                    "parameters": [{"$ref": "#/parameters/name-x"}],
                    "patch": {
                        "operationId": "patchCoreV1NamespacedConfigMap",
                        "consumes": ["application/strategic-merge-patch+json"],
                        "parameters": [
                            {"name": "body", "in": "body", "required": true,
                             "schema": {"type": "object"}},
                            {"name": "fieldValidation", "in": "query", "type": "string",
                             "uniqueItems": true}
                        ],
                        "responses": {"200": {"description": "OK",
                            "schema": {"$ref": "#/definitions/io.k8s.api.core.v1.ConfigMap"}}},
                        "x-kubernetes-action": "patch"
                    }
                }
            },
            "definitions": {
                "io.k8s.api.core.v1.ConfigMap": {
                    "type": "object",
                    "properties": {
                        "data": {"type": "object", "additionalProperties": {"type": "string"}},
                        "list": {"type": "array", "items": {"type": "string"},
                                 "x-kubernetes-patch-strategy": "merge"}
                    },
                    "x-kubernetes-group-version-kind":
                        [{"group": "", "kind": "ConfigMap", "version": "v1"}]
                }
            }
        });
        let bytes = encode_v2(&doc);
        let decoded = Document::decode(bytes.as_slice()).unwrap();
        assert_eq!(decoded, document(&doc));
        assert_eq!(decoded.swagger, "2.0");
        let defs = decoded.definitions.unwrap().additional_properties;
        assert_eq!(defs[0].name, "io.k8s.api.core.v1.ConfigMap");
        let cm = defs[0].value.as_ref().unwrap();
        assert_eq!(cm.r#type.as_ref().unwrap().value, vec!["object"]);
        assert_eq!(
            cm.vendor_extension[0].value.as_ref().unwrap().yaml,
            r#"[{"group":"","kind":"ConfigMap","version":"v1"}]"#
        );
        let props = &cm.properties.as_ref().unwrap().additional_properties;
        assert_eq!(props[1].name, "list");
        let list = props[1].value.as_ref().unwrap();
        assert_eq!(
            list.items.as_ref().unwrap().schema[0]
                .r#type
                .as_ref()
                .unwrap()
                .value,
            ["string"]
        );
        assert_eq!(list.vendor_extension[0].name, "x-kubernetes-patch-strategy");
        let path = &decoded.paths.unwrap().path[0];
        let patch = path.value.as_ref().unwrap().patch.as_ref().unwrap();
        assert_eq!(patch.operation_id, "patchCoreV1NamespacedConfigMap");
        assert_eq!(patch.parameters.len(), 2);
        assert!(matches!(
            path.value.as_ref().unwrap().parameters[0].oneof,
            Some(parameters_item::Oneof::JsonReference(_))
        ));
    }

    #[test]
    fn known_wire_bytes_for_a_tiny_document() {
        // swagger (1) = "2.0", info (2) = {title (1) = "t"}.
        let bytes = encode_v2(&json!({"swagger": "2.0", "info": {"title": "t"}}));
        assert_eq!(bytes, [0x0a, 3, b'2', b'.', b'0', 0x12, 3, 0x0a, 1, b't']);
    }
}
