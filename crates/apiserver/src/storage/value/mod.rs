//! Transformation of stored values, the analogue of upstream's `pkg/storage/value`: encryption
//! at rest. Every value a backend writes passes through its resource's [`Transformer`] on the
//! way to storage, and every value it reads on the way back; the watch cache and everything
//! above it only ever see the plain JSON.
//!
//! The stored form of an encrypted value is upstream's: `k8s:enc:<provider>:v1:<key name>:`
//! followed by the provider's bytes, so data written here and by kube-apiserver read the same.

pub mod aes;
pub mod identity;
pub mod metrics;
pub mod prefix;
pub mod resource;
pub mod secretbox;
#[cfg(test)]
pub mod testing;

use bytes::Bytes;

pub use prefix::{PrefixTransformer, PrefixTransformers};
pub use resource::{GroupResource, ResourceTransformer, ResourceTransformers, TransformerSet};

/// Why a value could not be transformed (upstream's error texts).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TransformError(pub String);

impl TransformError {
    /// An error with this text.
    pub fn new(message: impl Into<String>) -> Self {
        TransformError(message.into())
    }
}

/// What a transformation may need to know about a value (upstream's `value.Context`, plus the
/// resource its request info would carry).
#[derive(Clone, Copy, Debug)]
pub struct Context<'a> {
    /// Data identifying where the value lives, bound into authenticated encryption so a value
    /// copied to another key does not decrypt: the storage key (upstream's
    /// `authenticatedDataString(key)`).
    pub authenticated_data: &'a [u8],
    /// The resource as upstream prints a group-resource (`secrets`, `deployments.apps`): the
    /// `resource` label of the transformation metrics.
    pub resource: &'a str,
}

/// A value read back from storage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Untransformed {
    /// The plain value.
    pub data: Bytes,
    /// The value was not written by the current write transformer (another provider or key
    /// read it): an update should rewrite it even when its content does not change, so that
    /// rewriting objects rotates them to the current key.
    pub stale: bool,
}

/// Turns values into their stored form and back (upstream's `value.Transformer`). Each method
/// must undo the other.
pub trait Transformer: Send + Sync {
    /// Reads a stored value.
    fn transform_from_storage(
        &self,
        data: Bytes,
        ctx: &Context<'_>,
    ) -> Result<Untransformed, TransformError>;

    /// Produces the stored form of a value.
    fn transform_to_storage(&self, data: Bytes, ctx: &Context<'_>)
    -> Result<Bytes, TransformError>;
}

/// Upstream's `errors.Reduce(errors.NewAggregate(errs))` text: one error as itself, several as
/// `[a, b]`.
pub(crate) fn reduce_errors(errors: &[TransformError]) -> Option<TransformError> {
    match errors {
        [] => None,
        [one] => Some(one.clone()),
        many => {
            let texts: Vec<&str> = many.iter().map(|e| e.0.as_str()).collect();
            Some(TransformError(format!("[{}]", texts.join(", "))))
        }
    }
}

/// Fills `buf` from the operating system's random source (upstream reads `crypto/rand`).
pub(crate) fn random_bytes(buf: &mut [u8]) -> Result<(), TransformError> {
    use rand::TryRngCore;
    rand::rngs::OsRng
        .try_fill_bytes(buf)
        .map_err(|_| TransformError::new("unable to read sufficient random bytes"))
}
