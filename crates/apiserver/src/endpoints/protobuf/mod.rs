//! Kubernetes protobuf (`application/vnd.kubernetes.protobuf`): request bodies decoded into the
//! JSON object the REST layer works with, and responses encoded from it.
//!
//! client-go's typed clientsets send protobuf (`kubectl create`, helm, controllers), and a 415 is
//! not retried as JSON, so the server must read them. The body is the magic `k8s\0` followed by
//! a `runtime.Unknown` envelope `{typeMeta = 1 {apiVersion = 1, kind = 2}, raw = 2,
//! contentEncoding = 3, contentType = 4}` whose `raw` is the object's own message. The object is
//! decoded with a static field table per message (`generated.rs`) by one generic decoder
//! (`schema.rs`): no code generation at build time and no runtime dependency.
//!
//! `generated.rs` is written by `generate.py` from the Go API types of Kubernetes 1.35 (field
//! numbers, JSON names, pointer or value, `omitempty`, inlined embedded structs); its header says
//! how to regenerate it. The JSON follows Go's encoder: a Go pointer, or a value without
//! `omitempty`, keeps a zero value it was sent; a value with `omitempty` drops it; an embedded
//! struct (`VolumeSource`, `ProbeHandler`, `EphemeralContainerCommon`, …) is inlined. Special
//! types: `Time`/`MicroTime` (RFC 3339), `Quantity` (its string), `IntOrString`,
//! `RawExtension`/`FieldsV1`/apiextensions `JSON` (the embedded JSON), `[]byte` (base64), and the
//! apiextensions `JSONSchemaPropsOr{Array,Bool,StringArray}` unions. Deliberate differences from
//! re-encoding the Go struct: a zero `Time` (Go writes `null`) and a zero `IntOrString` with
//! `omitempty` (upstream defaulting treats it as unset) are left out, and a field absent from
//! the wire is absent from the JSON (gogo always writes value fields, so this only affects
//! hand-built bodies).
//!
//! Supported: every kind kube-apiserver serves, with all nested messages — v1 ConfigMap, Secret,
//! Namespace, ServiceAccount, Service, Endpoints, Event, Pod, Binding, Node, PersistentVolumeClaim,
//! PersistentVolume, LimitRange, ResourceQuota, ReplicationController; apps/v1
//! ControllerRevision, DaemonSet, Deployment, ReplicaSet, StatefulSet; autoscaling/v1 Scale;
//! events.k8s.io/v1 Event; batch/v1 CronJob, Job; networking.k8s.io/v1 IngressClass, Ingress,
//! NetworkPolicy; policy/v1 PodDisruptionBudget, Eviction; authorization.k8s.io/v1 the four access
//! reviews; rbac.authorization.k8s.io/v1 Role,
//! ClusterRole, RoleBinding, ClusterRoleBinding; storage.k8s.io/v1 StorageClass;
//! apiextensions.k8s.io/v1 CustomResourceDefinition; scheduling.k8s.io/v1 PriorityClass;
//! coordination.k8s.io/v1 Lease; discovery.k8s.io/v1 EndpointSlice; apiregistration.k8s.io/v1
//! APIService; DeleteOptions under any apiVersion. Other kinds get 415.
//!
//! Responses ([`encode_kubernetes_protobuf`], `encode.rs`) use the same tables in reverse and
//! write what gogo's generated `Marshal` writes for the Go struct the JSON decodes into: the
//! kinds above, their `<Kind>List`s (`{metadata = 1, items = 2}`), `Status`, and
//! `PartialObjectMetadata(List)`. Watch streams frame each `WatchEvent` with a 4-byte
//! big-endian length ([`watch_frame`]).

mod encode;
mod generated;
mod schema;
mod wire;

use serde_json::{Map, Value};

use http::StatusCode;

use crate::status::{ApiError, reason};

pub use encode::EncodeError;
use encode::{encode_message, put_bytes, put_nested};
use schema::{Message, decode_message};
use wire::{FieldReader, WireValue};

/// The media type of Kubernetes protobuf bodies.
pub const PROTOBUF_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The media type of a protobuf watch stream.
pub const PROTOBUF_WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// The 4-byte prefix of every Kubernetes protobuf body.
const MAGIC: &[u8; 4] = b"k8s\0";

