//! Where webhooks given as a Service reference are reached (upstream kube-apiserver's
//! `buildServiceResolver`): the Service's cluster IP (an ExternalName's host), or with
//! `--enable-aggregator-routing` one of its endpoints, as the aggregator resolves
//! APIServices; `kubernetes.default.svc:443` is this server on loopback. CRD conversion
//! webhooks reach it through the apiextensions [`ServiceResolver`] seam.

use std::net::SocketAddr;
use std::sync::Arc;

use apiextensions::ServiceResolver;
use apiserver::registry::rest::RestStorage;
use apiserver::storage::BoxFuture;
use kube_aggregator::apiservice::ServiceReference;

/// The webhook service resolver of kube-apiserver.
pub struct WebhookServiceResolver {
    inner: kube_aggregator::ServiceResolver,
    loopback: SocketAddr,
}

impl WebhookServiceResolver {
    /// Resolves through `services` (and `endpoints` when `endpoint_routing`); `loopback` is
    /// this server's address.
    pub fn new(
        services: Arc<dyn RestStorage>,
        endpoints: Option<Arc<dyn RestStorage>>,
        endpoint_routing: bool,
        loopback: SocketAddr,
    ) -> Self {
        // Without endpoint routing only the Service is consulted, as upstream's cluster-IP
        // resolver does.
        let endpoints = if endpoint_routing { endpoints } else { None };
        WebhookServiceResolver {
            inner: kube_aggregator::ServiceResolver::new(services, endpoints, endpoint_routing),
            loopback,
        }
    }
}

impl ServiceResolver for WebhookServiceResolver {
    fn resolve<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
        port: u16,
    ) -> BoxFuture<'a, Result<(String, u16), String>> {
        Box::pin(async move {
            if namespace == "default" && name == "kubernetes" && port == 443 {
                let ip = self.loopback.ip();
                let host = if ip.is_unspecified() {
                    "127.0.0.1".to_string()
                } else {
                    ip.to_string()
                };
                return Ok((host, self.loopback.port()));
            }
            let reference = ServiceReference {
                namespace: namespace.to_string(),
                name: name.to_string(),
                port,
            };
            self.inner
                .resolve(&reference)
                .await
                .map_err(|e| e.to_string())
        })
    }
}
