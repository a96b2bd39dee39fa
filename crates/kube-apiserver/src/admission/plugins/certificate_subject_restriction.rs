//! CertificateSubjectRestriction (upstream
//! `plugin/pkg/admission/certificates/subjectrestriction`): no CertificateSigningRequest for
//! the `kubernetes.io/kube-apiserver-client` signer may ask for the `system:masters` group.

use std::sync::Arc;

use apiserver::admission::{Attributes, Operation, Plugin, forbidden};
use apiserver::status::ApiError;
use async_trait::async_trait;

use super::certificates::{KUBE_APISERVER_CLIENT_SIGNER, csr_subject};
use crate::admission::PluginContext;
use crate::apis::json::str_at;

/// The plugin's name.
pub const NAME: &str = "CertificateSubjectRestriction";

/// The CertificateSubjectRestriction plugin.
pub struct CertificateSubjectRestriction;

/// Builds the plugin.
pub fn new(_: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(CertificateSubjectRestriction))
}

#[async_trait]
impl Plugin for CertificateSubjectRestriction {
    fn name(&self) -> &str {
        NAME
    }

    fn handles(&self, op: Operation) -> bool {
        op == Operation::Create
    }

    fn validates(&self) -> bool {
        true
    }

    async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError> {
        if attrs.resource.group != "certificates.k8s.io"
            || attrs.resource.resource != "certificatesigningrequests"
            || !attrs.subresource.is_empty()
        {
            return Ok(());
        }
        let Some(csr) = attrs.object.as_ref() else {
            return Ok(());
        };
        let signer = str_at(csr, "spec.signerName").unwrap_or_default();
        if signer != KUBE_APISERVER_CLIENT_SIGNER {
            return Ok(());
        }
        let subject =
            csr_subject(csr).map_err(|e| forbidden(attrs, &format!("failed to parse CSR: {e}")))?;
        if subject.organizations.iter().any(|o| o == "system:masters") {
            return Err(forbidden(
                attrs,
                &format!("use of {signer} signer with system:masters group is not allowed"),
            ));
        }
        Ok(())
    }
}
