//! `componentstatuses` (core/v1 `ComponentStatus`, list and get only): computed on every
//! request as upstream's `componentstatus.REST` does, by probing the scheduler and the
//! controller manager on their local secure ports (`/healthz`) and the storage backend
//! (`etcd-0`).

use std::sync::Arc;
use std::time::Duration;

use apiserver::registry::rest::{BoxFuture, GetOptions, ListOptions, RequestContext, RestStorage};
use apiserver::registry::{ResourceInfo, SharedStrategy, Strategy};
use apiserver::status::ApiError;
use apiserver::storage::Storage;
use apiserver::storage::selection::{FieldSelector, Fields};
use http_body_util::BodyExt;
use serde_json::{Value, json};

/// upstream's deprecation warning for v1 ComponentStatus.
pub const DEPRECATION_WARNING: &str = "v1 ComponentStatus is deprecated in v1.19+";

/// How long one probe may take (upstream's `probeTimeOut`).
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// A component upstream checks: a local HTTPS health endpoint.
struct HttpComponent {
    name: &'static str,
    port: u16,
}

/// kube-scheduler and kube-controller-manager on their default secure ports.
const COMPONENTS: [HttpComponent; 2] = [
    HttpComponent {
        name: "scheduler",
        port: 10259,
    },
    HttpComponent {
        name: "controller-manager",
        port: 10257,
    },
];

/// The computed `componentstatuses` resource.
pub struct ComponentStatusStorage {
    strategy: SharedStrategy,
    storage: Arc<dyn Storage>,
}

impl ComponentStatusStorage {
    /// Component statuses of the local control plane and of `storage` (reported as `etcd-0`).
    /// `strategy` gives the resource's facts and table.
    pub fn new(strategy: SharedStrategy, storage: Arc<dyn Storage>) -> Self {
        ComponentStatusStorage { strategy, storage }
    }

    /// The names served, in upstream's order (sorted by name).
    fn names() -> Vec<&'static str> {
        let mut names: Vec<&str> = COMPONENTS.iter().map(|c| c.name).collect();
        names.push("etcd-0");
        names.sort_unstable();
        names
    }

    async fn status_of(&self, name: &str) -> Option<Value> {
        let (healthy, message, error) = if name == "etcd-0" {
            match self.storage.health().await {
                Ok(()) => (true, "ok".to_string(), String::new()),
                Err(err) => (false, String::new(), err),
            }
        } else {
            let component = COMPONENTS.iter().find(|c| c.name == name)?;
            match probe(component.port).await {
                Ok(body) => (true, body, String::new()),
                Err(message) => (false, message, String::new()),
            }
        };
        Some(component_status(name, healthy, &message, &error))
    }
}

/// A `ComponentStatus` with one `Healthy` condition.
pub fn component_status(name: &str, healthy: bool, message: &str, error: &str) -> Value {
    let mut condition = serde_json::Map::new();
    condition.insert("type".into(), json!("Healthy"));
    condition.insert(
        "status".into(),
        json!(if healthy { "True" } else { "False" }),
    );
    if !message.is_empty() {
        condition.insert("message".into(), json!(message));
    }
    if !error.is_empty() {
        condition.insert("error".into(), json!(error));
    }
    json!({
        "kind": "ComponentStatus",
        "apiVersion": "v1",
        "metadata": {"name": name},
        "conditions": [condition],
    })
}

/// GET `https://127.0.0.1:<port>/healthz` without verifying the certificate, as upstream's
/// prober does: the body on 2xx, else the failure in Go's words.
async fn probe(port: u16) -> Result<String, String> {
    let url = format!("https://127.0.0.1:{port}/healthz");
    let run = async {
        let tls = kube_aggregator::transport::client_config(&[], true, None)
            .map_err(|e| e.to_string())?;
        let mut sender = kube_aggregator::transport::connect("127.0.0.1", port, tls, "127.0.0.1")
            .await
            .map_err(|e| e.to_string())?;
        let request = http::Request::get("/healthz")
            .header(http::header::HOST, format!("127.0.0.1:{port}"))
            .body(apiserver::body::empty())
            .map_err(|e| e.to_string())?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        let text = String::from_utf8_lossy(&body).into_owned();
        if status.is_success() {
            Ok(text)
        } else {
            Err(format!(
                "HTTP probe failed with statuscode: {}",
                status.as_u16()
            ))
        }
    };
    match tokio::time::timeout(PROBE_TIMEOUT, run).await {
        Ok(Ok(body)) => Ok(body),
        Ok(Err(err)) => Err(format!("Get {url:?}: {err}")),
        Err(_) => Err(format!(
            "Get {url:?}: context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
        )),
    }
}

impl RestStorage for ComponentStatusStorage {
    /// Not stored (upstream's REST for it is no `StorageVersionProvider`): discovery gives no
    /// `storageVersionHash`.
    fn is_stored(&self) -> bool {
        false
    }

    fn info(&self) -> &ResourceInfo {
        self.strategy.info()
    }

    fn verbs(&self) -> Vec<&'static str> {
        vec!["get", "list"]
    }

    fn strategy(&self) -> Option<&dyn Strategy> {
        Some(self.strategy.as_ref())
    }

    fn get<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        _opts: &'a GetOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(async move {
            ctx.warn(DEPRECATION_WARNING);
            self.status_of(name)
                .await
                .ok_or_else(|| ApiError::not_found("", "componentstatuses", name))
        })
    }

    fn list<'a>(
        &'a self,
        ctx: &'a RequestContext,
        opts: &'a ListOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(async move {
            ctx.warn(DEPRECATION_WARNING);
            let selector = FieldSelector::parse(&opts.field_selector)
                .map_err(|e| ApiError::bad_request(&e))?;
            let names = Self::names();
            let statuses = futures::future::join_all(names.iter().map(|n| self.status_of(n))).await;
            let items: Vec<Value> = statuses
                .into_iter()
                .flatten()
                .filter(|item| {
                    let mut fields = Fields::new();
                    let name = item["metadata"]["name"].as_str().unwrap_or_default();
                    fields.insert("metadata.name".into(), name.into());
                    selector.matches(&fields)
                })
                .collect();
            Ok(json!({
                "kind": "ComponentStatusList",
                "apiVersion": "v1",
                "metadata": {},
                "items": items,
            }))
        })
    }
}
