//! Test certificates: a CA, serving certificates and client certificates, made with rcgen.

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};

/// A PEM certificate and its PEM key.
#[derive(Clone, Debug)]
pub struct Pem {
    pub cert: String,
    pub key: String,
}

/// A certificate authority that signs test certificates.
pub struct Ca {
    pub pem: Pem,
    issuer: Issuer<'static, KeyPair>,
}

impl Ca {
    /// A new self-signed CA with common name `cn`.
    pub fn new(cn: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, cn);
        params.distinguished_name = dn;
        let key = KeyPair::generate().expect("key");
        let cert = params.self_signed(&key).expect("self sign");
        let pem = Pem {
            cert: cert.pem(),
            key: key.serialize_pem(),
        };
        Ca {
            pem,
            issuer: Issuer::new(params, key),
        }
    }

    /// A serving certificate for `names` (DNS names or IP literals).
    pub fn serving(&self, cn: &str, names: &[&str]) -> Pem {
        let mut params =
            CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .expect("params");
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, cn);
        params.distinguished_name = dn;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.sign(params)
    }

    /// A client certificate with common name `cn` and organizations `groups`.
    pub fn client(&self, cn: &str, groups: &[&str]) -> Pem {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, cn);
        for group in groups {
            dn.push(DnType::OrganizationName, *group);
        }
        params.distinguished_name = dn;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.sign(params)
    }

    fn sign(&self, params: CertificateParams) -> Pem {
        let key = KeyPair::generate().expect("key");
        let cert = params.signed_by(&key, &self.issuer).expect("sign");
        Pem {
            cert: cert.pem(),
            key: key.serialize_pem(),
        }
    }
}

impl Pem {
    /// The DER bytes of the (first) certificate.
    pub fn cert_der(&self) -> Vec<u8> {
        use rustls::pki_types::{CertificateDer, pem::PemObject};
        CertificateDer::from_pem_slice(self.cert.as_bytes())
            .expect("cert pem")
            .as_ref()
            .to_vec()
    }
}
