//! The gnostic `openapi.v2` protobuf model (`openapiv2/OpenAPIv2.proto`), reduced to the messages
//! a Kubernetes Swagger 2.0 document uses, written as prost messages by hand so the build needs no
//! `protoc`. Field numbers are gnostic's; `/openapi/v2` serves `Document` in this encoding when a
//! client asks for `application/com.github.proto-openapi.spec.v2.v1.0+protobuf` (kubectl 1.20
//! only reads this form).
//!
//! Values gnostic keeps as free-form YAML (`default`, `example`, `enum` items and every `x-`
//! vendor extension) are carried in [`Any::yaml`]. We write them as JSON text, which every YAML
//! parser reads as flow-style YAML.

// The oneofs mirror gnostic's shapes; a document is built once per update, so variant sizes
// do not matter.
#![allow(clippy::large_enum_variant)]

/// A free-form value (`default`, `example`, enum items, vendor extension values).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Any {
    /// The value as YAML text.
    #[prost(string, tag = "2")]
    pub yaml: String,
}

/// A `(name, value)` pair of a map of free-form values (vendor extensions).
#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedAny {
    /// The map key.
    #[prost(string, tag = "1")]
    pub name: String,
    /// The value.
    #[prost(message, optional, tag = "2")]
    pub value: Option<Any>,
}

/// The whole Swagger 2.0 document.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Document {
    /// `swagger` (always `2.0`).
    #[prost(string, tag = "1")]
    pub swagger: String,
    /// `info`.
    #[prost(message, optional, tag = "2")]
    pub info: Option<Info>,
    /// `host`.
    #[prost(string, tag = "3")]
    pub host: String,
    /// `basePath`.
    #[prost(string, tag = "4")]
    pub base_path: String,
    /// `schemes`.
    #[prost(string, repeated, tag = "5")]
    pub schemes: Vec<String>,
    /// `consumes`.
    #[prost(string, repeated, tag = "6")]
    pub consumes: Vec<String>,
    /// `produces`.
    #[prost(string, repeated, tag = "7")]
    pub produces: Vec<String>,
    /// `paths`.
    #[prost(message, optional, tag = "8")]
    pub paths: Option<Paths>,
    /// `definitions`.
    #[prost(message, optional, tag = "9")]
    pub definitions: Option<Definitions>,
    /// `security`.
    #[prost(message, repeated, tag = "12")]
    pub security: Vec<SecurityRequirement>,
    /// `securityDefinitions`.
    #[prost(message, optional, tag = "13")]
    pub security_definitions: Option<SecurityDefinitions>,
    /// `x-` extensions.
    #[prost(message, repeated, tag = "16")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `info`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Info {
    /// `title`.
    #[prost(string, tag = "1")]
    pub title: String,
    /// `version`.
    #[prost(string, tag = "2")]
    pub version: String,
    /// `description`.
    #[prost(string, tag = "3")]
    pub description: String,
    /// `x-` extensions.
    #[prost(message, repeated, tag = "7")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `definitions`: named schemas.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Definitions {
    /// The schemas in document order.
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSchema>,
}

/// A `(name, schema)` pair.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedSchema {
    /// The map key.
    #[prost(string, tag = "1")]
    pub name: String,
    /// The schema.
    #[prost(message, optional, tag = "2")]
    pub value: Option<Schema>,
}

/// `properties` of a schema.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Properties {
    /// The properties in document order.
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSchema>,
}

/// `type` (a string or a list of strings).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TypeItem {
    /// The types.
    #[prost(string, repeated, tag = "1")]
    pub value: Vec<String>,
}

/// `items` (one schema or a list of schemas).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ItemsItem {
    /// The schemas.
    #[prost(message, repeated, tag = "1")]
    pub schema: Vec<Schema>,
}

/// `additionalProperties`: a schema or a boolean.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AdditionalPropertiesItem {
    /// Which form.
    #[prost(oneof = "additional_properties_item::Oneof", tags = "1, 2")]
    pub oneof: Option<additional_properties_item::Oneof>,
}

