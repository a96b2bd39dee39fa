//! Graceful termination of the real process (upstream `RunWithContext`): the shutdown delay,
//! draining in both modes, `--shutdown-send-retry-after`, and the second signal.

mod common;

use std::time::{Duration, Instant};

use common::client::{Client, Proto};
use common::{ApiServer, DEADLINE};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A non-long-running request the test holds in flight: `PUT /debug/flags/v` whose one-byte
/// body is only sent on [`HeldRequest::release`], so the handler (inside the wait group that
/// graceful termination drains) waits exactly as long as the test wants.
struct HeldRequest {
    stream: tokio_rustls::client::TlsStream<tokio::net::TcpStream>,
}

impl HeldRequest {
    async fn open(client: &Client) -> HeldRequest {
        let mut stream = client.connect_tls(Proto::H1).await.unwrap();
        stream
            .write_all(
                b"PUT /debug/flags/v HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\n\
                  Content-Type: text/plain\r\nConnection: close\r\n\r\n",
            )
            .await
            .unwrap();
        stream.flush().await.unwrap();
        HeldRequest { stream }
    }

    /// Sends the body and returns the response's status code and the raw response. The body
    /// sets `-v=1`, the level the tests run at (the `[graceful-termination]` lines are V(1)).
    async fn release(mut self) -> (u16, String) {
        self.stream.write_all(b"1").await.unwrap();
        self.stream.flush().await.unwrap();
        let mut raw = Vec::new();
        let mut buf = [0u8; 4096];
        let read_all = async {
            loop {
                match self.stream.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => raw.extend_from_slice(&buf[..n]),
                }
            }
        };
        tokio::time::timeout(DEADLINE, read_all)
            .await
            .expect("held request answered in time");
        let raw = String::from_utf8_lossy(&raw).into_owned();
        let code = raw
            .strip_prefix("HTTP/1.1 ")
            .and_then(|rest| rest.get(..3))
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("not an HTTP response: {raw:?}"));
        (code, raw)
    }
}

/// The graceful-termination events in the log (upstream writes them at `-v=1`), in order.
fn events(server: &ApiServer) -> Vec<String> {
    server
        .stderr
        .snapshot()
        .iter()
        .filter_map(|l| {
            l.split("[graceful-termination] shutdown event name=")
                .nth(1)
                .or_else(|| {
                    l.split("[graceful-termination] pre-shutdown hooks completed name=")
                        .nth(1)
                })
        })
        .map(|name| name.trim().trim_matches('"').to_string())
        .collect()
}

fn assert_before(events: &[String], first: &str, then: &str) {
    let pos = |name: &str| {
        events
            .iter()
            .position(|e| e == name)
            .unwrap_or_else(|| panic!("no event {name} in {events:?}"))
    };
    assert!(
        pos(first) < pos(then),
        "{first} not before {then}: {events:?}"
    );
}

