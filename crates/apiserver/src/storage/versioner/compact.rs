//! The fast path of [`super::rewrite`] for compact JSON (what our own encoder and client-go
//! send): the members are located with a borrowing, validating parse and the new bytes are
//! spliced together, with no per-member allocation and no re-encoding. It returns `None`
//! whenever its output could differ from the general path's (whitespace between the members of
//! the object or of its `metadata`, escaped member names, `metadata` missing, `null` or not an
//! object), and the caller falls back to the general path.

use std::fmt;

use bytes::Bytes;
use serde::Deserializer;
use serde::de::{MapAccess, Visitor};
use serde_json::value::RawValue;

use super::FIELDS_BEFORE_RV;

/// A member of a JSON object, as byte offsets into the whole document.
#[derive(Clone, Copy)]
struct Member {
    /// Start of the name (after its opening quote).
    name: usize,
    /// Length of the name.
    name_len: usize,
    /// Start of the value.
    value: usize,
    /// End of the value (exclusive).
    end: usize,
}

/// Parses the object `raw` (a slice of `doc`) into its members, borrowing: member names with
/// escapes fail the parse (they cannot be borrowed), which sends the caller to the general path.
fn members(doc: &[u8], raw: &[u8]) -> Option<Vec<Member>> {
    struct V(usize);
    impl<'de> Visitor<'de> for V {
        type Value = Vec<Member>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<Member>, A::Error> {
            let base = self.0;
            let mut out = Vec::with_capacity(16);
            while let Some((k, v)) = map.next_entry::<&'de str, &'de RawValue>()? {
                let name = (k.as_ptr() as usize).wrapping_sub(base);
                let value = (v.get().as_ptr() as usize).wrapping_sub(base);
                out.push(Member {
                    name,
                    name_len: k.len(),
                    value,
                    end: value + v.get().len(),
                });
            }
            Ok(out)
        }
    }
    let mut de = serde_json::Deserializer::from_slice(raw);
    let out = de.deserialize_map(V(doc.as_ptr() as usize)).ok()?;
    de.end().ok()?;
    Some(out)
}

/// Whether the members fill `doc[start..end]` exactly as `{"name":value,...}` with nothing
/// between the tokens (so that splicing reproduces what re-encoding would).
fn is_compact(doc: &[u8], start: usize, end: usize, members: &[Member]) -> bool {
    if doc.get(start) != Some(&b'{') {
        return false;
    }
    let mut pos = start + 1;
    for (i, m) in members.iter().enumerate() {
        if i > 0 {
            if doc.get(pos) != Some(&b',') {
                return false;
            }
            pos += 1;
        }
        let close = m.name + m.name_len;
        if m.name != pos + 1
            || doc.get(pos) != Some(&b'"')
            || doc.get(close) != Some(&b'"')
            || doc.get(close + 1) != Some(&b':')
            || m.value != close + 2
        {
            return false;
        }
        pos = m.end;
    }
    pos + 1 == end && doc.get(pos) == Some(&b'}')
}

fn name<'a>(doc: &'a [u8], m: &Member) -> &'a [u8] {
    &doc[m.name..m.name + m.name_len]
}

