//! kubectl 1.35 and kubectl 1.20 against the real binary over TLS with the generated admin
//! kubeconfig, doing what users do: discovery, get in every output format, create (YAML and the
//! protobuf bodies of `create configmap|secret|namespace`), apply (client- and server-side),
//! diff, the three patch types, label, annotate, replace, delete, watch, explain and wait.
//!
//! One server is shared by every test of this file (started once, killed at exit); each test
//! works in its own namespace so that tests never see each other's objects.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use common::{ApiServer, DEADLINE, ToolOutput, run_tool, tool};

const NEW: &str = "kubectl-1.35";
const OLD: &str = "kubectl-1.20";

static SERVER: tokio::sync::OnceCell<ApiServer> = tokio::sync::OnceCell::const_new();
static SERVER_PID: AtomicI32 = AtomicI32::new(0);
static SERVER_TMP: OnceLock<PathBuf> = OnceLock::new();

/// Statics are never dropped, so the shared server is killed (by its pid) and its temp dir
/// removed when the test process exits.
extern "C" fn stop_shared_server() {
    let pid = SERVER_PID.load(Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: kill(2) on the pid of the server this test process spawned.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
    if let Some(dir) = SERVER_TMP.get() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// The server shared by all tests of this file, started by the first test that asks.
async fn server() -> &'static ApiServer {
    SERVER
        .get_or_init(|| async {
            let server = ApiServer::start(&[]).await;
            SERVER_PID.store(server.pid(), Ordering::SeqCst);
            if let Some(tmp) = server.data_dir.parent() {
                let _ = SERVER_TMP.set(tmp.to_path_buf());
            }
            // SAFETY: registers a plain extern "C" function without captured state.
            unsafe {
                libc::atexit(stop_shared_server);
            }
            server
        })
        .await
}

/// One kubectl binary with the admin kubeconfig and its own HOME (discovery cache), so that
/// concurrent tests never share a cache directory.
struct Kubectl {
    name: &'static str,
    kubeconfig: String,
    home: tempfile::TempDir,
}

impl Kubectl {
    async fn new(name: &'static str) -> Kubectl {
        let server = server().await;
        Kubectl {
            name,
            kubeconfig: server.kubeconfig().display().to_string(),
            home: tempfile::tempdir().unwrap(),
        }
    }

    fn args<'a>(&'a self, args: &[&'a str]) -> Vec<&'a str> {
        let mut all = vec!["--kubeconfig", self.kubeconfig.as_str()];
        all.extend_from_slice(args);
        all
    }

    /// Runs it, whatever the outcome.
    async fn run(&self, args: &[&str]) -> ToolOutput {
        run_tool(self.name, self.home.path(), &self.args(args)).await
    }

    /// Runs it, asserts exit code 0 and returns stdout.
    async fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args).await;
        assert_eq!(out.code, Some(0), "{} {args:?}: {out:?}", self.name);
        out.stdout
    }

    /// Writes `content` to a file in its HOME and returns the path.
    fn file(&self, name: &str, content: &str) -> String {
        let path = self.home.path().join(name);
        std::fs::write(&path, content).unwrap();
        path.display().to_string()
    }

    /// Starts it in the background, its stdout and stderr collected line by line.
    fn spawn(&self, args: &[&str]) -> Background {
        let mut child = Command::new(tool(self.name))
            .args(self.args(args))
            .env("HOME", self.home.path())
            .env("KUBECONFIG", self.home.path().join("no-such-kubeconfig"))
            .env("KUBECACHEDIR", self.home.path().join("kube-cache"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", self.name));
        let stdout = collect_lines(child.stdout.take().unwrap());
        let stderr = collect_lines(child.stderr.take().unwrap());
        Background {
            child,
            stdout,
            stderr,
        }
    }
}

type SharedLines = Arc<Mutex<Vec<String>>>;

fn collect_lines(stream: impl Read + Send + 'static) -> SharedLines {
    let lines = SharedLines::default();
    let sink = lines.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            sink.lock().unwrap().push(line);
        }
    });
    lines
}

