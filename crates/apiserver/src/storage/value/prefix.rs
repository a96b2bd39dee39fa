//! Choosing a transformer by the prefix of the stored value (upstream's
//! `NewPrefixTransformers`): the first transformer writes, every transformer whose prefix the
//! value carries may read it. Providers are chosen this way (`k8s:enc:aescbc:v1:`), and so are
//! the keys of one provider (`key1:`).

use std::sync::Arc;
use std::time::Instant;

use bytes::{BufMut, Bytes, BytesMut};

use super::metrics::{FROM_STORAGE, TO_STORAGE, record_transformation};
use super::{Context, TransformError, Transformer, Untransformed, reduce_errors};

/// A transformer and the prefix its stored values carry (empty for `identity`).
#[derive(Clone)]
pub struct PrefixTransformer {
    /// The prefix, e.g. `k8s:enc:aescbc:v1:` or `key1:`.
    pub prefix: Bytes,
    /// What reads and writes the bytes after the prefix.
    pub transformer: Arc<dyn Transformer>,
}

impl std::fmt::Debug for PrefixTransformer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrefixTransformer")
            .field("prefix", &String::from_utf8_lossy(&self.prefix))
            .finish_non_exhaustive()
    }
}

impl PrefixTransformer {
    /// The `transformer_prefix` metric label: the prefix, or `identity` for none.
    fn label(&self) -> &str {
        if self.prefix.is_empty() {
            "identity"
        } else {
            std::str::from_utf8(&self.prefix).unwrap_or("")
        }
    }
}

/// Transformers tried in order by prefix; the first one writes.
#[derive(Debug)]
pub struct PrefixTransformers {
    transformers: Vec<PrefixTransformer>,
    no_match: TransformError,
}

impl PrefixTransformers {
    /// `transformers` (at least one) in order; `no_match` is the error for a value none of
    /// them has the prefix of.
    pub fn new(no_match: &str, transformers: Vec<PrefixTransformer>) -> Self {
        PrefixTransformers {
            transformers,
            no_match: TransformError::new(no_match),
        }
    }
}

impl Transformer for PrefixTransformers {
    fn transform_from_storage(
        &self,
        data: Bytes,
        ctx: &Context<'_>,
    ) -> Result<Untransformed, TransformError> {
        let start = Instant::now();
        let mut errors = Vec::new();
        for (i, t) in self.transformers.iter().enumerate() {
            if !data.starts_with(&t.prefix) {
                continue;
            }
            let rest = data.slice(t.prefix.len()..);
            let result = t.transformer.transform_from_storage(rest, ctx);
            // An identity reader in front of an encrypting one refuses encrypted data; that is
            // not a reason to stop looking.
            if t.prefix.is_empty() && result.is_err() {
                continue;
            }
            record_transformation(
                ctx.resource,
                FROM_STORAGE,
                t.label(),
                start.elapsed(),
                result.is_ok(),
            );
            match result {
                // Several providers of one kind share a prefix (a key being rotated away from
                // and one being rotated to): a failure is not the final word.
                Err(e) => errors.push(e),
                Ok(read) => {
                    return Ok(Untransformed {
                        data: read.data,
                        stale: read.stale || i != 0,
                    });
                }
            }
        }
        if let Some(err) = reduce_errors(&errors) {
            tracing::error!(resource = ctx.resource, "failed to decrypt data: {err}");
            return Err(err);
        }
        record_transformation(
            ctx.resource,
            FROM_STORAGE,
            "unknown",
            start.elapsed(),
            false,
        );
        Err(self.no_match.clone())
    }

