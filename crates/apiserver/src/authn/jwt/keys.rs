//! JSON Web Keys and compact JSON Web Signatures: parsing a token into header, claims and
//! signature, and verifying the signature with an issuer's key (RS256/384/512,
//! PS256/384/512, ES256, ES384 with ring; ES512 with [`super::es512`]).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use serde_json::Value;

/// The signing algorithms upstream accepts for OIDC (`--oidc-signing-algs`).
pub const ALLOWED_SIGNING_ALGS: &[&str] = &[
    "ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "RS256", "RS384", "RS512",
];

/// A token split into its parts; nothing in it is verified yet.
#[derive(Clone, Debug)]
pub struct CompactJws {
    /// The JOSE header.
    pub header: Value,
    /// The claims.
    pub claims: serde_json::Map<String, Value>,
    /// `<header>.<payload>`, what the signature covers.
    pub signing_input: String,
    /// The signature bytes.
    pub signature: Vec<u8>,
}

impl CompactJws {
    /// Splits and decodes `token` (go-jose's messages for the ways it can be malformed).
    pub fn parse(token: &str) -> Result<Self, String> {
        if token.trim_start().starts_with('{') {
            return Err("token is not compact JWT".into());
        }
        let parts: Vec<&str> = token.split('.').collect();
        let [h, p, s] = parts.as_slice() else {
            return Err(format!(
                "malformed jwt, expected 3 parts got {}",
                parts.len()
            ));
        };
        let header: Value = URL_SAFE_NO_PAD
            .decode(h)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or("malformed jwt header")?;
        let payload = URL_SAFE_NO_PAD
            .decode(p)
            .map_err(|e| format!("malformed jwt payload: {e}"))?;
        let claims: serde_json::Map<String, Value> =
            serde_json::from_slice(&payload).map_err(|e| format!("malformed jwt payload: {e}"))?;
        let signature = URL_SAFE_NO_PAD
            .decode(s)
            .map_err(|e| format!("malformed jwt signature: {e}"))?;
        Ok(CompactJws {
            header,
            claims,
            signing_input: format!("{h}.{p}"),
            signature,
        })
    }

    /// The `alg` header.
    pub fn alg(&self) -> &str {
        self.header.get("alg").and_then(Value::as_str).unwrap_or("")
    }

    /// The `kid` header.
    pub fn kid(&self) -> &str {
        self.header.get("kid").and_then(Value::as_str).unwrap_or("")
    }
}

/// A public key from a JWKS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PublicKey {
    /// RSA modulus and exponent (big-endian, no leading zeros).
    Rsa {
        /// Modulus.
        n: Vec<u8>,
        /// Exponent.
        e: Vec<u8>,
    },
    /// An EC point, uncompressed (`04 || x || y`), on the named curve.
    Ec {
        /// `P-256`, `P-384` or `P-521`.
        curve: String,
        /// The point.
        point: Vec<u8>,
    },
}

/// A key with its id and intended algorithm.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Jwk {
    /// `kid`.
    pub kid: String,
    /// `alg`, if the key names one.
    pub alg: String,
    /// The key.
    pub key: PublicKey,
}

fn b64(v: &Value, k: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD
        .decode(v.get(k)?.as_str()?.trim_end_matches('='))
        .ok()
}

impl Jwk {
    /// Parses one JWK; `None` for keys of other types or uses (skipped, as go-jose's
    /// key set does with keys it cannot use).
    pub fn parse(v: &Value) -> Option<Jwk> {
        if v.get("use")
            .and_then(Value::as_str)
            .is_some_and(|u| u != "sig")
        {
            return None;
        }
        let kid = v
            .get("kid")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let alg = v
            .get("alg")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let key = match v.get("kty").and_then(Value::as_str)? {
            "RSA" => {
                let strip = |mut b: Vec<u8>| {
                    let zeros = b.iter().take_while(|x| **x == 0).count();
                    b.drain(..zeros);
                    b
                };
                PublicKey::Rsa {
                    n: strip(b64(v, "n")?),
                    e: strip(b64(v, "e")?),
                }
            }
            "EC" => {
                let curve = v.get("crv").and_then(Value::as_str)?.to_string();
                let size = match curve.as_str() {
                    "P-256" => 32,
                    "P-384" => 48,
                    "P-521" => super::es512::FIELD_LEN,
                    _ => return None,
                };
                let (x, y) = (b64(v, "x")?, b64(v, "y")?);
                if x.len() != size || y.len() != size {
                    return None;
                }
                let mut point = vec![4u8];
                point.extend(x);
                point.extend(y);
                PublicKey::Ec { curve, point }
            }
            _ => return None,
        };
        Some(Jwk { kid, alg, key })
    }

    /// Parses a JWKS document (`{"keys": [...]}`).
    pub fn parse_set(doc: &Value) -> Result<Vec<Jwk>, String> {
        let keys = doc
            .get("keys")
            .and_then(Value::as_array)
            .ok_or("oidc: failed to decode keys: no keys array")?;
        Ok(keys.iter().filter_map(Jwk::parse).collect())
    }

