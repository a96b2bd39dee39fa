//! Request bodies: read with `--max-request-body-bytes` (413 above it), then decoded by
//! `Content-Type` into a JSON object: JSON (also when the header is missing, as kubectl 1.20
//! sends), YAML, or Kubernetes protobuf through the pluggable [`ProtobufDecoder`].

use bytes::Bytes;
use http::StatusCode;
use serde_json::Value;

use super::ProtobufDecoder;
use crate::body::{Body, read_limited};
use crate::status::{ApiError, reason};

/// The media types request bodies may have (upstream's serializers, in its order).
pub const ACCEPTED_BODY_TYPES: &str =
    "application/json, application/yaml, application/vnd.kubernetes.protobuf";

/// Kubernetes protobuf.
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// Which decoder a body went through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyFormat {
    /// JSON (or no Content-Type).
    Json,
    /// YAML.
    Yaml,
    /// Kubernetes protobuf.
    Protobuf,
}

/// Reads the whole body; 413 `Request entity too large: limit is N` when it is longer than
/// `limit` (0 = unlimited).
pub async fn read_body(body: Body, limit: usize) -> Result<Bytes, ApiError> {
    match read_limited(body, limit).await {
        Ok(Some(bytes)) => Ok(bytes),
        Ok(None) => Err(ApiError::request_entity_too_large(limit)),
        Err(err) => Err(ApiError::internal(err)),
    }
}

/// The media type of a `Content-Type` header without parameters, lower-cased (empty when the
/// header is missing).
pub fn media_type(content_type: Option<&str>) -> String {
    content_type
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// 415 `the body of the request was in an unknown format - accepted media types include: …`.
pub fn unsupported_media_type(accepted: &str) -> ApiError {
    ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        reason::UNSUPPORTED_MEDIA_TYPE,
        format!(
            "the body of the request was in an unknown format - accepted media types include: {accepted}"
        ),
    )
}

/// The format a `Content-Type` selects, or 415 (also for one that does not parse as a media
/// type, as upstream's `mime.ParseMediaType` check answers).
pub fn body_format(content_type: Option<&str>) -> Result<BodyFormat, ApiError> {
    if let Some(header) = content_type.filter(|h| !h.is_empty())
        && crate::util::mime::parse_media_type(header).is_err()
    {
        return Err(unsupported_media_type(ACCEPTED_BODY_TYPES));
    }
    match media_type(content_type).as_str() {
        "" | "application/json" => Ok(BodyFormat::Json),
        "application/yaml" => Ok(BodyFormat::Yaml),
        PROTOBUF => Ok(BodyFormat::Protobuf),
        _ => Err(unsupported_media_type(ACCEPTED_BODY_TYPES)),
    }
}

/// Decodes `bytes` in `format` into a JSON value. Syntax errors are 400; protobuf without a
/// decoder is 415 (as a server without that serializer answers).
pub fn decode_value(
    format: BodyFormat,
    bytes: &[u8],
    protobuf: Option<&ProtobufDecoder>,
) -> Result<Value, ApiError> {
    match format {
        BodyFormat::Json => serde_json::from_slice(bytes).map_err(|err| {
            ApiError::bad_request(format!(
                "couldn't get version/kind; json parse error: {err}"
            ))
        }),
        BodyFormat::Yaml => decode_yaml(bytes),
        BodyFormat::Protobuf => match protobuf {
            Some(decode) => decode(bytes),
            None => Err(unsupported_media_type(ACCEPTED_BODY_TYPES)),
        },
    }
}

/// YAML into JSON the way sigs.k8s.io/yaml does (YAML 1.1 octals such as `0777` are integers).
pub fn decode_yaml(bytes: &[u8]) -> Result<Value, ApiError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|err| ApiError::bad_request(format!("error converting YAML to JSON: {err}")))?;
    let options = serde_saphyr::options! { legacy_octal_numbers: true };
    serde_saphyr::from_str_with_options::<Value>(text, options)
        .map_err(|err| ApiError::bad_request(format!("error converting YAML to JSON: {err}")))
}

/// A decoded object body.
#[derive(Clone, Debug)]
pub struct DecodedObject {
    /// The object.
    pub value: Value,
    /// The decoder used.
    pub format: BodyFormat,
    /// Paths of keys given twice in a JSON body (for `fieldValidation`).
    pub duplicates: Vec<String>,
}

