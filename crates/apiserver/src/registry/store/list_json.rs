//! A `<Kind>List` written as compact JSON straight from the stored bytes of its items.
//!
//! Storage keeps every object as JSON with its `resourceVersion` set, so a list's items need
//! not be decoded into values and encoded again: an item whose top-level `kind` and
//! `apiVersion` are the served ones is copied as it is; any other item (another stored version,
//! a missing type) goes through the same decoding as [`Store::list`](super::Store). The result
//! is the same JSON document the value path writes (key order inside items aside), HTML-escaped
//! as Go's encoder does.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::status::ApiError;
use crate::storage::Object;
use crate::util::gojson;

/// The top-level type fields of a stored object; every other field is skipped unparsed (the
/// parse still checks that the whole item is valid JSON).
#[derive(Deserialize)]
struct TypeMetaView<'a> {
    #[serde(borrow, default)]
    kind: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default, rename = "apiVersion")]
    api_version: Option<std::borrow::Cow<'a, str>>,
}

/// Whether `value` is a JSON object whose `kind` and `apiVersion` are `kind` and
/// `api_version`, so it can be written into the list unchanged.
fn is_verbatim(value: &[u8], kind: &str, api_version: &str) -> bool {
    match serde_json::from_slice::<TypeMetaView<'_>>(value) {
        Ok(view) => {
            view.kind.as_deref() == Some(kind) && view.api_version.as_deref() == Some(api_version)
        }
        Err(_) => false,
    }
}

/// The served type of a list: the item kind and the group-version.
pub(crate) struct ListType<'a> {
    /// `ConfigMapList`.
    pub list_kind: &'a str,
    /// `ConfigMap`.
    pub kind: &'a str,
    /// `v1`, `apps/v1`.
    pub api_version: &'a str,
}

/// Writes the list with `metadata` and `items` as one line of JSON (Go's `json.Marshal` plus a
/// newline, keys in the order the value path writes them). `decode` turns an item that cannot
/// be copied into its served value.
pub(crate) fn write_list(
    ty: &ListType<'_>,
    metadata: &Map<String, Value>,
    items: &[Object],
    decode: impl Fn(&Object) -> Result<Value, ApiError>,
) -> Result<Vec<u8>, ApiError> {
    let capacity = items.iter().map(|o| o.value.len() + 1).sum::<usize>() + 256;
    let mut out = String::with_capacity(capacity);
    out.push_str("{\"apiVersion\":");
    push_json(&mut out, ty.api_version)?;
    out.push_str(",\"items\":[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match std::str::from_utf8(&item.value) {
            Ok(text) if is_verbatim(&item.value, ty.kind, ty.api_version) => out.push_str(text),
            _ => push_json(&mut out, &decode(item)?)?,
        }
    }
    out.push_str("],\"kind\":");
    push_json(&mut out, ty.list_kind)?;
    out.push_str(",\"metadata\":");
    push_json(&mut out, metadata)?;
    out.push('}');
    let mut out = gojson::escape_html(out);
    out.push('\n');
    Ok(out.into_bytes())
}

fn push_json<T: serde::Serialize + ?Sized>(out: &mut String, value: &T) -> Result<(), ApiError> {
    out.push_str(&serde_json::to_string(value).map_err(ApiError::internal)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use serde_json::json;

    fn object(value: &str) -> Object {
        Object {
            key: "/registry/configmaps/ns/a".into(),
            value: Bytes::copy_from_slice(value.as_bytes()),
            resource_version: 7,
        }
    }

    const TYPE: ListType<'static> = ListType {
        list_kind: "ConfigMapList",
        kind: "ConfigMap",
        api_version: "v1",
    };

    fn decode(o: &Object) -> Result<Value, ApiError> {
        let mut v: Value = serde_json::from_slice(&o.value).map_err(ApiError::internal)?;
        v["kind"] = json!("ConfigMap");
        v["apiVersion"] = json!("v1");
        Ok(v)
    }

    #[test]
    fn matches_the_value_path_and_decodes_only_items_of_another_type() {
        let items = vec![
            object(
                r#"{"apiVersion":"v1","data":{"a":"<&>"},"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"7"}}"#,
            ),
            object(r#"{"metadata":{"name":"b","resourceVersion":"8"}}"#),
            object(r#"{"apiVersion":"v0","kind":"ConfigMap","metadata":{"name":"c"}}"#),
        ];
        let mut meta = Map::new();
        meta.insert("resourceVersion".into(), json!("9"));
        let bytes = write_list(&TYPE, &meta, &items, decode).unwrap();
        let expected = json!({
            "apiVersion": "v1",
            "kind": "ConfigMapList",
            "metadata": {"resourceVersion": "9"},
            "items": items.iter().map(|o| decode(o).unwrap()).collect::<Vec<_>>(),
        });
        assert_eq!(bytes, gojson::to_line(&expected).unwrap());
        assert!(
            String::from_utf8(bytes)
                .unwrap()
                .contains(r#""a":"\u003c\u0026\u003e""#)
        );
    }

    #[test]
    fn an_item_that_is_not_json_is_an_internal_error_not_a_broken_document() {
        let items = vec![object("{not json")];
        let err = write_list(&TYPE, &Map::new(), &items, decode).unwrap_err();
        assert_eq!(err.0.code, 500);
    }

    #[test]
    fn verbatim_needs_both_type_fields_at_the_top_level() {
        assert!(is_verbatim(
            br#"{"kind":"ConfigMap","apiVersion":"v1"}"#,
            "ConfigMap",
            "v1"
        ));
        assert!(!is_verbatim(
            br#"{"metadata":{"kind":"ConfigMap","apiVersion":"v1"}}"#,
            "ConfigMap",
            "v1"
        ));
        assert!(!is_verbatim(br#"{"kind":"ConfigMap"}"#, "ConfigMap", "v1"));
        assert!(!is_verbatim(br#"["kind"]"#, "ConfigMap", "v1"));
    }
}
