//! The etcd3 backend (`--etcd-servers`), the analogue of upstream's `pkg/storage/etcd3`:
//! compare-and-swap through a txn comparing `mod_revision`, watches with `prev_kv` and progress
//! notifications, compaction through etcd's own compaction.
//!
//! Keys are used as given (callers build `<prefix>/<resource>/<namespace>/<name>` with
//! [`EtcdConfig::prefix`], as kube-apiserver lays them out). Every call has a deadline, so a
//! request fails with a 5xx while etcd is down instead of hanging; the gRPC channel reconnects
//! by itself, and watches resume from their last revision after a disconnect (or end with 410
//! when that revision has been compacted meanwhile).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use etcd_client::{
    Certificate, Client, Compare, CompareOp, ConnectOptions, EventType, GetOptions as EtcdGet,
    Identity, KvClient, PutOptions, TlsOptions, Txn, TxnOp, TxnOpResponse, WatchOptions,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::storage::errors::{
    INCONSISTENT_CONTINUE_MESSAGE, LIST_EXPIRED_MESSAGE, WATCH_EXPIRED_MESSAGE,
};
use crate::storage::value::{ResourceTransformer, ResourceTransformers};
use crate::storage::watch::{RawEvent, WATCH_CHANNEL_CAPACITY, transform};
use crate::storage::{
    BoxFuture, GetOptions, ListOptions, ListPlan, ListResult, Object, Operation, Preconditions,
    Result, SelectionPredicate, Storage, StorageError, UpdateFn, ValidateDeletionFn, WatchEvent,
    WatchStream, check_size, continue_token, finish_page, parse_watch_rv, plan_list,
    recursive_prefix, untransform, untransform_item, versioner,
};

/// Connection settings (kube-apiserver's etcd flags).
#[derive(Clone, Debug)]
pub struct EtcdConfig {
    /// `--etcd-servers`, e.g. `http://127.0.0.1:2379`.
    pub endpoints: Vec<String>,
    /// `--etcd-prefix` (default `/registry`): the root callers build keys under.
    pub prefix: String,
    /// `--etcd-cafile`.
    pub ca_file: Option<PathBuf>,
    /// `--etcd-certfile`.
    pub cert_file: Option<PathBuf>,
    /// `--etcd-keyfile`.
    pub key_file: Option<PathBuf>,
    /// Deadline of each etcd call; a request fails with a 5xx after it while etcd is down.
    pub request_timeout: Duration,
    /// Deadline of the health check (`--etcd-healthcheck-timeout`, default 2s).
    pub health_timeout: Duration,
    /// Trust etcd's progress notifications to mean "everything up to this revision was sent".
    /// etcd before 3.4.31 / 3.5.13 may send them ahead of pending events (etcd#15220), so this
    /// is off by default: bookmarks then carry the last delivered revision only, and the watch
    /// cache sends consistent reads to etcd.
    pub trust_progress_notify: bool,
}

impl Default for EtcdConfig {
    fn default() -> Self {
        EtcdConfig {
            endpoints: vec!["http://127.0.0.1:2379".into()],
            prefix: "/registry".into(),
            ca_file: None,
            cert_file: None,
            key_file: None,
            request_timeout: Duration::from_secs(10),
            health_timeout: Duration::from_secs(2),
            trust_progress_notify: false,
        }
    }
}

/// The etcd storage backend. Cheap to clone. Values pass through the handle's
/// [`ResourceTransformer`] (see [`Storage::for_resource`]); a handle not made for a resource
/// stores them as they are.
#[derive(Clone)]
pub struct EtcdStorage {
    endpoints: Arc<Endpoints>,
    config: Arc<EtcdConfig>,
    compact_rev: Arc<AtomicU64>,
    transformers: Arc<ResourceTransformers>,
    transformer: ResourceTransformer,
}

/// One client per `--etcd-servers` endpoint, one of them pinned: requests go to the pinned
/// endpoint and move on to the next when it cannot be reached (etcd's Go client pins an
/// endpoint the same way; a channel balanced over all endpoints would keep sending a share of
/// the requests to one that refuses connections).
struct Endpoints {
    clients: Vec<Client>,
    pinned: AtomicUsize,
}

impl Endpoints {
    /// The pinned endpoint's index and client.
    fn pinned(&self) -> (usize, &Client) {
        let i = self.pinned.load(Ordering::Relaxed) % self.clients.len();
        (i, &self.clients[i])
    }

