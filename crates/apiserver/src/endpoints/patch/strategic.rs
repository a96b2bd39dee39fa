//! Strategic merge patch application (`application/strategic-merge-patch+json`).
//!
//! A strategic merge patch is a JSON merge patch whose lists can merge instead of being
//! replaced, steered by the field's [`PatchMeta`] and by directives in the patch:
//!
//! * `"$patch": "replace"` / `"delete"` in a map replaces or empties it; in an item of a
//!   merging list, `replace` replaces the list and `delete` removes the item with that key;
//! * `"$deleteFromPrimitiveList/<field>": [..]` removes values from a merging primitive list;
//! * `"$setElementOrder/<field>": [..]` fixes the order of a merging list's items;
//! * `"$retainKeys": [..]` clears the keys of a map that the list does not name.
//!
//! This is the server side of upstream's `StrategicMergeMapPatch` (parallel lists merged,
//! unmatched `null`s ignored); creating patches is the client's business.

use std::cmp::Ordering;

use serde_json::{Map, Value};

use super::PatchError;
use super::gofmt::{go_list, go_lists, go_string_verb, go_type_name, go_value};
use super::meta::PatchMeta;

const DIRECTIVE_MARKER: &str = "$patch";
const DELETE_DIRECTIVE: &str = "delete";
const REPLACE_DIRECTIVE: &str = "replace";
const MERGE_DIRECTIVE: &str = "merge";
const RETAIN_KEYS_DIRECTIVE: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST_PREFIX: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER_PREFIX: &str = "$setElementOrder";

const GO_MAP: &str = "map[string]interface {}";
const GO_SLICE: &str = "[]interface {}";

/// Applies the strategic merge `patch` to `original`, whose type `meta` describes.
///
/// Both documents must be JSON objects (`null` counts as an empty object, as in upstream).
/// The result is a new object; neither input is modified.
pub fn apply_strategic_merge_patch(
    original: &Value,
    patch: &Value,
    meta: &dyn PatchMeta,
) -> Result<Value, PatchError> {
    let original = as_document(original)?;
    let patch = as_document(patch)?;
    merge_map(original, patch, meta).map(Value::Object)
}

/// The object a document decodes to, as Go's `json.Unmarshal` into a map does.
fn as_document(value: &Value) -> Result<Map<String, Value>, PatchError> {
    match value {
        Value::Object(map) => Ok(map.clone()),
        Value::Null => Ok(Map::new()),
        _ => Err(PatchError::BadJsonDoc),
    }
}

/// Merges `patch` into `original`, field by field.
fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    schema: &dyn PatchMeta,
) -> Result<Map<String, Value>, PatchError> {
    if let Some(directive) = patch.get(DIRECTIVE_MARKER) {
        let directive = directive.clone();
        return map_directive(&directive, patch);
    }
    apply_retain_keys(&mut original, &mut patch)?;
    apply_set_element_orders(&mut original, &mut patch, schema)?;
    for (key, patch_value) in patch {
        merge_field(&mut original, key, patch_value, schema)?;
    }
    Ok(original)
}

/// A map carrying `$patch`: `replace` keeps just the patch, `delete` empties the map.
fn map_directive(
    directive: &Value,
    mut patch: Map<String, Value>,
) -> Result<Map<String, Value>, PatchError> {
    match directive.as_str() {
        Some(REPLACE_DIRECTIVE) => {
            patch.remove(DIRECTIVE_MARKER);
            Ok(patch)
        }
        Some(DELETE_DIRECTIVE) => Ok(Map::new()),
        _ => Err(bad_patch_type(directive, &patch)),
    }
}

/// Merges one patch entry into `original`.
fn merge_field(
    original: &mut Map<String, Value>,
    key: String,
    patch_value: Value,
    schema: &dyn PatchMeta,
) -> Result<(), PatchError> {
    let (key, is_delete_list) = if key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX) {
        (
            strip_directive_prefix(&key, DELETE_FROM_PRIMITIVE_LIST_PREFIX)?.to_owned(),
            true,
        )
    } else {
        (key, false)
    };
    // `null` deletes; a `null` for an absent key is ignored (server-side application).
    if patch_value.is_null() {
        original.remove(&key);
        return Ok(());
    }
    let Some(original_value) = original.remove(&key) else {
        if !is_delete_list {
            set_from_patch(original, key, patch_value);
        }
        return Ok(());
    };
    if go_type_name(&original_value) != go_type_name(&patch_value) {
        if is_delete_list {
            original.insert(key, original_value);
        } else {
            set_from_patch(original, key, patch_value);
        }
        return Ok(());
    }
    let merged = match (original_value, patch_value) {
        (Value::Object(original_map), Value::Object(patch_map)) => {
            Value::Object(merge_map_field(&key, original_map, patch_map, schema)?)
        }
        (Value::Array(original_list), Value::Array(patch_list)) => {
            let field = schema.lookup_list_field(&key)?;
            let strategy = field.meta.merge_strategy()?;
            Value::Array(merge_list_field(
                original_list,
                patch_list,
                field.schema.as_ref(),
                strategy,
                field.meta.merge_key(),
                is_delete_list,
            )?)
        }
        (_, scalar) => scalar,
    };
    original.insert(key, merged);
    Ok(())
}