/// The forms of [`AdditionalPropertiesItem`].
pub mod additional_properties_item {
    /// A schema or a boolean.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        /// A schema.
        #[prost(message, tag = "1")]
        Schema(Box<super::Schema>),
        /// `true` or `false`.
        #[prost(bool, tag = "2")]
        Boolean(bool),
    }
}

/// A Swagger 2.0 schema object.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Schema {
    /// `$ref`.
    #[prost(string, tag = "1")]
    pub r#ref: String,
    /// `format`.
    #[prost(string, tag = "2")]
    pub format: String,
    /// `title`.
    #[prost(string, tag = "3")]
    pub title: String,
    /// `description`.
    #[prost(string, tag = "4")]
    pub description: String,
    /// `default`.
    #[prost(message, optional, tag = "5")]
    pub default: Option<Any>,
    /// `multipleOf`.
    #[prost(double, tag = "6")]
    pub multiple_of: f64,
    /// `maximum`.
    #[prost(double, tag = "7")]
    pub maximum: f64,
    /// `exclusiveMaximum`.
    #[prost(bool, tag = "8")]
    pub exclusive_maximum: bool,
    /// `minimum`.
    #[prost(double, tag = "9")]
    pub minimum: f64,
    /// `exclusiveMinimum`.
    #[prost(bool, tag = "10")]
    pub exclusive_minimum: bool,
    /// `maxLength`.
    #[prost(int64, tag = "11")]
    pub max_length: i64,
    /// `minLength`.
    #[prost(int64, tag = "12")]
    pub min_length: i64,
    /// `pattern`.
    #[prost(string, tag = "13")]
    pub pattern: String,
    /// `maxItems`.
    #[prost(int64, tag = "14")]
    pub max_items: i64,
    /// `minItems`.
    #[prost(int64, tag = "15")]
    pub min_items: i64,
    /// `uniqueItems`.
    #[prost(bool, tag = "16")]
    pub unique_items: bool,
    /// `maxProperties`.
    #[prost(int64, tag = "17")]
    pub max_properties: i64,
    /// `minProperties`.
    #[prost(int64, tag = "18")]
    pub min_properties: i64,
    /// `required`.
    #[prost(string, repeated, tag = "19")]
    pub required: Vec<String>,
    /// `enum`.
    #[prost(message, repeated, tag = "20")]
    pub r#enum: Vec<Any>,
    /// `additionalProperties`.
    #[prost(message, optional, boxed, tag = "21")]
    pub additional_properties: Option<Box<AdditionalPropertiesItem>>,
    /// `type`.
    #[prost(message, optional, tag = "22")]
    pub r#type: Option<TypeItem>,
    /// `items`.
    #[prost(message, optional, tag = "23")]
    pub items: Option<ItemsItem>,
    /// `allOf`.
    #[prost(message, repeated, tag = "24")]
    pub all_of: Vec<Schema>,
    /// `properties`.
    #[prost(message, optional, tag = "25")]
    pub properties: Option<Properties>,
    /// `discriminator`.
    #[prost(string, tag = "26")]
    pub discriminator: String,
    /// `readOnly`.
    #[prost(bool, tag = "27")]
    pub read_only: bool,
    /// `example`.
    #[prost(message, optional, tag = "30")]
    pub example: Option<Any>,
    /// `x-` extensions.
    #[prost(message, repeated, tag = "31")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `paths`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Paths {
    /// `x-` extensions.
    #[prost(message, repeated, tag = "1")]
    pub vendor_extension: Vec<NamedAny>,
    /// The path items in document order.
    #[prost(message, repeated, tag = "2")]
    pub path: Vec<NamedPathItem>,
}

/// A `(path, item)` pair.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedPathItem {
    /// The path.
    #[prost(string, tag = "1")]
    pub name: String,
    /// The item.
    #[prost(message, optional, tag = "2")]
    pub value: Option<PathItem>,
}

