//! The RBAC bootstrap policy through the real binary: the default roles and bindings created
//! before `/readyz` passes (kubectl lists them), reconciled again at every start, and the
//! ClusterRole aggregation that keeps `admin`, `edit` and `view` current.

mod common;

use common::client::{Client, Proto};
use common::{ApiServer, eventually, run_tool};
use http::Method;
use serde_json::{Value, json};

async fn send(client: &Client, method: Method, path: &str, body: &Value) -> (u16, Value) {
    let text = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    let mut req = client.request(method, path, &text);
    req.headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    let reply = client.send(Proto::H1, req).await.unwrap();
    let value = serde_json::from_str(&reply.body).unwrap_or(Value::Null);
    (reply.status.as_u16(), value)
}

async fn get(client: &Client, path: &str) -> (u16, Value) {
    send(client, Method::GET, path, &Value::Null).await
}

const CLUSTER_ROLES: &str = "/apis/rbac.authorization.k8s.io/v1/clusterroles";

async fn kubectl(server: &ApiServer, args: &[&str]) -> String {
    kubectl_version("kubectl-1.35", server, args).await
}

async fn kubectl_version(kubectl: &str, server: &ApiServer, args: &[&str]) -> String {
    let kubeconfig = server.kubeconfig().display().to_string();
    let mut all = vec!["--kubeconfig", kubeconfig.as_str()];
    all.extend_from_slice(args);
    let out = run_tool(kubectl, &server.data_dir, &all).await;
    assert_eq!(out.code, Some(0), "kubectl {args:?}: {out:?}");
    out.stdout
}

#[tokio::test(flavor = "multi_thread")]
async fn bootstrap_roles_and_bindings_exist_once_ready_and_kubectl_lists_them() {
    let mut server = ApiServer::start(&[]).await;
    let readyz = kubectl(&server, &["get", "--raw", "/readyz?verbose"]).await;
    assert!(
        readyz.contains("[+]poststarthook/rbac/bootstrap-roles ok"),
        "{readyz}"
    );

    let list_defaults = [
        "get",
        "clusterroles",
        "-l",
        "kubernetes.io/bootstrapping=rbac-defaults",
        "-o",
        "name",
    ];
    let roles = kubectl(&server, &list_defaults).await;
    assert_eq!(
        kubectl_version("kubectl-1.20", &server, &list_defaults).await,
        roles
    );
    for name in [
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:discovery",
        "system:basic-user",
        "system:public-info-viewer",
        "system:monitoring",
        "system:node",
        "system:node-proxier",
        "system:kube-scheduler",
        "system:kube-controller-manager",
        "system:controller:deployment-controller",
        "system:controller:clusterrole-aggregation-controller",
        "system:service-account-issuer-discovery",
        "system:auth-delegator",
        "system:certificates.k8s.io:kubelet-serving-approver",
    ] {
        assert!(
            roles
                .lines()
                .any(|l| l == format!("clusterrole.rbac.authorization.k8s.io/{name}")),
            "{name} missing from:\n{roles}"
        );
    }
    // Every default ClusterRole: 31 for users and components, 37 for controllers.
    assert_eq!(roles.lines().count(), 68, "{roles}");

    let bindings = kubectl(&server, &["get", "clusterrolebindings", "-o", "name"]).await;
    assert!(
        bindings
            .lines()
            .any(|l| l == "clusterrolebinding.rbac.authorization.k8s.io/cluster-admin"),
        "{bindings}"
    );
    let admin_binding = kubectl(
        &server,
        &["get", "clusterrolebinding", "cluster-admin", "-o", "json"],
    )
    .await;
    let admin_binding: Value = serde_json::from_str(&admin_binding).unwrap();
    assert_eq!(
        admin_binding["subjects"],
        json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:masters"}])
    );
    let system_roles = kubectl(
        &server,
        &["get", "roles", "-n", "kube-system", "-o", "name"],
    )
    .await;
    assert!(
        system_roles
            .contains("role.rbac.authorization.k8s.io/extension-apiserver-authentication-reader"),
        "{system_roles}"
    );
    let public_bindings = kubectl(
        &server,
        &["get", "rolebindings", "-n", "kube-public", "-o", "name"],
    )
    .await;
    assert_eq!(
        public_bindings.trim(),
        "rolebinding.rbac.authorization.k8s.io/system:controller:bootstrap-signer"
    );

    let client = server.admin_client();
    let (_, admin) = get(&client, &format!("{CLUSTER_ROLES}/cluster-admin")).await;
    assert_eq!(
        admin["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"],
        "true"
    );
    assert_eq!(
        admin["rules"],
        json!([
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
            {"nonResourceURLs": ["*"], "verbs": ["*"]}
        ])
    );
    server.stop().await;
}

