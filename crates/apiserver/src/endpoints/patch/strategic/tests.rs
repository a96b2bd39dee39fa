use serde_json::{Value, json};

use super::*;
use crate::endpoints::patch::{NoMeta, SchemaPatchMeta};

mod kubectl;
mod upstream_table;

use upstream_table::UPSTREAM_CASES;

/// The schema description of upstream's test type `mergeItem` (and `retainKeysMergeItem`).
fn merge_item_document() -> Value {
    json!({
        "definitions": {
            "mergeItem": {"properties": {
                "name": {"type": "string"},
                "value": {"type": "string"},
                "other": {"type": "string"},
                "mergingList": {
                    "type": "array",
                    "items": {"$ref": "#/definitions/mergeItem"},
                    "x-kubernetes-patch-strategy": "merge",
                    "x-kubernetes-patch-merge-key": "name"
                },
                "nonMergingList": {"type": "array", "items": {"$ref": "#/definitions/mergeItem"}},
                "mergingIntList": {
                    "type": "array",
                    "items": {"type": "integer"},
                    "x-kubernetes-patch-strategy": "merge"
                },
                "nonMergingIntList": {"type": "array", "items": {"type": "integer"}},
                "mergeItemPtr": {
                    "allOf": [{"$ref": "#/definitions/mergeItem"}],
                    "x-kubernetes-patch-strategy": "merge",
                    "x-kubernetes-patch-merge-key": "name"
                },
                "simpleMap": {"type": "object", "additionalProperties": {"type": "string"}},
                "replacingItem": {"type": "object", "x-kubernetes-patch-strategy": "replace"},
                "jsonItem": {},
                "retainKeysMap": {
                    "allOf": [{"$ref": "#/definitions/retainKeysMergeItem"}],
                    "x-kubernetes-patch-strategy": "retainKeys"
                },
                "retainKeysMergingList": {
                    "type": "array",
                    "items": {"$ref": "#/definitions/mergeItem"},
                    "x-kubernetes-patch-strategy": "merge,retainKeys",
                    "x-kubernetes-patch-merge-key": "name"
                }
            }},
            "retainKeysMergeItem": {"properties": {
                "name": {"type": "string"},
                "value": {"type": "string"},
                "other": {"type": "string"},
                "simpleMap": {"type": "object", "additionalProperties": {"type": "string"}},
                "mergingIntList": {
                    "type": "array",
                    "items": {"type": "integer"},
                    "x-kubernetes-patch-strategy": "merge"
                },
                "mergingList": {
                    "type": "array",
                    "items": {"$ref": "#/definitions/mergeItem"},
                    "x-kubernetes-patch-strategy": "merge",
                    "x-kubernetes-patch-merge-key": "name"
                },
                "nonMergingList": {"type": "array", "items": {"$ref": "#/definitions/mergeItem"}}
            }}
        }
    })
}

