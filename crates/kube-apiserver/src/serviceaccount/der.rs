//! The little DER the key files need: reading the TLVs of PKCS#1, PKCS#8 and SEC 1 keys, and
//! writing the PKIX `SubjectPublicKeyInfo` of a public key (whose SHA-256 is the key ID, as
//! upstream's `x509.MarshalPKIXPublicKey` bytes are).

/// A DER tag.
pub const SEQUENCE: u8 = 0x30;
/// `INTEGER`.
pub const INTEGER: u8 = 0x02;
/// `BIT STRING`.
pub const BIT_STRING: u8 = 0x03;
/// `OCTET STRING`.
pub const OCTET_STRING: u8 = 0x04;
/// `NULL`.
pub const NULL: u8 = 0x05;
/// `OBJECT IDENTIFIER`.
pub const OID: u8 = 0x06;
/// `[0]` constructed, context-specific.
pub const CONTEXT_0: u8 = 0xa0;
/// `[1]` constructed, context-specific.
pub const CONTEXT_1: u8 = 0xa1;

/// `rsaEncryption` (1.2.840.113549.1.1.1), encoded.
pub const OID_RSA_ENCRYPTION: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
/// `id-ecPublicKey` (1.2.840.10045.2.1), encoded.
pub const OID_EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
/// `prime256v1` / P-256 (1.2.840.10045.3.1.7), encoded.
pub const OID_P256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
/// `secp384r1` / P-384 (1.3.132.0.34), encoded.
pub const OID_P384: &[u8] = &[0x2b, 0x81, 0x04, 0x00, 0x22];
/// `secp521r1` / P-521 (1.3.132.0.35), encoded.
pub const OID_P521: &[u8] = &[0x2b, 0x81, 0x04, 0x00, 0x23];

/// A reader over concatenated TLVs.
pub struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    /// Reads `input`.
    pub fn new(input: &'a [u8]) -> Self {
        Reader { rest: input }
    }

    /// Whether everything was read.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// The next TLV as `(tag, contents)`; `None` when the input is not DER.
    pub fn next(&mut self) -> Option<(u8, &'a [u8])> {
        let (&tag, rest) = self.rest.split_first()?;
        let (&first, mut rest) = rest.split_first()?;
        let len = if first < 0x80 {
            usize::from(first)
        } else {
            let count = usize::from(first & 0x7f);
            if count == 0 || count > 4 || rest.len() < count {
                return None;
            }
            let mut len = 0usize;
            for &b in &rest[..count] {
                len = (len << 8) | usize::from(b);
            }
            rest = &rest[count..];
            len
        };
        if rest.len() < len {
            return None;
        }
        let (contents, rest) = rest.split_at(len);
        self.rest = rest;
        Some((tag, contents))
    }

    /// The next TLV's contents when it has `tag`.
    pub fn expect(&mut self, tag: u8) -> Option<&'a [u8]> {
        match self.next()? {
            (t, contents) if t == tag => Some(contents),
            _ => None,
        }
    }
}

/// Encodes one TLV.
pub fn tlv(tag: u8, contents: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = contents.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .iter()
            .copied()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend_from_slice(&bytes);
    }
    out.extend_from_slice(contents);
    out
}

/// A DER `INTEGER` of the big-endian unsigned `value` (minimal, with a leading zero when the
/// high bit is set).
pub fn unsigned_integer(value: &[u8]) -> Vec<u8> {
    let trimmed: &[u8] = {
        let start = value.iter().position(|b| *b != 0).unwrap_or(value.len());
        &value[start..]
    };
    let mut contents = Vec::with_capacity(trimmed.len() + 1);
    if trimmed.first().is_none_or(|b| b & 0x80 != 0) {
        contents.push(0);
    }
    contents.extend_from_slice(trimmed);
    tlv(INTEGER, &contents)
}

/// The value of a DER `INTEGER`'s contents as unsigned big-endian bytes (leading zeros
/// removed).
pub fn integer_bytes(contents: &[u8]) -> &[u8] {
    let start = contents
        .iter()
        .position(|b| *b != 0)
        .unwrap_or(contents.len());
    &contents[start..]
}

/// The PKIX `SubjectPublicKeyInfo` of an RSA key (`rsaEncryption` with NULL parameters, as
/// Go writes it).
pub fn rsa_spki(n: &[u8], e: &[u8]) -> Vec<u8> {
    let mut key = unsigned_integer(n);
    key.extend(unsigned_integer(e));
    let rsa_public_key = tlv(SEQUENCE, &key);
    let mut algorithm = tlv(OID, OID_RSA_ENCRYPTION);
    algorithm.extend(tlv(NULL, &[]));
    spki(&tlv(SEQUENCE, &algorithm), &rsa_public_key)
}

/// The PKIX `SubjectPublicKeyInfo` of an EC key on the named curve `curve_oid` with the
/// uncompressed `point`.
pub fn ec_spki(curve_oid: &[u8], point: &[u8]) -> Vec<u8> {
    let mut algorithm = tlv(OID, OID_EC_PUBLIC_KEY);
    algorithm.extend(tlv(OID, curve_oid));
    spki(&tlv(SEQUENCE, &algorithm), point)
}

fn spki(algorithm: &[u8], key: &[u8]) -> Vec<u8> {
    let mut bits = vec![0u8];
    bits.extend_from_slice(key);
    let mut body = algorithm.to_vec();
    body.extend(tlv(BIT_STRING, &bits));
    tlv(SEQUENCE, &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_short_and_long_lengths() {
        for len in [0usize, 5, 127, 128, 255, 256, 70000] {
            let contents = vec![7u8; len];
            let encoded = tlv(OCTET_STRING, &contents);
            let mut reader = Reader::new(&encoded);
            assert_eq!(reader.next(), Some((OCTET_STRING, &contents[..])));
            assert!(reader.is_empty());
        }
    }

    #[test]
    fn truncated_input_is_not_der() {
        assert_eq!(Reader::new(&[0x30, 0x05, 1, 2]).next(), None);
        assert_eq!(Reader::new(&[0x30, 0x82, 1]).next(), None);
        assert_eq!(Reader::new(&[0x30]).next(), None);
    }

    #[test]
    fn integers_are_minimal_and_positive() {
        assert_eq!(unsigned_integer(&[0, 0, 1]), vec![INTEGER, 1, 1]);
        assert_eq!(unsigned_integer(&[0x80]), vec![INTEGER, 2, 0, 0x80]);
        assert_eq!(unsigned_integer(&[]), vec![INTEGER, 1, 0]);
        assert_eq!(integer_bytes(&[0, 0x80]), &[0x80]);
    }
}
