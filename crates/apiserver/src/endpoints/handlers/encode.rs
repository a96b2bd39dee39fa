//! Output negotiation and encoding of REST responses (upstream `WriteObjectNegotiated` and
//! `transformResponseObject`): JSON (compact, or indented when pretty), YAML, and the
//! `Table` / `PartialObjectMetadata(List)` transforms asked for with `Accept` parameters.
//!
//! Protobuf output is not implemented: clients that prefer it (`application/vnd.kubernetes.
//! protobuf,application/json`) fall back to JSON, which client-go accepts.

use http::{HeaderValue, StatusCode, header};
use serde_json::Value;

use super::options::{IncludeObject, Query, include_object};
use super::table::{build_table, partial_object_metadata, partial_object_metadata_list};
use super::{RequestParts, ResourceScope};
use crate::body::{Response, full};
use crate::endpoints::negotiation::{
    DEFAULT_SERIALIZERS, EndpointRestrictions, GroupVersionKind, JSON, PROTOBUF, SerializerInfo,
    YAML, negotiate_output_media_type, not_acceptable,
};
use crate::status::{ApiError, reason};
use crate::util::gojson;

/// The media types REST responses are written in.
pub const OUTPUT_SERIALIZERS: &[SerializerInfo] = &[JSON, YAML];

/// What the client asked the object to be turned into.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transform {
    /// The object itself.
    None,
    /// A `Table` in `meta.k8s.io/<version>`.
    Table(String),
    /// `PartialObjectMetadata` in `meta.k8s.io/<version>`.
    PartialObjectMetadata(String),
    /// `PartialObjectMetadataList` in `meta.k8s.io/<version>`.
    PartialObjectMetadataList(String),
}

/// The negotiated output of a REST request.
#[derive(Clone, Debug)]
pub struct Output {
    /// The serializer.
    pub serializer: SerializerInfo,
    /// Indented JSON.
    pub pretty: bool,
    /// The transform.
    pub transform: Transform,
    /// `includeObject` for tables.
    pub include: IncludeObject,
    /// The client accepts `Content-Encoding: gzip`.
    pub gzip: bool,
}

/// Responses at least this large are gzipped when the client accepts it (upstream
/// `defaultGzipThresholdBytes`).
pub const GZIP_THRESHOLD_BYTES: usize = 128 * 1024;

/// The transforms a resource endpoint allows (upstream's `RequestScope` restrictions): Table
/// for JSON and YAML, PartialObjectMetadata(List) for any media type, in `meta.k8s.io` `v1`
/// or `v1beta1`.
struct RestRestrictions;

impl EndpointRestrictions for RestRestrictions {
    fn allows_media_type_transform(
        &self,
        media_type: &str,
        target: Option<&GroupVersionKind>,
    ) -> bool {
        let Some(target) = target else {
            return true;
        };
        if target.group != "meta.k8s.io" || !matches!(target.version.as_str(), "v1" | "v1beta1") {
            return false;
        }
        match target.kind.as_str() {
            "Table" => media_type != PROTOBUF.media_type,
            "PartialObjectMetadata" | "PartialObjectMetadataList" => true,
            _ => false,
        }
    }

    fn allows_server_version(&self, _: &str) -> bool {
        false
    }

    fn allows_stream_schema(&self, schema: &str) -> bool {
        schema == "watch"
    }
}

/// Negotiates the response of a request against `supported`. The 406 lists every serializer
/// upstream has, as clients print it.
pub fn negotiate_with(
    parts: &RequestParts,
    supported: &[SerializerInfo],
) -> Result<Output, ApiError> {
    let negotiated =
        negotiate_output_media_type(&parts.uri, &parts.headers, supported, &RestRestrictions)
            .map_err(|_| not_acceptable(DEFAULT_SERIALIZERS))?;
    let transform = match negotiated.options.convert {
        None => Transform::None,
        Some(gvk) => match gvk.kind.as_str() {
            "Table" => Transform::Table(gvk.version),
            "PartialObjectMetadata" => Transform::PartialObjectMetadata(gvk.version),
            _ => Transform::PartialObjectMetadataList(gvk.version),
        },
    };
    let include = if matches!(transform, Transform::Table(_)) {
        include_object(&Query::parse(parts.query()))?
    } else {
        IncludeObject::Metadata
    };
    let gzip = parts
        .headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| coding.split(';').next().unwrap_or_default().trim() == "gzip");
    Ok(Output {
        serializer: negotiated.options.accepted,
        pretty: negotiated.pretty,
        transform,
        include,
        gzip,
    })
}

