//! The walks over objects that server-side apply is built from (structured-merge-diff's
//! `typed` package): the set of fields an object sets, the comparison of two objects, the
//! merge of an applied configuration into a live object, and the removal of a set of fields.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::fieldpath::{Path, PathElement, Set};
use super::schema::{ApplySchema, ListType};

/// Errors found while walking an object against its schema, each `<path>: <message>`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TypedErrors(pub Vec<String>);

impl std::fmt::Display for TypedErrors {
    /// One error alone, or upstream's `errors:` list.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.as_slice() {
            [one] => f.write_str(one),
            all => {
                f.write_str("errors:")?;
                for e in all {
                    write!(f, "\n  {e}")?;
                }
                Ok(())
            }
        }
    }
}

impl TypedErrors {
    fn push(&mut self, path: &[PathElement], message: impl std::fmt::Display) {
        self.0.push(format!("{}: {message}", Path(path.to_vec())));
    }

    fn into_result<T>(self, value: T) -> Result<T, TypedErrors> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(self)
        }
    }
}

fn is_empty_map(value: &Value) -> bool {
    value.as_object().is_some_and(Map::is_empty)
}

/// The path element identifying `item` in a list of the given type.
fn item_element(
    item: &Value,
    list_type: &ListType,
    list: &dyn ApplySchema,
) -> Result<PathElement, String> {
    match list_type {
        ListType::Atomic => Err("invalid indexing of non-associative list".to_owned()),
        ListType::Map(keys) => {
            let map = match item {
                Value::Null => {
                    return Err("associative list with keys may not have a null element".to_owned());
                }
                Value::Object(map) => map,
                _ => {
                    return Err(
                        "associative list with keys may not have non-map elements".to_owned()
                    );
                }
            };
            let mut fields = Vec::new();
            for key in keys {
                // A missing key without default is simply not part of the identity.
                if let Some(value) = map.get(key).cloned().or_else(|| list.key_default(key)) {
                    fields.push((key.clone(), value));
                }
            }
            if fields.is_empty() {
                return Err(format!(
                    "associative list with keys has an element that omits all key fields {} (and doesn't have default values for any key fields)",
                    go_string_list(keys)
                ));
            }
            fields.sort_by(|a, b| a.0.cmp(&b.0));
            Ok(PathElement::Key(fields))
        }
        ListType::Set => match item {
            Value::Object(_) => {
                Err("associative list without keys has an element that's a map type".to_owned())
            }
            Value::Array(_) => {
                Err("not supported: associative list with lists as elements".to_owned())
            }
            Value::Null => Err(
                "associative list without keys has an element that's an explicit null".to_owned(),
            ),
            scalar => Ok(PathElement::Value(scalar.clone())),
        },
    }
}

/// Go's `%q` of a string slice: `["a" "b"]`.
fn go_string_list(items: &[String]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|s| serde_json::to_string(s).unwrap_or_default())
        .collect();
    format!("[{}]", quoted.join(" "))
}

/// The fields `value` sets (upstream's `ToFieldSet`): leaves, list items, map entries, empty
/// or null struct fields; granular structs only through their contents.
pub fn to_field_set(value: &Value, schema: &dyn ApplySchema) -> Result<Set, TypedErrors> {
    let mut set = Set::new();
    let mut errors = TypedErrors::default();
    field_set_walk(value, schema, &mut Vec::new(), &mut set, &mut errors, false);
    errors.into_result(set)
}

/// [`to_field_set`] of an applied configuration, which may only set fields its schema
/// declares (upstream's typed conversion of the patch object): each other field is an error
/// `<path>: field not declared in schema`.
pub fn to_declared_field_set(value: &Value, schema: &dyn ApplySchema) -> Result<Set, TypedErrors> {
    let mut set = Set::new();
    let mut errors = TypedErrors::default();
    field_set_walk(value, schema, &mut Vec::new(), &mut set, &mut errors, true);
    errors.into_result(set)
}