    /// Endpoint `i` could not be reached: pin the next one (unless another request did).
    fn unreachable(&self, i: usize) {
        let next = (i + 1) % self.clients.len();
        let _ = self
            .pinned
            .compare_exchange(i, next, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// Whether `e` proves the request never reached etcd (the connection could not be made), so
/// even a write may be sent again to another endpoint.
fn not_sent(e: &etcd_client::Error) -> bool {
    match e {
        etcd_client::Error::TransportError(_) | etcd_client::Error::IoError(_) => true,
        etcd_client::Error::GRpcStatus(s) => {
            s.code() as i32 == 14 && {
                let text = format!("{} {:?}", s.message(), std::error::Error::source(s));
                text.contains("connect") || text.contains("Connection refused")
            }
        }
        _ => false,
    }
}

/// A key's current state in an update: its plain value, whether that value is stale (read by
/// other than the write key: rewritten even when unchanged), and its mod revision.
type Current = (Bytes, bool, u64);

impl std::fmt::Debug for EtcdStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdStorage")
            .field("endpoints", &self.config.endpoints)
            .finish()
    }
}

/// Maps an etcd client error to a storage error, as upstream's etcd3 store sees them.
fn etcd_err(key: &str, e: etcd_client::Error) -> StorageError {
    let text = e.to_string();
    if text.contains("request is too large") {
        return StorageError::RequestTooLarge;
    }
    if text.contains("required revision has been compacted") {
        return StorageError::Expired {
            requested: 0,
            current: 0,
            message: LIST_EXPIRED_MESSAGE.into(),
            continue_token: None,
        };
    }
    if text.contains("required revision is a future revision") {
        return StorageError::TooLargeResourceVersion {
            requested: 0,
            current: 0,
            retry_after_seconds: 0,
        };
    }
    match &e {
        // gRPC codes Cancelled (1), Unknown (2), DeadlineExceeded (4), Unavailable (14).
        etcd_client::Error::GRpcStatus(s) if matches!(s.code() as i32, 1 | 2 | 4 | 14) => {
            StorageError::Unreachable {
                key: key.into(),
                message: text,
            }
        }
        etcd_client::Error::TransportError(_) | etcd_client::Error::IoError(_) => {
            StorageError::Unreachable {
                key: key.into(),
                message: text,
            }
        }
        _ => StorageError::Internal(text),
    }
}

/// The end of the key range of a prefix (etcd's `GetPrefixRangeEnd`).
fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

fn to_object(key: &str, stored: &[u8], rev: u64) -> Result<Object> {
    Ok(Object {
        key: key.to_string(),
        value: versioner::set_resource_version(stored, rev)?,
        resource_version: rev,
    })
}

fn rev_u64(r: i64) -> u64 {
    u64::try_from(r).unwrap_or(0)
}

impl EtcdStorage {
    /// Connects to etcd. The connection is lazy: a server that is down now is retried on each
    /// request, so the API server starts (and `/readyz` reports `etcd` failing) without it.
    pub async fn connect(config: EtcdConfig) -> Result<Self> {
        let mut opts = ConnectOptions::new()
            .with_timeout(config.request_timeout)
            .with_connect_timeout(config.request_timeout)
            .with_keep_alive(Duration::from_secs(30), Duration::from_secs(10));
        if config.ca_file.is_some() || config.cert_file.is_some() {
            let mut tls = TlsOptions::new();
            if let Some(ca) = &config.ca_file {
                let pem = std::fs::read(ca).map_err(|e| {
                    StorageError::Internal(format!("reading --etcd-cafile {}: {e}", ca.display()))
                })?;
                tls = tls.ca_certificate(Certificate::from_pem(pem));
            }
            if let (Some(cert), Some(key)) = (&config.cert_file, &config.key_file) {
                let cert = std::fs::read(cert)
                    .map_err(|e| StorageError::Internal(format!("reading --etcd-certfile: {e}")))?;
                let key = std::fs::read(key)
                    .map_err(|e| StorageError::Internal(format!("reading --etcd-keyfile: {e}")))?;
                tls = tls.identity(Identity::from_pem(cert, key));
            }
            opts = opts.with_tls(tls);
        }
        if config.endpoints.is_empty() {
            return Err(StorageError::Internal("no etcd servers given".into()));
        }
        let mut clients = Vec::with_capacity(config.endpoints.len());
        for endpoint in &config.endpoints {
            clients.push(
                Client::connect([endpoint], Some(opts.clone()))
                    .await
                    .map_err(|e| StorageError::Internal(format!("connecting to etcd: {e}")))?,
            );
        }
        Ok(EtcdStorage {
            endpoints: Arc::new(Endpoints {
                clients,
                pinned: AtomicUsize::new(0),
            }),
            config: Arc::new(config),
            compact_rev: Arc::new(AtomicU64::new(0)),
            transformers: ResourceTransformers::identity(),
            transformer: ResourceTransformer::identity(),
        })
    }

    /// Uses `transformers` for the handles [`Storage::for_resource`] makes (the encryption
    /// configuration).
    pub fn with_transformers(mut self, transformers: Arc<ResourceTransformers>) -> Self {
        self.transformers = transformers;
        self
    }

    /// A stored value and its mod revision, read through the transformer.
    fn plain(&self, key: &str, found: Option<(Bytes, u64)>) -> Result<Option<Current>> {
        found
            .map(|(raw, rev)| {
                let read = untransform(&self.transformer, key, raw)?;
                Ok((read.data, read.stale, rev))
            })
            .transpose()
    }

    /// The configuration.
    pub fn config(&self) -> &EtcdConfig {
        &self.config
    }

    /// Runs the etcd call `op` on the pinned endpoint under the request deadline; when the
    /// endpoint cannot be reached (or does not answer in time) the next one is pinned, and a
    /// call that never reached etcd is sent there within the same deadline.
    async fn call<T, F, Fut>(&self, key: &str, op: F) -> Result<T>
    where
        F: Fn(KvClient) -> Fut,
        Fut: std::future::Future<Output = std::result::Result<T, etcd_client::Error>>,
    {
        let deadline = tokio::time::Instant::now() + self.config.request_timeout;
        let mut tries = self.endpoints.clients.len();
        loop {
            let (i, client) = self.endpoints.pinned();
            match tokio::time::timeout_at(deadline, op(client.kv_client())).await {
                Ok(Ok(v)) => return Ok(v),
                Ok(Err(e)) => {
                    tries -= 1;
                    if not_sent(&e) {
                        self.endpoints.unreachable(i);
                        if tries > 0 {
                            tracing::debug!(endpoint = %self.config.endpoints[i], error = %e, "etcd endpoint unreachable; trying the next one");
                            continue;
                        }
                    }
                    return Err(etcd_err(key, e));
                }
                Err(_) => {
                    self.endpoints.unreachable(i);
                    return Err(StorageError::Timeout {
                        key: key.into(),
                        message: "context deadline exceeded".into(),
                    });
                }
            }
        }
    }

