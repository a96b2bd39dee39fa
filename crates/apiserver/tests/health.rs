//! Black-box tests of /healthz, /livez and /readyz (spec §2) through the full handler chain
//! over TLS, on HTTP/1.1 and HTTP/2.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use apiserver::server::healthz::named_check;
use apiserver::server::hooks::{PostStartHookFn, PreShutdownHookFn};
use common::*;
use http::StatusCode;
use tokio_util::sync::CancellationToken;

const DEADLINE: Duration = Duration::from_secs(30);

/// The default checks of every registry, as `[+]<name> ok` lines, in registration order.
const DEFAULT_LINES: &str = "[+]ping ok\n[+]log ok\n[+]poststarthook/max-in-flight-filter ok\n";

fn assert_plain_ok(reply: &Reply) {
    assert_eq!(reply.headers["content-type"], "text/plain; charset=utf-8");
    assert_eq!(reply.headers["x-content-type-options"], "nosniff");
}

async fn get(client: &Client, proto: Proto, path: &str) -> Reply {
    client.get(proto, path).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_root_table_is_byte_exact_over_h1_and_h2() {
    let mut server = TestServerBuilder::new().start().await;
    server.wait_ready().await;
    let client = server.client();
    for proto in [Proto::H1, Proto::H2] {
        let reply = get(&client, proto, "/healthz").await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(reply.body, "ok");
        assert_plain_ok(&reply);

        let reply = get(&client, proto, "/healthz?verbose").await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(reply.body, format!("{DEFAULT_LINES}healthz check passed\n"));
        assert_plain_ok(&reply);

        let reply = get(&client, proto, "/healthz?verbose=true&exclude=log").await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(
            reply.body,
            "[+]ping ok\n[+]log excluded: ok\n[+]poststarthook/max-in-flight-filter ok\nhealthz check passed\n"
        );

        // Unknown exclusions only show up in verbose output.
        let reply = get(&client, proto, "/healthz?exclude=dontexist").await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(reply.body, "ok");

        let reply = get(
            &client,
            proto,
            "/healthz?verbose&exclude=dontexist&exclude=alsonot",
        )
        .await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(
            reply.body,
            format!(
                "{DEFAULT_LINES}warn: some health checks cannot be excluded: no matches for \"alsonot\",\"dontexist\"\nhealthz check passed\n"
            )
        );
    }
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_check_gives_500_with_reason_withheld_and_individual_path_discloses_error() {
    let mut server = TestServerBuilder::new()
        .install(|s| {
            s.add_health_checks(vec![named_check("bad", |_| {
                Err("this will fail".to_string())
            })])
            .unwrap();
        })
        .start()
        .await;
    let client = server.client();
    for proto in [Proto::H1, Proto::H2] {
        for (root, name) in [
            ("/healthz", "healthz"),
            ("/livez", "livez"),
            ("/readyz", "readyz"),
        ] {
            let shutdown = if name == "readyz" {
                "[+]shutdown ok\n"
            } else {
                ""
            };
            // Failures are always verbose, `?verbose` or not.
            for query in ["", "?verbose"] {
                let reply = get(&client, proto, &format!("{root}{query}")).await;
                assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR, "{root}");
                assert_eq!(
                    reply.body,
                    format!(
                        "{DEFAULT_LINES}[-]bad failed: reason withheld\n{shutdown}{name} check failed\n"
                    )
                );
                assert_plain_ok(&reply);
            }

            let reply = get(&client, proto, &format!("{root}?exclude=bad")).await;
            assert_eq!(reply.status, StatusCode::OK);
            assert_eq!(reply.body, "ok");

            let reply = get(&client, proto, &format!("{root}?verbose&exclude=bad")).await;
            assert_eq!(reply.status, StatusCode::OK);
            assert_eq!(
                reply.body,
                format!("{DEFAULT_LINES}[+]bad excluded: ok\n{shutdown}{name} check passed\n")
            );

            // Individual check paths disclose the error and ignore exclude/verbose.
            let reply = get(&client, proto, &format!("{root}/bad?exclude=bad")).await;
            assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR);
            assert_eq!(reply.body, "internal server error: this will fail\n");
            assert_plain_ok(&reply);

            let reply = get(&client, proto, &format!("{root}/ping?verbose")).await;
            assert_eq!(reply.status, StatusCode::OK);
            assert_eq!(reply.body, "ok");
        }
    }
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_shutdown_check_fails_once_shutdown_initiated_while_livez_stays_ok() {
    // A pre-shutdown hook held open keeps the server serving after shutdown started.
    let release = CancellationToken::new();
    let hook_release = release.clone();
    let hook: PreShutdownHookFn = Arc::new(move || {
        let release = hook_release.clone();
        Box::pin(async move {
            release.cancelled().await;
            Ok(())
        })
    });
    let mut server = TestServerBuilder::new()
        .install(move |s| s.add_pre_shutdown_hook("hold", hook).unwrap())
        .start()
        .await;
    server.wait_ready().await;
    let client = server.client();
    let reply = get(&client, Proto::H1, "/readyz?verbose").await;
    assert_eq!(
        reply.body,
        format!("{DEFAULT_LINES}[+]shutdown ok\nreadyz check passed\n")
    );
    let reply = get(&client, Proto::H2, "/readyz/shutdown").await;
    assert_eq!((reply.status, reply.body.as_str()), (StatusCode::OK, "ok"));

    server.stop.cancel();
    eventually(DEADLINE, "/readyz to fail", || {
        let client = client.clone();
        async move {
            matches!(client.get(Proto::H1, "/readyz").await,
                Ok(r) if r.status == StatusCode::INTERNAL_SERVER_ERROR)
        }
    })
    .await;
    for proto in [Proto::H1, Proto::H2] {
        let reply = get(&client, proto, "/readyz").await;
        assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            reply.body,
            format!("{DEFAULT_LINES}[-]shutdown failed: reason withheld\nreadyz check failed\n")
        );
        let reply = get(&client, proto, "/readyz/shutdown").await;
        assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            reply.body,
            "internal server error: process is shutting down\n"
        );
        let reply = get(&client, proto, "/livez").await;
        assert_eq!((reply.status, reply.body.as_str()), (StatusCode::OK, "ok"));
        let reply = get(&client, proto, "/healthz").await;
        assert_eq!((reply.status, reply.body.as_str()), (StatusCode::OK, "ok"));
    }
    release.cancel();
    server.join().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfinished_post_start_hook_passes_livez_during_grace_period_then_fails() {
    const GRACE: Duration = Duration::from_secs(3);
    // A hook that only finishes when the server stops.
    let hook: PostStartHookFn = Arc::new(|ctx| {
        Box::pin(async move {
            ctx.stop.cancelled().await;
            Ok(())
        })
    });
    let before_start = Instant::now();
    let mut server = TestServerBuilder::new()
        .configure(|c, _| c.livez_grace_period = GRACE)
        .install(move |s| s.add_post_start_hook("hang", hook).unwrap())
        .start()
        .await;
    let client = server.client();

    // The check is registered after `before_start`, so an answer that arrived within the
    // grace period of `before_start` was computed within the check's grace period.
    let reply = get(&client, Proto::H1, "/livez/poststarthook/hang").await;
    if before_start.elapsed() < GRACE {
        assert_eq!((reply.status, reply.body.as_str()), (StatusCode::OK, "ok"));
    } else {
        eprintln!("server start took longer than the grace period; skipping the early check");
    }
    // healthz and readyz have no grace period.
    let reply = get(&client, Proto::H2, "/healthz/poststarthook/hang").await;
    assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(reply.body, "internal server error: not finished\n");
    let reply = get(&client, Proto::H2, "/readyz").await;
    assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(
        reply
            .body
            .contains("[-]poststarthook/hang failed: reason withheld\n"),
        "{}",
        reply.body
    );

    eventually(DEADLINE, "/livez to fail after the grace period", || {
        let client = client.clone();
        async move {
            matches!(client.get(Proto::H1, "/livez").await,
                Ok(r) if r.status == StatusCode::INTERNAL_SERVER_ERROR)
        }
    })
    .await;
    assert!(before_start.elapsed() >= GRACE);
    for proto in [Proto::H1, Proto::H2] {
        let reply = get(&client, proto, "/livez").await;
        assert_eq!(
            reply.body,
            format!(
                "{DEFAULT_LINES}[-]poststarthook/hang failed: reason withheld\nlivez check failed\n"
            )
        );
        let reply = get(&client, proto, "/livez/poststarthook/hang").await;
        assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(reply.body, "internal server error: not finished\n");
    }
    server.shutdown().await.unwrap();
}
