//! Compact JWS (RFC 7515) as service-account tokens use it: a protected header with `alg` and
//! `kid`, a JSON claims payload and one signature.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value};

use super::keys::{Algorithm, KeyError, PublicKey, SigningKey};

/// The error go-jose reports when no key verifies the signature.
pub const CRYPTO_ERROR: &str = "go-jose/go-jose: error in cryptographic primitive";

/// Signs `claims` with `key`: `base64url(header).base64url(claims).base64url(signature)`, the
/// header `{"alg":…,"kid":…}` as go-jose writes it.
pub fn sign(key: &SigningKey, claims: &Value) -> Result<String, KeyError> {
    let public = key.public_key();
    let header = serde_json::json!({"alg": public.algorithm().name(), "kid": public.kid});
    let header = URL_SAFE_NO_PAD.encode(header.to_string());
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    let signing_input = format!("{header}.{payload}");
    let signature = key.sign(signing_input.as_bytes())?;
    Ok(format!(
        "{signing_input}.{}",
        URL_SAFE_NO_PAD.encode(signature)
    ))
}

/// A token split and decoded, not yet verified.
#[derive(Debug)]
pub struct Parsed<'a> {
    /// The header's `alg` (`None` when it names an algorithm this server does not verify).
    pub alg: Option<Algorithm>,
    /// The header's `kid`, if any.
    pub kid: Option<String>,
    /// The claims.
    pub claims: Map<String, Value>,
    signing_input: &'a str,
    signature: Vec<u8>,
}

/// Splits and decodes a compact JWS; `None` when `token` is not one (upstream then has no
/// opinion on it).
pub fn parse(token: &str) -> Option<Parsed<'_>> {
    let mut parts = token.split('.');
    let (header, payload, signature) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let signing_input = &token[..header.len() + 1 + payload.len()];
    let header: Map<String, Value> =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).ok()?).ok()?;
    let claims: Map<String, Value> =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()?;
    let signature = URL_SAFE_NO_PAD.decode(signature).ok()?;
    Some(Parsed {
        alg: header
            .get("alg")
            .and_then(Value::as_str)
            .and_then(Algorithm::from_name),
        kid: header
            .get("kid")
            .and_then(Value::as_str)
            .filter(|k| !k.is_empty())
            .map(str::to_string),
        claims,
        signing_input,
        signature,
    })
}

impl Parsed<'_> {
    /// Whether one of `keys` verifies the signature: those with the token's key ID first,
    /// all of them when none has it (upstream's key lookup by `kid`).
    pub fn verify(&self, keys: &[PublicKey]) -> bool {
        let Some(alg) = self.alg else {
            return false;
        };
        let matching: Vec<&PublicKey> = keys
            .iter()
            .filter(|k| Some(&k.kid) == self.kid.as_ref())
            .collect();
        let candidates: Vec<&PublicKey> = if matching.is_empty() {
            keys.iter().collect()
        } else {
            matching
        };
        candidates
            .iter()
            .any(|k| k.verify(alg, self.signing_input.as_bytes(), &self.signature))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serviceaccount::keys::{parse_public_keys_pem, parse_signing_key_pem, testkeys};

    #[test]
    fn signed_tokens_verify_and_tampered_ones_do_not() {
        let pem = testkeys::p256_pem();
        let key = parse_signing_key_pem(pem.as_bytes()).unwrap();
        let public = parse_public_keys_pem(pem.as_bytes()).unwrap();
        let token = sign(&key, &serde_json::json!({"sub": "me", "aud": ["a"]})).unwrap();
        let parsed = parse(&token).unwrap();
        assert_eq!(parsed.alg, Some(Algorithm::ES256));
        assert_eq!(parsed.kid.as_deref(), Some(public[0].kid.as_str()));
        assert_eq!(parsed.claims["sub"], "me");
        assert!(parsed.verify(&public));

        let other = parse_public_keys_pem(testkeys::p256_pem().as_bytes()).unwrap();
        assert!(!parsed.verify(&other));
        // Both keys: the one with the token's kid verifies.
        let both: Vec<PublicKey> = other.iter().chain(&public).cloned().collect();
        assert!(parsed.verify(&both));

        let mut pieces: Vec<&str> = token.split('.').collect();
        let forged = URL_SAFE_NO_PAD.encode(r#"{"sub":"admin","aud":["a"]}"#);
        pieces[1] = &forged;
        let forged = pieces.join(".");
        assert!(!parse(&forged).unwrap().verify(&public));
    }

    #[test]
    fn non_jws_input_is_not_parsed() {
        for token in ["", "abc", "a.b", "a.b.c.d", "!!.!!.!!", "e30.e30.@@"] {
            assert!(parse(token).is_none(), "{token}");
        }
    }
}