    async fn get_raw(&self, key: &str) -> Result<(Option<(Bytes, u64)>, u64)> {
        let resp = self
            .call(key, |mut kv| async move { kv.get(key, None).await })
            .await?;
        let rev = rev_u64(resp.header().map(|h| h.revision()).unwrap_or(0));
        let found = resp.kvs().first().map(|kv| {
            (
                Bytes::copy_from_slice(kv.value()),
                rev_u64(kv.mod_revision()),
            )
        });
        Ok((found, rev))
    }

    /// Puts if the key's mod revision is `expect` (0 = absent). When the compare fails, the
    /// same transaction reads the key, so a retry needs no second round trip (as upstream's
    /// etcd3 store does).
    async fn cas_put(&self, key: &str, value: &Bytes, expect: u64) -> Result<Cas> {
        self.cas_put_with(key, value, expect, None).await
    }

    /// [`Self::cas_put`] with put options (a lease).
    async fn cas_put_with(
        &self,
        key: &str,
        value: &Bytes,
        expect: u64,
        options: Option<PutOptions>,
    ) -> Result<Cas> {
        let txn = Txn::new()
            .when([Compare::mod_revision(
                key,
                CompareOp::Equal,
                i64::try_from(expect).unwrap_or(i64::MAX),
            )])
            .and_then([TxnOp::put(key, value.to_vec(), options)])
            .or_else([TxnOp::get(key, None)]);
        let resp = self
            .call(key, |mut kv| {
                let txn = txn.clone();
                async move { kv.txn(txn).await }
            })
            .await?;
        if !resp.succeeded() {
            let current = resp.op_responses().into_iter().find_map(|op| match op {
                TxnOpResponse::Get(get) => get.kvs().first().map(|kv| {
                    (
                        Bytes::copy_from_slice(kv.value()),
                        rev_u64(kv.mod_revision()),
                    )
                }),
                _ => None,
            });
            return Ok(Cas::Conflict(current));
        }
        Ok(Cas::Done(rev_u64(
            resp.header().map(|h| h.revision()).unwrap_or(0),
        )))
    }

    async fn read_list(
        &self,
        prefix: &str,
        exact: Option<&str>,
        plan: &ListPlan,
        limit: i64,
        pred: &SelectionPredicate,
    ) -> Result<ListResult> {
        let range_end = match exact {
            Some(_) => None,
            None => Some(prefix_end(prefix)),
        };
        let mut start = match exact {
            Some(k) => k.to_string(),
            None => plan
                .continue_key
                .clone()
                .unwrap_or_else(|| prefix.to_string()),
        };
        let mut rev = plan.with_rev;
        let mut items = Vec::new();
        let mut has_more = false;
        let mut remaining = None;
        loop {
            let mut opts = EtcdGet::new();
            if let Some(end) = &range_end {
                opts = opts.with_range(end.clone());
            }
            if rev > 0 {
                opts = opts.with_revision(i64::try_from(rev).unwrap_or(i64::MAX));
            }
            if limit > 0 {
                opts = opts.with_limit(limit);
            }
            let call = self.call(prefix, |mut kv| {
                let (start, opts) = (start.clone(), opts.clone());
                async move { kv.get(start, Some(opts)).await }
            });
            let resp = match call.await {
                Err(StorageError::Expired { .. }) => {
                    return Err(match &plan.continue_key {
                        Some(key) => StorageError::Expired {
                            requested: rev,
                            current: self.compacted_revision(),
                            message: INCONSISTENT_CONTINUE_MESSAGE.into(),
                            continue_token: continue_token::encode(key, prefix, -1).ok(),
                        },
                        None => StorageError::Expired {
                            requested: rev,
                            current: self.compacted_revision(),
                            message: LIST_EXPIRED_MESSAGE.into(),
                            continue_token: None,
                        },
                    });
                }
                Err(StorageError::TooLargeResourceVersion { .. }) => {
                    let current = self.current_revision().await.unwrap_or(0);
                    return Err(StorageError::TooLargeResourceVersion {
                        requested: rev,
                        current,
                        retry_after_seconds: 0,
                    });
                }
                other => other?,
            };
            let header_rev = rev_u64(resp.header().map(|h| h.revision()).unwrap_or(0));
            if rev == 0 {
                rev = header_rev;
                if plan.min_rev > rev {
                    return Err(StorageError::TooLargeResourceVersion {
                        requested: plan.min_rev,
                        current: rev,
                        retry_after_seconds: 0,
                    });
                }
            }
            let kvs = resp.kvs();
            let mut last_key = None;
            for (i, kv) in kvs.iter().enumerate() {
                let key = String::from_utf8_lossy(kv.key()).into_owned();
                let value =
                    untransform_item(&self.transformer, &key, Bytes::copy_from_slice(kv.value()))?;
                if pred.matches(&value) {
                    items.push(to_object(&key, &value, rev_u64(kv.mod_revision()))?);
                }
                last_key = Some(key);
                if limit > 0 && items.len() as i64 == limit {
                    has_more = i + 1 < kvs.len() || resp.more();
                    if pred.is_empty() {
                        remaining = Some(resp.count() - limit);
                    }
                    break;
                }
            }
            if has_more || (limit > 0 && items.len() as i64 == limit) || !resp.more() {
                break;
            }
            match last_key {
                Some(k) => start = format!("{k}\u{0}"),
                None => break,
            }
        }
        finish_page(prefix, items, rev, limit, has_more, remaining)
    }

