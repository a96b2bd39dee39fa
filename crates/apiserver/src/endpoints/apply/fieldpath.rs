//! Field paths and sets of them, with their `FieldsV1` encoding (structured-merge-diff's
//! `fieldpath` package).
//!
//! A [`Set`] is a tree: `members` are paths owned at this level, `children` are subtrees.
//! Both are ordered by [`PathElement`]'s total order (field names, then associative-list keys,
//! then set values, then indexes), which is also the order of the `FieldsV1` JSON upstream
//! writes, so [`Set::to_fields_v1`] produces the bytes kube stores.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::Value;

/// One step of a path into an object.
#[derive(Clone, Debug)]
pub enum PathElement {
    /// A field of a map or struct (`f:<name>`, printed `.name`).
    Field(String),
    /// An item of an associative list, identified by its key fields sorted by name
    /// (`k:{"name":"x"}`, printed `[name="x"]`).
    Key(Vec<(String, Value)>),
    /// An item of a set list, identified by its value (`v:"x"`, printed `[="x"]`).
    Value(Value),
    /// A position in a list (`i:0`, printed `[0]`).
    Index(i64),
}

impl PathElement {
    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }

    /// The `FieldsV1` key of this element (`f:name`, `k:{…}`, `v:…`, `i:n`).
    pub fn to_fields_v1_key(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(fields) => {
                let mut out = String::from("k:{");
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&json_text(&Value::String(name.clone())));
                    out.push(':');
                    out.push_str(&json_text(value));
                }
                out.push('}');
                out
            }
            PathElement::Value(value) => format!("v:{}", json_text(value)),
            PathElement::Index(index) => format!("i:{index}"),
        }
    }

    /// Parses a `FieldsV1` key.
    pub fn from_fields_v1_key(key: &str) -> Result<Self, String> {
        let invalid = || format!("invalid path element: {key:?}");
        if let Some(name) = key.strip_prefix("f:") {
            return Ok(PathElement::Field(name.to_owned()));
        }
        if let Some(text) = key.strip_prefix("v:") {
            return serde_json::from_str(text)
                .map(PathElement::Value)
                .map_err(|_| invalid());
        }
        if let Some(text) = key.strip_prefix("i:") {
            return text.parse().map(PathElement::Index).map_err(|_| invalid());
        }
        if let Some(text) = key.strip_prefix("k:") {
            let Ok(Value::Object(map)) = serde_json::from_str::<Value>(text) else {
                return Err(invalid());
            };
            if map.is_empty() {
                return Err(invalid());
            }
            // serde_json's map is ordered by key, which is the sorted order keys use.
            return Ok(PathElement::Key(map.into_iter().collect()));
        }
        Err(invalid())
    }
}

/// Compact JSON text of a value as upstream's encoder writes it, HTML characters escaped
/// (serializing a `Value` cannot fail).
fn json_text(value: &Value) -> String {
    crate::util::gojson::escape_html(serde_json::to_string(value).unwrap_or_default())
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => compare_field_lists(a, b),
            (PathElement::Value(a), PathElement::Value(b)) => compare_values(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl fmt::Display for PathElement {
    /// The notation of conflict messages: `.name`, `[name="x"]`, `[="x"]`, `[0]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                f.write_str("[")?;
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{name}={}", value_to_string(value))?;
                }
                f.write_str("]")
            }
            PathElement::Value(value) => write!(f, "[={}]", value_to_string(value)),
            PathElement::Index(index) => write!(f, "[{index}]"),
        }
    }
}

/// structured-merge-diff's `value.ToString`: strings quoted, maps as `k=v` pairs.
fn value_to_string(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::String(s) => serde_json::to_string(s).unwrap_or_default(),
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(value_to_string)
                .collect::<Vec<_>>()
                .join(",")
        ),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k}={}", value_to_string(v)))
            .collect(),
        other => other.to_string(),
    }
}

fn compare_field_lists(a: &[(String, Value)], b: &[(String, Value)]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let c = x.0.cmp(&y.0).then_with(|| compare_values(&x.1, &y.1));
        if c != Ordering::Equal {
            return c;
        }
    }
    a.len().cmp(&b.len())
}

/// structured-merge-diff's total order of values: numbers (compared numerically), then
/// strings, booleans, lists, maps, and null last.
pub(crate) fn compare_values(a: &Value, b: &Value) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Number(_) => 0,
            Value::String(_) => 1,
            Value::Bool(_) => 2,
            Value::Array(_) => 3,
            Value::Object(_) => 4,
            Value::Null => 5,
        }
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x.cmp(&y),
            _ => {
                let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
                x.partial_cmp(&y).unwrap_or(Ordering::Equal)
            }
        },
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (l, r) in x.iter().zip(y) {
                let c = compare_values(l, r);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            for ((lk, lv), (rk, rv)) in x.iter().zip(y) {
                let c = lk.cmp(rk).then_with(|| compare_values(lv, rv));
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Null, Value::Null) => Ordering::Equal,
        _ => rank(a).cmp(&rank(b)),
    }
}

