//! The load `scripts/bench-api.sh` cannot make with `hey`: creating many configmaps fast,
//! updates that change the object each time, and watch fan-out through the HTTP endpoint.
//! Talks HTTP/2 over TLS to a running kube-apiserver with a bearer token; prints one line of
//! space-separated figures per run (the script parses them).
//!
//! ```text
//! api_bench <addr> <ca.crt> <token> populate <namespace> <count> <concurrency> [<value bytes>]
//!     creates configmaps cm-0 … cm-<count-1>; prints `count seconds objects_per_s errors`
//! api_bench <addr> <ca.crt> <token> update <namespace> <count> <concurrency>
//!     PUTs changed data to cm-0 … cm-<concurrency-1> (one per worker, created first);
//!     prints `requests_per_s p50_ms p99_ms errors`
//! api_bench <addr> <ca.crt> <token> watch <namespace> <watchers> <writes>
//!     opens <watchers> watches on the namespace's configmaps, creates <writes> configmaps
//!     stamped with their send time; prints
//!     `delivered expected seconds events_per_s p50_ms p99_ms`
//! ```

#[allow(dead_code)]
#[path = "../../apiserver/tests/common/client.rs"]
mod client;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use client::{Client, Conn, Proto};
use http::{Method, StatusCode};
use http_body_util::BodyExt;

/// Streams per HTTP/2 connection (well under kube's default of 1000 per connection).
const STREAMS_PER_CONNECTION: usize = 64;
/// How long a watch run waits for its events before reporting what arrived.
const WATCH_DEADLINE: Duration = Duration::from_secs(120);

type Error = Box<dyn std::error::Error + Send + Sync>;

fn usage() -> Error {
    "usage: api_bench <addr> <ca.crt> <token> populate|update|watch <namespace> <n> <m> [<bytes>]"
        .into()
}

fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default()
}

fn configmap(namespace: &str, name: &str, data: &serde_json::Value) -> String {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data,
    })
    .to_string()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

/// HTTP/2 connections enough for `workers` concurrent streams; worker `i` uses `conns[i % n]`.
async fn connections(client: &Client, workers: usize) -> Result<Vec<Conn>, Error> {
    let n = workers.div_ceil(STREAMS_PER_CONNECTION).max(1);
    let mut conns = Vec::with_capacity(n);
    for _ in 0..n {
        conns.push(client.connect(Proto::H2).await?);
    }
    Ok(conns)
}

fn handle(conns: &[Conn], worker: usize) -> Result<Conn, Error> {
    conns[worker % conns.len()]
        .h2_handle()
        .ok_or_else(|| "not an HTTP/2 connection".into())
}

async fn ensure_namespace(client: &Client, conn: &mut Conn, namespace: &str) -> Result<(), Error> {
    let body = serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": namespace}})
    .to_string();
    let mut req = client.request(Method::POST, "/api/v1/namespaces", &body);
    req.headers_mut()
        .insert("content-type", "application/json".parse()?);
    let reply = conn.send(req).await?;
    match reply.status {
        StatusCode::CREATED | StatusCode::CONFLICT => Ok(()),
        status => Err(format!("creating namespace {namespace}: {status} {}", reply.body).into()),
    }
}

/// Sends `method path body`, returning the status and the latency.
async fn timed(
    client: &Client,
    conn: &mut Conn,
    method: Method,
    path: &str,
    body: &str,
) -> Result<(StatusCode, Duration), Error> {
    let mut req = client.request(method, path, body);
    req.headers_mut()
        .insert("content-type", "application/json".parse()?);
    let start = Instant::now();
    let reply = conn.send(req).await?;
    Ok((reply.status, start.elapsed()))
}

