//! Schema-driven encoding, the reverse of [`super::schema`]'s decoder: a JSON object written as
//! the protobuf message gogo's generated `Marshal` produces for the same Go struct.
//!
//! Fields go out in field-number order (the tables are in that order). A Go value field is
//! always written, its zero value when the JSON leaves it out (`""`, `0`, `false`, an empty
//! message, the zero `Time` as an empty message, the zero `Quantity` as `"0"`); a Go pointer only
//! when the JSON has it (not null); `[]byte` only when present; repeated fields one occurrence
//! per item, unpacked (proto2); maps one `{key = 1, value = 2}` entry per key in sorted key
//! order (Go sorts the keys; a JSON object here iterates sorted).

use base64::Engine as _;
use serde_json::{Map, Value};

use super::schema::{Card, Field, Message, Ty};

/// Why a JSON value could not be encoded (stored objects are valid, so this is a server bug or
/// a kind without a table).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// A field's JSON value does not have the field's type.
    #[error("cannot encode {found} as {expected} in field {field:?} of {message}")]
    Type {
        /// The message.
        message: &'static str,
        /// The JSON name of the field.
        field: &'static str,
        /// What the table expects.
        expected: &'static str,
        /// What the JSON has.
        found: &'static str,
    },
    /// A time that is not RFC 3339.
    #[error("invalid time {0:?}")]
    Time(String),
    /// A base64 `[]byte` value that does not decode.
    #[error("invalid base64 in a []byte field")]
    Base64,
    /// The object has no protobuf message here (custom resources, tables).
    #[error("no protobuf encoding for kind {kind:?} in version {api_version:?}")]
    UnsupportedKind {
        /// The object's apiVersion.
        api_version: String,
        /// The object's kind.
        kind: String,
    },
}

/// Go's zero `time.Time` in Unix seconds.
const ZERO_TIME_SECONDS: i64 = -62_135_596_800;

const WIRE_VARINT: u8 = 0;
const WIRE_FIXED64: u8 = 1;
const WIRE_BYTES: u8 = 2;

/// Appends `v` as a base-128 varint.
pub(super) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a field key.
pub(super) fn put_key(out: &mut Vec<u8>, number: u32, wire: u8) {
    put_varint(out, (u64::from(number) << 3) | u64::from(wire));
}

/// Appends a length-delimited field with `bytes`.
pub(super) fn put_bytes(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_key(out, number, WIRE_BYTES);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Appends a length-delimited field whose content `body` writes, without a second buffer: one
/// byte is reserved for the length (most nested messages are shorter than 128 bytes) and the
/// content is moved when the length needs more.
pub(super) fn put_nested<E>(
    out: &mut Vec<u8>,
    number: u32,
    body: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
) -> Result<(), E> {
    put_key(out, number, WIRE_BYTES);
    let start = out.len();
    out.push(0);
    body(out)?;
    let len = out.len() - start - 1;
    if len < 0x80 {
        out[start] = len as u8;
    } else {
        let mut prefix = Vec::with_capacity(10);
        put_varint(&mut prefix, len as u64);
        out.splice(start..=start, prefix);
    }
    Ok(())
}

/// Encodes the JSON object `obj` as `message` into `out` (no key, no length).
pub(super) fn encode_message(
    message: &'static Message,
    obj: &Map<String, Value>,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    for field in message.fields {
        encode_field(message, field, obj, out)?;
    }
    Ok(())
}

fn present<'a>(obj: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    obj.get(name).filter(|v| !v.is_null())
}

fn encode_field(
    message: &'static Message,
    field: &'static Field,
    obj: &Map<String, Value>,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    let number = field.number;
    match (field.card, &field.ty) {
        // An embedded struct: its fields live in the parent's JSON object.
        (Card::Inline, Ty::Message(inner)) => {
            put_nested(out, number, |out| encode_message(inner, obj, out))
        }
        (_, Ty::Map(value_ty)) => {
            let Some(value) = present(obj, field.json) else {
                return Ok(());
            };
            let entries = value
                .as_object()
                .ok_or_else(|| mismatch(message, field, "object", value))?;
            for (key, value) in entries {
                put_nested(out, number, |out| {
                    put_bytes(out, 1, key.as_bytes());
                    encode_map_value(message, field, value_ty, value, out)
                })?;
            }
            Ok(())
        }
        (Card::Repeated, ty) => {
            let Some(value) = present(obj, field.json) else {
                return Ok(());
            };
            let items = value
                .as_array()
                .ok_or_else(|| mismatch(message, field, "array", value))?;
            for item in items {
                encode_item(message, field, ty, item, out)?;
            }
            Ok(())
        }
        (Card::Pointer, ty) => match present(obj, field.json) {
            Some(value) => encode_value(message, field, ty, value, out),
            None => Ok(()),
        },
        // A Go value: always on the wire.
        (_, ty) => match present(obj, field.json) {
            Some(value) => encode_value(message, field, ty, value, out),
            None => encode_zero(field, ty, out),
        },
    }
}

