//! The `aescbc` and `aesgcm` providers (upstream's `encrypt/aes`), with AES-128, AES-192 or
//! AES-256 by the key's length.
//!
//! - CBC: a random 16-byte IV, then the PKCS#7-padded value encrypted in CBC mode. No
//!   authentication, no authenticated data.
//! - GCM: a random 12-byte nonce, then the sealed value with its 16-byte tag; the storage key
//!   is the authenticated data, so a value copied under another key does not open.

use aes::{Aes128, Aes192, Aes256};
use aes_gcm::aead::consts::U12;
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes128Gcm, Aes256Gcm, AesGcm, Nonce};
use bytes::Bytes;
use cbc::cipher::block_padding::NoPadding;
use cbc::cipher::{BlockDecryptMut, BlockEncryptMut, KeyIvInit};

use super::{Context, TransformError, Transformer, Untransformed, random_bytes};

/// The stored prefix of `aescbc` values (before the key name).
pub const CBC_PREFIX: &str = "k8s:enc:aescbc:v1:";
/// The stored prefix of `aesgcm` values (before the key name).
pub const GCM_PREFIX: &str = "k8s:enc:aesgcm:v1:";
/// Key lengths AES accepts (upstream's `aesKeySizes`).
pub const KEY_SIZES: [usize; 3] = [16, 24, 32];

const BLOCK_SIZE: usize = 16;
const GCM_NONCE_SIZE: usize = 12;

const TOO_SHORT: &str = "the stored data was shorter than the required size";

/// Go's `aes.KeySizeError` text.
fn key_size_error(len: usize) -> TransformError {
    TransformError(format!("crypto/aes: invalid key size {len}"))
}

/// AES-CBC with PKCS#7 padding (upstream's `NewCBCTransformer`).
pub struct Cbc {
    key: Vec<u8>,
}

impl Cbc {
    /// A transformer for a 16, 24 or 32-byte key.
    pub fn new(key: &[u8]) -> Result<Self, TransformError> {
        if !KEY_SIZES.contains(&key.len()) {
            return Err(key_size_error(key.len()));
        }
        Ok(Cbc { key: key.to_vec() })
    }

    fn encrypt_in_place(&self, iv: &[u8], buf: &mut [u8]) -> Result<(), TransformError> {
        let len = buf.len();
        let fail = |_| TransformError::new("cannot initialise AES-CBC");
        let done = match self.key.len() {
            16 => cbc::Encryptor::<Aes128>::new_from_slices(&self.key, iv)
                .map_err(fail)?
                .encrypt_padded_mut::<NoPadding>(buf, len)
                .is_ok(),
            24 => cbc::Encryptor::<Aes192>::new_from_slices(&self.key, iv)
                .map_err(fail)?
                .encrypt_padded_mut::<NoPadding>(buf, len)
                .is_ok(),
            _ => cbc::Encryptor::<Aes256>::new_from_slices(&self.key, iv)
                .map_err(fail)?
                .encrypt_padded_mut::<NoPadding>(buf, len)
                .is_ok(),
        };
        done.then_some(())
            .ok_or_else(|| TransformError::new("the data is not a multiple of the block size"))
    }

    fn decrypt_in_place(&self, iv: &[u8], buf: &mut [u8]) -> Result<(), TransformError> {
        let fail = |_| TransformError::new("cannot initialise AES-CBC");
        let done = match self.key.len() {
            16 => cbc::Decryptor::<Aes128>::new_from_slices(&self.key, iv)
                .map_err(fail)?
                .decrypt_padded_mut::<NoPadding>(buf)
                .is_ok(),
            24 => cbc::Decryptor::<Aes192>::new_from_slices(&self.key, iv)
                .map_err(fail)?
                .decrypt_padded_mut::<NoPadding>(buf)
                .is_ok(),
            _ => cbc::Decryptor::<Aes256>::new_from_slices(&self.key, iv)
                .map_err(fail)?
                .decrypt_padded_mut::<NoPadding>(buf)
                .is_ok(),
        };
        done.then_some(()).ok_or_else(|| {
            TransformError::new("the stored data is not a multiple of the block size")
        })
    }
}