fn field_set_walk(
    value: &Value,
    schema: &dyn ApplySchema,
    path: &mut Vec<PathElement>,
    set: &mut Set,
    errors: &mut TypedErrors,
    declared_only: bool,
) {
    match value {
        Value::Object(map) => {
            if schema.map_is_atomic() {
                set.insert(path);
                return;
            }
            let closed = declared_only && schema.is_closed_struct();
            for (key, child) in map {
                let field = schema.field(key);
                path.push(PathElement::Field(key.clone()));
                if closed && !field.declared {
                    errors.push(path, "field not declared in schema");
                    path.pop();
                    continue;
                }
                field_set_walk(
                    child,
                    field.schema.as_ref(),
                    path,
                    set,
                    errors,
                    declared_only,
                );
                if child.is_null() || is_empty_map(child) || !field.declared {
                    set.insert(path);
                }
                path.pop();
            }
        }
        Value::Array(items) => {
            let list_type = schema.list_type();
            if list_type == ListType::Atomic {
                set.insert(path);
                return;
            }
            let item_schema = schema.items();
            let mut seen = BTreeMap::new();
            for (index, item) in items.iter().enumerate() {
                let pe = match item_element(item, &list_type, schema) {
                    Ok(pe) => pe,
                    Err(e) => {
                        errors.push(path, format!("element {index}: {e}"));
                        continue;
                    }
                };
                if seen.insert(pe.clone(), ()).is_some() {
                    errors.push(path, format!("duplicate entries for key {pe}"));
                    continue;
                }
                path.push(pe);
                field_set_walk(item, item_schema.as_ref(), path, set, errors, declared_only);
                set.insert(path);
                path.pop();
            }
        }
        _ => set.insert(path),
    }
}

/// The difference between two versions of an object (upstream's `Comparison`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Comparison {
    /// Fields only in the new object.
    pub added: Set,
    /// Leaves whose value changed.
    pub modified: Set,
    /// Fields only in the old object.
    pub removed: Set,
}

impl Comparison {
    /// The comparison without `ignored` and everything below its members (upstream's
    /// `ExcludeFields` / `FilterFields`).
    pub fn excluding(self, ignored: Option<&Set>) -> Comparison {
        let Some(ignored) = ignored else {
            return self;
        };
        Comparison {
            added: self.added.recursive_difference(ignored),
            modified: self.modified.recursive_difference(ignored),
            removed: self.removed.recursive_difference(ignored),
        }
    }
}

/// Compares `lhs` (old) with `rhs` (new).
pub fn compare(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    schema: &dyn ApplySchema,
) -> Result<Comparison, TypedErrors> {
    let mut out = Comparison::default();
    let mut errors = TypedErrors::default();
    if lhs.is_some() || rhs.is_some() {
        compare_walk(lhs, rhs, schema, &mut Vec::new(), &mut out, &mut errors);
    }
    errors.into_result(out)
}

fn compare_walk(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    schema: &dyn ApplySchema,
    path: &mut Vec<PathElement>,
    out: &mut Comparison,
    errors: &mut TypedErrors,
) {
    let leaf = |out: &mut Comparison, path: &[PathElement]| match (lhs, rhs) {
        (None, _) => out.added.insert(path),
        (_, None) => out.removed.insert(path),
        (Some(l), Some(r)) if l != r => out.modified.insert(path),
        _ => {}
    };
    let lmap = lhs.and_then(Value::as_object);
    let rmap = rhs.and_then(Value::as_object);
    let llist = lhs.and_then(Value::as_array);
    let rlist = rhs.and_then(Value::as_array);
    if lmap.is_some() || rmap.is_some() {
        let empty = lmap.is_none_or(Map::is_empty) && rmap.is_none_or(Map::is_empty);
        if schema.map_is_atomic() || empty || (llist.is_some() || rlist.is_some()) {
            leaf(out, path);
            return;
        }
        let mut keys: Vec<&String> = lmap.into_iter().flat_map(Map::keys).collect();
        keys.extend(rmap.into_iter().flat_map(Map::keys));
        keys.sort();
        keys.dedup();
        for key in keys {
            let field = schema.field(key);
            let mut l = lmap.and_then(|m| m.get(key));
            let mut r = rmap.and_then(|m| m.get(key));
            // A field Go's typed object always carries is present wherever its parent is.
            if let Some(implicit) = &field.implicit_value {
                if lmap.is_some() {
                    l = l.or(Some(implicit));
                }
                if rmap.is_some() {
                    r = r.or(Some(implicit));
                }
            }
            path.push(PathElement::Field(key.clone()));
            compare_walk(l, r, field.schema.as_ref(), path, out, errors);
            path.pop();
        }
    } else if llist.is_some() || rlist.is_some() {
        let list_type = schema.list_type();
        let empty = llist.is_none_or(Vec::is_empty) && rlist.is_none_or(Vec::is_empty);
        if list_type == ListType::Atomic || empty {
            leaf(out, path);
            return;
        }
        compare_list_items(
            llist.map(Vec::as_slice).unwrap_or_default(),
            rlist.map(Vec::as_slice).unwrap_or_default(),
            &list_type,
            schema,
            path,
            out,
            errors,
        );
    } else {
        leaf(out, path);
        return;
    }
    match (lhs, rhs) {
        (None, _) => out.added.insert(path),
        (_, None) => out.removed.insert(path),
        _ => {}
    }
}

