//! A rolling restart, proven: three replicas on one etcd behind a TCP load balancer that routes
//! new connections only to replicas whose `/readyz` answers 200 (polled every 200 ms, as cloud
//! load balancers do), continuous GET, LIST, CREATE, UPDATE and WATCH traffic over HTTP/1.1 and
//! HTTP/2 keep-alive connections, and each replica restarted in turn with SIGTERM and
//! `--shutdown-delay-duration`: no request fails, every acknowledged write is there afterwards,
//! and every watcher sees every acknowledged write's event, resuming on another replica from its
//! last resourceVersion when its stream ends. Run once in each shutdown mode (listener closed
//! after the delay, and `--shutdown-send-retry-after`).
//!
//! The clients retry exactly what client-go (and Go's transport beneath it) retries, and count
//! it: a request the connection never sent (closed before it was written), an HTTP/2 stream the
//! server refused or left unprocessed by its GOAWAY, a GET whose connection broke, and any 429
//! or 5xx answer carrying `Retry-After` (after waiting that long). Anything else is a failure.

mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::client::{Client, Conn, Proto};
use common::etcd::EtcdServer;
use common::{ApiServer, DEADLINE, free_port};
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// The two tests share the machine's two cores: they run one after the other.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// How often the load balancer asks each replica's `/readyz`.
const PROBE_INTERVAL: Duration = Duration::from_millis(200);

/// The namespace the traffic writes to.
const NAMESPACE: &str = "rolling";

/// client-go's default number of retries of one request.
const MAX_RETRIES: u32 = 10;

// ---------------------------------------------------------------------------------------------
// The load balancer.

/// One replica as the load balancer sees it.
struct Backend {
    addr: SocketAddr,
    ready: AtomicBool,
    connections: AtomicU64,
}

/// A TCP load balancer: each accepted connection is piped to a replica that answered its last
/// `/readyz` probe with 200 (round robin); a replica that fails a probe gets no new connections
/// until it passes one again. Connections already open stay where they are, as with any L4
/// load balancer.
struct LoadBalancer {
    addr: SocketAddr,
    backends: Arc<Vec<Backend>>,
    stop: CancellationToken,
}

impl LoadBalancer {
    async fn start(replicas: &[SocketAddr], prober: Client) -> LoadBalancer {
        let backends: Arc<Vec<Backend>> = Arc::new(
            replicas
                .iter()
                .map(|&addr| Backend {
                    addr,
                    ready: AtomicBool::new(false),
                    connections: AtomicU64::new(0),
                })
                .collect(),
        );
        let stop = CancellationToken::new();
        for index in 0..backends.len() {
            let backends = backends.clone();
            let stop = stop.clone();
            let mut prober = prober.clone();
            prober.addr = backends[index].addr;
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(PROBE_INTERVAL);
                loop {
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = tick.tick() => {}
                    }
                    let probe = tokio::time::timeout(
                        Duration::from_secs(1),
                        prober.get(Proto::H1, "/readyz"),
                    );
                    let ready = matches!(probe.await, Ok(Ok(reply)) if reply.status == 200);
                    backends[index].ready.store(ready, Ordering::SeqCst);
                }
            });
        }
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        {
            let backends = backends.clone();
            let stop = stop.clone();
            let next = Arc::new(AtomicUsize::new(0));
            tokio::spawn(async move {
                loop {
                    let inbound = tokio::select! {
                        _ = stop.cancelled() => return,
                        accepted = listener.accept() => match accepted {
                            Ok((stream, _)) => stream,
                            Err(_) => continue,
                        },
                    };
                    let backends = backends.clone();
                    let next = next.clone();
                    let stop = stop.clone();
                    tokio::spawn(async move {
                        if let Some(outbound) = connect_ready(&backends, &next).await {
                            pipe(inbound, outbound, stop).await;
                        }
                    });
                }
            });
        }
        LoadBalancer {
            addr,
            backends,
            stop,
        }
    }

    /// Waits until the load balancer sees every replica ready.
    async fn wait_all_ready(&self) {
        common::eventually("every replica ready in the load balancer", || async {
            self.backends
                .iter()
                .all(|b| b.ready.load(Ordering::SeqCst))
                .then_some(())
        })
        .await;
    }

    /// Waits until the load balancer took replica `index` out of rotation.
    async fn wait_out_of_rotation(&self, index: usize) {
        common::eventually("the replica out of rotation", || async {
            (!self.backends[index].ready.load(Ordering::SeqCst)).then_some(())
        })
        .await;
    }
}