/// A path: a sequence of elements from the object's root.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Path(pub Vec<PathElement>);

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for element in &self.0 {
            write!(f, "{element}")?;
        }
        Ok(())
    }
}

impl Path {
    /// A path of field names, e.g. `Path::fields(&["metadata", "name"])`.
    pub fn fields(names: &[&str]) -> Self {
        Path(
            names
                .iter()
                .map(|n| PathElement::Field((*n).to_owned()))
                .collect(),
        )
    }
}

/// A set of paths, stored as a tree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Set {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, Set>,
}

impl Set {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// A set holding the given paths.
    pub fn from_paths<I: IntoIterator<Item = Path>>(paths: I) -> Self {
        let mut set = Set::new();
        for path in paths {
            set.insert(&path.0);
        }
        set
    }

    /// Adds a path. The empty path (the whole object) is not tracked, as upstream.
    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// Whether the set holds no path.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.values().all(Set::is_empty)
    }

    /// Whether the set holds exactly `path`.
    pub fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.has(rest)),
        }
    }

    /// The members directly at this level.
    pub fn members(&self) -> impl Iterator<Item = &PathElement> {
        self.members.iter()
    }

    /// The subset below `element` (paths relative to it).
    pub fn with_prefix(&self, element: &PathElement) -> Set {
        self.children.get(element).cloned().unwrap_or_default()
    }

    /// Paths in either set.
    pub fn union(&self, other: &Set) -> Set {
        let mut out = self.clone();
        out.members.extend(other.members.iter().cloned());
        for (pe, child) in &other.children {
            let merged = match out.children.get(pe) {
                Some(mine) => mine.union(child),
                None => child.clone(),
            };
            out.children.insert(pe.clone(), merged);
        }
        out
    }

    /// Paths in both sets.
    pub fn intersection(&self, other: &Set) -> Set {
        let members = self.members.intersection(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(pe, mine)| {
                let theirs = other.children.get(pe)?;
                let both = mine.intersection(theirs);
                (!both.is_empty()).then(|| (pe.clone(), both))
            })
            .collect();
        Set { members, children }
    }

    /// Paths of `self` not in `other` (exact paths: a member of `other` does not remove the
    /// subtree below it).
    pub fn difference(&self, other: &Set) -> Set {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(pe, mine)| match other.children.get(pe) {
                Some(theirs) => {
                    let rest = mine.difference(theirs);
                    (!rest.is_empty()).then(|| (pe.clone(), rest))
                }
                None => Some((pe.clone(), mine.clone())),
            })
            .collect();
        Set { members, children }
    }

    /// Paths of `self` not in `other`, where a member of `other` also removes every path
    /// below it.
    pub fn recursive_difference(&self, other: &Set) -> Set {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter(|(pe, _)| !other.members.contains(pe))
            .filter_map(|(pe, mine)| match other.children.get(pe) {
                Some(theirs) => {
                    let rest = mine.recursive_difference(theirs);
                    (!rest.is_empty()).then(|| (pe.clone(), rest))
                }
                None => Some((pe.clone(), mine.clone())),
            })
            .collect();
        Set { members, children }
    }

    /// Every path, members of a level before the subtrees below it (upstream's `Iterate`).
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Path>) {
        for member in &self.members {
            let mut path = prefix.clone();
            path.push(member.clone());
            out.push(Path(path));
        }
        for (pe, child) in &self.children {
            prefix.push(pe.clone());
            child.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    pub(crate) fn children(&self) -> impl Iterator<Item = (&PathElement, &Set)> {
        self.children.iter()
    }

    pub(crate) fn from_parts(
        members: BTreeSet<PathElement>,
        children: BTreeMap<PathElement, Set>,
    ) -> Set {
        Set { members, children }
    }

    /// The `FieldsV1` JSON text, byte for byte as upstream writes it.
    pub fn to_fields_v1(&self) -> String {
        let mut out = String::from("{");
        self.emit_contents(false, &mut out);
        out.push('}');
        out
    }

    fn emit_contents(&self, include_self: bool, out: &mut String) {
        let mut first = true;
        let mut sep = |out: &mut String| {
            if !std::mem::take(&mut first) {
                out.push(',');
            }
        };
        if include_self && !(self.members.is_empty() && self.children.is_empty()) {
            sep(out);
            out.push_str("\".\":{}");
        }
        let mut members = self.members.iter().peekable();
        let mut children = self.children.iter().peekable();
        loop {
            let take_member = match (members.peek(), children.peek()) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some(m), Some((c, _))) => *m < *c,
            };
            sep(out);
            if take_member {
                if let Some(member) = members.next() {
                    out.push_str(&json_text(&Value::String(member.to_fields_v1_key())));
                    out.push_str(":{}");
                }
            } else if let Some((pe, child)) = children.next() {
                // An element both owned itself and with owned children is written once, its
                // own ownership as the "." entry inside.
                let owned = members.peek() == Some(&pe);
                if owned {
                    members.next();
                }
                out.push_str(&json_text(&Value::String(pe.to_fields_v1_key())));
                out.push_str(":{");
                child.emit_contents(owned, out);
                out.push('}');
            }
        }
    }

    /// Parses a `FieldsV1` object.
    pub fn from_fields_v1(value: &Value) -> Result<Set, String> {
        let Value::Object(map) = value else {
            return Err("FieldsV1 must be a JSON object".to_owned());
        };
        let (set, _) = read_fields_v1(map)?;
        Ok(set.unwrap_or_default())
    }
}

