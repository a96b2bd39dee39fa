//! Service-account keys (upstream `keyutil` and `serviceaccount/jwt.go`): the public keys of
//! `--service-account-key-file` (RSA and ECDSA, public or private PEM, certificates), the
//! private key of `--service-account-signing-key-file`, their JWS algorithms and key IDs.
//!
//! Signing and verification use `ring` (already linked for TLS) for RS256, ES256 and ES384,
//! and RustCrypto's P-521 (through [`apiserver::authn::jwt::es512`]) for ES512.

use std::path::Path;

use apiserver::authn::jwt::es512::{self, Es512SigningKey};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair, RsaKeyPair};
use rustls_pki_types::pem::{PemObject, SectionKind};
use sha2::{Digest, Sha256};

use super::der::{self, Reader};

/// Why a key file could not be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeyError {
    /// The file could not be read.
    #[error("{0}")]
    Io(String),
    /// No RSA or ECDSA public key in the file (upstream `ParsePublicKeysPEM`).
    #[error("data does not contain any valid RSA or ECDSA public keys")]
    NoPublicKeys,
    /// No RSA or ECDSA private key in the file (upstream `ParsePrivateKeyPEM`).
    #[error("data does not contain a valid RSA or ECDSA private key")]
    NoPrivateKey,
    /// A key this server cannot sign or verify with.
    #[error("{0}")]
    Unsupported(String),
}

/// A JWS signature algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Algorithm {
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    RS256,
    /// ECDSA on P-256 with SHA-256.
    ES256,
    /// ECDSA on P-384 with SHA-384.
    ES384,
    /// ECDSA on P-521 with SHA-512.
    ES512,
}

impl Algorithm {
    /// The `alg` header value.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::RS256 => "RS256",
            Algorithm::ES256 => "ES256",
            Algorithm::ES384 => "ES384",
            Algorithm::ES512 => "ES512",
        }
    }

    /// The JWK `crv` of an ECDSA algorithm's curve (`None` for RSA).
    pub fn curve(self) -> Option<&'static str> {
        match self {
            Algorithm::RS256 => None,
            Algorithm::ES256 => Some("P-256"),
            Algorithm::ES384 => Some("P-384"),
            Algorithm::ES512 => Some("P-521"),
        }
    }

    /// The DER of the curve's OID (`None` for RSA).
    fn curve_oid(self) -> Option<&'static [u8]> {
        match self {
            Algorithm::RS256 => None,
            Algorithm::ES256 => Some(der::OID_P256),
            Algorithm::ES384 => Some(der::OID_P384),
            Algorithm::ES512 => Some(der::OID_P521),
        }
    }

    /// The algorithm named by an `alg` header.
    pub fn from_name(name: &str) -> Option<Algorithm> {
        match name {
            "RS256" => Some(Algorithm::RS256),
            "ES256" => Some(Algorithm::ES256),
            "ES384" => Some(Algorithm::ES384),
            "ES512" => Some(Algorithm::ES512),
            _ => None,
        }
    }
}

/// The public half of a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyMaterial {
    /// An RSA key: modulus and exponent, big-endian without leading zeros.
    Rsa {
        /// Modulus.
        n: Vec<u8>,
        /// Public exponent.
        e: Vec<u8>,
    },
    /// An EC key: its uncompressed point (`04 || x || y`).
    Ec {
        /// The curve's algorithm.
        alg: Algorithm,
        /// The point.
        point: Vec<u8>,
    },
}

/// A verification key with its algorithm and key ID.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicKey {
    /// The key.
    pub material: KeyMaterial,
    /// The key ID: unpadded base64url of the SHA-256 of the PKIX DER (upstream
    /// `keyIDFromPublicKey`).
    pub kid: String,
}

impl PublicKey {
    fn new(material: KeyMaterial) -> PublicKey {
        let spki = match &material {
            KeyMaterial::Rsa { n, e } => der::rsa_spki(n, e),
            KeyMaterial::Ec { alg, point } => {
                der::ec_spki(alg.curve_oid().unwrap_or(der::OID_P256), point)
            }
        };
        let kid = URL_SAFE_NO_PAD.encode(Sha256::digest(&spki));
        PublicKey { material, kid }
    }