impl Drop for LoadBalancer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Connects to a ready replica, round robin, trying the others when one refuses; waits (up to
/// the deadline) while none is ready.
async fn connect_ready(backends: &[Backend], next: &AtomicUsize) -> Option<TcpStream> {
    let start = Instant::now();
    while start.elapsed() < DEADLINE {
        let first = next.fetch_add(1, Ordering::SeqCst);
        for offset in 0..backends.len() {
            let backend = &backends[(first + offset) % backends.len()];
            if !backend.ready.load(Ordering::SeqCst) {
                continue;
            }
            if let Ok(stream) = TcpStream::connect(backend.addr).await {
                backend.connections.fetch_add(1, Ordering::SeqCst);
                return Some(stream);
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

/// Copies both ways until both sides are done (half-closes passed on).
async fn pipe(mut inbound: TcpStream, mut outbound: TcpStream, stop: CancellationToken) {
    let _ = inbound.set_nodelay(true);
    let _ = outbound.set_nodelay(true);
    tokio::select! {
        _ = stop.cancelled() => {}
        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
    }
}

// ---------------------------------------------------------------------------------------------
// The clients.

/// What the traffic did.
#[derive(Default)]
struct Stats {
    requests: AtomicU64,
    /// Requests answered 429/5xx with `Retry-After` and sent again after waiting.
    retry_after: AtomicU64,
    /// Their status codes.
    retry_statuses: Mutex<BTreeMap<u16, u64>>,
    /// Requests sent again on a new connection (never sent, refused stream, GET on a broken
    /// connection).
    resent: AtomicU64,
    watch_resumes: AtomicU64,
    events: AtomicU64,
    failures: Mutex<Vec<String>>,
}

impl Stats {
    fn fail(&self, what: String) {
        eprintln!("FAILURE: {what}");
        self.failures.lock().unwrap().push(what);
    }
}

/// A connection-keeping client (one keep-alive connection, replaced when it ends), retrying as
/// client-go does.
struct Caller {
    client: Client,
    proto: Proto,
    conn: Option<Conn>,
    stats: Arc<Stats>,
}

/// How a request that got no response failed.
enum SendFailure {
    /// The request never left (connection closed first, stream refused, or an HTTP/2 stream
    /// above the GOAWAY's last stream id): safe to send again whatever the method.
    Unprocessed,
    /// It may have been processed.
    Broken(String),
}

impl Caller {
    fn new(client: &Client, proto: Proto, stats: &Arc<Stats>) -> Caller {
        Caller {
            client: client.clone(),
            proto,
            conn: None,
            stats: stats.clone(),
        }
    }

    fn request(&self, method: &Method, path: &str, body: &Option<Value>) -> Request<Full<Bytes>> {
        let mut req = self.client.request(
            method.clone(),
            path,
            &body.as_ref().map(Value::to_string).unwrap_or_default(),
        );
        if body.is_some() {
            req.headers_mut()
                .insert("content-type", "application/json".parse().unwrap());
        }
        req
    }

    /// Sends once on the kept connection (opening one when there is none or it ended) and
    /// returns the response head.
    async fn send_once(
        &mut self,
        req: Request<Full<Bytes>>,
    ) -> Result<http::Response<hyper::body::Incoming>, SendFailure> {
        let reusable = match self.conn.as_mut() {
            Some(conn) => conn.is_usable().await,
            None => false,
        };
        if !reusable {
            self.conn = None;
            match self.client.connect(self.proto).await {
                Ok(conn) => self.conn = Some(conn),
                // Nothing was sent on it.
                Err(_) => return Err(SendFailure::Unprocessed),
            }
        }
        let Some(conn) = self.conn.as_mut() else {
            unreachable!("connection opened above")
        };
        let result = match conn {
            Conn::H1(sender) => {
                let mut req = req;
                let host = req.uri().host().unwrap_or("localhost").to_string();
                let path = req.uri().path_and_query().map(|p| p.as_str().to_string());
                *req.uri_mut() = path.unwrap_or_else(|| "/".into()).parse().unwrap();
                req.headers_mut().insert("host", host.parse().unwrap());
                sender.try_send_request(req).await
            }
            Conn::H2(sender) => sender.try_send_request(req).await,
        };
        result.map_err(|mut e| {
            self.conn = None;
            let unsent = e.take_message().is_some();
            let error = e.into_error();
            let text = format!("{error} ({:?})", std::error::Error::source(&error));
            if unsent || h2_unprocessed(&error) {
                SendFailure::Unprocessed
            } else {
                SendFailure::Broken(text)
            }
        })
    }

    /// Sends a request as client-go does, returning the final response head.
    async fn send(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<http::Response<hyper::body::Incoming>, String> {
        self.stats.requests.fetch_add(1, Ordering::SeqCst);
        let mut attempt = 0;
        loop {
            attempt += 1;
            if attempt > MAX_RETRIES + 1 {
                return Err(format!(
                    "{method} {path}: gave up after {MAX_RETRIES} retries"
                ));
            }
            let req = self.request(&method, path, &body);
            let response = match self.send_once(req).await {
                Ok(response) => response,
                Err(SendFailure::Unprocessed) => {
                    self.stats.resent.fetch_add(1, Ordering::SeqCst);
                    continue;
                }
                // client-go retries GETs whose connection broke (reset, EOF, lost HTTP/2).
                Err(SendFailure::Broken(_)) if method == Method::GET => {
                    self.stats.resent.fetch_add(1, Ordering::SeqCst);
                    continue;
                }
                Err(SendFailure::Broken(e)) => return Err(format!("{method} {path}: {e}")),
            };
            let status = response.status();
            let retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok());
            match retry_after {
                Some(seconds)
                    if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() =>
                {
                    // Read the answer so an HTTP/1.1 connection can be reused.
                    let _ = response.into_body().collect().await;
                    self.stats.retry_after.fetch_add(1, Ordering::SeqCst);
                    *self
                        .stats
                        .retry_statuses
                        .lock()
                        .unwrap()
                        .entry(status.as_u16())
                        .or_default() += 1;
                    tokio::time::sleep(Duration::from_secs(seconds)).await;
                }
                _ => return Ok(response),
            }
        }
    }

    /// Sends a request and reads the whole JSON answer.
    async fn call(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<(StatusCode, Value), String> {
        let response = self.send(method.clone(), path, body).await?;
        let status = response.status();
        let bytes = match response.into_body().collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) => {
                self.conn = None;
                return Err(format!("{method} {path}: reading the body: {e}"));
            }
        };
        let value = serde_json::from_slice(&bytes).unwrap_or_else(
            |_| json!({ "unparsed": String::from_utf8_lossy(&bytes).into_owned() }),
        );
        Ok((status, value))
    }
}

/// Whether an HTTP/2 error says the server did not process the stream: refused, or cut off by
/// a graceful GOAWAY (Go's transport sends such requests again, whatever their method).
fn h2_unprocessed(error: &hyper::Error) -> bool {
    std::error::Error::source(error)
        .and_then(|e| e.downcast_ref::<h2::Error>())
        .is_some_and(|e| {
            e.reason() == Some(h2::Reason::REFUSED_STREAM)
                || (e.is_go_away() && e.reason() == Some(h2::Reason::NO_ERROR))
        })
}

fn resource_version(object: &Value) -> u64 {
    object["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or_else(|| panic!("no resourceVersion in {object}"))
}

/// Every acknowledged write: configmap name → resourceVersions of its create and update.
type Acked = Arc<Mutex<BTreeMap<String, Vec<u64>>>>;

/// Creates, updates and reads back configmaps until `stop`, and lists every tenth round.
async fn writer(
    mut caller: Caller,
    id: usize,
    acked: Acked,
    stop: CancellationToken,
) -> Result<(), String> {
    let collection = format!("/api/v1/namespaces/{NAMESPACE}/configmaps");
    let mut n = 0;
    while !stop.is_cancelled() {
        n += 1;
        let name = format!("w{id}-{n}");
        let object = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": { "name": name }, "data": { "v": "0" },
        });
        let (status, created) = caller.call(Method::POST, &collection, Some(object)).await?;
        if status != StatusCode::CREATED {
            return Err(format!("create {name}: {status} {created}"));
        }
        let created_rv = resource_version(&created);
        acked.lock().unwrap().insert(name.clone(), vec![created_rv]);

        let mut update = created;
        update["data"]["v"] = json!("1");
        let path = format!("{collection}/{name}");
        let (status, updated) = caller.call(Method::PUT, &path, Some(update)).await?;
        if status != StatusCode::OK {
            return Err(format!("update {name}: {status} {updated}"));
        }
        let updated_rv = resource_version(&updated);
        acked
            .lock()
            .unwrap()
            .get_mut(&name)
            .unwrap()
            .push(updated_rv);

        // Read it back (maybe from another replica): a GET is a consistent read.
        let (status, read) = caller.call(Method::GET, &path, None).await?;
        if status != StatusCode::OK || resource_version(&read) != updated_rv {
            return Err(format!("get {name}: {status} {read}"));
        }
        if n % 10 == 0 {
            let (status, list) = caller
                .call(Method::GET, &format!("{collection}?limit=50"), None)
                .await?;
            if status != StatusCode::OK || !list["items"].is_array() {
                return Err(format!("list: {status} {list}"));
            }
        }
    }
    Ok(())
}

/// Watches the namespace's configmaps from `from` until it has seen `until` (set once the
/// writers stopped), resuming from the last resourceVersion it saw (events and bookmarks)
/// whenever a stream ends. Returns every event's (name, resourceVersion).
async fn watcher(
    mut caller: Caller,
    from: u64,
    until: Arc<AtomicU64>,
) -> Result<Vec<(String, u64)>, String> {
    let stats = caller.stats.clone();
    let mut seen = Vec::new();
    let mut last = from;
    let mut first = true;
    loop {
        let target = until.load(Ordering::SeqCst);
        if target != 0 && last >= target {
            return Ok(seen);
        }
        if !first {
            stats.watch_resumes.fetch_add(1, Ordering::SeqCst);
        }
        first = false;
        // A watch is long-running: a connection of its own, as client-go's HTTP/1.1 watches.
        caller.conn = None;
        let path = format!(
            "/api/v1/namespaces/{NAMESPACE}/configmaps?watch=1&allowWatchBookmarks=true\
             &resourceVersion={last}"
        );
        let response = caller.send(Method::GET, &path, None).await?;
        if response.status() != StatusCode::OK {
            let status = response.status();
            let body = response.into_body().collect().await.map(|b| b.to_bytes());
            return Err(format!("watch from {last}: {status} {body:?}"));
        }
        let mut body = response.into_body();
        let mut buffer = Vec::new();
        loop {
            let frame = match body.frame().await {
                Some(Ok(frame)) => frame,
                // The stream ended (cleanly or not): resume from `last`.
                Some(Err(_)) | None => break,
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            buffer.extend_from_slice(&data);
            while let Some(end) = buffer.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = buffer.drain(..=end).collect();
                let event: Value = serde_json::from_slice(&line)
                    .map_err(|e| format!("watch line {:?}: {e}", String::from_utf8_lossy(&line)))?;
                let object = &event["object"];
                match event["type"].as_str() {
                    Some("BOOKMARK") => last = last.max(resource_version(object)),
                    Some("ADDED" | "MODIFIED") => {
                        let rv = resource_version(object);
                        if rv <= last {
                            return Err(format!("event at {rv} after {last}: {event}"));
                        }
                        last = rv;
                        let name = object["metadata"]["name"].as_str().unwrap_or("");
                        seen.push((name.to_string(), rv));
                        stats.events.fetch_add(1, Ordering::SeqCst);
                    }
                    _ => return Err(format!("unexpected watch event {event}")),
                }
            }
            let target = until.load(Ordering::SeqCst);
            if target != 0 && last >= target {
                return Ok(seen);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The replicas.

/// The flags every replica gets.
fn replica_args(etcd: &EtcdServer, port: u16, extra: &[&str]) -> Vec<String> {
    let mut args = vec![
        format!("--etcd-servers={}", etcd.url()),
        format!("--secure-port={port}"),
        "--shutdown-delay-duration=2s".to_string(),
    ];
    args.extend(extra.iter().map(|a| a.to_string()));
    args
}

async fn start_replica(data_dir: &Path, cert_dir: &Path, args: &[String]) -> ApiServer {
    ApiServer::builder()
        .data_dir(data_dir)
        .cert_dir(cert_dir)
        .args(args.iter().cloned())
        .start()
        .await
}

fn read(path: PathBuf) -> String {
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

async fn rolling_restart(extra_flags: &[&str]) {
    let _serial = SERIAL.lock().await;
    let started = Instant::now();
    let etcd = EtcdServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let cert_dir = tmp.path().join("pki");
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let args: Vec<Vec<String>> = ports
        .iter()
        .map(|&port| replica_args(&etcd, port, extra_flags))
        .collect();
    let data_dirs: Vec<PathBuf> = (0..3).map(|i| tmp.path().join(format!("r{i}"))).collect();
    // One after the other: the first generates the shared PKI, the others use it.
    let mut replicas = Vec::new();
    for i in 0..3 {
        replicas.push(start_replica(&data_dirs[i], &cert_dir, &args[i]).await);
    }

    let ca = read(cert_dir.join("ca.crt"));
    let admin = Client::new(replicas[0].addr, &ca, "127.0.0.1").with_identity(
        &read(cert_dir.join("admin.crt")),
        &read(cert_dir.join("admin.key")),
    );
    let addrs: Vec<SocketAddr> = replicas.iter().map(|r| r.addr).collect();
    let lb = LoadBalancer::start(&addrs, admin.clone()).await;
    lb.wait_all_ready().await;
    let mut through_lb = admin.clone();
    through_lb.addr = lb.addr;

    let stats = Arc::new(Stats::default());
    let mut setup = Caller::new(&through_lb, Proto::H2, &stats);
    let (status, body) = setup
        .call(
            Method::POST,
            "/api/v1/namespaces",
            Some(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})),
        )
        .await
        .unwrap();
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, list) = setup
        .call(
            Method::GET,
            &format!("/api/v1/namespaces/{NAMESPACE}/configmaps"),
            None,
        )
        .await
        .unwrap();
    assert_eq!(status, StatusCode::OK, "{list}");
    let from = resource_version(&list);

    // Watchers first, from the LIST's resourceVersion, so they must see every write.
    let until = Arc::new(AtomicU64::new(0));
    let watchers: Vec<_> = [Proto::H1, Proto::H2, Proto::H1, Proto::H2]
        .into_iter()
        .map(|proto| {
            let caller = Caller::new(&through_lb, proto, &stats);
            tokio::spawn(watcher(caller, from, until.clone()))
        })
        .collect();
    let stop = CancellationToken::new();
    let acked: Acked = Arc::default();
    let writers: Vec<_> = [Proto::H1, Proto::H2, Proto::H1, Proto::H2]
        .into_iter()
        .enumerate()
        .map(|(id, proto)| {
            let caller = Caller::new(&through_lb, proto, &stats);
            tokio::spawn(writer(caller, id, acked.clone(), stop.clone()))
        })
        .collect();

    // Each replica in turn: SIGTERM, wait for its exit, start it again, wait until the load
    // balancer routes to it again; traffic runs throughout.
    let acked_before = || acked.lock().unwrap().len();
    for i in 0..3 {
        let floor = acked_before() + 10;
        common::eventually("writes acknowledged before the restart", || async {
            (acked_before() >= floor).then_some(())
        })
        .await;
        replicas[i].sigterm();
        lb.wait_out_of_rotation(i).await;
        let status = replicas[i].wait_exit().await;
        assert_eq!(
            status.code(),
            Some(0),
            "replica {i} exit: {status}\n{}",
            replicas[i].stderr.snapshot().join("\n")
        );
        replicas[i] = start_replica(&data_dirs[i], &cert_dir, &args[i]).await;
        lb.wait_all_ready().await;
    }
    let floor = acked_before() + 10;
    common::eventually("writes acknowledged after the restarts", || async {
        (acked_before() >= floor).then_some(())
    })
    .await;
    stop.cancel();
    for writer in writers {
        let result = tokio::time::timeout(DEADLINE, writer)
            .await
            .expect("writer stopped in time")
            .unwrap();
        if let Err(e) = result {
            stats.fail(format!("writer: {e}"));
        }
    }
    let acked = acked.lock().unwrap().clone();
    let max_acked = acked.values().flatten().copied().max().unwrap_or(from);
    until.store(max_acked, Ordering::SeqCst);
    let mut missed = Vec::new();
    for watcher in watchers {
        let result = tokio::time::timeout(DEADLINE, watcher)
            .await
            .expect("watcher caught up in time")
            .unwrap();
        match result {
            Ok(seen) => {
                let seen: std::collections::BTreeSet<(String, u64)> = seen.into_iter().collect();
                for (name, rvs) in &acked {
                    for rv in rvs {
                        if !seen.contains(&(name.clone(), *rv)) {
                            missed.push(format!("{name}@{rv}"));
                        }
                    }
                }
            }
            Err(e) => stats.fail(format!("watcher: {e}")),
        }
    }

    // Every acknowledged write is there, at its last acknowledged version.
    let mut reader = Caller::new(&through_lb, Proto::H2, &stats);
    let (status, list) = reader
        .call(
            Method::GET,
            &format!("/api/v1/namespaces/{NAMESPACE}/configmaps"),
            None,
        )
        .await
        .unwrap();
    assert_eq!(status, StatusCode::OK, "{list}");
    let stored: BTreeMap<String, u64> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            (
                item["metadata"]["name"].as_str().unwrap().to_string(),
                resource_version(item),
            )
        })
        .collect();
    let lost: Vec<_> = acked
        .iter()
        .filter(|(name, rvs)| stored.get(*name) != rvs.last())
        .map(|(name, rvs)| {
            format!(
                "{name}: acknowledged {rvs:?}, stored {:?}",
                stored.get(name)
            )
        })
        .collect();

    let failures = stats.failures.lock().unwrap().clone();
    let connections: Vec<u64> = lb
        .backends
        .iter()
        .map(|b| b.connections.load(Ordering::SeqCst))
        .collect();
    println!(
        "rolling restart {extra_flags:?}: {} s, 3 restarts, {} requests ({} resent on a new \
         connection, {} retried after Retry-After {:?}), {} writes acknowledged ({} objects), \
         {} watch events over 4 watchers, {} watch resumptions, load balancer connections per \
         replica {connections:?}, {} failures",
        started.elapsed().as_secs(),
        stats.requests.load(Ordering::SeqCst),
        stats.resent.load(Ordering::SeqCst),
        stats.retry_after.load(Ordering::SeqCst),
        stats.retry_statuses.lock().unwrap(),
        acked.values().map(Vec::len).sum::<usize>(),
        acked.len(),
        stats.events.load(Ordering::SeqCst),
        stats.watch_resumes.load(Ordering::SeqCst),
        failures.len(),
    );
    assert!(failures.is_empty(), "failed requests: {failures:#?}");
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:#?}");
    assert!(missed.is_empty(), "watchers missed events: {missed:?}");
    assert!(
        stats.watch_resumes.load(Ordering::SeqCst) > 0,
        "no watch was resumed: the restarts did not reach the watchers"
    );
    for replica in &mut replicas {
        replica.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rolling_restart_behind_a_readyz_load_balancer_fails_no_request_and_loses_no_write_or_event()
 {
    rolling_restart(&[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rolling_restart_with_shutdown_send_retry_after_fails_no_request_and_loses_no_write_or_event()
 {
    rolling_restart(&["--shutdown-send-retry-after"]).await;
}
