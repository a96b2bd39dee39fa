//! The webhook backend (`--audit-webhook-config-file`, upstream's `webhook` plugin): each
//! batch is POSTed as an `audit.k8s.io/v1` `EventList` to the server of the kubeconfig's
//! current context (its CA, client certificate or token), and any failure — connection
//! error, timeout or non-2xx answer — is retried with upstream's exponential backoff (from
//! `--audit-webhook-initial-backoff`, ×1.5 each time, 20% jitter, five attempts in all).
//! Events still not delivered are counted in `apiserver_audit_error_total{plugin="webhook"}`
//! and logged.
//!
//! The HTTP client runs on the backend's own small runtime, so a `blocking` webhook can be
//! waited for from any thread (the request path included) and `batch` mode sends each batch
//! as a task there.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::runtime::{Handle, Runtime, RuntimeFlavor};
use tokio::task::JoinHandle;

use super::AuditError;
use super::backend::{Backend, ShutdownFuture};
use super::event::Event;
use super::metrics::handle_plugin_error;
use crate::util::webhook::{Backoff, DEFAULT_REQUEST_TIMEOUT, WebhookClient, WebhookKubeconfig};

/// The plugin name in flags, error metrics and logs.
pub const PLUGIN_NAME: &str = "webhook";

/// Upstream's default `--audit-webhook-initial-backoff`.
pub const DEFAULT_INITIAL_BACKOFF: Duration = Duration::from_secs(10);

/// Sends events to an audit webhook.
pub struct WebhookBackend {
    client: Arc<WebhookClient>,
    runtime: Mutex<Option<Runtime>>,
    handle: Handle,
}

impl std::fmt::Debug for WebhookBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookBackend")
            .field("url", &self.client.url())
            .finish()
    }
}

impl WebhookBackend {
    /// A backend for the kubeconfig at `config_file`, retrying from `initial_backoff`.
    /// Errors read as upstream's `initializing audit webhook: …`.
    pub fn new(config_file: &Path, initial_backoff: Duration) -> Result<Self, AuditError> {
        let failed = |message: String| {
            AuditError::InvalidOption(format!("initializing audit webhook: {message}"))
        };
        let kubeconfig = WebhookKubeconfig::load(config_file).map_err(|e| failed(e.to_string()))?;
        let backoff = Backoff {
            initial: initial_backoff,
            ..Backoff::default()
        };
        let client = WebhookClient::new(&kubeconfig, DEFAULT_REQUEST_TIMEOUT, backoff)
            .map_err(failed)?
            .retrying_every_error();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("audit-webhook")
            .enable_all()
            .build()
            .map_err(|e| failed(e.to_string()))?;
        let handle = runtime.handle().clone();
        Ok(WebhookBackend {
            client: Arc::new(client),
            runtime: Mutex::new(Some(runtime)),
            handle,
        })
    }

    fn spawn(&self, events: Vec<Event>) -> JoinHandle<bool> {
        self.handle.spawn(send(self.client.clone(), events))
    }
}

/// The `EventList` JSON of `events`, as upstream's encoder writes it.
fn event_list(events: &[Event]) -> Result<Bytes, serde_json::Error> {
    let mut body = String::from(
        r#"{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":["#,
    );
    for (i, event) in events.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        body.push_str(&event.to_json()?);
    }
    body.push_str("]}\n");
    Ok(Bytes::from(body))
}

/// POSTs one batch; failures are counted and logged.
async fn send(client: Arc<WebhookClient>, events: Vec<Event>) -> bool {
    let result = match event_list(&events) {
        Ok(body) => client.post_bytes(body).await.map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    match result {
        Ok(_) => true,
        Err(e) => {
            handle_plugin_error(PLUGIN_NAME, &e, &events);
            false
        }
    }
}

/// Waits for `task` from synchronous code on any thread: a multi-thread runtime's worker
/// lets its other tasks move first, anything else simply blocks (the task runs on the
/// webhook's own runtime, so it never waits for the blocked thread).
fn wait(handle: &Handle, task: JoinHandle<bool>) -> bool {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    handle.spawn(async move {
        let _ = tx.send(task.await.unwrap_or(false));
    });
    let on_multi_thread_runtime =
        Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread);
    if on_multi_thread_runtime {
        tokio::task::block_in_place(|| rx.recv().unwrap_or(false))
    } else {
        rx.recv().unwrap_or(false)
    }
}