/// A map entry's value (`value = 2`): written always, except a nil `[]byte`.
fn encode_map_value(
    message: &'static Message,
    field: &'static Field,
    ty: &Ty,
    value: &Value,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    match (ty, value) {
        (Ty::Bytes, Value::Null) => Ok(()),
        (_, Value::Null) => encode_zero_number(2, ty, out),
        _ => encode_value_at(message, field, 2, ty, value, out),
    }
}

/// One item of a repeated field (a null item is the type's zero value, as Go decodes it).
fn encode_item(
    message: &'static Message,
    field: &'static Field,
    ty: &Ty,
    item: &Value,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    if item.is_null() {
        return encode_zero_number(field.number, ty, out);
    }
    encode_value_at(message, field, field.number, ty, item, out)
}

fn encode_value(
    message: &'static Message,
    field: &'static Field,
    ty: &Ty,
    value: &Value,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    encode_value_at(message, field, field.number, ty, value, out)
}

fn encode_zero(field: &'static Field, ty: &Ty, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    encode_zero_number(field.number, ty, out)
}

/// The zero value of `ty` as gogo writes a Go value field holding it.
fn encode_zero_number(number: u32, ty: &Ty, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    match ty {
        Ty::String => put_bytes(out, number, b""),
        Ty::Int | Ty::Bool => {
            put_key(out, number, WIRE_VARINT);
            out.push(0);
        }
        Ty::Double => {
            put_key(out, number, WIRE_FIXED64);
            out.extend_from_slice(&[0; 8]);
        }
        // A nil []byte is not written.
        Ty::Bytes => {}
        Ty::Message(inner) => {
            put_nested(out, number, |out| encode_message(inner, &Map::new(), out))?;
        }
        // The zero Time and an empty RawExtension marshal to nothing.
        Ty::Time | Ty::MicroTime | Ty::RawJson => put_bytes(out, number, b""),
        Ty::Quantity => put_nested(out, number, |out| {
            put_bytes(out, 1, b"0");
            Ok::<_, EncodeError>(())
        })?,
        Ty::IntOrString => put_bytes(out, number, &[0x08, 0x00, 0x10, 0x00, 0x1a, 0x00]),
        // `allows = false` is a value field.
        Ty::SchemaOrBool(_) => put_bytes(out, number, &[0x08, 0x00]),
        Ty::SchemaOrArray(_) | Ty::SchemaOrStringArray(_) | Ty::StringList => {
            put_bytes(out, number, b"")
        }
        Ty::Map(_) => {}
    }
    Ok(())
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn mismatch(
    message: &'static Message,
    field: &'static Field,
    expected: &'static str,
    found: &Value,
) -> EncodeError {
    EncodeError::Type {
        message: message.name,
        field: field.json,
        expected,
        found: json_type(found),
    }
}

/// An integer as gogo writes `uint64(x)` of an int32/int64 (negative values sign-extended).
fn int_bits(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .map(|i| i as u64)
            .or_else(|| n.as_u64())
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0)
                    .map(|f| f as i64 as u64)
            }),
        _ => None,
    }
}

