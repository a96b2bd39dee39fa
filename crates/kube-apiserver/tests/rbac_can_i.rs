//! `kubectl auth can-i` against the bootstrap policy with `--authorization-mode=Node,RBAC`:
//! users bound to `view`, `edit` and `admin` in one namespace get what upstream's aggregated
//! roles grant there and nothing elsewhere; every authenticated user reads the discovery and
//! health paths; a kubelet reads the secret of its own pod only.

mod common;

use common::{ApiServer, eventually, run_tool};
use serde_json::{Value, json};

/// `kubectl auth can-i <args> --as <user>` as the admin: `Some(true)` for yes, `Some(false)`
/// for no, `None` on any other outcome.
async fn can_i(server: &ApiServer, args: &[&str]) -> Option<bool> {
    let kubeconfig = server.kubeconfig().display().to_string();
    let mut all = vec!["--kubeconfig", kubeconfig.as_str(), "auth", "can-i"];
    all.extend_from_slice(args);
    let out = run_tool("kubectl-1.35", &server.data_dir, &all).await;
    match (out.code, out.stdout.trim()) {
        (Some(0), "yes") => Some(true),
        // kubectl prints the review's reason after "no - " when there is one.
        (Some(1), out) if out == "no" || out.starts_with("no - ") => Some(false),
        _ => None,
    }
}

async fn expect(server: &ApiServer, user: &str, args: &[&str], allowed: bool) {
    let mut all = args.to_vec();
    all.extend_from_slice(&["--as", user]);
    assert_eq!(
        can_i(server, &all).await,
        Some(allowed),
        "kubectl auth can-i {all:?}"
    );
}

async fn apply(server: &ApiServer, manifest: &Value) {
    let file = server.data_dir.join("manifest.json");
    std::fs::write(&file, manifest.to_string()).unwrap();
    let kubeconfig = server.kubeconfig().display().to_string();
    let path = file.display().to_string();
    let out = run_tool(
        "kubectl-1.35",
        &server.data_dir,
        &["--kubeconfig", &kubeconfig, "apply", "-f", &path],
    )
    .await;
    assert_eq!(out.code, Some(0), "{out:?}");
}

fn binding(namespace: &str, role: &str, user: &str) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"namespace": namespace, "name": format!("{user}-{role}")},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_can_i_for_users_bound_to_view_edit_and_admin_matches_upstreams_roles() {
    let mut server = ApiServer::start(&["--authorization-mode=Node,RBAC"]).await;
    for ns in ["team", "other"] {
        apply(
            &server,
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )
        .await;
    }
    for (role, user) in [("view", "vera"), ("edit", "ed"), ("admin", "ada")] {
        apply(&server, &binding("team", role, user)).await;
    }
    // Bindings reach the authorizer through its informers.
    eventually("the admin binding is in effect", || async {
        can_i(&server, &["create", "roles", "-n", "team", "--as", "ada"])
            .await
            .filter(|yes| *yes)
    })
    .await;

    let team = ["-n", "team"];
    let cases: &[(&str, &[&str], bool)] = &[
        ("vera", &["get", "pods"], true),
        ("vera", &["list", "deployments.apps"], true),
        ("vera", &["get", "pods", "--subresource=log"], true),
        ("vera", &["get", "secrets"], false),
        ("vera", &["create", "pods"], false),
        ("vera", &["list", "roles.rbac.authorization.k8s.io"], false),
        ("ed", &["create", "deployments.apps"], true),
        ("ed", &["get", "secrets"], true),
        ("ed", &["create", "pods", "--subresource=exec"], true),
        ("ed", &["impersonate", "serviceaccounts"], true),
        (
            "ed",
            &["create", "rolebindings.rbac.authorization.k8s.io"],
            false,
        ),
        ("ed", &["update", "resourcequotas"], false),
        (
            "ada",
            &["create", "rolebindings.rbac.authorization.k8s.io"],
            true,
        ),
        (
            "ada",
            &["create", "localsubjectaccessreviews.authorization.k8s.io"],
            true,
        ),
        ("ada", &["update", "resourcequotas"], false),
        ("ada", &["delete", "namespaces"], false),
    ];
    for (user, args, allowed) in cases {
        let mut all = args.to_vec();
        all.extend_from_slice(&team);
        expect(&server, user, &all, *allowed).await;
    }
    // Nothing in another namespace, nothing cluster-wide.
    expect(&server, "vera", &["get", "pods", "-n", "other"], false).await;
    expect(&server, "ada", &["list", "nodes"], false).await;
    // system:discovery and system:public-info-viewer for every authenticated user.
    expect(&server, "vera", &["get", "/healthz"], true).await;
    expect(&server, "vera", &["get", "/apis"], true).await;
    expect(&server, "vera", &["get", "/metrics"], false).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_can_i_as_a_kubelet_follows_the_node_graph() {
    let mut server = ApiServer::start(&["--authorization-mode=Node,RBAC"]).await;
    for name in ["used", "unused"] {
        apply(
            &server,
            &json!({"apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": name, "namespace": "default"}}),
        )
        .await;
    }
    apply(
        &server,
        &json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p1", "namespace": "default"},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}],
                     "volumes": [{"name": "s", "secret": {"secretName": "used"}}]}
        }),
    )
    .await;
    let kubelet = ["--as", "system:node:n1", "--as-group", "system:nodes"];
    eventually("the kubelet may read its pod's secret", || async {
        let mut args = vec!["get", "secrets/used", "-n", "default"];
        args.extend_from_slice(&kubelet);
        can_i(&server, &args).await.filter(|yes| *yes)
    })
    .await;
    let mut args = vec!["get", "secrets/unused", "-n", "default"];
    args.extend_from_slice(&kubelet);
    assert_eq!(can_i(&server, &args).await, Some(false));
    server.stop().await;
}