    /// Records a compacted revision learnt from etcd.
    fn saw_compaction(&self, rev: u64) {
        self.compact_rev.fetch_max(rev, Ordering::SeqCst);
    }
}

struct EtcdWatch {
    storage: EtcdStorage,
    key: String,
    recursive: bool,
    opts: ListOptions,
    tx: mpsc::Sender<WatchEvent>,
}

impl EtcdWatch {
    async fn send(&self, ev: WatchEvent) -> bool {
        self.tx.send(ev).await.is_ok()
    }

    async fn fail(&self, err: StorageError) {
        let api = err.to_api_error(Operation::Watch, "", "", "");
        let _ = self.send(WatchEvent::Error(api)).await;
    }

    async fn initial(&self) -> Option<u64> {
        let plan = ListPlan {
            with_rev: 0,
            continue_key: None,
            min_rev: 0,
        };
        let exact = (!self.recursive).then_some(self.key.as_str());
        let mut rev;
        let mut plan = plan;
        loop {
            let page = match self
                .storage
                .read_list(&self.key, exact, &plan, 500, &self.opts.predicate)
                .await
            {
                Ok(p) => p,
                Err(e) => {
                    self.fail(e).await;
                    return None;
                }
            };
            rev = page.resource_version;
            for item in page.items {
                if !self.send(WatchEvent::Added(item)).await {
                    return None;
                }
            }
            match page.continue_token {
                Some(t) if !self.recursive => {
                    let _ = t;
                    break;
                }
                Some(t) => match continue_token::decode(&t, &self.key) {
                    Ok((k, _)) => {
                        plan = ListPlan {
                            with_rev: rev,
                            continue_key: Some(k),
                            min_rev: 0,
                        }
                    }
                    Err(e) => {
                        self.fail(StorageError::Internal(e)).await;
                        return None;
                    }
                },
                None => break,
            }
        }
        if self.opts.send_initial_events == Some(true) && self.opts.allow_watch_bookmarks {
            let ok = self
                .send(WatchEvent::Bookmark {
                    resource_version: rev,
                    initial_events_end: true,
                })
                .await;
            if !ok {
                return None;
            }
        }
        Some(rev)
    }

    /// Streams changes after `last` until stopped; reconnects after errors.
    async fn run(
        self,
        start: u64,
        initial: bool,
        stop: CancellationToken,
        mut progress_rx: mpsc::Receiver<()>,
    ) {
        let mut last = start;
        if initial {
            match self.initial().await {
                Some(r) => last = r,
                None => return,
            }
        }
        let mut backoff = Duration::from_millis(100);
        // A watch cache keeps previous states itself: etcd need not read them for every event.
        let with_prev = !(self.opts.feeds_watch_cache && self.opts.predicate.is_empty());
        loop {
            let mut wopts = WatchOptions::new()
                .with_start_revision(i64::try_from(last + 1).unwrap_or(i64::MAX))
                .with_progress_notify();
            if with_prev {
                wopts = wopts.with_prev_key();
            }
            if self.recursive {
                wopts = wopts.with_prefix();
            }
            let (endpoint, client) = self.storage.endpoints.pinned();
            let mut wc = client.watch_client();
            let connect = tokio::select! {
                _ = stop.cancelled() => return,
                _ = self.tx.closed() => return,
                r = tokio::time::timeout(self.storage.config.request_timeout, wc.watch(self.key.clone(), Some(wopts))) => r,
            };
            let mut stream = match connect {
                Ok(Ok(s)) => s,
                _ => {
                    self.storage.endpoints.unreachable(endpoint);
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                    continue;
                }
            };
            loop {
                let msg = tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = self.tx.closed() => return,
                    p = progress_rx.recv() => {
                        if p.is_some() {
                            let _ = stream.request_progress().await;
                        }
                        continue;
                    }
                    m = stream.message() => m,
                };
                let resp = match msg {
                    Ok(Some(r)) => r,
                    // Disconnected: reconnect from `last`.
                    _ => break,
                };
                backoff = Duration::from_millis(100);
                if resp.canceled() {
                    let compacted = rev_u64(resp.compact_revision());
                    if compacted > 0 {
                        self.storage.saw_compaction(compacted);
                        self.fail(StorageError::Expired {
                            requested: last,
                            current: compacted,
                            message: WATCH_EXPIRED_MESSAGE.into(),
                            continue_token: None,
                        })
                        .await;
                    } else {
                        self.fail(StorageError::Internal(format!(
                            "etcd watch canceled: {}",
                            resp.cancel_reason()
                        )))
                        .await;
                    }
                    return;
                }
                let header_rev = rev_u64(resp.header().map(|h| h.revision()).unwrap_or(0));
                if resp.events().is_empty() {
                    if !resp.created() && header_rev > 0 {
                        // A progress notification: nothing up to header_rev is pending (when
                        // etcd can be trusted on that). The resume point moves only then; the
                        // bookmark carries etcd's revision either way, as upstream's watcher
                        // turns every progress notification into a bookmark at the header's
                        // revision (the watch cache takes late events that etcd 3.4 may still
                        // deliver after it, see `cacher`).
                        if self.storage.config.trust_progress_notify {
                            last = last.max(header_rev);
                        }
                        if self.opts.progress_notify {
                            let ok = self
                                .send(WatchEvent::Bookmark {
                                    resource_version: last.max(header_rev),
                                    initial_events_end: false,
                                })
                                .await;
                            if !ok {
                                return;
                            }
                        }
                    }
                    continue;
                }
                for ev in resp.events() {
                    let Some(kv) = ev.kv() else { continue };
                    let rev = rev_u64(kv.mod_revision());
                    if rev <= last {
                        continue;
                    }
                    let key = String::from_utf8_lossy(kv.key()).into_owned();
                    if !with_prev {
                        let event = self.cache_feed_event(key, rev, kv, ev.event_type());
                        let delivered = match event {
                            Ok(e) => self.send(e).await,
                            Err(e) => {
                                let _ = self.send(WatchEvent::Error(e)).await;
                                false
                            }
                        };
                        if !delivered {
                            return;
                        }
                        last = rev;
                        continue;
                    }
                    let prev = ev.prev_kv().map(|p| Bytes::copy_from_slice(p.value()));
                    let raw = match ev.event_type() {
                        EventType::Put => RawEvent {
                            key,
                            rev,
                            value: Some(Bytes::copy_from_slice(kv.value())),
                            prev: if kv.create_revision() == kv.mod_revision() {
                                None
                            } else {
                                prev
                            },
                        },
                        EventType::Delete => {
                            if prev.is_none() {
                                self.fail(StorageError::Internal(
                                    "etcd event received with PrevKv=nil".into(),
                                ))
                                .await;
                                return;
                            }
                            RawEvent {
                                key,
                                rev,
                                value: None,
                                prev,
                            }
                        }
                    };
                    let raw = match raw.untransformed(&self.storage.transformer) {
                        Ok(raw) => raw,
                        Err(e) => {
                            let _ = self.send(WatchEvent::Error(e)).await;
                            return;
                        }
                    };
                    let delivered = match transform(&raw, &self.opts.predicate) {
                        None => true,
                        Some(Ok(e)) => self.send(e).await,
                        Some(Err(e)) => {
                            let _ = self.send(WatchEvent::Error(e)).await;
                            false
                        }
                    };
                    if !delivered {
                        return;
                    }
                    last = rev;
                }
            }
        }
    }
}

