//! CustomResourceDefinitions end to end against the real binary with kubectl 1.35: a CRD is
//! served within moments of its creation; custom resources are created, listed with their
//! printer columns, patched (JSON and merge; strategic merge is 415), applied server-side,
//! scaled, pruned, defaulted and validated; `kubectl explain` reads their OpenAPI; deleting the
//! CRD deletes them. Restarting with an existing CRD never answers 404 for its paths.

mod common;

use std::time::{Duration, Instant};

use common::client::Proto;
use common::{ApiServer, DEADLINE, ToolOutput, eventually, run_tool};
use http::Method;

const KUBECTL: &str = "kubectl-1.35";

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
    shortNames: [wd]
    categories: [all]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
    additionalPrinterColumns:
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    - name: Color
      type: string
      jsonPath: .spec.color
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: The widget's desired state.
            required: [size]
            properties:
              size:
                type: integer
                description: How big the widget is.
              replicas:
                type: integer
              color:
                type: string
                default: blue
          status:
            type: object
            properties:
              replicas:
                type: integer
"#;

struct Kubectl {
    kubeconfig: String,
    home: tempfile::TempDir,
}

impl Kubectl {
    fn new(server: &ApiServer) -> Kubectl {
        Kubectl {
            kubeconfig: server.kubeconfig().display().to_string(),
            home: tempfile::tempdir().unwrap(),
        }
    }

    async fn run(&self, args: &[&str]) -> ToolOutput {
        let mut all = vec!["--kubeconfig", self.kubeconfig.as_str()];
        all.extend_from_slice(args);
        run_tool(KUBECTL, self.home.path(), &all).await
    }

