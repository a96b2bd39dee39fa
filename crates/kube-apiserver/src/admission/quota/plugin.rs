//! The ResourceQuota admission plugin (upstream
//! `k8s.io/apiserver/pkg/admission/plugin/resourcequota`): every create (and update that can
//! change usage) of a namespaced object is checked against the quotas of its namespace, read
//! from the shared informer; when it fits, their `status.used` is charged before the object
//! is stored. Requests of one namespace are checked in batches by one worker, each changed
//! quota written once per batch on the version it was read at, and retried on conflicts.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apiserver::admission::{Attributes, Operation, Plugin, forbidden};
use apiserver::registry::informer::Informer;
use apiserver::registry::rest::{GetOptions, RequestContext, RestStorage};
use apiserver::registry::store::StatusStore;
use apiserver::status::ApiError;
use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::oneshot;

use super::check::{Quota, Request, check_request};
use super::config::LimitedResource;
use super::evaluator::Evaluator;
use super::resources;
use super::status::write_status;

/// The plugin's name.
pub const NAME: &str = "ResourceQuota";

/// How long a request waits for its namespace's worker (upstream's 10 seconds).
const EVALUATION_TIMEOUT: Duration = Duration::from_secs(10);

/// How many times a batch is checked again after its quota writes conflicted.
const RETRIES: usize = 3;

/// Resources quota never counts (upstream `ignoredResources`: virtual resources, events).
const IGNORED: &[(&str, &str)] = &[
    ("", "bindings"),
    ("", "componentstatuses"),
    ("", "events"),
    ("events.k8s.io", "events"),
    ("authentication.k8s.io", "tokenreviews"),
    ("authentication.k8s.io", "selfsubjectreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "localsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
];

/// What was decided for one request.
#[derive(Debug)]
enum Outcome {
    /// Waiting for the batch's quota writes.
    Pending,
    /// Admitted.
    Allowed,
    /// Refused: the message of the 403.
    Denied(String),
    /// The quota could not be charged.
    Failed(ApiError),
}

/// A request waiting in its namespace's batch.
struct Waiter {
    operation: &'static str,
    group: String,
    resource: String,
    object: Value,
    old_object: Option<Value>,
    dry_run: bool,
    outcome: Outcome,
    done: oneshot::Sender<Outcome>,
}

impl Waiter {
    fn request(&self) -> Request<'_> {
        Request {
            operation: self.operation,
            subresource: "",
            group: &self.group,
            resource: &self.resource,
            object: &self.object,
            old_object: self.old_object.as_ref(),
        }
    }
}

#[derive(Default)]
struct Queues {
    /// Requests waiting per namespace.
    pending: HashMap<String, Vec<Waiter>>,
    /// Namespaces with a worker running.
    running: BTreeSet<String>,
}

struct Inner {
    quotas: Informer,
    status: StatusStore,
    limited: Vec<LimitedResource>,
    /// Quotas as this plugin last wrote them, newer than the informer's until it catches up
    /// (upstream's `updatedQuotas` cache).
    written: Mutex<HashMap<String, Quota>>,
    queues: Mutex<Queues>,
}

/// The ResourceQuota plugin.
pub struct ResourceQuota {
    inner: Arc<Inner>,
}

impl ResourceQuota {
    /// The plugin over the quota informer, writing through `status`, with the configured
    /// limited resources.
    pub fn new(quotas: Informer, status: StatusStore, limited: Vec<LimitedResource>) -> Self {
        ResourceQuota {
            inner: Arc::new(Inner {
                quotas,
                status,
                limited,
                written: Mutex::default(),
                queues: Mutex::default(),
            }),
        }
    }
}

fn key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