impl EtcdWatch {
    /// The event of a watch without previous values (see [`ListOptions::feeds_watch_cache`]):
    /// the current object, or for a deletion the key and revision with an empty value.
    fn cache_feed_event(
        &self,
        key: String,
        rev: u64,
        kv: &etcd_client::KeyValue,
        event_type: EventType,
    ) -> std::result::Result<WatchEvent, crate::status::ApiError> {
        match event_type {
            EventType::Delete => Ok(WatchEvent::Deleted(Object {
                key,
                value: Bytes::new(),
                resource_version: rev,
            })),
            EventType::Put => {
                let plain = self
                    .storage
                    .transformer
                    .from_storage(&key, Bytes::copy_from_slice(kv.value()))
                    .map_err(crate::status::ApiError::internal)?
                    .data;
                let value = versioner::set_resource_version(&plain, rev)
                    .map_err(crate::status::ApiError::internal)?;
                let obj = Object {
                    key,
                    value,
                    resource_version: rev,
                };
                Ok(if kv.create_revision() == kv.mod_revision() {
                    WatchEvent::Added(obj)
                } else {
                    WatchEvent::Modified(obj)
                })
            }
        }
    }
}

/// The outcome of a compare-and-put.
enum Cas {
    /// Written at this revision.
    Done(u64),
    /// The compare failed; the key's current value and mod revision (`None`: absent).
    Conflict(Option<(Bytes, u64)>),
}

/// What one attempt of a guaranteed update decided.
enum Step {
    /// The update changes nothing: this is the object.
    Unchanged(Object),
    /// These bytes (without resourceVersion) are to be written.
    Write(Bytes),
}

impl EtcdStorage {
    /// Runs the preconditions and `try_update` against `current` (`None` when absent).
    fn try_once(
        &self,
        key: &str,
        ignore_not_found: bool,
        preconditions: Option<&Preconditions>,
        try_update: &mut UpdateFn<'_>,
        current: Option<&Current>,
    ) -> Result<Step> {
        let cur_obj = match current {
            Some((v, _, rev)) => Some(to_object(key, v, *rev)?),
            None if ignore_not_found => None,
            None => {
                return Err(StorageError::KeyNotFound {
                    key: key.into(),
                    resource_version: 0,
                });
            }
        };
        if let (Some(p), Some(obj)) = (preconditions, &cur_obj) {
            p.check(key, obj)?;
        }
        let new = try_update(cur_obj.as_ref())?;
        let stored = versioner::strip_resource_version(&new)?;
        if let (Some((old, stale, _)), Some(obj)) = (current, cur_obj)
            && !*stale
            && *old == stored
        {
            return Ok(Step::Unchanged(obj));
        }
        Ok(Step::Write(stored))
    }
}

impl Storage for EtcdStorage {
    fn create<'a>(&'a self, key: &'a str, obj: Bytes) -> BoxFuture<'a, Result<Object>> {
        Box::pin(async move {
            if versioner::object_resource_version(&obj)? != 0 {
                return Err(StorageError::Internal(
                    "resourceVersion should not be set on objects to be created".into(),
                ));
            }
            let stored = versioner::strip_resource_version(&obj)?;
            let value = crate::storage::transform(&self.transformer, key, stored.clone())?;
            check_size(key, &value)?;
            match self.cas_put(key, &value, 0).await? {
                Cas::Done(rev) => to_object(key, &stored, rev),
                Cas::Conflict(_) => Err(StorageError::KeyExists {
                    key: key.into(),
                    resource_version: 0,
                }),
            }
        })
    }