#[test]
fn no_meta_behaves_like_merge_patch() {
    let original = json!({"a": 1, "b": {"c": 1, "d": 2}, "l": [1, 2]});
    let patch = json!({"a": null, "b": {"c": null, "e": 3}, "l": [3]});
    let result = apply_strategic_merge_patch(&original, &patch, &NoMeta).unwrap();
    assert_eq!(result, json!({"b": {"d": 2, "e": 3}, "l": [3]}));
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

fn apply_to_merge_item(original: Value, patch: Value) -> Result<Value, PatchError> {
    let doc = merge_item_document();
    let meta = SchemaPatchMeta::for_definition(&doc, "mergeItem").unwrap();
    apply_strategic_merge_patch(&original, &patch, &meta)
}

fn error_of(original: Value, patch: Value) -> String {
    apply_to_merge_item(original, patch)
        .unwrap_err()
        .to_string()
}

#[test]
fn upstream_application_cases() {
    let doc = merge_item_document();
    let meta = SchemaPatchMeta::for_definition(&doc, "mergeItem").unwrap();
    for case in UPSTREAM_CASES {
        let result = apply_strategic_merge_patch(&parse(case.original), &parse(case.patch), &meta);
        if case.error.is_empty() {
            assert_eq!(
                result.as_ref().ok(),
                Some(&parse(case.expected)),
                "{}: got {result:?}",
                case.description
            );
        } else {
            let message = result.err().map(|e| e.to_string()).unwrap_or_default();
            assert!(
                message.contains(case.error),
                "{}: expected an error containing {:?}, got {message:?}",
                case.description,
                case.error
            );
        }
    }
}

#[test]
fn documents_must_be_objects() {
    assert_eq!(
        apply_strategic_merge_patch(&json!([]), &json!({}), &NoMeta),
        Err(PatchError::BadJsonDoc)
    );
    assert_eq!(
        apply_strategic_merge_patch(&json!({}), &json!("x"), &NoMeta),
        Err(PatchError::BadJsonDoc)
    );
    assert_eq!(
        apply_strategic_merge_patch(&Value::Null, &json!({"a": 1}), &NoMeta),
        Ok(json!({"a": 1}))
    );
    assert_eq!(
        apply_strategic_merge_patch(&json!({"a": 1}), &Value::Null, &NoMeta),
        Ok(json!({"a": 1}))
    );
}

#[test]
fn unknown_patch_type_in_map() {
    assert_eq!(
        error_of(
            json!({"mergeItemPtr": {"name": "a"}}),
            json!({"mergeItemPtr": {"$patch": "bogus", "name": "a"}})
        ),
        "unknown patch type: bogus in map: map[$patch:bogus name:a]"
    );
    // `merge` is no map directive either.
    assert_eq!(
        error_of(json!({}), json!({"$patch": "merge"})),
        "unknown patch type: merge in map: map[$patch:merge]"
    );
}

#[test]
fn unknown_patch_type_in_list() {
    assert_eq!(
        error_of(
            json!({"mergingList": [{"name": "a"}]}),
            json!({"mergingList": [{"$patch": 1, "name": "a"}]})
        ),
        "unknown patch type: %!s(float64=1) in map: map[$patch:1 name:a]"
    );
    assert_eq!(
        error_of(
            json!({"mergingList": [{"name": "a"}]}),
            json!({"mergingList": [{"$patch": "merge"}]})
        ),
        "merging lists cannot yet be specified in the patch"
    );
}

#[test]
fn merge_key_is_required_in_merging_lists() {
    assert_eq!(
        error_of(
            json!({"mergingList": [{"name": "a"}]}),
            json!({"mergingList": [{"value": "b"}]})
        ),
        "map: map[value:b] does not contain declared merge key: name"
    );
    assert_eq!(
        error_of(
            json!({"mergingList": [{"name": "a"}]}),
            json!({"mergingList": [{"$patch": "delete", "value": "a"}]})
        ),
        "map: map[$patch:delete value:a] does not contain declared merge key: name"
    );
    // The live items are checked too when the merged list is ordered.
    assert_eq!(
        error_of(
            json!({"mergingList": [{"value": "x"}]}),
            json!({"mergingList": [{"name": "a"}]})
        ),
        "map: map[value:x] does not contain declared merge key: name"
    );
}

#[test]
fn merging_lists_of_maps_need_a_declared_merge_key() {
    let schema = json!({"properties": {"items": {
        "type": "array",
        "items": {"type": "object"},
        "x-kubernetes-patch-strategy": "merge"
    }}});
    let meta = SchemaPatchMeta::new(&schema).unwrap();
    let err = apply_strategic_merge_patch(
        &json!({"items": [{"a": 1}]}),
        &json!({"items": [{"a": 2}]}),
        &meta,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot merge lists without merge key for object"
    );
}

#[test]
fn merged_list_elements_must_share_a_type() {
    assert_eq!(
        error_of(
            json!({"mergingIntList": [1]}),
            json!({"mergingIntList": ["a"]})
        ),
        "list element types are not identical: [[1] [a]]"
    );
    assert_eq!(
        error_of(
            json!({"mergingIntList": [[1]]}),
            json!({"mergingIntList": [[2]]})
        ),
        "lists of lists are not supported"
    );
}

#[test]
fn malformed_directives() {
    assert_eq!(
        error_of(
            json!({"mergingIntList": [1]}),
            json!({"$deleteFromPrimitiveList": [1]})
        ),
        "invalid patch format of primitive list"
    );
    assert_eq!(
        error_of(json!({}), json!({"$setElementOrderX": []})),
        "invalid patch format of setElementOrder list"
    );
    assert_eq!(
        error_of(json!({}), json!({"$setElementOrder/mergingList": {}})),
        "expected a []interface {}, but received a map[string]interface {}"
    );
    assert_eq!(
        error_of(
            json!({"retainKeysMap": {"name": "a"}}),
            json!({"retainKeysMap": {"$retainKeys": "name", "name": "a"}})
        ),
        "invalid patch format of retainKeys"
    );
    assert_eq!(
        error_of(
            json!({"retainKeysMap": {"name": "a"}}),
            json!({"retainKeysMap": {"$retainKeys": ["name"], "value": "b"}})
        ),
        "invalid patch format of retainKeys"
    );
}

#[test]
fn set_element_order_must_agree_with_the_patch() {
    assert_eq!(
        error_of(
            json!({"mergingList": [{"name": "a"}, {"name": "b"}]}),
            json!({
                "$setElementOrder/mergingList": [{"name": "a"}, {"name": "b"}],
                "mergingList": [{"name": "b"}, {"name": "a"}]
            })
        ),
        "The order in patch list:\n[map[name:b] map[name:a]]\n doesn't match \
         $setElementOrder list:\n[map[name:a] map[name:b]]\n"
    );
}

#[test]
fn numbers_compare_by_value() {
    // Go decodes every JSON number as float64, so 1 and 1.0 are the same merge key.
    let result = apply_to_merge_item(
        json!({"mergingList": [{"name": 1, "value": "a"}], "mergingIntList": [1, 2]}),
        json!({"mergingList": [{"name": 1.0, "other": "b"}], "mergingIntList": [2.0, 3]}),
    );
    assert_eq!(
        result,
        Ok(json!({
            "mergingList": [{"name": 1.0, "value": "a", "other": "b"}],
            "mergingIntList": [1, 2, 3]
        }))
    );
}

/// Upstream's `TestUnknownField`: fields no schema knows merge as maps and replace as lists.
#[test]
fn unknown_fields_merge_like_json() {
    let original = json!({"array": [1, 2, 3], "complex": {"nested": true}, "name": "foo"});
    let cases = [
        (
            json!({"complex_nullable": {"key": null}}),
            json!({"array": [1, 2, 3], "complex": {"nested": true}, "complex_nullable": {},
                   "name": "foo"}),
        ),
        (
            json!({"complex_nullable": {"key": {"keynotnull": "value", "keynull": null}}}),
            json!({"array": [1, 2, 3], "complex": {"nested": true},
                   "complex_nullable": {"key": {"keynotnull": "value"}}, "name": "foo"}),
        ),
        (
            json!({"array": [1], "complex": {"nested": null, "new": 1}, "scalar": true}),
            json!({"array": [1], "complex": {"new": 1}, "name": "foo", "scalar": true}),
        ),
        (
            json!({"array": null, "complex": null, "name": null}),
            json!({}),
        ),
    ];
    let doc = merge_item_document();
    let meta = SchemaPatchMeta::for_definition(&doc, "mergeItem").unwrap();
    for (patch, expected) in cases {
        assert_eq!(
            apply_strategic_merge_patch(&original, &patch, &NoMeta),
            Ok(expected.clone())
        );
        assert_eq!(
            apply_strategic_merge_patch(&original, &patch, &meta),
            Ok(expected)
        );
    }
}

#[test]
fn inputs_are_not_modified() {
    let original = json!({"mergingList": [{"name": "a"}, {"name": "b"}]});
    let patch = json!({"mergingList": [{"$patch": "delete", "name": "a"}]});
    let (original_copy, patch_copy) = (original.clone(), patch.clone());
    let result = apply_to_merge_item(original.clone(), patch.clone());
    assert_eq!(result, Ok(json!({"mergingList": [{"name": "b"}]})));
    assert_eq!((original, patch), (original_copy, patch_copy));
}