fn index_items<'v>(
    items: &'v [Value],
    list_type: &ListType,
    schema: &dyn ApplySchema,
    path: &[PathElement],
    order: &mut Vec<PathElement>,
    seen: &mut std::collections::BTreeSet<PathElement>,
    errors: &mut TypedErrors,
) -> BTreeMap<PathElement, Vec<&'v Value>> {
    let mut values: BTreeMap<PathElement, Vec<&Value>> = BTreeMap::new();
    for (index, item) in items.iter().enumerate() {
        match item_element(item, list_type, schema) {
            Ok(pe) => {
                let entry = values.entry(pe.clone()).or_default();
                if seen.insert(pe.clone()) {
                    order.push(pe);
                }
                entry.push(item);
            }
            Err(e) => errors.push(path, format!("element {index}: {e}")),
        }
    }
    values
}

fn compare_list_items(
    lhs: &[Value],
    rhs: &[Value],
    list_type: &ListType,
    schema: &dyn ApplySchema,
    path: &mut Vec<PathElement>,
    out: &mut Comparison,
    errors: &mut TypedErrors,
) {
    let mut order = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    let lvalues = index_items(lhs, list_type, schema, path, &mut order, &mut seen, errors);
    let rvalues = index_items(rhs, list_type, schema, path, &mut order, &mut seen, errors);
    let item_schema = schema.items();
    for pe in order {
        let l = lvalues.get(&pe).map(Vec::as_slice).unwrap_or_default();
        let r = rvalues.get(&pe).map(Vec::as_slice).unwrap_or_default();
        path.push(pe);
        match (l.len(), r.len()) {
            (0..=1, 0..=1) => compare_walk(
                l.first().copied(),
                r.first().copied(),
                item_schema.as_ref(),
                path,
                out,
                errors,
            ),
            // Duplicates on both sides compare as one atomic value.
            (2.., 2..) => {
                if l != r {
                    out.modified.insert(path);
                }
            }
            (2.., _) => {
                if let Some(first) = r.first() {
                    compare_walk(None, Some(first), item_schema.as_ref(), path, out, errors);
                }
                out.removed.insert(path);
            }
            (_, _) => {
                if let Some(first) = l.first() {
                    compare_walk(Some(first), None, item_schema.as_ref(), path, out, errors);
                }
                out.added.insert(path);
            }
        }
        path.pop();
    }
}

/// Merges `rhs` (the applied configuration) into `lhs` (the live object): granular maps merge
/// by key, associative lists by item identity (keeping the applied order for applied items and
/// the live position for the others), everything else takes the applied value.
pub fn merge(lhs: &Value, rhs: &Value, schema: &dyn ApplySchema) -> Result<Value, TypedErrors> {
    let mut errors = TypedErrors::default();
    let merged = merge_walk(Some(lhs), Some(rhs), schema, &mut Vec::new(), &mut errors);
    errors.into_result(merged.unwrap_or(Value::Null))
}

