//! CertificateSigning (upstream `plugin/pkg/admission/certificates/signing`): setting or
//! changing `status.certificate` of a CertificateSigningRequest through its `status`
//! subresource needs the `sign` verb on the request's signer.

use std::sync::Arc;

use apiserver::admission::{Attributes, Operation, Plugin, forbidden};
use apiserver::status::ApiError;
use async_trait::async_trait;

use super::certificates::authorized_for_signer;
use crate::admission::PluginContext;
use crate::apis::json::{get, str_at};
use crate::auth::AuthzHandle;

/// The plugin's name.
pub const NAME: &str = "CertificateSigning";

/// The CertificateSigning plugin.
pub struct CertificateSigning {
    authz: AuthzHandle,
}

/// Builds the plugin over the server's authorizer.
pub fn new(ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(CertificateSigning {
        authz: ctx.authz.clone(),
    }))
}

#[async_trait]
impl Plugin for CertificateSigning {
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
            || attrs.subresource != "status"
        {
            return Ok(());
        }
        let (Some(new), Some(old)) = (attrs.object.as_ref(), attrs.old_object.as_ref()) else {
            return Ok(());
        };
        let certificate = |csr| {
            get(csr, "status.certificate")
                .and_then(|c| c.as_str())
                .unwrap_or_default()
        };
        if certificate(new) == certificate(old) {
            return Ok(());
        }
        let signer = str_at(old, "spec.signerName").unwrap_or_default();
        if authorized_for_signer(
            self.authz.get()?.authorizer.as_ref(),
            &attrs.user,
            "sign",
            signer,
        )
        .await
        {
            return Ok(());
        }
        Err(forbidden(
            attrs,
            &format!("user not permitted to sign requests with signerName {signer:?}"),
        ))
    }
}
