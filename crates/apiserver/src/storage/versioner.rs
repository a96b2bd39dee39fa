//! The analogue of upstream's `APIObjectVersioner`: reads and writes `metadata.resourceVersion`
//! in JSON object bytes, keeping every other byte of meaning and the key order intact (clients
//! diff objects, and Go's typed encoders never reorder fields).

use std::fmt;

use bytes::Bytes;
use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use super::errors::StorageError;

mod compact;

/// A JSON object whose members are kept raw and in order.
struct OrderedObject(Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for OrderedObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OrderedObject;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OrderedObject, A::Error> {
                let mut members = Vec::with_capacity(map.size_hint().unwrap_or(8));
                while let Some((k, v)) = map.next_entry::<String, Box<RawValue>>()? {
                    members.push((k, v));
                }
                Ok(OrderedObject(members))
            }
        }
        deserializer.deserialize_map(V)
    }
}

impl Serialize for OrderedObject {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// Where `resourceVersion` goes when the metadata has none: after the fields Go's `ObjectMeta`
/// encodes before it.
const FIELDS_BEFORE_RV: &[&str] = &["name", "generateName", "namespace", "selfLink", "uid"];

fn invalid(err: impl fmt::Display) -> StorageError {
    StorageError::InvalidObj {
        key: String::new(),
        message: format!("object is not a JSON object with metadata: {err}"),
    }
}

/// Rewrites `metadata.resourceVersion`: `Some(rv)` sets it to the decimal string, `None`
/// removes it (upstream's `PrepareObjectForStorage`: objects are stored without it). Compact
/// documents take a splicing fast path with the same result; this runs on every read and write.
fn rewrite(obj: &[u8], rv: Option<u64>) -> Result<Bytes, StorageError> {
    match compact::rewrite(obj, rv) {
        Some(out) => Ok(out),
        None => rewrite_general(obj, rv),
    }
}

/// [`rewrite`] for any JSON object: decodes the members (keeping their values raw), edits and
/// re-encodes them.
fn rewrite_general(obj: &[u8], rv: Option<u64>) -> Result<Bytes, StorageError> {
    let mut top: OrderedObject = serde_json::from_slice(obj).map_err(invalid)?;
    let meta_index = top.0.iter().position(|(k, _)| k == "metadata");
    let mut meta = match meta_index {
        Some(i) => {
            let raw = top.0[i].1.get();
            if raw == "null" {
                OrderedObject(Vec::new())
            } else {
                serde_json::from_str::<OrderedObject>(raw).map_err(invalid)?
            }
        }
        None => OrderedObject(Vec::new()),
    };
    let existing = meta.0.iter().position(|(k, _)| k == "resourceVersion");
    match (rv, existing) {
        (None, None) => return Ok(Bytes::copy_from_slice(obj)),
        (None, Some(i)) => {
            meta.0.remove(i);
        }
        (Some(rv), at) => {
            let value = RawValue::from_string(format!("\"{rv}\"")).map_err(invalid)?;
            match at {
                Some(i) => meta.0[i].1 = value,
                None => {
                    let pos = meta
                        .0
                        .iter()
                        .rposition(|(k, _)| FIELDS_BEFORE_RV.contains(&k.as_str()))
                        .map(|p| p + 1)
                        .unwrap_or(0);
                    meta.0.insert(pos, ("resourceVersion".into(), value));
                }
            }
        }
    }
    let meta_raw = serde_json::value::to_raw_value(&meta).map_err(invalid)?;
    match meta_index {
        Some(i) => top.0[i].1 = meta_raw,
        None => {
            // Go's TypeMeta is inlined before ObjectMeta.
            let pos = top
                .0
                .iter()
                .rposition(|(k, _)| k == "kind" || k == "apiVersion")
                .map(|p| p + 1)
                .unwrap_or(0);
            top.0.insert(pos, ("metadata".into(), meta_raw));
        }
    }
    serde_json::to_vec(&top).map(Bytes::from).map_err(invalid)
}

/// Returns `obj` with `metadata.resourceVersion` set to `rv` (upstream `UpdateObject`).
pub fn set_resource_version(obj: &[u8], rv: u64) -> Result<Bytes, StorageError> {
    rewrite(obj, Some(rv))
}

/// Returns `obj` without `metadata.resourceVersion` (upstream `PrepareObjectForStorage`).
pub fn strip_resource_version(obj: &[u8]) -> Result<Bytes, StorageError> {
    rewrite(obj, None)
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct MetaView {
    #[serde(default)]
    resource_version: Option<String>,
    #[serde(default)]
    uid: Option<String>,
}

#[derive(Deserialize)]
struct ObjectView {
    #[serde(default)]
    metadata: Option<MetaView>,
}

fn meta_view(obj: &[u8]) -> Result<MetaView, StorageError> {
    let view: ObjectView = serde_json::from_slice(obj).map_err(invalid)?;
    Ok(view.metadata.unwrap_or_default())
}

/// The object's `metadata.resourceVersion` as a number; 0 when unset (upstream
/// `ObjectResourceVersion`).
pub fn object_resource_version(obj: &[u8]) -> Result<u64, StorageError> {
    match meta_view(obj)?.resource_version {
        None => Ok(0),
        Some(s) if s.is_empty() => Ok(0),
        Some(s) => parse_resource_version(&s),
    }
}

/// The object's `metadata.uid` (empty when unset).
pub fn object_uid(obj: &[u8]) -> Result<String, StorageError> {
    Ok(meta_view(obj)?.uid.unwrap_or_default())
}

/// Parses a resource version as upstream's `ParseResourceVersion`: `""` is 0, anything else must
/// be a decimal `uint64`, otherwise a 422-style `resourceVersion: Invalid value` error.
pub fn parse_resource_version(rv: &str) -> Result<u64, StorageError> {
    if rv.is_empty() {
        return Ok(0);
    }
    rv.parse::<u64>().map_err(|e| StorageError::Invalid {
        field: "resourceVersion".into(),
        value: rv.into(),
        detail: format!("strconv.ParseUint: parsing {rv:?}: {}", go_parse_error(&e)),
    })
}

fn go_parse_error(e: &std::num::ParseIntError) -> &'static str {
    match e.kind() {
        std::num::IntErrorKind::PosOverflow => "value out of range",
        _ => "invalid syntax",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_keeps_order_and_inserts_after_uid() {
        let obj = br#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","uid":"u","labels":{"x":"y"}},"data":{"b":"1","a":"2"}}"#;
        let out = set_resource_version(obj, 42).unwrap();
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","uid":"u","resourceVersion":"42","labels":{"x":"y"}},"data":{"b":"1","a":"2"}}"#
        );
        let again = set_resource_version(&out, 43).unwrap();
        assert_eq!(object_resource_version(&again).unwrap(), 43);
        let stripped = strip_resource_version(&again).unwrap();
        assert_eq!(&stripped[..], &obj[..]);
    }

    #[test]
    fn metadata_missing_is_added() {
        let out = set_resource_version(br#"{"kind":"X","spec":{}}"#, 1).unwrap();
        assert_eq!(
            &out[..],
            br#"{"kind":"X","metadata":{"resourceVersion":"1"},"spec":{}}"#
        );
    }

    #[test]
    fn parse_errors_match_upstream() {
        let err = parse_resource_version("abc").unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax"#
        );
        assert_eq!(parse_resource_version("").unwrap(), 0);
        assert_eq!(parse_resource_version("17").unwrap(), 17);
        assert!(set_resource_version(b"[1]", 1).is_err());
    }
}