fn merge_walk(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    schema: &dyn ApplySchema,
    path: &mut Vec<PathElement>,
    errors: &mut TypedErrors,
) -> Option<Value> {
    let (l, r) = match (lhs, rhs) {
        (None, None) => return None,
        (Some(l), None) => return Some(l.clone()),
        (None, Some(r)) => return Some(r.clone()),
        (Some(l), Some(r)) => (l, r),
    };
    match (l, r) {
        (Value::Object(lm), Value::Object(rm))
            if !(schema.map_is_atomic() || lm.is_empty() && rm.is_empty()) =>
        {
            let mut out = Map::new();
            let keys = lm.keys().chain(rm.keys().filter(|k| !lm.contains_key(*k)));
            for key in keys {
                let field = schema.field(key);
                path.push(PathElement::Field(key.clone()));
                if let Some(v) = merge_walk(
                    lm.get(key),
                    rm.get(key),
                    field.schema.as_ref(),
                    path,
                    errors,
                ) {
                    out.insert(key.clone(), v);
                }
                path.pop();
            }
            Some(Value::Object(out))
        }
        // A null applied over a granular map or associative list keeps the live contents,
        // as upstream's walk of the (absent) applied entries does.
        (Value::Object(lm), Value::Null) if !schema.map_is_atomic() && !lm.is_empty() => {
            Some(l.clone())
        }
        (Value::Array(ll), Value::Null)
            if !ll.is_empty() && schema.list_type() != ListType::Atomic =>
        {
            Some(l.clone())
        }
        (Value::Array(ll), Value::Array(rl)) if !(ll.is_empty() && rl.is_empty()) => {
            let list_type = schema.list_type();
            if list_type == ListType::Atomic {
                return Some(r.clone());
            }
            merge_list(ll, rl, &list_type, schema, path, errors).map(Value::Array)
        }
        _ => Some(r.clone()),
    }
}

fn merge_list(
    lhs: &[Value],
    rhs: &[Value],
    list_type: &ListType,
    schema: &dyn ApplySchema,
    path: &mut Vec<PathElement>,
    errors: &mut TypedErrors,
) -> Option<Vec<Value>> {
    let before = errors.0.len();
    let mut rhs_pes = Vec::with_capacity(rhs.len());
    let mut observed_rhs: BTreeMap<PathElement, &Value> = BTreeMap::new();
    for (index, item) in rhs.iter().enumerate() {
        match item_element(item, list_type, schema) {
            Ok(pe) => {
                if observed_rhs.contains_key(&pe) {
                    errors.push(path, format!("duplicate entries for key {pe}"));
                    continue;
                }
                observed_rhs.insert(pe.clone(), item);
                rhs_pes.push(pe);
            }
            Err(e) => errors.push(path, format!("element {index}: {e}")),
        }
    }
    let mut lhs_pes = Vec::with_capacity(lhs.len());
    // Live duplicates are tolerated; the merged item then starts from null.
    let mut observed_lhs: BTreeMap<PathElement, &Value> = BTreeMap::new();
    let mut lhs_items = Vec::with_capacity(lhs.len());
    for (index, item) in lhs.iter().enumerate() {
        match item_element(item, list_type, schema) {
            Ok(pe) => {
                if observed_lhs.contains_key(&pe) {
                    observed_lhs.insert(pe.clone(), &Value::Null);
                } else {
                    observed_lhs.insert(pe.clone(), item);
                }
                lhs_pes.push(pe);
                lhs_items.push(item);
            }
            Err(e) => errors.push(path, format!("element {index}: {e}")),
        }
    }
    if errors.0.len() != before {
        return None;
    }
    let item_schema = schema.items();
    let mut shared = rhs_pes
        .iter()
        .filter(|pe| observed_lhs.contains_key(*pe))
        .collect::<Vec<_>>()
        .into_iter();
    let mut next_shared = shared.next();
    let mut merged_rhs: BTreeMap<PathElement, ()> = BTreeMap::new();
    let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
    let merge_item = |pe: &PathElement,
                      l: Option<&Value>,
                      r: Option<&Value>,
                      path: &mut Vec<PathElement>,
                      out: &mut Vec<Value>,
                      errors: &mut TypedErrors| {
        path.push(pe.clone());
        if let Some(v) = merge_walk(l, r, item_schema.as_ref(), path, errors) {
            out.push(v);
        }
        path.pop();
    };
    let (mut li, mut ri) = (0, 0);
    while li < lhs_pes.len() || ri < rhs_pes.len() {
        if li < lhs_pes.len() && ri < rhs_pes.len() {
            let pe = &lhs_pes[li];
            if *pe == rhs_pes[ri] {
                merged_rhs.insert(pe.clone(), ());
                let l = observed_lhs.get(pe).copied();
                let r = observed_rhs.get(pe).copied();
                merge_item(pe, l, r, path, &mut out, errors);
                li += 1;
                ri += 1;
                next_shared = shared.next();
                continue;
            }
            // Skip a live item the configuration places elsewhere, until its turn comes.
            if observed_rhs.contains_key(pe) && next_shared.is_some_and(|n| n != pe) {
                li += 1;
                continue;
            }
        }
        if li < lhs_pes.len() {
            let pe = &lhs_pes[li];
            if !observed_rhs.contains_key(pe) {
                merge_item(pe, Some(lhs_items[li]), None, path, &mut out, errors);
                li += 1;
                continue;
            } else if merged_rhs.contains_key(pe) {
                li += 1;
            }
        }
        if ri < rhs_pes.len() {
            let pe = &rhs_pes[ri];
            merged_rhs.insert(pe.clone(), ());
            let l = observed_lhs.get(pe).copied();
            let r = observed_rhs.get(pe).copied();
            merge_item(pe, l, r, path, &mut out, errors);
            ri += 1;
            if next_shared.is_some_and(|n| n == pe) {
                next_shared = shared.next();
            }
        }
    }
    (!out.is_empty()).then_some(out)
}

