//! The `identity` provider: values are stored as they are (upstream's
//! `NewEncryptCheckTransformer`). It refuses to read encrypted data, so that a configuration
//! listing `identity` before an encrypting provider still reads what that provider wrote.

use bytes::Bytes;

use super::{Context, TransformError, Transformer, Untransformed};

/// The prefix every encrypted value starts with.
pub const ENCRYPTED_PREFIX: &[u8] = b"k8s:enc:";

/// Upstream's error for encrypted data read by `identity`.
pub const ENCRYPTED_DATA_ERROR: &str = "identity transformer tried to read encrypted data";

/// Stores values unchanged; reads anything but encrypted data.
#[derive(Clone, Copy, Debug, Default)]
pub struct Identity;

impl Transformer for Identity {
    fn transform_from_storage(
        &self,
        data: Bytes,
        _ctx: &Context<'_>,
    ) -> Result<Untransformed, TransformError> {
        if data.starts_with(ENCRYPTED_PREFIX) {
            return Err(TransformError::new(ENCRYPTED_DATA_ERROR));
        }
        Ok(Untransformed { data, stale: false })
    }

    fn transform_to_storage(
        &self,
        data: Bytes,
        _ctx: &Context<'_>,
    ) -> Result<Bytes, TransformError> {
        Ok(data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CTX: Context<'static> = Context {
        authenticated_data: b"/registry/secrets/ns/a",
        resource: "secrets",
    };

    #[test]
    fn identity_passes_plain_data_and_refuses_encrypted_data() {
        let plain = Bytes::from_static(br#"{"kind":"Secret"}"#);
        let stored = Identity.transform_to_storage(plain.clone(), &CTX).unwrap();
        assert_eq!(stored, plain);
        let read = Identity.transform_from_storage(stored, &CTX).unwrap();
        assert_eq!(read.data, plain);
        assert!(!read.stale);
        let err = Identity
            .transform_from_storage(Bytes::from_static(b"k8s:enc:aescbc:v1:key1:xyz"), &CTX)
            .unwrap_err();
        assert_eq!(err.to_string(), ENCRYPTED_DATA_ERROR);
    }
}
