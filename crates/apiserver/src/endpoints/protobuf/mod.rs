//! Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`) decoded into the
//! JSON object the REST layer works with.
//!
//! client-go's typed clientsets send protobuf (`kubectl create configmap|secret|namespace`, helm's
//! release `Secret`s and `DeleteOptions`), and a 415 is not retried as JSON, so the server must
//! read them. The body is the magic `k8s\0` followed by a `runtime.Unknown` envelope
//! `{typeMeta = 1 {apiVersion = 1, kind = 2}, raw = 2, contentEncoding = 3, contentType = 4}`
//! whose `raw` is the object's own message. The object is decoded with a static field table per
//! message (`types.rs`, `workloads.rs`, `networking.rs`) by one generic decoder (`schema.rs`):
//! no generated code at build time and no runtime dependency.
//!
//! Supported: v1 ConfigMap, Secret, Namespace, ServiceAccount, Service, ResourceQuota; apps/v1
//! Deployment; batch/v1 Job, CronJob; networking.k8s.io/v1 Ingress; rbac Role, ClusterRole,
//! RoleBinding, ClusterRoleBinding; scheduling PriorityClass; policy/v1 PodDisruptionBudget,
//! Eviction; coordination Lease; DeleteOptions under any apiVersion. Other kinds, and bodies
//! that set a nested message without a table (pod affinity, lifecycle hooks, most volume
//! sources), get 415, which kubectl reports instead of the object silently losing fields.

mod networking;
mod schema;
mod types;
mod wire;
mod workloads;

use serde_json::{Map, Value};

use http::StatusCode;

use crate::status::{ApiError, reason};

use schema::decode_message;
use wire::{FieldReader, WireValue};

/// The media type of Kubernetes protobuf bodies.
pub const PROTOBUF_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

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
    /// A set field whose message has no table here (e.g. `affinity`).
    #[error("unsupported field in protobuf body")]
    UnsupportedField,
}

impl From<DecodeError> for ApiError {
    fn from(err: DecodeError) -> Self {
        match err {
            // The client may retry the same object as JSON; the message names the accepted
            // media types as upstream's 415 does.
            DecodeError::UnsupportedKind { .. } | DecodeError::UnsupportedField => ApiError::new(
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
    types::KINDS
        .iter()
        .map(|(version, kind, _)| (*version, *kind))
        .chain(std::iter::once(("*", "DeleteOptions")))
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
        &types::DELETE_OPTIONS
    } else {
        types::KINDS
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
