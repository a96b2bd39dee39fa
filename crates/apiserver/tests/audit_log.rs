//! Black-box tests of auditing (spec §4.8) with the log backend: a policy file and
//! `--audit-log-path` in the test's directory, requests through the real server over TLS.

mod common;

use std::collections::BTreeMap;

use apiserver::audit::{AuditOptions, Auditor};
use common::*;
use http::{Method, StatusCode};
use serde_json::Value;

const POLICY: &str = "\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: []
rules:
- level: RequestResponse
  nonResourceURLs: [\"/rr\"]
- level: Metadata
";

/// Events grouped by audit ID, in log order.
fn events_by_id(log: &str) -> BTreeMap<String, Vec<Value>> {
    let mut by_id: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for line in log.lines() {
        let event: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert_eq!(event["kind"], "Event");
        assert_eq!(event["apiVersion"], "audit.k8s.io/v1");
        by_id
            .entry(event["auditID"].as_str().unwrap().to_string())
            .or_default()
            .push(event);
    }
    by_id
}

fn stages(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["stage"].as_str().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_and_failed_authentication_are_logged_and_flushed_when_run_returns() {
    let mut server = TestServerBuilder::new()
        .anonymous(false)
        .configure(|c, pki| {
            let policy = pki.dir.path().join("policy.yaml");
            std::fs::write(&policy, POLICY).unwrap();
            let log = pki.dir.path().join("audit.log");
            c.auditor = Auditor::from_options(&AuditOptions {
                policy_file: Some(policy.display().to_string()),
                log_path: Some(log.display().to_string()),
                ..Default::default()
            })
            .unwrap();
            assert!(c.auditor.is_some());
        })
        .install(|s| {
            s.handler()
                .non_api_mux
                .handle("/rr", text_handler("response"))
        })
        .start()
        .await;
    let log_path = server.dir.path().join("audit.log");
    let admin = server.admin_client();
    let alice = server.user_client("alice", &["devs"]);

    let mut sent = Vec::new();
    let mut send = async |client: &Client, proto, method: Method, path: &str, id: &str| {
        let req = client.request_with(
            method,
            path,
            &[("audit-id", id), ("user-agent", "audit-test/1.0")],
        );
        let reply = client.send(proto, req).await.unwrap();
        sent.push((id.to_string(), path.to_string(), reply.status));
        reply
    };
    let reply = send(&admin, Proto::H1, Method::GET, "/version", "id-version").await;
    assert_eq!(reply.status, StatusCode::OK);
    let reply = send(&alice, Proto::H2, Method::GET, "/rr", "id-rr").await;
    assert_eq!(reply.status, StatusCode::OK);
    let reply = send(&alice, Proto::H1, Method::GET, "/no/such/path", "id-404").await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    let reply = send(
        &alice,
        Proto::H2,
        Method::GET,
        "/api/v1/namespaces/ns1/pods/p1",
        "id-pod",
    )
    .await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    let reply = send(
        &server.client(),
        Proto::H1,
        Method::GET,
        "/version",
        "id-401",
    )
    .await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);

    // Everything is on disk once `run` returned.
    server.shutdown().await.unwrap();
    let log = std::fs::read_to_string(&log_path).unwrap();
    let by_id = events_by_id(&log);

    let version = &by_id["id-version"];
    assert_eq!(stages(version), ["RequestReceived", "ResponseComplete"]);
    for event in version {
        assert_eq!(event["level"], "Metadata");
        assert_eq!(event["requestURI"], "/version");
        assert_eq!(event["verb"], "get");
        assert_eq!(event["user"]["username"], "admin");
        assert_eq!(
            event["user"]["groups"],
            serde_json::json!(["system:masters", "system:authenticated"])
        );
        assert_eq!(event["userAgent"], "audit-test/1.0");
        assert_eq!(event["sourceIPs"], serde_json::json!(["127.0.0.1"]));
    }
    assert!(version[0].get("responseStatus").is_none());
    assert_eq!(version[1]["responseStatus"]["code"], 200);
    assert_eq!(
        version[1]["annotations"]["authorization.k8s.io/decision"],
        "allow"
    );

    let rr = &by_id["id-rr"];
    assert_eq!(stages(rr), ["RequestReceived", "ResponseComplete"]);
    assert!(rr.iter().all(|e| e["level"] == "RequestResponse"));
    assert_eq!(rr[1]["user"]["username"], "alice");
    assert_eq!(rr[1]["responseStatus"]["code"], 200);

    let not_found = &by_id["id-404"];
    assert_eq!(stages(not_found), ["RequestReceived", "ResponseComplete"]);
    assert_eq!(not_found[1]["responseStatus"]["code"], 404);

    let pod = &by_id["id-pod"];
    assert_eq!(stages(pod), ["RequestReceived", "ResponseComplete"]);
    assert_eq!(pod[1]["verb"], "get");
    assert_eq!(
        pod[1]["objectRef"],
        serde_json::json!({"resource": "pods", "namespace": "ns1", "name": "p1", "apiVersion": "v1"})
    );

    // Failed authentication is audited once, at ResponseStarted, with the reason.
    let failed = &by_id["id-401"];
    assert_eq!(stages(failed), ["ResponseStarted"], "{failed:?}");
    assert_eq!(failed[0]["level"], "Metadata");
    assert_eq!(failed[0]["requestURI"], "/version");
    assert_eq!(failed[0]["responseStatus"]["code"], 401);
    assert_eq!(
        failed[0]["responseStatus"]["message"],
        "Authentication failed, no credentials provided"
    );
    assert!(sent.len() == 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_timeout_400_is_audited_at_response_started() {
    let mut server = TestServerBuilder::new()
        .configure(|c, pki| {
            let policy = pki.dir.path().join("policy.yaml");
            std::fs::write(&policy, POLICY).unwrap();
            let log = pki.dir.path().join("audit.log");
            c.auditor = Auditor::from_options(&AuditOptions {
                policy_file: Some(policy.display().to_string()),
                log_path: Some(log.display().to_string()),
                ..Default::default()
            })
            .unwrap();
        })
        .start()
        .await;
    let admin = server.admin_client();
    let req = admin.request_with(
        Method::GET,
        "/version?timeout=foo",
        &[("audit-id", "bad-timeout")],
    );
    let reply = admin.send(Proto::H1, req).await.unwrap();
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    server.shutdown().await.unwrap();
    let log = std::fs::read_to_string(server.dir.path().join("audit.log")).unwrap();
    let by_id = events_by_id(&log);
    // The deadline filter runs before authentication, so the event has no user yet.
    let events = &by_id["bad-timeout"];
    assert_eq!(stages(events), ["ResponseStarted"], "{events:?}");
    assert_eq!(events[0]["requestURI"], "/version?timeout=foo");
    assert_eq!(events[0]["user"], serde_json::json!({}));
    assert_eq!(events[0]["responseStatus"]["code"], 400);
    assert_eq!(
        events[0]["responseStatus"]["message"],
        "invalid timeout specified in the request URL - time: invalid duration \"foo\""
    );
}