/// Stores a patch value that has nothing to merge with: `null`s and directives are dropped.
fn set_from_patch(original: &mut Map<String, Value>, key: String, mut patch_value: Value) {
    discard_nulls(&mut patch_value);
    if let Some(value) = remove_directives(patch_value) {
        original.insert(key, value);
    }
}

/// Merges a map-valued field, unless its strategy is `replace`.
fn merge_map_field(
    key: &str,
    original: Map<String, Value>,
    patch: Map<String, Value>,
    schema: &dyn PatchMeta,
) -> Result<Map<String, Value>, PatchError> {
    let field = schema.lookup_map_field(key)?;
    if field.meta.merge_strategy()? == REPLACE_DIRECTIVE {
        // Upstream hands back the patch untouched here, directives and all.
        return Ok(patch);
    }
    merge_map(original, patch, field.schema.as_ref())
}

/// Merges a list-valued field when its strategy is `merge` (or it is a deletion list);
/// otherwise the patch's list replaces the original.
fn merge_list_field(
    original: Vec<Value>,
    patch: Vec<Value>,
    schema: &dyn PatchMeta,
    strategy: &str,
    merge_key: &str,
    is_delete_list: bool,
) -> Result<Vec<Value>, PatchError> {
    if strategy == MERGE_DIRECTIVE || is_delete_list {
        merge_list(original, patch, schema, merge_key, is_delete_list)
    } else {
        Ok(patch)
    }
}

/// Merges two lists: primitives as an ordered union, maps by their merge key.
fn merge_list(
    original: Vec<Value>,
    patch: Vec<Value>,
    schema: &dyn PatchMeta,
    merge_key: &str,
    is_delete_list: bool,
) -> Result<Vec<Value>, PatchError> {
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    let kind = element_type(&[&original, &patch])?;
    let (server_order, patch, merged) = if kind != ElementKind::Map {
        if is_delete_list {
            return Ok(delete_values(original, &patch));
        }
        let merged = union(&original, &patch);
        (original, patch, merged)
    } else {
        if merge_key.is_empty() {
            return Err(PatchError::NoMergeKeyDeclared(schema.name()));
        }
        let (original, patch) = apply_list_item_directives(original, patch, merge_key)?;
        let merged = merge_items_by_key(original.clone(), &patch, merge_key, schema)?;
        (original, patch, merged)
    };
    let (patch_items, server_only) = partition(merged, &patch, merge_key)?;
    normalize_element_order(
        patch_items,
        server_only,
        &patch,
        &server_order,
        merge_key,
        kind,
    )
}

/// Applies the `$patch` items of a list of maps.
///
/// Returns the list to merge into (the original with deleted items removed, or the patch's
/// own items for `replace`) and the patch without directive items.
fn apply_list_item_directives(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut plain = Vec::with_capacity(patch.len());
    let mut replace = false;
    for item in patch {
        let map = as_map(&item)?;
        let Some(directive) = map.get(DIRECTIVE_MARKER) else {
            plain.push(item);
            continue;
        };
        match directive.as_str() {
            Some(DELETE_DIRECTIVE) => {
                let key_value = map
                    .get(merge_key)
                    .ok_or_else(|| no_merge_key(map, merge_key))?;
                original = delete_items_with_key(original, merge_key, key_value)?;
            }
            // Keep scanning: the other directive items must still be pruned.
            Some(REPLACE_DIRECTIVE) => replace = true,
            Some(MERGE_DIRECTIVE) => return Err(PatchError::MergeDirectiveInList),
            _ => return Err(bad_patch_type(directive, map)),
        }
    }
    if replace {
        Ok((plain, Vec::new()))
    } else {
        Ok((original, plain))
    }
}

