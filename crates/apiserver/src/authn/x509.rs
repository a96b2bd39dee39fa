//! Client-certificate authentication (`authentication/request/x509`).
//!
//! TLS only *requests* a client certificate (Go's `tls.RequestClientCert`); the chain is
//! verified here, per request, against the current client CA. A certificate from an unknown
//! CA therefore completes the handshake and is rejected with a 401, as kube-apiserver does.

use std::sync::Arc;

use rustls_pki_types::{CertificateDer, UnixTime};
use sha2::{Digest, Sha256};
use x509_parser::prelude::{FromDer, ParsedExtension, X509Certificate};

use super::{AuthError, AuthResponse, Authenticator, CREDENTIAL_ID_KEY, ClientCaSource};
use crate::request::{ConnectionInfo, UserInfo};

/// The subject attribute OID `0.9.2342.19200300.100.1.1` (LDAP `uid`), mapped to the user's
/// UID (upstream gate `AllowParsingUserUIDFromCertAuth`, on by default).
const UID_OID: &[u64] = &[0, 9, 2342, 19200300, 100, 1, 1];

/// Maps a verified certificate chain (leaf first) to a user (upstream's `UserConversion`).
pub trait UserConversion: Send + Sync {
    /// The user for `chain`, `Ok(None)` for no opinion.
    fn user(&self, chain: &[CertificateDer<'_>]) -> Result<Option<AuthResponse>, AuthError>;
}

/// User = subject CN, groups = subject O values, UID from the LDAP `uid` attribute and a
/// credential id of the leaf's SHA-256 (upstream's `CommonNameUserConversion`).
#[derive(Clone, Copy, Debug, Default)]
pub struct CommonNameUserConversion;

impl UserConversion for CommonNameUserConversion {
    fn user(&self, chain: &[CertificateDer<'_>]) -> Result<Option<AuthResponse>, AuthError> {
        let Some(leaf) = chain.first() else {
            return Ok(None);
        };
        let cert = parse(leaf)?;
        let subject = cert.subject();
        let common_name = common_name(&cert);
        if common_name.is_empty() {
            return Ok(None);
        }
        let groups: Vec<String> = subject
            .iter_organization()
            .filter_map(|a| a.as_str().ok().map(str::to_string))
            .collect();
        let uid_oid = x509_parser::der_parser::oid::Oid::from(UID_OID)
            .map_err(|_| AuthError::Other("invalid UID OID".into()))?;
        let uids: Vec<Option<String>> = subject
            .iter_by_oid(&uid_oid)
            .map(|a| a.as_str().ok().map(str::to_string))
            .collect();
        let uid = uid_from_attributes(uids)?;
        let mut user = UserInfo {
            name: common_name,
            uid,
            groups,
            ..Default::default()
        };
        user.extra.insert(
            CREDENTIAL_ID_KEY.to_string(),
            vec![certificate_credential_id(leaf)],
        );
        Ok(Some(AuthResponse::new(user)))
    }
}

/// The subject CN; Go's `pkix.Name` keeps the last one when there are several.
fn common_name(cert: &X509Certificate<'_>) -> String {
    cert.subject()
        .iter_common_name()
        .filter_map(|a| a.as_str().ok())
        .last()
        .unwrap_or_default()
        .to_string()
}

/// Picks the UID from the subject's `uid` attributes (`None` = not a string).
fn uid_from_attributes(values: Vec<Option<String>>) -> Result<String, AuthError> {
    let mut uids = Vec::with_capacity(values.len());
    for value in values {
        match value {
            Some(v) => uids.push(v),
            None => return Err(AuthError::Other("unable to parse UID into a string".into())),
        }
    }
    match uids.len() {
        0 => Ok(String::new()),
        1 if uids[0].is_empty() => Err(AuthError::Other("UID cannot be an empty string".into())),
        1 => Ok(uids.remove(0)),
        _ => Err(AuthError::Other(format!(
            "expected 1 UID, but found multiple: [{}]",
            uids.join(" ")
        ))),
    }
}

/// `X509SHA256=<hex sha256 of the DER>`, the credential id recorded in the user's extra.
pub fn certificate_credential_id(cert: &CertificateDer<'_>) -> String {
    let digest = Sha256::digest(cert.as_ref());
    let mut out = String::from("X509SHA256=");
    for b in digest {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// `SN=<decimal serial>, SKID=<AA:BB…>, AKID=<AA:BB…>`, how upstream names a certificate in
/// verification errors.
pub fn certificate_identifier(cert: &CertificateDer<'_>) -> String {
    let Ok(parsed) = parse(cert) else {
        return "SN=, SKID=, AKID=".to_string();
    };
    let mut skid: &[u8] = &[];
    let mut akid: &[u8] = &[];
    for ext in parsed.extensions() {
        match ext.parsed_extension() {
            ParsedExtension::SubjectKeyIdentifier(id) => skid = id.0,
            ParsedExtension::AuthorityKeyIdentifier(aki) => {
                if let Some(id) = &aki.key_identifier {
                    akid = id.0;
                }
            }
            _ => {}
        }
    }
    format!(
        "SN={}, SKID={}, AKID={}",
        parsed.tbs_certificate.serial,
        colon_hex(skid),
        colon_hex(akid)
    )
}

fn colon_hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

fn parse<'a>(cert: &'a CertificateDer<'_>) -> Result<X509Certificate<'a>, AuthError> {
    X509Certificate::from_der(cert.as_ref())
        .map(|(_, c)| c)
        .map_err(|e| AuthError::Other(format!("x509: failed to parse certificate: {e}")))
}

/// Verifies `chain` (leaf first, the rest used as intermediates) for client authentication
/// against `roots`, returning a Go-like reason on failure.
pub fn verify_client_chain(
    chain: &[CertificateDer<'_>],
    roots: &[CertificateDer<'static>],
) -> Result<(), String> {
    let Some(leaf) = chain.first() else {
        return Err("x509: no certificate presented".into());
    };
    let anchors: Vec<_> = roots
        .iter()
        .filter_map(|c| webpki::anchor_from_trusted_cert(c).ok())
        .collect();
    let end_entity = match webpki::EndEntityCert::try_from(leaf) {
        Ok(cert) => cert,
        // webpki only parses v3 certificates; Go verifies v1 leaves too.
        Err(webpki::Error::UnsupportedCertVersion) => return verify_v1_leaf(leaf, roots),
        Err(e) => return Err(go_reason(e)),
    };
    end_entity
        .verify_for_usage(
            webpki::ALL_VERIFICATION_ALGS,
            &anchors,
            &chain[1..],
            UnixTime::now(),
            webpki::KeyUsage::client_auth(),
            None,
            None,
        )
        .map(|_| ())
        .map_err(go_reason)
}

/// Verifies an X.509 v1 leaf (no extensions: no key-usage limits) signed directly by one of
/// `roots`, as Go's `x509.Verify` accepts it: issuer and subject match, the signature verifies
/// with the root's key, and both are within their validity periods.
fn verify_v1_leaf(
    leaf: &CertificateDer<'_>,
    roots: &[CertificateDer<'static>],
) -> Result<(), String> {
    let leaf = X509Certificate::from_der(leaf.as_ref())
        .map(|(_, c)| c)
        .map_err(|e| format!("x509: failed to parse certificate: {e}"))?;
    if !leaf.validity().is_valid() {
        return Err("x509: certificate has expired or is not yet valid".into());
    }
    let signed_by_root = roots.iter().any(|root| {
        X509Certificate::from_der(root.as_ref()).is_ok_and(|(_, root)| {
            root.subject().as_raw() == leaf.issuer().as_raw()
                && root.validity().is_valid()
                && leaf.verify_signature(Some(root.public_key())).is_ok()
        })
    });
    if signed_by_root {
        Ok(())
    } else {
        Err("x509: certificate signed by unknown authority".into())
    }
}

/// Maps webpki errors to the texts Go's `x509.Verify` uses, where there is an equivalent.
#[allow(deprecated)] // webpki still returns the unit EKU variant from some paths
fn go_reason(err: webpki::Error) -> String {
    match err {
        webpki::Error::UnknownIssuer => "x509: certificate signed by unknown authority".into(),
        webpki::Error::CertExpired { .. } | webpki::Error::CertNotValidYet { .. } => {
            "x509: certificate has expired or is not yet valid".into()
        }
        webpki::Error::RequiredEkuNotFound | webpki::Error::RequiredEkuNotFoundContext(_) => {
            "x509: certificate specifies an incompatible key usage".into()
        }
        other => format!("x509: {other:?}"),
    }
}

/// The presented chain, if the request came over TLS with client certificates.
fn peer_chain(req: &http::request::Parts) -> Option<Arc<Vec<CertificateDer<'static>>>> {
    req.extensions
        .get::<ConnectionInfo>()
        .and_then(|c| c.peer_certificates.clone())
        .filter(|c| !c.is_empty())
}

/// The x509 client-certificate authenticator (upstream's `x509.NewDynamic`).
pub struct X509Authenticator {
    ca: Arc<dyn ClientCaSource>,
    user: Arc<dyn UserConversion>,
}

impl X509Authenticator {
    /// Verifies against `ca` and maps the chain with [`CommonNameUserConversion`].
    pub fn new(ca: Arc<dyn ClientCaSource>) -> Self {
        Self::with_user_conversion(ca, Arc::new(CommonNameUserConversion))
    }

    /// Verifies against `ca` and maps the chain with `user`.
    pub fn with_user_conversion(
        ca: Arc<dyn ClientCaSource>,
        user: Arc<dyn UserConversion>,
    ) -> Self {
        X509Authenticator { ca, user }
    }
}

#[async_trait::async_trait]
impl Authenticator for X509Authenticator {
    async fn authenticate(
        &self,
        req: &http::request::Parts,
    ) -> Result<Option<AuthResponse>, AuthError> {
        let Some(chain) = peer_chain(req) else {
            return Ok(None);
        };
        let Some(roots) = self.ca.ca_certificates() else {
            return Ok(None);
        };
        if let Err(reason) = verify_client_chain(&chain, &roots) {
            return Err(AuthError::CertificateVerification {
                identifier: certificate_identifier(&chain[0]),
                reason,
            });
        }
        self.user.user(&chain)
    }
}

/// Verifies the client certificate (and optionally its CN against an allow-list) and then
/// delegates to another authenticator (upstream's `x509.NewVerifier`, used for the front
/// proxy: the request-header authenticator only trusts headers from a verified proxy).
pub struct X509Verifier {
    ca: Arc<dyn ClientCaSource>,
    allowed_common_names: Vec<String>,
    inner: Arc<dyn Authenticator>,
}

impl X509Verifier {
    /// A verifier against `ca`; an empty `allowed_common_names` allows any CN.
    pub fn new(
        ca: Arc<dyn ClientCaSource>,
        allowed_common_names: Vec<String>,
        inner: Arc<dyn Authenticator>,
    ) -> Self {
        X509Verifier {
            ca,
            allowed_common_names,
            inner,
        }
    }
}

#[async_trait::async_trait]
impl Authenticator for X509Verifier {
    async fn authenticate(
        &self,
        req: &http::request::Parts,
    ) -> Result<Option<AuthResponse>, AuthError> {
        let Some(chain) = peer_chain(req) else {
            return Ok(None);
        };
        let Some(roots) = self.ca.ca_certificates() else {
            return Ok(None);
        };
        // Upstream returns the bare verification error here, without the certificate id.
        verify_client_chain(&chain, &roots).map_err(AuthError::Other)?;
        if !self.allowed_common_names.is_empty() {
            let cert = parse(&chain[0])?;
            let cn = common_name(&cert);
            if !self.allowed_common_names.contains(&cn) {
                return Err(AuthError::CommonNameNotAllowed(cn));
            }
        }
        self.inner.authenticate(req).await
    }
}

#[cfg(test)]
pub(crate) mod testcerts {
    //! Certificates generated with rcgen for the authenticator tests.

    use rcgen::{
        BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType, DnValue,
        ExtendedKeyUsagePurpose, IsCa, KeyPair,
    };
    use rustls_pki_types::CertificateDer;

    /// A CA able to sign client and intermediate certificates.
    pub struct Ca(pub CertifiedIssuer<'static, KeyPair>);

    impl Ca {
        /// A self-signed root CA.
        pub fn new(name: &str) -> Ca {
            let mut params = CertificateParams::default();
            params.distinguished_name.push(DnType::CommonName, name);
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            Ca(CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap())
        }

        /// An intermediate CA signed by this one.
        pub fn intermediate(&self, name: &str) -> Ca {
            let mut params = CertificateParams::default();
            params.distinguished_name.push(DnType::CommonName, name);
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            Ca(CertifiedIssuer::signed_by(params, KeyPair::generate().unwrap(), &*self.0).unwrap())
        }

        /// This CA's certificate.
        pub fn der(&self) -> CertificateDer<'static> {
            self.0.der().clone()
        }

        /// A leaf signed by this CA from `params`.
        pub fn sign(&self, params: CertificateParams) -> CertificateDer<'static> {
            let key = KeyPair::generate().unwrap();
            params.signed_by(&key, &*self.0).unwrap().der().clone()
        }

        /// A client certificate with the given CN and organizations.
        pub fn client(&self, cn: &str, orgs: &[&str]) -> CertificateDer<'static> {
            self.sign(client_params(cn, orgs))
        }
    }

    /// Client certificate parameters: CN, O values, client-auth EKU.
    pub fn client_params(cn: &str, orgs: &[&str]) -> CertificateParams {
        let mut params = CertificateParams::default();
        params.distinguished_name = DistinguishedName::new();
        if !cn.is_empty() {
            params.distinguished_name.push(DnType::CommonName, cn);
        }
        // rcgen keeps one value per attribute type, so further O values use the same OID
        // spelled as a custom type.
        for (i, org) in orgs.iter().enumerate() {
            let ty = if i == 0 {
                DnType::OrganizationName
            } else {
                DnType::CustomDnType(vec![2, 5, 4, 10])
            };
            params
                .distinguished_name
                .push(ty, DnValue::Utf8String((*org).to_string()));
        }
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params
    }
}

#[cfg(test)]
mod tests {
    use super::testcerts::{Ca, client_params};
    use super::*;
    use crate::authn::StaticClientCa;
    use rcgen::{DnType, DnValue, ExtendedKeyUsagePurpose};

    fn request_with(chain: Option<Vec<CertificateDer<'static>>>) -> http::request::Parts {
        let mut conn = ConnectionInfo::local();
        conn.tls = true;
        conn.peer_certificates = chain.map(Arc::new);
        let (mut parts, _) = http::Request::new(()).into_parts();
        parts.extensions.insert(conn);
        parts
    }

    fn ca_source(ca: &Ca) -> Arc<dyn ClientCaSource> {
        Arc::new(StaticClientCa(Arc::new(vec![ca.der()])))
    }

    #[derive(Debug)]
    struct NoCa;
    impl ClientCaSource for NoCa {
        fn ca_certificates(&self) -> Option<Arc<Vec<CertificateDer<'static>>>> {
            None
        }
    }

    #[tokio::test]
    async fn x509_table() {
        let root = Ca::new("root");
        let other = Ca::new("other");
        let intermediate = root.intermediate("intermediate");
        let auth = X509Authenticator::new(ca_source(&root));

        // No TLS / no certificates: no opinion.
        assert_eq!(auth.authenticate(&request_with(None)).await.unwrap(), None);
        assert_eq!(
            auth.authenticate(&request_with(Some(vec![])))
                .await
                .unwrap(),
            None
        );

        // Valid client cert: CN → user, O → groups, credential id.
        let leaf = root.client("client_cn", &["group_a", "group_b"]);
        let resp = auth
            .authenticate(&request_with(Some(vec![leaf.clone()])))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(resp.user.name, "client_cn");
        assert_eq!(resp.user.groups, vec!["group_a", "group_b"]);
        assert_eq!(resp.user.uid, "");
        assert_eq!(
            resp.user.extra[CREDENTIAL_ID_KEY],
            vec![certificate_credential_id(&leaf)]
        );
        assert!(resp.user.extra[CREDENTIAL_ID_KEY][0].starts_with("X509SHA256="));
        assert_eq!(resp.user.extra[CREDENTIAL_ID_KEY][0].len(), 11 + 64);

        // Empty CN: verified, but no opinion.
        let no_cn = root.client("", &["group"]);
        assert_eq!(
            auth.authenticate(&request_with(Some(vec![no_cn])))
                .await
                .unwrap(),
            None
        );

        // Wrong CA: error naming the certificate.
        let foreign = other.client("client_cn", &[]);
        let err = auth
            .authenticate(&request_with(Some(vec![foreign.clone()])))
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("verifying certificate SN="), "{text}");
        assert!(
            text.ends_with("failed: x509: certificate signed by unknown authority"),
            "{text}"
        );
        assert!(text.contains(&certificate_identifier(&foreign)));

        // Server-auth only: incompatible usage.
        let mut params = client_params("server", &[]);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let server = root.sign(params);
        let err = auth
            .authenticate(&request_with(Some(vec![server])))
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .ends_with("x509: certificate specifies an incompatible key usage"),
            "{err}"
        );

        // No EKU at all is acceptable (Go treats it as any usage).
        let mut params = client_params("no-eku", &[]);
        params.extended_key_usages = vec![];
        let no_eku = root.sign(params);
        assert_eq!(
            auth.authenticate(&request_with(Some(vec![no_eku])))
                .await
                .unwrap()
                .unwrap()
                .user
                .name,
            "no-eku"
        );

        // Expired.
        let mut params = client_params("expired", &[]);
        params.not_before = rcgen::date_time_ymd(2000, 1, 1);
        params.not_after = rcgen::date_time_ymd(2001, 1, 1);
        let expired = root.sign(params);
        let err = auth
            .authenticate(&request_with(Some(vec![expired])))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("expired"), "{err}");

        // Intermediates come from the presented chain.
        let via_intermediate = intermediate.client("inter", &[]);
        assert_eq!(
            auth.authenticate(&request_with(Some(vec![
                via_intermediate.clone(),
                intermediate.der()
            ])))
            .await
            .unwrap()
            .unwrap()
            .user
            .name,
            "inter"
        );
        assert!(
            auth.authenticate(&request_with(Some(vec![via_intermediate])))
                .await
                .is_err()
        );

        // No CA loaded yet: no opinion.
        let unloaded = X509Authenticator::new(Arc::new(NoCa));
        assert_eq!(
            unloaded
                .authenticate(&request_with(Some(vec![leaf])))
                .await
                .unwrap(),
            None
        );
    }

    #[tokio::test]
    async fn uid_from_certificate() {
        let root = Ca::new("root");
        let auth = X509Authenticator::new(ca_source(&root));
        let mut params = client_params("with-uid", &["g"]);
        params.distinguished_name.push(
            DnType::CustomDnType(UID_OID.to_vec()),
            DnValue::Utf8String("the-uid".into()),
        );
        let leaf = root.sign(params);
        let resp = auth
            .authenticate(&request_with(Some(vec![leaf])))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(resp.user.uid, "the-uid");

        let mut params = client_params("empty-uid", &[]);
        params.distinguished_name.push(
            DnType::CustomDnType(UID_OID.to_vec()),
            DnValue::Utf8String(String::new()),
        );
        let leaf = root.sign(params);
        assert_eq!(
            auth.authenticate(&request_with(Some(vec![leaf])))
                .await
                .unwrap_err()
                .to_string(),
            "UID cannot be an empty string"
        );
    }

    #[test]
    fn uid_attribute_rules() {
        assert_eq!(uid_from_attributes(vec![]).unwrap(), "");
        assert_eq!(uid_from_attributes(vec![Some("a".into())]).unwrap(), "a");
        assert_eq!(
            uid_from_attributes(vec![Some("a".into()), Some("b".into())])
                .unwrap_err()
                .to_string(),
            "expected 1 UID, but found multiple: [a b]"
        );
        assert_eq!(
            uid_from_attributes(vec![None]).unwrap_err().to_string(),
            "unable to parse UID into a string"
        );
    }

    #[test]
    fn certificate_identifier_format() {
        let root = Ca::new("root");
        let mut params = client_params("x", &[]);
        params.serial_number = Some(rcgen::SerialNumber::from(vec![0x01, 0x00]));
        params.use_authority_key_identifier_extension = true;
        let leaf = root.sign(params);
        let id = certificate_identifier(&leaf);
        // rcgen writes no SKID on leaves, but the AKID names the CA's key.
        assert!(id.starts_with("SN=256, SKID=, AKID="), "{id}");
        let akid = id.split("AKID=").nth(1).unwrap();
        assert!(!akid.is_empty());
        assert!(
            akid.split(':').all(|b| b.len() == 2
                && b.chars()
                    .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_lowercase())),
            "{id}"
        );
        // The CA certificate carries an SKID.
        let ca_id = certificate_identifier(&root.der());
        assert!(!ca_id.contains("SKID=,"), "{ca_id}");
        assert_eq!(colon_hex(&[0xab, 0x01, 0xff]), "AB:01:FF");
        assert_eq!(colon_hex(&[]), "");
    }