/// Why a protobuf body could not be decoded (all become 400, except an unsupported kind).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The body does not start with `k8s\0`.
    #[error(
        "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
    )]
    MissingMagic,
    /// A length or varint runs past the end of its message.
    #[error("unexpected EOF")]
    Truncated,
    /// A varint longer than 10 bytes.
    #[error("integer overflow in varint")]
    VarintOverflow,
    /// A field key with field number 0 (or beyond 2^29).
    #[error("illegal field key {0}")]
    InvalidKey(u64),
    /// A wire type Kubernetes never writes (groups).
    #[error("illegal wire type {0}")]
    UnsupportedWireType(u8),
    /// A field's wire type does not match its declared type.
    #[error("wrong wire type for field {field} of {message}")]
    WireType {
        /// The message.
        message: &'static str,
        /// The field number.
        field: u32,
    },
    /// A `Time` outside the representable range.
    #[error("invalid timestamp")]
    InvalidTime,
    /// A `FieldsV1`/`RawExtension` whose bytes are not JSON.
    #[error("invalid JSON in raw field: {0}")]
    InvalidRawJson(String),
    /// The envelope has no `typeMeta.kind`.
    #[error("Object 'Kind' is missing in protobuf envelope")]
    MissingKind,
    /// The envelope declares a content encoding (never sent by clients; upstream ignores it).
    #[error("unsupported content encoding {0:?}")]
    ContentEncoding(String),
    /// A kind this server cannot read from protobuf.
    #[error("no protobuf decoding for kind {kind:?} in version {api_version:?}")]
    UnsupportedKind {
        /// The envelope's apiVersion.
        api_version: String,
        /// The envelope's kind.
        kind: String,
    },
}

impl From<DecodeError> for ApiError {
    fn from(err: DecodeError) -> Self {
        match err {
            // The client may retry the same object as JSON; the message names the accepted
            // media types as upstream's 415 does.
            DecodeError::UnsupportedKind { .. } => ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                reason::UNSUPPORTED_MEDIA_TYPE,
                "the body of the request was in an unknown format - accepted media types \
                 include: application/json, application/yaml",
            ),
            other => ApiError::bad_request(format!(
                "the body of the request could not be decoded as {PROTOBUF_MEDIA_TYPE}: {other}"
            )),
        }
    }
}

/// Decodes a Kubernetes protobuf body into its JSON object, with `apiVersion` and `kind` taken
/// from the envelope. 400 for malformed input, 415 for a kind without a field table here.
pub fn decode_kubernetes_protobuf(body: &[u8]) -> Result<Value, ApiError> {
    Ok(decode(body)?)
}

/// The `(apiVersion, kind)` pairs [`decode_kubernetes_protobuf`] reads (`DeleteOptions` is read
/// under any apiVersion, since every group version registers it).
pub fn supported_kinds() -> impl Iterator<Item = (&'static str, &'static str)> {
    generated::KINDS
        .iter()
        .map(|(version, kind, _)| (*version, *kind))
        .chain(std::iter::once(("*", "DeleteOptions")))
}

