//! Structural schemas of CustomResourceDefinitions (upstream
//! `k8s.io/apiextensions-apiserver/pkg/apiserver/schema` and `pkg/apiserver/validation`):
//! parsing and structural checks of a version's `openAPIV3Schema`, pruning, defaulting and
//! validation of custom resources, validation of CRD objects, and the schema as published
//! in OpenAPI.
//!
//! Objects are JSON values; errors are the shared [`FieldError`]s, with upstream's paths
//! and messages (`spec.replicas: Invalid value: "string": spec.replicas in body must be of
//! type integer: "string"`).
//!
//! Upstream's order for a custom resource in a request body (and read from storage): the
//! decoder prunes ([`Structural::prune`], whose paths feed `fieldValidation`), then defaults
//! ([`Structural::apply_defaults`]); the strategy then validates ([`Structural::validate`]
//! or [`Structural::validate_update`]). For a CRD: [`default_crd`], then [`validate_crd`].

use apiserver::registry::FieldError;
use serde_json::Value;

mod cel;
mod crd;
mod defaults;
mod embedded;
mod formats;
mod gofmt;
mod names;
mod node;
mod openapi;
mod path;
mod prune;
mod structural;
mod validate;

#[cfg(test)]
mod tests;

pub use crd::{default_crd, validate_crd};

use node::Node;

/// A parsed structural `openAPIV3Schema` of one CRD version.
#[derive(Clone, Debug, PartialEq)]
pub struct Structural {
    root: Node,
    /// The compiled `x-kubernetes-validations` rules.
    rules: cel::Compiled,
}

impl Structural {
    /// Parses a CRD version's `openAPIV3Schema`; errors if it is not a valid structural
    /// schema, with field paths under `path` (e.g.
    /// `spec.versions[0].schema.openAPIV3Schema`).
    pub fn new(schema: &Value, path: &str) -> Result<Structural, Vec<FieldError>> {
        let root = parse(schema, path)?;
        let errs = structural::validate_structural(&root, path);
        if !errs.is_empty() {
            return Err(errs);
        }
        Ok(Structural::from_node(root))
    }

    fn from_node(root: Node) -> Structural {
        let rules = cel::compile(&root);
        Structural { root, rules }
    }

    /// Removes the fields the schema does not specify (honouring
    /// `x-kubernetes-preserve-unknown-fields` and `x-kubernetes-embedded-resource`; the
    /// root and embedded resources keep `apiVersion`, `kind` and `metadata`, whose fields
    /// are cut to ObjectMeta's). Returns the pruned paths, sorted, as upstream reports them
    /// for `fieldValidation` (`spec.foo`, `spec.list[0].bar`, `metadata.foo`).
    pub fn prune(&self, obj: &mut Value) -> Vec<String> {
        prune::prune_resource(obj, &self.root)
    }

    /// Applies `default`s as upstream (also inside arrays and maps; a `null` is defaulted
    /// only where the schema is not nullable), then drops the remaining `null`s of
    /// non-nullable fields without a default (upstream `PruneNonNullableNullsWithoutDefaults`,
    /// which always follows defaulting).
    pub fn apply_defaults(&self, obj: &mut Value) {
        defaults::default(obj, Some(&self.root));
        defaults::prune_nulls(obj, Some(&self.root));
    }

    /// Validates a custom resource: the OpenAPI value validations (types, formats,
    /// `required`, `enum`, bounds, lengths, item and property counts, `uniqueItems`,
    /// `pattern`, `multipleOf`, `nullable`, int-or-string, `allOf`/`anyOf`/`oneOf`/`not`),
    /// embedded resources (`apiVersion`/`kind`/`metadata`) and list-type set/map
    /// uniqueness, then the `x-kubernetes-validations` CEL rules (`self`; transition rules,
    /// which use `oldSelf`, only run on update).
    pub fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate::validate(&self.root, obj, None);
        errs.extend(cel::validate(&self.rules, &self.root, obj, None));
        embedded::validate_embedded("", obj, Some(&self.root), &mut errs);
        if let Some(map) = obj.as_object() {
            embedded::validate_list_types("", &self.root, map, &mut errs);
        }
        errs
    }

    /// Like [`Structural::validate`], for an update: errors of values unchanged from `old`
    /// are dropped (upstream's validation ratcheting), and list-type uniqueness is only
    /// enforced when `old` satisfied it. CEL rules see `oldSelf` (correlated by property,
    /// map key and list-map key); non-transition rules are skipped on unchanged values.
    pub fn validate_update(&self, obj: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = validate::validate(&self.root, obj, Some(old));
        errs.extend(cel::validate(&self.rules, &self.root, obj, Some(old)));
        embedded::validate_embedded("", obj, Some(&self.root), &mut errs);
        if let (Some(map), Some(old_map)) = (obj.as_object(), old.as_object()) {
            let mut old_errs = Vec::new();
            embedded::validate_list_types("", &self.root, old_map, &mut old_errs);
            if old_errs.is_empty() {
                embedded::validate_list_types("", &self.root, map, &mut errs);
            }
        }
        errs
    }

    /// The schema as published in OpenAPI v3 (a `components/schemas` entry).
    pub fn to_openapi_v3(&self) -> Value {
        openapi::to_v3(&self.root)
    }

    /// The schema as published in OpenAPI v2 (a `definitions` entry): without the
    /// constructs v2 cannot express, as upstream's `ToStructuralOpenAPIV2` drops them.
    pub fn to_openapi_v2(&self) -> Value {
        openapi::to_v2(&self.root)
    }
}

/// Decodes a schema and refuses what `NewStructural` refuses, as one `Invalid` error at
/// `path` (upstream's `field.Invalid(path, "", err.Error())`).
fn parse(schema: &Value, path: &str) -> Result<Node, Vec<FieldError>> {
    let root = Node::parse(schema, path)
        .map_err(|e| vec![FieldError::invalid(&e.path, e.value, &e.detail)])?;
    if let Some(msg) = structural::unsupported(&root) {
        return Err(vec![FieldError::invalid(path, "", &msg)]);
    }
    Ok(root)
}