    fn transform_to_storage(
        &self,
        data: Bytes,
        ctx: &Context<'_>,
    ) -> Result<Bytes, TransformError> {
        let start = Instant::now();
        let Some(first) = self.transformers.first() else {
            return Err(self.no_match.clone());
        };
        let result = first.transformer.transform_to_storage(data, ctx);
        record_transformation(
            ctx.resource,
            TO_STORAGE,
            first.label(),
            start.elapsed(),
            result.is_ok(),
        );
        let out = result.inspect_err(|err| {
            tracing::error!(resource = ctx.resource, "failed to encrypt data: {err}");
        })?;
        if first.prefix.is_empty() {
            return Ok(out);
        }
        let mut prefixed = BytesMut::with_capacity(first.prefix.len() + out.len());
        prefixed.put_slice(&first.prefix);
        prefixed.put_slice(&out);
        Ok(prefixed.freeze())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::value::identity::Identity;

    /// Reverses the bytes; refuses values that are not marked.
    struct Reverse(&'static str);

    impl Transformer for Reverse {
        fn transform_from_storage(
            &self,
            data: Bytes,
            _ctx: &Context<'_>,
        ) -> Result<Untransformed, TransformError> {
            let mut v = data.to_vec();
            v.reverse();
            match v.strip_prefix(self.0.as_bytes()) {
                Some(rest) => Ok(Untransformed {
                    data: Bytes::copy_from_slice(rest),
                    stale: false,
                }),
                None => Err(TransformError::new(format!("not mine: {}", self.0))),
            }
        }

        fn transform_to_storage(
            &self,
            data: Bytes,
            _ctx: &Context<'_>,
        ) -> Result<Bytes, TransformError> {
            let mut v = self.0.as_bytes().to_vec();
            v.extend_from_slice(&data);
            v.reverse();
            Ok(Bytes::from(v))
        }
    }

    fn entry(prefix: &'static str, t: impl Transformer + 'static) -> PrefixTransformer {
        PrefixTransformer {
            prefix: Bytes::from_static(prefix.as_bytes()),
            transformer: Arc::new(t),
        }
    }

    const CTX: Context<'static> = Context {
        authenticated_data: b"/k",
        resource: "secrets",
    };

    #[test]
    fn first_writes_all_read_and_later_ones_are_stale() {
        let old = PrefixTransformers::new("none", vec![entry("p1:", Reverse("a"))]);
        let written_old = old
            .transform_to_storage(Bytes::from_static(b"x"), &CTX)
            .unwrap();
        assert!(written_old.starts_with(b"p1:"));

        let both = PrefixTransformers::new(
            "none",
            vec![entry("p2:", Reverse("b")), entry("p1:", Reverse("a"))],
        );
        let read = both.transform_from_storage(written_old, &CTX).unwrap();
        assert_eq!(&read.data[..], b"x");
        assert!(read.stale, "read by the second transformer");
        let written_new = both
            .transform_to_storage(Bytes::from_static(b"y"), &CTX)
            .unwrap();
        assert!(written_new.starts_with(b"p2:"));
        let read = both.transform_from_storage(written_new, &CTX).unwrap();
        assert_eq!((&read.data[..], read.stale), (&b"y"[..], false));
    }

    #[test]
    fn shared_prefixes_are_all_tried_and_errors_aggregate() {
        let t = PrefixTransformers::new(
            "none",
            vec![entry("p:", Reverse("b")), entry("p:", Reverse("a"))],
        );
        let only_a = PrefixTransformers::new("none", vec![entry("p:", Reverse("a"))]);
        let stored = only_a
            .transform_to_storage(Bytes::from_static(b"v"), &CTX)
            .unwrap();
        let read = t.transform_from_storage(stored, &CTX).unwrap();
        assert_eq!(&read.data[..], b"v");
        assert!(read.stale);

        let stored_c = PrefixTransformers::new("none", vec![entry("p:", Reverse("c"))])
            .transform_to_storage(Bytes::from_static(b"v"), &CTX)
            .unwrap();
        let err = t.transform_from_storage(stored_c, &CTX).unwrap_err();
        assert_eq!(err.to_string(), "[not mine: b, not mine: a]");
        let err = t
            .transform_from_storage(Bytes::from_static(b"q:zzz"), &CTX)
            .unwrap_err();
        assert_eq!(err.to_string(), "none");
    }

    #[test]
    fn identity_first_skips_encrypted_data() {
        let enc = PrefixTransformers::new("none", vec![entry("k8s:enc:x:", Reverse("a"))]);
        let stored = enc
            .transform_to_storage(Bytes::from_static(b"v"), &CTX)
            .unwrap();
        let t = PrefixTransformers::new(
            "none",
            vec![entry("", Identity), entry("k8s:enc:x:", Reverse("a"))],
        );
        let read = t.transform_from_storage(stored, &CTX).unwrap();
        assert_eq!((&read.data[..], read.stale), (&b"v"[..], true));
        let plain = t
            .transform_from_storage(Bytes::from_static(b"{}"), &CTX)
            .unwrap();
        assert_eq!((&plain.data[..], plain.stale), (&b"{}"[..], false));
        assert_eq!(
            t.transform_to_storage(Bytes::from_static(b"{}"), &CTX)
                .unwrap(),
            Bytes::from_static(b"{}")
        );
    }
}
