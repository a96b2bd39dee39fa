//! Output negotiation and encoding of REST responses (upstream `WriteObjectNegotiated` and
//! `transformResponseObject`): JSON (compact, or indented when pretty), YAML, Kubernetes
//! protobuf, and the `Table` / `PartialObjectMetadata(List)` transforms asked for with `Accept`
//! parameters.
//!
//! Protobuf is offered as upstream offers it: for every kind with a protobuf encoding (the
//! built-in kinds), never for `Table`, and for `PartialObjectMetadata(List)` of any resource.
//! Custom resources are JSON/YAML only (upstream's `StandardSerializers`): a protobuf-only
//! `Accept` gets 406, `application/vnd.kubernetes.protobuf, application/json` gets JSON.

use http::{HeaderValue, StatusCode, header};
use serde_json::Value;

use super::options::{IncludeObject, Query, include_object};
use super::table::{build_table, partial_object_metadata, partial_object_metadata_list};
use super::{RequestParts, ResourceScope};
use crate::body::{Response, full};
use crate::endpoints::negotiation::{
    DEFAULT_SERIALIZERS, DefaultEndpointRestrictions, EndpointRestrictions, GroupVersionKind,
    PROTOBUF, SerializerInfo, YAML, negotiate_media_type_options, negotiate_output_media_type,
    not_acceptable, not_acceptable_response,
};
use crate::endpoints::protobuf;
use crate::status::{ApiError, reason};
use crate::util::gojson;

/// The media types REST responses are written in (protobuf only where
/// [`ResourceScope::supports_protobuf`]).
pub const OUTPUT_SERIALIZERS: &[SerializerInfo] = DEFAULT_SERIALIZERS;

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
/// or `v1beta1`; the object itself in protobuf only when its kind has a protobuf encoding.
struct RestRestrictions {
    protobuf: bool,
}

impl EndpointRestrictions for RestRestrictions {
    fn allows_media_type_transform(
        &self,
        media_type: &str,
        target: Option<&GroupVersionKind>,
    ) -> bool {
        let Some(target) = target else {
            return self.protobuf || media_type != PROTOBUF.media_type;
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

/// Negotiates the response of a request for `scope` against `supported`. The 406 lists every
/// serializer upstream has, as clients print it.
pub fn negotiate_with(
    scope: &ResourceScope,
    parts: &RequestParts,
    supported: &[SerializerInfo],
) -> Result<Output, ApiError> {
    let restrictions = RestRestrictions {
        protobuf: scope.supports_protobuf(),
    };
    let negotiated =
        negotiate_output_media_type(&parts.uri, &parts.headers, supported, &restrictions)
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
pub fn negotiate(scope: &ResourceScope, parts: &RequestParts) -> Result<Output, ApiError> {
    negotiate_with(scope, parts, OUTPUT_SERIALIZERS)
}

/// Whether an error for a request with these headers is written as protobuf: upstream writes
/// a `Status` with the serializer the `Accept` header picks among all of them without
/// transforms (`ErrorNegotiated` with the default restrictions), custom resources included.
pub fn error_wants_protobuf(headers: &http::HeaderMap) -> bool {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    !accept.is_empty()
        && negotiate_media_type_options(accept, DEFAULT_SERIALIZERS, &DefaultEndpointRestrictions)
            .is_some_and(|options| options.accepted == PROTOBUF)
}

/// The response for `err`: a protobuf `Status` when the `Accept` header negotiates protobuf
/// (see [`error_wants_protobuf`]), else the JSON `Status` (a failed negotiation's 406 as the
/// indented raw JSON upstream writes).
pub fn error_response(headers: &http::HeaderMap, err: ApiError) -> Response {
    if error_wants_protobuf(headers) {
        let code = err.code();
        let retry = err
            .0
            .details
            .as_ref()
            .map(|d| d.retry_after_seconds)
            .filter(|s| *s > 0);
        if let Ok(body) = serde_json::to_value(&*err.0)
            .map_err(ApiError::internal)
            .and_then(|status| protobuf_bytes(&status))
        {
            let mut response = http::Response::new(full(body));
            *response.status_mut() = code;
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(PROTOBUF.media_type),
            );
            if let Some(seconds) = retry {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
            }
            return response;
        }
    }
    if err.code() == StatusCode::NOT_ACCEPTABLE {
        return not_acceptable_response(&err);
    }
    err.into_response()
}

fn protobuf_bytes(value: &Value) -> Result<Vec<u8>, ApiError> {
    protobuf::encode_kubernetes_protobuf(value).map_err(ApiError::internal)
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
    if output.serializer == PROTOBUF {
        return protobuf_bytes(value);
    }
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
