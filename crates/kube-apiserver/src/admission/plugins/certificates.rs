//! What the certificate plugins share: the subject of a CertificateSigningRequest's PEM
//! request, and upstream's `IsAuthorizedForSignerName` (a verb on the `signers` resource of
//! certificates.k8s.io, by the signer's name or its `<domain>/*` wildcard).

use std::sync::Arc;

use apiserver::authz::{Attributes as AuthzAttributes, Authorizer, Decision};
use apiserver::request::UserInfo;
use base64::Engine;
use serde_json::Value;
use x509_parser::prelude::FromDer;

use crate::apis::json::str_at;

/// The signer of client certificates for kube-apiserver.
pub const KUBE_APISERVER_CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";
/// The signer of kubelets' client certificates.
pub const KUBE_APISERVER_CLIENT_KUBELET_SIGNER: &str =
    "kubernetes.io/kube-apiserver-client-kubelet";
/// The signer of kubelets' serving certificates.
pub const KUBELET_SERVING_SIGNER: &str = "kubernetes.io/kubelet-serving";

/// The subject of a certificate request.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CsrSubject {
    /// The common name.
    pub common_name: String,
    /// The organizations (the groups of a client certificate).
    pub organizations: Vec<String>,
}

/// The subject of the CSR's `spec.request` (base64 of a PEM `CERTIFICATE REQUEST` block),
/// or why it does not parse.
pub fn csr_subject(csr: &Value) -> Result<CsrSubject, String> {
    let pem = str_at(csr, "spec.request")
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .unwrap_or_default();
    let block = x509_parser::pem::parse_x509_pem(&pem)
        .ok()
        .map(|(_, p)| p)
        .filter(|p| p.label == "CERTIFICATE REQUEST")
        .ok_or("PEM block type must be CERTIFICATE REQUEST")?;
    let (_, request) =
        x509_parser::certification_request::X509CertificationRequest::from_der(&block.contents)
            .map_err(|e| format!("x509: malformed certificate request: {e}"))?;
    let subject = &request.certification_request_info.subject;
    let common_name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .unwrap_or_default()
        .to_string();
    let organizations = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_string))
        .collect();
    Ok(CsrSubject {
        common_name,
        organizations,
    })
}

fn signer_attributes(user: &Arc<UserInfo>, verb: &str, name: String) -> AuthzAttributes {
    AuthzAttributes {
        user: Some(user.clone()),
        verb: verb.to_string(),
        api_group: "certificates.k8s.io".into(),
        api_version: "*".into(),
        resource: "signers".into(),
        name,
        resource_request: true,
        ..Default::default()
    }
}

/// Whether `user` may `verb` (`approve`, `sign`) requests for `signer`: on the signer's name,
/// else on `<domain>/*`.
pub async fn authorized_for_signer(
    authorizer: &dyn Authorizer,
    user: &Arc<UserInfo>,
    verb: &str,
    signer: &str,
) -> bool {
    let exact = signer_attributes(user, verb, signer.to_string());
    if authorizer.authorize(&exact).await.0 == Decision::Allow {
        return true;
    }
    let domain = signer.split('/').next().unwrap_or_default();
    let wildcard = signer_attributes(user, verb, format!("{domain}/*"));
    authorizer.authorize(&wildcard).await.0 == Decision::Allow
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A CSR object whose request has the given subject.
    fn csr_with_subject(cn: &str, orgs: &[&str], signer: &str) -> Value {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        for org in orgs {
            params
                .distinguished_name
                .push(rcgen::DnType::OrganizationName, *org);
        }
        let pem = params.serialize_request(&key).unwrap().pem().unwrap();
        json!({"spec": {"request": base64::engine::general_purpose::STANDARD.encode(pem),
                        "signerName": signer}})
    }

    #[test]
    fn subject_is_read_from_the_pem_request() {
        let csr = csr_with_subject("alice", &["system:masters"], KUBE_APISERVER_CLIENT_SIGNER);
        let subject = csr_subject(&csr).unwrap();
        assert_eq!(subject.common_name, "alice");
        assert_eq!(subject.organizations, ["system:masters"]);
        let err = csr_subject(&json!({"spec": {"request": "bm9wZQ=="}})).unwrap_err();
        assert_eq!(err, "PEM block type must be CERTIFICATE REQUEST");
    }
}
