//! Where a remote APIService's traffic goes: its Service's cluster IP, the ExternalName host,
//! or (with `--enable-aggregator-routing`) an endpoint address (upstream `ResolveCluster` and
//! `ResolveEndpoint` in `apiserver/pkg/util/proxy`), and the availability checks on the way
//! (upstream's remote available controller reasons).

use std::sync::Arc;

use apiserver::registry::rest::{GetOptions, RequestContext, RestStorage};
use apiserver::status::reason;
use serde_json::Value;

use crate::apiservice::ServiceReference;

/// Why a Service could not be resolved: the condition reason and message upstream sets.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// No such Service.
    #[error("service/{name} in {namespace:?} is not present")]
    ServiceNotFound {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
    },
    /// The Service has no port with the APIService's port number.
    #[error("service/{name} in {namespace:?} is not listening on port {port}")]
    ServicePortError {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// The port asked for.
        port: u16,
    },
    /// No Endpoints object for the Service.
    #[error("cannot find endpoints for service/{name} in {namespace:?}")]
    EndpointsNotFound {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
    },
    /// The Endpoints have no ready address with the port.
    #[error(
        "endpoints for service/{name} in {namespace:?} have no addresses with port name {port_name:?}"
    )]
    MissingEndpoints {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// The service port's name.
        port_name: String,
    },
    /// Anything else (no cluster IP, storage errors).
    #[error("{0}")]
    Other(String),
}

impl ResolveError {
    /// The `Available=False` condition reason.
    pub fn reason(&self) -> &'static str {
        match self {
            ResolveError::ServiceNotFound { .. } => "ServiceNotFound",
            ResolveError::ServicePortError { .. } => "ServicePortError",
            ResolveError::EndpointsNotFound { .. } => "EndpointsNotFound",
            ResolveError::MissingEndpoints { .. } => "MissingEndpoints",
            ResolveError::Other(_) => "ServiceAccessError",
        }
    }
}

/// Resolves Service references through the Service (and Endpoints) storage.
#[derive(Clone)]
pub struct ServiceResolver {
    services: Arc<dyn RestStorage>,
    endpoints: Option<Arc<dyn RestStorage>>,
    endpoint_routing: bool,
}

impl std::fmt::Debug for ServiceResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceResolver")
            .field("endpoint_routing", &self.endpoint_routing)
            .finish_non_exhaustive()
    }
}

fn str_of<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

impl ServiceResolver {
    /// A resolver over the `services` storage, and `endpoints` for endpoint routing and the
    /// endpoint checks of ClusterIP services.
    pub fn new(
        services: Arc<dyn RestStorage>,
        endpoints: Option<Arc<dyn RestStorage>>,
        endpoint_routing: bool,
    ) -> Self {
        ServiceResolver {
            services,
            endpoints,
            endpoint_routing,
        }
    }

    /// The storages whose changes can change a resolution (Services, Endpoints).
    pub fn watched_storages(&self) -> Vec<Arc<dyn RestStorage>> {
        let mut out = vec![self.services.clone()];
        out.extend(self.endpoints.clone());
        out
    }

    async fn get(
        storage: &dyn RestStorage,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, String> {
        let ctx = RequestContext {
            namespace: namespace.to_string(),
            ..Default::default()
        };
        match storage.get(&ctx, name, &GetOptions::default()).await {
            Ok(obj) => Ok(Some(obj)),
            Err(err) if err.reason() == reason::NOT_FOUND => Ok(None),
            Err(err) => Err(err.to_string()),
        }
    }

    /// The `host` and `port` to dial for `service`, checking what upstream's availability
    /// controller checks (the Service exists, listens on the port, has endpoints).
    pub async fn resolve(&self, service: &ServiceReference) -> Result<(String, u16), ResolveError> {
        let ns = &service.namespace;
        let name = &service.name;
        let svc = Self::get(self.services.as_ref(), ns, name)
            .await
            .map_err(ResolveError::Other)?
            .ok_or_else(|| ResolveError::ServiceNotFound {
                namespace: ns.clone(),
                name: name.clone(),
            })?;
        if str_of(&svc, "/spec/type") == "ExternalName" {
            return Ok((str_of(&svc, "/spec/externalName").to_string(), service.port));
        }
        let ports = svc
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let Some(svc_port) = ports
            .iter()
            .find(|p| p.get("port").and_then(Value::as_u64) == Some(u64::from(service.port)))
        else {
            return Err(ResolveError::ServicePortError {
                namespace: ns.clone(),
                name: name.clone(),
                port: service.port,
            });
        };
        let port_name = svc_port
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let endpoint = match &self.endpoints {
            Some(endpoints) => {
                let eps = Self::get(endpoints.as_ref(), ns, name)
                    .await
                    .map_err(ResolveError::Other)?
                    .ok_or_else(|| ResolveError::EndpointsNotFound {
                        namespace: ns.clone(),
                        name: name.clone(),
                    })?;
                Some(first_endpoint(&eps, &port_name).ok_or_else(|| {
                    ResolveError::MissingEndpoints {
                        namespace: ns.clone(),
                        name: name.clone(),
                        port_name: port_name.clone(),
                    }
                })?)
            }
            None => None,
        };
        if self.endpoint_routing {
            return endpoint.ok_or_else(|| {
                ResolveError::Other("endpoint routing needs the endpoints storage".into())
            });
        }
        let cluster_ip = str_of(&svc, "/spec/clusterIP");
        if cluster_ip.is_empty() || cluster_ip == "None" {
            return Err(ResolveError::Other(format!(
                "invalid service type for service {ns}/{name}"
            )));
        }
        Ok((cluster_ip.to_string(), service.port))
    }
}

/// The first address of the subset port named `port_name` (upstream picks one at random).
fn first_endpoint(endpoints: &Value, port_name: &str) -> Option<(String, u16)> {
    for subset in endpoints.get("subsets")?.as_array()? {
        let port = subset
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|p| str_of(p, "/name") == port_name)
            .and_then(|p| p.get("port")?.as_u64())
            .and_then(|p| u16::try_from(p).ok());
        let address = subset
            .get("addresses")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .map(|a| str_of(a, "/ip").to_string());
        if let (Some(port), Some(ip)) = (port, address) {
            return Some((ip, port));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn endpoint_selection() {
        let eps = json!({"subsets": [
            {"addresses": [], "ports": [{"name": "https", "port": 8443}]},
            {"addresses": [{"ip": "10.0.0.5"}], "ports": [{"name": "https", "port": 8443}]}
        ]});
        assert_eq!(
            first_endpoint(&eps, "https"),
            Some(("10.0.0.5".into(), 8443))
        );
        assert_eq!(first_endpoint(&eps, "other"), None);
    }

    #[test]
    fn messages_and_reasons() {
        let err = ResolveError::ServiceNotFound {
            namespace: "wardle".into(),
            name: "api".into(),
        };
        assert_eq!(err.to_string(), "service/api in \"wardle\" is not present");
        assert_eq!(err.reason(), "ServiceNotFound");
        let err = ResolveError::MissingEndpoints {
            namespace: "wardle".into(),
            name: "api".into(),
            port_name: "https".into(),
        };
        assert_eq!(
            err.to_string(),
            "endpoints for service/api in \"wardle\" have no addresses with port name \"https\""
        );
    }
}