impl Inner {
    /// The quotas of `namespace`: the informer's, or what this plugin wrote when newer.
    fn quotas_in(&self, namespace: &str) -> Vec<Quota> {
        let mut written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<Quota> = self
            .quotas
            .list()
            .into_iter()
            .filter(|q| q.pointer("/metadata/namespace").and_then(Value::as_str) == Some(namespace))
            .map(Quota::from_object)
            .map(|quota| {
                let k = key(&quota.namespace, &quota.name);
                match written.get(&k) {
                    Some(mine) if mine.version() > quota.version() => mine.clone(),
                    Some(_) => {
                        written.remove(&k);
                        quota
                    }
                    None => quota,
                }
            })
            .collect();
        // Quotas deleted since they were written are forgotten.
        let prefix = key(namespace, "");
        written.retain(|k, _| {
            !k.starts_with(&prefix) || out.iter().any(|q| key(&q.namespace, &q.name) == *k)
        });
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// The stored quota `namespace/name` (after a conflict: the informer may be behind).
    async fn fresh(&self, namespace: &str, name: &str) -> Option<Quota> {
        let ctx = RequestContext {
            namespace: namespace.to_string(),
            name: name.to_string(),
            ..RequestContext::default()
        };
        let quota = self
            .status
            .get(&ctx, name, &GetOptions::default())
            .await
            .ok()?;
        Some(Quota::from_object(Arc::new(quota)))
    }

    /// Takes the waiting requests of `namespace` and decides them, until none are left.
    async fn work(self: Arc<Self>, namespace: String) {
        loop {
            let mut batch = {
                let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
                match queues.pending.remove(&namespace) {
                    Some(batch) if !batch.is_empty() => batch,
                    _ => {
                        queues.running.remove(&namespace);
                        return;
                    }
                }
            };
            let quotas = self.quotas_in(&namespace);
            if quotas.is_empty() && self.limited.is_empty() {
                for waiter in &mut batch {
                    waiter.outcome = Outcome::Allowed;
                }
            } else {
                self.check_quotas(&namespace, quotas, &mut batch).await;
            }
            for waiter in batch {
                let outcome = match waiter.outcome {
                    Outcome::Pending => Outcome::Failed(ApiError::internal(
                        "resource quota evaluation did not complete",
                    )),
                    other => other,
                };
                let _ = waiter.done.send(outcome);
            }
        }
    }

    /// Checks the pending requests of `batch` against `quotas`, then writes the quotas they
    /// charged (upstream `checkQuotas`); conflicting writes are checked again on the stored
    /// quotas, [`RETRIES`] times.
    async fn check_quotas(&self, namespace: &str, mut quotas: Vec<Quota>, batch: &mut [Waiter]) {
        let now = jiff::Timestamp::now();
        for attempt in 0..=RETRIES {
            let original = quotas.clone();
            let mut changed = false;
            for waiter in batch.iter_mut() {
                if !matches!(waiter.outcome, Outcome::Pending) {
                    continue;
                }
                let evaluator = Evaluator::for_resource(&waiter.group, &waiter.resource);
                match check_request(&quotas, &waiter.request(), &evaluator, &self.limited, now) {
                    Err(message) => waiter.outcome = Outcome::Denied(message),
                    Ok(_) if waiter.dry_run => waiter.outcome = Outcome::Allowed,
                    Ok(new) => {
                        let charged = new
                            .iter()
                            .zip(&quotas)
                            .any(|(n, o)| !resources::equals(&n.used, &o.used));
                        if charged {
                            changed = true;
                            quotas = new;
                        } else {
                            waiter.outcome = Outcome::Allowed;
                        }
                    }
                }
            }
            if !changed {
                return;
            }
            let mut failed: Vec<String> = Vec::new();
            let mut last_error = None;
            for (quota, before) in quotas.iter().zip(&original) {
                if resources::equals(&quota.used, &before.used) {
                    continue;
                }
                match write_status(
                    &self.status,
                    namespace,
                    &quota.name,
                    &quota.resource_version,
                    None,
                    &quota.used,
                )
                .await
                {
                    Ok(stored) => {
                        let stored = Quota::from_object(Arc::new(stored));
                        self.written
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(key(namespace, &stored.name), stored);
                    }
                    Err(err) => {
                        failed.push(quota.name.clone());
                        last_error = Some(err);
                    }
                }
            }
            let Some(error) = last_error else {
                for waiter in batch.iter_mut() {
                    if matches!(waiter.outcome, Outcome::Pending) {
                        waiter.outcome = Outcome::Allowed;
                    }
                }
                return;
            };
            if attempt == RETRIES {
                for waiter in batch.iter_mut() {
                    if matches!(waiter.outcome, Outcome::Pending) {
                        waiter.outcome = Outcome::Failed(error.clone());
                    }
                }
                return;
            }
            // Check the pending requests again on the stored versions of the quotas whose
            // write failed (a quota deleted meanwhile no longer applies).
            let mut fresh = Vec::new();
            for name in &failed {
                if let Some(quota) = self.fresh(namespace, name).await {
                    fresh.push(quota);
                }
            }
            quotas = fresh;
        }
    }
}

fn ignored(group: &str, resource: &str) -> bool {
    IGNORED.contains(&(group, resource))
}

#[async_trait]
impl Plugin for ResourceQuota {
    fn name(&self) -> &str {
        NAME
    }

    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }

    fn validates(&self) -> bool {
        true
    }

    async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError> {
        if !attrs.subresource.is_empty() || attrs.namespace.is_empty() {
            return Ok(());
        }
        if attrs.operation == Operation::Create
            && attrs.kind.group.is_empty()
            && attrs.kind.kind == "Namespace"
        {
            return Ok(());
        }
        let (group, resource) = (&attrs.resource.group, &attrs.resource.resource);
        if ignored(group, resource) {
            return Ok(());
        }
        let evaluator = Evaluator::for_resource(group, resource);
        let operation = attrs.operation.as_str();
        if !evaluator.handles(operation) {
            return Ok(());
        }
        let Some(object) = attrs.object.clone() else {
            return Ok(());
        };
        let (done, outcome) = oneshot::channel();
        let waiter = Waiter {
            operation,
            group: group.clone(),
            resource: resource.clone(),
            object,
            old_object: attrs.old_object.clone(),
            dry_run: attrs.dry_run,
            outcome: Outcome::Pending,
            done,
        };
        let namespace = attrs.namespace.clone();
        let start_worker = {
            let mut queues = self.inner.queues.lock().unwrap_or_else(|e| e.into_inner());
            queues
                .pending
                .entry(namespace.clone())
                .or_default()
                .push(waiter);
            queues.running.insert(namespace.clone())
        };
        if start_worker {
            tokio::spawn(self.inner.clone().work(namespace));
        }
        match tokio::time::timeout(EVALUATION_TIMEOUT, outcome).await {
            Ok(Ok(Outcome::Allowed)) => Ok(()),
            Ok(Ok(Outcome::Denied(message))) => Err(forbidden(attrs, &message)),
            Ok(Ok(Outcome::Failed(err))) => Err(err),
            Ok(Ok(Outcome::Pending)) | Ok(Err(_)) | Err(_) => {
                Err(ApiError::internal("resource quota evaluation timed out"))
            }
        }
    }
}