/// Removes every item whose merge key equals `key_value`.
fn delete_items_with_key(
    original: Vec<Value>,
    merge_key: &str,
    key_value: &Value,
) -> Result<Vec<Value>, PatchError> {
    let mut kept = Vec::with_capacity(original.len());
    for (index, item) in original.into_iter().enumerate() {
        let Value::Object(map) = &item else {
            return Err(PatchError::NotAMap(index));
        };
        if !map.get(merge_key).is_some_and(|v| go_equal(v, key_value)) {
            kept.push(item);
        }
    }
    Ok(kept)
}

/// Merges each patch item into the original item with the same merge key, or appends it.
fn merge_items_by_key(
    mut original: Vec<Value>,
    patch: &[Value],
    merge_key: &str,
    schema: &dyn PatchMeta,
) -> Result<Vec<Value>, PatchError> {
    for item in patch {
        let map = as_map(item)?;
        let key_value = map
            .get(merge_key)
            .ok_or_else(|| no_merge_key(map, merge_key))?;
        match find_by_key(&original, merge_key, key_value)? {
            Some(index) => {
                let current = std::mem::take(&mut original[index]);
                let current = match current {
                    Value::Object(current) => current,
                    _ => return Err(PatchError::NotAMap(index)),
                };
                original[index] = Value::Object(merge_map(current, map.clone(), schema)?);
            }
            // Upstream appends the patch item as sent (no null or directive clean-up).
            None => original.push(item.clone()),
        }
    }
    Ok(original)
}

/// The index of the first map in `list` whose `merge_key` equals `key_value`.
fn find_by_key(
    list: &[Value],
    merge_key: &str,
    key_value: &Value,
) -> Result<Option<usize>, PatchError> {
    for (index, item) in list.iter().enumerate() {
        let Value::Object(map) = item else {
            return Err(PatchError::NotAMap(index));
        };
        if map.get(merge_key).is_some_and(|v| go_equal(v, key_value)) {
            return Ok(Some(index));
        }
    }
    Ok(None)
}

/// The union of two primitive lists: `original` then the new values of `patch`, without
/// duplicates (the final order is fixed afterwards by [`normalize_element_order`]).
fn union(original: &[Value], patch: &[Value]) -> Vec<Value> {
    let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
    for value in original.iter().chain(patch) {
        if !merged.iter().any(|seen| go_equal(seen, value)) {
            merged.push(value.clone());
        }
    }
    merged
}

/// `current` without the values listed in `to_delete` (`$deleteFromPrimitiveList`).
fn delete_values(current: Vec<Value>, to_delete: &[Value]) -> Vec<Value> {
    current
        .into_iter()
        .filter(|value| !to_delete.iter().any(|d| go_equal(d, value)))
        .collect()
}

/// Keeps only the keys `$retainKeys` lists, after checking the patch sets no other key.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), PatchError> {
    let Some(retain) = patch.remove(RETAIN_KEYS_DIRECTIVE) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(PatchError::BadPatchFormatForRetainKeys);
    };
    let retained = |key: &str| retain.iter().any(|k| k.as_str() == Some(key));
    let sets_unlisted_key = patch.iter().any(|(key, value)| {
        !value.is_null()
            && !key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX)
            && !key.starts_with(SET_ELEMENT_ORDER_PREFIX)
            && !retained(key)
    });
    if sets_unlisted_key {
        return Err(PatchError::BadPatchFormatForRetainKeys);
    }
    original.retain(|key, _| retained(key));
    Ok(())
}

/// Processes every `$setElementOrder/<field>` directive together with the field's patch list,
/// removing both from `patch`.
fn apply_set_element_orders(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    schema: &dyn PatchMeta,
) -> Result<(), PatchError> {
    let directives: Vec<String> = patch
        .keys()
        .filter(|key| key.starts_with(SET_ELEMENT_ORDER_PREFIX))
        .cloned()
        .collect();
    for directive in directives {
        let Some(order) = patch.remove(&directive) else {
            continue;
        };
        let Value::Array(order) = order else {
            return Err(bad_arg_type(GO_SLICE, &order));
        };
        let field = strip_directive_prefix(&directive, SET_ELEMENT_ORDER_PREFIX)?.to_owned();
        let patch_list = patch.remove(&field);
        apply_set_element_order(original, field, patch_list, &order, schema)?;
    }
    Ok(())
}