    async fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args).await;
        assert_eq!(out.code, Some(0), "kubectl {args:?}: {out:?}");
        out.stdout
    }

    fn file(&self, name: &str, content: &str) -> String {
        let path = self.home.path().join(name);
        std::fs::write(&path, content).unwrap();
        path.display().to_string()
    }

    async fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        serde_json::from_str(&self.ok(&all).await).unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources_with_kubectl() {
    let server = ApiServer::start(&[]).await;
    let k = Kubectl::new(&server);
    let crd = k.file("crd.yaml", CRD);
    k.ok(&["apply", "-f", &crd]).await;
    let created = Instant::now();
    let client = server.admin_client();
    eventually("the custom resource is served", || async {
        let reply = client
            .get(Proto::H1, "/apis/example.com/v1/namespaces/default/widgets")
            .await
            .ok()?;
        (reply.status == 200).then_some(())
    })
    .await;
    let served_after = created.elapsed();
    assert!(
        served_after < Duration::from_secs(5),
        "served after {served_after:?}"
    );
    let crd_obj = k.json(&["get", "crd", "widgets.example.com"]).await;
    let conditions = crd_obj["status"]["conditions"].as_array().unwrap();
    for (type_, reason) in [
        ("NamesAccepted", "NoConflicts"),
        ("Established", "InitialNamesAccepted"),
    ] {
        let c = conditions.iter().find(|c| c["type"] == type_).unwrap();
        assert_eq!(c["status"], "True");
        assert_eq!(c["reason"], reason);
    }
    assert_eq!(
        crd_obj["metadata"]["finalizers"],
        serde_json::json!(["customresourcecleanup.apiextensions.k8s.io"])
    );

    // Create: defaults applied, unknown fields pruned (kubectl's strict validation off).
    let w1 = k.file(
        "w1.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: 3\n  replicas: 1\n  bogus: true\n",
    );
    k.ok(&["create", "--validate=false", "-f", &w1]).await;
    let obj = k.json(&["get", "widget", "w1"]).await;
    assert_eq!(obj["spec"]["color"], "blue");
    assert!(obj["spec"].get("bogus").is_none(), "{obj}");
    assert_eq!(obj["metadata"]["generation"], 1);

    // Strict field validation (kubectl's default) names the unknown field.
    let w2 = k.file(
        "w2.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w2\nspec:\n  size: 1\n  bogus: true\n",
    );
    let out = k.run(&["create", "-f", &w2]).await;
    assert_ne!(out.code, Some(0));
    assert!(
        out.stderr.contains("unknown field \"spec.bogus\""),
        "{out:?}"
    );

    // Validation errors as upstream.
    let bad = k.file(
        "bad.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: bad\nspec:\n  size: big\n",
    );
    let out = k.run(&["create", "-f", &bad]).await;
    assert!(
        out.stderr.contains(
            "The Widget \"bad\" is invalid: spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\""
        ),
        "{out:?}"
    );

    // Printer columns, short name, category all.
    let table = k.ok(&["get", "wd"]).await;
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(header, vec!["NAME", "REPLICAS", "COLOR"]);
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(row, vec!["w1", "1", "blue"]);
    let all = k.ok(&["get", "all"]).await;
    assert!(all.contains("widget.example.com/w1"), "{all}");

    // Patches: merge and JSON patch work; strategic merge patch is 415.
    k.ok(&[
        "patch",
        "widget",
        "w1",
        "--type=merge",
        "-p",
        r#"{"spec":{"color":"red"}}"#,
    ])
    .await;
    k.ok(&[
        "patch",
        "widget",
        "w1",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/size","value":5}]"#,
    ])
    .await;
    let obj = k.json(&["get", "widget", "w1"]).await;
    assert_eq!(obj["spec"]["color"], "red");
    assert_eq!(obj["spec"]["size"], 5);
    assert_eq!(obj["metadata"]["generation"], 3);
    let out = k
        .run(&[
            "patch",
            "widget",
            "w1",
            "--type=strategic",
            "-p",
            r#"{"spec":{"size":6}}"#,
        ])
        .await;
    assert_ne!(out.code, Some(0));
    assert!(
        out.stderr.contains("UnsupportedMediaType")
            || out.stderr.contains("415")
            || out.stderr.contains("not supported"),
        "{out:?}"
    );

    let mut smp = client.request(
        Method::PATCH,
        "/apis/example.com/v1/namespaces/default/widgets/w1",
        r#"{"spec":{"size":6}}"#,
    );
    smp.headers_mut().insert(
        "content-type",
        "application/strategic-merge-patch+json".parse().unwrap(),
    );
    let reply = client.send(Proto::H1, smp).await.unwrap();
    assert_eq!(reply.status, 415, "{}", reply.body);
    let mut create = client.request(
        Method::POST,
        "/apis/example.com/v1/namespaces/default/widgets",
        r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"bad"},"spec":{"size":"big"}}"#,
    );
    create
        .headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    let raw = client.send(Proto::H1, create).await.unwrap();
    assert_eq!(raw.status, 422);
    let status: serde_json::Value = serde_json::from_str(&raw.body).unwrap();
    assert_eq!(
        status["message"],
        "Widget.example.com \"bad\" is invalid: spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\""
    );
    assert_eq!(status["details"]["causes"][0]["field"], "spec.size");

    // Server-side apply.
    let applied = k.file(
        "applied.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w3\nspec:\n  size: 7\n",
    );
    k.ok(&["apply", "--server-side", "-f", &applied]).await;
    let obj = k
        .json(&["get", "widget", "w3", "--show-managed-fields"])
        .await;
    assert_eq!(obj["spec"]["size"], 7);
    let managers: Vec<&str> = obj["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["manager"].as_str())
        .collect();
    assert!(managers.contains(&"kubectl"), "{managers:?}");

    // Status subresource: only /status changes status; the main resource keeps it.
    k.ok(&[
        "patch",
        "widget",
        "w1",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":2}}"#,
    ])
    .await;
    k.ok(&[
        "patch",
        "widget",
        "w1",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":9}}"#,
    ])
    .await;
    let obj = k.json(&["get", "widget", "w1"]).await;
    assert_eq!(obj["status"]["replicas"], 2);

    // Scale subresource.
    k.ok(&["scale", "widget", "w1", "--replicas=4"]).await;
    let obj = k.json(&["get", "widget", "w1"]).await;
    assert_eq!(obj["spec"]["replicas"], 4);
    let scale = client
        .get(
            Proto::H1,
            "/apis/example.com/v1/namespaces/default/widgets/w1/scale",
        )
        .await
        .unwrap();
    let scale: serde_json::Value = serde_json::from_str(&scale.body).unwrap();
    assert_eq!(scale["spec"]["replicas"], 4);
    assert_eq!(scale["status"]["replicas"], 2);

    // explain reads the published OpenAPI v3.
    let explained = k.ok(&["explain", "widgets.spec"]).await;
    assert!(
        explained.contains("The widget's desired state."),
        "{explained}"
    );
    assert!(explained.contains("size"), "{explained}");
    let explained = k.ok(&["explain", "widgets.metadata"]).await;
    assert!(explained.contains("ownerReferences"), "{explained}");

    // Discovery.
    let resources = k.ok(&["api-resources", "--api-group=example.com"]).await;
    assert!(
        resources.contains("widgets") && resources.contains("wd"),
        "{resources}"
    );

    // Deleting the CRD deletes its custom resources, then the CRD and its API.
    k.ok(&["delete", "crd", "widgets.example.com", "--wait=true"])
        .await;
    eventually("the custom resource is gone", || async {
        let reply = client
            .get(Proto::H1, "/apis/example.com/v1/namespaces/default/widgets")
            .await
            .ok()?;
        (reply.status == 404).then_some(())
    })
    .await;
    // Re-creating it finds no old instances.
    k.ok(&["apply", "-f", &crd]).await;
    let list = eventually("served again", || async {
        let reply = client
            .get(Proto::H1, "/apis/example.com/v1/widgets")
            .await
            .ok()?;
        (reply.status == 200).then_some(reply.body)
    })
    .await;
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert_eq!(list["items"], serde_json::json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_never_answers_404_for_existing_custom_resources() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    {
        let mut server = ApiServer::builder().data_dir(&data).start().await;
        let k = Kubectl::new(&server);
        let crd = k.file("crd.yaml", CRD);
        // kubectl 1.20 validates the CRD against /openapi/v2 before sending it (a string
        // `default` must pass the free-form JSON type).
        let out = run_tool(
            "kubectl-1.20",
            k.home.path(),
            &["--kubeconfig", &k.kubeconfig, "apply", "-f", &crd],
        )
        .await;
        assert_eq!(out.code, Some(0), "{out:?}");
        let client = server.admin_client();
        eventually("served", || async {
            let reply = client
                .get(Proto::H1, "/apis/example.com/v1/widgets")
                .await
                .ok()?;
            (reply.status == 200).then_some(())
        })
        .await;
        server.stop().await;
    }
    let server = ApiServer::builder()
        .data_dir(&data)
        .no_ready_wait()
        .start()
        .await;
    let client = server.admin_client();
    let start = Instant::now();
    let mut statuses = Vec::new();
    loop {
        let reply = client
            .send(
                Proto::H1,
                client.request(Method::GET, "/apis/example.com/v1/widgets", ""),
            )
            .await
            .unwrap();
        let status = reply.status.as_u16();
        assert_ne!(status, 404, "after {statuses:?}: {}", reply.body);
        if status == 503 {
            assert!(reply.headers.contains_key("retry-after"), "{reply:?}");
        }
        statuses.push(status);
        if status == 200 {
            break;
        }
        assert!(start.elapsed() < DEADLINE, "{statuses:?}");
    }

    // The apiextensions server's hooks are merged into the running server's readyz.
    server.wait_ready().await;
    let ready = client.get(Proto::H1, "/readyz?verbose").await.unwrap().body;
    for check in [
        "[+]poststarthook/start-apiextensions-informers ok",
        "[+]poststarthook/start-apiextensions-controllers ok",
        "[+]poststarthook/crd-informer-synced ok",
    ] {
        assert!(ready.contains(check), "{ready}");
    }
}

const GIZMOS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.example.com
spec:
  group: example.com
  scope: Cluster
  names:
    plural: gizmos
    kind: Gizmo
  versions:
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#;

const CONFLICTING: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: others.example.com
spec:
  group: example.com
  scope: Cluster
  names:
    plural: others
    kind: Gizmo
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_versions_cluster_scope_and_name_conflicts() {
    let server = ApiServer::start(&[]).await;
    let k = Kubectl::new(&server);
    let gizmos = k.file("gizmos.yaml", GIZMOS);
    k.ok(&["apply", "-f", &gizmos]).await;
    let client = server.admin_client();
    eventually("gizmos are served", || async {
        let reply = client
            .get(Proto::H1, "/apis/example.com/v1/gizmos")
            .await
            .ok()?;
        (reply.status == 200).then_some(())
    })
    .await;
    let g = k.file(
        "g.yaml",
        "apiVersion: example.com/v1\nkind: Gizmo\nmetadata:\n  name: g1\nanything: [1, 2]\n",
    );
    k.ok(&["create", "-f", &g]).await;
    // None conversion: the same object through either version, with that apiVersion.
    let old = k.json(&["get", "gizmos.v1beta1.example.com", "g1"]).await;
    assert_eq!(old["apiVersion"], "example.com/v1beta1");
    assert_eq!(old["anything"], serde_json::json!([1, 2]));
    let new = k.json(&["get", "gizmo", "g1"]).await;
    assert_eq!(new["apiVersion"], "example.com/v1");
    // Discovery prefers the highest version.
    let group: serde_json::Value = serde_json::from_str(
        &client
            .get(Proto::H1, "/apis/example.com")
            .await
            .unwrap()
            .body,
    )
    .unwrap();
    assert_eq!(group["preferredVersion"]["version"], "v1");
    // Every served version advertises the storage version's hash.
    let mut hashes = Vec::new();
    for version in ["v1", "v1beta1"] {
        let list: serde_json::Value = serde_json::from_str(
            &client
                .get(Proto::H1, &format!("/apis/example.com/{version}"))
                .await
                .unwrap()
                .body,
        )
        .unwrap();
        let gizmos = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "gizmos")
            .unwrap()
            .clone();
        hashes.push(gizmos["storageVersionHash"].as_str().unwrap().to_string());
    }
    assert_eq!(hashes[0], hashes[1]);
    // Cluster-scoped: no namespace paths.
    let reply = client
        .get(Proto::H1, "/apis/example.com/v1/namespaces/default/gizmos")
        .await
        .unwrap();
    assert_eq!(reply.status, 404);

    // A CRD asking for a kind already accepted in its group is not established.
    let conflicting = k.file("others.yaml", CONFLICTING);
    k.ok(&["apply", "-f", &conflicting]).await;
    let cond = eventually("NamesAccepted is reported", || async {
        let crd = k.json(&["get", "crd", "others.example.com"]).await;
        crd["status"]["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == "NamesAccepted").cloned())
    })
    .await;
    assert_eq!(cond["status"], "False");
    // Kind and listKind both conflict; as upstream, the last check's reason is reported.
    assert_eq!(cond["reason"], "ListKindConflict");
    assert_eq!(cond["message"], "\"GizmoList\" is already in use");
    let crd = k.json(&["get", "crd", "others.example.com"]).await;
    let established = crd["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Established")
        .unwrap()
        .clone();
    assert_eq!(established["status"], "False");
    assert_eq!(established["reason"], "NotAccepted");
    let reply = client
        .get(Proto::H1, "/apis/example.com/v1/others")
        .await
        .unwrap();
    assert_eq!(reply.status, 404);
}