    /// The algorithm tokens signed with this key use.
    pub fn algorithm(&self) -> Algorithm {
        match &self.material {
            KeyMaterial::Rsa { .. } => Algorithm::RS256,
            KeyMaterial::Ec { alg, .. } => *alg,
        }
    }

    /// Whether `signature` over `message` verifies with this key under `alg`.
    pub fn verify(&self, alg: Algorithm, message: &[u8], signature: &[u8]) -> bool {
        match (&self.material, alg) {
            (KeyMaterial::Rsa { n, e }, Algorithm::RS256) => {
                signature::RsaPublicKeyComponents { n, e }
                    .verify(&signature::RSA_PKCS1_2048_8192_SHA256, message, signature)
                    .is_ok()
            }
            (
                KeyMaterial::Ec {
                    alg: key_alg,
                    point,
                },
                _,
            ) if *key_alg == alg && alg == Algorithm::ES512 => {
                es512::verify(point, message, signature)
            }
            (
                KeyMaterial::Ec {
                    alg: key_alg,
                    point,
                },
                _,
            ) if *key_alg == alg => {
                let verifier: &dyn signature::VerificationAlgorithm = match alg {
                    Algorithm::ES384 => &signature::ECDSA_P384_SHA384_FIXED,
                    _ => &signature::ECDSA_P256_SHA256_FIXED,
                };
                signature::UnparsedPublicKey::new(verifier, point)
                    .verify(message, signature)
                    .is_ok()
            }
            _ => false,
        }
    }
}

enum Signer {
    Rsa(RsaKeyPair),
    Ec(EcdsaKeyPair),
    P521(Es512SigningKey),
}

/// The private key tokens are signed with.
pub struct SigningKey {
    signer: Signer,
    public: PublicKey,
    rng: SystemRandom,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("public", &self.public)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// The public half (also what verifies the tokens it signs).
    pub fn public_key(&self) -> &PublicKey {
        &self.public
    }

    /// The JWS signature of `message`.
    pub fn sign(&self, message: &[u8]) -> Result<Vec<u8>, KeyError> {
        match &self.signer {
            Signer::Rsa(pair) => {
                let mut out = vec![0; pair.public().modulus_len()];
                pair.sign(&signature::RSA_PKCS1_SHA256, &self.rng, message, &mut out)
                    .map_err(|_| KeyError::Unsupported("signing failed".into()))?;
                Ok(out)
            }
            Signer::Ec(pair) => pair
                .sign(&self.rng, message)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| KeyError::Unsupported("signing failed".into())),
            Signer::P521(key) => key
                .sign(message)
                .ok_or_else(|| KeyError::Unsupported("signing failed".into())),
        }
    }

    /// A new P-256 key, as PKCS#8 PEM (what the server generates when no signing key is
    /// configured).
    pub fn generate_p256_pem() -> Result<String, KeyError> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| KeyError::Unsupported("generating a P-256 key failed".into()))?;
        Ok(pem_encode("PRIVATE KEY", pkcs8.as_ref()))
    }
}

