//! Graceful termination of a real server over TLS, HTTP/1.1 and HTTP/2 (upstream
//! `genericapiserver_graceful_termination_test.go`): what requests on new, reused and in-flight
//! connections get in each phase of both shutdown modes, the order of the lifecycle signals,
//! watch draining, and pre-shutdown hooks.

mod common;

use std::sync::Arc;
use std::time::Duration;

use apiserver::server::hooks::PreShutdownHookFn;
use apiserver::server::lifecycle::LifecycleSignals;
use apiserver::server::run::RunError;
use common::lifecycle::*;
use common::*;
use http::StatusCode;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const SLOW: &str = "/slow";
const SHUTTING_DOWN_BODY: &str = "The apiserver is shutting down, please try again later.\n";

/// Generous bound for anything that should happen "promptly" on a loaded machine.
const PROMPT: Duration = Duration::from_secs(20);

/// A pre-shutdown hook that waits for AfterShutdownDelayDuration, makes `calls` API calls over
/// loopback (reporting each status on `results`), then stays running until `release`.
fn loopback_calling_hook(
    signals: LifecycleSignals,
    loopback: Client,
    calls: usize,
    results: mpsc::UnboundedSender<Result<StatusCode, String>>,
    release: CancellationToken,
) -> PreShutdownHookFn {
    Arc::new(move || {
        let signals = signals.clone();
        let loopback = loopback.clone();
        let results = results.clone();
        let release = release.clone();
        Box::pin(async move {
            signals.after_shutdown_delay_duration.wait().await;
            for _ in 0..calls {
                let reply = loopback.get(Proto::H2, PODS).await;
                let _ = results.send(reply.map(|r| r.status).map_err(|e| e.to_string()));
            }
            release.cancelled().await;
            Ok(())
        })
    })
}

/// Everything a graceful-termination scenario installs and observes.
struct Scenario {
    server: TestServer,
    hook_results: mpsc::UnboundedReceiver<Result<StatusCode, String>>,
    release_hook: CancellationToken,
    slow_started: mpsc::UnboundedReceiver<()>,
}

/// A server with shutdown delay `delay`, the `/api/v1` route (watches), a `/slow` route released
/// by `release_slow`, and a pre-shutdown hook calling over loopback `calls` times.
async fn start_scenario(
    configure: impl FnOnce(&mut apiserver::server::Config) + 'static,
    release_slow: impl FnOnce(&LifecycleSignals) -> CancellationToken + 'static,
    calls: usize,
) -> Scenario {
    let (results_tx, hook_results) = mpsc::unbounded_channel();
    let (started_tx, slow_started) = mpsc::unbounded_channel();
    let release_hook = CancellationToken::new();
    let release = release_hook.clone();
    let server = TestServerBuilder::new()
        .configure(move |c, _| configure(c))
        .install_at(move |server, addr| {
            let signals = server.lifecycle_signals().clone();
            server
                .handler()
                .api_routes
                .register("/api/v1", api_v1_route(None));
            server
                .handler()
                .non_api_mux
                .handle(SLOW, slow_handler(started_tx, release_slow(&signals)));
            let loopback = loopback_client(addr, &server.config().loopback);
            server
                .add_pre_shutdown_hook(
                    "test-loopback-calls",
                    loopback_calling_hook(signals, loopback, calls, results_tx, release),
                )
                .unwrap();
        })
        .start()
        .await;
    server.wait_ready().await;
    Scenario {
        server,
        hook_results,
        release_hook,
        slow_started,
    }
}

/// Requests on a new connection of each protocol and on both reused connections answer 200.
async fn assert_served(client: &Client, h1: &mut Conn, h2: &mut Conn, phase: &str) {
    for proto in [Proto::H1, Proto::H2] {
        let reply = client.get(proto, PODS).await.unwrap();
        assert_eq!(
            reply.status,
            StatusCode::OK,
            "{phase}: new {proto:?} connection"
        );
    }
    for (name, conn) in [("h1", h1), ("h2", h2)] {
        let reply = get_on(client, conn, PODS).await.unwrap();
        assert_eq!(
            reply.status,
            StatusCode::OK,
            "{phase}: reused {name} connection"
        );
    }
}

async fn assert_readyz_reports_shutdown(client: &Client) {
    let reply = client.get(Proto::H1, "/readyz").await.unwrap();
    assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(
        reply.body.contains("[-]shutdown failed"),
        "readyz body: {}",
        reply.body
    );
}