/// Merges `field`'s patch list (if any) into the original list and orders the result by
/// `order`, then by the patch, then by the original list.
fn apply_set_element_order(
    original: &mut Map<String, Value>,
    field: String,
    patch_list: Option<Value>,
    order: &[Value],
    schema: &dyn PatchMeta,
) -> Result<(), PatchError> {
    let original_list = original.get(&field).map(list_of).transpose()?;
    let patch_list = patch_list.as_ref().map(list_of).transpose()?;
    let lookup = schema.lookup_list_field(&field)?;
    let strategy = lookup.meta.merge_strategy()?;
    let merge_key = lookup.meta.merge_key();
    validate_order_of_patch(patch_list.unwrap_or(&[]), order, merge_key)?;

    let merged = match (original_list, patch_list) {
        (Some(original_list), None) => original_list.to_vec(),
        (None, Some(patch_list)) => patch_list
            .iter()
            .cloned()
            .filter_map(remove_directives)
            .collect(),
        (Some(original_list), Some(patch_list)) => merge_list_field(
            original_list.to_vec(),
            patch_list.to_vec(),
            lookup.schema.as_ref(),
            strategy,
            merge_key,
            false,
        )?,
        (None, None) => return Ok(()),
    };
    let kind = element_type(&[original_list.unwrap_or(&[]), patch_list.unwrap_or(&[])])?;
    let server_order = match (original_list, patch_list) {
        (Some(original_list), Some(patch_list))
            if kind == ElementKind::Map && strategy == MERGE_DIRECTIVE =>
        {
            upstream_server_order(original_list, patch_list, merge_key)
        }
        _ => original_list.unwrap_or(&[]).to_vec(),
    };
    let (patch_items, server_only) = partition(merged, order, merge_key)?;
    let ordered = normalize_element_order(
        patch_items,
        server_only,
        order,
        &server_order,
        merge_key,
        kind,
    )?;
    original.insert(field, Value::Array(ordered));
    Ok(())
}

/// The live list as upstream sees it when ordering a merged list of maps by
/// `$setElementOrder`: the original items left after `$patch: delete`, followed by as many of
/// the newly added items as there were deletions.
///
/// Upstream deletes and appends in place, in the array backing the live list, and then orders
/// by that array: each deletion frees a slot at its end that the next appended item fills. Its
/// tests pin the resulting orders (a server-only item stays before a new item that took the
/// slot of a deleted one), so we reproduce the effect.
fn upstream_server_order(original: &[Value], patch: &[Value], merge_key: &str) -> Vec<Value> {
    let key_of = |item: &Value| item.get(merge_key).cloned();
    let mut remaining = original.to_vec();
    let mut replace = false;
    for item in patch.iter().filter(|item| has_directive(item)) {
        match item.get(DIRECTIVE_MARKER).and_then(Value::as_str) {
            Some(DELETE_DIRECTIVE) => {
                let deleted = key_of(item);
                remaining.retain(|kept| {
                    !matches!((key_of(kept), &deleted), (Some(a), Some(b)) if go_equal(&a, b))
                });
            }
            Some(REPLACE_DIRECTIVE) => replace = true,
            _ => {}
        }
    }
    if replace {
        return remaining;
    }
    let free_slots = original.len() - remaining.len();
    let mut added: Vec<Value> = Vec::new();
    for item in patch.iter().filter(|item| !has_directive(item)) {
        let Some(key) = key_of(item) else { continue };
        let known = |list: &[Value]| {
            list.iter()
                .any(|v| key_of(v).is_some_and(|k| go_equal(&k, &key)))
        };
        if !known(&remaining) && !known(&added) {
            added.push(item.clone());
        }
    }
    remaining.extend(added.into_iter().take(free_slots));
    remaining
}

/// Checks that the patch list's items appear in `order`, in the same relative order
/// (deletion and other directive items aside).
fn validate_order_of_patch(
    patch: &[Value],
    order: &[Value],
    merge_key: &str,
) -> Result<(), PatchError> {
    if patch.is_empty() || order.is_empty() {
        return Ok(());
    }
    let items: Vec<&Value> = if merge_key.is_empty() {
        patch.iter().collect()
    } else {
        split_deletions(patch)?.0
    };
    let (mut patch_index, mut order_index) = (0, 0);
    while patch_index < items.len() && order_index < order.len() {
        if has_directive(items[patch_index]) {
            patch_index += 1;
            continue;
        }
        if merge_key_equal(items[patch_index], &order[order_index], merge_key)? {
            patch_index += 1;
        }
        order_index += 1;
    }
    if patch_index < items.len() && order_index >= order.len() {
        return Err(PatchError::SetElementOrderMismatch {
            patch: go_list(patch),
            order: go_list(order),
        });
    }
    Ok(())
}