/// PEM of `der` under `label`, 64 columns as Go writes it.
pub fn pem_encode(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

fn pem_sections(data: &[u8]) -> Vec<(SectionKind, Vec<u8>)> {
    <(SectionKind, Vec<u8>)>::pem_slice_iter(data)
        .filter_map(Result::ok)
        .collect()
}

fn read(path: &Path) -> Result<Vec<u8>, KeyError> {
    std::fs::read(path).map_err(|e| KeyError::Io(format!("open {}: {e}", path.display())))
}

/// The public keys in `path` (upstream `keyutil.PublicKeysFromFile`).
pub fn public_keys_from_file(path: &Path) -> Result<Vec<PublicKey>, KeyError> {
    parse_public_keys_pem(&read(path)?)
}

/// The private key in `path` (upstream `keyutil.PrivateKeyFromFile`).
pub fn signing_key_from_file(path: &Path) -> Result<SigningKey, KeyError> {
    parse_signing_key_pem(&read(path)?)
}

/// Every RSA or ECDSA key of the PEM blocks, public ones (PKIX or in a certificate) and the
/// public halves of private ones (PKCS#1, SEC 1, PKCS#8); other blocks are skipped, as
/// upstream tolerates them.
pub fn parse_public_keys_pem(data: &[u8]) -> Result<Vec<PublicKey>, KeyError> {
    let mut keys = Vec::new();
    let mut unsupported = None;
    for (kind, der) in pem_sections(data) {
        let parsed = match kind {
            SectionKind::PublicKey => public_key_from_spki(&der),
            SectionKind::Certificate => x509_parser::parse_x509_certificate(&der)
                .map_err(|_| KeyError::NoPublicKeys)
                .and_then(|(_, cert)| public_key_from_spki(cert.tbs_certificate.subject_pki.raw)),
            SectionKind::RsaPrivateKey | SectionKind::EcPrivateKey | SectionKind::PrivateKey => {
                signing_key(kind, &der).map(|k| k.public)
            }
            _ => continue,
        };
        match parsed {
            Ok(key) => keys.push(key),
            Err(e @ KeyError::Unsupported(_)) => unsupported = Some(e),
            Err(_) => {}
        }
    }
    if keys.is_empty() {
        return Err(unsupported.unwrap_or(KeyError::NoPublicKeys));
    }
    Ok(keys)
}

/// The first private key of the PEM blocks.
pub fn parse_signing_key_pem(data: &[u8]) -> Result<SigningKey, KeyError> {
    let mut unsupported = None;
    for (kind, der) in pem_sections(data) {
        if !matches!(
            kind,
            SectionKind::RsaPrivateKey | SectionKind::EcPrivateKey | SectionKind::PrivateKey
        ) {
            continue;
        }
        match signing_key(kind, &der) {
            Ok(key) => return Ok(key),
            Err(e @ KeyError::Unsupported(_)) => unsupported = Some(e),
            Err(_) => {}
        }
    }
    Err(unsupported.unwrap_or(KeyError::NoPrivateKey))
}

fn curve_algorithm(oid: &[u8]) -> Result<Algorithm, KeyError> {
    [Algorithm::ES256, Algorithm::ES384, Algorithm::ES512]
        .into_iter()
        .find(|alg| alg.curve_oid() == Some(oid))
        .ok_or_else(|| {
            KeyError::Unsupported(
                "unsupported elliptic curve; use P-256, P-384, P-521 or RSA".into(),
            )
        })
}

/// A PKIX `SubjectPublicKeyInfo`.
fn public_key_from_spki(spki: &[u8]) -> Result<PublicKey, KeyError> {
    let mut outer = Reader::new(spki);
    let body = outer.expect(der::SEQUENCE).ok_or(KeyError::NoPublicKeys)?;
    let mut body = Reader::new(body);
    let algorithm = body.expect(der::SEQUENCE).ok_or(KeyError::NoPublicKeys)?;
    let bits = body.expect(der::BIT_STRING).ok_or(KeyError::NoPublicKeys)?;
    let key = bits.strip_prefix(&[0]).ok_or(KeyError::NoPublicKeys)?;
    let mut algorithm = Reader::new(algorithm);
    let oid = algorithm.expect(der::OID).ok_or(KeyError::NoPublicKeys)?;
    if oid == der::OID_RSA_ENCRYPTION {
        let (n, e) = rsa_public_key(key).ok_or(KeyError::NoPublicKeys)?;
        return Ok(PublicKey::new(KeyMaterial::Rsa { n, e }));
    }
    if oid == der::OID_EC_PUBLIC_KEY {
        let curve = algorithm.expect(der::OID).ok_or(KeyError::NoPublicKeys)?;
        let alg = curve_algorithm(curve)?;
        return Ok(PublicKey::new(KeyMaterial::Ec {
            alg,
            point: key.to_vec(),
        }));
    }
    Err(KeyError::NoPublicKeys)
}

/// PKCS#1 `RSAPublicKey`: `(n, e)`.
fn rsa_public_key(der_bytes: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut outer = Reader::new(der_bytes);
    let mut seq = Reader::new(outer.expect(der::SEQUENCE)?);
    let n = der::integer_bytes(seq.expect(der::INTEGER)?).to_vec();
    let e = der::integer_bytes(seq.expect(der::INTEGER)?).to_vec();
    Some((n, e))
}

fn signing_key(kind: SectionKind, der_bytes: &[u8]) -> Result<SigningKey, KeyError> {
    match kind {
        SectionKind::RsaPrivateKey => rsa_signing_key(RsaKeyPair::from_der(der_bytes)),
        SectionKind::EcPrivateKey => ec_signing_key(der_bytes, None),
        SectionKind::PrivateKey => {
            // PrivateKeyInfo: version, AlgorithmIdentifier, OCTET STRING privateKey.
            let mut outer = Reader::new(der_bytes);
            let mut info = Reader::new(outer.expect(der::SEQUENCE).ok_or(KeyError::NoPrivateKey)?);
            info.expect(der::INTEGER).ok_or(KeyError::NoPrivateKey)?;
            let mut algorithm =
                Reader::new(info.expect(der::SEQUENCE).ok_or(KeyError::NoPrivateKey)?);
            let oid = algorithm.expect(der::OID).ok_or(KeyError::NoPrivateKey)?;
            let private = info
                .expect(der::OCTET_STRING)
                .ok_or(KeyError::NoPrivateKey)?;
            if oid == der::OID_RSA_ENCRYPTION {
                rsa_signing_key(RsaKeyPair::from_pkcs8(der_bytes))
            } else if oid == der::OID_EC_PUBLIC_KEY {
                let curve = algorithm.expect(der::OID).ok_or(KeyError::NoPrivateKey)?;
                ec_signing_key(private, Some(curve))
            } else {
                Err(KeyError::Unsupported(
                    "unknown private key type, must be RSA or ECDSA".into(),
                ))
            }
        }
        _ => Err(KeyError::NoPrivateKey),
    }
}

fn rsa_signing_key(
    pair: Result<RsaKeyPair, ring::error::KeyRejected>,
) -> Result<SigningKey, KeyError> {
    let pair = pair.map_err(|e| match e.to_string().as_str() {
        reason @ ("TooSmall" | "TooLarge") => {
            KeyError::Unsupported(format!("RSA keys must have 2048 to 8192 bits ({reason})"))
        }
        _ => KeyError::NoPrivateKey,
    })?;
    let components = signature::RsaPublicKeyComponents::<Vec<u8>>::from(pair.public());
    let public = PublicKey::new(KeyMaterial::Rsa {
        n: der::integer_bytes(&components.n).to_vec(),
        e: der::integer_bytes(&components.e).to_vec(),
    });
    Ok(SigningKey {
        signer: Signer::Rsa(pair),
        public,
        rng: SystemRandom::new(),
    })
}

/// SEC 1 `ECPrivateKey` (curve from its parameters unless given by PKCS#8).
fn ec_signing_key(der_bytes: &[u8], curve: Option<&[u8]>) -> Result<SigningKey, KeyError> {
    let mut outer = Reader::new(der_bytes);
    let mut key = Reader::new(outer.expect(der::SEQUENCE).ok_or(KeyError::NoPrivateKey)?);
    key.expect(der::INTEGER).ok_or(KeyError::NoPrivateKey)?;
    let scalar = key
        .expect(der::OCTET_STRING)
        .ok_or(KeyError::NoPrivateKey)?;
    let mut curve = curve.map(<[u8]>::to_vec);
    let mut point = None;
    while let Some((tag, contents)) = key.next() {
        match tag {
            der::CONTEXT_0 => {
                curve = Reader::new(contents).expect(der::OID).map(<[u8]>::to_vec);
            }
            der::CONTEXT_1 => {
                point = Reader::new(contents)
                    .expect(der::BIT_STRING)
                    .and_then(|b| b.strip_prefix(&[0]))
                    .map(<[u8]>::to_vec);
            }
            _ => {}
        }
    }
    let curve = curve.ok_or(KeyError::NoPrivateKey)?;
    let alg = curve_algorithm(&curve)?;
    if alg == Algorithm::ES512 {
        // The public key is optional in SEC 1; derived from the scalar, checked when present.
        let key =
            Es512SigningKey::from_scalar(scalar, point.as_deref()).ok_or(KeyError::NoPrivateKey)?;
        let public = PublicKey::new(KeyMaterial::Ec {
            alg,
            point: key.public_point().to_vec(),
        });
        return Ok(SigningKey {
            signer: Signer::P521(key),
            public,
            rng: SystemRandom::new(),
        });
    }
    let point = point.ok_or_else(|| {
        KeyError::Unsupported("EC private keys must include their public key".into())
    })?;
    let (signing, size): (_, usize) = match alg {
        Algorithm::ES384 => (&signature::ECDSA_P384_SHA384_FIXED_SIGNING, 48),
        _ => (&signature::ECDSA_P256_SHA256_FIXED_SIGNING, 32),
    };
    // The scalar is fixed-length big-endian; some encoders drop leading zeros.
    let mut padded = vec![0u8; size.saturating_sub(scalar.len())];
    padded.extend_from_slice(scalar);
    let rng = SystemRandom::new();
    let pair = EcdsaKeyPair::from_private_key_and_public_key(signing, &padded, &point, &rng)
        .map_err(|_| KeyError::NoPrivateKey)?;
    let public = PublicKey::new(KeyMaterial::Ec {
        alg,
        point: pair.public_key().as_ref().to_vec(),
    });
    Ok(SigningKey {
        signer: Signer::Ec(pair),
        public,
        rng,
    })
}

#[cfg(test)]
pub(crate) mod testkeys {
    //! Keys for tests, generated with rcgen/ring at test time.

    /// A fresh P-256 key as PKCS#8 PEM.
    pub fn p256_pem() -> String {
        super::SigningKey::generate_p256_pem().unwrap()
    }

    /// A fresh P-384 key as PKCS#8 PEM.
    pub fn p384_pem() -> String {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = ring::signature::EcdsaKeyPair::generate_pkcs8(
            &ring::signature::ECDSA_P384_SHA384_FIXED_SIGNING,
            &rng,
        )
        .unwrap();
        super::pem_encode("PRIVATE KEY", pkcs8.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2048-bit RSA key in PKCS#1 (`openssl genrsa 2048`), for tests only.
    const RSA_PKCS1: &str = include_str!("testdata/rsa2048.pem");
    /// The same key's public half in PKIX (`openssl rsa -pubout`).
    const RSA_PUBLIC: &str = include_str!("testdata/rsa2048.pub.pem");
    /// A P-256 key in SEC 1 (`openssl ecparam -name prime256v1 -genkey`).
    const EC_SEC1: &str = include_str!("testdata/p256.sec1.pem");
    /// A P-521 key in SEC 1 (`openssl ecparam -name secp521r1 -genkey`).
    const EC_P521: &str = include_str!("testdata/p521.sec1.pem");
    /// The same key in PKCS#8 (`openssl pkcs8 -topk8 -nocrypt`).
    const EC_P521_PKCS8: &str = include_str!("testdata/p521.pkcs8.pem");
    /// Its public half in PKIX (`openssl ec -pubout`).
    const EC_P521_PUBLIC: &str = include_str!("testdata/p521.pub.pem");

    #[test]
    fn rsa_private_and_public_files_give_the_same_key_and_kid() {
        let private = parse_signing_key_pem(RSA_PKCS1.as_bytes()).unwrap();
        let public = parse_public_keys_pem(RSA_PUBLIC.as_bytes()).unwrap();
        assert_eq!(public, vec![private.public_key().clone()]);
        let from_private = parse_public_keys_pem(RSA_PKCS1.as_bytes()).unwrap();
        assert_eq!(from_private, public);
        assert_eq!(private.public_key().algorithm(), Algorithm::RS256);
        let sig = private.sign(b"message").unwrap();
        assert!(public[0].verify(Algorithm::RS256, b"message", &sig));
        assert!(!public[0].verify(Algorithm::RS256, b"other", &sig));
        assert!(!public[0].verify(Algorithm::ES256, b"message", &sig));
    }

    #[test]
    fn ec_keys_in_sec1_and_pkcs8_sign_and_verify() {
        for pem in [
            EC_SEC1.to_string(),
            testkeys::p256_pem(),
            testkeys::p384_pem(),
        ] {
            let key = parse_signing_key_pem(pem.as_bytes()).unwrap();
            let public = parse_public_keys_pem(pem.as_bytes()).unwrap();
            assert_eq!(public, vec![key.public_key().clone()]);
            let alg = key.public_key().algorithm();
            let sig = key.sign(b"payload").unwrap();
            assert!(public[0].verify(alg, b"payload", &sig), "{alg:?}");
            assert!(!public[0].verify(Algorithm::RS256, b"payload", &sig));
        }
    }

    #[test]
    fn kid_is_the_sha256_of_the_pkix_der() {
        // The PKIX bytes of the public PEM are exactly what the key ID hashes.
        let (_, der) = pem_sections(RSA_PUBLIC.as_bytes()).remove(0);
        let key = parse_public_keys_pem(RSA_PUBLIC.as_bytes())
            .unwrap()
            .remove(0);
        assert_eq!(key.kid, URL_SAFE_NO_PAD.encode(Sha256::digest(&der)));
    }

    #[test]
    fn certificates_give_their_public_key() {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["x".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let keys = parse_public_keys_pem(cert.pem().as_bytes()).unwrap();
        let signer = parse_signing_key_pem(key.serialize_pem().as_bytes()).unwrap();
        assert_eq!(keys, vec![signer.public_key().clone()]);
    }

    #[test]
    fn files_without_keys_and_unsupported_curves_are_refused() {
        assert_eq!(
            parse_public_keys_pem(b"nothing here"),
            Err(KeyError::NoPublicKeys)
        );
        assert_eq!(
            parse_signing_key_pem(RSA_PUBLIC.as_bytes()).unwrap_err(),
            KeyError::NoPrivateKey
        );
    }

    #[test]
    fn p521_keys_in_sec1_pkcs8_and_pkix_sign_and_verify_es512() {
        let sec1 = parse_signing_key_pem(EC_P521.as_bytes()).unwrap();
        let pkcs8 = parse_signing_key_pem(EC_P521_PKCS8.as_bytes()).unwrap();
        let public = parse_public_keys_pem(EC_P521_PUBLIC.as_bytes()).unwrap();
        assert_eq!(sec1.public_key(), pkcs8.public_key());
        assert_eq!(public, vec![sec1.public_key().clone()]);
        assert_eq!(parse_public_keys_pem(EC_P521.as_bytes()).unwrap(), public);
        assert_eq!(public[0].algorithm(), Algorithm::ES512);
        assert_eq!(Algorithm::ES512.curve(), Some("P-521"));
        // The key ID hashes the PKIX bytes, as for the other curves.
        let (_, der) = pem_sections(EC_P521_PUBLIC.as_bytes()).remove(0);
        assert_eq!(public[0].kid, URL_SAFE_NO_PAD.encode(Sha256::digest(&der)));
        let sig = pkcs8.sign(b"payload").unwrap();
        assert_eq!(sig.len(), 132);
        assert!(public[0].verify(Algorithm::ES512, b"payload", &sig));
        assert!(!public[0].verify(Algorithm::ES512, b"other", &sig));
        assert!(!public[0].verify(Algorithm::ES384, b"payload", &sig));
    }

    #[test]
    fn a_sec1_key_whose_public_point_is_not_its_own_is_refused() {
        // One bit of the public point (last in the DER) flipped: not the scalar's point.
        let (_, der_bytes) = pem_sections(EC_P521.as_bytes()).remove(0);
        let mut tampered = der_bytes.clone();
        let last = tampered.len() - 1;
        tampered[last] ^= 1;
        assert!(signing_key(SectionKind::EcPrivateKey, &tampered).is_err());
        assert!(signing_key(SectionKind::EcPrivateKey, &der_bytes).is_ok());
    }
}
