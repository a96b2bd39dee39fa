//! Real kubectl clients (1.35 and the old 1.20) against the real binary: the admin
//! kubeconfig, health endpoints, metrics, and token authentication.

mod common;

use common::{ApiServer, run_tool};

/// `kubectl <args>` with the admin kubeconfig; asserts success and returns stdout.
async fn kubectl_admin(kubectl: &str, server: &ApiServer, args: &[&str]) -> String {
    let kubeconfig = server.kubeconfig().display().to_string();
    let mut all = vec!["--kubeconfig", kubeconfig.as_str()];
    all.extend_from_slice(args);
    let out = run_tool(kubectl, &server.data_dir, &all).await;
    assert_eq!(out.code, Some(0), "{kubectl} {args:?}: {out:?}");
    out.stdout
}

async fn version_and_health_endpoints(kubectl: &str) {
    let mut server = ApiServer::start(&[]).await;

    let version = kubectl_admin(kubectl, &server, &["version"]).await;
    assert!(
        version.contains("Server Version: v1.35.0") || version.contains("GitVersion:\"v1.35.0\""),
        "{version}"
    );

    let readyz = kubectl_admin(kubectl, &server, &["get", "--raw", "/readyz?verbose"]).await;
    assert!(readyz.contains("[+]ping ok"), "{readyz}");
    assert!(readyz.contains("[+]shutdown ok"), "{readyz}");
    assert!(
        readyz.trim_end().ends_with("readyz check passed"),
        "{readyz}"
    );

    assert_eq!(
        kubectl_admin(kubectl, &server, &["get", "--raw", "/healthz"]).await,
        "ok"
    );
    assert_eq!(
        kubectl_admin(kubectl, &server, &["get", "--raw", "/livez"]).await,
        "ok"
    );
    let metrics = kubectl_admin(kubectl, &server, &["get", "--raw", "/metrics"]).await;
    assert!(metrics.contains("apiserver_request_total"), "{metrics}");
    // The authentication filter's own metrics, as upstream's.
    assert!(
        metrics.contains("authentication_attempts{result=\"success\"}"),
        "{metrics}"
    );
    assert!(
        metrics.contains("authentication_duration_seconds_bucket{result=\"success\""),
        "{metrics}"
    );
    assert!(
        metrics.contains("authenticated_user_requests{username="),
        "{metrics}"
    );

    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_1_35_gets_version_health_endpoints_and_metrics() {
    version_and_health_endpoints("kubectl-1.35").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_1_20_gets_version_health_endpoints_and_metrics() {
    version_and_health_endpoints("kubectl-1.20").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn token_auth_file_authenticates_kubectl_tokens_and_rejects_a_wrong_one() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    // token,user,uid,"group1,group2"
    std::fs::write(
        &tokens,
        "master-token,root,1,\"system:masters\"\nalice-token,alice,2,\"developers\"\n",
    )
    .unwrap();
    // With AlwaysDeny only system:masters passes, which tells the token users apart from
    // each other and from anonymous.
    let mut server = ApiServer::start(&[
        &format!("--token-auth-file={}", tokens.display()),
        "--authorization-mode=AlwaysDeny",
    ])
    .await;
    let server_url = format!("https://127.0.0.1:{}", server.addr.port());
    let ca = server.pki().join("ca.crt").display().to_string();
    let with_token = |token: &'static str| {
        let server_url = server_url.clone();
        let ca = ca.clone();
        let home = server.data_dir.clone();
        async move {
            let token_flag = format!("--token={token}");
            let server_flag = format!("--server={server_url}");
            let ca_flag = format!("--certificate-authority={ca}");
            run_tool(
                "kubectl-1.35",
                &home,
                &[
                    &server_flag,
                    &ca_flag,
                    &token_flag,
                    "get",
                    "--raw",
                    "/version",
                ],
            )
            .await
        }
    };

    let out = with_token("master-token").await;
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout.contains("\"gitVersion\": \"v1.35.0\""),
        "{out:?}"
    );

    let out = with_token("alice-token").await;
    assert_ne!(out.code, Some(0), "{out:?}");
    assert!(
        out.stderr.contains(
            "Error from server (Forbidden): forbidden: User \"alice\" cannot get path \"/version\": Everything is forbidden."
        ),
        "{out:?}"
    );

    let out = with_token("wrong-token").await;
    assert_ne!(out.code, Some(0), "{out:?}");
    assert!(
        out.stderr
            .contains("error: You must be logged in to the server (Unauthorized)"),
        "{out:?}"
    );

    server.stop().await;
}

/// kubectl sends the `--tls-server-name` verbatim as the TLS server name (SNI), also when it is
/// `host:port`, which is not a DNS name; Go's server ignores such a name and serves the default
/// certificate, and so must this one (rustls alone refuses it with `illegal_parameter`).
async fn sni_with_a_port_is_served(kubectl: &str) {
    let mut server = ApiServer::start(&[]).await;
    let server_name = format!("127.0.0.1:{}", server.addr.port());
    let tls_server_name = format!("--tls-server-name={server_name}");
    // The CA is dropped by --insecure-skip-tls-verify: Go could not verify the certificate
    // against a server name with a port anyway.
    let out = kubectl_admin(
        kubectl,
        &server,
        &[
            "--insecure-skip-tls-verify=true",
            &tls_server_name,
            "get",
            "--raw",
            "/readyz",
        ],
    )
    .await;
    assert_eq!(out, "ok");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_1_35_with_a_server_name_carrying_a_port_is_served() {
    sni_with_a_port_is_served("kubectl-1.35").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_1_20_with_a_server_name_carrying_a_port_is_served() {
    sni_with_a_port_is_served("kubectl-1.20").await;
}
