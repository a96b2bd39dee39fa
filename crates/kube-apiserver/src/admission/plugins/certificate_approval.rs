//! CertificateApproval (upstream `plugin/pkg/admission/certificates/approval`): approving or
//! denying a CertificateSigningRequest through `certificatesigningrequests/approval` needs the
//! `approve` verb on the request's signer (`signers` of certificates.k8s.io).

use std::sync::Arc;

use apiserver::admission::{Attributes, Operation, Plugin, forbidden};
use apiserver::status::ApiError;
use async_trait::async_trait;

use super::certificates::authorized_for_signer;
use crate::admission::PluginContext;
use crate::apis::json::str_at;
use crate::auth::AuthzHandle;

/// The plugin's name.
pub const NAME: &str = "CertificateApproval";

/// The CertificateApproval plugin.
pub struct CertificateApproval {
    authz: AuthzHandle,
}

/// Builds the plugin over the server's authorizer.
pub fn new(ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(CertificateApproval {
        authz: ctx.authz.clone(),
    }))
}

#[async_trait]
impl Plugin for CertificateApproval {
    fn name(&self) -> &str {
        NAME
    }

    fn handles(&self, op: Operation) -> bool {
        op == Operation::Update
    }

    fn validates(&self) -> bool {
        true
    }

    async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError> {
        if attrs.resource.group != "certificates.k8s.io"
            || attrs.resource.resource != "certificatesigningrequests"
            || attrs.subresource != "approval"
        {
            return Ok(());
        }
        let Some(csr) = attrs.object.as_ref() else {
            return Ok(());
        };
        let signer = str_at(csr, "spec.signerName").unwrap_or_default();
        if authorized_for_signer(
            self.authz.get()?.authorizer.as_ref(),
            &attrs.user,
            "approve",
            signer,
        )
        .await
        {
            return Ok(());
        }
        Err(forbidden(
            attrs,
            &format!("user not permitted to approve requests with signerName {signer:?}"),
        ))
    }
}