/// Writes `value` of type `ty` as field `number` (present values; zero values included).
fn encode_value_at(
    message: &'static Message,
    field: &'static Field,
    number: u32,
    ty: &Ty,
    value: &Value,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    match ty {
        Ty::String => {
            let s = value
                .as_str()
                .ok_or_else(|| mismatch(message, field, "string", value))?;
            put_bytes(out, number, s.as_bytes());
        }
        Ty::Int => {
            let v = int_bits(value).ok_or_else(|| mismatch(message, field, "integer", value))?;
            put_key(out, number, WIRE_VARINT);
            put_varint(out, v);
        }
        Ty::Bool => {
            let v = value
                .as_bool()
                .ok_or_else(|| mismatch(message, field, "boolean", value))?;
            put_key(out, number, WIRE_VARINT);
            out.push(u8::from(v));
        }
        Ty::Double => {
            let v = value
                .as_f64()
                .ok_or_else(|| mismatch(message, field, "number", value))?;
            put_key(out, number, WIRE_FIXED64);
            out.extend_from_slice(&v.to_bits().to_le_bytes());
        }
        Ty::Bytes => {
            let s = value
                .as_str()
                .ok_or_else(|| mismatch(message, field, "base64 string", value))?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|_| EncodeError::Base64)?;
            put_bytes(out, number, &bytes);
        }
        Ty::Message(inner) => {
            let obj = value
                .as_object()
                .ok_or_else(|| mismatch(message, field, "object", value))?;
            put_nested(out, number, |out| encode_message(inner, obj, out))?;
        }
        Ty::Map(_) => return Err(mismatch(message, field, "map entry", value)),
        // A named string slice with its own message: `{repeated string items = 1}`.
        Ty::StringList => {
            let items = value
                .as_array()
                .ok_or_else(|| mismatch(message, field, "array of strings", value))?;
            put_nested(out, number, |out| {
                for item in items {
                    let s = item
                        .as_str()
                        .ok_or_else(|| mismatch(message, field, "string", item))?;
                    put_bytes(out, 1, s.as_bytes());
                }
                Ok::<_, EncodeError>(())
            })?;
        }
        Ty::Time | Ty::MicroTime => {
            let s = value
                .as_str()
                .ok_or_else(|| mismatch(message, field, "time", value))?;
            put_nested(out, number, |out| {
                encode_time(s, matches!(ty, Ty::MicroTime), out)
            })?;
        }
        Ty::Quantity => {
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                other => return Err(mismatch(message, field, "quantity", other)),
            };
            put_nested(out, number, |out| {
                put_bytes(out, 1, text.as_bytes());
                Ok::<_, EncodeError>(())
            })?;
        }
        Ty::IntOrString => {
            put_nested(out, number, |out| match value {
                // {type = 1, intVal = 2, strVal = 3}, all value fields.
                Value::String(s) => {
                    out.extend_from_slice(&[0x08, 0x01, 0x10, 0x00]);
                    put_bytes(out, 3, s.as_bytes());
                    Ok(())
                }
                Value::Number(_) => {
                    let v = int_bits(value)
                        .ok_or_else(|| mismatch(message, field, "int or string", value))?;
                    // intVal is an int32.
                    out.extend_from_slice(&[0x08, 0x00, 0x10]);
                    put_varint(out, i64::from(v as i32) as u64);
                    out.extend_from_slice(&[0x1a, 0x00]);
                    Ok(())
                }
                other => Err(mismatch(message, field, "int or string", other)),
            })?;
        }
        Ty::RawJson => {
            // The compact JSON bytes, as the JSON response carries them.
            let raw = serde_json::to_vec(value).unwrap_or_default();
            put_nested(out, number, |out| {
                put_bytes(out, 1, &raw);
                Ok::<_, EncodeError>(())
            })?;
        }
        Ty::SchemaOrArray(schema) => put_nested(out, number, |out| match value {
            // {schema = 1 (pointer), jSONSchemas = 2 (repeated)}
            Value::Object(obj) => put_nested(out, 1, |out| encode_message(schema, obj, out)),
            Value::Array(items) => {
                for item in items {
                    let obj = item
                        .as_object()
                        .ok_or_else(|| mismatch(message, field, "schema", item))?;
                    put_nested(out, 2, |out| encode_message(schema, obj, out))?;
                }
                Ok(())
            }
            other => Err(mismatch(message, field, "schema or array", other)),
        })?,
        Ty::SchemaOrBool(schema) => put_nested(out, number, |out| match value {
            // {allows = 1 (value), schema = 2 (pointer)}; a schema means allowed.
            Value::Bool(b) => {
                out.extend_from_slice(&[0x08, u8::from(*b)]);
                Ok(())
            }
            Value::Object(obj) => {
                out.extend_from_slice(&[0x08, 0x01]);
                put_nested(out, 2, |out| encode_message(schema, obj, out))
            }
            other => Err(mismatch(message, field, "schema or bool", other)),
        })?,
        Ty::SchemaOrStringArray(schema) => put_nested(out, number, |out| match value {
            // {schema = 1 (pointer), property = 2 (repeated)}
            Value::Object(obj) => put_nested(out, 1, |out| encode_message(schema, obj, out)),
            Value::Array(items) => {
                for item in items {
                    let s = item
                        .as_str()
                        .ok_or_else(|| mismatch(message, field, "string", item))?;
                    put_bytes(out, 2, s.as_bytes());
                }
                Ok(())
            }
            other => Err(mismatch(message, field, "schema or string array", other)),
        })?,
    }
    Ok(())
}

/// `{seconds = 1, nanos = 2}`, both always written. `metav1.Time` carries whole seconds (its
/// protobuf form drops the nanoseconds, as its JSON does); `MicroTime` microseconds.
fn encode_time(text: &str, micro: bool, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    if text.is_empty() {
        // Go reads "" as the zero time, which marshals to nothing.
        return Ok(());
    }
    let ts: jiff::Timestamp = text
        .parse()
        .map_err(|_| EncodeError::Time(text.to_string()))?;
    // The zero time (0001-01-01T00:00:00Z) marshals to nothing.
    if ts.as_second() == ZERO_TIME_SECONDS && ts.subsec_nanosecond() == 0 {
        return Ok(());
    }
    let nanos = if micro {
        ts.subsec_microsecond() * 1000
    } else {
        0
    };
    put_key(out, 1, WIRE_VARINT);
    put_varint(out, ts.as_second() as u64);
    put_key(out, 2, WIRE_VARINT);
    put_varint(out, i64::from(nanos) as u64);
    Ok(())
}