    /// Whether this key verifies `signature` over `message` with `alg`.
    pub fn verify(&self, alg: &str, message: &[u8], sig: &[u8]) -> bool {
        if !self.alg.is_empty() && self.alg != alg {
            return false;
        }
        match &self.key {
            PublicKey::Rsa { n, e } => {
                let params: &signature::RsaParameters = match alg {
                    "RS256" => &signature::RSA_PKCS1_2048_8192_SHA256,
                    "RS384" => &signature::RSA_PKCS1_2048_8192_SHA384,
                    "RS512" => &signature::RSA_PKCS1_2048_8192_SHA512,
                    "PS256" => &signature::RSA_PSS_2048_8192_SHA256,
                    "PS384" => &signature::RSA_PSS_2048_8192_SHA384,
                    "PS512" => &signature::RSA_PSS_2048_8192_SHA512,
                    _ => return false,
                };
                RsaPublicKeyComponents { n, e }
                    .verify(params, message, sig)
                    .is_ok()
            }
            PublicKey::Ec { curve, point } if curve == "P-521" => {
                alg == "ES512" && super::es512::verify(point, message, sig)
            }
            PublicKey::Ec { curve, point } => {
                let algorithm: &dyn signature::VerificationAlgorithm = match (alg, curve.as_str()) {
                    ("ES256", "P-256") => &signature::ECDSA_P256_SHA256_FIXED,
                    ("ES384", "P-384") => &signature::ECDSA_P384_SHA384_FIXED,
                    _ => return false,
                };
                UnparsedPublicKey::new(algorithm, point)
                    .verify(message, sig)
                    .is_ok()
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use ring::rand::SystemRandom;
    use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
    use serde_json::json;

    /// A P-256 signing key and its JWK.
    pub(crate) fn es256_key(kid: &str) -> (EcdsaKeyPair, Value) {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        let public = pair.public_key().as_ref();
        let jwk = json!({
            "kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "alg": "ES256",
            "x": URL_SAFE_NO_PAD.encode(&public[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&public[33..65]),
        });
        (pair, jwk)
    }

    /// A signed ES256 token.
    pub(crate) fn sign(key: &EcdsaKeyPair, kid: &str, claims: &Value) -> String {
        let header = URL_SAFE_NO_PAD.encode(json!({"alg": "ES256", "kid": kid}).to_string());
        let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
        let input = format!("{header}.{payload}");
        let sig = key.sign(&SystemRandom::new(), input.as_bytes()).unwrap();
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
    }

    #[test]
    fn es256_round_trip_and_tampering() {
        let (pair, jwk) = es256_key("k1");
        let key = Jwk::parse(&jwk).unwrap();
        let token = sign(&pair, "k1", &json!({"sub": "a"}));
        let jws = CompactJws::parse(&token).unwrap();
        assert_eq!(jws.kid(), "k1");
        assert!(key.verify("ES256", jws.signing_input.as_bytes(), &jws.signature));
        assert!(!key.verify("RS256", jws.signing_input.as_bytes(), &jws.signature));
        let (_, other) = es256_key("k2");
        let other = Jwk::parse(&other).unwrap();
        assert!(!other.verify("ES256", jws.signing_input.as_bytes(), &jws.signature));
    }

    #[test]
    fn es512_keys_of_a_key_set_verify_es512_only() {
        let scalar: Vec<u8> = (0..64u8).collect();
        let signer = super::super::es512::Es512SigningKey::from_scalar(&scalar, None).unwrap();
        let point = signer.public_point();
        let jwk = json!({
            "kty": "EC", "crv": "P-521", "kid": "p521",
            "x": URL_SAFE_NO_PAD.encode(&point[1..67]),
            "y": URL_SAFE_NO_PAD.encode(&point[67..]),
        });
        let key = Jwk::parse(&jwk).unwrap();
        let header = URL_SAFE_NO_PAD.encode(json!({"alg": "ES512", "kid": "p521"}).to_string());
        let input = format!("{header}.{}", URL_SAFE_NO_PAD.encode(r#"{"sub":"a"}"#));
        let sig = signer.sign(input.as_bytes()).unwrap();
        assert!(key.verify("ES512", input.as_bytes(), &sig));
        assert!(!key.verify("ES384", input.as_bytes(), &sig));
        assert!(!key.verify("ES512", b"tampered", &sig));
    }

    #[test]
    fn malformed_tokens() {
        assert_eq!(
            CompactJws::parse("a.b").unwrap_err(),
            "malformed jwt, expected 3 parts got 2"
        );
        assert_eq!(
            CompactJws::parse("{\"a\":1}").unwrap_err(),
            "token is not compact JWT"
        );
        assert!(CompactJws::parse("!!.!!.!!").is_err());
    }

    #[test]
    fn key_sets_skip_unusable_keys() {
        let (_, good) = es256_key("k");
        let set = json!({"keys": [good, {"kty": "oct", "k": "AA"}, {"kty": "EC", "crv": "P-521", "x": "AA", "y": "AA"}, {"kty": "EC", "crv": "secp256k1", "x": "AA", "y": "AA"}]});
        assert_eq!(Jwk::parse_set(&set).unwrap().len(), 1);
        assert!(Jwk::parse_set(&json!({})).is_err());
    }
}