fn event_line(name: &str) -> String {
    format!("shutdown event name=\"{name}\"")
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_fails_readyz_keeps_healthz_during_the_delay_then_drains_open_requests_and_exits_0()
{
    // Long enough that the checks during the delay finish inside it on a loaded machine.
    let mut server = ApiServer::start(&["--shutdown-delay-duration=3s", "-v=1"]).await;
    let admin = server.admin_client();

    // A long-running request (profiles are) and a held non-long-running one, both open at
    // SIGTERM.
    let profile = {
        let admin = admin.clone();
        tokio::spawn(async move {
            admin
                .get(Proto::H1, "/debug/pprof/profile?seconds=4")
                .await
                .unwrap()
        })
    };
    let held = HeldRequest::open(&admin).await;

    server.sigterm();
    server
        .stderr
        .wait_for(&event_line("ShutdownInitiated"))
        .await;

    let readyz = admin.get(Proto::H1, "/readyz").await.unwrap();
    assert_eq!(readyz.status, 500, "{}", readyz.body);
    assert!(
        readyz.body.contains("[-]shutdown failed"),
        "{}",
        readyz.body
    );
    let healthz = admin.get(Proto::H2, "/healthz").await.unwrap();
    assert_eq!(
        (healthz.status.as_u16(), healthz.body.as_str()),
        (200, "ok")
    );
    let version = admin.get(Proto::H1, "/version").await.unwrap();
    assert_eq!(version.status, 200);
    assert!(
        server
            .stderr
            .find(&event_line("AfterShutdownDelayDuration"))
            .is_none(),
        "the checks above ran after the delay; raise --shutdown-delay-duration"
    );

    // After the delay the listener closes while the held request keeps the drain open.
    server
        .stderr
        .wait_for(&event_line("HTTPServerStoppedListening"))
        .await;
    assert!(
        tokio::net::TcpStream::connect(server.addr).await.is_err(),
        "new connections are refused once the server stopped listening"
    );
    assert!(
        server
            .stderr
            .find(&event_line("InFlightRequestsDrained"))
            .is_none(),
        "drained although a request is in flight: {:?}",
        events(&server)
    );

    let (code, raw) = held.release().await;
    assert_eq!(code, 200, "{raw}");
    let profile = tokio::time::timeout(DEADLINE, profile)
        .await
        .expect("profile finished in time")
        .unwrap();
    assert_eq!(profile.status, 200, "{}", profile.body);
    assert!(!profile.body.is_empty());

    let status = server.wait_exit_and_log("kube-apiserver stopped").await;
    assert_eq!(status.code(), Some(0), "{status}");
    let events = events(&server);
    for (first, then) in [
        ("ShutdownInitiated", "AfterShutdownDelayDuration"),
        ("ShutdownInitiated", "PreShutdownHooksStopped"),
        ("AfterShutdownDelayDuration", "NotAcceptingNewRequest"),
        ("PreShutdownHooksStopped", "NotAcceptingNewRequest"),
        ("NotAcceptingNewRequest", "HTTPServerStoppedListening"),
        ("HTTPServerStoppedListening", "InFlightRequestsDrained"),
    ] {
        assert_before(&events, first, then);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn shutdown_send_retry_after_answers_429_with_retry_after_5_while_draining() {
    let mut server = ApiServer::start(&[
        "--shutdown-send-retry-after",
        "--shutdown-delay-duration=1s",
        "-v=1",
    ])
    .await;
    let admin = server.admin_client();
    let held = HeldRequest::open(&admin).await;

    server.sigterm();
    server
        .stderr
        .wait_for(&event_line("NotAcceptingNewRequest"))
        .await;

    for proto in [Proto::H1, Proto::H2] {
        let reply = admin.get(proto, "/version").await.unwrap();
        assert_eq!(reply.status, 429, "{proto:?}: {}", reply.body);
        assert_eq!(reply.headers["retry-after"], "5", "{proto:?}");
        assert_eq!(
            reply.body, "The apiserver is shutting down, please try again later.\n",
            "{proto:?}"
        );
        if proto == Proto::H1 {
            assert_eq!(reply.headers["connection"], "close");
        }
    }
    // Health paths are exempt.
    let healthz = admin.get(Proto::H1, "/healthz").await.unwrap();
    assert_eq!(healthz.status, 200);
    let readyz = admin.get(Proto::H1, "/readyz").await.unwrap();
    assert_eq!(readyz.status, 500);
    assert!(
        server
            .stderr
            .find(&event_line("InFlightRequestsDrained"))
            .is_none(),
        "drained although a request is in flight: {:?}",
        events(&server)
    );

    let (code, raw) = held.release().await;
    assert_eq!(code, 200, "{raw}");
    let status = server.wait_exit_and_log("kube-apiserver stopped").await;
    assert_eq!(status.code(), Some(0), "{status}");
    let events = events(&server);
    assert_before(&events, "NotAcceptingNewRequest", "InFlightRequestsDrained");
    assert_before(
        &events,
        "InFlightRequestsDrained",
        "HTTPServerStoppedListening",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn second_sigterm_during_a_long_shutdown_delay_exits_at_once_with_code_1() {
    let mut server = ApiServer::start(&["--shutdown-delay-duration=10m"]).await;
    server.sigterm();
    server
        .stderr
        .wait_for("received a termination signal, shutting down gracefully")
        .await;
    let start = Instant::now();
    server.sigterm();
    let status = server.wait_exit().await;
    assert_eq!(status.code(), Some(1), "{status}");
    assert!(start.elapsed() < Duration::from_secs(30));
    server
        .stderr
        .wait_for("received a second termination signal, exiting")
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn graceful_termination_lines_are_upstreams_at_v1_and_not_shown_at_v0() {
    let mut quiet = ApiServer::start(&[]).await;
    quiet.sigterm();
    let status = quiet.wait_exit_and_log("kube-apiserver stopped").await;
    assert_eq!(status.code(), Some(0), "{status}");
    let lines = quiet.stderr.snapshot();
    assert!(
        !lines.iter().any(|l| l.contains("[graceful-termination]")),
        "V(1) lines at -v=0: {lines:?}"
    );

    let mut server = ApiServer::start(&["-v=1"]).await;
    server.sigterm();
    let status = server.wait_exit_and_log("kube-apiserver stopped").await;
    assert_eq!(status.code(), Some(0), "{status}");
    let lines = server.stderr.snapshot();
    let has = |text: &str| lines.iter().any(|l| l.contains(text));
    for expected in [
        "[graceful-termination] waiting for shutdown to be initiated",
        "[graceful-termination] shutdown event name=\"ShutdownInitiated\"",
        "[graceful-termination] shutdown event name=\"AfterShutdownDelayDuration\"",
        "[graceful-termination] pre-shutdown hooks completed name=\"PreShutdownHooksStopped\"",
        "[graceful-termination] shutdown event name=\"NotAcceptingNewRequest\"",
        "[graceful-termination] shutdown event name=\"HTTPServerStoppedListening\"",
        "[graceful-termination] in-flight non long-running request(s) have drained",
        "[graceful-termination] not going to wait for active watch request(s) to drain",
        "[graceful-termination] shutdown event name=\"InFlightRequestsDrained\"",
        "[graceful-termination] apiserver is exiting",
        "Stopped listening on 127.0.0.1:",
        "MuxAndDiscoveryComplete has all endpoints registered and discovery information is complete",
    ] {
        assert!(has(expected), "no {expected:?} in {lines:#?}");
    }
    // Not shutdown events, as upstream.
    for name in ["HasBeenReady", "MuxAndDiscoveryComplete"] {
        assert!(
            !has(&format!("shutdown event name=\"{name}\"")),
            "{name} logged as a shutdown event: {lines:#?}"
        );
    }
    // Nor is the PreShutdownHooksStopped line worded as one.
    assert!(!has("shutdown event name=\"PreShutdownHooksStopped\""));
}
