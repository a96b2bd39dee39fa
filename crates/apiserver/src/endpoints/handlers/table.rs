//! `Table` (`meta.k8s.io/v1` and `v1beta1`) and `PartialObjectMetadata(List)` views of
//! objects, built from the resource's [`Strategy`] (upstream `handlers/response.go` with the
//! resource's `TableConvertor`).

use serde_json::{Map, Value};

use super::options::IncludeObject;
use crate::registry::Strategy;
use crate::util::value::object;

/// The annotation of the bookmark that ends the initial events of a watch-list.
pub const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// `meta.k8s.io/<version>`.
fn meta_api_version(version: &str) -> String {
    format!("meta.k8s.io/{version}")
}

/// `PartialObjectMetadata` of `obj` in `meta.k8s.io/<version>`.
pub fn partial_object_metadata(obj: &Value, version: &str) -> Value {
    object([
        ("kind", Value::String("PartialObjectMetadata".into())),
        ("apiVersion", Value::String(meta_api_version(version))),
        (
            "metadata",
            obj.get("metadata")
                .cloned()
                .unwrap_or_else(|| Value::Object(Map::new())),
        ),
    ])
}

/// `PartialObjectMetadataList` of the list `list` in `meta.k8s.io/<version>`.
pub fn partial_object_metadata_list(list: &Value, version: &str) -> Value {
    let items: Vec<Value> = list
        .get("items")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|i| partial_object_metadata(i, version))
                .collect()
        })
        .unwrap_or_default();
    object([
        ("kind", Value::String("PartialObjectMetadataList".into())),
        ("apiVersion", Value::String(meta_api_version(version))),
        (
            "metadata",
            list.get("metadata")
                .cloned()
                .unwrap_or_else(|| Value::Object(Map::new())),
        ),
        ("items", Value::Array(items)),
    ])
}

/// Whether `obj` is the bookmark that ends a watch-list's initial events.
pub fn is_initial_events_end(obj: &Value) -> bool {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(INITIAL_EVENTS_END))
        .and_then(Value::as_str)
        == Some("true")
}

/// The `metadata` of a Table: a list's `resourceVersion`, `continue` and
/// `remainingItemCount`, or an object's `resourceVersion`.
fn table_metadata(obj: &Value, is_list: bool) -> Value {
    let mut meta = Map::new();
    let source = obj.get("metadata");
    let keys: &[&str] = if is_list {
        &["resourceVersion", "continue", "remainingItemCount"]
    } else {
        &["resourceVersion"]
    };
    for key in keys {
        if let Some(v) = source.and_then(|m| m.get(*key))
            && !v.is_null()
            && v != ""
        {
            meta.insert((*key).to_string(), v.clone());
        }
    }
    Value::Object(meta)
}

fn row(strategy: &dyn Strategy, obj: &Value, include: IncludeObject, version: &str) -> Value {
    let mut row = Map::new();
    row.insert("cells".into(), Value::Array(strategy.table_row(obj)));
    match include {
        IncludeObject::None => {}
        IncludeObject::Metadata => {
            row.insert("object".into(), partial_object_metadata(obj, version));
        }
        IncludeObject::Object => {
            row.insert("object".into(), obj.clone());
        }
    }
    Value::Object(row)
}

/// A `Table` of `obj` (every item of a list, or the one object). Without headers the
/// `columnDefinitions` are `null`, as in watch events after the first.
pub fn build_table(
    strategy: &dyn Strategy,
    obj: &Value,
    is_list: bool,
    include: IncludeObject,
    version: &str,
    headers: bool,
) -> Value {
    let rows: Vec<Value> = if is_list {
        obj.get("items")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .map(|i| row(strategy, i, include, version))
                    .collect()
            })
            .unwrap_or_default()
    } else {
        vec![row(strategy, obj, include, version)]
    };
    let columns = if headers {
        serde_json::to_value(strategy.table_columns()).unwrap_or(Value::Null)
    } else {
        Value::Null
    };
    object([
        ("kind", Value::String("Table".into())),
        ("apiVersion", Value::String(meta_api_version(version))),
        ("metadata", table_metadata(obj, is_list)),
        ("columnDefinitions", columns),
        ("rows", Value::Array(rows)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::ResourceInfo;
    use serde_json::json;

    struct Plain(ResourceInfo);
    impl Strategy for Plain {
        fn info(&self) -> &ResourceInfo {
            &self.0
        }
    }

    fn cm(name: &str) -> Value {
        json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": name, "resourceVersion": "5", "creationTimestamp": "2026-01-01T00:00:00Z"}, "data": {"a": "b"}})
    }

    #[test]
    fn table_of_a_list_with_metadata_rows() {
        let list = json!({"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "9", "continue": "tok"}, "items": [cm("a"), cm("b")]});
        let table = build_table(
            &Plain(ResourceInfo::default()),
            &list,
            true,
            IncludeObject::Metadata,
            "v1",
            true,
        );
        assert_eq!(table["kind"], "Table");
        assert_eq!(table["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(
            table["metadata"],
            json!({"resourceVersion": "9", "continue": "tok"})
        );
        assert_eq!(table["columnDefinitions"][0]["name"], "Name");
        assert_eq!(table["columnDefinitions"][1]["type"], "date");
        assert_eq!(
            table["rows"][1]["cells"],
            json!(["b", "2026-01-01T00:00:00Z"])
        );
        assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(table["rows"][0]["object"]["metadata"]["name"], "a");
    }

    #[test]
    fn include_object_variants_and_no_headers() {
        let s = Plain(ResourceInfo::default());
        let t = build_table(&s, &cm("a"), false, IncludeObject::None, "v1beta1", false);
        assert_eq!(t["apiVersion"], "meta.k8s.io/v1beta1");
        assert!(t["columnDefinitions"].is_null());
        assert!(t["rows"][0].get("object").is_none());
        assert_eq!(t["metadata"], json!({"resourceVersion": "5"}));
        let t = build_table(&s, &cm("a"), false, IncludeObject::Object, "v1", true);
        assert_eq!(t["rows"][0]["object"]["data"]["a"], "b");
    }

    #[test]
    fn partial_metadata_shapes() {
        let list = json!({"metadata": {"resourceVersion": "3"}, "items": [cm("a")]});
        let l = partial_object_metadata_list(&list, "v1");
        assert_eq!(l["kind"], "PartialObjectMetadataList");
        assert_eq!(l["items"][0]["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(l["items"][0]["metadata"]["name"], "a");
        assert!(l["items"][0].get("data").is_none());
    }
}
