//! The `secretbox` provider (upstream's `encrypt/secretbox`): NaCl secretbox (XSalsa20 and
//! Poly1305) with a 32-byte key. Stored as a random 24-byte nonce followed by the box (the
//! 16-byte tag, then the encrypted value), as Go's `secretbox.Seal` lays it out.

use bytes::Bytes;
use crypto_secretbox::aead::{Aead, KeyInit};
use crypto_secretbox::{Key, Nonce, XSalsa20Poly1305};

use super::{Context, TransformError, Transformer, Untransformed, random_bytes};

/// The stored prefix of `secretbox` values (before the key name).
pub const PREFIX: &str = "k8s:enc:secretbox:v1:";
/// The only key length secretbox takes.
pub const KEY_SIZE: usize = 32;

const NONCE_SIZE: usize = 24;
const OVERHEAD: usize = 16;

/// XSalsa20-Poly1305 with a random nonce per value.
pub struct Secretbox {
    cipher: XSalsa20Poly1305,
}

impl Secretbox {
    /// A transformer for a 32-byte key.
    pub fn new(key: &[u8; KEY_SIZE]) -> Self {
        Secretbox {
            cipher: XSalsa20Poly1305::new(Key::from_slice(key)),
        }
    }
}

impl Transformer for Secretbox {
    fn transform_from_storage(
        &self,
        data: Bytes,
        _ctx: &Context<'_>,
    ) -> Result<Untransformed, TransformError> {
        if data.len() < OVERHEAD + NONCE_SIZE {
            return Err(TransformError::new(
                "the stored data was shorter than the required size",
            ));
        }
        let (nonce, sealed) = data.split_at(NONCE_SIZE);
        let plain = self
            .cipher
            .decrypt(Nonce::from_slice(nonce), sealed)
            // Upstream's text for a box that does not open.
            .map_err(|_| TransformError::new("output array was not large enough for encryption"))?;
        Ok(Untransformed {
            data: Bytes::from(plain),
            stale: false,
        })
    }

    fn transform_to_storage(
        &self,
        data: Bytes,
        _ctx: &Context<'_>,
    ) -> Result<Bytes, TransformError> {
        let mut nonce = [0u8; NONCE_SIZE];
        random_bytes(&mut nonce)?;
        let sealed = self
            .cipher
            .encrypt(Nonce::from_slice(&nonce), data.as_ref())
            .map_err(|_| TransformError::new("secretbox encryption failed"))?;
        let mut out = Vec::with_capacity(NONCE_SIZE + sealed.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        Ok(Bytes::from(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CTX: Context<'static> = Context {
        authenticated_data: b"/registry/secrets/default/s1",
        resource: "secrets",
    };

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// NaCl's own secretbox test vector (`tests/secretbox.c`: `firstkey`, `nonce`, `m`, `c`),
    /// laid out as upstream stores it: nonce, tag, encrypted message.
    #[test]
    fn secretbox_reads_the_nacl_test_vector() {
        let key = hex("1b27556473e985d462cd51197a9a46c76009549eac6474f206c4ee0844f68389");
        let nonce = hex("69696ee955b62b73cd62bda875fc73d68219e0036b7a0b37");
        let m = hex(
            "be075fc53c81f2d5cf141316ebeb0c7b5228c52a4c62cbd44b66849b64244ffc
             e5ecbaaf33bd751a1ac728d45e6c61296cdc3c01233561f41db66cce314adb31
             0e3be8250c46f06dceea3a7fa1348057e2f6556ad6b1318a024a838f21af1fde
             048977eb48f59ffd4924ca1c60902e52f0a089bc76897040e082f93776384864
             5e0705",
        );
        let c = hex(
            "f3ffc7703f9400e52a7dfb4b3d3305d98e993b9f48681273c29650ba32fc76ce
             48332ea7164d96a4476fb8c531a1186ac0dfc17c98dce87b4da7f011ec48c972
             71d2c20f9b928fe2270d6fb863d51738b48eeee314a7cc8ab932164548e526ae
             90224368517acfeabd6bb3732bc0e9da99832b61ca01b6de56244a9e88d5f9b3
             7973f622a43d14a6599b1f654cb45a74e355a5",
        );
        let t = Secretbox::new(&key.clone().try_into().unwrap());
        let mut stored = nonce.clone();
        stored.extend_from_slice(&c);
        let read = t.transform_from_storage(Bytes::from(stored), &CTX).unwrap();
        assert_eq!(read.data.to_vec(), m);
    }

    #[test]
    fn secretbox_round_trips_with_fresh_nonces_and_refuses_tampering() {
        let t = Secretbox::new(&[3; 32]);
        let plain = Bytes::from_static(br#"{"kind":"Secret"}"#);
        let a = t.transform_to_storage(plain.clone(), &CTX).unwrap();
        let b = t.transform_to_storage(plain.clone(), &CTX).unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), NONCE_SIZE + OVERHEAD + plain.len());
        assert_eq!(
            t.transform_from_storage(a.clone(), &CTX).unwrap().data,
            plain
        );
        let mut bad = a.to_vec();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert_eq!(
            t.transform_from_storage(Bytes::from(bad), &CTX)
                .unwrap_err()
                .to_string(),
            "output array was not large enough for encryption"
        );
        assert_eq!(
            t.transform_from_storage(Bytes::from_static(b"tiny"), &CTX)
                .unwrap_err()
                .to_string(),
            "the stored data was shorter than the required size"
        );
    }
}
