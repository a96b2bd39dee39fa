//! etcd faults under the real binary and a real etcd: etcd unreachable at start (the server
//! waits for it, as upstream's blocking dial does, and gives up with exit 1 after the dial
//! timeout), etcd killed while serving and started again on the same data, and etcd frozen with
//! SIGSTOP: `/readyz`, `/livez` and `/healthz` report `[-]etcd failed`, requests get upstream's
//! errors within the request timeout, watches carry on (or end and resume from their last
//! resourceVersion) without a gap, the server recovers without a restart, and nothing
//! acknowledged is lost.

mod common;

use std::time::{Duration, Instant};

use common::client::{Client, Proto, Reply};
use common::etcd::EtcdServer;
use common::{ApiServer, DEADLINE};
use http::{Method, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

fn rv(object: &Value) -> u64 {
    object["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or_else(|| panic!("no resourceVersion in {object}"))
}

fn parse(reply: &Reply) -> Value {
    serde_json::from_str(&reply.body).unwrap_or_else(|e| panic!("{e}: {}", reply.body))
}

async fn send(client: &Client, method: Method, path: &str, body: Option<Value>) -> Reply {
    let mut req = client.request(
        method,
        path,
        &body.as_ref().map(Value::to_string).unwrap_or_default(),
    );
    req.headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    tokio::time::timeout(DEADLINE, client.send(Proto::H2, req))
        .await
        .expect("answered in time")
        .expect("request sent")
}

/// Creates configmap `name` and returns its resourceVersion (the write is acknowledged).
async fn create(client: &Client, name: &str) -> u64 {
    let reply = send(
        client,
        Method::POST,
        CONFIGMAPS,
        Some(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    rv(&parse(&reply))
}

/// A watch's events as (type, name, resourceVersion); the channel closes when the stream ends.
type Events = mpsc::UnboundedReceiver<(String, String, u64)>;

/// Opens a watch of the default namespace's configmaps from `from` on its own connection.
async fn watch(client: &Client, from: u64, extra: &str) -> Events {
    let mut conn = client.connect(Proto::H1).await.unwrap();
    let path =
        format!("{CONFIGMAPS}?watch=1&allowWatchBookmarks=true&resourceVersion={from}{extra}");
    let response = conn
        .send_head(client.request(Method::GET, &path, ""))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK, "watch from {from}");
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let _conn = conn;
        let mut body = response.into_body();
        let mut buffer = Vec::new();
        while let Some(Ok(frame)) = body.frame().await {
            let Ok(data) = frame.into_data() else {
                continue;
            };
            buffer.extend_from_slice(&data);
            while let Some(end) = buffer.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = buffer.drain(..=end).collect();
                let event: Value = serde_json::from_slice(&line).unwrap();
                let kind = event["type"].as_str().unwrap_or("").to_string();
                let object = &event["object"];
                let name = object["metadata"]["name"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                let rv = object["metadata"]["resourceVersion"]
                    .as_str()
                    .and_then(|rv| rv.parse().ok())
                    .unwrap_or(0);
                if tx.send((kind, name, rv)).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

/// Reads `events` until it has seen an ADDED or MODIFIED event at `until`, checking that no
/// event comes twice or out of order; returns the (name, resourceVersion) pairs seen and the
/// last resourceVersion (bookmarks included). `None` when the stream ended first.
async fn read_until(
    events: &mut Events,
    after: u64,
    until: u64,
) -> (Vec<(String, u64)>, u64, bool) {
    let mut seen = Vec::new();
    let mut last = after;
    while last < until {
        match tokio::time::timeout(DEADLINE, events.recv())
            .await
            .expect("watch event in time")
        {
            Some((kind, name, rv)) => match kind.as_str() {
                "BOOKMARK" => last = last.max(rv),
                "ADDED" | "MODIFIED" | "DELETED" => {
                    assert!(rv > last, "{kind} {name} at {rv} after {last}");
                    last = rv;
                    seen.push((name, rv));
                }
                other => panic!("unexpected watch event {other} {name}"),
            },
            None => return (seen, last, false),
        }
    }
    (seen, last, true)
}

/// Polls `path` until its answer satisfies `check`.
async fn wait_for(
    client: &Client,
    path: &str,
    what: &str,
    check: impl Fn(&Reply) -> bool,
) -> Reply {
    let start = Instant::now();
    loop {
        if let Ok(reply) = client.get(Proto::H1, path).await
            && check(&reply)
        {
            return reply;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "{what}: not within {DEADLINE:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until `/readyz`, `/livez` and `/healthz` all fail with `[-]etcd failed` (upstream's
/// text without `verbose`: the reason is withheld).
async fn wait_etcd_reported_failing(client: &Client) {
    for path in ["/readyz", "/livez", "/healthz"] {
        let reply = wait_for(client, path, &format!("{path} reporting etcd"), |r| {
            r.status == StatusCode::INTERNAL_SERVER_ERROR && r.body.contains("[-]etcd failed")
        })
        .await;
        assert!(
            reply.body.contains("[-]etcd failed: reason withheld\n"),
            "{path}: {}",
            reply.body
        );
        let check = path.trim_start_matches('/');
        assert!(
            reply.body.ends_with(&format!("{check} check failed\n")),
            "{path}: {}",
            reply.body
        );
    }
    let verbose = client.get(Proto::H1, "/readyz?verbose").await.unwrap();
    assert!(verbose.body.contains("[-]etcd failed"), "{}", verbose.body);
    assert!(verbose.body.contains("[+]ping ok"), "{}", verbose.body);
}

async fn wait_ready_again(client: &Client) {
    for path in ["/readyz", "/livez", "/healthz"] {
        wait_for(client, path, &format!("{path} ok again"), |r| {
            r.status == StatusCode::OK
        })
        .await;
    }
}

/// Asserts a request failed the way upstream's registry reports an unreachable storage:
/// 500 `ServerTimeout` with `Retry-After: 2`.
fn assert_server_timeout(reply: &Reply, verb: &str) {
    assert_eq!(
        reply.status,
        StatusCode::INTERNAL_SERVER_ERROR,
        "{}",
        reply.body
    );
    let status = parse(reply);
    assert_eq!(status["reason"], "ServerTimeout", "{status}");
    assert_eq!(
        status["message"],
        format!(
            "The {verb} operation against configmaps could not be completed at this time, please try again."
        ),
        "{status}"
    );
    assert_eq!(status["details"]["retryAfterSeconds"], 2, "{status}");
    assert_eq!(reply.headers["retry-after"], "2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_killed_while_serving_fails_health_answers_server_timeouts_and_recovers_with_no_acknowledged_write_or_event_lost()
 {
    let mut etcd = EtcdServer::start().await;
    let server = ApiServer::start(&[&format!("--etcd-servers={}", etcd.url())]).await;
    let admin = server.admin_client();
    let mut acked = vec![];
    for name in ["before-a", "before-b"] {
        acked.push((name.to_string(), create(&admin, name).await));
    }
    let from = acked[1].1;
    // One watch open through the whole outage, one that ends (timeoutSeconds) while etcd is down.
    let mut through = watch(&admin, from, "").await;
    let mut short = watch(&admin, from, "&timeoutSeconds=3").await;

    etcd.stop();
    wait_etcd_reported_failing(&admin).await;

    let started = Instant::now();
    let reply = send(&admin, Method::GET, &format!("{CONFIGMAPS}/before-a"), None).await;
    assert_server_timeout(&reply, "get");
    let reply = send(
        &admin,
        Method::POST,
        CONFIGMAPS,
        Some(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "during"}})),
    )
    .await;
    assert_server_timeout(&reply, "create");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "answers took {:?}",
        started.elapsed()
    );

    // The short watch ends; resumed from its last resourceVersion while etcd is still down, it
    // is served (from the watch cache).
    let (seen, last, open) = read_until(&mut short, from, u64::MAX).await;
    assert!(!open && seen.is_empty(), "{seen:?}");
    let mut resumed = watch(&admin, last, "").await;

    etcd.start_again().await;
    wait_ready_again(&admin).await;
    let pid = server.pid();
    let after = create(&admin, "after").await;
    acked.push(("after".to_string(), after));
    assert_eq!(server.pid(), pid, "recovered without a restart");

    for (which, events) in [("open", &mut through), ("resumed", &mut resumed)] {
        let (seen, _, _) = read_until(events, from, after).await;
        assert_eq!(seen, vec![("after".to_string(), after)], "{which} watch");
    }
    for (name, rv) in &acked {
        let reply = send(&admin, Method::GET, &format!("{CONFIGMAPS}/{name}"), None).await;
        assert_eq!(reply.status, StatusCode::OK, "{name}: {}", reply.body);
        assert_eq!(self::rv(&parse(&reply)), *rv, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_frozen_with_sigstop_answers_within_the_request_timeout_and_recovers_on_sigcont() {
    let etcd = EtcdServer::start().await;
    let server = ApiServer::start(&[
        &format!("--etcd-servers={}", etcd.url()),
        "--request-timeout=4s",
    ])
    .await;
    let admin = server.admin_client();
    let first = create(&admin, "before").await;
    let mut through = watch(&admin, first, "").await;

    let etcd_pid = i32::try_from(etcd.pid().unwrap()).unwrap();
    // SAFETY: kill(2) on the pid of the etcd child this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(etcd_pid, libc::SIGSTOP) }, 0);
    let resume = scopeguard(etcd_pid);

    wait_etcd_reported_failing(&admin).await;
    let started = Instant::now();
    let reply = send(&admin, Method::GET, &format!("{CONFIGMAPS}/before"), None).await;
    let took = started.elapsed();
    assert_eq!(reply.status, StatusCode::GATEWAY_TIMEOUT, "{}", reply.body);
    let status = parse(&reply);
    assert_eq!(status["reason"], "Timeout", "{status}");
    assert_eq!(
        status["message"],
        // Upstream's timeout filter (WithTimeoutForNonLongRunningRequests) answers first.
        "Timeout: request did not complete within the allotted timeout",
        "{status}"
    );
    assert!(took < Duration::from_secs(15), "answered after {took:?}");

    drop(resume);
    wait_ready_again(&admin).await;
    let after = create(&admin, "after").await;
    let (seen, _, _) = read_until(&mut through, first, after).await;
    assert_eq!(seen, vec![("after".to_string(), after)]);
    let reply = send(&admin, Method::GET, &format!("{CONFIGMAPS}/before"), None).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(rv(&parse(&reply)), first);
}

/// Sends SIGCONT to `pid` when dropped (also when the test fails), so etcd is never left
/// stopped.
fn scopeguard(pid: i32) -> impl Drop {
    struct Cont(i32);
    impl Drop for Cont {
        fn drop(&mut self) {
            // SAFETY: kill(2) on the pid of the etcd child the test started.
            unsafe { libc::kill(self.0, libc::SIGCONT) };
        }
    }
    Cont(pid)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_unreachable_at_start_is_waited_for_and_the_server_starts_once_it_answers() {
    let mut etcd = EtcdServer::start().await;
    etcd.stop();
    let mut server = ApiServer::builder()
        .args([format!("--etcd-servers={}", etcd.url())])
        .no_serving_wait()
        .start()
        .await;
    server.stderr.wait_for("waiting for etcd").await;
    assert!(server.stderr.find("Serving securely on").is_none());
    etcd.start_again().await;
    server.addr = server.wait_serving().await;
    server.wait_ready().await;
    let admin = server.admin_client();
    create(&admin, "started").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_unreachable_at_start_for_the_whole_dial_timeout_exits_1() {
    let mut etcd = EtcdServer::start().await;
    etcd.stop();
    let started = Instant::now();
    let mut server = ApiServer::builder()
        .args([format!("--etcd-servers={}", etcd.url())])
        .no_serving_wait()
        .start()
        .await;
    let status = server.wait_exit_and_log("context deadline exceeded").await;
    assert_eq!(status.code(), Some(1), "{status}");
    assert!(
        started.elapsed() >= Duration::from_secs(20),
        "gave up after {:?}",
        started.elapsed()
    );
    assert!(server.stderr.find("Serving securely on").is_none());
    let line = server.stderr.find("context deadline exceeded").unwrap();
    assert!(line.starts_with("Error: "), "{line}");
}