/// The operations on one path.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PathItem {
    /// `$ref`.
    #[prost(string, tag = "1")]
    pub r#ref: String,
    /// `get`.
    #[prost(message, optional, tag = "2")]
    pub get: Option<Operation>,
    /// `put`.
    #[prost(message, optional, tag = "3")]
    pub put: Option<Operation>,
    /// `post`.
    #[prost(message, optional, tag = "4")]
    pub post: Option<Operation>,
    /// `delete`.
    #[prost(message, optional, tag = "5")]
    pub delete: Option<Operation>,
    /// `options`.
    #[prost(message, optional, tag = "6")]
    pub options: Option<Operation>,
    /// `head`.
    #[prost(message, optional, tag = "7")]
    pub head: Option<Operation>,
    /// `patch`.
    #[prost(message, optional, tag = "8")]
    pub patch: Option<Operation>,
    /// Parameters shared by the operations.
    #[prost(message, repeated, tag = "9")]
    pub parameters: Vec<ParametersItem>,
    /// `x-` extensions.
    #[prost(message, repeated, tag = "10")]
    pub vendor_extension: Vec<NamedAny>,
}

/// One operation.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Operation {
    /// `tags`.
    #[prost(string, repeated, tag = "1")]
    pub tags: Vec<String>,
    /// `summary`.
    #[prost(string, tag = "2")]
    pub summary: String,
    /// `description`.
    #[prost(string, tag = "3")]
    pub description: String,
    /// `operationId`.
    #[prost(string, tag = "5")]
    pub operation_id: String,
    /// `produces`.
    #[prost(string, repeated, tag = "6")]
    pub produces: Vec<String>,
    /// `consumes`.
    #[prost(string, repeated, tag = "7")]
    pub consumes: Vec<String>,
    /// `parameters`.
    #[prost(message, repeated, tag = "8")]
    pub parameters: Vec<ParametersItem>,
    /// `responses`.
    #[prost(message, optional, tag = "9")]
    pub responses: Option<Responses>,
    /// `schemes`.
    #[prost(string, repeated, tag = "10")]
    pub schemes: Vec<String>,
    /// `deprecated`.
    #[prost(bool, tag = "11")]
    pub deprecated: bool,
    /// `x-` extensions.
    #[prost(message, repeated, tag = "13")]
    pub vendor_extension: Vec<NamedAny>,
}

/// A parameter or a reference to one.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ParametersItem {
    /// Which form.
    #[prost(oneof = "parameters_item::Oneof", tags = "1, 2")]
    pub oneof: Option<parameters_item::Oneof>,
}

/// The forms of [`ParametersItem`].
pub mod parameters_item {
    /// A parameter or a reference.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        /// An inline parameter.
        #[prost(message, tag = "1")]
        Parameter(super::Parameter),
        /// `{"$ref": …}`.
        #[prost(message, tag = "2")]
        JsonReference(super::JsonReference),
    }
}

/// `{"$ref": …}`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct JsonReference {
    /// `$ref`.
    #[prost(string, tag = "1")]
    pub r#ref: String,
    /// `description`.
    #[prost(string, tag = "2")]
    pub description: String,
}

/// A body or non-body parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Parameter {
    /// Which form.
    #[prost(oneof = "parameter::Oneof", tags = "1, 2")]
    pub oneof: Option<parameter::Oneof>,
}

/// The forms of [`Parameter`].
pub mod parameter {
    /// Body or not.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        /// `in: body`.
        #[prost(message, tag = "1")]
        BodyParameter(super::BodyParameter),
        /// `in: query|path|header|formData`.
        #[prost(message, tag = "2")]
        NonBodyParameter(super::NonBodyParameter),
    }
}

/// `in: body`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BodyParameter {
    /// `description`.
    #[prost(string, tag = "1")]
    pub description: String,
    /// `name`.
    #[prost(string, tag = "2")]
    pub name: String,
    /// `in`.
    #[prost(string, tag = "3")]
    pub r#in: String,
    /// `required`.
    #[prost(bool, tag = "4")]
    pub required: bool,
    /// `schema`.
    #[prost(message, optional, tag = "5")]
    pub schema: Option<Schema>,
    /// `x-` extensions.
    #[prost(message, repeated, tag = "6")]
    pub vendor_extension: Vec<NamedAny>,
}

/// A non-body parameter, by location.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NonBodyParameter {
    /// Which location.
    #[prost(oneof = "non_body_parameter::Oneof", tags = "1, 2, 3, 4")]
    pub oneof: Option<non_body_parameter::Oneof>,
}

