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

/// Creates the quota `name` and waits until the controller has filled in its status.
async fn quota_ready(server: &ApiServer, ns: &str, name: &str, body: &str) {
    create_ok(server, ns, &quota(name, body)).await;
    wait_quota(server, ns, name, "status filled in", |q| {
        q["status"]["hard"].is_object() && q["status"]["used"].is_object()
    })
    .await;
}

/// Asserts `out` failed with a 403 whose message contains `message` (`kubectl create -f`
/// prints `Error from server (Forbidden)`, `kubectl create configmap` only the message).
fn refused(out: &ToolOutput, message: &str) {
    assert_ne!(out.code, Some(0), "{out:?}");
    assert!(
        out.stderr.contains(" is forbidden: ") && out.stderr.contains(message),
        "expected {message:?} in {out:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quota_of_two_pods_refuses_the_third_and_a_deleted_pod_frees_its_place() {
    let server = ApiServer::start(&[]).await;
    namespace(&server, "pods").await;
    quota_ready(&server, "pods", "two-pods", "  hard:\n    pods: \"2\"\n").await;
    create_ok(&server, "pods", &pod("a", "")).await;
    create_ok(&server, "pods", &pod("b", "")).await;
    let out = create(&server, "pods", &pod("c", "")).await;
    refused(
        &out,
        r#"pods "c" is forbidden: exceeded quota: two-pods, requested: pods=1, used: pods=2, limited: pods=2"#,
    );
    let q = get_json(&server, "pods", &["resourcequota", "two-pods"]).await;
    assert_eq!(used(&q, "pods"), Some("2"), "{q}");
    // A server-side dry run is checked but charges nothing.
    let out = kubectl(
        &server,
        &[
            "run",
            "-n",
            "pods",
            "dry",
            "--image=nginx",
            "--dry-run=server",
        ],
    )
    .await;
    refused(&out, "exceeded quota: two-pods");

    kubectl_ok(&server, &["delete", "pod", "-n", "pods", "a"]).await;
    wait_quota(&server, "pods", "two-pods", "a deleted pod freed", |q| {
        used(q, "pods") == Some("1")
    })
    .await;
    create_ok(&server, "pods", &pod("c", "")).await;
    let q = get_json(&server, "pods", &["resourcequota", "two-pods"]).await;
    assert_eq!(used(&q, "pods"), Some("2"), "{q}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_count_quota_limits_configmaps() {
    let server = ApiServer::start(&[]).await;
    namespace(&server, "cms").await;
    quota_ready(
        &server,
        "cms",
        "cms",
        "  hard:\n    count/configmaps: \"1\"\n",
    )
    .await;
    kubectl_ok(&server, &["create", "configmap", "-n", "cms", "one"]).await;
    let out = kubectl(&server, &["create", "configmap", "-n", "cms", "two"]).await;
    refused(
        &out,
        r#"configmaps "two" is forbidden: exceeded quota: cms, requested: count/configmaps=1, used: count/configmaps=1, limited: count/configmaps=1"#,
    );
    let q = get_json(&server, "cms", &["resourcequota", "cms"]).await;
    assert_eq!(used(&q, "count/configmaps"), Some("1"), "{q}");
    // Other resources are not limited by it.
    kubectl_ok(&server, &["create", "secret", "generic", "-n", "cms", "s"]).await;
    // Amounts are validated as upstream.
    let out = create(&server, "cms", &quota("bad", "  hard:\n    pods: \"-1\"\n")).await;
    assert_ne!(out.code, Some(0), "{out:?}");
    assert!(
        out.stderr.contains(r#"ResourceQuota "bad" is invalid"#)
            && out.stderr.contains("must be greater than or equal to 0"),
        "{out:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cpu_quota_needs_every_container_to_request_cpu_and_sums_requests() {
    let server = ApiServer::start(&[]).await;
    namespace(&server, "cpu").await;
    quota_ready(
        &server,
        "cpu",
        "compute",
        "  hard:\n    requests.cpu: \"1\"\n",
    )
    .await;
    let out = create(&server, "cpu", &pod("nocpu", "")).await;
    refused(
        &out,
        r#"pods "nocpu" is forbidden: failed quota: compute: must specify requests.cpu for: app"#,
    );
    let requests = "    resources:\n      requests:\n        cpu: 600m\n";
    create_ok(&server, "cpu", &pod("first", requests)).await;
    let out = create(&server, "cpu", &pod("second", requests)).await;
    refused(
        &out,
        "exceeded quota: compute, requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1",
    );
    let q = get_json(&server, "cpu", &["resourcequota", "compute"]).await;
    assert_eq!(used(&q, "requests.cpu"), Some("600m"), "{q}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_best_effort_quota_counts_only_best_effort_pods() {
    let server = ApiServer::start(&[]).await;
    namespace(&server, "scoped").await;
    quota_ready(
        &server,
        "scoped",
        "best-effort",
        "  hard:\n    pods: \"1\"\n  scopes:\n  - BestEffort\n",
    )
    .await;
    create_ok(&server, "scoped", &pod("free", "")).await;
    let out = create(&server, "scoped", &pod("free-too", "")).await;
    refused(
        &out,
        "exceeded quota: best-effort, requested: pods=1, used: pods=1, limited: pods=1",
    );
    let burstable = "    resources:\n      requests:\n        memory: 10Mi\n";
    create_ok(&server, "scoped", &pod("burstable", burstable)).await;
    let q = get_json(&server, "scoped", &["resourcequota", "best-effort"]).await;
    assert_eq!(used(&q, "pods"), Some("1"), "{q}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limit_ranger_defaults_container_resources_and_refuses_one_above_max() {
    let server = ApiServer::start(&[]).await;
    namespace(&server, "limits").await;
    // A range whose minimum exceeds its maximum is refused with upstream's message.
    let bad = create(
        &server,
        "limits",
        "apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: bad\nspec:\n  limits:\n  - type: Container\n    min:\n      cpu: \"2\"\n    max:\n      cpu: \"1\"\n",
    )
    .await;
    assert_ne!(bad.code, Some(0), "{bad:?}");
    assert!(
        bad.stderr.contains(
            "spec.limits[0].min[cpu]: Invalid value: \"2\": min value 2 is greater than max value 1"
        ),
        "{bad:?}"
    );
    create_ok(
        &server,
        "limits",
        "apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: cpu\nspec:\n  limits:\n  - type: Container\n    default:\n      cpu: 500m\n    defaultRequest:\n      cpu: 250m\n    max:\n      cpu: \"1\"\n",
    )
    .await;
    // The informer sees the range within moments; the first pod may beat it.
    let start = Instant::now();
    let defaulted = loop {
        let name = format!("p{}", start.elapsed().as_millis());
        create_ok(&server, "limits", &pod(&name, "")).await;
        let p = get_json(&server, "limits", &["pod", &name]).await;
        if p["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "250m" {
            break p;
        }
        assert!(start.elapsed() < DEADLINE, "no defaults applied: {p}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(
        defaulted["spec"]["containers"][0]["resources"]["limits"]["cpu"], "500m",
        "{defaulted}"
    );
    assert_eq!(
        defaulted["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: cpu request for container app; cpu limit for container app",
        "{defaulted}"
    );
    let big = "    resources:\n      limits:\n        cpu: \"2\"\n";
    let out = create(&server, "limits", &pod("big", big)).await;
    refused(
        &out,
        r#"pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2"#,
    );
    // Claims are bounded by PersistentVolumeClaim items.
    create_ok(
        &server,
        "limits",
        "apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: storage\nspec:\n  limits:\n  - type: PersistentVolumeClaim\n    max:\n      storage: 2Gi\n",
    )
    .await;
    let claim = |name: &str, size: &str| {
        format!(
            "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: {name}\nspec:\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: {size}\n"
        )
    };
    let start = Instant::now();
    let (name, out) = loop {
        // A claim created before the informer saw the range is left; the next gets a new name.
        let name = format!("huge{}", start.elapsed().as_millis());
        let out = create(&server, "limits", &claim(&name, "5Gi")).await;
        if out.code != Some(0) {
            break (name, out);
        }
        assert!(start.elapsed() < DEADLINE, "claim never bounded");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    refused(
        &out,
        &format!(
            r#"persistentvolumeclaims "{name}" is forbidden: maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 5Gi"#
        ),
    );
    create_ok(&server, "limits", &claim("small", "1Gi")).await;
}

/// An AdmissionConfiguration file giving ResourceQuota `configuration`.
fn admission_config(dir: &std::path::Path, configuration: &str) -> String {
    let path = dir.join("admission.yaml");
    std::fs::write(
        &path,
        format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: ResourceQuota\n  configuration:\n{configuration}"
        ),
    )
    .unwrap();
    format!("--admission-control-config-file={}", path.display())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limited_resources_from_the_admission_config_need_a_covering_quota() {
    let dir = tempfile::tempdir().unwrap();
    let flag = admission_config(
        dir.path(),
        "    apiVersion: apiserver.config.k8s.io/v1\n    kind: ResourceQuotaConfiguration\n    limitedResources:\n    - resource: pods\n      matchContains:\n      - requests.cpu\n",
    );
    let server = ApiServer::start(&[flag.as_str()]).await;
    namespace(&server, "limited").await;
    let requests = "    resources:\n      requests:\n        cpu: 100m\n";
    let out = create(&server, "limited", &pod("uncovered", requests)).await;
    refused(
        &out,
        r#"pods "uncovered" is forbidden: insufficient quota to consume: requests.cpu"#,
    );
    // Pods consuming no cpu are not limited.
    create_ok(&server, "limited", &pod("no-cpu", "")).await;
    quota_ready(
        &server,
        "limited",
        "cpu",
        "  hard:\n    requests.cpu: \"1\"\n",
    )
    .await;
    create_ok(&server, "limited", &pod("covered", requests)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_resource_quota_configuration_is_a_one_line_start_up_error() {
    let dir = tempfile::tempdir().unwrap();
    let flag = admission_config(
        dir.path(),
        "    apiVersion: apiserver.config.k8s.io/v1\n    kind: ResourceQuotaConfiguration\n    limitedResources:\n    - matchContains: [\"requests.cpu\"]\n",
    );
    let out = common::run_to_exit(&[flag.as_str()]).await;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("Error")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(
        errors[0].contains("limitedResources[0].resource: Required value"),
        "{stderr}"
    );
}

const WIDGETS: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: widgets
    kind: Widget
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
";

fn widget(name: &str) -> String {
    format!("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {name}\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_count_quota_limits_custom_resources_and_recounts_them() {
    let server = ApiServer::start(&[]).await;
    namespace(&server, "crs").await;
    create_ok(&server, "default", WIDGETS).await;
    kubectl_ok(
        &server,
        &[
            "wait",
            "--for=condition=Established",
            "crd/widgets.example.com",
            "--timeout=60s",
        ],
    )
    .await;
    // A widget made before the quota is counted by the controller.
    let start = Instant::now();
    loop {
        let out = create(&server, "crs", &widget("old")).await;
        if out.code == Some(0) {
            break;
        }
        assert!(start.elapsed() < DEADLINE, "widgets not served: {out:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    create_ok(
        &server,
        "crs",
        &quota("widgets", "  hard:\n    count/widgets.example.com: \"2\"\n"),
    )
    .await;
    wait_quota(
        &server,
        "crs",
        "widgets",
        "the existing widget counted",
        |q| used(q, "count/widgets.example.com") == Some("1"),
    )
    .await;
    create_ok(&server, "crs", &widget("new")).await;
    let out = create(&server, "crs", &widget("third")).await;
    refused(
        &out,
        r#"widgets.example.com "third" is forbidden: exceeded quota: widgets, requested: count/widgets.example.com=1, used: count/widgets.example.com=2, limited: count/widgets.example.com=2"#,
    );
    kubectl_ok(&server, &["delete", "widget", "-n", "crs", "old"]).await;
    wait_quota(
        &server,
        "crs",
        "widgets",
        "the deleted widget uncounted",
        |q| used(q, "count/widgets.example.com") == Some("1"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creates_never_exceed_the_quota() {
    let server = ApiServer::start(&[]).await;
    namespace(&server, "race").await;
    quota_ready(
        &server,
        "race",
        "five",
        "  hard:\n    count/configmaps: \"5\"\n",
    )
    .await;
    let client = server.admin_client();
    let mut tasks = Vec::new();
    for i in 0..12 {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            let body = format!(
                r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"cm{i}"}}}}"#
            );
            let req = client.request(
                http::Method::POST,
                "/api/v1/namespaces/race/configmaps",
                &body,
            );
            client
                .send(common::client::Proto::H2, req)
                .await
                .unwrap()
                .status
                .as_u16()
        }));
    }
    let mut codes = Vec::new();
    for task in tasks {
        codes.push(task.await.unwrap());
    }
    codes.sort();
    assert_eq!(
        codes,
        [201, 201, 201, 201, 201, 403, 403, 403, 403, 403, 403, 403]
    );
    let q = get_json(&server, "race", &["resourcequota", "five"]).await;
    assert_eq!(used(&q, "count/configmaps"), Some("5"), "{q}");
    let list = get_json(&server, "race", &["configmaps"]).await;
    assert_eq!(list["items"].as_array().map(Vec::len), Some(5), "{list}");
}