/// Starts a slow request on `conn` and waits until its handler runs.
async fn start_slow(
    client: &Client,
    mut conn: Conn,
    started: &mut mpsc::UnboundedReceiver<()>,
) -> tokio::task::JoinHandle<std::io::Result<Reply>> {
    let client = client.clone();
    let request = tokio::spawn(async move { get_on(&client, &mut conn, SLOW).await });
    tokio::time::timeout(PROMPT, started.recv())
        .await
        .expect("slow request reached its handler")
        .expect("slow handler alive");
    request
}

async fn join_prompt<T>(task: tokio::task::JoinHandle<T>, what: &str) -> T {
    tokio::time::timeout(PROMPT, task)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish in time"))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_retry_after_serves_until_delay_and_hooks_end_then_refuses_connections_and_drains()
{
    let mut s = start_scenario(
        |c| {
            c.shutdown_delay_duration = Duration::from_secs(1);
            c.shutdown_watch_termination_grace_period = Duration::from_secs(2);
        },
        // In-flight requests outlive the listener, so the listener stops before they drain.
        |signals| signals.http_server_stopped_listening.token(),
        1,
    )
    .await;
    let client = s.server.admin_client();
    let mut h1 = client.connect(Proto::H1).await.unwrap();
    let mut h2 = client.connect(Proto::H2).await.unwrap();
    within(
        "serving before stop",
        assert_served(&client, &mut h1, &mut h2, "before stop"),
    )
    .await;
    let watch = Watch::open(&client, Proto::H2).await;

    s.server.stop.cancel();
    within(
        "shutdown_initiated",
        s.server.signals.shutdown_initiated.wait(),
    )
    .await;
    within("readyz", assert_readyz_reports_shutdown(&client)).await;
    within(
        "serving in the delay",
        assert_served(&client, &mut h1, &mut h2, "shutdown delay"),
    )
    .await;

    within(
        "after_shutdown_delay_duration",
        s.server.signals.after_shutdown_delay_duration.wait(),
    )
    .await;
    let hook_call = tokio::time::timeout(PROMPT, s.hook_results.recv())
        .await
        .expect("the hook called over loopback");
    assert_eq!(
        hook_call,
        Some(Ok(StatusCode::OK)),
        "pre-shutdown hook call"
    );
    // The hook is still running: everything is still served.
    assert!(!s.server.signals.not_accepting_new_requests.signaled());
    within(
        "serving while the hook runs",
        assert_served(&client, &mut h1, &mut h2, "pre-shutdown hook running"),
    )
    .await;

    // In flight when the server stops accepting: one on its own HTTP/1.1 connection, one on
    // an HTTP/2 connection whose GOAWAY is observed below.
    let slow_h1 = start_slow(
        &client,
        client.connect(Proto::H1).await.unwrap(),
        &mut s.slow_started,
    )
    .await;
    let h2_in_flight = client.connect(Proto::H2).await.unwrap();
    let mut h2_goaway = h2_in_flight.h2_handle().unwrap();
    let slow_h2 = start_slow(&client, h2_in_flight, &mut s.slow_started).await;

    s.release_hook.cancel();
    within(
        "not_accepting_new_requests",
        s.server.signals.not_accepting_new_requests.wait(),
    )
    .await;

    // HTTP/2 connections get GOAWAY: no new streams, while the in-flight stream goes on.
    wait_unusable(&mut h2_goaway, "GOAWAY on the HTTP/2 connection").await;
    assert!(
        within(
            "a request after GOAWAY",
            get_on(&client, &mut h2_goaway, PODS)
        )
        .await
        .is_err()
    );
    // Idle keep-alive connections are closed.
    wait_unusable(&mut h1, "the reused HTTP/1.1 connection to close").await;
    wait_unusable(&mut h2, "the reused HTTP/2 connection to close").await;
    within(
        "http_server_stopped_listening",
        s.server.signals.http_server_stopped_listening.wait(),
    )
    .await;
    for proto in [Proto::H1, Proto::H2] {
        let err = within(
            "connecting after the listener closed",
            client.connect(proto),
        )
        .await
        .err()
        .expect("connection refused");
        assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused, "{err}");
    }

    for (name, slow) in [("h1", slow_h1), ("h2", slow_h2)] {
        let reply = join_prompt(slow, "in-flight request").await.unwrap();
        assert_eq!(reply.status, StatusCode::OK, "in-flight {name} request");
        assert_eq!(reply.body, "done");
    }
    let rest = tokio::time::timeout(PROMPT, watch.end())
        .await
        .expect("the watch ended");
    assert_eq!(rest, Ok(String::new()), "the watch ends cleanly");

    s.server.join().await.unwrap();
    assert_eq!(
        shutdown_sequence(&s.server.recorder),
        [
            "ShutdownInitiated",
            "AfterShutdownDelayDuration",
            "PreShutdownHooksStopped",
            "NotAcceptingNewRequest",
            "HTTPServerStoppedListening",
            "InFlightRequestsDrained",
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_retry_after_answers_429_after_not_accepting_while_in_flight_requests_finish() {
    let release_slow = CancellationToken::new();
    let release = release_slow.clone();
    let mut s = start_scenario(
        |c| {
            c.shutdown_delay_duration = Duration::from_secs(1);
            c.shutdown_watch_termination_grace_period = Duration::from_secs(2);
            c.shutdown_send_retry_after = true;
        },
        move |_| release,
        1,
    )
    .await;
    let client = s.server.admin_client();
    let mut h1 = client.connect(Proto::H1).await.unwrap();
    let mut h2 = client.connect(Proto::H2).await.unwrap();
    within(
        "serving before stop",
        assert_served(&client, &mut h1, &mut h2, "before stop"),
    )
    .await;

    s.server.stop.cancel();
    within(
        "shutdown_initiated",
        s.server.signals.shutdown_initiated.wait(),
    )
    .await;
    within("readyz", assert_readyz_reports_shutdown(&client)).await;
    within(
        "serving in the delay",
        assert_served(&client, &mut h1, &mut h2, "shutdown delay"),
    )
    .await;
    within(
        "after_shutdown_delay_duration",
        s.server.signals.after_shutdown_delay_duration.wait(),
    )
    .await;
    let hook_call = tokio::time::timeout(PROMPT, s.hook_results.recv())
        .await
        .expect("the hook called over loopback");
    assert_eq!(
        hook_call,
        Some(Ok(StatusCode::OK)),
        "pre-shutdown hook call"
    );
    within(
        "serving while the hook runs",
        assert_served(&client, &mut h1, &mut h2, "pre-shutdown hook running"),
    )
    .await;

    let slow = start_slow(
        &client,
        client.connect(Proto::H1).await.unwrap(),
        &mut s.slow_started,
    )
    .await;
    s.release_hook.cancel();
    within(
        "not_accepting_new_requests",
        s.server.signals.not_accepting_new_requests.wait(),
    )
    .await;

    let assert_429 = |reply: Reply, what: &str| {
        assert_eq!(reply.status, StatusCode::TOO_MANY_REQUESTS, "{what}");
        assert_eq!(reply.headers["retry-after"], "5", "{what}");
        assert_eq!(reply.body, SHUTTING_DOWN_BODY, "{what}");
    };
    for proto in [Proto::H1, Proto::H2] {
        let reply = client.get(proto, PODS).await.unwrap();
        assert_429(reply, &format!("new {proto:?} connection"));
    }
    assert_429(get_on(&client, &mut h1, PODS).await.unwrap(), "reused h1");
    assert_429(get_on(&client, &mut h2, PODS).await.unwrap(), "reused h2");
    // Health endpoints are exempt and keep telling the truth.
    within("readyz", assert_readyz_reports_shutdown(&client)).await;
    // The listener stays open until the in-flight request drained.
    assert!(!s.server.signals.in_flight_requests_drained.signaled());
    assert!(!s.server.signals.http_server_stopped_listening.signaled());

    release_slow.cancel();
    let reply = join_prompt(slow, "in-flight request").await.unwrap();
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body, "done");

    s.server.join().await.unwrap();
    assert_eq!(
        shutdown_sequence(&s.server.recorder),
        [
            "ShutdownInitiated",
            "AfterShutdownDelayDuration",
            "PreShutdownHooksStopped",
            "NotAcceptingNewRequest",
            "InFlightRequestsDrained",
            "HTTPServerStoppedListening",
        ]
    );
}

async fn start_watch_server(grace: Duration, hold: Option<WatchHold>) -> TestServer {
    let server = TestServerBuilder::new()
        .configure(move |c, _| c.shutdown_watch_termination_grace_period = grace)
        .install(move |server| {
            server
                .handler()
                .api_routes
                .register("/api/v1", api_v1_route(hold));
        })
        .start()
        .await;
    server.wait_ready().await;
    server
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_watch_grace_period_in_flight_requests_drained_waits_for_watches() {
    let hold = WatchHold::default();
    // Far longer than the test needs: the drain must end because the watch ended.
    let mut server = start_watch_server(Duration::from_secs(60), Some(hold.clone())).await;
    let client = server.admin_client();
    let watches = [
        Watch::open(&client, Proto::H1).await,
        Watch::open(&client, Proto::H2).await,
    ];

    server.stop.cancel();
    tokio::time::timeout(PROMPT, hold.saw_shutdown.cancelled())
        .await
        .expect("the watch saw NotAcceptingNewRequest");
    assert!(server.signals.not_accepting_new_requests.signaled());
    assert!(
        !server.signals.in_flight_requests_drained.signaled(),
        "drained while a watch is still open"
    );
    hold.release.cancel();
    for watch in watches {
        let rest = tokio::time::timeout(PROMPT, watch.end()).await.unwrap();
        assert_eq!(rest, Ok(String::new()), "the watch ends cleanly");
    }
    server.join().await.unwrap();
    let names = shutdown_sequence(&server.recorder);
    assert!(names.contains(&"InFlightRequestsDrained"), "{names:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_watch_grace_period_watches_end_with_the_server_and_run_returns_promptly() {
    let mut server = start_watch_server(Duration::ZERO, None).await;
    let client = server.admin_client();
    let watches = [
        Watch::open(&client, Proto::H1).await,
        Watch::open(&client, Proto::H2).await,
    ];

    let started = tokio::time::Instant::now();
    server.stop.cancel();
    // The watches only end when the server stops, so draining must not wait for them.
    tokio::time::timeout(PROMPT, server.signals.in_flight_requests_drained.wait())
        .await
        .expect("InFlightRequestsDrained without waiting for watches");
    for watch in watches {
        let rest = tokio::time::timeout(PROMPT, watch.end()).await.unwrap();
        assert_eq!(rest, Ok(String::new()), "the watch ends cleanly");
    }
    let run = server.run.take().unwrap();
    tokio::time::timeout(PROMPT, run)
        .await
        .expect("run returned well before the 60 s request timeout")
        .unwrap()
        .unwrap();
    assert!(started.elapsed() < PROMPT);
}

async fn pre_shutdown_hook_calls_after_delay_succeed(retry_after: bool) {
    const CALLS: usize = 5;
    let mut s = start_scenario(
        move |c| {
            c.shutdown_delay_duration = Duration::from_millis(500);
            c.shutdown_send_retry_after = retry_after;
        },
        |_| CancellationToken::new(),
        CALLS,
    )
    .await;
    // The hook returns on its own once its calls are done.
    s.release_hook.cancel();
    s.server.shutdown().await.unwrap();
    let mut statuses = Vec::new();
    while let Ok(result) = s.hook_results.try_recv() {
        statuses.push(result);
    }
    assert_eq!(statuses, vec![Ok(StatusCode::OK); CALLS]);
    let names = shutdown_sequence(&s.server.recorder);
    assert_eq!(
        &names[..4],
        [
            "ShutdownInitiated",
            "AfterShutdownDelayDuration",
            "PreShutdownHooksStopped",
            "NotAcceptingNewRequest",
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pre_shutdown_hook_calls_over_loopback_after_the_delay_succeed_without_retry_after() {
    pre_shutdown_hook_calls_after_delay_succeed(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pre_shutdown_hook_calls_over_loopback_after_the_delay_succeed_with_retry_after() {
    pre_shutdown_hook_calls_after_delay_succeed(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_pre_shutdown_hook_makes_run_return_without_draining() {
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let release_slow = CancellationToken::new();
    let release = release_slow.clone();
    let mut server = TestServerBuilder::new()
        .install(move |server| {
            server
                .handler()
                .non_api_mux
                .handle(SLOW, slow_handler(started_tx, release));
            server
                .add_pre_shutdown_hook(
                    "broken",
                    Arc::new(|| Box::pin(async { Err("boom".into()) })),
                )
                .unwrap();
        })
        .start()
        .await;
    server.wait_ready().await;
    let client = server.admin_client();
    let slow = start_slow(
        &client,
        client.connect(Proto::H1).await.unwrap(),
        &mut started,
    )
    .await;

    // The in-flight request is held until after run returned: run must not wait for it.
    let result = server.shutdown().await;
    match result {
        Err(RunError::PreShutdownHooksFailed(errors)) => {
            assert_eq!(
                errors,
                vec!["PreShutdownHook \"broken\" failed: boom".to_string()]
            );
        }
        other => panic!("expected PreShutdownHooksFailed, got {other:?}"),
    }
    assert!(server.signals.pre_shutdown_hooks_stopped.signaled());
    assert!(!server.signals.in_flight_requests_drained.signaled());
    release_slow.cancel();
    let _ = join_prompt(slow, "the held request").await;
}

/// What a post-start hook's controller saw when its context ended.
#[derive(Debug)]
struct HookContextEnd {
    after_shutdown_delay: bool,
    not_accepting: bool,
    drained: bool,
    /// Ticks of the controller between ShutdownInitiated and NotAcceptingNewRequest.
    ticks_during_delay: usize,
}

/// A server whose post-start hook starts a controller that ticks until the hook's context
/// ends, then reports what had happened by then.
async fn start_with_ticking_controller(
    retry_after: bool,
) -> (TestServer, tokio::sync::oneshot::Receiver<HookContextEnd>) {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let tx = Arc::new(std::sync::Mutex::new(Some(tx)));
    let server = TestServerBuilder::new()
        .configure(move |c, _| {
            c.shutdown_delay_duration = Duration::from_secs(2);
            c.shutdown_send_retry_after = retry_after;
        })
        .install(move |server| {
            let signals = server.lifecycle_signals().clone();
            server
                .add_post_start_hook(
                    "ticking-controller",
                    Arc::new(move |ctx| {
                        let signals = signals.clone();
                        let tx = tx.clone();
                        Box::pin(async move {
                            tokio::spawn(async move {
                                let mut ticks_during_delay = 0;
                                let mut tick = tokio::time::interval(Duration::from_millis(20));
                                loop {
                                    tokio::select! {
                                        _ = ctx.stop.cancelled() => break,
                                        _ = tick.tick() => {
                                            if signals.shutdown_initiated.signaled()
                                                && !signals.not_accepting_new_requests.signaled()
                                            {
                                                ticks_during_delay += 1;
                                            }
                                        }
                                    }
                                }
                                let end = HookContextEnd {
                                    after_shutdown_delay: signals
                                        .after_shutdown_delay_duration
                                        .signaled(),
                                    not_accepting: signals.not_accepting_new_requests.signaled(),
                                    drained: signals.in_flight_requests_drained.signaled(),
                                    ticks_during_delay,
                                };
                                if let Some(tx) = tx.lock().unwrap().take() {
                                    let _ = tx.send(end);
                                }
                            });
                            Ok(())
                        })
                    }),
                )
                .unwrap();
        })
        .start()
        .await;
    server.wait_ready().await;
    (server, rx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_start_hook_context_ends_at_not_accepting_new_request_not_at_the_stop_signal() {
    let (mut server, ended) = start_with_ticking_controller(false).await;
    server.stop.cancel();
    let end = tokio::time::timeout(PROMPT, ended).await.unwrap().unwrap();
    assert!(end.after_shutdown_delay, "{end:?}");
    assert!(end.not_accepting, "{end:?}");
    assert!(end.ticks_during_delay > 0, "{end:?}");
    server.join().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_start_hook_context_ends_once_drained_with_retry_after() {
    let (mut server, ended) = start_with_ticking_controller(true).await;
    server.stop.cancel();
    let end = tokio::time::timeout(PROMPT, ended).await.unwrap().unwrap();
    assert!(end.after_shutdown_delay && end.not_accepting, "{end:?}");
    assert!(end.drained, "{end:?}");
    assert!(end.ticks_during_delay > 0, "{end:?}");
    server.join().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_start_hook_name_registered_twice_is_an_error_naming_the_first_registration() {
    let (tx, rx) = std::sync::mpsc::channel();
    let mut server = TestServerBuilder::new()
        .install(move |server| {
            let hook = || -> apiserver::server::hooks::PostStartHookFn {
                Arc::new(|_ctx| Box::pin(async { Ok(()) }))
            };
            server.add_post_start_hook("twice", hook()).unwrap();
            let first_line = line!() - 1;
            let err = server.add_post_start_hook("twice", hook()).unwrap_err();
            tx.send((err.to_string(), first_line)).unwrap();
        })
        .start()
        .await;
    let (err, first_line) = rx.recv().unwrap();
    assert!(
        err.starts_with("unable to add \"twice\" because it was already registered by: "),
        "{err}"
    );
    assert!(
        err.contains(&format!("graceful_termination.rs:{first_line}:")),
        "{err}"
    );
    server.shutdown().await.unwrap();
}