/// Returns the children read and whether the level is itself a member (`"."` or a leaf `{}`).
fn read_fields_v1(map: &serde_json::Map<String, Value>) -> Result<(Option<Set>, bool), String> {
    let mut is_member = false;
    let mut children: Option<Set> = None;
    for (key, value) in map {
        if key == "." {
            is_member = true;
            continue;
        }
        let pe = PathElement::from_fields_v1_key(key)?;
        let Value::Object(inner) = value else {
            return Err(format!("expected an object for {key:?}"));
        };
        let (grandchildren, child_is_member) = read_fields_v1(inner)?;
        let set = children.get_or_insert_with(Set::new);
        if child_is_member {
            set.members.insert(pe.clone());
        }
        if let Some(grandchildren) = grandchildren {
            set.children.insert(pe, grandchildren);
        }
    }
    if children.is_none() {
        is_member = true;
    }
    Ok((children, is_member))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(name: &str) -> PathElement {
        PathElement::Field(name.to_owned())
    }

    #[test]
    fn fields_v1_round_trip_keeps_upstream_order() {
        let text = r#"{"f:metadata":{"f:finalizers":{".":{},"v:\"a\"":{},"v:\"b\"":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{}}}}}"#;
        let value: Value = serde_json::from_str(text).unwrap();
        let set = Set::from_fields_v1(&value).unwrap();
        assert_eq!(set.to_fields_v1(), text);
        assert!(set.has(&[f("metadata"), f("finalizers")]));
        assert!(set.has(&[
            f("metadata"),
            f("finalizers"),
            PathElement::Value(json!("a"))
        ]));
    }

    #[test]
    fn paths_print_as_upstream() {
        let path = Path(vec![
            f("spec"),
            f("containers"),
            PathElement::Key(vec![("name".into(), json!("app"))]),
            f("image"),
        ]);
        assert_eq!(path.to_string(), r#".spec.containers[name="app"].image"#);
        let path = Path(vec![
            f("metadata"),
            f("finalizers"),
            PathElement::Value(json!("x")),
        ]);
        assert_eq!(path.to_string(), r#".metadata.finalizers[="x"]"#);
        assert_eq!(
            Path(vec![f("a"), PathElement::Index(3)]).to_string(),
            ".a[3]"
        );
    }

    #[test]
    fn html_characters_are_escaped_as_upstream() {
        // The key is itself JSON text, so an escaped value inside it is escaped twice.
        let set = Set::from_paths([Path(vec![f("data"), f("a<b")])]);
        assert_eq!(set.to_fields_v1(), r#"{"f:data":{"f:a\u003cb":{}}}"#);
        let set = Set::from_paths([Path(vec![PathElement::Value(json!("x&y"))])]);
        assert_eq!(set.to_fields_v1(), r#"{"v:\"x\\u0026y\"":{}}"#);
        let value: Value = serde_json::from_str(&set.to_fields_v1()).unwrap();
        assert_eq!(Set::from_fields_v1(&value).unwrap(), set);
    }

    #[test]
    fn keys_order_numerically() {
        let k = |n: i64| PathElement::Key(vec![("containerPort".into(), json!(n))]);
        let set = Set::from_paths([Path(vec![k(10)]), Path(vec![k(9)])]);
        assert_eq!(
            set.to_fields_v1(),
            r#"{"k:{\"containerPort\":9}":{},"k:{\"containerPort\":10}":{}}"#
        );
    }

    #[test]
    fn set_operations() {
        let a = Set::from_paths([
            Path::fields(&["a", "b"]),
            Path::fields(&["a"]),
            Path::fields(&["c"]),
        ]);
        let b = Set::from_paths([Path::fields(&["a"])]);
        assert_eq!(
            a.difference(&b),
            Set::from_paths([Path::fields(&["a", "b"]), Path::fields(&["c"])])
        );
        assert_eq!(
            a.recursive_difference(&b),
            Set::from_paths([Path::fields(&["c"])])
        );
        assert_eq!(a.intersection(&b), b);
        assert_eq!(a.union(&b), a);
        assert!(a.difference(&a).is_empty());
    }
}