/// Removes the fields of `set` from `value` (upstream's `RemoveItems`): a member removes the
/// field or item with everything below it; a map or list left empty disappears.
///
/// Upstream leaves a `null` where everything below a field was removed, which its typed
/// conversion then drops; working on JSON objects, the field is dropped here directly.
pub fn remove_items(value: &Value, set: &Set, schema: &dyn ApplySchema) -> Option<Value> {
    match value {
        Value::Object(map) => {
            if map.is_empty() {
                return None;
            }
            if schema.map_is_atomic() {
                return Some(value.clone());
            }
            let mut out = Map::new();
            for (key, child) in map {
                let pe = PathElement::Field(key.clone());
                if set.has(std::slice::from_ref(&pe)) {
                    continue;
                }
                let subset = set.with_prefix(&pe);
                if subset.is_empty() {
                    out.insert(key.clone(), child.clone());
                } else if let Some(v) =
                    remove_items(child, &subset, schema.field(key).schema.as_ref())
                {
                    out.insert(key.clone(), v);
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        Value::Array(items) => {
            if items.is_empty() {
                return None;
            }
            let list_type = schema.list_type();
            if list_type == ListType::Atomic {
                return Some(value.clone());
            }
            let item_schema = schema.items();
            let mut out = Vec::new();
            for item in items {
                let Ok(pe) = item_element(item, &list_type, schema) else {
                    out.push(item.clone());
                    continue;
                };
                if set.has(std::slice::from_ref(&pe)) {
                    continue;
                }
                let subset = set.with_prefix(&pe);
                if subset.is_empty() {
                    out.push(item.clone());
                } else if let Some(v) = remove_items(item, &subset, item_schema.as_ref()) {
                    out.push(v);
                }
            }
            (!out.is_empty()).then_some(Value::Array(out))
        }
        scalar => Some(scalar.clone()),
    }
}

/// Adds as members the declared struct fields that only appear as parents of other paths
/// (upstream's `EnsureNamedFieldsAreMembers`), so that removing them is expressible.
pub fn ensure_named_fields_are_members(set: &Set, schema: &dyn ApplySchema) -> Set {
    let mut members: std::collections::BTreeSet<PathElement> = set.members().cloned().collect();
    let mut children = BTreeMap::new();
    for (pe, child) in set.children() {
        let converted = match pe {
            PathElement::Field(name) => {
                let field = schema.field(name);
                if field.declared {
                    members.insert(pe.clone());
                }
                ensure_named_fields_are_members(child, field.schema.as_ref())
            }
            _ => ensure_named_fields_are_members(child, schema.items().as_ref()),
        };
        children.insert(pe.clone(), converted);
    }
    Set::from_parts(members, children)
}