/// The forms of [`NonBodyParameter`].
pub mod non_body_parameter {
    /// The parameter's location.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        /// `in: header`.
        #[prost(message, tag = "1")]
        HeaderParameterSubSchema(super::SimpleParameterSubSchema),
        /// `in: formData`.
        #[prost(message, tag = "2")]
        FormDataParameterSubSchema(super::QueryParameterSubSchema),
        /// `in: query`.
        #[prost(message, tag = "3")]
        QueryParameterSubSchema(super::QueryParameterSubSchema),
        /// `in: path`.
        #[prost(message, tag = "4")]
        PathParameterSubSchema(super::SimpleParameterSubSchema),
    }
}

/// gnostic's `HeaderParameterSubSchema` and `PathParameterSubSchema` (same field numbers).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SimpleParameterSubSchema {
    /// `required`.
    #[prost(bool, tag = "1")]
    pub required: bool,
    /// `in`.
    #[prost(string, tag = "2")]
    pub r#in: String,
    /// `description`.
    #[prost(string, tag = "3")]
    pub description: String,
    /// `name`.
    #[prost(string, tag = "4")]
    pub name: String,
    /// `type`.
    #[prost(string, tag = "5")]
    pub r#type: String,
    /// `format`.
    #[prost(string, tag = "6")]
    pub format: String,
    /// `items`.
    #[prost(message, optional, tag = "7")]
    pub items: Option<PrimitivesItems>,
    /// `collectionFormat`.
    #[prost(string, tag = "8")]
    pub collection_format: String,
    /// `default`.
    #[prost(message, optional, tag = "9")]
    pub default: Option<Any>,
    /// `uniqueItems`.
    #[prost(bool, tag = "19")]
    pub unique_items: bool,
    /// `enum`.
    #[prost(message, repeated, tag = "20")]
    pub r#enum: Vec<Any>,
    /// `x-` extensions.
    #[prost(message, repeated, tag = "22")]
    pub vendor_extension: Vec<NamedAny>,
}

/// gnostic's `QueryParameterSubSchema` and `FormDataParameterSubSchema` (same field numbers).
#[derive(Clone, PartialEq, prost::Message)]
pub struct QueryParameterSubSchema {
    /// `required`.
    #[prost(bool, tag = "1")]
    pub required: bool,
    /// `in`.
    #[prost(string, tag = "2")]
    pub r#in: String,
    /// `description`.
    #[prost(string, tag = "3")]
    pub description: String,
    /// `name`.
    #[prost(string, tag = "4")]
    pub name: String,
    /// `allowEmptyValue`.
    #[prost(bool, tag = "5")]
    pub allow_empty_value: bool,
    /// `type`.
    #[prost(string, tag = "6")]
    pub r#type: String,
    /// `format`.
    #[prost(string, tag = "7")]
    pub format: String,
    /// `items`.
    #[prost(message, optional, tag = "8")]
    pub items: Option<PrimitivesItems>,
    /// `collectionFormat`.
    #[prost(string, tag = "9")]
    pub collection_format: String,
    /// `default`.
    #[prost(message, optional, tag = "10")]
    pub default: Option<Any>,
    /// `uniqueItems`.
    #[prost(bool, tag = "20")]
    pub unique_items: bool,
    /// `enum`.
    #[prost(message, repeated, tag = "21")]
    pub r#enum: Vec<Any>,
    /// `x-` extensions.
    #[prost(message, repeated, tag = "23")]
    pub vendor_extension: Vec<NamedAny>,
}

/// The item type of an array parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PrimitivesItems {
    /// `type`.
    #[prost(string, tag = "1")]
    pub r#type: String,
    /// `format`.
    #[prost(string, tag = "2")]
    pub format: String,
    /// `items`.
    #[prost(message, optional, boxed, tag = "3")]
    pub items: Option<Box<PrimitivesItems>>,
    /// `collectionFormat`.
    #[prost(string, tag = "4")]
    pub collection_format: String,
}

