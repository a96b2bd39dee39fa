//! End-to-end: typed clients (client-go, so kubectl, helm and controllers) create objects with
//! `application/vnd.kubernetes.protobuf` bodies. The binary must accept a Pod, StatefulSet and
//! DaemonSet with nested messages (affinity, probes, lifecycle hooks, claim templates, …) and
//! serve them back as JSON; every writable kind in its discovery must have a protobuf table; and
//! kubectl 1.35's typed `create job --from=cronjob` (needs `kubectl-1.35`, like `e2e_kubectl`)
//! must succeed with a rich pod template.

mod common;

use common::ApiServer;
use common::client::{Client, Proto};
use http::Method;
use http_body_util::Full;
use hyper::body::Bytes;
use serde_json::{Value, json};

/// A protobuf message written field by field (field numbers from upstream's `generated.proto`).
#[derive(Default, Clone)]
struct Msg(Vec<u8>);

impl Msg {
    fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn int(mut self, field: u32, v: u64) -> Self {
        Self::varint(&mut self.0, u64::from(field) << 3);
        Self::varint(&mut self.0, v);
        self
    }

    fn bytes(mut self, field: u32, b: &[u8]) -> Self {
        Self::varint(&mut self.0, (u64::from(field) << 3) | 2);
        Self::varint(&mut self.0, b.len() as u64);
        self.0.extend_from_slice(b);
        self
    }

    fn str(self, field: u32, s: &str) -> Self {
        self.bytes(field, s.as_bytes())
    }

    fn msg(self, field: u32, m: Msg) -> Self {
        self.bytes(field, &m.0)
    }

    /// A `map<string, string>` entry.
    fn entry(self, field: u32, key: &str, value: &str) -> Self {
        self.msg(field, Msg::default().str(1, key).str(2, value))
    }
}

/// The `k8s\0` + `runtime.Unknown` envelope client-go writes.
fn envelope(api_version: &str, kind: &str, object: Msg) -> Vec<u8> {
    let type_meta = Msg::default().str(1, api_version).str(2, kind);
    let unknown = Msg::default()
        .msg(1, type_meta)
        .msg(2, object)
        .str(3, "")
        .str(4, "");
    let mut body = b"k8s\0".to_vec();
    body.extend(unknown.0);
    body
}

fn metadata(name: &str) -> Msg {
    Msg::default().str(1, name).str(3, "default")
}

fn labels(app: &str) -> Msg {
    Msg::default().entry(11, "app", app)
}

/// `Container{name, image}` with a gRPC liveness probe and lifecycle hooks.
fn container(name: &str) -> Msg {
    let probe = Msg::default()
        .msg(1, Msg::default().msg(4, Msg::default().int(1, 9090)))
        .int(4, 7);
    let lifecycle = Msg::default()
        .msg(
            1,
            Msg::default().msg(1, Msg::default().str(1, "sh").str(1, "-c").str(1, "true")),
        )
        .msg(2, Msg::default().msg(4, Msg::default().int(1, 5)));
    Msg::default()
        .str(1, name)
        .str(2, "nginx:1.27")
        .msg(10, probe)
        .msg(12, lifecycle)
}

/// A PodSpec with node affinity, a pod security context (`runAsUser: 0` is a pointer, kept) and
/// a topology spread constraint.
fn pod_spec(name: &str) -> Msg {
    let requirement = Msg::default()
        .str(1, "kubernetes.io/os")
        .str(2, "In")
        .str(3, "linux");
    let affinity = Msg::default().msg(
        1,
        Msg::default().msg(1, Msg::default().msg(1, Msg::default().msg(1, requirement))),
    );
    let spread = Msg::default()
        .int(1, 1)
        .str(2, "kubernetes.io/hostname")
        .str(3, "ScheduleAnyway");
    Msg::default()
        .msg(2, container(name))
        .msg(14, Msg::default().int(2, 0))
        .msg(18, affinity)
        .msg(33, spread)
}

fn template(app: &str) -> Msg {
    Msg::default().msg(1, labels(app)).msg(2, pod_spec(app))
}

fn selector(app: &str) -> Msg {
    Msg::default().entry(1, "app", app)
}

async fn create(client: &Client, path: &str, body: Vec<u8>) -> Value {
    let req = client
        .request_with(
            Method::POST,
            path,
            &[
                ("content-type", "application/vnd.kubernetes.protobuf"),
                ("accept", "application/json"),
            ],
        )
        .map(|_| Full::new(Bytes::from(body)));
    let reply = client.send(Proto::H2, req).await.unwrap();
    assert_eq!(reply.status, 201, "POST {path}: {}", reply.body);
    serde_json::from_str(&reply.body).unwrap()
}