impl Transformer for Cbc {
    fn transform_from_storage(
        &self,
        data: Bytes,
        _ctx: &Context<'_>,
    ) -> Result<Untransformed, TransformError> {
        if data.len() < BLOCK_SIZE {
            return Err(TransformError::new(TOO_SHORT));
        }
        let (iv, body) = data.split_at(BLOCK_SIZE);
        if body.len() % BLOCK_SIZE != 0 {
            return Err(TransformError::new(
                "the stored data is not a multiple of the block size",
            ));
        }
        let mut plain = body.to_vec();
        self.decrypt_in_place(iv, &mut plain)?;
        // PKCS#7, checked as upstream checks it.
        let Some(&last) = plain.last() else {
            return Err(TransformError::new(
                "invalid PKCS7 data (empty or not padded)",
            ));
        };
        let padding = usize::from(last);
        if padding == 0 || padding > plain.len() {
            return Err(TransformError::new(
                "invalid PKCS7 data (empty or not padded)",
            ));
        }
        let size = plain.len() - padding;
        if plain[size..].iter().any(|&b| b != last) {
            return Err(TransformError::new("invalid padding on input"));
        }
        plain.truncate(size);
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
        let padding = BLOCK_SIZE - data.len() % BLOCK_SIZE;
        let mut out = vec![0u8; BLOCK_SIZE + data.len() + padding];
        let (iv, body) = out.split_at_mut(BLOCK_SIZE);
        random_bytes(iv)?;
        body[..data.len()].copy_from_slice(&data);
        body[data.len()..].fill(padding as u8);
        let iv = iv.to_vec();
        self.encrypt_in_place(&iv, body)?;
        Ok(Bytes::from(out))
    }
}

enum GcmCipher {
    A128(Box<Aes128Gcm>),
    A192(Box<AesGcm<Aes192, U12>>),
    A256(Box<Aes256Gcm>),
}

/// AES-GCM with a random 96-bit nonce (upstream's `NewGCMTransformer`).
pub struct Gcm {
    cipher: GcmCipher,
}

impl Gcm {
    /// A transformer for a 16, 24 or 32-byte key.
    pub fn new(key: &[u8]) -> Result<Self, TransformError> {
        let invalid = |_| key_size_error(key.len());
        let cipher = match key.len() {
            16 => GcmCipher::A128(Box::new(Aes128Gcm::new_from_slice(key).map_err(invalid)?)),
            24 => GcmCipher::A192(Box::new(
                AesGcm::<Aes192, U12>::new_from_slice(key).map_err(invalid)?,
            )),
            32 => GcmCipher::A256(Box::new(Aes256Gcm::new_from_slice(key).map_err(invalid)?)),
            n => return Err(key_size_error(n)),
        };
        Ok(Gcm { cipher })
    }
}

/// Go's text for a GCM value that does not open.
const GCM_OPEN_FAILED: &str = "cipher: message authentication failed";

impl Transformer for Gcm {
    fn transform_from_storage(
        &self,
        data: Bytes,
        ctx: &Context<'_>,
    ) -> Result<Untransformed, TransformError> {
        if data.len() < GCM_NONCE_SIZE {
            return Err(TransformError::new(TOO_SHORT));
        }
        let (nonce, sealed) = data.split_at(GCM_NONCE_SIZE);
        let nonce = Nonce::<U12>::from_slice(nonce);
        let payload = Payload {
            msg: sealed,
            aad: ctx.authenticated_data,
        };
        let plain = match &self.cipher {
            GcmCipher::A128(c) => c.decrypt(nonce, payload),
            GcmCipher::A192(c) => c.decrypt(nonce, payload),
            GcmCipher::A256(c) => c.decrypt(nonce, payload),
        }
        .map_err(|_| TransformError::new(GCM_OPEN_FAILED))?;
        Ok(Untransformed {
            data: Bytes::from(plain),
            stale: false,
        })
    }

