//! Patch application for the PATCH verb.
//!
//! [`strategic`] applies `application/strategic-merge-patch+json` bodies (what kubectl's
//! client-side `apply`, `patch`, `label` and `annotate` send), porting the behaviour of
//! `k8s.io/apimachinery/pkg/util/strategicpatch`. [`meta`] says how each field merges (the
//! `x-kubernetes-patch-strategy` / `x-kubernetes-patch-merge-key` facts of the type's schema).

mod gofmt;
pub mod meta;
pub mod strategic;

pub use meta::{FieldLookup, FieldPatchMeta, NoMeta, PatchMeta, SchemaPatchMeta};
pub use strategic::apply_strategic_merge_patch;

/// Why a strategic merge patch could not be applied.
///
/// The messages are upstream's (`mergepatch` and `strategicpatch` errors), because clients see
/// them in the `Status` the REST layer returns (kube answers 422 for most of them, 400 for a
/// patch that is not a JSON object).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// The original object or the patch is not a JSON object.
    #[error("invalid JSON document")]
    BadJsonDoc,
    /// A list whose elements are lists.
    #[error("lists of lists are not supported")]
    NoListOfLists,
    /// A `$deleteFromPrimitiveList` key without the `/<field>` suffix.
    #[error("invalid patch format of primitive list")]
    BadPatchFormatForPrimitiveList,
    /// A `$retainKeys` directive that is not a list, or a patch field missing from it.
    #[error("invalid patch format of retainKeys")]
    BadPatchFormatForRetainKeys,
    /// A malformed `$setElementOrder` directive.
    #[error("invalid patch format of setElementOrder list")]
    BadPatchFormatForSetElementOrderList,
    /// A list item of a merging list lacks the declared merge key.
    #[error("map: {map} does not contain declared merge key: {merge_key}")]
    NoMergeKey {
        /// The item, in Go's `%v` notation.
        map: String,
        /// The merge key declared for the list.
        merge_key: String,
    },
    /// A value of the wrong JSON type (Go type names, e.g. `map[string]interface {}`).
    #[error("expected a {expected}, but received a {actual}")]
    BadArgType {
        /// The Go type that was expected.
        expected: &'static str,
        /// The Go type that was found.
        actual: &'static str,
    },
    /// A `$patch` directive with an unknown value.
    #[error("unknown patch type: {patch_type} in map: {map}")]
    BadPatchType {
        /// The directive's value, in Go's `%s` notation.
        patch_type: String,
        /// The map holding it, in Go's `%v` notation.
        map: String,
    },
    /// `$patch: merge` inside a list.
    #[error("merging lists cannot yet be specified in the patch")]
    MergeDirectiveInList,
    /// A list of maps with merge strategy but no merge key in the schema.
    #[error("cannot merge lists without merge key for {0}")]
    NoMergeKeyDeclared(String),
    /// The elements of a merged list do not all have the same JSON type.
    #[error("list element types are not identical: {0}")]
    ElementTypesNotIdentical(String),
    /// An ordering directive applied to lists that are empty on both sides.
    #[error("no elements in any of the given slices")]
    NoElements,
    /// A patch strategy combination the schema must not declare.
    #[error("unexpected patch strategy: {0}")]
    UnexpectedPatchStrategy(String),
    /// The patch list is not ordered consistently with its `$setElementOrder` list.
    #[error("The order in patch list:\n{patch}\n doesn't match $setElementOrder list:\n{order}\n")]
    SetElementOrderMismatch {
        /// The patch list, in Go's `%v` notation.
        patch: String,
        /// The order list, in Go's `%v` notation.
        order: String,
    },
    /// A merging list contains something other than a map at this index.
    #[error("value for key {0} is not a map")]
    NotAMap(usize),
    /// The schema description references a definition it does not contain.
    #[error("unable to resolve {0} in OpenAPI V3")]
    UnresolvedReference(String),
}

impl PatchError {
    /// The HTTP status kube's PATCH handler answers with for this error.
    ///
    /// Upstream turns the malformed-directive errors into 400 and lists of lists into 422;
    /// every other strategic merge patch error reaches the client as a bare error, which
    /// becomes a 500 `Status` with reason `""` and the error's message.
    pub fn status_code(&self) -> http::StatusCode {
        match self {
            Self::BadJsonDoc
            | Self::BadPatchFormatForPrimitiveList
            | Self::BadPatchFormatForRetainKeys
            | Self::BadPatchFormatForSetElementOrderList => http::StatusCode::BAD_REQUEST,
            Self::NoListOfLists => http::StatusCode::UNPROCESSABLE_ENTITY,
            _ => http::StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::PatchError;

    #[test]
    fn status_codes_follow_the_patch_handler() {
        assert_eq!(PatchError::BadJsonDoc.status_code(), 400);
        assert_eq!(PatchError::BadPatchFormatForRetainKeys.status_code(), 400);
        assert_eq!(PatchError::NoListOfLists.status_code(), 422);
        assert_eq!(PatchError::MergeDirectiveInList.status_code(), 500);
    }
}