async fn populate(
    client: Client,
    namespace: String,
    count: usize,
    concurrency: usize,
    value_bytes: usize,
) -> Result<(), Error> {
    let conns = connections(&client, concurrency).await?;
    let mut first = handle(&conns, 0)?;
    ensure_namespace(&client, &mut first, &namespace).await?;
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let errors = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let value = "x".repeat(value_bytes);
    let start = Instant::now();
    let mut tasks = Vec::new();
    for worker in 0..concurrency {
        let mut conn = handle(&conns, worker)?;
        let (client, namespace, next, errors, value) = (
            client.clone(),
            namespace.clone(),
            next.clone(),
            errors.clone(),
            value.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let path = format!("/api/v1/namespaces/{namespace}/configmaps");
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= count {
                    break;
                }
                let body = configmap(
                    &namespace,
                    &format!("cm-{i}"),
                    &serde_json::json!({"value": value}),
                );
                let ok = matches!(
                    timed(&client, &mut conn, Method::POST, &path, &body).await,
                    Ok((StatusCode::CREATED | StatusCode::CONFLICT, _))
                );
                if !ok {
                    errors.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
        }));
    }
    for task in tasks {
        task.await?;
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{count} {secs:.3} {:.0} {}",
        count as f64 / secs,
        errors.load(std::sync::atomic::Ordering::Relaxed)
    );
    Ok(())
}

async fn update(
    client: Client,
    namespace: String,
    count: usize,
    concurrency: usize,
) -> Result<(), Error> {
    let conns = connections(&client, concurrency).await?;
    let mut first = handle(&conns, 0)?;
    ensure_namespace(&client, &mut first, &namespace).await?;
    let path = format!("/api/v1/namespaces/{namespace}/configmaps");
    for worker in 0..concurrency {
        let body = configmap(
            &namespace,
            &format!("cm-{worker}"),
            &serde_json::json!({"n": "0"}),
        );
        timed(&client, &mut first, Method::POST, &path, &body).await?;
    }
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(count)));
    let errors = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for worker in 0..concurrency {
        let mut conn = handle(&conns, worker)?;
        let (client, namespace, next, latencies, errors) = (
            client.clone(),
            namespace.clone(),
            next.clone(),
            latencies.clone(),
            errors.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let name = format!("cm-{worker}");
            let path = format!("/api/v1/namespaces/{namespace}/configmaps/{name}");
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= count {
                    break;
                }
                // No resourceVersion: an unconditional update, with new data every time.
                let body = configmap(&namespace, &name, &serde_json::json!({"n": i.to_string()}));
                match timed(&client, &mut conn, Method::PUT, &path, &body).await {
                    Ok((StatusCode::OK, latency)) => {
                        if let Ok(mut l) = latencies.lock() {
                            l.push(latency.as_secs_f64() * 1000.0);
                        }
                    }
                    _ => {
                        errors.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            }
        }));
    }
    for task in tasks {
        task.await?;
    }
    let secs = start.elapsed().as_secs_f64();
    let mut latencies = latencies.lock().map_err(|_| "poisoned")?.clone();
    latencies.sort_by(f64::total_cmp);
    println!(
        "{:.0} {:.2} {:.2} {}",
        latencies.len() as f64 / secs,
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        errors.load(std::sync::atomic::Ordering::Relaxed)
    );
    Ok(())
}

/// The collection's resourceVersion (watches start after it, so they see only our writes).
async fn list_resource_version(
    client: &Client,
    conn: &mut Conn,
    namespace: &str,
) -> Result<String, Error> {
    let reply = conn
        .send(client.request(
            Method::GET,
            &format!("/api/v1/namespaces/{namespace}/configmaps?limit=1"),
            "",
        ))
        .await?;
    let list: serde_json::Value = serde_json::from_str(&reply.body)?;
    list["metadata"]["resourceVersion"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("no resourceVersion in {}", reply.body).into())
}

