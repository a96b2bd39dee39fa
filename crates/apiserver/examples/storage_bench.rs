//! Storage benchmarks: raw redb, the embedded backend, raw etcd-client, the etcd backend, and
//! watch-cache fan-out. Prints Markdown tables.
//!
//! ```text
//! cargo run --release -p apiserver --example storage_bench [-- --ops 2000 --writers 1,16,64,256 --watch-secs 5 --watchers 1000,10000]
//! ```
//! Writes are measured at each `--writers` concurrency, every store at the same concurrency in
//! turn (so the ratios compare like with like, under the same machine load): raw redb (one
//! durable transaction per insert, the writers queueing on redb's write lock), the embedded
//! backend, raw etcd-client puts and the etcd backend. Each level writes `max(--ops, 4 x
//! writers)` objects, `--repeat` rounds (default 3) reporting the median. `--watchers 0` skips the fan-out rows. The etcd columns need `etcd` on
//! PATH (or `/usr/bin/etcd`); they are skipped without the `etcd` feature.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use apiserver::storage::backends::EmbeddedStorage;
use apiserver::storage::cacher::{Cacher, CacherConfig};
use apiserver::storage::{
    GetOptions, ListOptions, Object, ResourceVersionMatch, Storage, WatchEvent,
};
use bytes::Bytes;

fn obj(name: &str, extra: &str) -> Bytes {
    Bytes::from(format!(
        r#"{{"kind":"ConfigMap","apiVersion":"v1","metadata":{{"name":"{name}","namespace":"bench"}},"data":{{"k":"{extra}","pad":"{}"}}}}"#,
        "x".repeat(512)
    ))
}

fn rate(n: usize, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64()
}

fn row(what: &str, op: &str, value: String) {
    println!("| {what} | {op} | {value} |");
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// Inserts `ops` values, one durable transaction each, from `concurrency` threads (which
/// queue on redb's single write lock: raw redb has no group commit).
fn raw_redb(ops: usize, concurrency: usize) -> f64 {
    use redb::{Database, Durability, TableDefinition};
    const T: TableDefinition<&str, &[u8]> = TableDefinition::new("t");
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("raw.redb")).unwrap();
    let value = obj("x", "0");
    let next = AtomicU64::new(0);
    let start = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..concurrency {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                    if i >= ops {
                        break;
                    }
                    let mut txn = db.begin_write().unwrap();
                    txn.set_durability(Durability::Immediate).unwrap();
                    {
                        let mut t = txn.open_table(T).unwrap();
                        t.insert(format!("/registry/cm/bench/o{i}").as_str(), &value[..])
                            .unwrap();
                    }
                    txn.commit().unwrap();
                }
            });
        }
    });
    rate(ops, start.elapsed())
}

