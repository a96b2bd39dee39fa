//! Black-box tests of the default handler chain (spec §4, §5.4) against the real server over
//! TLS, on HTTP/1.1 and HTTP/2.

mod common;

use std::sync::Arc;

use apiserver::authz::AuthorizationMode;
use common::*;
use http::{Method, StatusCode};
use tokio_util::sync::CancellationToken;

const PROTOS: [Proto; 2] = [Proto::H1, Proto::H2];

fn status_json(message: &str, reason: &str, details: Option<&str>, code: u16) -> String {
    let details = details
        .map(|d| format!(",\"details\":{d}"))
        .unwrap_or_default();
    format!(
        "{{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{{}},\"status\":\"Failure\",\"message\":{},\"reason\":\"{reason}\"{details},\"code\":{code}}}\n",
        serde_json::to_string(message).unwrap()
    )
}

fn assert_status_body(reply: &Reply, code: StatusCode, expected: &str) {
    assert_eq!(reply.status, code, "{}", reply.body);
    // Byte-exact, including the encoder's trailing newline.
    assert_eq!(reply.body, expected);
    assert_eq!(reply.headers["content-type"], "application/json");
}

// ---------------------------------------------------------------------------------------------
// Max in flight (§4.5)
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_in_flight_rejects_second_request_with_429_but_not_masters_nor_other_class() {
    let started = Arc::new(tokio::sync::Notify::new());
    let release = CancellationToken::new();
    let handler = blocking_handler(started.clone(), release.clone());
    let mut server = TestServerBuilder::new()
        .configure(|c, _| {
            c.max_requests_in_flight = 1;
            c.max_mutating_requests_in_flight = 1;
        })
        .install(move |s| s.handler().non_api_mux.handle("/block", handler))
        .start()
        .await;
    let alice = server.user_client("alice", &[]);

    // Hold the only non-mutating seat.
    let holder = {
        let alice = alice.clone();
        tokio::spawn(async move { alice.get(Proto::H1, "/block").await })
    };
    started.notified().await;
    for proto in PROTOS {
        let reply = alice.get(proto, "/version").await.unwrap();
        assert_eq!(reply.status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(reply.headers["retry-after"], "1");
        assert_eq!(reply.body, "Too many requests, please try again later.\n");
        assert_eq!(reply.headers["content-type"], "text/plain; charset=utf-8");
        assert_eq!(reply.headers["x-content-type-options"], "nosniff");
        assert!(reply.headers.contains_key("audit-id"));
        // system:masters is never throttled.
        let reply = server.admin_client().get(proto, "/version").await.unwrap();
        assert_eq!(reply.status, StatusCode::OK);
        // The mutating class has its own seat.
        let reply = alice
            .send(proto, alice.request(Method::POST, "/version", ""))
            .await
            .unwrap();
        assert_ne!(reply.status, StatusCode::TOO_MANY_REQUESTS);
    }

    // Hold the only mutating seat as well; now mutating requests are rejected.
    let mutating_holder = {
        let alice = alice.clone();
        tokio::spawn(async move {
            alice
                .send(Proto::H2, alice.request(Method::POST, "/block", ""))
                .await
        })
    };
    started.notified().await;
    for proto in PROTOS {
        let reply = alice
            .send(proto, alice.request(Method::DELETE, "/version", ""))
            .await
            .unwrap();
        assert_eq!(reply.status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(reply.headers["retry-after"], "1");
        assert_eq!(reply.body, "Too many requests, please try again later.\n");
    }

    release.cancel();
    assert_eq!(holder.await.unwrap().unwrap().body, "done");
    assert_eq!(mutating_holder.await.unwrap().unwrap().body, "done");
    // Seats are returned when requests finish.
    let reply = alice.get(Proto::H1, "/version").await.unwrap();
    assert_eq!(reply.status, StatusCode::OK);
    server.shutdown().await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// Request deadline and timeout (§4.4)
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_handler_times_out_with_exact_504_and_invalid_timeout_is_400() {
    let mut server = TestServerBuilder::new()
        .install(|s| s.handler().non_api_mux.handle("/slow", pending_handler()))
        .start()
        .await;
    let client = server.admin_client();
    for proto in PROTOS {
        let reply = client.get(proto, "/slow?timeout=100ms").await.unwrap();
        assert_eq!(reply.status, StatusCode::GATEWAY_TIMEOUT);
        assert_eq!(
            reply.body,
            "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"Timeout: request did not complete within the allotted timeout\",\"reason\":\"Timeout\",\"details\":{},\"code\":504}\n"
        );
        // Headers of outer filters survive the timeout.
        assert!(reply.headers.contains_key("audit-id"));
        assert_eq!(reply.headers["cache-control"], "no-cache, private");

        let reply = client.get(proto, "/slow?timeout=foo").await.unwrap();
        assert_status_body(
            &reply,
            StatusCode::BAD_REQUEST,
            &status_json(
                "invalid timeout specified in the request URL - time: invalid duration \"foo\"",
                "BadRequest",
                None,
                400,
            ),
        );
    }
    server.shutdown().await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// Panic recovery (§4.2)
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handler_panic_aborts_the_request_and_server_keeps_serving() {
    let mut server = TestServerBuilder::new()
        .install(|s| s.handler().non_api_mux.handle("/panic", panic_handler()))
        .start()
        .await;
    let client = server.admin_client();

    // HTTP/1.1: the connection is closed without a response.
    let mut conn = client.connect(Proto::H1).await.unwrap();
    let result = conn.send(client.request(Method::GET, "/panic", "")).await;
    assert!(
        result.is_err(),
        "expected a transport error, got {result:?}"
    );

    // HTTP/2: the stream is reset; the connection itself keeps working.
    let mut conn = client.connect(Proto::H2).await.unwrap();
    let result = conn.send(client.request(Method::GET, "/panic", "")).await;
    assert!(result.is_err(), "expected a stream error, got {result:?}");
    let reply = conn
        .send(client.request(Method::GET, "/healthz", ""))
        .await
        .unwrap();
    assert_eq!((reply.status, reply.body.as_str()), (StatusCode::OK, "ok"));

    for proto in PROTOS {
        let reply = client.get(proto, "/version").await.unwrap();
        assert_eq!(reply.status, StatusCode::OK);
    }
    server.shutdown().await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// Authentication and authorization (§4.7, §4.10)
// ---------------------------------------------------------------------------------------------

fn unauthorized() -> String {
    status_json("Unauthorized", "Unauthorized", None, 401)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_anonymous_missing_or_untrusted_credentials_get_401() {
    let mut server = TestServerBuilder::new().anonymous(false).start().await;
    let stranger_ca = Ca::new("untrusted-ca");
    let stranger = stranger_ca.client("mallory", &["system:masters"]);
    let untrusted = server.client().with_identity(&stranger.cert, &stranger.key);
    for proto in PROTOS {
        for client in [&server.client(), &untrusted] {
            for path in ["/version", "/healthz", "/api/v1/namespaces/default/pods"] {
                let reply = client.get(proto, path).await.unwrap();
                assert_status_body(&reply, StatusCode::UNAUTHORIZED, &unauthorized());
                assert!(reply.headers.contains_key("audit-id"));
            }
        }
        let reply = server.admin_client().get(proto, "/version").await.unwrap();
        assert_eq!(reply.status, StatusCode::OK);
    }
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_deny_forbids_with_exact_messages_but_masters_are_allowed() {
    let mut server = TestServerBuilder::new()
        .authorization(vec![AuthorizationMode::AlwaysDeny])
        .start()
        .await;
    let alice = server.user_client("alice", &["devs"]);
    for proto in PROTOS {
        let reply = alice.get(proto, "/version").await.unwrap();
        assert_status_body(
            &reply,
            StatusCode::FORBIDDEN,
            &status_json(
                "forbidden: User \"alice\" cannot get path \"/version\": Everything is forbidden.",
                "Forbidden",
                Some("{}"),
                403,
            ),
        );
        assert_eq!(reply.headers["x-content-type-options"], "nosniff");

        let reply = alice
            .get(proto, "/api/v1/namespaces/default/pods/foo")
            .await
            .unwrap();
        assert_status_body(
            &reply,
            StatusCode::FORBIDDEN,
            &status_json(
                "pods \"foo\" is forbidden: User \"alice\" cannot get resource \"pods\" in API group \"\" in the namespace \"default\": Everything is forbidden.",
                "Forbidden",
                Some("{\"name\":\"foo\",\"kind\":\"pods\"}"),
                403,
            ),
        );

        let reply = alice.get(proto, "/apis/apps/v1/deployments").await.unwrap();
        assert_status_body(
            &reply,
            StatusCode::FORBIDDEN,
            &status_json(
                "deployments.apps is forbidden: User \"alice\" cannot list resource \"deployments\" in API group \"apps\" at the cluster scope: Everything is forbidden.",
                "Forbidden",
                Some("{\"group\":\"apps\",\"kind\":\"deployments\"}"),
                403,
            ),
        );

        let reply = server.admin_client().get(proto, "/version").await.unwrap();
        assert_eq!(reply.status, StatusCode::OK);
    }
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_file_bearer_tokens_authenticate_and_unknown_tokens_get_401() {
    let mut server = TestServerBuilder::new()
        .anonymous(true)
        .token_file("secret-token,tina,uid-42,\"team-a,team-b\"\n")
        .install(|s| {
            s.handler()
                .non_api_mux
                .handle("/whoami", echo_user_handler())
        })
        .start()
        .await;
    for proto in PROTOS {
        let reply = server
            .client()
            .with_bearer("secret-token")
            .get(proto, "/whoami")
            .await
            .unwrap();
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(reply.body, "tina|uid-42|team-a,team-b,system:authenticated");

        // A rejected token does not fall back to anonymous.
        let reply = server
            .client()
            .with_bearer("wrong-token")
            .get(proto, "/whoami")
            .await
            .unwrap();
        assert_status_body(&reply, StatusCode::UNAUTHORIZED, &unauthorized());

        let reply = server.client().get(proto, "/whoami").await.unwrap();
        assert_eq!(reply.body, "system:anonymous||system:unauthenticated");
    }
    server.shutdown().await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// Impersonation (§4.9)
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn masters_impersonate_users_and_groups_others_are_forbidden() {
    let mut server = TestServerBuilder::new()
        .authorization(vec![AuthorizationMode::AlwaysDeny])
        .install(|s| {
            s.handler()
                .non_api_mux
                .handle("/whoami", echo_user_handler())
        })
        .start()
        .await;
    let admin = server.admin_client();
    let alice = server.user_client("alice", &[]);
    for proto in PROTOS {
        let req = admin.request_with(
            Method::GET,
            "/whoami",
            &[
                ("impersonate-user", "bob"),
                ("impersonate-group", "g1"),
                ("impersonate-group", "g2"),
            ],
        );
        let reply = admin.send(proto, req).await.unwrap();
        // The impersonated user is authorized next: bob is not a master, AlwaysDeny forbids.
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{}", reply.body);
        assert!(
            reply
                .body
                .contains("forbidden: User \\\"bob\\\" cannot get path \\\"/whoami\\\""),
            "{}",
            reply.body
        );

        // Impersonating into system:masters is allowed for a master and is then authorized.
        let req = admin.request_with(
            Method::GET,
            "/whoami",
            &[
                ("impersonate-user", "bob"),
                ("impersonate-group", "system:masters"),
            ],
        );
        let reply = admin.send(proto, req).await.unwrap();
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        assert_eq!(reply.body, "bob||system:masters,system:authenticated");

        let req = alice.request_with(Method::GET, "/whoami", &[("impersonate-user", "bob")]);
        let reply = alice.send(proto, req).await.unwrap();
        assert_status_body(
            &reply,
            StatusCode::FORBIDDEN,
            &status_json(
                "users \"bob\" is forbidden: User \"alice\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope: Everything is forbidden.",
                "Forbidden",
                Some("{\"name\":\"bob\",\"kind\":\"users\"}"),
                403,
            ),
        );
        assert_eq!(reply.headers["x-content-type-options"], "nosniff");

        let req = admin.request_with(Method::GET, "/whoami", &[("impersonate-group", "g1")]);
        let reply = admin.send(proto, req).await.unwrap();
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.body);
        let status: serde_json::Value = serde_json::from_str(&reply.body).unwrap();
        assert_eq!(status["reason"], "BadRequest");
        assert_eq!(status["code"], 400);
        assert!(
            status["message"]
                .as_str()
                .unwrap()
                .ends_with("without impersonating a user"),
            "{}",
            reply.body
        );
    }
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn masters_impersonating_bob_with_groups_reach_the_handler_as_bob() {
    let mut server = TestServerBuilder::new()
        .install(|s| {
            s.handler()
                .non_api_mux
                .handle("/whoami", echo_user_handler())
        })
        .start()
        .await;
    let admin = server.admin_client();
    for proto in PROTOS {
        let req = admin.request_with(
            Method::GET,
            "/whoami",
            &[
                ("impersonate-user", "bob"),
                ("impersonate-group", "g1"),
                ("impersonate-group", "g2"),
            ],
        );
        let reply = admin.send(proto, req).await.unwrap();
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        assert_eq!(reply.body, "bob||g1,g2,system:authenticated");
    }
    server.shutdown().await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// Response-shaping filters (§4.2, §4.6, §4.11)
// ---------------------------------------------------------------------------------------------

const CORS_ORIGIN: &str = "https://example.com";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cors_preflight_is_answered_before_authentication_and_other_origins_are_untouched() {
    let mut server = TestServerBuilder::new()
        .anonymous(false)
        .configure(|c, _| c.cors_allowed_origins = vec!["^https://example\\.com$".into()])
        .start()
        .await;
    let client = server.client();
    for proto in PROTOS {
        let req = client.request_with(Method::OPTIONS, "/version", &[("origin", CORS_ORIGIN)]);
        let reply = client.send(proto, req).await.unwrap();
        assert_eq!(reply.status, StatusCode::NO_CONTENT);
        let h = &reply.headers;
        assert_eq!(h["access-control-allow-origin"], CORS_ORIGIN);
        assert_eq!(
            h["access-control-allow-methods"],
            "POST, GET, OPTIONS, PUT, DELETE, PATCH"
        );
        assert_eq!(
            h["access-control-allow-headers"],
            "Content-Type, Content-Length, Accept-Encoding, X-CSRF-Token, Authorization, X-Requested-With, If-Modified-Since"
        );
        assert_eq!(h["access-control-expose-headers"], "Date");
        assert_eq!(h["access-control-allow-credentials"], "true");
        assert!(h.contains_key("audit-id"));

        // A matching origin on a normal request gets the headers and continues (here to 401).
        let req = client.request_with(Method::GET, "/version", &[("origin", CORS_ORIGIN)]);
        let reply = client.send(proto, req).await.unwrap();
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
        assert_eq!(reply.headers["access-control-allow-origin"], CORS_ORIGIN);

        // A non-matching origin is untouched: the preflight reaches authentication.
        let req = client.request_with(
            Method::OPTIONS,
            "/version",
            &[("origin", "https://example.com.evil.org")],
        );
        let reply = client.send(proto, req).await.unwrap();
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
        assert!(
            !reply
                .headers
                .keys()
                .any(|k| k.as_str().starts_with("access-control-")),
            "{:?}",
            reply.headers
        );
    }
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hsts_cache_control_and_audit_id_are_set_on_every_response() {
    let started = Arc::new(tokio::sync::Notify::new());
    let release = CancellationToken::new();
    let handler = blocking_handler(started.clone(), release.clone());
    let mut server = TestServerBuilder::new()
        .anonymous(false)
        .configure(|c, _| {
            c.hsts_directives = vec!["max-age=31536000".into(), "includeSubDomains".into()];
            c.max_requests_in_flight = 1;
        })
        .install(move |s| s.handler().non_api_mux.handle("/block", handler))
        .start()
        .await;
    let admin = server.admin_client();
    let alice = server.user_client("alice", &[]);
    let check = |reply: &Reply| {
        assert_eq!(
            reply.headers["strict-transport-security"],
            "max-age=31536000; includeSubDomains"
        );
        assert_eq!(reply.headers["cache-control"], "no-cache, private");
        let id = reply.headers["audit-id"].to_str().unwrap();
        assert!(uuid_like(id), "audit id {id:?}");
    };
    for proto in PROTOS {
        // 200, 404, 401.
        let ok = admin.get(proto, "/version").await.unwrap();
        assert_eq!(ok.status, StatusCode::OK);
        check(&ok);
        let not_found = admin.get(proto, "/no/such/path").await.unwrap();
        assert_eq!(not_found.status, StatusCode::NOT_FOUND);
        check(&not_found);
        let unauthorized = server.client().get(proto, "/version").await.unwrap();
        assert_eq!(unauthorized.status, StatusCode::UNAUTHORIZED);
        check(&unauthorized);
        assert_ne!(ok.headers["audit-id"], not_found.headers["audit-id"]);

        // A supplied Audit-ID is echoed verbatim, also on errors.
        for path in ["/version", "/no/such/path"] {
            let req = admin.request_with(Method::GET, path, &[("audit-id", "my-audit-id-42")]);
            let reply = admin.send(proto, req).await.unwrap();
            assert_eq!(reply.headers["audit-id"], "my-audit-id-42");
        }
        let req = server
            .client()
            .request_with(Method::GET, "/version", &[("audit-id", "anon-id")]);
        let reply = server.client().send(proto, req).await.unwrap();
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
        assert_eq!(reply.headers["audit-id"], "anon-id");
    }

    // 429.
    let holder = {
        let alice = alice.clone();
        tokio::spawn(async move { alice.get(Proto::H1, "/block").await })
    };
    started.notified().await;
    for proto in PROTOS {
        let reply = alice.get(proto, "/version").await.unwrap();
        assert_eq!(reply.status, StatusCode::TOO_MANY_REQUESTS);
        check(&reply);
    }
    release.cancel();
    holder.await.unwrap().unwrap();
    server.shutdown().await.unwrap();
}

fn uuid_like(s: &str) -> bool {
    s.len() == 36 && s.chars().filter(|c| *c == '-').count() == 4
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handler_warnings_become_warning_headers() {
    let mut server = TestServerBuilder::new()
        .install(|s| {
            s.handler().non_api_mux.handle(
                "/warn",
                warning_handler(&["first warning", "say \"hi\"", "first warning", ""]),
            )
        })
        .start()
        .await;
    for proto in PROTOS {
        let reply = server.admin_client().get(proto, "/warn").await.unwrap();
        assert_eq!(reply.status, StatusCode::OK);
        let warnings: Vec<&str> = reply
            .headers
            .get_all("warning")
            .iter()
            .map(|v| v.to_str().unwrap())
            .collect();
        assert_eq!(
            warnings,
            vec!["299 - \"first warning\"", "299 - \"say \\\"hi\\\"\""]
        );
    }
    server.shutdown().await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// Routing (§5.4)
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_version_not_found_and_metrics_routes() {
    let mut server = TestServerBuilder::new()
        .install(|s| s.handler().non_api_mux.handle("/extra", text_handler("x")))
        .start()
        .await;
    server.wait_ready().await;
    let admin = server.admin_client();
    for proto in PROTOS {
        let index = admin.get(proto, "/").await.unwrap();
        assert_eq!(index.status, StatusCode::OK);
        assert_eq!(index.headers["content-type"], "application/json");
        let parsed: serde_json::Value = serde_json::from_str(&index.body).unwrap();
        let paths: Vec<&str> = parsed["paths"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap())
            .collect();
        for expected in [
            "/extra",
            "/healthz",
            "/healthz/ping",
            "/livez",
            "/metrics",
            "/readyz",
            "/readyz/shutdown",
            "/version",
        ] {
            assert!(paths.contains(&expected), "{expected} not in {paths:?}");
        }
        let mut sorted = paths.clone();
        sorted.sort();
        assert_eq!(paths, sorted);
        // Two-space indented JSON.
        assert!(
            index.body.starts_with("{\n  \"paths\": [\n    \""),
            "{}",
            index.body
        );

        let missing = admin.get(proto, "/no/such/thing").await.unwrap();
        assert_eq!(missing.status, StatusCode::NOT_FOUND);
        assert_eq!(missing.body, index.body);
        assert_eq!(missing.headers["content-type"], "application/json");

        let version = admin.get(proto, "/version").await.unwrap();
        assert_eq!(version.status, StatusCode::OK);
        assert_eq!(version.headers["content-type"], "application/json");
        let v: serde_json::Value = serde_json::from_str(&version.body).unwrap();
        for key in [
            "major",
            "minor",
            "gitVersion",
            "gitCommit",
            "gitTreeState",
            "buildDate",
            "goVersion",
            "compiler",
            "platform",
        ] {
            assert!(v.get(key).is_some(), "{key} missing in {}", version.body);
        }
    }

    // Metrics reflect the requests just made.
    let reply = admin.get(Proto::H1, "/metrics").await.unwrap();
    assert_eq!(reply.status, StatusCode::OK);
    let metrics = reply.body;
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("apiserver_request_total{")
                && l.contains("verb=\"GET\"")
                && l.contains("code=\"404\"")),
        "{metrics}"
    );
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("apiserver_request_total{") && l.contains("code=\"200\"")),
        "{metrics}"
    );
    assert!(
        metrics.contains("apiserver_current_inflight_requests"),
        "{metrics}"
    );
    assert!(
        metrics.contains("apiserver_request_duration_seconds_bucket"),
        "{metrics}"
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_connection_is_closed_after_a_401_but_kept_for_authenticated_clients() {
    let mut server = TestServerBuilder::new().anonymous(false).start().await;
    let client = server.client();
    // Failed authentication over HTTP/2: the 401 ends the connection (GOAWAY).
    let mut conn = client.connect(Proto::H2).await.unwrap();
    let reply = conn
        .send(client.request(Method::GET, "/version", ""))
        .await
        .unwrap();
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    let mut closed = false;
    for _ in 0..100 {
        if !conn.is_usable().await {
            closed = true;
            break;
        }
        // The GOAWAY may still be in flight: a request on the same connection either fails
        // or is the last one served.
        match conn.send(client.request(Method::GET, "/version", "")).await {
            Err(_) => {
                closed = true;
                break;
            }
            Ok(r) => assert_eq!(r.status, StatusCode::UNAUTHORIZED),
        }
    }
    assert!(closed, "the HTTP/2 connection stayed open after a 401");

    // An authenticated HTTP/2 connection keeps serving.
    let admin = server.admin_client();
    let mut conn = admin.connect(Proto::H2).await.unwrap();
    for _ in 0..5 {
        let reply = conn
            .send(admin.request(Method::GET, "/version", ""))
            .await
            .unwrap();
        assert_eq!(reply.status, StatusCode::OK);
    }
    assert!(conn.is_usable().await);
    server.shutdown().await.unwrap();
}