    fn get<'a>(&'a self, key: &'a str, opts: GetOptions) -> BoxFuture<'a, Result<Option<Object>>> {
        Box::pin(async move {
            let min = versioner::parse_resource_version(&opts.resource_version)?;
            let (found, current) = self.get_raw(key).await?;
            if min > current {
                return Err(StorageError::TooLargeResourceVersion {
                    requested: min,
                    current,
                    retry_after_seconds: 0,
                });
            }
            match self.plain(key, found)? {
                Some((v, _, rev)) => Ok(Some(to_object(key, &v, rev)?)),
                None if opts.ignore_not_found => Ok(None),
                None => Err(StorageError::KeyNotFound {
                    key: key.into(),
                    resource_version: current,
                }),
            }
        })
    }

    fn list<'a>(&'a self, key: &'a str, opts: ListOptions) -> BoxFuture<'a, Result<ListResult>> {
        Box::pin(async move {
            let (prefix, exact) = if opts.recursive {
                (recursive_prefix(key), None)
            } else {
                (key.to_string(), Some(key))
            };
            let plan = plan_list(&prefix, &opts)?;
            let limit = if opts.recursive { opts.limit } else { 0 };
            self.read_list(&prefix, exact, &plan, limit, &opts.predicate)
                .await
        })
    }