/// Creates `ops` objects with `concurrency` writers, then updates each once (each writer its
/// own keys, so updates never conflict); returns (creates/s, updates/s). With `cache` (a watch
/// cache over `s`), updates go through it, as the server's do, once it has seen every create.
async fn writes(
    s: Arc<dyn Storage>,
    cache: Option<Arc<Cacher>>,
    bucket: &str,
    ops: usize,
    concurrency: usize,
) -> (f64, f64) {
    let last_rev = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for t in 0..concurrency {
        let s = s.clone();
        let bucket = bucket.to_string();
        let last_rev = last_rev.clone();
        tasks.push(tokio::spawn(async move {
            for i in (t..ops).step_by(concurrency) {
                let name = format!("o{i}");
                let created = s
                    .create(&format!("/registry/{bucket}/bench/{name}"), obj(&name, "0"))
                    .await
                    .unwrap();
                last_rev.fetch_max(created.resource_version, Ordering::Relaxed);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let create = rate(ops, start.elapsed());
    let s = match cache {
        Some(cache) => {
            // Until the cache has every object (a list not older than the last create).
            cache
                .list(
                    &format!("/registry/{bucket}/"),
                    ListOptions {
                        resource_version: last_rev.load(Ordering::Relaxed).to_string(),
                        resource_version_match: ResourceVersionMatch::NotOlderThan,
                        recursive: true,
                        ..Default::default()
                    },
                )
                .await
                .unwrap();
            cache as Arc<dyn Storage>
        }
        None => s,
    };
    let start = Instant::now();
    let mut tasks = Vec::new();
    for t in 0..concurrency {
        let s = s.clone();
        let bucket = bucket.to_string();
        tasks.push(tokio::spawn(async move {
            for i in (t..ops).step_by(concurrency) {
                let key = format!("/registry/{bucket}/bench/o{i}");
                let mut f = |_: Option<&Object>| Ok(obj(&format!("o{i}"), "1"));
                s.guaranteed_update(&key, false, None, &mut f)
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    (create, rate(ops, start.elapsed()))
}

/// Gets and lists the `ops` objects of `bucket` (one reader).
async fn reads(label: &str, s: &dyn Storage, bucket: &str, ops: usize) {
    let start = Instant::now();
    for i in 0..ops {
        s.get(
            &format!("/registry/{bucket}/bench/o{i}"),
            GetOptions::default(),
        )
        .await
        .unwrap();
    }
    row(
        label,
        "get",
        format!("{:.0} ops/s", rate(ops, start.elapsed())),
    );
    let lists = 20;
    let start = Instant::now();
    for _ in 0..lists {
        let l = s
            .list(
                &format!("/registry/{bucket}/"),
                ListOptions {
                    recursive: true,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(l.items.len(), ops);
    }
    row(
        label,
        &format!("list {ops} objects"),
        format!(
            "{:.1} ms",
            start.elapsed().as_secs_f64() * 1000.0 / lists as f64
        ),
    );
}

fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

async fn fanout(watchers: usize, events_per_sec: u64, secs: u64) {
    let dir = tempfile::tempdir().unwrap();
    let s: Arc<dyn Storage> = Arc::new(EmbeddedStorage::open(dir.path()).unwrap());
    let cacher = Cacher::new(s, CacherConfig::new("/registry/"));
    let start_rev = cacher.current_revision().await.unwrap();
    // Wait for the cache to be ready (a watch at the current revision succeeds).
    let rss_before = rss_kib();
    let latencies = Arc::new(std::sync::Mutex::new(Vec::<u64>::new()));
    let ended = Arc::new(AtomicU64::new(0));
    let delivered = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    for i in 0..watchers {
        let mut w = cacher
            .watch(
                "/registry/fan/",
                ListOptions {
                    resource_version: start_rev.to_string(),
                    recursive: true,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        let latencies = latencies.clone();
        let ended = ended.clone();
        let delivered = delivered.clone();
        let sample = i % (watchers / 100).max(1) == 0;
        handles.push(tokio::spawn(async move {
            while let Some(ev) = w.next().await {
                if let WatchEvent::Added(o) = ev {
                    delivered.fetch_add(1, Ordering::Relaxed);
                    if sample {
                        let v: serde_json::Value = serde_json::from_slice(&o.value).unwrap();
                        let sent: u64 = v["data"]["k"].as_str().unwrap().parse().unwrap();
                        let lat = now_micros().saturating_sub(sent);
                        latencies.lock().unwrap().push(lat);
                    }
                }
            }
            ended.fetch_add(1, Ordering::Relaxed);
        }));
    }
    let rss_after = rss_kib();
    let total = events_per_sec * secs;
    let period = Duration::from_micros(1_000_000 / events_per_sec.max(1));
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let start = Instant::now();
    let mut writers = tokio::task::JoinSet::new();
    for i in 0..total {
        tick.tick().await;
        let c = cacher.clone();
        writers.spawn(async move {
            let name = format!("e{i}");
            c.create(
                &format!("/registry/fan/{name}"),
                obj(&name, &now_micros().to_string()),
            )
            .await
            .unwrap();
        });
        while writers.len() > 64 {
            writers.join_next().await;
        }
    }
    while writers.join_next().await.is_some() {}
    let write_time = start.elapsed();
    // Let deliveries drain (bounded).
    let deadline = Instant::now() + Duration::from_secs(10);
    while delivered.load(Ordering::Relaxed) + ended.load(Ordering::Relaxed) * total
        < total * watchers as u64
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut lat = latencies.lock().unwrap().clone();
    lat.sort_unstable();
    let p = |q: f64| -> f64 {
        if lat.is_empty() {
            return f64::NAN;
        }
        lat[((lat.len() - 1) as f64 * q) as usize] as f64 / 1000.0
    };
    let label = format!("watch cache, {watchers} watchers");
    row(
        &label,
        "events written",
        format!("{total} at {:.0}/s", rate(total as usize, write_time)),
    );
    row(
        &label,
        "delivery p50 / p99",
        format!("{:.1} ms / {:.1} ms", p(0.5), p(0.99)),
    );
    row(
        &label,
        "RSS per watcher",
        format!(
            "{:.1} KiB",
            rss_after.saturating_sub(rss_before) as f64 / watchers as f64
        ),
    );
    row(
        &label,
        "watchers ended as too slow",
        ended.load(Ordering::Relaxed).to_string(),
    );
    drop(cacher);
    for h in handles {
        h.abort();
    }
}

mod etcd_bench {
    use super::*;
    use std::process::{Child, Command, Stdio};

    pub struct Etcd {
        child: Child,
        _dir: tempfile::TempDir,
        pub url: String,
    }

    impl Drop for Etcd {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    fn port() -> u16 {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    }

    pub async fn start() -> Option<Etcd> {
        let bin = ["/usr/bin/etcd", "etcd"]
            .into_iter()
            .find(|b| Command::new(b).arg("--version").output().is_ok())?;
        let dir = tempfile::tempdir().unwrap();
        let (c, p) = (port(), port());
        let url = format!("http://127.0.0.1:{c}");
        let peer = format!("http://127.0.0.1:{p}");
        let child = Command::new(bin)
            .arg("--name=b")
            .arg(format!("--data-dir={}", dir.path().display()))
            .arg(format!("--listen-client-urls={url}"))
            .arg(format!("--advertise-client-urls={url}"))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster=b={peer}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let etcd = Etcd {
            child,
            _dir: dir,
            url,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(mut c) = etcd_client::Client::connect([etcd.url.clone()], None).await
                && c.get("/x", None).await.is_ok()
            {
                return Some(etcd);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        None
    }

    /// Puts `ops` values from `concurrency` tasks sharing one client (as the backend does).
    pub async fn raw_put(url: &str, ops: usize, concurrency: usize) -> f64 {
        let c = etcd_client::Client::connect([url], None).await.unwrap();
        let value = obj("x", "0");
        let start = Instant::now();
        let mut tasks = Vec::new();
        for t in 0..concurrency {
            let mut kv = c.kv_client();
            let value = value.clone();
            tasks.push(tokio::spawn(async move {
                for i in (t..ops).step_by(concurrency) {
                    kv.put(format!("/raw{concurrency}/o{i}"), value.to_vec(), None)
                        .await
                        .unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        rate(ops, start.elapsed())
    }

    /// Creates `ops` keys from `concurrency` tasks with the request the backend sends for a
    /// create (a txn: put if the key's mod revision is 0), through raw etcd-client.
    pub async fn raw_txn_create(url: &str, ops: usize, concurrency: usize) -> f64 {
        use etcd_client::{Compare, CompareOp, Txn, TxnOp};
        static RUN: AtomicU64 = AtomicU64::new(0);
        let run = RUN.fetch_add(1, Ordering::Relaxed);
        let c = etcd_client::Client::connect([url], None).await.unwrap();
        let value = obj("x", "0");
        let start = Instant::now();
        let mut tasks = Vec::new();
        for t in 0..concurrency {
            let mut kv = c.kv_client();
            let value = value.clone();
            tasks.push(tokio::spawn(async move {
                for i in (t..ops).step_by(concurrency) {
                    let key = format!("/rawtxn{run}/o{i}");
                    let txn = Txn::new()
                        .when([Compare::mod_revision(key.clone(), CompareOp::Equal, 0)])
                        .and_then([TxnOp::put(key, value.to_vec(), None)]);
                    assert!(kv.txn(txn).await.unwrap().succeeded());
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        rate(ops, start.elapsed())
    }

    /// What an update costs etcd at least: one compare-and-put on the key's known mod
    /// revision (the keys are created first, untimed).
    pub async fn raw_txn_update(url: &str, ops: usize, concurrency: usize) -> f64 {
        use etcd_client::{Compare, CompareOp, Txn, TxnOp};
        static RUN: AtomicU64 = AtomicU64::new(0);
        let run = RUN.fetch_add(1, Ordering::Relaxed);
        let c = etcd_client::Client::connect([url], None).await.unwrap();
        let mut kv = c.kv_client();
        let mut revs = Vec::with_capacity(ops);
        for i in 0..ops {
            let resp = kv
                .put(format!("/rawupd{run}/o{i}"), obj("x", "0").to_vec(), None)
                .await
                .unwrap();
            revs.push(resp.header().map(|h| h.revision()).unwrap_or(0));
        }
        let revs = Arc::new(revs);
        let value = obj("x", "1");
        let start = Instant::now();
        let mut tasks = Vec::new();
        for t in 0..concurrency {
            let mut kv = c.kv_client();
            let value = value.clone();
            let revs = revs.clone();
            tasks.push(tokio::spawn(async move {
                for i in (t..ops).step_by(concurrency) {
                    let key = format!("/rawupd{run}/o{i}");
                    let txn = Txn::new()
                        .when([Compare::mod_revision(
                            key.clone(),
                            CompareOp::Equal,
                            revs[i],
                        )])
                        .and_then([TxnOp::put(key, value.to_vec(), None)]);
                    assert!(kv.txn(txn).await.unwrap().succeeded());
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        rate(ops, start.elapsed())
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str, default: u64| -> u64 {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let ops = arg("--ops", 2000) as usize;
    let watch_secs = arg("--watch-secs", 5);
    let levels: Vec<usize> = args
        .iter()
        .position(|a| a == "--writers")
        .and_then(|i| args.get(i + 1))
        .map(|v| v.split(',').filter_map(|n| n.parse().ok()).collect())
        .unwrap_or_else(|| vec![1, 16, 64, 256]);
    let etcd = etcd_bench::start().await;
    println!("| storage | operation | result |");
    println!("|---|---|---|");
    if etcd.is_none() {
        row("etcd", "-", "etcd not found; skipped".into());
    }
    let repeat = arg("--repeat", 3).max(1) as usize;
    let mut table = Vec::new();
    for &c in &levels {
        let n = ops.max(4 * c);
        // Each store in turn, `repeat` rounds, the median of each column: the disk's fsync
        // latency on a shared machine drifts from second to second.
        let mut samples: Vec<[f64; 8]> = Vec::new();
        for round in 0..repeat {
            let raw = raw_redb(n, c);
            let dir = tempfile::tempdir().unwrap();
            let emb: Arc<dyn Storage> = Arc::new(EmbeddedStorage::open(dir.path()).unwrap());
            let (ec, eu) = writes(emb.clone(), None, "cm", n, c).await;
            if c == 1 && round == 0 {
                reads("embedded", emb.as_ref(), "cm", n).await;
            }
            drop(emb);
            #[allow(unused_mut)]
            let mut sample = [
                raw,
                ec,
                eu,
                f64::NAN,
                f64::NAN,
                f64::NAN,
                f64::NAN,
                f64::NAN,
            ];
            if let Some(etcd) = &etcd {
                use apiserver::storage::backends::{EtcdConfig, EtcdStorage};
                let raw_etcd = etcd_bench::raw_put(&etcd.url, n, c).await;
                let raw_txn = etcd_bench::raw_txn_create(&etcd.url, n, c).await;
                let s: Arc<dyn Storage> = Arc::new(
                    EtcdStorage::connect(EtcdConfig {
                        endpoints: vec![etcd.url.clone()],
                        ..Default::default()
                    })
                    .await
                    .unwrap(),
                );
                let bucket = format!("cm{c}r{round}");
                let cache = Arc::new(Cacher::new(
                    s.clone(),
                    CacherConfig::new(&format!("/registry/{bucket}/")),
                ));
                let (xc, xu) = writes(s.clone(), Some(cache), &bucket, n, c).await;
                if c == 1 && round == 0 {
                    reads("etcd backend", s.as_ref(), &bucket, n).await;
                }
                let raw_update = etcd_bench::raw_txn_update(&etcd.url, n, c).await;
                sample[3..].copy_from_slice(&[raw_etcd, xc, xu, raw_txn, raw_update]);
            }
            samples.push(sample);
        }
        let median = |i: usize| {
            let mut v: Vec<f64> = samples.iter().map(|s| s[i]).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let etcd_row =
            (!median(3).is_nan()).then(|| (median(3), median(4), median(5), median(6), median(7)));
        table.push((c, median(0), median(1), median(2), etcd_row));
    }
    let counts = args
        .iter()
        .position(|a| a == "--watchers")
        .and_then(|i| args.get(i + 1))
        .map(|v| v.split(',').filter_map(|n| n.parse().ok()).collect())
        .unwrap_or_else(|| vec![1000, 10000]);
    for watchers in counts.into_iter().filter(|w| *w > 0) {
        fanout(watchers, 1000, watch_secs).await;
    }
    println!();
    println!("Writes: median of {repeat} rounds, max(--ops, 4 x writers) objects per round.");
    println!();
    println!(
        "| writers | raw redb insert/s | embedded create/s | embedded update/s | embedded create vs raw redb | raw etcd-client put/s | raw etcd-client txn create/s | raw etcd-client txn update/s | etcd backend create/s | etcd backend update/s | etcd backend create vs raw put | etcd backend create vs raw txn | etcd backend update vs raw txn | embedded vs etcd backend (create) | embedded vs etcd backend (update) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (c, raw, ec, eu, etcd_row) in &table {
        let etcd_cols = match etcd_row {
            Some((re, xc, xu, rt, ru)) => format!(
                "{re:.0} | {rt:.0} | {ru:.0} | {xc:.0} | {xu:.0} | {:.0}% | {:.0}% | {:.0}% | {:.1}x | {:.1}x",
                xc / re * 100.0,
                xc / rt * 100.0,
                xu / ru * 100.0,
                ec / xc,
                eu / xu
            ),
            None => "- | - | - | - | - | - | - | - | - | -".into(),
        };
        println!(
            "| {c} | {raw:.0} | {ec:.0} | {eu:.0} | {:.0}% | {etcd_cols} |",
            ec / raw * 100.0
        );
    }
    drop(etcd);
}