impl Backend for WebhookBackend {
    fn process_events(&self, events: &[Event]) -> bool {
        let task = self.spawn(events.to_vec());
        wait(&self.handle, task)
    }

    fn spawn_events(&self, events: Vec<Event>) -> Result<JoinHandle<bool>, Vec<Event>> {
        Ok(self.spawn(events))
    }

    fn run(&self) -> Result<(), AuditError> {
        Ok(())
    }

    fn shutdown(&self) -> ShutdownFuture<'_> {
        Box::pin(async {})
    }

    fn name(&self) -> String {
        PLUGIN_NAME.to_string()
    }
}

impl Drop for WebhookBackend {
    fn drop(&mut self) {
        // Dropping a runtime inside another one panics; this never blocks.
        if let Some(runtime) = self.runtime.lock().ok().and_then(|mut r| r.take()) {
            runtime.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::buffered::tests::event;
    use http_body_util::{BodyExt, Full};
    use hyper_util::rt::TokioIo;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A plain-HTTP webhook failing the first `failures` requests with 503, recording the
    /// bodies it accepted.
    async fn webhook(
        failures: usize,
    ) -> (String, Arc<AtomicUsize>, Arc<Mutex<Vec<serde_json::Value>>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/audit", listener.local_addr().unwrap());
        let count = Arc::new(AtomicUsize::new(0));
        let bodies: Arc<Mutex<Vec<serde_json::Value>>> = Arc::default();
        let (seen, kept) = (count.clone(), bodies.clone());
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (seen, kept) = (seen.clone(), kept.clone());
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(
                        move |req: http::Request<hyper::body::Incoming>| {
                            let (seen, kept) = (seen.clone(), kept.clone());
                            async move {
                                let body = req.into_body().collect().await?.to_bytes();
                                let status = if seen.fetch_add(1, Ordering::SeqCst) < failures {
                                    503
                                } else {
                                    kept.lock()
                                        .unwrap()
                                        .push(serde_json::from_slice(&body).unwrap());
                                    200
                                };
                                Ok::<_, hyper::Error>(
                                    http::Response::builder()
                                        .status(status)
                                        .body(Full::new(Bytes::new()))
                                        .unwrap(),
                                )
                            }
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tcp), service)
                        .await;
                });
            }
        });
        (url, count, bodies)
    }

    fn backend(url: &str, dir: &Path) -> WebhookBackend {
        let config = dir.join("webhook.kubeconfig");
        std::fs::write(
            &config,
            format!("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {url}\ncontexts:\n- name: c\n  context:\n    cluster: c\ncurrent-context: c\n"),
        )
        .unwrap();
        WebhookBackend::new(&config, Duration::from_millis(5)).unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn failures_of_any_kind_are_retried_and_the_event_list_is_posted() {
        let (url, count, bodies) = webhook(2).await;
        let dir = tempfile::tempdir().unwrap();
        let backend = backend(&url, dir.path());
        assert!(backend.process_events(&[event(1), event(2)]));
        assert_eq!(count.load(Ordering::SeqCst), 3, "two 503s, then accepted");
        let bodies = bodies.lock().unwrap().clone();
        assert_eq!(bodies.len(), 1);
        assert_eq!(bodies[0]["kind"], "EventList");
        assert_eq!(bodies[0]["apiVersion"], "audit.k8s.io/v1");
        let ids: Vec<&str> = bodies[0]["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["auditID"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["id-1", "id-2"]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn five_failed_attempts_drop_the_batch_and_count_it() {
        let (url, count, _) = webhook(usize::MAX).await;
        let dir = tempfile::tempdir().unwrap();
        let backend = backend(&url, dir.path());
        let before = crate::audit::metrics::errors(PLUGIN_NAME);
        // From a thread outside any runtime too: the client runs on the backend's own.
        let sent =
            std::thread::spawn(move || backend.process_events(&[event(1), event(2), event(3)]))
                .join()
                .unwrap();
        assert!(!sent);
        assert_eq!(count.load(Ordering::SeqCst), 5);
        assert!(crate::audit::metrics::errors(PLUGIN_NAME) >= before + 3.0);
    }

    #[test]
    fn a_bad_kubeconfig_is_refused_with_upstreams_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let err = WebhookBackend::new(&dir.path().join("missing"), DEFAULT_INITIAL_BACKOFF)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("initializing audit webhook: "), "{err}");
    }
}
