//! End-to-end tests of the `kube-apiserver` binary: first start, flags, serving variants,
//! systemd notification and the audit log.

mod common;

use std::os::unix::fs::PermissionsExt;

use common::client::Proto;
use common::{ApiServer, DEADLINE, plain_get, run_to_exit};

#[tokio::test(flavor = "multi_thread")]
async fn first_start_generates_pki_and_a_private_admin_kubeconfig_and_prints_the_kubectl_line() {
    let mut server = ApiServer::start(&[]).await;
    for name in ["ca", "apiserver", "admin"] {
        for ext in ["crt", "key"] {
            let path = server.pki().join(format!("{name}.{ext}"));
            assert!(path.is_file(), "{} missing", path.display());
        }
    }
    let mode = std::fs::metadata(server.kubeconfig())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "admin.kubeconfig mode {mode:o}");
    let kubeconfig = std::fs::read_to_string(server.kubeconfig()).unwrap();
    assert!(
        kubeconfig.contains(&format!("https://127.0.0.1:{}", server.addr.port())),
        "{kubeconfig}"
    );
    let shown = std::fs::canonicalize(server.kubeconfig()).unwrap();
    let expected = format!("kubectl --kubeconfig {} get --raw /readyz", shown.display());
    let line = server.stdout.wait_for("kubectl --kubeconfig").await;
    assert_eq!(line, expected);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn second_start_reuses_the_generated_ca() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut first = ApiServer::builder().data_dir(&data).start().await;
    let ca = std::fs::read(first.pki().join("ca.crt")).unwrap();
    let ca_key = std::fs::read(first.pki().join("ca.key")).unwrap();
    first.stop().await;

    let mut second = ApiServer::builder().data_dir(&data).start().await;
    assert_eq!(std::fs::read(second.pki().join("ca.crt")).unwrap(), ca);
    assert_eq!(std::fs::read(second.pki().join("ca.key")).unwrap(), ca_key);
    // The certificates in the rewritten kubeconfig still chain to that CA.
    let reply = second
        .admin_client()
        .get(Proto::H2, "/readyz")
        .await
        .unwrap();
    assert_eq!(reply.status, 200);
    second.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_flags_exit_1_with_a_one_line_error() {
    let cases: &[(&str, &str)] = &[
        ("--bogus", "--bogus"),
        (
            "--goaway-chance=1",
            "--goaway-chance can not be less than 0 or greater than 0.02",
        ),
        (
            "--secure-port=-1",
            "--secure-port -1 must be between 0 and 65535",
        ),
        ("--request-timeout=abc", "abc"),
        // kube-apiserver 1.35 has no insecure serving (removed in 1.24).
        ("--insecure-port=8080", "--insecure-port"),
    ];
    for (flag, expected) in cases {
        let out = run_to_exit(&[flag]).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{flag}: {stderr}");
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{flag}: not one line: {stderr:?}");
        assert!(lines[0].starts_with("Error: "), "{flag}: {stderr:?}");
        assert!(lines[0].contains(expected), "{flag}: {stderr:?}");
        assert!(out.stdout.is_empty(), "{flag}: stdout {:?}", out.stdout);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn debug_socket_serves_pprof_index_without_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("debug.sock");
    let mut server =
        ApiServer::start(&[&format!("--debug-socket-path={}", socket.display())]).await;
    let stream = tokio::net::UnixStream::connect(&socket).await.unwrap();
    let (status, _, body) = plain_get(stream, "/debug/pprof/").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("profile"), "{body}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn debug_socket_serves_pprof_even_with_profiling_false_as_upstream() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("debug.sock");
    let mut server = ApiServer::start(&[
        &format!("--debug-socket-path={}", socket.display()),
        "--profiling=false",
    ])
    .await;
    // The secure port has no profiling ...
    let reply = server
        .admin_client()
        .get(Proto::H1, "/debug/pprof/")
        .await
        .unwrap();
    assert_eq!(reply.status, 404, "{}", reply.body);
    // ... the debug socket has it, and the verbosity flag (PUT only: a GET is 406).
    for (path, expected) in [
        ("/debug/pprof/", 200),
        ("/debug/pprof/cmdline", 200),
        ("/debug/flags/v", 406),
    ] {
        let stream = tokio::net::UnixStream::connect(&socket).await.unwrap();
        let (status, _, body) = plain_get(stream, path).await;
        assert_eq!(status, expected, "{path}: {body}");
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn default_flags_turn_anonymous_off_under_always_allow_with_upstreams_warning() {
    let mut server = ApiServer::start(&[]).await;
    server
        .stderr
        .wait_for("AnonymousAuth is not allowed with the AlwaysAllow authorizer. Resetting AnonymousAuth to false. You should use a different authorizer")
        .await;
    let anonymous = server.anonymous_client();
    for path in ["/version", "/api/v1/secrets", "/debug/pprof/", "/healthz"] {
        let reply = anonymous.get(Proto::H1, path).await.unwrap();
        assert_eq!(reply.status, 401, "{path}: {}", reply.body);
    }
    let reply = anonymous
        .send(
            Proto::H1,
            anonymous.request(http::Method::PUT, "/debug/flags/v", "9"),
        )
        .await
        .unwrap();
    assert_eq!(reply.status, 401, "{}", reply.body);
    // Naming AlwaysAllow explicitly, among others, turns it off too.
    let mut other = ApiServer::start(&["--authorization-mode=AlwaysDeny,AlwaysAllow"]).await;
    let reply = other
        .anonymous_client()
        .get(Proto::H2, "/version")
        .await
        .unwrap();
    assert_eq!(reply.status, 401, "{}", reply.body);
    other.stop().await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn profiling_false_removes_pprof_and_debug_flags_from_the_secure_port() {
    let mut on = ApiServer::start(&[]).await;
    let admin = on.admin_client();
    for path in ["/debug/pprof/", "/debug/pprof/profile?seconds=0"] {
        let reply = admin.get(Proto::H1, path).await.unwrap();
        assert_ne!(reply.status, 404, "{path}: {}", reply.body);
    }
    on.stop().await;
    let mut off = ApiServer::start(&["--profiling=false"]).await;
    let admin = off.admin_client();
    for path in [
        "/debug/pprof",
        "/debug/pprof/",
        "/debug/pprof/profile?seconds=1",
        "/debug/pprof/heap",
        "/debug/flags/v",
    ] {
        let reply = admin.get(Proto::H1, path).await.unwrap();
        assert_eq!(reply.status, 404, "{path}: {}", reply.body);
    }
    off.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn systemd_notify_sends_ready_once_serving_and_nothing_at_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notify.sock");
    let socket = tokio::net::UnixDatagram::bind(&path).unwrap();
    let mut server = ApiServer::builder()
        .env("NOTIFY_SOCKET", path.display().to_string())
        .start()
        .await;
    let mut buf = [0u8; 256];
    let n = tokio::time::timeout(DEADLINE, socket.recv(&mut buf))
        .await
        .expect("READY=1 in time")
        .unwrap();
    assert_eq!(&buf[..n], b"READY=1\n");
    server.sigterm();
    assert_eq!(server.wait_exit().await.code(), Some(0));
    // Upstream sends no STOPPING=1 (nor anything else) after READY=1.
    assert!(
        socket.try_recv(&mut buf).is_err(),
        "unexpected notification: {:?}",
        String::from_utf8_lossy(&buf)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn audit_log_has_json_events_for_requests_flushed_before_exit() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n",
    )
    .unwrap();
    let log = dir.path().join("audit.log");
    // AlwaysDeny keeps anonymous requests authenticated (AlwaysAllow would turn them off).
    let mut server = ApiServer::start(&[
        &format!("--audit-policy-file={}", policy.display()),
        &format!("--audit-log-path={}", log.display()),
        "--authorization-mode=AlwaysDeny",
    ])
    .await;
    let admin = server.admin_client();
    assert_eq!(
        admin
            .get(Proto::H1, "/version?probe=one")
            .await
            .unwrap()
            .status,
        200
    );
    assert_eq!(
        server
            .anonymous_client()
            .get(Proto::H2, "/no-such-path?probe=two")
            .await
            .unwrap()
            .status,
        403
    );
    server.stop().await;

    let text = std::fs::read_to_string(&log).unwrap();
    let events: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let find = |uri: &str, stage: &str| {
        events
            .iter()
            .find(|e| e["requestURI"] == uri && e["stage"] == stage)
            .unwrap_or_else(|| panic!("no {stage} event for {uri} in:\n{text}"))
            .clone()
    };
    let one = find("/version?probe=one", "ResponseComplete");
    assert_eq!(one["kind"], "Event");
    assert_eq!(one["apiVersion"], "audit.k8s.io/v1");
    assert_eq!(one["level"], "Metadata");
    assert_eq!(one["verb"], "get");
    assert_eq!(one["user"]["username"], "admin");
    assert_eq!(one["responseStatus"]["code"], 200);
    find("/version?probe=one", "RequestReceived");
    let two = find("/no-such-path?probe=two", "ResponseComplete");
    assert_eq!(two["user"]["username"], "system:anonymous");
    assert_eq!(two["responseStatus"]["code"], 403);
}

#[tokio::test(flavor = "multi_thread")]
async fn always_deny_forbids_anonymous_with_the_upstream_message_and_allows_system_masters() {
    let mut server = ApiServer::start(&["--authorization-mode=AlwaysDeny"]).await;
    let reply = server
        .anonymous_client()
        .get(Proto::H1, "/version")
        .await
        .unwrap();
    assert_eq!(reply.status, 403, "{}", reply.body);
    assert_eq!(reply.headers["content-type"], "application/json");
    let status: serde_json::Value = serde_json::from_str(&reply.body).unwrap();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(status["code"], 403);
    assert_eq!(
        status["message"],
        "forbidden: User \"system:anonymous\" cannot get path \"/version\": Everything is forbidden."
    );
    let reply = server
        .admin_client()
        .get(Proto::H2, "/version")
        .await
        .unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
    server.stop().await;
}
