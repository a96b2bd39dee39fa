//! Selection predicates (upstream `storage.SelectionPredicate`): a label and a field selector,
//! matched against attributes extracted from the object.

pub mod fields;
pub mod labels;
pub mod packed;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::Deserialize;

pub use fields::{FieldRequirement, FieldSelector, Fields};
pub use labels::{LabelSelector, Labels};
pub use packed::{AttrLookup, PackedAttrs};

/// Extracts `(labels, fields)` from an object's JSON bytes (upstream `AttrFunc`).
pub type GetAttrs = Arc<dyn Fn(&[u8]) -> Result<(Labels, Fields), String> + Send + Sync>;

#[derive(Deserialize, Default)]
struct MetaAttrs {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize)]
struct ObjAttrs {
    #[serde(default)]
    metadata: Option<MetaAttrs>,
}

/// Upstream's `DefaultNamespaceScopedAttr`: the labels, `metadata.name` and
/// `metadata.namespace`.
pub fn default_attrs(obj: &[u8]) -> Result<(Labels, Fields), String> {
    let parsed: ObjAttrs = serde_json::from_slice(obj).map_err(|e| e.to_string())?;
    let meta = parsed.metadata.unwrap_or_default();
    let mut fields = Fields::new();
    fields.insert("metadata.name".into(), meta.name.unwrap_or_default());
    fields.insert(
        "metadata.namespace".into(),
        meta.namespace.unwrap_or_default(),
    );
    Ok((meta.labels.unwrap_or_default(), fields))
}

/// A label selector and a field selector, plus the function extracting what they match.
#[derive(Clone)]
pub struct SelectionPredicate {
    /// The label selector.
    pub label: LabelSelector,
    /// The field selector.
    pub field: FieldSelector,
    /// Attribute extraction; [`default_attrs`] unless a resource adds fields.
    pub get_attrs: GetAttrs,
}

impl Default for SelectionPredicate {
    fn default() -> Self {
        Self::everything()
    }
}

impl fmt::Debug for SelectionPredicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "labels: {}, fields: {}", self.label, self.field)
    }
}

impl SelectionPredicate {
    /// Matches everything (upstream `storage.Everything`).
    pub fn everything() -> Self {
        SelectionPredicate {
            label: LabelSelector::everything(),
            field: FieldSelector::everything(),
            get_attrs: Arc::new(default_attrs),
        }
    }

    /// A predicate from selectors with the default attributes.
    pub fn new(label: LabelSelector, field: FieldSelector) -> Self {
        SelectionPredicate {
            label,
            field,
            get_attrs: Arc::new(default_attrs),
        }
    }

    /// True when the predicate matches everything.
    pub fn is_empty(&self) -> bool {
        self.label.is_empty() && self.field.is_empty()
    }

    /// Whether the object matches; objects whose attributes cannot be read never match.
    pub fn matches(&self, obj: &[u8]) -> bool {
        if self.is_empty() {
            return true;
        }
        match (self.get_attrs)(obj) {
            Ok((labels, fields)) => self.matches_attrs(&labels, &fields),
            Err(_) => false,
        }
    }

    /// Whether already-extracted attributes match.
    pub fn matches_attrs<L, F>(&self, labels: &L, fields: &F) -> bool
    where
        L: AttrLookup + ?Sized,
        F: AttrLookup + ?Sized,
    {
        self.label.matches(labels) && self.field.matches(fields)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_attrs_and_match() {
        let obj = br#"{"metadata":{"name":"a","namespace":"ns","labels":{"app":"x"}}}"#;
        let pred = SelectionPredicate::new(
            LabelSelector::parse("app=x").unwrap(),
            FieldSelector::parse("metadata.namespace=ns").unwrap(),
        );
        assert!(pred.matches(obj));
        let pred = SelectionPredicate::new(
            LabelSelector::parse("app=y").unwrap(),
            FieldSelector::everything(),
        );
        assert!(!pred.matches(obj));
        assert!(SelectionPredicate::everything().matches(b"not json"));
    }
}