/// A kubectl this test started in the background (killed, by its own handle, on drop).
struct Background {
    child: Child,
    stdout: SharedLines,
    stderr: SharedLines,
}

impl Background {
    /// Waits (polling, with [`DEADLINE`]) for a line of `lines` that satisfies `pred`.
    async fn wait_line(&self, lines: &SharedLines, what: &str, pred: impl Fn(&str) -> bool) {
        let start = Instant::now();
        loop {
            if lines.lock().unwrap().iter().any(|l| pred(l)) {
                return;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "{what}: not within {DEADLINE:?}; stdout:\n{}\nstderr:\n{}",
                self.stdout.lock().unwrap().join("\n"),
                self.stderr.lock().unwrap().join("\n"),
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits (polling, with [`DEADLINE`]) for the process to exit; returns its code.
    async fn wait_exit(&mut self) -> Option<i32> {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            assert!(
                start.elapsed() < DEADLINE,
                "kubectl did not exit within {DEADLINE:?}; stderr:\n{}",
                self.stderr.lock().unwrap().join("\n")
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A ConfigMap manifest.
fn configmap_yaml(name: &str, namespace: &str, extra_metadata: &str, data: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\n\
         {extra_metadata}data:\n{data}"
    )
}

/// Creates a namespace with `kubectl create namespace` (a protobuf body).
async fn namespace(k: &Kubectl, name: &str) -> String {
    let out = k.ok(&["create", "namespace", name]).await;
    assert_eq!(out.trim(), format!("namespace/{name} created"));
    name.to_string()
}

fn data_of(k_json: &str) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_str(k_json).unwrap();
    v["data"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_1_35_api_resources_lists_deployments_and_api_versions_lists_groups() {
    let k = Kubectl::new(NEW).await;
    let resources = k.ok(&["api-resources"]).await;
    let deployments = resources
        .lines()
        .find(|l| l.split_whitespace().next() == Some("deployments"))
        .unwrap_or_else(|| panic!("no deployments row:\n{resources}"));
    let cols: Vec<&str> = deployments.split_whitespace().collect();
    assert_eq!(
        cols,
        ["deployments", "deploy", "apps/v1", "true", "Deployment"],
        "{resources}"
    );
    assert!(
        resources.lines().any(|l| l.starts_with("configmaps ")),
        "{resources}"
    );

    let versions = k.ok(&["api-versions"]).await;
    let versions: Vec<&str> = versions.lines().collect();
    for gv in ["v1", "apps/v1", "batch/v1", "rbac.authorization.k8s.io/v1"] {
        assert!(versions.contains(&gv), "{gv} missing: {versions:?}");
    }
}

async fn gets_the_bootstrap_namespaces(name: &'static str) {
    let k = Kubectl::new(name).await;
    let out = k.ok(&["get", "namespaces"]).await;
    let mut lines = out.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "STATUS", "AGE"], "{out}");
    let rows: Vec<(String, String)> = lines
        .map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            (cols[0].to_string(), cols[1].to_string())
        })
        .collect();
    for ns in ["default", "kube-node-lease", "kube-public", "kube-system"] {
        assert!(
            rows.contains(&(ns.to_string(), "Active".to_string())),
            "{ns} not Active:\n{out}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_1_35_get_namespaces_shows_the_four_bootstrap_namespaces_active() {
    gets_the_bootstrap_namespaces(NEW).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_1_20_get_namespaces_shows_the_four_bootstrap_namespaces_active() {
    gets_the_bootstrap_namespaces(OLD).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_1_35_create_configmap_secret_and_namespace_send_protobuf_and_are_stored() {
    let k = Kubectl::new(NEW).await;
    let ns = namespace(&k, "e2e-protobuf").await;
    let ns_json = k.ok(&["get", "namespace", &ns, "-o", "json"]).await;
    let ns_obj: serde_json::Value = serde_json::from_str(&ns_json).unwrap();
    assert_eq!(ns_obj["status"]["phase"], "Active", "{ns_json}");

    let out = k
        .ok(&[
            "create",
            "configmap",
            "literal",
            "-n",
            &ns,
            "--from-literal=k=v",
        ])
        .await;
    assert_eq!(out.trim(), "configmap/literal created");
    let cm = k
        .ok(&["get", "configmap", "literal", "-n", &ns, "-o", "json"])
        .await;
    assert_eq!(data_of(&cm), serde_json::json!({"k": "v"}), "{cm}");

    let out = k
        .ok(&[
            "create",
            "secret",
            "generic",
            "sec",
            "-n",
            &ns,
            "--from-literal=password=hunter2",
        ])
        .await;
    assert_eq!(out.trim(), "secret/sec created");
    let secret = k
        .ok(&[
            "get",
            "secret",
            "sec",
            "-n",
            &ns,
            "-o",
            "jsonpath={.type} {.data.password}",
        ])
        .await;
    // base64("hunter2")
    assert_eq!(secret, "Opaque aHVudGVyMg==");
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_1_35_create_from_yaml_then_get_as_table_yaml_json_name_wide_all_namespaces_and_by_label()
 {
    let k = Kubectl::new(NEW).await;
    let ns = namespace(&k, "e2e-get").await;
    let labelled = k.file(
        "labelled.yaml",
        &configmap_yaml(&ns, &ns, "  labels:\n    app: e2e\n", "  a: \"1\"\n"),
    );
    let out = k.ok(&["create", "-f", &labelled]).await;
    assert_eq!(out.trim(), format!("configmap/{ns} created"));
    let plain = k.file(
        "plain.yaml",
        &configmap_yaml("plain", &ns, "", "  b: \"2\"\n  c: \"3\"\n"),
    );
    k.ok(&["create", "-f", &plain]).await;

    // Table.
    let table = k.ok(&["get", "configmaps", "-n", &ns]).await;
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0], ["NAME", "DATA", "AGE"], "{table}");
    let names: Vec<&str> = rows[1..].iter().map(|r| r[0]).collect();
    assert!(
        names.contains(&"plain") && names.contains(&ns.as_str()),
        "{table}"
    );
    let plain_row = rows.iter().find(|r| r[0] == "plain").unwrap();
    assert_eq!(plain_row[1], "2", "{table}");

    // -o yaml.
    let yaml = k
        .ok(&["get", "configmap", "plain", "-n", &ns, "-o", "yaml"])
        .await;
    for needle in [
        "apiVersion: v1",
        "kind: ConfigMap",
        "  name: plain",
        &format!("  namespace: {ns}"),
        "  b: \"2\"",
        "  uid: ",
        "  resourceVersion: ",
        "  creationTimestamp: ",
    ] {
        assert!(yaml.contains(needle), "{needle:?} missing:\n{yaml}");
    }

    // -o json.
    let json = k
        .ok(&["get", "configmap", "plain", "-n", &ns, "-o", "json"])
        .await;
    let obj: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(obj["kind"], "ConfigMap");
    assert_eq!(obj["metadata"]["name"], "plain");
    assert_eq!(data_of(&json), serde_json::json!({"b": "2", "c": "3"}));

    // -o name.
    let names = k.ok(&["get", "configmaps", "-n", &ns, "-o", "name"]).await;
    let mut names: Vec<&str> = names.lines().collect();
    names.sort_unstable();
    let expected = format!("configmap/{ns}");
    assert_eq!(names, [expected.as_str(), "configmap/plain"]);

    // -o wide.
    let wide = k.ok(&["get", "configmaps", "-n", &ns, "-o", "wide"]).await;
    let header: Vec<&str> = wide.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "DATA", "AGE"], "{wide}");
    assert!(wide.lines().any(|l| l.starts_with("plain ")), "{wide}");

    // -A: a NAMESPACE column, our objects in our namespace.
    let all = k.ok(&["get", "configmaps", "-A"]).await;
    let header: Vec<&str> = all.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAMESPACE", "NAME", "DATA", "AGE"], "{all}");
    assert!(
        all.lines().any(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            cols.len() >= 2 && cols[0] == ns && cols[1] == "plain"
        }),
        "{all}"
    );

    // -l.
    let by_label = k
        .ok(&[
            "get",
            "configmaps",
            "-n",
            &ns,
            "-l",
            "app=e2e",
            "-o",
            "name",
        ])
        .await;
    assert_eq!(by_label.trim(), format!("configmap/{ns}"));
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_1_35_apply_creates_configures_and_reports_unchanged_and_diff_shows_the_change() {
    let k = Kubectl::new(NEW).await;
    let ns = namespace(&k, "e2e-apply").await;
    let v1 = k.file(
        "v1.yaml",
        &configmap_yaml("applied", &ns, "", "  a: \"1\"\n"),
    );
    let v2 = k.file(
        "v2.yaml",
        &configmap_yaml("applied", &ns, "", "  a: \"2\"\n"),
    );

    assert_eq!(
        k.ok(&["apply", "-f", &v1]).await.trim(),
        "configmap/applied created"
    );
    assert_eq!(
        k.ok(&["apply", "-f", &v1]).await.trim(),
        "configmap/applied unchanged"
    );

    // diff exits 1 when there are differences.
    let diff = k.run(&["diff", "-f", &v2]).await;
    assert_eq!(diff.code, Some(1), "{diff:?}");
    assert!(diff.stdout.contains("-  a: \"1\""), "{diff:?}");
    assert!(diff.stdout.contains("+  a: \"2\""), "{diff:?}");

    assert_eq!(
        k.ok(&["apply", "-f", &v2]).await.trim(),
        "configmap/applied configured"
    );
    assert_eq!(
        k.ok(&["apply", "-f", &v2]).await.trim(),
        "configmap/applied unchanged"
    );
    let value = k
        .ok(&[
            "get",
            "cm",
            "applied",
            "-n",
            &ns,
            "-o",
            "jsonpath={.data.a}",
        ])
        .await;
    assert_eq!(value, "2");

    // No differences: exit 0 and no output.
    let diff = k.run(&["diff", "-f", &v2]).await;
    assert_eq!(diff.code, Some(0), "{diff:?}");
    assert_eq!(diff.stdout, "", "{diff:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_1_35_apply_server_side_creates_a_fresh_object_with_kubectl_as_field_manager() {
    let k = Kubectl::new(NEW).await;
    let ns = namespace(&k, "e2e-ssa").await;
    let manifest = k.file("ssa.yaml", &configmap_yaml("ssa", &ns, "", "  a: \"1\"\n"));
    assert_eq!(
        k.ok(&["apply", "--server-side", "-f", &manifest])
            .await
            .trim(),
        "configmap/ssa serverside-applied"
    );
    let json = k
        .ok(&[
            "get",
            "cm",
            "ssa",
            "-n",
            &ns,
            "-o",
            "json",
            "--show-managed-fields",
        ])
        .await;
    let obj: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(obj["data"], serde_json::json!({"a": "1"}), "{json}");
    let managers = obj["metadata"]["managedFields"].as_array().unwrap();
    assert!(
        managers
            .iter()
            .any(|m| m["manager"] == "kubectl" && m["operation"] == "Apply"),
        "{json}"
    );
}

/// A Service manifest whose ports omit `protocol` (defaulted to TCP by the server).
fn service_yaml(name: &str, namespace: &str, port_name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\n  namespace: {namespace}\n\
         spec:\n  selector:\n    app: web\n  ports:\n  - name: {port_name}\n    port: 80\n    \
         targetPort: 8080\n"
    )
}

/// A Deployment manifest whose container ports omit `protocol` (defaulted to TCP).
fn deployment_yaml(name: &str, namespace: &str, image: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: {namespace}\n\
         spec:\n  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      \
         labels:\n        app: web\n    spec:\n      containers:\n      - name: web\n        \
         image: {image}\n        ports:\n        - containerPort: 8080\n"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_1_35_apply_server_side_reapplies_ports_without_protocol_matching_the_defaulted_tcp()
 {
    let k = Kubectl::new(NEW).await;
    let ns = namespace(&k, "e2e-ssa-ports").await;

    // Service spec.ports is a map list keyed by port and protocol; protocol defaults to TCP.
    let v1 = k.file("svc-v1.yaml", &service_yaml("web", &ns, "http"));
    let v2 = k.file("svc-v2.yaml", &service_yaml("web", &ns, "web"));
    assert_eq!(
        k.ok(&["apply", "--server-side", "-f", &v1]).await.trim(),
        "service/web serverside-applied"
    );
    assert_eq!(
        k.ok(&["apply", "--server-side", "-f", &v1]).await.trim(),
        "service/web serverside-applied"
    );
    assert_eq!(
        k.ok(&["apply", "--server-side", "-f", &v2]).await.trim(),
        "service/web serverside-applied"
    );
    let json = k
        .ok(&[
            "get",
            "service",
            "web",
            "-n",
            &ns,
            "-o",
            "json",
            "--show-managed-fields",
        ])
        .await;
    let svc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let ports = svc["spec"]["ports"].as_array().unwrap();
    assert_eq!(ports.len(), 1, "{json}");
    assert_eq!(ports[0]["name"], "web", "{json}");
    assert_eq!(ports[0]["protocol"], "TCP", "{json}");
    let fields = svc["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["manager"] == "kubectl" && m["operation"] == "Apply")
        .map(|m| m["fieldsV1"].to_string())
        .unwrap_or_default();
    assert!(
        fields.contains(r#"k:{\"port\":80,\"protocol\":\"TCP\"}"#),
        "{json}"
    );

    // Container ports: a map list keyed by containerPort and protocol, the same way.
    let d1 = k.file("deploy-v1.yaml", &deployment_yaml("web", &ns, "nginx:1"));
    let d2 = k.file("deploy-v2.yaml", &deployment_yaml("web", &ns, "nginx:2"));
    for manifest in [&d1, &d1, &d2] {
        assert_eq!(
            k.ok(&["apply", "--server-side", "-f", manifest])
                .await
                .trim(),
            "deployment.apps/web serverside-applied"
        );
    }
    let json = k
        .ok(&["get", "deployment", "web", "-n", &ns, "-o", "json"])
        .await;
    let deploy: serde_json::Value = serde_json::from_str(&json).unwrap();
    let container = &deploy["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "nginx:2", "{json}");
    assert_eq!(
        container["ports"],
        serde_json::json!([{"containerPort": 8080, "protocol": "TCP"}]),
        "{json}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_1_35_patch_strategic_merge_and_json_then_label_and_annotate() {
    let k = Kubectl::new(NEW).await;
    let ns = namespace(&k, "e2e-patch").await;
    let manifest = k.file(
        "p.yaml",
        &configmap_yaml("patched", &ns, "", "  a: \"1\"\n"),
    );
    k.ok(&["create", "-f", &manifest]).await;
    let target = ["configmap", "patched", "-n", ns.as_str()];

    for (kind, patch) in [
        ("strategic", r#"{"data":{"s":"x"}}"#),
        ("merge", r#"{"data":{"m":"y","a":null}}"#),
        ("json", r#"[{"op":"add","path":"/data/j","value":"z"}]"#),
    ] {
        let mut args = vec!["patch"];
        args.extend_from_slice(&target);
        let type_flag = format!("--type={kind}");
        args.extend_from_slice(&[&type_flag, "-p", patch]);
        assert_eq!(
            k.ok(&args).await.trim(),
            "configmap/patched patched",
            "{kind}"
        );
    }
    let json = k
        .ok(&["get", "cm", "patched", "-n", &ns, "-o", "json"])
        .await;
    assert_eq!(
        data_of(&json),
        serde_json::json!({"s": "x", "m": "y", "j": "z"}),
        "{json}"
    );

    let mut args = vec!["label"];
    args.extend_from_slice(&target);
    args.push("tier=backend");
    assert_eq!(k.ok(&args).await.trim(), "configmap/patched labeled");
    let mut args = vec!["annotate"];
    args.extend_from_slice(&target);
    args.push("note=hello");
    assert_eq!(k.ok(&args).await.trim(), "configmap/patched annotated");
    let meta = k
        .ok(&[
            "get",
            "cm",
            "patched",
            "-n",
            &ns,
            "-o",
            "jsonpath={.metadata.labels.tier} {.metadata.annotations.note}",
        ])
        .await;
    assert_eq!(meta, "backend hello");
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_1_35_replace_overwrites_the_object_and_delete_removes_it() {
    let k = Kubectl::new(NEW).await;
    let ns = namespace(&k, "e2e-replace").await;
    let manifest = k.file(
        "r.yaml",
        &configmap_yaml("replaced", &ns, "", "  a: \"1\"\n"),
    );
    k.ok(&["create", "-f", &manifest]).await;

    let live = k
        .ok(&["get", "cm", "replaced", "-n", &ns, "-o", "yaml"])
        .await;
    assert!(live.contains("  a: \"1\""), "{live}");
    let edited = k.file("edited.yaml", &live.replace("  a: \"1\"", "  a: \"9\""));
    assert_eq!(
        k.ok(&["replace", "-f", &edited]).await.trim(),
        "configmap/replaced replaced"
    );
    let value = k
        .ok(&[
            "get",
            "cm",
            "replaced",
            "-n",
            &ns,
            "-o",
            "jsonpath={.data.a}",
        ])
        .await;
    assert_eq!(value, "9");

    let out = k.ok(&["delete", "configmap", "replaced", "-n", &ns]).await;
    assert_eq!(
        out.trim(),
        format!("configmap \"replaced\" deleted from {ns} namespace")
    );
    let gone = k.run(&["get", "cm", "replaced", "-n", &ns]).await;
    assert_eq!(gone.code, Some(1), "{gone:?}");
    assert!(
        gone.stderr
            .contains("Error from server (NotFound): configmaps \"replaced\" not found"),
        "{gone:?}"
    );
}

async fn get_watch_prints_an_object_another_kubectl_creates(name: &'static str, ns: &str) {
    let k = Kubectl::new(name).await;
    let ns = namespace(&k, ns).await;
    k.ok(&["create", "configmap", "before", "-n", &ns]).await;

    let watcher = k.spawn(&["get", "configmaps", "-n", &ns, "-w"]);
    // The initial list is printed first; the watch continues from its resourceVersion, so
    // anything created after this line is seen.
    watcher
        .wait_line(&watcher.stdout, "initial list", |l| {
            l.starts_with("before ")
        })
        .await;

    let other = Kubectl::new(name).await;
    other
        .ok(&[
            "create",
            "configmap",
            "after",
            "-n",
            &ns,
            "--from-literal=x=1",
        ])
        .await;
    watcher
        .wait_line(&watcher.stdout, "watch event for the new object", |l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            cols.first() == Some(&"after") && cols.get(1) == Some(&"1")
        })
        .await;
    drop(watcher);
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_1_35_get_watch_prints_an_object_another_kubectl_creates() {
    get_watch_prints_an_object_another_kubectl_creates(NEW, "e2e-watch").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_1_20_get_watch_prints_an_object_another_kubectl_creates() {
    get_watch_prints_an_object_another_kubectl_creates(OLD, "e2e-watch-old").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_1_35_explain_describes_deployment_spec_replicas_from_openapi_v3() {
    let k = Kubectl::new(NEW).await;
    let out = k.ok(&["explain", "deployment.spec.replicas"]).await;
    for needle in [
        "GROUP:      apps",
        "KIND:       Deployment",
        "VERSION:    v1",
        "FIELD: replicas <integer>",
        "Number of desired pods.",
    ] {
        assert!(out.contains(needle), "{needle:?} missing:\n{out}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_1_20_explain_describes_deployment_spec_replicas_from_protobuf_openapi_v2() {
    let k = Kubectl::new(OLD).await;
    let out = k.ok(&["explain", "deployment.spec.replicas"]).await;
    for needle in [
        "KIND:     Deployment",
        "VERSION:  apps/v1",
        "FIELD:    replicas <integer>",
        "Number of desired pods.",
    ] {
        assert!(out.contains(needle), "{needle:?} missing:\n{out}");
    }
}

async fn get_wide_shows_deployment_containers_images_and_selector(name: &'static str, ns: &str) {
    let k = Kubectl::new(name).await;
    let ns = namespace(&k, ns).await;
    let out = k
        .ok(&["create", "deployment", "web", "--image=nginx", "-n", &ns])
        .await;
    assert_eq!(out.trim(), "deployment.apps/web created");
    let wide = k.ok(&["get", "deployments", "-n", &ns, "-o", "wide"]).await;
    let rows: Vec<Vec<&str>> = wide
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows[0],
        [
            "NAME",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR"
        ],
        "{wide}"
    );
    // No controllers run, so nothing is ready; AGE (column 4) varies.
    assert_eq!(rows.len(), 2, "{wide}");
    assert_eq!(rows[1][..4], ["web", "0/1", "0", "0"], "{wide}");
    assert_eq!(rows[1][5..], ["nginx", "nginx", "app=web"], "{wide}");
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_1_35_get_wide_shows_deployment_containers_images_and_selector() {
    get_wide_shows_deployment_containers_images_and_selector(NEW, "e2e-wide").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_1_20_get_wide_shows_deployment_containers_images_and_selector() {
    get_wide_shows_deployment_containers_images_and_selector(OLD, "e2e-wide-old").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_1_35_get_service_shows_the_bootstrap_kubernetes_service_as_cluster_ip_on_443() {
    let k = Kubectl::new(NEW).await;
    let out = k
        .ok(&["get", "service", "kubernetes", "-n", "default"])
        .await;
    let rows: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows[0],
        [
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE"
        ],
        "{out}"
    );
    assert_eq!(rows[1][..2], ["kubernetes", "ClusterIP"], "{out}");
    assert!(rows[1][2].parse::<std::net::Ipv4Addr>().is_ok(), "{out}");
    assert_eq!(rows[1][3..5], ["<none>", "443/TCP"], "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_1_35_wait_for_delete_returns_once_a_finalizer_blocked_configmap_is_gone() {
    let k = Kubectl::new(NEW).await;
    let ns = namespace(&k, "e2e-wait").await;
    let manifest = k.file(
        "fin.yaml",
        &configmap_yaml(
            "blocked",
            &ns,
            "  finalizers:\n  - e2e.test/block\n",
            "  a: \"1\"\n",
        ),
    );
    k.ok(&["create", "-f", &manifest]).await;
    // The finalizer keeps the object (with a deletionTimestamp) until the test removes it, so
    // the waiter really has something to wait for.
    k.ok(&["delete", "cm", "blocked", "-n", &ns, "--wait=false"])
        .await;
    let stamp = k
        .ok(&[
            "get",
            "cm",
            "blocked",
            "-n",
            &ns,
            "-o",
            "jsonpath={.metadata.deletionTimestamp}",
        ])
        .await;
    assert!(!stamp.is_empty(), "no deletionTimestamp");

    let mut waiter = k.spawn(&[
        "wait",
        "--for=delete",
        "configmap/blocked",
        "-n",
        &ns,
        "--timeout=60s",
        "-v=6",
    ]);
    // -v=6 logs each request; once the watch is open, the deletion cannot be missed.
    waiter
        .wait_line(&waiter.stderr, "the waiter's watch request", |l| {
            l.contains("watch=true")
        })
        .await;
    k.ok(&[
        "patch",
        "cm",
        "blocked",
        "-n",
        &ns,
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ])
    .await;
    assert_eq!(waiter.wait_exit().await, Some(0));
    waiter
        .wait_line(&waiter.stdout, "condition met", |l| {
            l == "configmap/blocked condition met"
        })
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_1_20_creates_applies_gets_json_and_deletes_a_configmap() {
    let k = Kubectl::new(OLD).await;
    let ns = namespace(&k, "e2e-old").await;
    let created = k.file(
        "c.yaml",
        &configmap_yaml("created", &ns, "", "  a: \"1\"\n"),
    );
    assert_eq!(
        k.ok(&["create", "-f", &created]).await.trim(),
        "configmap/created created"
    );

    let v1 = k.file(
        "a1.yaml",
        &configmap_yaml("applied", &ns, "", "  a: \"1\"\n"),
    );
    let v2 = k.file(
        "a2.yaml",
        &configmap_yaml("applied", &ns, "", "  a: \"2\"\n"),
    );
    assert_eq!(
        k.ok(&["apply", "-f", &v1]).await.trim(),
        "configmap/applied created"
    );
    assert_eq!(
        k.ok(&["apply", "-f", &v1]).await.trim(),
        "configmap/applied unchanged"
    );
    assert_eq!(
        k.ok(&["apply", "-f", &v2]).await.trim(),
        "configmap/applied configured"
    );

    let json = k
        .ok(&["get", "configmap", "applied", "-n", &ns, "-o", "json"])
        .await;
    let obj: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(obj["metadata"]["name"], "applied");
    assert_eq!(obj["data"], serde_json::json!({"a": "2"}), "{json}");

    assert_eq!(
        k.ok(&["delete", "configmap", "created", "-n", &ns])
            .await
            .trim(),
        "configmap \"created\" deleted"
    );
    let gone = k.run(&["get", "configmap", "created", "-n", &ns]).await;
    assert_eq!(gone.code, Some(1), "{gone:?}");
    assert!(gone.stderr.contains("NotFound"), "{gone:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_1_20_wait_for_condition_and_rollout_status_follow_a_deployment_by_its_name_field_selector()
 {
    let k = Kubectl::new(OLD).await;
    let new = Kubectl::new(NEW).await;
    let ns = namespace(&k, "e2e-wait-rollout").await;
    let manifest = k.file("rolled.yaml", &deployment_yaml("rolled", &ns, "nginx:1.27"));
    k.ok(&["apply", "-f", &manifest]).await;

    // `get --field-selector metadata.name=…` is a list (both kubectl versions).
    for kubectl in [&k, &new] {
        let names = kubectl
            .ok(&[
                "get",
                "deployments",
                "-n",
                &ns,
                "--field-selector",
                "metadata.name=rolled",
                "-o",
                "name",
            ])
            .await;
        assert_eq!(names.trim(), "deployment.apps/rolled", "{}", kubectl.name);
        let all = kubectl
            .ok(&[
                "get",
                "deployments",
                "-A",
                "--field-selector",
                "metadata.name=rolled",
                "-o",
                "name",
            ])
            .await;
        assert_eq!(all.trim(), "deployment.apps/rolled", "{}", kubectl.name);
    }

    // Both waiters list and watch the one deployment through `fieldSelector=metadata.name=rolled`;
    // there is no controller manager, so the test writes the status they wait for.
    let mut wait = k.spawn(&[
        "wait",
        "--for=condition=Available",
        "deployment/rolled",
        "-n",
        &ns,
        "--timeout=60s",
        "-v=6",
    ]);
    let mut rollout = k.spawn(&[
        "rollout",
        "status",
        "deployment/rolled",
        "-n",
        &ns,
        "--timeout=60s",
        "-v=6",
    ]);
    for waiter in [&wait, &rollout] {
        waiter
            .wait_line(&waiter.stderr, "the waiter's watch request", |l| {
                l.contains("watch=true")
                    && l.contains("metadata.name%3Drolled")
                    && l.contains(" 200 ")
            })
            .await;
    }
    let status = r#"{"status":{"observedGeneration":1,"replicas":1,"updatedReplicas":1,"readyReplicas":1,"availableReplicas":1,"conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable","message":"ok"},{"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable","message":"ok"}]}}"#;
    new.ok(&[
        "patch",
        "deployment",
        "rolled",
        "-n",
        &ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        status,
    ])
    .await;
    assert_eq!(wait.wait_exit().await, Some(0));
    assert_eq!(rollout.wait_exit().await, Some(0));
    let out = rollout.stdout.lock().unwrap().join("\n");
    assert!(out.contains("successfully rolled out"), "{out}");
}