/// Whether two items are the same list entry: equal values, or equal merge keys.
fn merge_key_equal(left: &Value, right: &Value, merge_key: &str) -> Result<bool, PatchError> {
    if merge_key.is_empty() {
        return Ok(go_equal(left, right));
    }
    let left = as_map(left)?;
    let right = as_map(right)?;
    let left = left
        .get(merge_key)
        .ok_or_else(|| no_merge_key(left, merge_key))?;
    let right = right
        .get(merge_key)
        .ok_or_else(|| no_merge_key(right, merge_key))?;
    Ok(go_equal(left, right))
}

/// Splits `merged` into the items present in `by` and the server-only rest.
fn partition(
    merged: Vec<Value>,
    by: &[Value],
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut present = Vec::with_capacity(merged.len());
    let mut server_only = Vec::with_capacity(merged.len());
    for item in merged {
        let found = if merge_key.is_empty() {
            by.iter().any(|v| go_equal(v, &item))
        } else {
            let map = as_map(&item)?;
            let key_value = map
                .get(merge_key)
                .ok_or_else(|| no_merge_key(map, merge_key))?;
            find_by_key(by, merge_key, key_value)?.is_some()
        };
        if found {
            present.push(item);
        } else {
            server_only.push(item);
        }
    }
    Ok((present, server_only))
}

/// Orders the patch items by `patch_order` and the server-only items by `server_order`, then
/// interleaves them (upstream's `normalizeElementOrder`).
fn normalize_element_order(
    patch_items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    kind: ElementKind,
) -> Result<Vec<Value>, PatchError> {
    let patch_items = sort_by_order(patch_items, patch_order, merge_key, kind)?;
    let server_only = sort_by_order(server_only, server_order, merge_key, kind)?;
    Ok(interleave(
        server_only,
        patch_items,
        server_order,
        merge_key,
        kind,
    ))
}

/// Stable-sorts `items` by their position in `order`; deletion directives go last.
///
/// Items absent from `order` sort after the present ones (upstream's comparator is not a
/// strict order for them; in practice every item is present).
fn sort_by_order(
    items: Vec<Value>,
    order: &[Value],
    merge_key: &str,
    kind: ElementKind,
) -> Result<Vec<Value>, PatchError> {
    let (mut items, deletions) = if kind == ElementKind::Map {
        validate_merge_keys(merge_key, &items)?;
        validate_merge_keys(merge_key, order)?;
        let (keep, delete) = split_deletions(&items)?;
        let keep: Vec<Value> = keep.into_iter().cloned().collect();
        let delete: Vec<Value> = delete.into_iter().cloned().collect();
        (keep, delete)
    } else {
        (items, Vec::new())
    };
    items.sort_by_key(|item| position(order, item, merge_key, kind).unwrap_or(usize::MAX));
    items.extend(deletions);
    Ok(items)
}

/// Merges two ordered lists, placing each `left` item before the first `right` item that
/// follows it in `server_order` (upstream's `mergeSortedSlice`).
fn interleave(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &[Value],
    merge_key: &str,
    kind: ElementKind,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => {
                let l = position(server_order, l, merge_key, kind);
                let r = position(server_order, r, merge_key, kind);
                matches!((l, r), (Some(l), Some(r)) if l.cmp(&r) == Ordering::Less)
            }
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}

/// The index of `item` in `list`, comparing merge keys for maps and values otherwise.
fn position(list: &[Value], item: &Value, merge_key: &str, kind: ElementKind) -> Option<usize> {
    if kind == ElementKind::Map {
        // A missing key matches a missing key, as Go's nil == nil.
        fn key_of<'v>(v: &'v Value, merge_key: &str) -> Option<&'v Value> {
            v.as_object().and_then(|m| m.get(merge_key))
        }
        let wanted = key_of(item, merge_key);
        list.iter()
            .position(|v| match (key_of(v, merge_key), wanted) {
                (Some(a), Some(b)) => go_equal(a, b),
                (None, None) => true,
                _ => false,
            })
    } else {
        list.iter().position(|v| go_equal(v, item))
    }
}