    fn guaranteed_update<'a>(
        &'a self,
        key: &'a str,
        ignore_not_found: bool,
        preconditions: Option<Preconditions>,
        try_update: &'a mut UpdateFn<'a>,
    ) -> BoxFuture<'a, Result<Object>> {
        self.guaranteed_update_cached(key, ignore_not_found, preconditions, try_update, None)
    }

    fn guaranteed_update_cached<'a>(
        &'a self,
        key: &'a str,
        ignore_not_found: bool,
        preconditions: Option<Preconditions>,
        try_update: &'a mut UpdateFn<'a>,
        cached: Option<Object>,
    ) -> BoxFuture<'a, Result<Object>> {
        Box::pin(async move {
            // The state the update starts from, and whether it was read from etcd (a cached
            // copy may be stale: anything that fails on it is retried on a fresh read).
            let (mut current, mut is_current) = match cached {
                Some(obj) => {
                    let stored = versioner::strip_resource_version(&obj.value)?;
                    (Some((stored, false, obj.resource_version)), false)
                }
                None => (self.plain(key, self.get_raw(key).await?.0)?, true),
            };
            loop {
                let attempt = self.try_once(
                    key,
                    ignore_not_found,
                    preconditions.as_ref(),
                    try_update,
                    current.as_ref(),
                );
                match attempt {
                    Ok(Step::Unchanged(obj)) if is_current => return Ok(obj),
                    Ok(Step::Write(stored)) => {
                        let expect = current.as_ref().map(|(_, _, r)| *r).unwrap_or(0);
                        let value =
                            crate::storage::transform(&self.transformer, key, stored.clone())?;
                        check_size(key, &value)?;
                        match self.cas_put(key, &value, expect).await? {
                            Cas::Done(rev) => return to_object(key, &stored, rev),
                            Cas::Conflict(now) => {
                                current = self.plain(key, now)?;
                                is_current = true;
                                continue;
                            }
                        }
                    }
                    Err(e) if is_current => return Err(e),
                    // Unchanged or failing against a cached copy: decide on a fresh read.
                    Ok(Step::Unchanged(_)) | Err(_) => {}
                }
                current = self.plain(key, self.get_raw(key).await?.0)?;
                is_current = true;
            }
        })
    }

    fn guaranteed_update_with_ttl<'a>(
        &'a self,
        key: &'a str,
        ttl: Duration,
        try_update: &'a mut UpdateFn<'a>,
    ) -> BoxFuture<'a, Result<Object>> {
        Box::pin(async move {
            // etcd counts lease TTLs in whole seconds.
            let seconds = i64::try_from(ttl.as_secs().max(1)).unwrap_or(i64::MAX);
            let mut current = self.plain(key, self.get_raw(key).await?.0)?;
            loop {
                let cur_obj = current
                    .as_ref()
                    .map(|(v, _, rev)| to_object(key, v, *rev))
                    .transpose()?;
                let new = try_update(cur_obj.as_ref())?;
                let stored = versioner::strip_resource_version(&new)?;
                let value = crate::storage::transform(&self.transformer, key, stored.clone())?;
                check_size(key, &value)?;
                let mut leases = self.endpoints.pinned().1.lease_client();
                let lease =
                    tokio::time::timeout(self.config.request_timeout, leases.grant(seconds, None))
                        .await
                        .map_err(|_| StorageError::Timeout {
                            key: key.into(),
                            message: "context deadline exceeded".into(),
                        })?
                        .map_err(|e| etcd_err(key, e))?;
                let expect = current.as_ref().map(|(_, _, r)| *r).unwrap_or(0);
                let options = PutOptions::new().with_lease(lease.id());
                match self
                    .cas_put_with(key, &value, expect, Some(options))
                    .await?
                {
                    Cas::Done(rev) => return to_object(key, &stored, rev),
                    Cas::Conflict(now) => current = self.plain(key, now)?,
                }
            }
        })
    }

    fn delete<'a>(
        &'a self,
        key: &'a str,
        preconditions: Option<Preconditions>,
        validate: Option<&'a ValidateDeletionFn<'a>>,
    ) -> BoxFuture<'a, Result<Object>> {
        Box::pin(async move {
            loop {
                let Some((value, _, rev)) = self.plain(key, self.get_raw(key).await?.0)? else {
                    return Err(StorageError::KeyNotFound {
                        key: key.into(),
                        resource_version: 0,
                    });
                };
                let obj = to_object(key, &value, rev)?;
                if let Some(p) = &preconditions {
                    p.check(key, &obj)?;
                }
                if let Some(v) = validate {
                    v(&obj)?;
                }
                let txn = Txn::new()
                    .when([Compare::mod_revision(
                        key,
                        CompareOp::Equal,
                        i64::try_from(rev).unwrap_or(i64::MAX),
                    )])
                    .and_then([TxnOp::delete(key, None)]);
                let resp = self
                    .call(key, |mut kv| {
                        let txn = txn.clone();
                        async move { kv.txn(txn).await }
                    })
                    .await?;
                if !resp.succeeded() {
                    continue;
                }
                let del_rev = resp
                    .op_responses()
                    .into_iter()
                    .find_map(|r| match r {
                        TxnOpResponse::Delete(d) => d.header().map(|h| h.revision()),
                        _ => None,
                    })
                    .or_else(|| resp.header().map(|h| h.revision()))
                    .unwrap_or(0);
                return to_object(key, &value, rev_u64(del_rev));
            }
        })
    }

    fn watch<'a>(&'a self, key: &'a str, opts: ListOptions) -> BoxFuture<'a, Result<WatchStream>> {
        Box::pin(async move {
            let rv = parse_watch_rv(&opts.resource_version)?;
            let initial = match opts.send_initial_events {
                None => rv == 0,
                Some(v) => v,
            };
            let key = if opts.recursive {
                recursive_prefix(key)
            } else {
                key.to_string()
            };
            let start = if rv == 0 && !initial {
                self.current_revision().await?
            } else {
                rv
            };
            let (tx, rx) = mpsc::channel(WATCH_CHANNEL_CAPACITY);
            let (ptx, prx) = mpsc::channel(1);
            let stop = CancellationToken::new();
            let task = EtcdWatch {
                storage: self.clone(),
                key,
                recursive: opts.recursive,
                opts,
                tx,
            };
            tokio::spawn(task.run(start, initial, stop.clone(), prx));
            Ok(
                WatchStream::new(rx, Some(stop)).with_progress(Arc::new(move || {
                    let _ = ptx.try_send(());
                })),
            )
        })
    }

    fn count<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<i64>> {
        Box::pin(async move {
            let prefix = recursive_prefix(key);
            let opts = EtcdGet::new()
                .with_range(prefix_end(&prefix))
                .with_count_only();
            let resp = self
                .call(key, |mut kv| {
                    let (prefix, opts) = (prefix.clone(), opts.clone());
                    async move { kv.get(prefix, Some(opts)).await }
                })
                .await?;
            Ok(resp.count())
        })
    }

    fn current_revision(&self) -> BoxFuture<'_, Result<u64>> {
        Box::pin(async move {
            let key = format!("{}/", self.config.prefix.trim_end_matches('/'));
            let opts = EtcdGet::new().with_count_only().with_limit(1);
            let resp = self
                .call(&key, |mut kv| {
                    let (key, opts) = (key.clone(), opts.clone());
                    async move { kv.get(key, Some(opts)).await }
                })
                .await?;
            Ok(rev_u64(resp.header().map(|h| h.revision()).unwrap_or(0)))
        })
    }

    fn compact(&self, revision: u64) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            let rev = i64::try_from(revision).unwrap_or(i64::MAX);
            let call = self.call(
                "compact",
                |mut kv| async move { kv.compact(rev, None).await },
            );
            match call.await {
                Ok(_) => {
                    self.saw_compaction(revision);
                    Ok(())
                }
                Err(StorageError::Expired { .. }) => Err(StorageError::Expired {
                    requested: revision,
                    current: self.compacted_revision(),
                    message: "mvcc: required revision has been compacted".into(),
                    continue_token: None,
                }),
                Err(e) => Err(e),
            }
        })
    }

    fn compacted_revision(&self) -> u64 {
        self.compact_rev.load(Ordering::SeqCst)
    }

    fn reliable_progress(&self) -> bool {
        self.config.trust_progress_notify
    }

    fn for_resource(&self, group: &str, resource: &str) -> Option<Arc<dyn Storage>> {
        let mut handle = self.clone();
        handle.transformer = self.transformers.for_resource(group, resource);
        Some(Arc::new(handle))
    }

    fn health(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            // Upstream's check reads `<prefix>/health` with a short deadline; not found is fine.
            // Any answering endpoint will do, as upstream's client balances over all of them.
            let key = format!("{}/health", self.config.prefix.trim_end_matches('/'));
            let probe = self.call(&key, |mut kv| {
                let key = key.clone();
                async move { kv.get(key, None).await }
            });
            match tokio::time::timeout(self.config.health_timeout, probe).await {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(e)) => Err(format!("error getting data from etcd: {e}")),
                Err(_) => Err("etcd health check timed out".into()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::testing::Caps;
    use crate::storage::testing::etcd_server::EtcdServer;

    async fn connect(server: &EtcdServer) -> EtcdStorage {
        EtcdStorage::connect(EtcdConfig {
            endpoints: vec![server.url()],
            request_timeout: Duration::from_secs(3),
            ..Default::default()
        })
        .await
        .unwrap()
    }

    async fn store() -> (Arc<dyn Storage>, EtcdServer) {
        let server = EtcdServer::start().await;
        let s = connect(&server).await;
        (Arc::new(s), server)
    }

    crate::storage_conformance!(
        store,
        Caps {
            watch_compaction_410: true
        }
    );
    crate::storage_conformance!(@tests store, Caps { watch_compaction_410: true }, ttl);

    /// The whole contract again with every value encrypted (aescbc mid-rotation).
    mod encrypted {
        use super::*;

        async fn store() -> (Arc<dyn Storage>, EtcdServer) {
            let server = EtcdServer::start().await;
            let s = connect(&server)
                .await
                .with_transformers(crate::storage::value::testing::rotating_aescbc());
            (s.for_resource("", "widgets").unwrap(), server)
        }

        crate::storage_conformance!(
            store,
            Caps {
                watch_compaction_410: true
            }
        );
    }

    #[test]
    fn prefix_end_increments_last_byte() {
        assert_eq!(prefix_end("/registry/pods/"), b"/registry/pods0".to_vec());
        assert_eq!(prefix_end("a\u{7f}"), b"a\x80".to_vec());
    }
}

#[cfg(test)]
mod fault_tests {
    use std::collections::BTreeMap;
    use std::time::Instant;

    use super::*;
    use crate::storage::testing::etcd_server::EtcdServer;
    use crate::storage::testing::pod;

    async fn connect(server: &EtcdServer, timeout: Duration) -> EtcdStorage {
        EtcdStorage::connect(EtcdConfig {
            endpoints: vec![server.url()],
            request_timeout: timeout,
            health_timeout: Duration::from_secs(1),
            ..Default::default()
        })
        .await
        .unwrap()
    }

    /// While etcd is down: 5xx within the request timeout, failing health; then recovery.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn etcd_down_fails_fast_and_recovers() {
        let mut server = EtcdServer::start().await;
        let s = connect(&server, Duration::from_secs(2)).await;
        s.create("/registry/pods/ns/a", pod("ns", "a", &[]))
            .await
            .unwrap();
        assert!(s.health().await.is_ok());
        server.stop();
        let started = Instant::now();
        let err = s
            .get("/registry/pods/ns/a", GetOptions::default())
            .await
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(10), "{err:?}");
        let api = err.to_api_error(Operation::Get, "", "pods", "a");
        assert!(api.code().is_server_error(), "{api:?}");
        let err = s
            .create("/registry/pods/ns/b", pod("ns", "b", &[]))
            .await
            .unwrap_err();
        assert!(
            err.to_api_error(Operation::Create, "", "pods", "b")
                .code()
                .is_server_error()
        );
        assert!(s.health().await.is_err());
        server.start_again().await;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if s.get("/registry/pods/ns/a", GetOptions::default())
                .await
                .is_ok()
                && s.health().await.is_ok()
            {
                break;
            }
            assert!(Instant::now() < deadline, "did not recover");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// etcd restarts (SIGKILL) during writes and a watch: nothing acknowledged is lost and the
    /// watch delivers every acknowledged change once, in order (or ends with an error).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn restart_during_writes_and_watch() {
        let mut server = EtcdServer::start().await;
        let s = connect(&server, Duration::from_secs(2)).await;
        let start = s.current_revision().await.unwrap();
        let mut w = s
            .watch(
                "/registry/cm/",
                ListOptions {
                    resource_version: start.to_string(),
                    recursive: true,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        let writer = {
            let s = s.clone();
            tokio::spawn(async move {
                let mut acked = BTreeMap::new();
                for i in 0..300 {
                    let key = format!("/registry/cm/ns/c{i:04}");
                    if let Ok(o) = s.create(&key, pod("ns", &format!("c{i:04}"), &[])).await {
                        acked.insert(key, o.resource_version);
                    }
                }
                acked
            })
        };
        // Restart twice while the writer runs.
        for _ in 0..2 {
            let deadline = Instant::now() + Duration::from_secs(30);
            while s.count("/registry/cm/").await.unwrap_or(0) < 50 {
                assert!(Instant::now() < deadline);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            server.restart().await;
        }
        let acked = writer.await.unwrap();
        assert!(
            acked.len() > 50,
            "too few writes acknowledged: {}",
            acked.len()
        );
        for (key, rev) in &acked {
            let got = s.get(key, GetOptions::default()).await.unwrap().unwrap();
            assert_eq!(got.resource_version, *rev, "{key}");
        }
        let max_acked = acked.values().copied().max().unwrap_or(0);
        let mut seen: BTreeMap<String, u64> = BTreeMap::new();
        let mut last = start;
        let mut ended_with_error = false;
        while last < max_acked {
            match crate::storage::testing::next_event(&mut w).await {
                WatchEvent::Added(o) => {
                    assert!(o.resource_version > last, "duplicate or reordered event");
                    last = o.resource_version;
                    seen.insert(o.key, o.resource_version);
                }
                WatchEvent::Error(_) => {
                    ended_with_error = true;
                    break;
                }
                WatchEvent::Bookmark { .. } => {}
                other => panic!("unexpected {other:?}"),
            }
        }
        if !ended_with_error {
            for (key, rev) in &acked {
                assert_eq!(seen.get(key), Some(rev), "watch missed {key}");
            }
        }
    }
}
