//! The conversion webhook of a CRD (upstream `webhookConverter`): its client from
//! `spec.conversion.webhook.clientConfig` (`url`, or a `service` resolved through the
//! [`ServiceResolver`] seam and verified as `<name>.<namespace>.svc`; `caBundle` as the
//! roots), one POST of a `ConversionReview` per conversion with upstream's 30 s timeout and
//! no retries, and the checks of [`review`](super::review).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use apiserver::util::webhook::{Backoff, WebhookClient, WebhookKubeconfig};
use base64::Engine;
use serde_json::Value;

use super::ConversionError;
use super::metrics::{FailureType, observe_request};
use super::review;
use crate::seams::ServiceResolver;

/// upstream's conversion webhook timeout (the REST client's default, sent as `?timeout=30s`).
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// Where the webhook is.
enum Target {
    /// `clientConfig.url`: one client.
    Url(Arc<WebhookClient>),
    /// `clientConfig.service`: resolved on every call; a client per resolved address.
    Service {
        namespace: String,
        name: String,
        path: String,
        port: u16,
        ca_pem: Vec<u8>,
        clients: Mutex<HashMap<(String, u16), Arc<WebhookClient>>>,
    },
    /// The client cannot be built (a bad `caBundle`): every conversion fails with this.
    Broken(String),
}

/// A CRD's conversion webhook.
pub struct WebhookConverter {
    crd_name: String,
    review_versions: Vec<String>,
    target: Target,
    resolver: Arc<dyn ServiceResolver>,
}

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// A client for `server`, trusting `ca_pem` (the system roots when empty) and verifying the
/// certificate for `server_name` (the URL's host when `None`).
fn client(
    server: String,
    ca_pem: Vec<u8>,
    server_name: Option<String>,
) -> Result<WebhookClient, String> {
    let config = WebhookKubeconfig {
        server,
        ca_pem,
        tls_server_name: server_name,
        ..Default::default()
    };
    let once = Backoff {
        steps: 1,
        ..Backoff::default()
    };
    WebhookClient::new(&config, TIMEOUT, once)
}

/// The URL a request goes to: the configured one plus the `timeout` parameter client-go
/// adds.
fn with_timeout(url: &str) -> String {
    format!("{url}?timeout={}s", TIMEOUT.as_secs())
}

impl WebhookConverter {
    /// The webhook of `crd` (its `spec.conversion.webhook`), resolving services with
    /// `resolver`.
    pub fn new(crd: &Value, resolver: Arc<dyn ServiceResolver>) -> Self {
        let webhook = crd
            .pointer("/spec/conversion/webhook")
            .cloned()
            .unwrap_or(Value::Null);
        let review_versions = webhook
            .get("conversionReviewVersions")
            .and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let config = webhook.get("clientConfig").cloned().unwrap_or(Value::Null);
        let ca_pem = match s(&config, "/caBundle") {
            "" => Ok(Vec::new()),
            b64 => base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|e| format!("illegal base64 data in caBundle: {e}")),
        };
        let target = match ca_pem {
            Err(e) => Target::Broken(e),
            Ok(ca_pem) => match config.get("service").filter(|v| v.is_object()) {
                Some(service) => Target::Service {
                    namespace: s(service, "/namespace").to_string(),
                    name: s(service, "/name").to_string(),
                    path: s(service, "/path").to_string(),
                    port: service
                        .get("port")
                        .and_then(Value::as_u64)
                        .and_then(|p| u16::try_from(p).ok())
                        .unwrap_or(443),
                    ca_pem,
                    clients: Mutex::default(),
                },
                None => match client(with_timeout(s(&config, "/url")), ca_pem, None) {
                    Ok(c) => Target::Url(Arc::new(c)),
                    Err(e) => Target::Broken(e),
                },
            },
        };
        WebhookConverter {
            crd_name: s(crd, "/metadata/name").to_string(),
            review_versions,
            target,
            resolver,
        }
    }

    /// The CRD's name (the `crd_name` metric label).
    pub fn crd_name(&self) -> &str {
        &self.crd_name
    }

    /// The client to call now: the URL's, or the one for the service's current address.
    async fn client(&self) -> Result<Arc<WebhookClient>, String> {
        match &self.target {
            Target::Url(c) => Ok(c.clone()),
            Target::Broken(e) => Err(e.clone()),
            Target::Service {
                namespace,
                name,
                path,
                port,
                ca_pem,
                clients,
            } => {
                let host_name = format!("{name}.{namespace}.svc");
                let (host, resolved_port) = self
                    .resolver
                    .resolve(namespace, name, *port)
                    .await
                    .map_err(|e| {
                        format!(
                            "Post {:?}: {e}",
                            with_timeout(&format!("https://{host_name}:{port}{path}"))
                        )
                    })?;
                let key = (host.clone(), resolved_port);
                let mut cache = clients.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(c) = cache.get(&key) {
                    return Ok(c.clone());
                }
                let authority = if host.contains(':') {
                    format!("[{host}]:{resolved_port}")
                } else {
                    format!("{host}:{resolved_port}")
                };
                let built = Arc::new(client(
                    with_timeout(&format!("https://{authority}{path}")),
                    ca_pem.clone(),
                    Some(host_name),
                )?);
                cache.insert(key, built.clone());
                Ok(built)
            }
        }
    }

    /// Sends `originals` to the webhook for conversion to `desired_api_version` and returns
    /// the checked, metadata-restored results in order. `label` names the conversion in
    /// errors; `list` picks upstream's list texts.
    pub async fn convert(
        &self,
        originals: &[Value],
        desired_api_version: &str,
        label: &str,
        list: bool,
    ) -> Result<Vec<Value>, ConversionError> {
        let Some(review_version) = review::pick_version(&self.review_versions) else {
            return Err(ConversionError(
                "no supported conversion review versions".into(),
            ));
        };
        let uid = uuid::Uuid::new_v4().to_string();
        let body = review::request(review_version, &uid, desired_api_version, originals);
        let started = Instant::now();
        let failed = |failure: FailureType, message: String| {
            observe_request(Some(failure), started.elapsed());
            ConversionError(message)
        };
        let client = self.client().await.map_err(|e| {
            failed(
                FailureType::Call,
                format!("conversion webhook for {label} failed: {e}"),
            )
        })?;
        let response = client.post_json(&body).await.map_err(|e| {
            failed(
                FailureType::Call,
                format!("conversion webhook for {label} failed: {e}"),
            )
        })?;
        let converted =
            review::converted_objects(review_version, &uid, &response).map_err(|e| {
                failed(
                    e.failure,
                    format!("conversion webhook for {label} failed: {}", e.message),
                )
            })?;
        let out = review::check_converted(originals, converted, desired_api_version, label, list)
            .map_err(|e| failed(e.failure, e.message))?;
        observe_request(None, started.elapsed());
        Ok(out)
    }
}