async fn watch(
    client: Client,
    namespace: String,
    watchers: usize,
    writes: usize,
) -> Result<(), Error> {
    let conns = connections(&client, watchers + 1).await?;
    let mut first = handle(&conns, 0)?;
    ensure_namespace(&client, &mut first, &namespace).await?;
    let rv = list_resource_version(&client, &mut first, &namespace).await?;
    let path = format!("/api/v1/namespaces/{namespace}/configmaps?watch=1&resourceVersion={rv}");
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(watchers * writes)));
    let last_delivery = Arc::new(Mutex::new(Instant::now()));
    let mut streams = Vec::with_capacity(watchers);
    for worker in 0..watchers {
        let mut conn = handle(&conns, worker + 1)?;
        let response = conn
            .send_head(client.request(Method::GET, &path, ""))
            .await?;
        if response.status() != StatusCode::OK {
            return Err(format!("watch: {}", response.status()).into());
        }
        streams.push(response.into_body());
    }
    let mut tasks = Vec::with_capacity(watchers);
    for mut body in streams {
        let (latencies, last_delivery) = (latencies.clone(), last_delivery.clone());
        tasks.push(tokio::spawn(async move {
            let mut buffer = Vec::new();
            let mut seen = 0;
            let mut mine = Vec::with_capacity(writes);
            while seen < writes {
                let Some(Ok(frame)) = body.frame().await else {
                    break;
                };
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                buffer.extend_from_slice(&data);
                while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = buffer.drain(..=end).collect();
                    let Ok(event) = serde_json::from_slice::<serde_json::Value>(&line) else {
                        continue;
                    };
                    let sent = event["object"]["data"]["sent"]
                        .as_str()
                        .and_then(|s| s.parse::<u128>().ok());
                    if let Some(sent) = sent {
                        seen += 1;
                        mine.push(now_nanos().saturating_sub(sent) as f64 / 1e6);
                    }
                }
            }
            if let Ok(mut last) = last_delivery.lock() {
                *last = Instant::now();
            }
            if let Ok(mut all) = latencies.lock() {
                all.extend(mine);
            }
        }));
    }
    let start = Instant::now();
    let writers = 4.min(writes.max(1));
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut write_tasks = Vec::new();
    for worker in 0..writers {
        let mut conn = handle(&conns, worker)?;
        let (client, namespace, next) = (client.clone(), namespace.clone(), next.clone());
        write_tasks.push(tokio::spawn(async move {
            let path = format!("/api/v1/namespaces/{namespace}/configmaps");
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= writes {
                    break;
                }
                let body = configmap(
                    &namespace,
                    &format!("w-{i}"),
                    &serde_json::json!({"sent": now_nanos().to_string()}),
                );
                let _ = timed(&client, &mut conn, Method::POST, &path, &body).await;
            }
        }));
    }
    for task in write_tasks {
        task.await?;
    }
    let all = futures_join(tasks);
    let _ = tokio::time::timeout(WATCH_DEADLINE, all).await;
    let secs = last_delivery
        .lock()
        .map_err(|_| "poisoned")?
        .saturating_duration_since(start)
        .as_secs_f64();
    let mut latencies = latencies.lock().map_err(|_| "poisoned")?.clone();
    latencies.sort_by(f64::total_cmp);
    println!(
        "{} {} {secs:.3} {:.0} {:.2} {:.2}",
        latencies.len(),
        watchers * writes,
        latencies.len() as f64 / secs.max(1e-9),
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99)
    );
    Ok(())
}

async fn futures_join(tasks: Vec<tokio::task::JoinHandle<()>>) {
    for task in tasks {
        let _ = task.await;
    }
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [addr, ca, token, mode, namespace, n, m, rest @ ..] = args.as_slice() else {
        return Err(usage());
    };
    let addr: SocketAddr = addr.parse()?;
    let ca = std::fs::read_to_string(ca)?;
    let client = Client::new(addr, &ca, "127.0.0.1").with_bearer(token);
    let (n, m): (usize, usize) = (n.parse()?, m.parse()?);
    match mode.as_str() {
        "populate" => {
            let bytes = rest.first().map(|b| b.parse()).transpose()?.unwrap_or(64);
            populate(client, namespace.clone(), n, m.max(1), bytes).await
        }
        "update" => update(client, namespace.clone(), n, m.max(1)).await,
        "watch" => watch(client, namespace.clone(), n, m).await,
        _ => Err(usage()),
    }
}