/// `responses`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Responses {
    /// The responses by status code, in document order.
    #[prost(message, repeated, tag = "1")]
    pub response_code: Vec<NamedResponseValue>,
    /// `x-` extensions.
    #[prost(message, repeated, tag = "2")]
    pub vendor_extension: Vec<NamedAny>,
}

/// A `(code, response)` pair.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedResponseValue {
    /// The status code or `default`.
    #[prost(string, tag = "1")]
    pub name: String,
    /// The response.
    #[prost(message, optional, tag = "2")]
    pub value: Option<ResponseValue>,
}

/// A response or a reference to one.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResponseValue {
    /// Which form.
    #[prost(oneof = "response_value::Oneof", tags = "1, 2")]
    pub oneof: Option<response_value::Oneof>,
}

/// The forms of [`ResponseValue`].
pub mod response_value {
    /// A response or a reference.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        /// An inline response.
        #[prost(message, tag = "1")]
        Response(super::Response),
        /// `{"$ref": …}`.
        #[prost(message, tag = "2")]
        JsonReference(super::JsonReference),
    }
}

/// One response.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Response {
    /// `description`.
    #[prost(string, tag = "1")]
    pub description: String,
    /// `schema`.
    #[prost(message, optional, tag = "2")]
    pub schema: Option<SchemaItem>,
    /// `x-` extensions.
    #[prost(message, repeated, tag = "5")]
    pub vendor_extension: Vec<NamedAny>,
}

/// A response schema.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SchemaItem {
    /// Which form (only schemas are produced here).
    #[prost(oneof = "schema_item::Oneof", tags = "1")]
    pub oneof: Option<schema_item::Oneof>,
}

/// The forms of [`SchemaItem`].
pub mod schema_item {
    /// A schema (gnostic also has a file schema, which Kubernetes never uses).
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        /// A schema.
        #[prost(message, tag = "1")]
        Schema(super::Schema),
    }
}

/// `securityDefinitions`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SecurityDefinitions {
    /// The definitions in document order.
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSecurityDefinitionsItem>,
}

/// A `(name, definition)` pair.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedSecurityDefinitionsItem {
    /// The map key.
    #[prost(string, tag = "1")]
    pub name: String,
    /// The definition.
    #[prost(message, optional, tag = "2")]
    pub value: Option<SecurityDefinitionsItem>,
}

/// One security definition.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SecurityDefinitionsItem {
    /// Which kind (Kubernetes only uses `apiKey`, for `BearerToken`).
    #[prost(oneof = "security_definitions_item::Oneof", tags = "1, 2")]
    pub oneof: Option<security_definitions_item::Oneof>,
}

/// The forms of [`SecurityDefinitionsItem`].
pub mod security_definitions_item {
    /// The security scheme.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        /// `type: basic`.
        #[prost(message, tag = "1")]
        BasicAuthenticationSecurity(super::BasicAuthenticationSecurity),
        /// `type: apiKey`.
        #[prost(message, tag = "2")]
        ApiKeySecurity(super::ApiKeySecurity),
    }
}

/// `type: basic`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BasicAuthenticationSecurity {
    /// `type`.
    #[prost(string, tag = "1")]
    pub r#type: String,
    /// `description`.
    #[prost(string, tag = "2")]
    pub description: String,
}

/// `type: apiKey`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ApiKeySecurity {
    /// `type`.
    #[prost(string, tag = "1")]
    pub r#type: String,
    /// `name`.
    #[prost(string, tag = "2")]
    pub name: String,
    /// `in`.
    #[prost(string, tag = "3")]
    pub r#in: String,
    /// `description`.
    #[prost(string, tag = "4")]
    pub description: String,
}

/// One entry of `security`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SecurityRequirement {
    /// Scheme name → scopes.
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedStringArray>,
}

/// A `(name, strings)` pair.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedStringArray {
    /// The map key.
    #[prost(string, tag = "1")]
    pub name: String,
    /// The strings.
    #[prost(message, optional, tag = "2")]
    pub value: Option<StringArray>,
}

/// A list of strings.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StringArray {
    /// The strings.
    #[prost(string, repeated, tag = "1")]
    pub value: Vec<String>,
}