/// Checks every item is a map holding `merge_key`.
fn validate_merge_keys(merge_key: &str, list: &[Value]) -> Result<(), PatchError> {
    for item in list {
        let map = as_map(item)?;
        if !map.contains_key(merge_key) {
            return Err(no_merge_key(map, merge_key));
        }
    }
    Ok(())
}

/// Splits a list of maps into the items to keep and the `$patch: delete` items.
fn split_deletions(list: &[Value]) -> Result<(Vec<&Value>, Vec<&Value>), PatchError> {
    let mut keep = Vec::new();
    let mut delete = Vec::new();
    for item in list {
        let map = as_map(item)?;
        if map.get(DIRECTIVE_MARKER).and_then(Value::as_str) == Some(DELETE_DIRECTIVE) {
            delete.push(item);
        } else {
            keep.push(item);
        }
    }
    Ok((keep, delete))
}

/// The JSON type shared by the elements of lists about to merge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ElementKind {
    Map,
    Scalar(&'static str),
}

/// The common element type of `lists`; mixed types and nested lists are errors.
fn element_type(lists: &[&[Value]]) -> Result<ElementKind, PatchError> {
    let mut found: Option<&'static str> = None;
    for value in lists.iter().flat_map(|l| l.iter()) {
        let name = go_type_name(value);
        match found {
            None if value.is_array() => return Err(PatchError::NoListOfLists),
            None => found = Some(name),
            Some(previous) if previous != name => {
                return Err(PatchError::ElementTypesNotIdentical(go_lists(lists)));
            }
            Some(_) => {}
        }
    }
    match found {
        None => Err(PatchError::NoElements),
        Some(GO_MAP) => Ok(ElementKind::Map),
        Some(name) => Ok(ElementKind::Scalar(name)),
    }
}

/// Removes maps carrying `$patch` (and `$patch` maps nested anywhere inside); `None` when the
/// value itself is such a map.
fn remove_directives(value: Value) -> Option<Value> {
    match value {
        Value::Object(map) if map.contains_key(DIRECTIVE_MARKER) => None,
        Value::Object(map) => Some(Value::Object(
            map.into_iter()
                .filter_map(|(k, v)| remove_directives(v).map(|v| (k, v)))
                .collect(),
        )),
        Value::Array(items) => Some(Value::Array(
            items.into_iter().filter_map(remove_directives).collect(),
        )),
        scalar => Some(scalar),
    }
}

/// Drops `null`-valued keys at every depth (they have nothing to delete in a new value).
fn discard_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(discard_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(discard_nulls),
        _ => {}
    }
}

/// Whether `item` is a map carrying `$patch`.
fn has_directive(item: &Value) -> bool {
    item.as_object()
        .is_some_and(|m| m.contains_key(DIRECTIVE_MARKER))
}

/// The field name after `<prefix>/`.
fn strip_directive_prefix<'k>(key: &'k str, prefix: &str) -> Result<&'k str, PatchError> {
    match key.split_once('/') {
        Some((head, field)) if head == prefix => Ok(field),
        _ if prefix == DELETE_FROM_PRIMITIVE_LIST_PREFIX => {
            Err(PatchError::BadPatchFormatForPrimitiveList)
        }
        _ => Err(PatchError::BadPatchFormatForSetElementOrderList),
    }
}

/// Equality of decoded JSON values as Go compares `interface{}` values: numbers by value.
fn go_equal(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Number(l), Value::Number(r)) => l.as_f64() == r.as_f64(),
        _ => left == right,
    }
}

fn as_map(value: &Value) -> Result<&Map<String, Value>, PatchError> {
    value.as_object().ok_or_else(|| bad_arg_type(GO_MAP, value))
}

fn list_of(value: &Value) -> Result<&[Value], PatchError> {
    value
        .as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| bad_arg_type(GO_SLICE, value))
}

fn bad_arg_type(expected: &'static str, actual: &Value) -> PatchError {
    PatchError::BadArgType {
        expected,
        actual: go_type_name(actual),
    }
}

fn no_merge_key(map: &Map<String, Value>, merge_key: &str) -> PatchError {
    PatchError::NoMergeKey {
        map: go_value(&Value::Object(map.clone())),
        merge_key: merge_key.to_owned(),
    }
}

fn bad_patch_type(directive: &Value, map: &Map<String, Value>) -> PatchError {
    PatchError::BadPatchType {
        patch_type: go_string_verb(directive),
        map: go_value(&Value::Object(map.clone())),
    }
}

#[cfg(test)]
mod tests;