async fn get(client: &Client, path: &str) -> Value {
    let reply = client.get(Proto::H2, path).await.unwrap();
    assert_eq!(reply.status, 200, "GET {path}: {}", reply.body);
    serde_json::from_str(&reply.body).unwrap()
}

fn assert_pod_spec(spec: &Value, name: &str) {
    assert_eq!(
        spec["affinity"],
        json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
            ]}],
        }}}),
        "{spec}"
    );
    assert_eq!(spec["securityContext"]["runAsUser"], 0, "{spec}");
    assert_eq!(
        spec["topologySpreadConstraints"],
        json!([{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"}]),
        "{spec}"
    );
    let c = &spec["containers"][0];
    assert_eq!(c["name"], name, "{spec}");
    assert_eq!(c["image"], "nginx:1.27");
    assert_eq!(c["livenessProbe"]["grpc"]["port"], 9090, "{c}");
    assert_eq!(c["livenessProbe"]["periodSeconds"], 7, "{c}");
    assert_eq!(
        c["lifecycle"],
        json!({
            "postStart": {"exec": {"command": ["sh", "-c", "true"]}},
            "preStop": {"sleep": {"seconds": 5}},
        }),
        "{c}"
    );
}

/// Every kind the binary's discovery lists can be created from a protobuf body.
#[tokio::test(flavor = "multi_thread")]
async fn every_served_kind_has_a_protobuf_table() {
    let mut server = ApiServer::start(&[]).await;
    let admin = server.admin_client();
    let supported: Vec<(&str, &str)> = apiserver::endpoints::protobuf::supported_kinds().collect();
    let mut group_versions = vec!["v1".to_string()];
    let groups = get(&admin, "/apis").await;
    for group in groups["groups"].as_array().unwrap() {
        for version in group["versions"].as_array().unwrap() {
            group_versions.push(version["groupVersion"].as_str().unwrap().to_string());
        }
    }
    let mut missing = Vec::new();
    let mut seen = 0;
    for gv in &group_versions {
        let path = if gv == "v1" {
            "/api/v1".to_string()
        } else {
            format!("/apis/{gv}")
        };
        let list = get(&admin, &path).await;
        for resource in list["resources"].as_array().unwrap() {
            let name = resource["name"].as_str().unwrap();
            let kind = resource["kind"].as_str().unwrap();
            // Subresources name their own group version (Scale is autoscaling/v1).
            let version = resource["group"]
                .as_str()
                .zip(resource["version"].as_str())
                .map_or(gv.clone(), |(g, v)| {
                    if g.is_empty() {
                        v.to_string()
                    } else {
                        format!("{g}/{v}")
                    }
                });
            let verbs = resource["verbs"].as_array().unwrap();
            let writable = verbs.iter().any(|v| v == "create" || v == "update");
            // Connect subresources (`pods/exec`, …) take their options from the query; no
            // body is decoded, upstream neither.
            if !writable || kind.ends_with("Options") {
                continue;
            }
            seen += 1;
            if !supported.contains(&(version.as_str(), kind)) {
                missing.push(format!("{name}: {version} {kind}"));
            }
        }
    }
    assert!(seen >= 30, "only {seen} writable resources in discovery");
    assert!(missing.is_empty(), "no protobuf table for {missing:?}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn protobuf_pod_statefulset_and_daemonset_are_created_and_read_back_as_json() {
    let mut server = ApiServer::start(&[]).await;
    let admin = server.admin_client();

    let pod = Msg::default()
        .msg(1, metadata("web"))
        .msg(2, pod_spec("web"));
    let created = create(
        &admin,
        "/api/v1/namespaces/default/pods",
        envelope("v1", "Pod", pod),
    )
    .await;
    assert_eq!(created["kind"], "Pod");
    let stored = get(&admin, "/api/v1/namespaces/default/pods/web").await;
    assert_pod_spec(&stored["spec"], "web");

    let claim = Msg::default().msg(1, Msg::default().str(1, "data")).msg(
        2,
        Msg::default().str(1, "ReadWriteOnce").msg(
            2,
            Msg::default().msg(
                2,
                Msg::default()
                    .str(1, "storage")
                    .msg(2, Msg::default().str(1, "1Gi")),
            ),
        ),
    );
    let sts_spec = Msg::default()
        .int(1, 2)
        .msg(2, selector("db"))
        .msg(3, template("db"))
        .msg(4, claim)
        .str(5, "db");
    let sts = Msg::default().msg(1, metadata("db")).msg(2, sts_spec);
    create(
        &admin,
        "/apis/apps/v1/namespaces/default/statefulsets",
        envelope("apps/v1", "StatefulSet", sts),
    )
    .await;
    let stored = get(&admin, "/apis/apps/v1/namespaces/default/statefulsets/db").await;
    assert_eq!(stored["spec"]["replicas"], 2, "{stored}");
    assert_eq!(stored["spec"]["serviceName"], "db");
    let template_claim = &stored["spec"]["volumeClaimTemplates"][0];
    assert_eq!(template_claim["metadata"]["name"], "data", "{stored}");
    assert_eq!(
        template_claim["spec"]["accessModes"],
        json!(["ReadWriteOnce"])
    );
    assert_eq!(
        template_claim["spec"]["resources"]["requests"]["storage"],
        "1Gi"
    );
    assert_pod_spec(&stored["spec"]["template"]["spec"], "db");

    let strategy = Msg::default()
        .str(1, "RollingUpdate")
        .msg(2, Msg::default().msg(1, Msg::default().int(1, 0).int(2, 2)));
    let ds_spec = Msg::default()
        .msg(1, selector("agent"))
        .msg(2, template("agent"))
        .msg(3, strategy);
    let ds = Msg::default().msg(1, metadata("agent")).msg(2, ds_spec);
    create(
        &admin,
        "/apis/apps/v1/namespaces/default/daemonsets",
        envelope("apps/v1", "DaemonSet", ds),
    )
    .await;
    let stored = get(&admin, "/apis/apps/v1/namespaces/default/daemonsets/agent").await;
    assert_eq!(
        stored["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"], 2,
        "{stored}"
    );
    assert_pod_spec(&stored["spec"]["template"]["spec"], "agent");

    server.stop().await;
}

/// `kubectl create job --from=cronjob/...` copies the CronJob's job template into a Job it
/// creates through a typed client: a protobuf body carrying whatever the template holds (here
/// affinity, a lifecycle hook, a probe, a topology spread constraint and a projected volume).
#[tokio::test(flavor = "multi_thread")]
async fn kubectl_1_35_create_job_from_cronjob_sends_the_template_as_protobuf() {
    let mut server = ApiServer::start(&[]).await;
    let home = tempfile::tempdir().unwrap();
    let kubeconfig = server.kubeconfig().display().to_string();
    let pod_spec = json!({
        "restartPolicy": "Never",
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
            ]}],
        }}},
        "topologySpreadConstraints": [{
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "ScheduleAnyway",
        }],
        "containers": [{
            "name": "task",
            "image": "busybox:1.36",
            "lifecycle": {"preStop": {"sleep": {"seconds": 5}}},
            "livenessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 7},
            "volumeMounts": [{"name": "token", "mountPath": "/var/run/token"}],
        }],
        "volumes": [{"name": "token", "projected": {"sources": [
            {"serviceAccountToken": {"audience": "vault", "path": "token"}},
        ]}}],
    });
    let cronjob = json!({
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": "default"},
        "spec": {
            "schedule": "0 0 * * *",
            "jobTemplate": {"spec": {"template": {"spec": pod_spec}}},
        },
    });
    let file = home.path().join("cronjob.json");
    std::fs::write(&file, cronjob.to_string()).unwrap();
    let kubectl = |args: Vec<String>| {
        let home = home.path().to_path_buf();
        let kubeconfig = kubeconfig.clone();
        async move {
            let mut all = vec!["--kubeconfig".to_string(), kubeconfig];
            all.extend(args);
            let all: Vec<&str> = all.iter().map(String::as_str).collect();
            common::run_tool("kubectl-1.35", &home, &all).await
        }
    };
    let out = kubectl(vec![
        "create".into(),
        "-f".into(),
        file.display().to_string(),
    ])
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let out = kubectl(
        ["-v=8", "create", "job", "manual", "--from=cronjob/nightly"]
            .map(String::from)
            .to_vec(),
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let post = out
        .stderr
        .split("\"Request\" verb=\"POST\"")
        .nth(1)
        .unwrap_or_else(|| panic!("no POST in:\n{}", out.stderr));
    assert!(
        post.contains("/apis/batch/v1/namespaces/default/jobs")
            && post.contains("Content-Type: application/vnd.kubernetes.protobuf"),
        "{}",
        out.stderr
    );
    let job = get(
        &server.admin_client(),
        "/apis/batch/v1/namespaces/default/jobs/manual",
    )
    .await;
    let spec = &job["spec"]["template"]["spec"];
    for (path, expected) in [
        ("/affinity", &pod_spec["affinity"]),
        (
            "/topologySpreadConstraints",
            &pod_spec["topologySpreadConstraints"],
        ),
        (
            "/containers/0/lifecycle",
            &pod_spec["containers"][0]["lifecycle"],
        ),
        (
            "/containers/0/livenessProbe/exec",
            &json!({"command": ["true"]}),
        ),
        (
            "/volumes/0/projected/sources/0/serviceAccountToken/audience",
            &json!("vault"),
        ),
    ] {
        assert_eq!(spec.pointer(path), Some(expected), "{path} in {spec}");
    }
    server.stop().await;
}
