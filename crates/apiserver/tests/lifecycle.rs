//! The server life cycle outside graceful termination, against a real server over TLS:
//! MuxAndDiscoveryComplete and the not-found handler, post-start hooks, and delegation
//! (upstream `TestMuxAndDiscoveryComplete`, `TestNewWithDelegate` and the hook tests).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use apiserver::authz::builtin::AlwaysAllow;
use apiserver::authz::{Attributes, AuthorizeResult, Authorizer};
use apiserver::body::with_content_type;
use apiserver::filters::service_fn;
use apiserver::server::healthz::named_check;
use apiserver::server::hooks::PostStartHookFn;
use apiserver::server::lifecycle::Signal;
use apiserver::server::routes::notfound::not_found_handler;
use apiserver::server::run::RunError;
use apiserver::server::{Config, DelegationTarget, EmptyDelegate, GenericApiServer};
use common::lifecycle::*;
use common::*;
use http::StatusCode;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const PROMPT: Duration = Duration::from_secs(20);

const MUX_INCOMPLETE_BODY: &str = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"the request has been made before all known HTTP paths have been installed, please try again\",\"reason\":\"ServiceUnavailable\",\"details\":{\"retryAfterSeconds\":5},\"code\":503}\n";

async fn assert_not_found_before_mux_complete(client: &Client, proto: Proto) {
    let reply = client.get(proto, "/no/such/path").await.unwrap();
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE, "{proto:?}");
    assert_eq!(reply.headers["retry-after"], "5");
    assert_eq!(reply.body, MUX_INCOMPLETE_BODY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mux_and_discovery_complete_fires_after_every_registered_signal_and_ends_the_503s() {
    let first = Signal::new("first");
    let second = Signal::new("second");
    let (a, b) = (first.clone(), second.clone());
    let mut server = TestServerBuilder::new()
        .delegate(Arc::new(EmptyDelegate::with_handler(not_found_handler())))
        .install(move |server| {
            server
                .register_mux_and_discovery_complete_signal("first", a)
                .unwrap();
            server
                .register_mux_and_discovery_complete_signal("second", b)
                .unwrap();
            assert!(
                server
                    .register_mux_and_discovery_complete_signal("first", Signal::new("again"))
                    .is_err(),
                "duplicate signal names are refused"
            );
        })
        .start()
        .await;
    let client = server.admin_client();
    let complete = server.signals.mux_and_discovery_complete.clone();

    assert_not_found_before_mux_complete(&client, Proto::H1).await;
    // The later one alone is not enough.
    second.fire();
    assert_not_found_before_mux_complete(&client, Proto::H2).await;
    assert!(!complete.signaled(), "complete with only one signal fired");

    first.fire();
    tokio::time::timeout(PROMPT, complete.wait())
        .await
        .expect("MuxAndDiscoveryComplete after both signals");
    for proto in [Proto::H1, Proto::H2] {
        let reply = client.get(proto, "/no/such/path").await.unwrap();
        assert_eq!(reply.status, StatusCode::NOT_FOUND);
        assert_eq!(reply.body, "404 page not found\n");
    }
    server.shutdown().await.unwrap();
}

/// A post-start hook that waits for `release`, then returns `result`.
fn held_hook(release: CancellationToken, result: Result<(), String>) -> PostStartHookFn {
    Arc::new(move |_ctx| {
        let release = release.clone();
        let result = result.clone();
        Box::pin(async move {
            release.cancelled().await;
            result
        })
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_start_hook_check_fails_until_the_hook_finishes() {
    let release = CancellationToken::new();
    let hook = held_hook(release.clone(), Ok(()));
    let mut server = TestServerBuilder::new()
        .install(move |server| server.add_post_start_hook("x", hook).unwrap())
        .start()
        .await;
    let client = server.admin_client();
    for path in ["/healthz?verbose", "/readyz?verbose"] {
        let reply = client.get(Proto::H1, path).await.unwrap();
        assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR, "{path}");
        assert!(
            reply
                .body
                .contains("[-]poststarthook/x failed: reason withheld\n"),
            "{path}: {}",
            reply.body
        );
    }
    let reply = client
        .get(Proto::H2, "/healthz/poststarthook/x")
        .await
        .unwrap();
    assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(reply.body, "internal server error: not finished\n");

    release.cancel();
    eventually(PROMPT, "poststarthook/x to pass", || {
        let client = client.clone();
        async move {
            let reply = client.get(Proto::H1, "/healthz?verbose").await.unwrap();
            reply.status == StatusCode::OK && reply.body.contains("[+]poststarthook/x ok\n")
        }
    })
    .await;
    server.wait_ready().await;
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_post_start_hook_makes_run_fail() {
    let fail = CancellationToken::new();
    let hook = held_hook(fail.clone(), Err("broken".to_string()));
    let mut server = TestServerBuilder::new()
        .install(move |server| server.add_post_start_hook("x", hook).unwrap())
        .start()
        .await;
    fail.cancel();
    match server.join().await {
        Err(RunError::PostStartHookFailed(message)) => {
            assert_eq!(message, "PostStartHook \"x\" failed: broken");
        }
        other => panic!("expected PostStartHookFailed, got {other:?}"),
    }
    // A fatal error ends serving too (upstream exits the process).
    let client = server.client();
    eventually(
        PROMPT,
        "the listener to close after the fatal error",
        || {
            let client = client.clone();
            async move { client.connect(Proto::H1).await.is_err() }
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_start_hook_loopback_config_authenticates_a_real_request() {
    let (results_tx, mut results) = mpsc::unbounded_channel();
    let hook: PostStartHookFn = Arc::new(move |ctx| {
        let results = results_tx.clone();
        Box::pin(async move {
            let loopback = client_from_loopback(&ctx.loopback);
            let with_token = loopback.get(Proto::H2, PODS).await.map(|r| r.status);
            let mut anonymous = loopback.clone();
            anonymous.bearer = None;
            let without_token = anonymous.get(Proto::H1, PODS).await.map(|r| r.status);
            let _ = results.send((
                ctx.loopback.host.clone(),
                with_token.map_err(|e| e.to_string()),
                without_token.map_err(|e| e.to_string()),
            ));
            Ok(())
        })
    });
    let mut server = TestServerBuilder::new()
        .anonymous(false)
        .install(move |server| {
            server
                .handler()
                .api_routes
                .register("/api/v1", api_v1_route(None));
            server.add_post_start_hook("loopback-call", hook).unwrap();
        })
        .start()
        .await;
    let (host, with_token, without_token) = tokio::time::timeout(PROMPT, results.recv())
        .await
        .expect("the hook ran")
        .unwrap();
    assert_eq!(host, format!("https://{}", server.addr));
    assert_eq!(with_token, Ok(StatusCode::OK), "with the loopback token");
    assert_eq!(
        without_token,
        Ok(StatusCode::UNAUTHORIZED),
        "the token is what authenticates"
    );
    server.wait_ready().await;
    server.shutdown().await.unwrap();
}

/// Counts authorizations of one path, allowing everything.
struct CountingAuthorizer {
    path: &'static str,
    count: Arc<AtomicUsize>,
}

#[async_trait::async_trait]
impl Authorizer for CountingAuthorizer {
    async fn authorize(&self, attrs: &Attributes) -> AuthorizeResult {
        if attrs.path == self.path {
            self.count.fetch_add(1, Ordering::SeqCst);
        }
        AlwaysAllow.authorize(attrs).await
    }
}

fn status_handler(status: StatusCode) -> apiserver::filters::HttpService {
    service_fn(move |_req| async move { with_content_type(status, "text/plain", "") })
}

/// A delegate server without serving: a `/foo` route (403), a failing `delegate-health` check
/// and a post-start hook.
fn delegate_server(destroyed: Arc<AtomicUsize>) -> GenericApiServer {
    let mut config = Config::new(None);
    config.systemd_notify = false;
    config
        .healthz_checks
        .push(named_check("delegate-health", |_| {
            Err("delegate failed healthcheck".to_string())
        }));
    let server = config
        .complete()
        .new("delegate", Arc::new(EmptyDelegate::new()))
        .expect("delegate server");
    server
        .handler()
        .non_api_mux
        .handle("/foo", status_handler(StatusCode::FORBIDDEN));
    server
        .add_post_start_hook(
            "delegate-post-start-hook",
            Arc::new(|_ctx| Box::pin(async { Ok(()) })),
        )
        .unwrap();
    server.register_destroy_fn(move || {
        destroyed.fetch_add(1, Ordering::SeqCst);
    });
    server
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrapping_server_serves_delegate_paths_health_checks_and_destroys_both_once() {
    let delegate_destroyed = Arc::new(AtomicUsize::new(0));
    let wrapper_destroyed = Arc::new(AtomicUsize::new(0));
    let foo_authorized = Arc::new(AtomicUsize::new(0));
    let delegate = Arc::new(delegate_server(delegate_destroyed.clone()));
    let count = foo_authorized.clone();
    let destroyed = wrapper_destroyed.clone();
    let mut server = TestServerBuilder::new()
        .delegate(delegate.clone())
        .configure(move |c, _| {
            c.authorizer = Some(Arc::new(CountingAuthorizer {
                path: "/foo",
                count,
            }));
            c.healthz_checks.push(named_check("wrapping-health", |_| {
                Err("wrapping failed healthcheck".to_string())
            }));
        })
        .install(move |server| {
            server
                .handler()
                .non_api_mux
                .handle("/bar", status_handler(StatusCode::UNAUTHORIZED));
            server
                .add_post_start_hook(
                    "wrapping-post-start-hook",
                    Arc::new(|_ctx| Box::pin(async { Ok(()) })),
                )
                .unwrap();
            server.register_destroy_fn(move || {
                destroyed.fetch_add(1, Ordering::SeqCst);
            });
        })
        .start()
        .await;
    let client = server.admin_client();

    // Check order: the wrapper's config checks, then the delegate's checks (its own and its
    // hooks'), then the wrapper's hooks registered after construction.
    let expected = "[+]ping ok\n\
        [+]log ok\n\
        [-]wrapping-health failed: reason withheld\n\
        [-]delegate-health failed: reason withheld\n\
        [+]poststarthook/max-in-flight-filter ok\n\
        [+]poststarthook/delegate-post-start-hook ok\n\
        [+]poststarthook/wrapping-post-start-hook ok\n\
        healthz check failed\n";
    eventually(PROMPT, "the post-start hooks to finish", || {
        let client = client.clone();
        async move {
            let reply = client.get(Proto::H1, "/healthz").await.unwrap();
            !reply.body.contains("[-]poststarthook/")
        }
    })
    .await;
    let reply = client.get(Proto::H1, "/healthz").await.unwrap();
    assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(reply.body, expected);
    for (path, status, body) in [
        (
            "/healthz/delegate-health",
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal server error: delegate failed healthcheck\n",
        ),
        (
            "/healthz/wrapping-health",
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal server error: wrapping failed healthcheck\n",
        ),
        (
            "/healthz/poststarthook/delegate-post-start-hook",
            StatusCode::OK,
            "ok",
        ),
        ("/foo", StatusCode::FORBIDDEN, ""),
        ("/bar", StatusCode::UNAUTHORIZED, ""),
    ] {
        let reply = client.get(Proto::H2, path).await.unwrap();
        assert_eq!(
            (reply.status, reply.body.as_str()),
            (status, body),
            "{path}"
        );
    }
    // The delegate's route went through the wrapper's filters exactly once.
    assert_eq!(foo_authorized.load(Ordering::SeqCst), 1);

    let reply = client.get(Proto::H1, "/").await.unwrap();
    assert_eq!(reply.status, StatusCode::OK);
    let listed: serde_json::Value = serde_json::from_str(&reply.body).unwrap();
    let listed: Vec<&str> = listed["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    for path in [
        "/bar",
        "/foo",
        "/healthz",
        "/healthz/delegate-health",
        "/healthz/log",
        "/healthz/ping",
        "/healthz/poststarthook/delegate-post-start-hook",
        "/healthz/poststarthook/max-in-flight-filter",
        "/healthz/poststarthook/wrapping-post-start-hook",
        "/healthz/wrapping-health",
        "/livez",
        "/livez/delegate-health",
        "/metrics",
        "/readyz",
        "/readyz/shutdown",
        "/version",
    ] {
        assert!(listed.contains(&path), "{path} not listed in {listed:?}");
    }
    let mut sorted = listed.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(listed, sorted, "listed paths are sorted and unique");

    server.shutdown().await.unwrap();
    assert_eq!(wrapper_destroyed.load(Ordering::SeqCst), 1);
    assert_eq!(delegate_destroyed.load(Ordering::SeqCst), 1);
    // Destroying again (e.g. the delegate on its own) does not run anything twice.
    DelegationTarget::destroy(&*delegate);
    assert_eq!(delegate_destroyed.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listener_stopping_without_a_stop_request_is_fatal() {
    let mut server = TestServerBuilder::new().keep_listener().start().await;
    server.wait_ready().await;
    // Shutting the listening socket down makes accept fail with EINVAL: the listener stops
    // although nobody asked the server to stop.
    socket2::SockRef::from(server.listener.as_ref().unwrap())
        .shutdown(std::net::Shutdown::Read)
        .unwrap();
    match server.join().await {
        Err(RunError::ListenerStopped(message)) => {
            let expected = format!("Stopped listening on {} due to error", server.addr);
            assert!(message.starts_with(&expected), "{message}");
        }
        other => panic!("expected ListenerStopped, got {other:?}"),
    }
    assert!(!server.signals.shutdown_initiated.signaled());
}