/// The resources of every rule of the ClusterRole `name`.
async fn rule_resources(client: &Client, name: &str) -> Vec<String> {
    let (status, role) = get(client, &format!("{CLUSTER_ROLES}/{name}")).await;
    assert_eq!(status, 200, "{role}");
    role["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|r| r["resources"].as_array().cloned().unwrap_or_default())
        .filter_map(|r| r.as_str().map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_clusterrole_labelled_aggregate_to_view_joins_view_edit_and_admin_and_leaves_when_deleted()
 {
    let mut server = ApiServer::start(&[]).await;
    let client = server.admin_client();
    // The defaults are aggregated before the server is ready: view's own rules, edit's plus
    // view's, admin's plus edit's.
    let has = |role: &'static str, resource: &'static str| {
        let client = client.clone();
        async move {
            rule_resources(&client, role)
                .await
                .contains(&resource.to_string())
        }
    };
    for (role, resource) in [
        ("view", "pods/log"),
        ("edit", "secrets"),
        ("edit", "pods/log"),
        ("admin", "rolebindings"),
        ("admin", "pods/log"),
    ] {
        assert!(has(role, resource).await, "{resource} not in {role}");
    }
    assert!(!has("view", "secrets").await);
    assert!(!has("edit", "rolebindings").await);

    let (status, body) = send(
        &client,
        Method::POST,
        CLUSTER_ROLES,
        &json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "widget-viewer",
                         "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
            "rules": [{"apiGroups": ["example.com"], "resources": ["widgets"],
                       "verbs": ["get", "list", "watch"]}]
        }),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    for aggregate in ["view", "edit", "admin"] {
        eventually(&format!("widgets in {aggregate}"), || async {
            rule_resources(&client, aggregate)
                .await
                .contains(&"widgets".to_string())
                .then_some(())
        })
        .await;
    }

    let (status, body) = send(
        &client,
        Method::DELETE,
        &format!("{CLUSTER_ROLES}/widget-viewer"),
        &Value::Null,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    for aggregate in ["view", "edit", "admin"] {
        eventually(&format!("widgets gone from {aggregate}"), || async {
            (!rule_resources(&client, aggregate)
                .await
                .contains(&"widgets".to_string()))
            .then_some(())
        })
        .await;
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restart_restores_edited_default_roles_but_keeps_those_annotated_autoupdate_false() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mut server = ApiServer::builder().data_dir(&data).start().await;
    let client = server.admin_client();

    // cluster-admin loses its rules and its binding a subject is added to.
    let (_, mut admin) = get(&client, &format!("{CLUSTER_ROLES}/cluster-admin")).await;
    admin["rules"] = json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]);
    let (status, body) = send(
        &client,
        Method::PUT,
        &format!("{CLUSTER_ROLES}/cluster-admin"),
        &admin,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // system:basic-user is edited too, but protected from reconciliation.
    let (_, mut basic) = get(&client, &format!("{CLUSTER_ROLES}/system:basic-user")).await;
    basic["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"] =
        json!("false");
    basic["rules"] = json!([{"apiGroups": ["authorization.k8s.io"],
                             "resources": ["selfsubjectaccessreviews"], "verbs": ["create"]}]);
    let (status, body) = send(
        &client,
        Method::PUT,
        &format!("{CLUSTER_ROLES}/system:basic-user"),
        &basic,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // A default binding that lost its subjects.
    let binding_path = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/system:discovery";
    let (_, mut discovery) = get(&client, binding_path).await;
    discovery["subjects"] =
        json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "someone"}]);
    let (status, body) = send(&client, Method::PUT, binding_path, &discovery).await;
    assert_eq!(status, 200, "{body}");
    // A default binding recreated by hand for another role (a roleRef cannot be updated).
    let monitoring_path =
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/system:monitoring";
    let (status, body) = send(&client, Method::DELETE, monitoring_path, &Value::Null).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = send(
        &client,
        Method::POST,
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        &json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "system:monitoring"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "view"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                          "name": "watcher"}]
        }),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    server.stop().await;

    let mut server = ApiServer::builder().data_dir(&data).start().await;
    let client = server.admin_client();
    let (_, admin) = get(&client, &format!("{CLUSTER_ROLES}/cluster-admin")).await;
    // The missing rules are back; the one added by hand stays (extra permissions are kept).
    assert_eq!(
        admin["rules"],
        json!([
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
            {"nonResourceURLs": ["*"], "verbs": ["*"]}
        ])
    );
    let (_, basic) = get(&client, &format!("{CLUSTER_ROLES}/system:basic-user")).await;
    assert_eq!(
        basic["rules"],
        json!([{"apiGroups": ["authorization.k8s.io"],
                "resources": ["selfsubjectaccessreviews"], "verbs": ["create"]}])
    );
    let (_, discovery) = get(&client, binding_path).await;
    assert_eq!(
        discovery["subjects"],
        json!([
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "someone"},
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:authenticated"}
        ])
    );
    // Recreated for its own role, with the subject added by hand kept and the default one back;
    // the labels and annotations it lacked are added.
    let (_, monitoring) = get(&client, monitoring_path).await;
    assert_eq!(monitoring["roleRef"]["name"], "system:monitoring");
    assert_eq!(
        monitoring["subjects"],
        json!([
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "watcher"},
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:monitoring"}
        ])
    );
    assert_eq!(
        monitoring["metadata"]["labels"]["kubernetes.io/bootstrapping"],
        "rbac-defaults"
    );
    let log = server.stderr.snapshot().join("\n");
    assert!(
        log.contains(
            "skipped reconcile-protected clusterrole.rbac.authorization.k8s.io/system:basic-user"
        ),
        "{log}"
    );
    server.stop().await;
}
