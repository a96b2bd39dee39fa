//! ES512: ECDSA on P-521 with SHA-512 (RFC 7518 §3.4), which `ring` lacks, with RustCrypto's
//! `p521`. Signatures are JWS's fixed-width `r || s` (66 bytes each); points are SEC 1
//! uncompressed (`04 || x || y`).

use p521::ecdsa::signature::{Signer, Verifier};
use p521::ecdsa::{Signature, SigningKey, VerifyingKey};

/// The length of a coordinate or scalar in bytes.
pub const FIELD_LEN: usize = 66;

/// Whether `signature` (`r || s`) over `message` verifies with the uncompressed `point`.
pub fn verify(point: &[u8], message: &[u8], signature: &[u8]) -> bool {
    let Ok(key) = VerifyingKey::from_sec1_bytes(point) else {
        return false;
    };
    let Ok(signature) = Signature::from_slice(signature) else {
        return false;
    };
    key.verify(message, &signature).is_ok()
}

/// A P-521 private key.
#[derive(Clone)]
pub struct Es512SigningKey {
    key: SigningKey,
    point: Vec<u8>,
}

impl std::fmt::Debug for Es512SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Es512SigningKey")
            .field("point", &self.point)
            .finish_non_exhaustive()
    }
}

impl Es512SigningKey {
    /// The key of big-endian `scalar` (leading zeros may be missing, as some encoders drop
    /// them); `None` when it is not a valid P-521 scalar, or when `point` is given and is
    /// not the scalar's public point.
    pub fn from_scalar(scalar: &[u8], point: Option<&[u8]>) -> Option<Es512SigningKey> {
        if scalar.len() > FIELD_LEN {
            return None;
        }
        let mut padded = vec![0u8; FIELD_LEN - scalar.len()];
        padded.extend_from_slice(scalar);
        let key = SigningKey::from_slice(&padded).ok()?;
        let own = VerifyingKey::from(&key)
            .to_encoded_point(false)
            .as_bytes()
            .to_vec();
        if point.is_some_and(|p| p != own.as_slice()) {
            return None;
        }
        Some(Es512SigningKey { key, point: own })
    }

    /// The public point, uncompressed.
    pub fn public_point(&self) -> &[u8] {
        &self.point
    }

    /// The JWS signature (`r || s`, 132 bytes) of `message` (a random nonce from the
    /// operating system; `None` when it has none to give).
    pub fn sign(&self, message: &[u8]) -> Option<Vec<u8>> {
        let signature: Signature = self.key.try_sign(message).ok()?;
        Some(signature.to_bytes().to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A valid scalar: any value below the group order (here 2^512 - 1 shifted down).
    fn scalar(seed: u8) -> Vec<u8> {
        let mut s = vec![0u8; FIELD_LEN];
        for (i, b) in s.iter_mut().enumerate().skip(2) {
            *b = seed.wrapping_mul(31).wrapping_add(i as u8);
        }
        s
    }

    #[test]
    fn signatures_verify_with_the_public_point_only() {
        let key = Es512SigningKey::from_scalar(&scalar(1), None).unwrap();
        assert_eq!(key.public_point().len(), 1 + 2 * FIELD_LEN);
        let sig = key.sign(b"payload").unwrap();
        assert_eq!(sig.len(), 2 * FIELD_LEN);
        assert!(verify(key.public_point(), b"payload", &sig));
        assert!(!verify(key.public_point(), b"other", &sig));
        let other = Es512SigningKey::from_scalar(&scalar(2), None).unwrap();
        assert!(!verify(other.public_point(), b"payload", &sig));
        assert!(!verify(b"not a point", b"payload", &sig));
        assert!(!verify(key.public_point(), b"payload", &sig[1..]));
    }

    #[test]
    fn scalars_must_match_their_point_and_fit_the_field() {
        let key = Es512SigningKey::from_scalar(&scalar(1), None).unwrap();
        let trimmed = &scalar(1)[2..];
        let same = Es512SigningKey::from_scalar(trimmed, Some(key.public_point())).unwrap();
        assert_eq!(same.public_point(), key.public_point());
        let other = Es512SigningKey::from_scalar(&scalar(2), None).unwrap();
        assert!(Es512SigningKey::from_scalar(&scalar(1), Some(other.public_point())).is_none());
        assert!(Es512SigningKey::from_scalar(&[0u8; FIELD_LEN], None).is_none());
        assert!(Es512SigningKey::from_scalar(&[1u8; FIELD_LEN + 1], None).is_none());
    }
}