    fn transform_to_storage(
        &self,
        data: Bytes,
        ctx: &Context<'_>,
    ) -> Result<Bytes, TransformError> {
        let mut nonce = [0u8; GCM_NONCE_SIZE];
        random_bytes(&mut nonce)
            .map_err(|e| TransformError(format!("failed to write nonce for AES-GCM: {e}")))?;
        let payload = Payload {
            msg: &data,
            aad: ctx.authenticated_data,
        };
        let n = Nonce::<U12>::from_slice(&nonce);
        let sealed = match &self.cipher {
            GcmCipher::A128(c) => c.encrypt(n, payload),
            GcmCipher::A192(c) => c.encrypt(n, payload),
            GcmCipher::A256(c) => c.encrypt(n, payload),
        }
        .map_err(|_| TransformError::new("AES-GCM encryption failed"))?;
        let mut out = Vec::with_capacity(GCM_NONCE_SIZE + sealed.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        Ok(Bytes::from(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: Context<'static> = Context {
        authenticated_data: b"/registry/secrets/default/s1",
        resource: "secrets",
    };

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn cbc_round_trips_with_a_fresh_iv_each_time_for_every_key_size() {
        for size in KEY_SIZES {
            let t = Cbc::new(&vec![7u8; size]).unwrap();
            for len in [0usize, 1, 15, 16, 17, 100] {
                let plain = Bytes::from(vec![b'x'; len]);
                let a = t.transform_to_storage(plain.clone(), &KEY).unwrap();
                let b = t.transform_to_storage(plain.clone(), &KEY).unwrap();
                assert_ne!(a, b, "random IV");
                // IV + the value padded to the next whole block (a full block when aligned).
                assert_eq!(a.len(), 16 + (len / 16 + 1) * 16);
                assert_eq!(t.transform_from_storage(a, &KEY).unwrap().data, plain);
            }
        }
        assert_eq!(
            Cbc::new(&[0; 5]).err().unwrap().to_string(),
            "crypto/aes: invalid key size 5"
        );
    }

    const KNOWN_PLAIN: &[u8] = br#"{"kind":"Secret","apiVersion":"v1"}"#;

    /// Known answers computed independently (Python's `cryptography`: AES-CBC with PKCS#7,
    /// IV `a0..af`; AES-GCM with nonce `b0..bb` and the storage key as associated data),
    /// laid out as upstream stores them (IV or nonce first).
    #[test]
    fn cbc_and_gcm_read_known_answers() {
        let cases: [(&str, &str, Box<dyn Transformer>); 4] = [
            (
                "cbc256",
                "a0a1a2a3a4a5a6a7a8a9aaabacadaeafda54e881eafae68f34aa2ddb00e56b52372721a55a897321873ece06f719cdc84d165043f360bb841394d4008eac0e6c",
                Box::new(Cbc::new(&(0u8..32).collect::<Vec<_>>()).unwrap()),
            ),
            (
                "cbc128",
                "a0a1a2a3a4a5a6a7a8a9aaabacadaeafc15858287920aa138bca2074cc32f9c1f6ab1bf20b189049ed34234cb4e336513600f935c935e159e4c5bfa3bbf3c149",
                Box::new(Cbc::new(&(0u8..16).collect::<Vec<_>>()).unwrap()),
            ),
            (
                "gcm256",
                "b0b1b2b3b4b5b6b7b8b9babbe27731c282a9996565abf2c1bf38fce0a81e28a27c78ea472da7ed9f7eb8d06034695e30dd8ead052fa80faa449a3fe33a49e0",
                Box::new(Gcm::new(&(0u8..32).collect::<Vec<_>>()).unwrap()),
            ),
            (
                "gcm192",
                "b0b1b2b3b4b5b6b7b8b9babbc7c4383e6632ff2f3545f365fa251130b900942d594be7041a9734db0c499869a6b4689170413dfbe4450d45c683d0fa538b1c",
                Box::new(Gcm::new(&(0u8..24).collect::<Vec<_>>()).unwrap()),
            ),
        ];
        for (name, stored, t) in cases {
            let read = t
                .transform_from_storage(Bytes::from(hex(stored)), &KEY)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(&read.data[..], KNOWN_PLAIN, "{name}");
        }
    }

    #[test]
    fn cbc_refuses_bad_data_with_upstream_errors() {
        let t = Cbc::new(&[1; 32]).unwrap();
        let err = |d: &[u8]| {
            t.transform_from_storage(Bytes::copy_from_slice(d), &KEY)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(err(&[0; 10]), TOO_SHORT);
        assert_eq!(
            err(&[0; 20]),
            "the stored data is not a multiple of the block size"
        );
        // Decrypted with the wrong key: the padding does not check out (almost surely).
        let other = Cbc::new(&[2; 32]).unwrap();
        let stored = other
            .transform_to_storage(Bytes::from_static(b"{\"a\":1}"), &KEY)
            .unwrap();
        assert!(t.transform_from_storage(stored, &KEY).is_err());
    }

    #[test]
    fn gcm_round_trips_and_binds_the_storage_key() {
        for size in KEY_SIZES {
            let t = Gcm::new(&vec![9u8; size]).unwrap();
            let plain = Bytes::from_static(br#"{"kind":"Secret"}"#);
            let a = t.transform_to_storage(plain.clone(), &KEY).unwrap();
            let b = t.transform_to_storage(plain.clone(), &KEY).unwrap();
            assert_ne!(a, b, "random nonce");
            assert_eq!(a.len(), 12 + plain.len() + 16);
            assert_eq!(
                t.transform_from_storage(a.clone(), &KEY).unwrap().data,
                plain
            );
            let elsewhere = Context {
                authenticated_data: b"/registry/secrets/default/s2",
                resource: "secrets",
            };
            assert_eq!(
                t.transform_from_storage(a, &elsewhere)
                    .unwrap_err()
                    .to_string(),
                GCM_OPEN_FAILED
            );
        }
        assert_eq!(
            Gcm::new(&[0; 10]).err().unwrap().to_string(),
            "crypto/aes: invalid key size 10"
        );
        let t = Gcm::new(&[1; 16]).unwrap();
        assert_eq!(
            t.transform_from_storage(Bytes::from_static(b"short"), &KEY)
                .unwrap_err()
                .to_string(),
            TOO_SHORT
        );
    }
}
