//! Transformer sets for the storage tests: AES-CBC with named, fixed 32-byte keys.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;

use super::aes::{CBC_PREFIX, Cbc};
use super::{
    GroupResource, PrefixTransformer, PrefixTransformers, ResourceTransformers, Transformer,
    TransformerSet,
};

/// The core resource `widgets` encrypted by `aescbc` with these keys, the first writing; each key's
/// bytes are derived from its name.
pub fn aescbc_set(names: &[&str]) -> TransformerSet {
    let keys = names
        .iter()
        .map(|name| {
            let mut key = [0u8; 32];
            for (i, b) in name.bytes().cycle().take(32).enumerate() {
                key[i] = b;
            }
            PrefixTransformer {
                prefix: Bytes::from(format!("{name}:")),
                transformer: Arc::new(Cbc::new(&key).expect("32-byte key")),
            }
        })
        .collect();
    let provider = PrefixTransformer {
        prefix: Bytes::from_static(CBC_PREFIX.as_bytes()),
        transformer: Arc::new(PrefixTransformers::new(
            "no matching key was found for the provided AES transformer",
            keys,
        )),
    };
    let all: Arc<dyn Transformer> = Arc::new(PrefixTransformers::new(
        "no matching prefix found",
        vec![provider],
    ));
    TransformerSet::new(HashMap::from([(GroupResource::new("", "widgets"), all)]))
}

/// [`aescbc_set`] mid-rotation: `new` writes, `old` still reads.
pub fn rotating_aescbc() -> Arc<ResourceTransformers> {
    ResourceTransformers::new(aescbc_set(&["new", "old"]))
}
