//! Schema-driven decoding: a static table per message (field number → JSON name and type) and one
//! generic decoder that turns the wire fields into the object's JSON form.

use base64::Engine as _;
use serde_json::{Map, Value};

use super::DecodeError;
use super::wire::{FieldReader, WireValue, read_varint};

/// A protobuf message of the Kubernetes API, described by its fields (in field-number order, the
/// order gogo's generated `Marshal` writes them in).
#[derive(Debug)]
pub(super) struct Message {
    /// The message name (for error messages).
    pub name: &'static str,
    /// The fields the decoder knows; others are skipped, as the generated Go unmarshallers do.
    pub fields: &'static [Field],
}

/// One field of a message.
#[derive(Debug)]
pub(super) struct Field {
    /// The protobuf field number.
    pub(super) number: u32,
    /// The JSON name (empty for an inlined struct).
    pub(super) json: &'static str,
    /// The value type.
    pub(super) ty: Ty,
    /// How presence maps onto JSON and the wire.
    pub(super) card: Card,
}

/// How a field's presence maps onto JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Card {
    /// A Go value field with `omitempty` (or a struct value): always on the wire, so a zero
    /// value means "unset" and is omitted (the JSON `omitempty` a JSON client would have
    /// applied).
    Value,
    /// A Go pointer field: on the wire only when set, so zero values are kept (`replicas: 0`,
    /// `gracePeriodSeconds: 0`, `automountServiceAccountToken: false`).
    Pointer,
    /// A Go value field whose zero value JSON keeps (no `omitempty`, or a `Time`/`Quantity`/
    /// `IntOrString`/`RawExtension` value): always on the wire, decoded like a pointer.
    Kept,
    /// A repeated field (a JSON array).
    Repeated,
    /// An embedded Go struct whose JSON fields are inlined into the parent
    /// (e.g. `LocalObjectReference` in `SecretKeySelector`, `VolumeSource` in `Volume`).
    Inline,
}