/// Negotiates a non-streaming response.
pub fn negotiate(parts: &RequestParts) -> Result<Output, ApiError> {
    negotiate_with(parts, OUTPUT_SERIALIZERS)
}

/// `*v1.ConfigMap`, the Go type name upstream prints in transform errors.
fn go_type_name(scope: &ResourceScope, kind: &str) -> String {
    format!("*{}.{}", scope.version, kind)
}

/// Applies the requested transform to `obj` (a Status is never transformed).
pub fn transform(
    scope: &ResourceScope,
    obj: Value,
    is_list: bool,
    output: &Output,
    headers: bool,
) -> Result<Value, ApiError> {
    if obj.get("kind").and_then(Value::as_str) == Some("Status") {
        return Ok(obj);
    }
    let kind = obj
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    match &output.transform {
        Transform::None => Ok(obj),
        Transform::Table(version) => Ok(scope.with_strategy(|strategy| {
            build_table(strategy, &obj, is_list, output.include, version, headers)
        })),
        Transform::PartialObjectMetadata(version) => {
            if is_list {
                return Err(ApiError::new(
                    StatusCode::NOT_ACCEPTABLE,
                    reason::NOT_ACCEPTABLE,
                    format!(
                        "you requested PartialObjectMetadata, but the requested object is a list ({})",
                        go_type_name(scope, &kind)
                    ),
                ));
            }
            Ok(partial_object_metadata(&obj, version))
        }
        Transform::PartialObjectMetadataList(version) => {
            if !is_list {
                return Err(ApiError::new(
                    StatusCode::NOT_ACCEPTABLE,
                    reason::NOT_ACCEPTABLE,
                    format!(
                        "you requested PartialObjectMetadataList, but the requested object is not a list ({})",
                        go_type_name(scope, &kind)
                    ),
                ));
            }
            Ok(partial_object_metadata_list(&obj, version))
        }
    }
}

/// Serializes `value` with the negotiated serializer.
pub fn serialize(value: &Value, output: &Output) -> Result<Vec<u8>, ApiError> {
    // A Status keeps upstream's key order (clients compare its text), which a JSON value
    // would sort.
    if value.get("kind").and_then(Value::as_str) == Some("Status")
        && let Ok(status) = serde_json::from_value::<crate::status::Status>(value.clone())
    {
        return serialize_typed(&status, output);
    }
    serialize_typed(value, output)
}

fn serialize_typed<T: serde::Serialize>(value: &T, output: &Output) -> Result<Vec<u8>, ApiError> {
    if output.serializer.media_type == YAML.media_type {
        return serde_saphyr::to_string(value)
            .map(String::into_bytes)
            .map_err(ApiError::internal);
    }
    if output.pretty {
        gojson::to_indented(value).map(String::into_bytes)
    } else {
        gojson::to_line(value)
    }
    .map_err(ApiError::internal)
}

/// A response with `code` and `body` in the negotiated media type, gzipped (fastest level,
/// as upstream) when it is large and the client accepts gzip.
pub fn response(code: StatusCode, body: Vec<u8>, output: &Output) -> Response {
    let compressed = (output.gzip && body.len() > GZIP_THRESHOLD_BYTES)
        .then(|| gzip(&body))
        .flatten();
    let is_compressed = compressed.is_some();
    let mut response = http::Response::new(full(compressed.unwrap_or(body)));
    *response.status_mut() = code;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(output.serializer.media_type),
    );
    if is_compressed {
        headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        headers.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    }
    response
}

fn gzip(body: &[u8]) -> Option<Vec<u8>> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(body.len() / 4),
        flate2::Compression::fast(),
    );
    encoder.write_all(body).ok()?;
    encoder.finish().ok()
}

/// Transforms, serializes and writes `obj` with `code`.
pub fn write_object(
    scope: &ResourceScope,
    code: StatusCode,
    obj: Value,
    is_list: bool,
    output: &Output,
) -> Result<Response, ApiError> {
    let obj = transform(scope, obj, is_list, output, true)?;
    Ok(response(code, serialize(&obj, output)?, output))
}
