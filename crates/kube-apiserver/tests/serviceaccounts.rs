//! Service accounts end to end with real clients: `kubectl create token`, tokens used with
//! `kubectl --token`, `kubectl auth whoami`, bound tokens invalidated with their objects, the
//! issuer's discovery documents checked with an independent JWT library, TokenReview through
//! `kubectl create -f`, bootstrap and legacy secret tokens, and the signing key kept across a
//! restart.

mod common;

use base64::Engine;
use common::client::Proto;
use common::{ApiServer, eventually, run_to_exit, run_tool};
use serde_json::{Value, json};

/// upstream's 401 body, byte for byte.
const UNAUTHORIZED: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}"#;

/// `kubectl-1.35 <args>` as the admin; asserts success and returns stdout.
async fn admin(server: &ApiServer, args: &[&str]) -> String {
    let kubeconfig = server.kubeconfig().display().to_string();
    let mut all = vec!["--kubeconfig", kubeconfig.as_str()];
    all.extend_from_slice(args);
    let out = run_tool("kubectl-1.35", &server.data_dir, &all).await;
    assert_eq!(out.code, Some(0), "kubectl {args:?}: {out:?}");
    out.stdout
}

/// `kubectl-1.35 <args>` as the admin, piping `stdin_file` with `-f`.
async fn admin_apply(server: &ApiServer, manifest: &str, args: &[&str]) -> String {
    let path = server
        .data_dir
        .join(format!("manifest-{}.yaml", uuid::Uuid::new_v4()));
    std::fs::write(&path, manifest).unwrap();
    let file = path.display().to_string();
    let mut all = args.to_vec();
    all.extend_from_slice(&["-f", file.as_str()]);
    admin(server, &all).await
}

/// `kubectl-1.35 <args>` authenticating with `token` only.
async fn with_token(server: &ApiServer, token: &str, args: &[&str]) -> common::ToolOutput {
    let server_flag = format!("--server=https://127.0.0.1:{}", server.addr.port());
    let ca_flag = format!(
        "--certificate-authority={}",
        server.pki().join("ca.crt").display()
    );
    let token_flag = format!("--token={token}");
    let mut all = vec![server_flag.as_str(), ca_flag.as_str(), token_flag.as_str()];
    all.extend_from_slice(args);
    run_tool("kubectl-1.35", &server.data_dir, &all).await
}

/// `kubectl auth whoami -o json` with `token`: the SelfSubjectReview's `status.userInfo`.
async fn whoami(server: &ApiServer, token: &str) -> Value {
    let out = with_token(server, token, &["auth", "whoami", "-o", "json"]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    let review: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(review["kind"], "SelfSubjectReview", "{review}");
    review["status"]["userInfo"].clone()
}

/// The status and body of `GET /version` with `token` (what a wrong token gets).
async fn get_with_token(server: &ApiServer, token: &str) -> (u16, String) {
    let reply = server
        .anonymous_client()
        .with_bearer(token)
        .get(Proto::H1, "/version")
        .await
        .unwrap();
    (reply.status.as_u16(), reply.body)
}

fn claims_of(token: &str) -> Value {
    let payload = token.split('.').nth(1).expect("a JWS");
    serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap(),
    )
    .unwrap()
}