/// The type of a field's value.
#[derive(Debug)]
pub(super) enum Ty {
    /// `string` (also typed strings such as `types.UID`).
    String,
    /// `bool`.
    Bool,
    /// `int32`/`int64` (both varints).
    Int,
    /// `float64` (a `double`, fixed 64 bits): a JSON number, integral values without a fraction
    /// as Go's encoder writes them.
    Double,
    /// `[]byte`: base64 in JSON.
    Bytes,
    /// An embedded message.
    Message(&'static Message),
    /// `map<string, V>`: repeated entries `{key = 1, value = 2}`, a JSON object.
    Map(&'static Ty),
    /// `metav1.Time` `{seconds, nanos}`: RFC 3339 in seconds.
    Time,
    /// `metav1.MicroTime`: RFC 3339 with six fractional digits.
    MicroTime,
    /// `resource.Quantity` `{string = 1}`: the string.
    Quantity,
    /// `intstr.IntOrString` `{type, intVal, strVal}`: a JSON number or string.
    IntOrString,
    /// `metav1.FieldsV1` / `runtime.RawExtension` `{raw = 1}` holding JSON bytes.
    RawJson,
    /// A named string slice with its own message `{items = 1}` (certificates `ExtraValue`): a
    /// JSON array of strings.
    StringList,
    /// apiextensions `JSONSchemaPropsOrArray` `{schema = 1, jSONSchemas = 2}`: the array when it
    /// has items, else the schema.
    SchemaOrArray(&'static Message),
    /// apiextensions `JSONSchemaPropsOrBool` `{allows = 1, schema = 2}`: the schema when set,
    /// else the boolean.
    SchemaOrBool(&'static Message),
    /// apiextensions `JSONSchemaPropsOrStringArray` `{schema = 1, property = 2}`: the strings
    /// when there are any, else the schema, else null.
    SchemaOrStringArray(&'static Message),
}

const fn field(number: u32, json: &'static str, ty: Ty, card: Card) -> Field {
    Field {
        number,
        json,
        ty,
        card,
    }
}

/// A Go value field (zero = unset).
pub(super) const fn val(number: u32, json: &'static str, ty: Ty) -> Field {
    field(number, json, ty, Card::Value)
}

/// A Go pointer field (present = set, zero kept).
pub(super) const fn ptr(number: u32, json: &'static str, ty: Ty) -> Field {
    field(number, json, ty, Card::Pointer)
}

/// A Go value field kept in JSON when zero.
pub(super) const fn keep(number: u32, json: &'static str, ty: Ty) -> Field {
    field(number, json, ty, Card::Kept)
}

/// A repeated field.
pub(super) const fn rep(number: u32, json: &'static str, ty: Ty) -> Field {
    field(number, json, ty, Card::Repeated)
}

/// A map field with values of type `value`.
pub(super) const fn map(number: u32, json: &'static str, value: &'static Ty) -> Field {
    field(number, json, Ty::Map(value), Card::Value)
}

/// An embedded struct inlined into its parent's JSON.
pub(super) const fn inline(number: u32, message: &'static Message) -> Field {
    field(number, "", Ty::Message(message), Card::Inline)
}

/// Decodes an encoded `message` into its JSON object.
pub(super) fn decode_message(
    message: &'static Message,
    buf: &[u8],
) -> Result<Map<String, Value>, DecodeError> {
    let mut out = Map::new();
    decode_into(message, buf, &mut out)?;
    Ok(out)
}

fn decode_into(
    message: &'static Message,
    buf: &[u8],
    out: &mut Map<String, Value>,
) -> Result<(), DecodeError> {
    let mut reader = FieldReader::new(buf);
    while let Some((number, value)) = reader.next_field()? {
        let Some(field) = message.fields.iter().find(|f| f.number == number) else {
            continue;
        };
        let mismatch = || DecodeError::WireType {
            message: message.name,
            field: number,
        };
        match (field.card, &field.ty) {
            (Card::Inline, Ty::Message(inner)) => {
                let WireValue::Bytes(bytes) = value else {
                    return Err(mismatch());
                };
                decode_into(inner, bytes, out)?;
            }
            (_, Ty::Map(value_ty)) => {
                let WireValue::Bytes(entry) = value else {
                    return Err(mismatch());
                };
                let (key, value) = decode_map_entry(value_ty, entry)?;
                let slot = out
                    .entry(field.json)
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(map) = slot {
                    map.insert(key, value);
                }
            }
            (Card::Repeated, ty) => {
                let slot = out
                    .entry(field.json)
                    .or_insert_with(|| Value::Array(Vec::new()));
                let Value::Array(items) = slot else {
                    continue;
                };
                match (ty, value) {
                    // Packed repeated scalars (accepted for robustness; gogo writes them unpacked).
                    (Ty::Int | Ty::Bool, WireValue::Bytes(mut packed)) => {
                        while !packed.is_empty() {
                            let v = read_varint(&mut packed)?;
                            items.push(scalar_varint(ty, v));
                        }
                    }
                    _ => {
                        // An item meaning "unset" (an empty apiextensions `JSON` in `enum`) is
                        // still an item: Go writes it as null.
                        let decoded = decode_value(ty, value).ok_or_else(mismatch)??;
                        items.push(decoded.unwrap_or(Value::Null));
                    }
                }
            }
            (card, ty) => match decode_value(ty, value).ok_or_else(mismatch)?? {
                Some(v) if card != Card::Value || !is_zero(&v) => {
                    out.insert(field.json.to_string(), v);
                }
                _ => {
                    out.remove(field.json);
                }
            },
        }
    }
    Ok(())
}

/// Decodes one value; `None` when the wire type does not fit the field type, `Ok(None)` for a
/// value that means "unset" (a zero `Time`, an empty `RawExtension`).
fn decode_value(ty: &Ty, value: WireValue<'_>) -> Option<Result<Option<Value>, DecodeError>> {
    Some(match (ty, value) {
        (Ty::Int | Ty::Bool, WireValue::Varint(v)) => Ok(Some(scalar_varint(ty, v))),
        (Ty::String, WireValue::Bytes(b)) => Ok(Some(Value::String(string(b)))),
        (Ty::Bytes, WireValue::Bytes(b)) => Ok(Some(Value::String(
            base64::engine::general_purpose::STANDARD.encode(b),
        ))),
        (Ty::Message(m), WireValue::Bytes(b)) => {
            decode_message(m, b).map(|o| Some(Value::Object(o)))
        }
        (Ty::Time, WireValue::Bytes(b)) => decode_time(b, false),
        (Ty::MicroTime, WireValue::Bytes(b)) => decode_time(b, true),
        (Ty::Quantity, WireValue::Bytes(b)) => decode_quantity(b),
        (Ty::IntOrString, WireValue::Bytes(b)) => decode_int_or_string(b),
        (Ty::RawJson, WireValue::Bytes(b)) => decode_raw_json(b),
        (Ty::StringList, WireValue::Bytes(b)) => decode_string_list(b),
        (Ty::Double, WireValue::Fixed64(bits)) => Ok(Some(double(f64::from_bits(bits)))),
        (Ty::SchemaOrArray(schema), WireValue::Bytes(b)) => decode_schema_or_array(schema, b),
        (Ty::SchemaOrBool(schema), WireValue::Bytes(b)) => decode_schema_or_bool(schema, b),
        (Ty::SchemaOrStringArray(schema), WireValue::Bytes(b)) => {
            decode_schema_or_string_array(schema, b)
        }
        _ => return None,
    })
}

fn scalar_varint(ty: &Ty, v: u64) -> Value {
    match ty {
        Ty::Bool => Value::Bool(v != 0),
        // int32 and int64 are both sign-extended to 64 bits on the wire.
        _ => Value::from(v as i64),
    }
}

/// Go's generated code converts bytes to a string without validating UTF-8; JSON cannot carry
/// invalid UTF-8, so invalid sequences become U+FFFD (what Go's JSON encoder writes too).
fn string(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_i64() == Some(0),
        _ => false,
    }
}

fn decode_map_entry(value_ty: &Ty, entry: &[u8]) -> Result<(String, Value), DecodeError> {
    let mut key = String::new();
    // A missing value is the zero value of its type (Go's generated unmarshaller).
    let mut value = match value_ty {
        Ty::String | Ty::Bytes | Ty::Quantity => Value::String(String::new()),
        Ty::Int => Value::from(0),
        Ty::Bool => Value::Bool(false),
        Ty::Message(_) => Value::Object(Map::new()),
        _ => Value::Null,
    };
    let mut reader = FieldReader::new(entry);
    while let Some((number, wire)) = reader.next_field()? {
        let mismatch = || DecodeError::WireType {
            message: "map entry",
            field: number,
        };
        match (number, wire) {
            (1, WireValue::Bytes(b)) => key = string(b),
            (1, _) => return Err(mismatch()),
            (2, wire) => {
                if let Some(v) = decode_value(value_ty, wire).ok_or_else(mismatch)?? {
                    value = v;
                }
            }
            _ => {}
        }
    }
    Ok((key, value))
}

fn decode_time(buf: &[u8], micro: bool) -> Result<Option<Value>, DecodeError> {
    let (mut seconds, mut nanos) = (0i64, 0i64);
    let mut reader = FieldReader::new(buf);
    while let Some((number, wire)) = reader.next_field()? {
        match (number, wire) {
            (1, WireValue::Varint(v)) => seconds = v as i64,
            (2, WireValue::Varint(v)) => nanos = i64::from(v as i32),
            (1 | 2, _) => {
                return Err(DecodeError::WireType {
                    message: "Time",
                    field: number,
                });
            }
            _ => {}
        }
    }
    // Go marshals the zero time as an empty message; its JSON form is null (omitted here).
    if buf.is_empty() {
        return Ok(None);
    }
    let nanos = i32::try_from(nanos).map_err(|_| DecodeError::InvalidTime)?;
    let ts = jiff::Timestamp::new(seconds, nanos).map_err(|_| DecodeError::InvalidTime)?;
    let whole = jiff::Timestamp::from_second(seconds).map_err(|_| DecodeError::InvalidTime)?;
    // metav1.Time serialises in whole seconds; MicroTime with exactly six digits.
    let text = if micro {
        let micros = ts.subsec_microsecond();
        let base = whole.strftime("%Y-%m-%dT%H:%M:%S").to_string();
        format!("{base}.{micros:06}Z")
    } else {
        whole.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
    };
    Ok(Some(Value::String(text)))
}

fn decode_quantity(buf: &[u8]) -> Result<Option<Value>, DecodeError> {
    let mut text = String::new();
    let mut reader = FieldReader::new(buf);
    while let Some((number, wire)) = reader.next_field()? {
        match (number, wire) {
            (1, WireValue::Bytes(b)) => text = string(b),
            (1, _) => {
                return Err(DecodeError::WireType {
                    message: "Quantity",
                    field: number,
                });
            }
            _ => {}
        }
    }
    Ok(Some(Value::String(text)))
}

fn decode_int_or_string(buf: &[u8]) -> Result<Option<Value>, DecodeError> {
    let (mut kind, mut int_val, mut str_val) = (0u64, 0i64, String::new());
    let mut reader = FieldReader::new(buf);
    while let Some((number, wire)) = reader.next_field()? {
        match (number, wire) {
            (1, WireValue::Varint(v)) => kind = v,
            (2, WireValue::Varint(v)) => int_val = i64::from(v as i32),
            (3, WireValue::Bytes(b)) => str_val = string(b),
            (1..=3, _) => {
                return Err(DecodeError::WireType {
                    message: "IntOrString",
                    field: number,
                });
            }
            _ => {}
        }
    }
    // intstr.Type: 0 = Int, 1 = String.
    Ok(Some(if kind == 1 {
        Value::String(str_val)
    } else {
        Value::from(int_val)
    }))
}

/// Go's JSON encoder writes integral floats without a fraction (`1`, not `1.0`); non-finite
/// values cannot occur in valid objects and become null.
fn double(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 1e18 {
        Value::from(v as i64)
    } else {
        serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
    }
}

fn wire_type(message: &'static str, field: u32) -> DecodeError {
    DecodeError::WireType { message, field }
}

fn decode_schema_or_array(
    schema: &'static Message,
    buf: &[u8],
) -> Result<Option<Value>, DecodeError> {
    let (mut one, mut many) = (None, Vec::new());
    let mut reader = FieldReader::new(buf);
    while let Some((number, wire)) = reader.next_field()? {
        match (number, wire) {
            (1, WireValue::Bytes(b)) => one = Some(Value::Object(decode_message(schema, b)?)),
            (2, WireValue::Bytes(b)) => many.push(Value::Object(decode_message(schema, b)?)),
            (1 | 2, _) => return Err(wire_type("JSONSchemaPropsOrArray", number)),
            _ => {}
        }
    }
    Ok(Some(if many.is_empty() {
        one.unwrap_or(Value::Null)
    } else {
        Value::Array(many)
    }))
}

fn decode_schema_or_bool(
    schema: &'static Message,
    buf: &[u8],
) -> Result<Option<Value>, DecodeError> {
    let (mut allows, mut one) = (false, None);
    let mut reader = FieldReader::new(buf);
    while let Some((number, wire)) = reader.next_field()? {
        match (number, wire) {
            (1, WireValue::Varint(v)) => allows = v != 0,
            (2, WireValue::Bytes(b)) => one = Some(Value::Object(decode_message(schema, b)?)),
            (1 | 2, _) => return Err(wire_type("JSONSchemaPropsOrBool", number)),
            _ => {}
        }
    }
    Ok(Some(one.unwrap_or(Value::Bool(allows))))
}

fn decode_schema_or_string_array(
    schema: &'static Message,
    buf: &[u8],
) -> Result<Option<Value>, DecodeError> {
    let (mut one, mut strings) = (None, Vec::new());
    let mut reader = FieldReader::new(buf);
    while let Some((number, wire)) = reader.next_field()? {
        match (number, wire) {
            (1, WireValue::Bytes(b)) => one = Some(Value::Object(decode_message(schema, b)?)),
            (2, WireValue::Bytes(b)) => strings.push(Value::String(string(b))),
            (1 | 2, _) => return Err(wire_type("JSONSchemaPropsOrStringArray", number)),
            _ => {}
        }
    }
    Ok(Some(if strings.is_empty() {
        one.unwrap_or(Value::Null)
    } else {
        Value::Array(strings)
    }))
}

fn decode_string_list(buf: &[u8]) -> Result<Option<Value>, DecodeError> {
    let mut items = Vec::new();
    let mut reader = FieldReader::new(buf);
    while let Some((number, wire)) = reader.next_field()? {
        match (number, wire) {
            (1, WireValue::Bytes(b)) => items.push(Value::String(string(b))),
            (1, _) => {
                return Err(DecodeError::WireType {
                    message: "ExtraValue",
                    field: number,
                });
            }
            _ => {}
        }
    }
    Ok(Some(Value::Array(items)))
}

fn decode_raw_json(buf: &[u8]) -> Result<Option<Value>, DecodeError> {
    let mut raw: &[u8] = &[];
    let mut reader = FieldReader::new(buf);
    while let Some((number, wire)) = reader.next_field()? {
        match (number, wire) {
            (1, WireValue::Bytes(b)) => raw = b,
            (1, _) => {
                return Err(DecodeError::WireType {
                    message: "RawExtension",
                    field: number,
                });
            }
            _ => {}
        }
    }
    if raw.is_empty() {
        return Ok(None);
    }
    serde_json::from_slice(raw)
        .map(Some)
        .map_err(|e| DecodeError::InvalidRawJson(e.to_string()))
}

/// Table mistakes a typo could make: a field number or JSON name used twice in one message
/// (inlined fields counted in their parent), or a map/inline field with the wrong shape.
#[cfg(test)]
pub(super) fn table_errors(root: &'static Message) -> Vec<String> {
    fn names(m: &'static Message, out: &mut Vec<&'static str>) {
        for f in m.fields {
            match (f.card, &f.ty) {
                (Card::Inline, Ty::Message(inner)) => names(inner, out),
                _ => out.push(f.json),
            }
        }
    }
    let mut errors = Vec::new();
    let mut seen: Vec<*const Message> = Vec::new();
    let mut stack = vec![root];
    while let Some(m) = stack.pop() {
        if seen.contains(&(m as *const Message)) {
            continue;
        }
        seen.push(m);
        let mut json = Vec::new();
        names(m, &mut json);
        for (i, f) in m.fields.iter().enumerate() {
            if m.fields[..i].iter().any(|g| g.number == f.number) {
                errors.push(format!("{}: field number {} twice", m.name, f.number));
            }
            if i > 0 && m.fields[i - 1].number > f.number {
                errors.push(format!("{}: field {} out of order", m.name, f.number));
            }
            if matches!(f.card, Card::Inline) != f.json.is_empty() {
                errors.push(format!(
                    "{}: field {} inline/name mismatch",
                    m.name, f.number
                ));
            }
            match &f.ty {
                Ty::Message(inner)
                | Ty::SchemaOrArray(inner)
                | Ty::SchemaOrBool(inner)
                | Ty::SchemaOrStringArray(inner) => stack.push(inner),
                Ty::Map(Ty::Message(inner)) => stack.push(inner),
                _ => {}
            }
        }
        for (i, name) in json.iter().enumerate() {
            if json[..i].contains(name) {
                errors.push(format!("{}: JSON name {name} twice", m.name));
            }
        }
    }
    errors
}

/// A fully populated encoding of a message, built from its table: every field set once (one
/// item per repeated field, one entry per map) with a distinct value, recursive messages nested
/// one level. Strings are `v<N>` and integers `N` (unique), IntOrString values `i<N>` / `900000+N`,
/// so a test can match each decoded JSON leaf to the field an independent decoder put it in.
#[cfg(test)]
pub(super) fn sample(message: &'static Message) -> Vec<u8> {
    Sampler::default().message(message)
}

#[cfg(test)]
#[derive(Default)]
struct Sampler {
    counter: u64,
    stack: Vec<*const Message>,
}

#[cfg(test)]
enum Payload {
    Varint(u64),
    Fixed64(u64),
    Bytes(Vec<u8>),
}

#[cfg(test)]
impl Sampler {
    fn next(&mut self) -> u64 {
        self.counter += 1;
        self.counter
    }

    fn message(&mut self, m: &'static Message) -> Vec<u8> {
        self.stack.push(m);
        let mut out = Vec::new();
        for f in m.fields {
            let payload = match &f.ty {
                Ty::Map(value_ty) => self.value(value_ty).map(|value| {
                    let mut entry = Vec::new();
                    let key = format!("k{}", self.next());
                    put(&mut entry, 1, Payload::Bytes(key.into_bytes()));
                    put(&mut entry, 2, value);
                    Payload::Bytes(entry)
                }),
                ty => self.value(ty),
            };
            if let Some(payload) = payload {
                put(&mut out, f.number, payload);
            }
        }
        self.stack.pop();
        out
    }

    /// A message may appear at most twice on the path (JSONSchemaProps nests itself).
    fn enter(&self, m: &'static Message) -> bool {
        self.stack.iter().filter(|p| std::ptr::eq(**p, m)).count() < 2
    }

    fn value(&mut self, ty: &Ty) -> Option<Payload> {
        let n = self.next();
        let bytes = |s: String| Some(Payload::Bytes(s.into_bytes()));
        match ty {
            Ty::String => bytes(format!("v{n}")),
            Ty::Bool => Some(Payload::Varint(1)),
            Ty::Int => Some(Payload::Varint(n)),
            Ty::Double => Some(Payload::Fixed64((n as f64 + 0.5).to_bits())),
            Ty::Bytes => bytes(format!("b{n}")),
            Ty::Message(m) => self.enter(m).then(|| Payload::Bytes(self.message(m))),
            Ty::Map(_) => None,
            Ty::Time | Ty::MicroTime => {
                let mut out = Vec::new();
                put(&mut out, 1, Payload::Varint(1_700_000_000 + n));
                if matches!(ty, Ty::MicroTime) {
                    put(&mut out, 2, Payload::Varint(n * 1000));
                }
                Some(Payload::Bytes(out))
            }
            Ty::Quantity => {
                let mut out = Vec::new();
                put(&mut out, 1, Payload::Bytes(format!("{n}m").into_bytes()));
                Some(Payload::Bytes(out))
            }
            Ty::IntOrString => {
                let mut out = Vec::new();
                if n.is_multiple_of(2) {
                    put(&mut out, 1, Payload::Varint(0));
                    put(&mut out, 2, Payload::Varint(900_000 + n));
                } else {
                    put(&mut out, 1, Payload::Varint(1));
                    put(&mut out, 3, Payload::Bytes(format!("i{n}").into_bytes()));
                }
                Some(Payload::Bytes(out))
            }
            Ty::RawJson => {
                let mut out = Vec::new();
                put(&mut out, 1, Payload::Bytes(br#"{"raw":"json"}"#.to_vec()));
                Some(Payload::Bytes(out))
            }
            Ty::SchemaOrBool(schema) => {
                let mut out = Vec::new();
                if self.enter(schema) {
                    put(&mut out, 2, Payload::Bytes(self.message(schema)));
                } else {
                    put(&mut out, 1, Payload::Varint(1));
                }
                Some(Payload::Bytes(out))
            }
            Ty::SchemaOrArray(schema) => self.enter(schema).then(|| {
                let mut out = Vec::new();
                put(&mut out, 2, Payload::Bytes(self.message(schema)));
                Payload::Bytes(out)
            }),
            Ty::SchemaOrStringArray(_) => {
                let mut out = Vec::new();
                put(&mut out, 2, Payload::Bytes(format!("v{n}").into_bytes()));
                Some(Payload::Bytes(out))
            }
            Ty::StringList => {
                let mut out = Vec::new();
                put(&mut out, 1, Payload::Bytes(format!("v{n}").into_bytes()));
                Some(Payload::Bytes(out))
            }
        }
    }
}

#[cfg(test)]
fn put(out: &mut Vec<u8>, number: u32, payload: Payload) {
    fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    let wire = match payload {
        Payload::Varint(_) => 0,
        Payload::Fixed64(_) => 1,
        Payload::Bytes(_) => 2,
    };
    varint(out, (u64::from(number) << 3) | wire);
    match payload {
        Payload::Varint(v) => varint(out, v),
        Payload::Fixed64(v) => out.extend(v.to_le_bytes()),
        Payload::Bytes(b) => {
            varint(out, b.len() as u64);
            out.extend(b);
        }
    }
}