/// `rewrite(doc, rv)` for compact documents; `None` when the general path must decide.
pub(super) fn rewrite(doc: &[u8], rv: Option<u64>) -> Option<Bytes> {
    let top = members(doc, doc)?;
    if !is_compact(doc, 0, doc.len(), &top) {
        return None;
    }
    let meta = top.iter().find(|m| name(doc, m) == b"metadata")?;
    let meta_raw = &doc[meta.value..meta.end];
    if meta_raw.first() != Some(&b'{') {
        return None;
    }
    let fields = members(doc, meta_raw)?;
    if !is_compact(doc, meta.value, meta.end, &fields) {
        return None;
    }
    let existing = fields
        .iter()
        .position(|m| name(doc, m) == b"resourceVersion");
    // Each member's bytes, from its opening quote to the end of its value.
    let member_bytes = |m: &Member| &doc[m.name - 1..m.end];
    let mut out = Vec::with_capacity(doc.len() + 40);
    out.extend_from_slice(&doc[..meta.value]);
    out.push(b'{');
    let mut first = true;
    let mut push = |out: &mut Vec<u8>, bytes: &[u8]| {
        if !first {
            out.push(b',');
        }
        first = false;
        out.extend_from_slice(bytes);
    };
    let new_member = rv.map(|rv| format!("\"resourceVersion\":\"{rv}\""));
    match (existing, &new_member) {
        (None, None) => return Some(Bytes::copy_from_slice(doc)),
        (Some(at), _) => {
            for (i, m) in fields.iter().enumerate() {
                if i != at {
                    push(&mut out, member_bytes(m));
                } else if let Some(new) = &new_member {
                    push(&mut out, new.as_bytes());
                }
            }
        }
        (None, Some(new)) => {
            let at = fields
                .iter()
                .rposition(|m| {
                    std::str::from_utf8(name(doc, m)).is_ok_and(|n| FIELDS_BEFORE_RV.contains(&n))
                })
                .map(|p| p + 1)
                .unwrap_or(0);
            for (i, m) in fields.iter().enumerate() {
                if i == at {
                    push(&mut out, new.as_bytes());
                }
                push(&mut out, member_bytes(m));
            }
            if at == fields.len() {
                push(&mut out, new.as_bytes());
            }
        }
    }
    out.push(b'}');
    out.extend_from_slice(&doc[meta.end..]);
    Some(Bytes::from(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast path agrees with the general one wherever it answers, and answers on compact
    /// documents.
    #[test]
    fn agrees_with_the_general_path() {
        let cases: &[(&str, bool)] = &[
            (
                r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","uid":"u","labels":{"x":"y"}},"data":{"b":"1","a":"2"}}"#,
                true,
            ),
            (
                r#"{"metadata":{"name":"a","resourceVersion":"7","labels":{"a":"b"}},"x":1}"#,
                true,
            ),
            (r#"{"metadata":{"resourceVersion":"7"}}"#, true),
            (r#"{"metadata":{}}"#, true),
            (
                r#"{"metadata":{"labels":{}},"spec":{"a":[1,2,{"b":null}]}}"#,
                true,
            ),
            (
                r#"{"metadata":{"resourceVersion":"1","name":"a","resourceVersion":"2"}}"#,
                true,
            ),
            (r#"{"metadata":{"uid":"u"},"metadata":{"name":"b"}}"#, true),
            (
                r#"{"a":"x\"y","metadata":{"name":"é\u00e9","generateName":"g"}}"#,
                true,
            ),
            (r#"{"metadata":{"name":"a", "resourceVersion":"3"}}"#, false),
            (r#"{ "metadata":{"name":"a"}}"#, false),
            (r#"{"metadata":{"name":"a"}} "#, false),
            (r#"{"metadata" :{"name":"a"}}"#, false),
            (r#"{"metadata":{"na\u006de":"a"}}"#, false),
            (r#"{"metadata":null}"#, false),
            (r#"{"metadata":"x"}"#, false),
            (r#"{"kind":"X","spec":{}}"#, false),
            (r#"{"metadata":{"name":"a"},"spec":{"a": [1, 2]}}"#, true),
            (r#"{"metadata":{"name":"a"},"spec":{"a":[1,}}"#, false),
            (r#"{"metadata":{"name":"a"}}x"#, false),
            (r#"[1]"#, false),
            (r#"{}"#, false),
        ];
        for (doc, fast) in cases {
            for rv in [None, Some(0), Some(42), Some(u64::MAX)] {
                let got = rewrite(doc.as_bytes(), rv);
                assert_eq!(got.is_some(), *fast, "{doc} {rv:?}");
                if let Some(got) = got {
                    let want = super::super::rewrite_general(doc.as_bytes(), rv).unwrap();
                    assert_eq!(
                        std::str::from_utf8(&got).unwrap(),
                        std::str::from_utf8(&want).unwrap(),
                        "{doc} {rv:?}"
                    );
                }
            }
        }
    }
}