/// What a response object is encoded as.
enum Shape {
    /// A kind with a table (or `Status`).
    Object(&'static Message),
    /// `<Kind>List`: `{metadata = 1 (ListMeta), items = 2}`.
    List(&'static Message),
    /// `PartialObjectMetadata`: `{metadata = 1}`.
    PartialObjectMetadata,
    /// `PartialObjectMetadataList`: `{metadata = 1 (ListMeta), items = 2}`.
    PartialObjectMetadataList,
}

fn kind_table(api_version: &str, kind: &str) -> Option<&'static Message> {
    generated::KINDS
        .iter()
        .find(|(v, k, _)| *v == api_version && *k == kind)
        .map(|(_, _, m)| *m)
}

fn shape(api_version: &str, kind: &str) -> Option<Shape> {
    if let Some(message) = kind_table(api_version, kind) {
        return Some(Shape::Object(message));
    }
    if kind == "Status" {
        return Some(Shape::Object(generated::STATUS));
    }
    if matches!(api_version, "meta.k8s.io/v1" | "meta.k8s.io/v1beta1") {
        match kind {
            "PartialObjectMetadata" => return Some(Shape::PartialObjectMetadata),
            "PartialObjectMetadataList" => return Some(Shape::PartialObjectMetadataList),
            _ => {}
        }
    }
    let item = kind.strip_suffix("List")?;
    kind_table(api_version, item).map(Shape::List)
}

/// Whether objects of `kind` in `api_version` (and their lists) have a protobuf encoding here:
/// every kind with a field table, not custom resources.
pub fn can_encode(api_version: &str, kind: &str) -> bool {
    kind_table(api_version, kind).is_some()
}

/// Encodes a response object (with its `apiVersion` and `kind`) as the magic `k8s\0` and a
/// `runtime.Unknown` envelope around the object's message, byte for byte what upstream's
/// protobuf serializer writes.
pub fn encode_kubernetes_protobuf(obj: &Value) -> Result<Vec<u8>, EncodeError> {
    let text = |key: &str| obj.get(key).and_then(Value::as_str).unwrap_or_default();
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    let unsupported = || EncodeError::UnsupportedKind {
        api_version: api_version.to_string(),
        kind: kind.to_string(),
    };
    let shape = shape(api_version, kind).ok_or_else(unsupported)?;
    let empty = Map::new();
    let fields = obj.as_object().unwrap_or(&empty);
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(MAGIC);
    // runtime.Unknown {typeMeta = 1 {apiVersion = 1, kind = 2}, raw = 2, contentEncoding = 3,
    // contentType = 4}, the strings always written.
    put_nested(&mut out, 1, |out| {
        put_bytes(out, 1, api_version.as_bytes());
        put_bytes(out, 2, kind.as_bytes());
        Ok::<_, EncodeError>(())
    })?;
    put_nested(&mut out, 2, |out| encode_shape(&shape, fields, out))?;
    put_bytes(&mut out, 3, b"");
    put_bytes(&mut out, 4, b"");
    Ok(out)
}

fn encode_shape(
    shape: &Shape,
    obj: &Map<String, Value>,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    let empty = Map::new();
    let object = |key: &str| obj.get(key).and_then(Value::as_object).unwrap_or(&empty);
    let items = || {
        obj.get("items")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(|item| item.as_object().unwrap_or(&empty))
    };
    match shape {
        Shape::Object(message) => encode_message(message, obj, out),
        Shape::PartialObjectMetadata => put_nested(out, 1, |out| {
            encode_message(generated::OBJECT_META, object("metadata"), out)
        }),
        Shape::List(message) => {
            put_nested(out, 1, |out| {
                encode_message(generated::LIST_META, object("metadata"), out)
            })?;
            for item in items() {
                put_nested(out, 2, |out| encode_message(message, item, out))?;
            }
            Ok(())
        }
        Shape::PartialObjectMetadataList => {
            put_nested(out, 1, |out| {
                encode_message(generated::LIST_META, object("metadata"), out)
            })?;
            for item in items() {
                let metadata = item
                    .get("metadata")
                    .and_then(Value::as_object)
                    .unwrap_or(&empty);
                put_nested(out, 2, |out| {
                    put_nested(out, 1, |out| {
                        encode_message(generated::OBJECT_META, metadata, out)
                    })
                })?;
            }
            Ok(())
        }
    }
}

/// One frame of a protobuf watch stream: a 4-byte big-endian length, then a
/// `metav1.WatchEvent {type = 1, object = 2 (runtime.RawExtension {raw = 1})}` whose raw bytes
/// are the encoded object (`k8s\0` + envelope), as upstream's length-delimited framer writes.
pub fn watch_frame(event_type: &str, object: &[u8]) -> Vec<u8> {
    let mut event = Vec::with_capacity(object.len() + event_type.len() + 16);
    put_bytes(&mut event, 1, event_type.as_bytes());
    let _ = put_nested(&mut event, 2, |out| {
        put_bytes(out, 1, object);
        Ok::<_, EncodeError>(())
    });
    let mut frame = Vec::with_capacity(event.len() + 4);
    frame.extend_from_slice(&(event.len() as u32).to_be_bytes());
    frame.extend(event);
    frame
}

fn decode(body: &[u8]) -> Result<Value, DecodeError> {
    let envelope = body.strip_prefix(MAGIC).ok_or(DecodeError::MissingMagic)?;
    let unknown = Unknown::decode(envelope)?;
    if unknown.kind.is_empty() {
        return Err(DecodeError::MissingKind);
    }
    if !unknown.content_encoding.is_empty() {
        return Err(DecodeError::ContentEncoding(unknown.content_encoding));
    }
    let message = if unknown.kind == "DeleteOptions" {
        generated::DELETE_OPTIONS
    } else {
        generated::KINDS
            .iter()
            .find(|(v, k, _)| *v == unknown.api_version && *k == unknown.kind)
            .map(|(_, _, m)| *m)
            .ok_or_else(|| DecodeError::UnsupportedKind {
                api_version: unknown.api_version.clone(),
                kind: unknown.kind.clone(),
            })?
    };
    let mut object = Map::new();
    object.insert("apiVersion".into(), Value::String(unknown.api_version));
    object.insert("kind".into(), Value::String(unknown.kind));
    object.extend(decode_message(message, unknown.raw)?);
    Ok(Value::Object(object))
}

/// The `runtime.Unknown` envelope.
#[derive(Default)]
struct Unknown<'a> {
    api_version: String,
    kind: String,
    raw: &'a [u8],
    content_encoding: String,
}

impl<'a> Unknown<'a> {
    fn decode(buf: &'a [u8]) -> Result<Self, DecodeError> {
        let mut out = Unknown::default();
        let mut reader = FieldReader::new(buf);
        while let Some((number, value)) = reader.next_field()? {
            let WireValue::Bytes(bytes) = value else {
                if (1..=4).contains(&number) {
                    return Err(DecodeError::WireType {
                        message: "Unknown",
                        field: number,
                    });
                }
                continue;
            };
            match number {
                1 => {
                    let mut meta = FieldReader::new(bytes);
                    while let Some((n, v)) = meta.next_field()? {
                        match (n, v) {
                            (1, WireValue::Bytes(b)) => out.api_version = text(b),
                            (2, WireValue::Bytes(b)) => out.kind = text(b),
                            (1 | 2, _) => {
                                return Err(DecodeError::WireType {
                                    message: "TypeMeta",
                                    field: n,
                                });
                            }
                            _ => {}
                        }
                    }
                }
                2 => out.raw = bytes,
                3 => out.content_encoding = text(bytes),
                _ => {}
            }
        }
        Ok(out)
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
mod tests;