/// Reads and decodes an object body by the request's `Content-Type`.
pub async fn read_object(
    body: Body,
    content_type: Option<&str>,
    limit: usize,
    protobuf: Option<&ProtobufDecoder>,
) -> Result<DecodedObject, ApiError> {
    let format = body_format(content_type)?;
    let bytes = read_body(body, limit).await?;
    let value = decode_value(format, &bytes, protobuf)?;
    let duplicates = if format == BodyFormat::Json {
        duplicate_fields(&bytes)
    } else {
        Vec::new()
    };
    Ok(DecodedObject {
        value,
        format,
        duplicates,
    })
}

/// The dotted paths of keys that occur twice in the same JSON object (upstream's strict
/// decoder reports them as `duplicate field "<path>"`; the last value wins otherwise).
pub fn duplicate_fields(bytes: &[u8]) -> Vec<String> {
    let found = std::cell::RefCell::new(Vec::new());
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let scan = DuplicateScan {
        path: String::new(),
        found: &found,
    };
    // A body that does not parse was rejected before; nothing to report then.
    if serde::de::DeserializeSeed::deserialize(scan, &mut deserializer).is_err() {
        return Vec::new();
    }
    found.into_inner()
}

struct DuplicateScan<'a> {
    path: String,
    found: &'a std::cell::RefCell<Vec<String>>,
}

impl DuplicateScan<'_> {
    fn child(&self, segment: &str) -> String {
        if self.path.is_empty() {
            segment.to_string()
        } else {
            format!("{}.{segment}", self.path)
        }
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for DuplicateScan<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for DuplicateScan<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = self.child(&key);
            if !seen.insert(key) {
                self.found.borrow_mut().push(path.clone());
            }
            map.next_value_seed(DuplicateScan {
                path,
                found: self.found,
            })?;
        }
        Ok(())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0usize;
        while seq
            .next_element_seed(DuplicateScan {
                path: format!("{}[{index}]", self.path),
                found: self.found,
            })?
            .is_some()
        {
            index += 1;
        }
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::full;

    #[tokio::test]
    async fn body_limit_is_inclusive() {
        assert!(read_body(full(vec![b'x'; 10]), 10).await.is_ok());
        let err = read_body(full(vec![b'x'; 11]), 10).await.unwrap_err();
        assert_eq!(err.code(), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(err.0.message, "Request entity too large: limit is 10");
        assert!(read_body(full(vec![b'x'; 11]), 0).await.is_ok());
    }

    #[test]
    fn content_types() {
        assert_eq!(body_format(None).unwrap(), BodyFormat::Json);
        assert_eq!(
            body_format(Some("application/json; charset=utf-8")).unwrap(),
            BodyFormat::Json
        );
        assert_eq!(
            body_format(Some("application/yaml")).unwrap(),
            BodyFormat::Yaml
        );
        assert_eq!(body_format(Some(PROTOBUF)).unwrap(), BodyFormat::Protobuf);
        let err = body_format(Some("text/plain")).unwrap_err();
        assert_eq!(err.code(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert_eq!(
            err.0.message,
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
    }

    #[test]
    fn protobuf_needs_a_decoder() {
        let err = decode_value(BodyFormat::Protobuf, b"k8s\0", None).unwrap_err();
        assert_eq!(err.code(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
        let decoder: ProtobufDecoder =
            std::sync::Arc::new(|_| Ok(serde_json::json!({"kind": "X"})));
        let value = decode_value(BodyFormat::Protobuf, b"k8s\0", Some(&decoder)).unwrap();
        assert_eq!(value["kind"], "X");
    }

    #[test]
    fn duplicate_keys_with_paths() {
        let body = br#"{"a":1,"a":2,"spec":{"x":[{"n":1,"n":2}],"y":1,"y":2}}"#;
        assert_eq!(duplicate_fields(body), ["a", "spec.x[0].n", "spec.y"]);
        assert!(duplicate_fields(br#"{"a":{"a":1}}"#).is_empty());
    }

    #[test]
    fn yaml_like_sigs_yaml() {
        let value = decode_yaml(b"apiVersion: v1\nkind: ConfigMap\ndata:\n  mode: 0777\n").unwrap();
        assert_eq!(value["kind"], "ConfigMap");
        assert_eq!(value["data"]["mode"], 511);
        assert!(decode_yaml(b"a: [").is_err());
    }
}