async fn create_token(server: &ApiServer, args: &[&str]) -> String {
    let mut all = vec!["create", "token"];
    all.extend_from_slice(args);
    admin(server, &all).await.trim().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_create_token_authenticates_as_the_service_account_and_whoami_shows_it() {
    let mut server = ApiServer::start(&[]).await;
    admin(&server, &["create", "serviceaccount", "robot"]).await;
    let token = create_token(&server, &["robot"]).await;

    let claims = claims_of(&token);
    assert_eq!(
        claims["iss"],
        "https://kubernetes.default.svc.cluster.local"
    );
    assert_eq!(
        claims["aud"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
    assert_eq!(claims["sub"], "system:serviceaccount:default:robot");
    assert_eq!(claims["kubernetes.io"]["namespace"], "default");
    assert_eq!(claims["kubernetes.io"]["serviceaccount"]["name"], "robot");
    assert_eq!(
        claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
        3600
    );
    let uid = admin(
        &server,
        &["get", "sa", "robot", "-o", "jsonpath={.metadata.uid}"],
    )
    .await;
    assert_eq!(
        claims["kubernetes.io"]["serviceaccount"]["uid"],
        uid.as_str()
    );

    let user = whoami(&server, &token).await;
    assert_eq!(user["username"], "system:serviceaccount:default:robot");
    assert_eq!(user["uid"], uid.as_str());
    assert_eq!(
        user["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );
    assert_eq!(
        user["extra"]["authentication.kubernetes.io/credential-id"],
        json!([format!("JTI={}", claims["jti"].as_str().unwrap())])
    );

    // The token works for ordinary requests too.
    let out = with_token(&server, &token, &["get", "serviceaccounts", "-o", "name"]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(out.stdout.contains("serviceaccount/robot"), "{out:?}");
    // Counted as upstream counts valid bound tokens.
    let kubeconfig = server.kubeconfig().display().to_string();
    let metrics = run_tool(
        "kubectl-1.35",
        &server.data_dir,
        &["--kubeconfig", &kubeconfig, "get", "--raw", "/metrics"],
    )
    .await
    .stdout;
    let valid = metrics
        .lines()
        .find_map(|l| l.strip_prefix("serviceaccount_valid_tokens_total "))
        .and_then(|v| v.trim().parse::<f64>().ok());
    assert!(valid.is_some_and(|v| v >= 1.0), "{valid:?}");
    assert!(
        metrics.contains("serviceaccount_legacy_tokens_total 0"),
        "no legacy token was used"
    );

    // Durations and audiences as asked; the shortest allowed is 10 minutes.
    let token = create_token(&server, &["robot", "--duration=20m", "--audience=vault"]).await;
    let claims = claims_of(&token);
    assert_eq!(claims["aud"], json!(["vault"]));
    assert_eq!(
        claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
        1200
    );
    let out = run_tool(
        "kubectl-1.35",
        &server.data_dir,
        &[
            "--kubeconfig",
            &kubeconfig,
            "create",
            "token",
            "robot",
            "--duration=5m",
        ],
    )
    .await;
    assert_ne!(out.code, Some(0));
    assert!(
        out.stderr
            .contains("spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes"),
        "{out:?}"
    );
    // A token for another audience is not valid for the API.
    assert_eq!(
        get_with_token(&server, &token).await,
        (401, format!("{UNAUTHORIZED}\n"))
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn pod_bound_token_is_rejected_once_the_pod_is_gone_or_the_account_recreated() {
    let mut server = ApiServer::start(&[]).await;
    admin(&server, &["create", "serviceaccount", "worker"]).await;
    admin_apply(
        &server,
        r#"
apiVersion: v1
kind: Pod
metadata: {name: job}
spec:
  serviceAccountName: worker
  containers: [{name: main, image: busybox}]
"#,
        &["create"],
    )
    .await;
    let pod_uid = admin(
        &server,
        &["get", "pod", "job", "-o", "jsonpath={.metadata.uid}"],
    )
    .await;
    let token = create_token(
        &server,
        &[
            "worker",
            "--bound-object-kind=Pod",
            "--bound-object-name=job",
        ],
    )
    .await;
    let user = whoami(&server, &token).await;
    assert_eq!(
        user["extra"]["authentication.kubernetes.io/pod-name"],
        json!(["job"])
    );
    assert_eq!(
        user["extra"]["authentication.kubernetes.io/pod-uid"],
        json!([pod_uid])
    );

    // Binding to a pod that does not exist, or to another uid, is refused.
    let kubeconfig = server.kubeconfig().display().to_string();
    let out = run_tool(
        "kubectl-1.35",
        &server.data_dir,
        &[
            "--kubeconfig",
            &kubeconfig,
            "create",
            "token",
            "worker",
            "--bound-object-kind=Pod",
            "--bound-object-name=nope",
        ],
    )
    .await;
    assert!(out.stderr.contains(r#"pods "nope" not found"#), "{out:?}");
    let reply = server
        .admin_client()
        .send(
            Proto::H1,
            server.admin_client().request(
                http::Method::POST,
                "/api/v1/namespaces/default/serviceaccounts/worker/token",
                &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                        "spec": {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "job", "uid": "other"}}})
                .to_string(),
            ),
        )
        .await
        .unwrap();
    assert_eq!(reply.status, 409, "{}", reply.body);
    assert!(
        reply.body.contains(
            "the UID in the bound object reference (other) does not match the UID in record"
        ),
        "{}",
        reply.body
    );

    admin(
        &server,
        &["delete", "pod", "job", "--grace-period=0", "--force"],
    )
    .await;
    eventually("the pod-bound token is refused", || async {
        (get_with_token(&server, &token).await.0 == 401).then_some(())
    })
    .await;
    let out = with_token(&server, &token, &["auth", "whoami"]).await;
    assert_ne!(out.code, Some(0));
    assert!(
        out.stderr
            .contains("error: You must be logged in to the server (Unauthorized)"),
        "{out:?}"
    );

    // A token of the account alone dies with the account, also when a new one takes its name.
    let token = create_token(&server, &["worker"]).await;
    assert_eq!(get_with_token(&server, &token).await.0, 200);
    admin(&server, &["delete", "serviceaccount", "worker"]).await;
    admin(&server, &["create", "serviceaccount", "worker"]).await;
    eventually("the token of the old account is refused", || async {
        (get_with_token(&server, &token).await.0 == 401).then_some(())
    })
    .await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn discovery_keys_verify_a_kubectl_token_with_an_independent_jwt_library() {
    let mut server = ApiServer::start(&[]).await;
    admin(&server, &["create", "serviceaccount", "robot"]).await;
    let token = create_token(&server, &["robot", "--audience=vault"]).await;

    let client = server.admin_client();
    let config = client
        .get(Proto::H1, "/.well-known/openid-configuration")
        .await
        .unwrap();
    assert_eq!(config.status, 200);
    assert_eq!(config.headers["content-type"], "application/json");
    assert_eq!(config.headers["cache-control"], "public, max-age=3600");
    let config: Value = serde_json::from_str(&config.body).unwrap();
    assert_eq!(
        config["issuer"],
        "https://kubernetes.default.svc.cluster.local"
    );
    assert_eq!(
        config["jwks_uri"],
        format!("https://127.0.0.1:{}/openid/v1/jwks", server.addr.port())
    );
    assert_eq!(config["response_types_supported"], json!(["id_token"]));
    assert_eq!(config["subject_types_supported"], json!(["public"]));
    assert_eq!(
        config["id_token_signing_alg_values_supported"],
        json!(["ES256"])
    );

    let keys = client.get(Proto::H1, "/openid/v1/jwks").await.unwrap();
    assert_eq!(keys.status, 200);
    assert_eq!(keys.headers["content-type"], "application/jwk-set+json");
    assert_eq!(keys.headers["cache-control"], "public, max-age=3600");
    let set: jsonwebtoken::jwk::JwkSet = serde_json::from_str(&keys.body).unwrap();
    let header = jsonwebtoken::decode_header(&token).unwrap();
    let jwk = set
        .find(header.kid.as_deref().unwrap())
        .expect("the token's key");
    let key = jsonwebtoken::DecodingKey::from_jwk(jwk).unwrap();
    let mut validation = jsonwebtoken::Validation::new(header.alg);
    validation.set_audience(&["vault"]);
    validation.set_issuer(&["https://kubernetes.default.svc.cluster.local"]);
    let data = jsonwebtoken::decode::<Value>(&token, &key, &validation).unwrap();
    assert_eq!(data.claims["sub"], "system:serviceaccount:default:robot");

    // A token signed with another key does not verify.
    let other = jsonwebtoken::EncodingKey::from_ec_pem(
        rcgen::KeyPair::generate()
            .unwrap()
            .serialize_pem()
            .as_bytes(),
    )
    .unwrap();
    let forged =
        jsonwebtoken::encode(&jsonwebtoken::Header::new(header.alg), &data.claims, &other).unwrap();
    assert!(jsonwebtoken::decode::<Value>(&forged, &key, &validation).is_err());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_token_cache_counts_hits_misses_and_fetches_in_metrics() {
    let mut server = ApiServer::start(&[]).await;
    admin(&server, &["create", "serviceaccount", "robot"]).await;
    let token = create_token(&server, &["robot"]).await;
    // The first request verifies the token (a miss and a fetch), the next ones are answered
    // from the cache.
    for _ in 0..3 {
        assert_eq!(get_with_token(&server, &token).await.0, 200);
    }
    let metrics = server
        .admin_client()
        .get(Proto::H1, "/metrics")
        .await
        .unwrap()
        .body;
    let value = |series: &str| {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(series)?.trim().parse::<f64>().ok())
    };
    let hits = value("authentication_token_cache_request_total{status=\"hit\"}");
    assert!(hits.is_some_and(|v| v >= 2.0), "{metrics}");
    let misses = value("authentication_token_cache_request_total{status=\"miss\"}");
    assert!(misses.is_some_and(|v| v >= 1.0), "{metrics}");
    let fetched = value("authentication_token_cache_fetch_total{status=\"ok\"}");
    assert!(fetched.is_some_and(|v| v >= 1.0), "{metrics}");
    assert_eq!(
        value("authentication_token_cache_active_fetch_count{status=\"in_flight\"}"),
        Some(0.0)
    );
    let timed = value("authentication_token_cache_request_duration_seconds_count{status=\"hit\"}");
    assert_eq!(timed, hits);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_audit_log_ties_a_token_request_to_the_requests_made_with_its_token() {
    let tmp = tempfile::tempdir().unwrap();
    let policy = tmp.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n",
    )
    .unwrap();
    let log = tmp.path().join("audit.log");
    let mut server = ApiServer::start(&[
        &format!("--audit-policy-file={}", policy.display()),
        &format!("--audit-log-path={}", log.display()),
    ])
    .await;
    admin(&server, &["create", "serviceaccount", "robot"]).await;
    let token = create_token(&server, &["robot"]).await;
    let jti = claims_of(&token)["jti"].as_str().unwrap().to_string();
    assert!(!jti.is_empty());
    let reply = server
        .anonymous_client()
        .with_bearer(&token)
        .get(Proto::H1, "/version?probe=credential")
        .await
        .unwrap();
    assert_eq!(reply.status, 200, "{reply:?}");
    server.stop().await;

    let text = std::fs::read_to_string(&log).unwrap();
    let events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|e: &Value| e["stage"] == "ResponseComplete")
        .collect();
    let token_request = events
        .iter()
        .find(|e| {
            e["objectRef"]["resource"] == "serviceaccounts"
                && e["objectRef"]["subresource"] == "token"
        })
        .unwrap_or_else(|| panic!("no TokenRequest event in:\n{text}"));
    assert_eq!(
        token_request["annotations"]["authentication.kubernetes.io/issued-credential-id"],
        format!("JTI={jti}"),
        "{token_request}"
    );
    let used = events
        .iter()
        .find(|e| e["requestURI"] == "/version?probe=credential")
        .unwrap_or_else(|| panic!("no event for the token's request in:\n{text}"));
    assert_eq!(
        used["user"]["username"],
        "system:serviceaccount:default:robot"
    );
    assert_eq!(
        used["user"]["extra"]["authentication.kubernetes.io/credential-id"],
        json!([format!("JTI={jti}")]),
        "{used}"
    );
    // Other requests do not carry the annotation.
    assert!(
        events
            .iter()
            .filter(|e| e["objectRef"]["subresource"] != "token")
            .all(|e| e["annotations"]
                .get("authentication.kubernetes.io/issued-credential-id")
                .is_none())
    );
}

/// A P-521 key (SEC 1 and PKCS#8, made with `openssl ecparam -name secp521r1`) and its
/// public half, from the unit tests' data.
fn p521_key_file(name: &str) -> String {
    format!(
        "{}/src/serviceaccount/testdata/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_p521_signing_key_issues_es512_tokens_the_api_and_an_independent_library_verify() {
    let signing = format!(
        "--service-account-signing-key-file={}",
        p521_key_file("p521.pkcs8.pem")
    );
    let public = format!(
        "--service-account-key-file={}",
        p521_key_file("p521.pub.pem")
    );
    let mut server = ApiServer::start(&[&signing, &public]).await;
    admin(&server, &["create", "serviceaccount", "robot"]).await;
    let token = create_token(&server, &["robot", "--audience=vault"]).await;
    let header: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token.split('.').next().unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(header["alg"], "ES512", "{header}");

    // The API verifies it: a TokenReview for its audience, and a request made with a token
    // for the API's own audience.
    let review = format!(
        "apiVersion: authentication.k8s.io/v1\nkind: TokenReview\nspec:\n  token: {token}\n  audiences: [vault]\n"
    );
    let out = admin_apply(&server, &review, &["create", "-o", "json"]).await;
    let got: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(got["status"]["authenticated"], true, "{got}");
    assert_eq!(
        got["status"]["user"]["username"],
        "system:serviceaccount:default:robot"
    );
    let api_token = create_token(&server, &["robot"]).await;
    let user = whoami(&server, &api_token).await;
    assert_eq!(user["username"], "system:serviceaccount:default:robot");

    // The discovery documents name ES512 and publish the key with crv P-521.
    let client = server.admin_client();
    let config = client
        .get(Proto::H1, "/.well-known/openid-configuration")
        .await
        .unwrap();
    let config: Value = serde_json::from_str(&config.body).unwrap();
    assert_eq!(
        config["id_token_signing_alg_values_supported"],
        json!(["ES512"])
    );
    let keys = client.get(Proto::H1, "/openid/v1/jwks").await.unwrap();
    assert_eq!(keys.status, 200);
    let jwks: Value = serde_json::from_str(&keys.body).unwrap();
    assert_eq!(jwks["keys"].as_array().unwrap().len(), 1, "{jwks}");
    assert_eq!(jwks["keys"][0]["crv"], "P-521");
    assert_eq!(jwks["keys"][0]["alg"], "ES512");
    assert_eq!(jwks["keys"][0]["kid"], header["kid"]);

    // jwtk (OpenSSL's ECDSA) verifies the token against the published key set.
    let set: jwtk::jwk::JwkSet = serde_json::from_str(&keys.body).unwrap();
    let verified = set
        .verifier()
        .verify::<serde_json::Map<String, Value>>(&token)
        .unwrap();
    assert_eq!(
        verified.claims().sub.as_deref(),
        Some("system:serviceaccount:default:robot")
    );
    assert_eq!(
        verified.claims().iss.as_deref(),
        Some("https://kubernetes.default.svc.cluster.local")
    );
    // A token whose payload was changed does not verify.
    let mut parts: Vec<String> = token.split('.').map(str::to_string).collect();
    let mut claims = claims_of(&token);
    claims["sub"] = json!("system:serviceaccount:kube-system:admin");
    parts[1] = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(claims.to_string());
    let forged = parts.join(".");
    assert!(
        set.verifier()
            .verify::<serde_json::Map<String, Value>>(&forged)
            .is_err()
    );
    assert_eq!(get_with_token(&server, &forged).await.0, 401);

    server.stop().await;
}

/// Signs `claims` with the server's generated signing key (as a controller holding the key
/// would), with the key ID the server publishes.
fn sign_with_server_key(server: &ApiServer, claims: &Value) -> String {
    let pem = std::fs::read(server.pki().join("sa.key")).unwrap();
    let key = jsonwebtoken::EncodingKey::from_ec_pem(&pem).unwrap();
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256),
        claims,
        &key,
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn expired_foreign_wrongly_audienced_and_garbage_tokens_get_upstreams_401() {
    let mut server = ApiServer::start(&[]).await;
    admin(&server, &["create", "serviceaccount", "robot"]).await;
    let uid = admin(
        &server,
        &["get", "sa", "robot", "-o", "jsonpath={.metadata.uid}"],
    )
    .await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let claims = |iss: &str, aud: &str, exp: i64| {
        json!({
            "iss": iss, "aud": [aud], "sub": "system:serviceaccount:default:robot",
            "iat": now - 7200, "nbf": now - 7200, "exp": exp,
            "kubernetes.io": {"namespace": "default", "serviceaccount": {"name": "robot", "uid": uid}},
        })
    };
    let issuer = "https://kubernetes.default.svc.cluster.local";
    let good = sign_with_server_key(&server, &claims(issuer, issuer, now + 600));
    assert_eq!(get_with_token(&server, &good).await.0, 200);

    for (why, token) in [
        (
            "expired",
            sign_with_server_key(&server, &claims(issuer, issuer, now - 120)),
        ),
        (
            "another issuer",
            sign_with_server_key(&server, &claims("https://other", issuer, now + 600)),
        ),
        (
            "another audience",
            sign_with_server_key(&server, &claims(issuer, "vault", now + 600)),
        ),
        ("garbage", "not-a-token".to_string()),
        ("tampered", format!("{}x", &good[..good.len() - 1])),
    ] {
        assert_eq!(
            get_with_token(&server, &token).await,
            (401, format!("{UNAUTHORIZED}\n")),
            "{why}"
        );
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn tokenreview_through_kubectl_create_reports_the_user_or_the_error() {
    let mut server = ApiServer::start(&[]).await;
    admin(&server, &["create", "serviceaccount", "robot"]).await;
    let token = create_token(&server, &["robot", "--audience=vault"]).await;
    let review = |token: &str, audiences: &str| {
        format!(
            "apiVersion: authentication.k8s.io/v1\nkind: TokenReview\nspec:\n  token: {token}\n  audiences: {audiences}\n"
        )
    };
    let out = admin_apply(
        &server,
        &review(&token, "[vault]"),
        &["create", "-o", "json"],
    )
    .await;
    let got: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(got["status"]["authenticated"], true, "{got}");
    assert_eq!(
        got["status"]["user"]["username"],
        "system:serviceaccount:default:robot"
    );
    assert_eq!(got["status"]["audiences"], json!(["vault"]));
    assert_eq!(got["metadata"], json!({"creationTimestamp": null}));

    // Checked against the API audiences, the vault token fails with upstream's error.
    let out = admin_apply(&server, &review(&token, "[]"), &["create", "-o", "json"]).await;
    let got: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(got["status"].get("authenticated"), None, "{got}");
    assert_eq!(
        got["status"]["error"],
        r#"token audiences ["vault"] is invalid for the target audiences ["https://kubernetes.default.svc.cluster.local"]"#
    );
    let out = admin_apply(&server, &review("garbage", "[]"), &["create", "-o", "json"]).await;
    let got: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(got["status"]["error"], "invalid bearer token", "{got}");

    // The old kubectl reviews tokens the same way.
    let path = server.data_dir.join("review-1.20.yaml");
    std::fs::write(&path, review(&token, "[vault]")).unwrap();
    let kubeconfig = server.kubeconfig().display().to_string();
    let file = path.display().to_string();
    let out = run_tool(
        "kubectl-1.20",
        &server.data_dir,
        &[
            "--kubeconfig",
            &kubeconfig,
            "create",
            "-o",
            "json",
            "-f",
            &file,
        ],
    )
    .await;
    assert_eq!(out.code, Some(0), "{out:?}");
    let got: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(got["status"]["authenticated"], true, "{got}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_minted_before_a_restart_still_authenticates_after_it() {
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().join("data");
    let mut server = ApiServer::builder().data_dir(&dir).start().await;
    admin(&server, &["create", "serviceaccount", "robot"]).await;
    let token = create_token(&server, &["robot"]).await;
    let key = std::fs::read(server.pki().join("sa.key")).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(server.pki().join("sa.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    server.stop().await;

    let mut server = ApiServer::builder().data_dir(&dir).start().await;
    assert_eq!(std::fs::read(server.pki().join("sa.key")).unwrap(), key);
    let user = whoami(&server, &token).await;
    assert_eq!(user["username"], "system:serviceaccount:default:robot");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bootstrap_tokens_authenticate_as_system_bootstrap_users_when_enabled() {
    let mut server = ApiServer::start(&["--enable-bootstrap-token-auth"]).await;
    admin_apply(
        &server,
        r#"
apiVersion: v1
kind: Secret
metadata: {name: bootstrap-token-abcdef, namespace: kube-system}
type: bootstrap.kubernetes.io/token
stringData:
  token-id: abcdef
  token-secret: 0123456789abcdef
  usage-bootstrap-authentication: "true"
  auth-extra-groups: system:bootstrappers:kubeadm:default-node-token
"#,
        &["create"],
    )
    .await;
    let user = eventually("the bootstrap token authenticates", || async {
        let out = with_token(
            &server,
            "abcdef.0123456789abcdef",
            &["auth", "whoami", "-o", "json"],
        )
        .await;
        (out.code == Some(0)).then(|| serde_json::from_str::<Value>(&out.stdout).unwrap())
    })
    .await;
    assert_eq!(
        user["status"]["userInfo"]["username"],
        "system:bootstrap:abcdef"
    );
    assert_eq!(
        user["status"]["userInfo"]["groups"],
        json!([
            "system:bootstrappers",
            "system:bootstrappers:kubeadm:default-node-token",
            "system:authenticated"
        ])
    );
    assert_eq!(
        get_with_token(&server, "abcdef.ffffffffffffffff").await.0,
        401
    );
    server.stop().await;

    // Off by default.
    let mut server = ApiServer::start(&[]).await;
    assert_eq!(
        get_with_token(&server, "abcdef.0123456789abcdef").await.0,
        401
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn legacy_secret_tokens_authenticate_while_their_secret_holds_them() {
    let mut server = ApiServer::start(&[]).await;
    admin(&server, &["create", "serviceaccount", "old"]).await;
    let uid = admin(
        &server,
        &["get", "sa", "old", "-o", "jsonpath={.metadata.uid}"],
    )
    .await;
    let token = sign_with_server_key(
        &server,
        &json!({
            "iss": "kubernetes/serviceaccount",
            "sub": "system:serviceaccount:default:old",
            "kubernetes.io/serviceaccount/namespace": "default",
            "kubernetes.io/serviceaccount/secret.name": "old-token",
            "kubernetes.io/serviceaccount/service-account.name": "old",
            "kubernetes.io/serviceaccount/service-account.uid": uid,
        }),
    );
    assert_eq!(get_with_token(&server, &token).await.0, 401);
    admin_apply(
        &server,
        &format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: old-token\n  annotations: {{kubernetes.io/service-account.name: old}}\ntype: kubernetes.io/service-account-token\nstringData:\n  token: {token}\n"
        ),
        &["create"],
    )
    .await;
    let user = eventually("the legacy token authenticates", || async {
        let out = with_token(&server, &token, &["auth", "whoami", "-o", "json"]).await;
        (out.code == Some(0)).then(|| serde_json::from_str::<Value>(&out.stdout).unwrap())
    })
    .await;
    assert_eq!(
        user["status"]["userInfo"]["username"],
        "system:serviceaccount:default:old"
    );
    // The use is recorded on the secret, once a day.
    let today = jiff::Timestamp::now().strftime("%Y-%m-%d").to_string();
    eventually("the secret is labelled as used today", || async {
        let label = admin(
            &server,
            &[
                "get",
                "secret",
                "old-token",
                "-o",
                r"jsonpath={.metadata.labels.kubernetes\.io/legacy-token-last-used}",
            ],
        )
        .await;
        (label == today).then_some(())
    })
    .await;
    // A secret the account lists is an auto-generated one: its users are warned.
    admin(
        &server,
        &[
            "patch",
            "sa",
            "old",
            "-p",
            r#"{"secrets":[{"name":"old-token"}]}"#,
        ],
    )
    .await;
    eventually("the auto-generated token's user is warned", || async {
        let out = with_token(&server, &token, &["auth", "whoami"]).await;
        out.stderr
            .contains("Warning: Use tokens from the TokenRequest API or manually created secret-based tokens instead of auto-generated secret-based tokens.")
            .then_some(())
    })
    .await;
    admin(&server, &["delete", "secret", "old-token"]).await;
    eventually("the token of the deleted secret is refused", || async {
        (get_with_token(&server, &token).await.0 == 401).then_some(())
    })
    .await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_service_account_flags_stop_start_up_with_upstreams_messages() {
    for (args, message) in [
        (
            vec!["--service-account-max-token-expiration=30m"],
            "the service-account-max-token-expiration must be between 1 hour and 2^32 seconds",
        ),
        (
            vec![
                "--service-account-issuer=https://a",
                "--service-account-issuer=https://a",
            ],
            r#"service-account-issuer "https://a" is already specified"#,
        ),
        (
            vec!["--service-account-signing-key-file=/nonexistent/key.pem"],
            "--service-account-signing-key-file",
        ),
    ] {
        let out = run_to_exit(&args).await;
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn discovery_and_openapi_show_the_authentication_group_and_the_token_subresource() {
    let mut server = ApiServer::start(&[]).await;
    assert_eq!(
        admin(&server, &["get", "--raw", "/apis/authentication.k8s.io/v1"])
            .await
            .trim_end(),
        r#"{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"authentication.k8s.io/v1","resources":[{"name":"selfsubjectreviews","singularName":"selfsubjectreview","namespaced":false,"kind":"SelfSubjectReview","verbs":["create"]},{"name":"tokenreviews","singularName":"tokenreview","namespaced":false,"kind":"TokenReview","verbs":["create"]}]}"#
    );
    let core: Value =
        serde_json::from_str(&admin(&server, &["get", "--raw", "/api/v1"]).await).unwrap();
    let token = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "serviceaccounts/token")
        .expect("serviceaccounts/token");
    assert_eq!(
        token,
        &json!({"name": "serviceaccounts/token", "singularName": "", "namespaced": true,
                "group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest",
                "verbs": ["create"]})
    );

    let v3: Value =
        serde_json::from_str(&admin(&server, &["get", "--raw", "/openapi/v3/api/v1"]).await)
            .unwrap();
    let post = &v3["paths"]["/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"]["post"];
    assert_eq!(
        post["operationId"],
        "createCoreV1NamespacedServiceAccountToken"
    );
    assert_eq!(
        post["x-kubernetes-group-version-kind"],
        json!({"group": "authentication.k8s.io", "kind": "TokenRequest", "version": "v1"})
    );
    let v3: Value = serde_json::from_str(
        &admin(
            &server,
            &["get", "--raw", "/openapi/v3/apis/authentication.k8s.io/v1"],
        )
        .await,
    )
    .unwrap();
    let paths: Vec<&String> = v3["paths"].as_object().unwrap().keys().collect();
    assert_eq!(
        paths,
        vec![
            "/apis/authentication.k8s.io/v1/",
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            "/apis/authentication.k8s.io/v1/tokenreviews",
        ]
    );
    let review = &v3["paths"]["/apis/authentication.k8s.io/v1/tokenreviews"];
    assert_eq!(
        review["post"]["operationId"],
        "createAuthenticationV1TokenReview"
    );
    assert!(review.get("get").is_none());
    let explained = admin(&server, &["explain", "tokenreviews.status.user"]).await;
    assert!(explained.contains("FIELD: user <UserInfo>"), "{explained}");
    server.stop().await;
}

/// POSTs a TokenRequest for `sa` as the admin; returns the status code, the `Warning` header
/// and the body.
async fn token_request(server: &ApiServer, sa: &str, spec: Value) -> (u16, String, Value) {
    let client = server.admin_client();
    let reply = client
        .send(
            Proto::H1,
            client.request(
                http::Method::POST,
                &format!("/api/v1/namespaces/default/serviceaccounts/{sa}/token"),
                &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec})
                    .to_string(),
            ),
        )
        .await
        .unwrap();
    let warning = reply
        .headers
        .get("warning")
        .map(|w| w.to_str().unwrap().to_string())
        .unwrap_or_default();
    (
        reply.status.as_u16(),
        warning,
        serde_json::from_str(&reply.body).unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn token_requests_bind_nodes_and_secrets_extend_admission_pod_tokens_and_obey_the_maximum() {
    let mut server = ApiServer::start(&["--service-account-max-token-expiration=2h"]).await;
    admin(&server, &["create", "serviceaccount", "agent"]).await;
    admin_apply(
        &server,
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n",
        &["create"],
    )
    .await;
    admin(
        &server,
        &["create", "secret", "generic", "s1", "--from-literal=a=b"],
    )
    .await;
    let node_uid = admin(
        &server,
        &["get", "node", "n1", "-o", "jsonpath={.metadata.uid}"],
    )
    .await;

    let token = create_token(
        &server,
        &[
            "agent",
            "--bound-object-kind=Node",
            "--bound-object-name=n1",
        ],
    )
    .await;
    let user = whoami(&server, &token).await;
    assert_eq!(
        user["extra"]["authentication.kubernetes.io/node-name"],
        json!(["n1"])
    );
    assert_eq!(
        user["extra"]["authentication.kubernetes.io/node-uid"],
        json!([node_uid])
    );
    let token = create_token(
        &server,
        &[
            "agent",
            "--bound-object-kind=Secret",
            "--bound-object-name=s1",
        ],
    )
    .await;
    assert_eq!(claims_of(&token)["kubernetes.io"]["secret"]["name"], "s1");
    assert_eq!(get_with_token(&server, &token).await.0, 200);
    admin(&server, &["delete", "secret", "s1"]).await;
    eventually("the secret-bound token is refused", || async {
        (get_with_token(&server, &token).await.0 == 401).then_some(())
    })
    .await;

    // Longer than --service-account-max-token-expiration: shortened, with upstream's warning.
    let (code, warning, body) =
        token_request(&server, "agent", json!({"expirationSeconds": 10800})).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        warning,
        r#"299 - "requested expiration of 10800 seconds shortened to 7200 seconds""#
    );
    assert_eq!(body["spec"]["expirationSeconds"], 7200);
    let claims = claims_of(body["status"]["token"].as_str().unwrap());
    assert_eq!(
        claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
        7200
    );

    // The service-account admission plugin's 3607 s pod tokens are valid for a year and warn
    // after the requested hour.
    admin_apply(
        &server,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p1}\nspec:\n  serviceAccountName: agent\n  nodeName: n1\n  containers: [{name: c, image: busybox}]\n",
        &["create"],
    )
    .await;
    let (code, _, body) = token_request(
        &server,
        "agent",
        json!({"expirationSeconds": 3607, "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "p1"}}),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let claims = claims_of(body["status"]["token"].as_str().unwrap());
    let iat = claims["iat"].as_i64().unwrap();
    assert_eq!(claims["exp"].as_i64().unwrap() - iat, 365 * 24 * 3600);
    assert_eq!(
        claims["kubernetes.io"]["warnafter"].as_i64().unwrap() - iat,
        3607
    );
    // The pod's node rides along.
    assert_eq!(claims["kubernetes.io"]["node"]["name"], "n1");
    assert_eq!(claims["kubernetes.io"]["pod"]["name"], "p1");

    // Too short, or bound to a kind tokens cannot be bound to.
    let (code, _, body) = token_request(&server, "agent", json!({"expirationSeconds": 60})).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["message"],
        "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"
    );
    let (code, _, body) = token_request(
        &server,
        "agent",
        json!({"boundObjectRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}}),
    )
    .await;
    assert_eq!(code, 400, "{body}");
    assert_eq!(
        body["message"],
        "cannot bind token for serviceaccount \"agent\" to object of type apps/v1, Kind=Deployment."
    );
    let (code, _, body) = token_request(&server, "nobody", json!({})).await;
    assert_eq!(code, 404, "{body}");
    assert_eq!(body["message"], "serviceaccounts \"nobody\" not found");
    server.stop().await;
}