    struct Fixed;
    #[async_trait::async_trait]
    impl Authenticator for Fixed {
        async fn authenticate(
            &self,
            _req: &http::request::Parts,
        ) -> Result<Option<AuthResponse>, AuthError> {
            Ok(Some(AuthResponse::new(UserInfo {
                name: "from-headers".into(),
                ..Default::default()
            })))
        }
    }

    #[tokio::test]
    async fn x509_verifier() {
        let root = Ca::new("root");
        let other = Ca::new("other");
        let allowed = X509Verifier::new(ca_source(&root), vec!["proxy".into()], Arc::new(Fixed));
        let any = X509Verifier::new(ca_source(&root), vec![], Arc::new(Fixed));

        assert_eq!(
            allowed.authenticate(&request_with(None)).await.unwrap(),
            None
        );

        let proxy = root.client("proxy", &[]);
        assert_eq!(
            allowed
                .authenticate(&request_with(Some(vec![proxy.clone()])))
                .await
                .unwrap()
                .unwrap()
                .user
                .name,
            "from-headers"
        );
        let intruder = root.client("intruder", &[]);
        assert_eq!(
            allowed
                .authenticate(&request_with(Some(vec![intruder.clone()])))
                .await
                .unwrap_err()
                .to_string(),
            "x509: subject with cn=intruder is not in the allowed list"
        );
        assert!(
            any.authenticate(&request_with(Some(vec![intruder])))
                .await
                .unwrap()
                .is_some()
        );
        let foreign = other.client("proxy", &[]);
        assert_eq!(
            allowed
                .authenticate(&request_with(Some(vec![foreign])))
                .await
                .unwrap_err()
                .to_string(),
            "x509: certificate signed by unknown authority"
        );
    }
}
