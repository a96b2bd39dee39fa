use serde_json::json;

use super::*;
use crate::endpoints::patch::NoMeta;

#[test]
fn no_meta_behaves_like_merge_patch() {
    let original = json!({"a": 1, "b": {"c": 1, "d": 2}, "l": [1, 2]});
    let patch = json!({"a": null, "b": {"c": null, "e": 3}, "l": [3]});
    let result = apply_strategic_merge_patch(&original, &patch, &NoMeta).unwrap();
    assert_eq!(result, json!({"b": {"d": 2, "e": 3}, "l": [3]}));
}
