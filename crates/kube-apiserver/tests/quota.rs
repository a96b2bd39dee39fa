//! ResourceQuota and LimitRanger end to end with kubectl 1.35 against the real binary: the
//! admission plugins refuse with upstream's messages and charge `status.used`, the resource
//! quota controller fills in `status.hard` and recounts on deletions, LimitRanger defaults
//! and bounds containers.

mod common;

use std::time::{Duration, Instant};

use common::{ApiServer, DEADLINE, ToolOutput, run_tool};
use serde_json::Value;

/// `kubectl-1.35 <args>` with the admin kubeconfig.
async fn kubectl(server: &ApiServer, args: &[&str]) -> ToolOutput {
    let kubeconfig = server.kubeconfig().display().to_string();
    let mut all = vec!["--kubeconfig", kubeconfig.as_str()];
    all.extend_from_slice(args);
    run_tool("kubectl-1.35", &server.data_dir, &all).await
}

async fn kubectl_ok(server: &ApiServer, args: &[&str]) -> String {
    let out = kubectl(server, args).await;
    assert_eq!(out.code, Some(0), "kubectl {args:?}: {out:?}");
    out.stdout
}

/// `kubectl create -f` of `manifest` (YAML) in `namespace`.
async fn create(server: &ApiServer, namespace: &str, manifest: &str) -> ToolOutput {
    let path = server
        .data_dir
        .join(format!("manifest-{}.yaml", uuid::Uuid::new_v4()));
    std::fs::write(&path, manifest).unwrap();
    let file = path.display().to_string();
    kubectl(server, &["create", "-n", namespace, "-f", file.as_str()]).await
}

async fn create_ok(server: &ApiServer, namespace: &str, manifest: &str) {
    let out = create(server, namespace, manifest).await;
    assert_eq!(out.code, Some(0), "create {manifest}: {out:?}");
}

/// `kubectl get <what> -o json` in `namespace`.
async fn get_json(server: &ApiServer, namespace: &str, what: &[&str]) -> Value {
    let mut args = vec!["get", "-n", namespace, "-o", "json"];
    args.extend_from_slice(what);
    serde_json::from_str(&kubectl_ok(server, &args).await).unwrap()
}

/// Polls the quota `name` until `ok` holds for it, within [`DEADLINE`].
async fn wait_quota(
    server: &ApiServer,
    namespace: &str,
    name: &str,
    what: &str,
    ok: impl Fn(&Value) -> bool,
) -> Value {
    let start = Instant::now();
    loop {
        let quota = get_json(server, namespace, &["resourcequota", name]).await;
        if ok(&quota) {
            return quota;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "{what} not within {DEADLINE:?}; last: {quota}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn used<'a>(quota: &'a Value, resource: &str) -> Option<&'a str> {
    quota["status"]["used"][resource].as_str()
}

fn pod(name: &str, resources: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers:\n  - name: app\n    image: nginx\n{resources}"
    )
}

fn quota(name: &str, body: &str) -> String {
    format!("apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: {name}\nspec:\n{body}")
}

async fn namespace(server: &ApiServer, name: &str) {
    kubectl_ok(server, &["create", "namespace", name]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_fills_in_status_and_recounts_when_objects_go() {
    let server = ApiServer::start(&[]).await;
    namespace(&server, "ctl").await;
    create_ok(&server, "ctl", &pod("a", "")).await;
    create_ok(&server, "ctl", &pod("b", "")).await;
    kubectl_ok(&server, &["create", "configmap", "-n", "ctl", "one"]).await;
    create_ok(
        &server,
        "ctl",
        &quota(
            "objects",
            "  hard:\n    pods: \"10\"\n    count/configmaps: \"5\"\n",
        ),
    )
    .await;
    // Existing objects are counted (the namespace's root CA configmap is not published
    // here, so only ours).
    let q = wait_quota(&server, "ctl", "objects", "usage computed", |q| {
        used(q, "pods") == Some("2") && used(q, "count/configmaps") == Some("1")
    })
    .await;
    assert_eq!(q["status"]["hard"]["pods"], "10", "{q}");
    assert_eq!(q["status"]["hard"]["count/configmaps"], "5", "{q}");

    kubectl_ok(&server, &["delete", "pod", "-n", "ctl", "a"]).await;
    kubectl_ok(&server, &["delete", "configmap", "-n", "ctl", "one"]).await;
    wait_quota(&server, "ctl", "objects", "usage after deletes", |q| {
        used(q, "pods") == Some("1") && used(q, "count/configmaps") == Some("0")
    })
    .await;

    // A changed limit reaches status.hard.
    kubectl_ok(
        &server,
        &[
            "patch",
            "resourcequota",
            "-n",
            "ctl",
            "objects",
            "--type=merge",
            "-p",
            r#"{"spec":{"hard":{"pods":"3"}}}"#,
        ],
    )
    .await;
    wait_quota(&server, "ctl", "objects", "new hard limit", |q| {
        q["status"]["hard"]["pods"] == "3"
    })
    .await;
    let described = kubectl_ok(&server, &["describe", "quota", "-n", "ctl", "objects"]).await;
    assert!(
        described
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["pods", "1", "3"]),
        "{described}"
    );
}
