//! Smoke test of the whole stack: a real server over TLS answers health checks on HTTP/1.1
//! and HTTP/2 and shuts down cleanly.

mod common;

use common::*;
use http::StatusCode;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_over_h1_and_h2_then_clean_shutdown() {
    let mut server = TestServerBuilder::new().start().await;
    server.wait_ready().await;
    for proto in [Proto::H1, Proto::H2] {
        let reply = server.client().get(proto, "/healthz").await.unwrap();
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(reply.body, "ok");
        assert_eq!(
            reply.version,
            if proto == Proto::H1 {
                http::Version::HTTP_11
            } else {
                http::Version::HTTP_2
            }
        );
        assert!(reply.headers.contains_key("audit-id"));
        assert_eq!(reply.headers["cache-control"], "no-cache, private");
    }
    server.shutdown().await.unwrap();
    // With no delay and no pre-shutdown hooks, AfterShutdownDelayDuration and
    // PreShutdownHooksStopped race (as upstream); everything else is ordered.
    let names = server.recorder.names();
    let pos = |n: &str| {
        names
            .iter()
            .position(|x| *x == n)
            .unwrap_or_else(|| panic!("{n} missing: {names:?}"))
    };
    assert!(pos("ShutdownInitiated") < pos("AfterShutdownDelayDuration"));
    assert!(pos("ShutdownInitiated") < pos("PreShutdownHooksStopped"));
    assert!(pos("AfterShutdownDelayDuration") < pos("NotAcceptingNewRequest"));
    assert!(pos("PreShutdownHooksStopped") < pos("NotAcceptingNewRequest"));
    assert!(pos("NotAcceptingNewRequest") < pos("HTTPServerStoppedListening"));
    assert!(pos("NotAcceptingNewRequest") < pos("InFlightRequestsDrained"));
    assert!(pos("HasBeenReady") < pos("ShutdownInitiated"));
}
