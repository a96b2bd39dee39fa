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

/// `kubernetes.default.svc:443` is this server, listening on `addr` (upstream's loopback
/// resolver); an unspecified bind address is reached on 127.0.0.1.
fn loopback(namespace: &str, name: &str, port: u16, addr: SocketAddr) -> Option<(String, u16)> {
    if (namespace, name, port) != ("default", "kubernetes", 443) {
        return None;
    }
    let ip = addr.ip();
    let host = if ip.is_unspecified() {
        "127.0.0.1".to_string()
    } else {
        ip.to_string()
    };
    Some((host, addr.port()))
}

impl ServiceResolver for WebhookServiceResolver {
    fn resolve<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
        port: u16,
    ) -> BoxFuture<'a, Result<(String, u16), String>> {
        Box::pin(async move {
            if let Some(own) = loopback(namespace, name, port, self.loopback) {
                return Ok(own);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kubernetes_service_is_this_server() {
        let any: SocketAddr = "0.0.0.0:6443".parse().unwrap();
        assert_eq!(
            loopback("default", "kubernetes", 443, any),
            Some(("127.0.0.1".to_string(), 6443))
        );
        let bound: SocketAddr = "[::1]:7000".parse().unwrap();
        assert_eq!(
            loopback("default", "kubernetes", 443, bound),
            Some(("::1".to_string(), 7000))
        );
        assert_eq!(loopback("default", "kubernetes", 8443, any), None);
        assert_eq!(loopback("other", "kubernetes", 443, any), None);
    }
}
