//! An issuer's signing keys (what go-oidc's provider and remote key set do for upstream):
//! the discovery document (`<issuer>/.well-known/openid-configuration`, or the configured
//! discovery URL) must name the configured issuer and gives `jwks_uri`; the key set is
//! fetched from there, again whenever a token names a key id it does not hold or fails to
//! verify with the keys held (the issuer rotated its keys), and every
//! [`PERIODIC_REFRESH`]. Until discovery succeeds the issuer is not initialized; it is
//! retried every [`INIT_RETRY`], as upstream does.

use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwapOption;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::keys::Jwk;
use super::metrics;
use crate::util::webhook::{Backoff, DEFAULT_REQUEST_TIMEOUT, WebhookClient, WebhookKubeconfig};

/// How often discovery is retried until it first succeeds.
pub const INIT_RETRY: Duration = Duration::from_secs(10);

/// How often the key set is refreshed without being asked to.
pub const PERIODIC_REFRESH: Duration = Duration::from_secs(600);

const WELL_KNOWN: &str = "/.well-known/openid-configuration";

/// The discovered endpoint and the keys last fetched from it.
struct Discovered {
    jwks: WebhookClient,
    keys: ArcSwapOption<Vec<Jwk>>,
}

/// The keys of one issuer.
pub struct IssuerKeys {
    issuer: String,
    apiserver_id: String,
    discovery_url: String,
    ca_pem: Vec<u8>,
    discovered: ArcSwapOption<Discovered>,
    refresh: tokio::sync::Mutex<u64>,
    generation: std::sync::atomic::AtomicU64,
}

/// A single quick attempt per fetch; upstream's HTTP client does not retry either.
fn no_retry() -> Backoff {
    Backoff {
        steps: 1,
        ..Backoff::default()
    }
}

impl IssuerKeys {
    /// The keys of `issuer`, discovered at `discovery_url` (default: the well-known path
    /// under the issuer), connecting with `ca_pem` (empty: the host's CAs); key set fetches
    /// are recorded in the metrics under `apiserver_id`.
    pub fn new(
        issuer: &str,
        discovery_url: Option<&str>,
        ca_pem: Vec<u8>,
        apiserver_id: &str,
    ) -> Self {
        let discovery_url = match discovery_url.filter(|d| !d.is_empty()) {
            Some(d) => d.to_string(),
            None => format!("{}{WELL_KNOWN}", issuer.trim_end_matches('/')),
        };
        IssuerKeys {
            issuer: issuer.to_string(),
            apiserver_id: apiserver_id.to_string(),
            discovery_url,
            ca_pem,
            discovered: ArcSwapOption::empty(),
            refresh: tokio::sync::Mutex::new(0),
            generation: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn client(&self, url: &str) -> Result<WebhookClient, String> {
        let config = WebhookKubeconfig {
            server: url.to_string(),
            ca_pem: self.ca_pem.clone(),
            ..Default::default()
        };
        WebhookClient::new(&config, DEFAULT_REQUEST_TIMEOUT, no_retry())
    }

    /// Whether discovery has succeeded.
    pub fn initialized(&self) -> bool {
        self.discovered.load().is_some()
    }

    /// Fetches the discovery document and the key set once.
    pub async fn discover(&self) -> Result<(), String> {
        let doc = self
            .client(&self.discovery_url)?
            .get_json()
            .await
            .map_err(|e| format!("oidc: failed to query provider: {e}"))?;
        let issuer = doc.get("issuer").and_then(Value::as_str).unwrap_or("");
        if issuer != self.issuer {
            return Err(format!(
                "oidc: issuer did not match the issuer returned by provider, expected {:?} got {issuer:?}",
                self.issuer
            ));
        }
        let jwks_uri = doc
            .get("jwks_uri")
            .and_then(Value::as_str)
            .filter(|u| !u.is_empty())
            .ok_or("oidc: provider did not return a jwks_uri")?;
        let discovered = Discovered {
            jwks: self.client(jwks_uri)?,
            keys: ArcSwapOption::empty(),
        };
        let keys = self.fetch_keys(&discovered.jwks).await?;
        discovered.keys.store(Some(Arc::new(keys)));
        self.discovered.store(Some(Arc::new(discovered)));
        Ok(())
    }

    /// Runs discovery until it succeeds (every [`INIT_RETRY`]), then refreshes the keys
    /// every [`PERIODIC_REFRESH`], until `stop`.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        loop {
            match self.discover().await {
                Ok(()) => break,
                Err(e) => tracing::error!("oidc authenticator: initializing plugin: {e}"),
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(INIT_RETRY) => {}
            }
        }
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(PERIODIC_REFRESH) => {}
            }
            let seen = self.generation();
            if let Err(e) = self.refresh(seen).await {
                tracing::warn!(
                    "oidc authenticator: refreshing keys of {}: {e}",
                    self.issuer
                );
            }
        }
    }

    /// The keys held now (`None` before discovery).
    pub fn keys(&self) -> Option<Arc<Vec<Jwk>>> {
        self.discovered
            .load()
            .as_ref()
            .and_then(|d| d.keys.load_full())
    }

    /// How many times the keys were fetched; pass it to [`Self::refresh`].
    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Fetches the key set again unless someone did since `seen` (concurrent callers
    /// share one fetch).
    pub async fn refresh(&self, seen: u64) -> Result<(), String> {
        let _turn = self.refresh.lock().await;
        if self.generation() != seen {
            return Ok(());
        }
        let Some(discovered) = self.discovered.load_full() else {
            return Err("oidc: authenticator not initialized".into());
        };
        let keys = self.fetch_keys(&discovered.jwks).await?;
        discovered.keys.store(Some(Arc::new(keys)));
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        Ok(())
    }
}

impl IssuerKeys {
    /// Fetches and parses the key set, recording the fetch in the metrics.
    async fn fetch_keys(&self, client: &WebhookClient) -> Result<Vec<Jwk>, String> {
        let fetched = client
            .get_json()
            .await
            .map_err(|e| format!("fetching keys oidc: get keys failed: {e}"))
            .and_then(|doc| Jwk::parse_set(&doc).map(|keys| (doc, keys)));
        match fetched {
            Ok((doc, keys)) => {
                let key_set = doc.to_string();
                metrics::record_jwks_fetch(
                    &self.issuer,
                    &self.apiserver_id,
                    Some(key_set.as_bytes()),
                );
                Ok(keys)
            }
            Err(e) => {
                metrics::record_jwks_fetch(&self.issuer, &self.apiserver_id, None);
                Err(e)
            }
        }
    }
}
