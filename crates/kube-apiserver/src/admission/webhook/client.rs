//! The HTTPS clients of admission webhooks (upstream `util/webhook.ClientManager`): one per
//! client configuration, trusting the webhook's `caBundle` (the system roots without one),
//! with the credentials the admission kubeconfig names for the host; `url` webhooks are
//! called at their URL, `service` webhooks at `https://<name>.<namespace>.svc:<port><path>`,
//! connecting to the address the Service resolves to.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apiserver::util::webhook::{Backoff, WebhookClient, WebhookKubeconfig};

use super::config::AuthResolver;
use super::hooks::{ClientConfig, Endpoint};
use crate::apis::admissionregistration::webhooks::split_url;

/// Resolves a Service to the `host:port` to connect to (its cluster IP, or an endpoint).
#[async_trait::async_trait]
pub trait ResolveService: Send + Sync {
    /// The address of port `port` of Service `namespace/name`.
    async fn resolve(
        &self,
        namespace: &str,
        name: &str,
        port: u16,
    ) -> Result<(String, u16), String>;
}

#[async_trait::async_trait]
impl ResolveService for kube_aggregator::ServiceResolver {
    async fn resolve(
        &self,
        namespace: &str,
        name: &str,
        port: u16,
    ) -> Result<(String, u16), String> {
        kube_aggregator::ServiceResolver::resolve(
            self,
            &kube_aggregator::apiservice::ServiceReference {
                namespace: namespace.to_string(),
                name: name.to_string(),
                port,
            },
        )
        .await
        .map_err(|e| e.to_string())
    }
}

/// Why no client could be had.
#[derive(Debug, PartialEq, Eq)]
pub enum ClientError {
    /// The Service did not resolve: upstream fails the dial of `url` with `reason`.
    Resolve {
        /// The webhook's URL as called.
        url: String,
        /// The resolver's reason.
        reason: String,
    },
    /// The client configuration cannot be used (bad CA bundle, credentials, URL).
    Config(String),
}

/// How many clients are kept (upstream's cache size).
const CACHE_SIZE: usize = 200;

/// The key of a cached client: the configuration, the timeout and the resolved address.
type Key = (ClientConfig, Duration, Option<(String, u16)>);

/// Webhook clients, cached by configuration.
pub struct Clients {
    auth: AuthResolver,
    services: Option<Arc<dyn ResolveService>>,
    cache: Mutex<HashMap<Key, Arc<WebhookClient>>>,
}

impl std::fmt::Debug for Clients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clients").finish_non_exhaustive()
    }
}

/// One attempt only: upstream's admission calls are not retried.
fn no_retries() -> Backoff {
    Backoff {
        steps: 1,
        ..Backoff::default()
    }
}

impl Clients {
    /// Clients with `auth`'s credentials, resolving Services with `services`.
    pub fn new(auth: AuthResolver, services: Option<Arc<dyn ResolveService>>) -> Self {
        Clients {
            auth,
            services,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The client for `config`, whose calls are cut off after `timeout` (the URL carries
    /// upstream's `?timeout=<n>s`).
    pub async fn client(
        &self,
        config: &ClientConfig,
        timeout: Duration,
    ) -> Result<Arc<WebhookClient>, ClientError> {
        let dial = match &config.endpoint {
            Endpoint::Service {
                namespace,
                name,
                port,
                path,
            } => {
                let services = self
                    .services
                    .as_ref()
                    .ok_or_else(|| ClientError::Config("no service resolver".to_string()))?;
                let resolved =
                    services
                        .resolve(namespace, name, *port)
                        .await
                        .map_err(|reason| ClientError::Resolve {
                            url: format!(
                                "https://{name}.{namespace}.svc:{port}{}?timeout={}s",
                                if path.is_empty() { "/" } else { path },
                                timeout.as_secs()
                            ),
                            reason,
                        })?;
                Some(resolved)
            }
            Endpoint::Url(_) => None,
        };
        let key = (config.clone(), timeout, dial.clone());
        if let Some(client) = self
            .cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(client.clone());
        }
        let client = Arc::new(
            self.build(config, timeout, dial)
                .map_err(ClientError::Config)?,
        );
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= CACHE_SIZE {
            cache.clear();
        }
        cache.insert(key, client.clone());
        Ok(client)
    }

    fn build(
        &self,
        config: &ClientConfig,
        timeout: Duration,
        dial: Option<(String, u16)>,
    ) -> Result<WebhookClient, String> {
        let query = format!("?timeout={}s", timeout.as_secs());
        let (server, host_port, server_name) = match &config.endpoint {
            Endpoint::Url(url) => {
                let parts = split_url(url).map_err(|e| format!("Unparsable URL: {e}"))?;
                let host_port =
                    if parts.host.rsplit_once(':').is_some_and(|(_, p)| {
                        !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())
                    }) && !parts.host.ends_with(']')
                    {
                        parts.host.to_string()
                    } else {
                        format!("{}:443", parts.host)
                    };
                (format!("{url}{query}"), host_port, None)
            }
            Endpoint::Service {
                namespace,
                name,
                path,
                port,
            } => {
                let host = format!("{name}.{namespace}.svc");
                let path = if path.is_empty() { "/" } else { path };
                (
                    format!("https://{host}:{port}{path}{query}"),
                    format!("{host}:{port}"),
                    Some(host),
                )
            }
        };
        let credentials = self.auth.credentials_for(&host_port)?;
        let kubeconfig = WebhookKubeconfig {
            server,
            ca_pem: config.ca_bundle.clone(),
            insecure_skip_tls_verify: false,
            tls_server_name: server_name,
            client_cert: credentials.client_cert,
            token: credentials.token,
        };
        // The call is cut off by the dispatcher at `timeout`; the client's own limit is only a
        // backstop.
        let client =
            WebhookClient::new(&kubeconfig, timeout + Duration::from_secs(1), no_retries())?;
        Ok(match dial {
            Some((host, port)) => client.dial_to(&host, port),
            None => client,
        })
    }
}
