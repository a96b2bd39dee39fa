//! The API groups and resources of kube-apiserver 1.35 beyond the first built-in set, through
//! the real binary over TLS with kubectl 1.35 (and 1.20) and helm: discovery as
//! `kubectl api-resources` shows it, HorizontalPodAutoscalers in both versions (a `helm create`
//! chart with autoscaling enabled), CertificateSigningRequests approved and denied by
//! `kubectl certificate`, bindings, component statuses, and tables and `kubectl explain` for
//! the new kinds.

mod common;

use common::{ApiServer, ToolOutput, run_tool};

/// Runs a tool with the server's admin kubeconfig and an isolated HOME.
struct Tools<'a> {
    server: &'a ApiServer,
    home: tempfile::TempDir,
}

impl Tools<'_> {
    fn new(server: &ApiServer) -> Tools<'_> {
        Tools {
            server,
            home: tempfile::tempdir().unwrap(),
        }
    }

    async fn run(&self, tool: &str, args: &[&str]) -> ToolOutput {
        let kubeconfig = self.server.kubeconfig().display().to_string();
        let mut all = vec!["--kubeconfig", kubeconfig.as_str()];
        all.extend_from_slice(args);
        run_tool(tool, self.home.path(), &all).await
    }

    async fn ok(&self, tool: &str, args: &[&str]) -> String {
        let out = self.run(tool, args).await;
        assert_eq!(out.code, Some(0), "{tool} {args:?}: {out:?}");
        out.stdout
    }

    async fn kubectl(&self, args: &[&str]) -> String {
        self.ok("kubectl-1.35", args).await
    }

    /// `kubectl create -f` of a manifest written to a file.
    async fn apply_manifest(&self, tool: &str, name: &str, manifest: &str) -> ToolOutput {
        let path = self.home.path().join(name);
        std::fs::write(&path, manifest).unwrap();
        let path = path.display().to_string();
        self.run(tool, &["create", "-f", &path]).await
    }
}

/// kube-apiserver 1.35's built-in resources as `kubectl api-resources -o wide` lists them:
/// name, short names, API version, namespaced, kind, verbs, categories.
const UPSTREAM_API_RESOURCES: &[(&str, &str, &str, bool, &str, &str, &str)] = &[
    ("bindings", "", "v1", true, "Binding", "create", ""),
    (
        "componentstatuses",
        "cs",
        "v1",
        false,
        "ComponentStatus",
        "get,list",
        "",
    ),
    ("configmaps", "cm", "v1", true, "ConfigMap", ALL_VERBS, ""),
    ("endpoints", "ep", "v1", true, "Endpoints", ALL_VERBS, ""),
    ("events", "ev", "v1", true, "Event", ALL_VERBS, ""),
    (
        "limitranges",
        "limits",
        "v1",
        true,
        "LimitRange",
        ALL_VERBS,
        "",
    ),
    (
        "namespaces",
        "ns",
        "v1",
        false,
        "Namespace",
        "create,delete,get,list,patch,update,watch",
        "",
    ),
    ("nodes", "no", "v1", false, "Node", ALL_VERBS, ""),
    (
        "persistentvolumeclaims",
        "pvc",
        "v1",
        true,
        "PersistentVolumeClaim",
        ALL_VERBS,
        "",
    ),
    (
        "persistentvolumes",
        "pv",
        "v1",
        false,
        "PersistentVolume",
        ALL_VERBS,
        "",
    ),
    ("pods", "po", "v1", true, "Pod", ALL_VERBS, "all"),
    ("podtemplates", "", "v1", true, "PodTemplate", ALL_VERBS, ""),
    (
        "replicationcontrollers",
        "rc",
        "v1",
        true,
        "ReplicationController",
        ALL_VERBS,
        "all",
    ),
    (
        "resourcequotas",
        "quota",
        "v1",
        true,
        "ResourceQuota",
        ALL_VERBS,
        "",
    ),
    ("secrets", "", "v1", true, "Secret", ALL_VERBS, ""),
    (
        "serviceaccounts",
        "sa",
        "v1",
        true,
        "ServiceAccount",
        ALL_VERBS,
        "",
    ),
    ("services", "svc", "v1", true, "Service", ALL_VERBS, "all"),
    (
        "customresourcedefinitions",
        "crd,crds",
        "apiextensions.k8s.io/v1",
        false,
        "CustomResourceDefinition",
        ALL_VERBS,
        "api-extensions",
    ),
    (
        "mutatingwebhookconfigurations",
        "",
        "admissionregistration.k8s.io/v1",
        false,
        "MutatingWebhookConfiguration",
        ALL_VERBS,
        "api-extensions",
    ),
    (
        "validatingwebhookconfigurations",
        "",
        "admissionregistration.k8s.io/v1",
        false,
        "ValidatingWebhookConfiguration",
        ALL_VERBS,
        "api-extensions",
    ),
    (
        "apiservices",
        "",
        "apiregistration.k8s.io/v1",
        false,
        "APIService",
        ALL_VERBS,
        "api-extensions",
    ),
    (
        "validatingadmissionpolicies",
        "",
        "admissionregistration.k8s.io/v1",
        false,
        "ValidatingAdmissionPolicy",
        ALL_VERBS,
        "api-extensions",
    ),
    (
        "validatingadmissionpolicybindings",
        "",
        "admissionregistration.k8s.io/v1",
        false,
        "ValidatingAdmissionPolicyBinding",
        ALL_VERBS,
        "api-extensions",
    ),
    (
        "controllerrevisions",
        "",
        "apps/v1",
        true,
        "ControllerRevision",
        ALL_VERBS,
        "",
    ),
    (
        "daemonsets",
        "ds",
        "apps/v1",
        true,
        "DaemonSet",
        ALL_VERBS,
        "all",
    ),
    (
        "deployments",
        "deploy",
        "apps/v1",
        true,
        "Deployment",
        ALL_VERBS,
        "all",
    ),
    (
        "replicasets",
        "rs",
        "apps/v1",
        true,
        "ReplicaSet",
        ALL_VERBS,
        "all",
    ),
    (
        "statefulsets",
        "sts",
        "apps/v1",
        true,
        "StatefulSet",
        ALL_VERBS,
        "all",
    ),
    (
        "selfsubjectreviews",
        "",
        "authentication.k8s.io/v1",
        false,
        "SelfSubjectReview",
        "create",
        "",
    ),
    (
        "tokenreviews",
        "",
        "authentication.k8s.io/v1",
        false,
        "TokenReview",
        "create",
        "",
    ),
    (
        "horizontalpodautoscalers",
        "hpa",
        "autoscaling/v2",
        true,
        "HorizontalPodAutoscaler",
        ALL_VERBS,
        "all",
    ),
    (
        "cronjobs", "cj", "batch/v1", true, "CronJob", ALL_VERBS, "all",
    ),
    ("jobs", "", "batch/v1", true, "Job", ALL_VERBS, "all"),
    (
        "certificatesigningrequests",
        "csr",
        "certificates.k8s.io/v1",
        false,
        "CertificateSigningRequest",
        ALL_VERBS,
        "",
    ),
    (
        "leases",
        "",
        "coordination.k8s.io/v1",
        true,
        "Lease",
        ALL_VERBS,
        "",
    ),
    (
        "endpointslices",
        "",
        "discovery.k8s.io/v1",
        true,
        "EndpointSlice",
        ALL_VERBS,
        "",
    ),
    (
        "events",
        "ev",
        "events.k8s.io/v1",
        true,
        "Event",
        ALL_VERBS,
        "",
    ),
    (
        "ingressclasses",
        "",
        "networking.k8s.io/v1",
        false,
        "IngressClass",
        ALL_VERBS,
        "",
    ),
    (
        "ingresses",
        "ing",
        "networking.k8s.io/v1",
        true,
        "Ingress",
        ALL_VERBS,
        "",
    ),
    (
        "ipaddresses",
        "ip",
        "networking.k8s.io/v1",
        false,
        "IPAddress",
        ALL_VERBS,
        "",
    ),
    (
        "networkpolicies",
        "netpol",
        "networking.k8s.io/v1",
        true,
        "NetworkPolicy",
        ALL_VERBS,
        "",
    ),
    (
        "servicecidrs",
        "",
        "networking.k8s.io/v1",
        false,
        "ServiceCIDR",
        ALL_VERBS,
        "",
    ),
    (
        "runtimeclasses",
        "",
        "node.k8s.io/v1",
        false,
        "RuntimeClass",
        ALL_VERBS,
        "",
    ),
    (
        "poddisruptionbudgets",
        "pdb",
        "policy/v1",
        true,
        "PodDisruptionBudget",
        ALL_VERBS,
        "",
    ),
    (
        "clusterrolebindings",
        "",
        "rbac.authorization.k8s.io/v1",
        false,
        "ClusterRoleBinding",
        ALL_VERBS,
        "",
    ),
    (
        "clusterroles",
        "",
        "rbac.authorization.k8s.io/v1",
        false,
        "ClusterRole",
        ALL_VERBS,
        "",
    ),
    (
        "rolebindings",
        "",
        "rbac.authorization.k8s.io/v1",
        true,
        "RoleBinding",
        ALL_VERBS,
        "",
    ),
    (
        "roles",
        "",
        "rbac.authorization.k8s.io/v1",
        true,
        "Role",
        ALL_VERBS,
        "",
    ),
    (
        "deviceclasses",
        "",
        "resource.k8s.io/v1",
        false,
        "DeviceClass",
        ALL_VERBS,
        "",
    ),
    (
        "resourceclaims",
        "",
        "resource.k8s.io/v1",
        true,
        "ResourceClaim",
        ALL_VERBS,
        "",
    ),
    (
        "resourceclaimtemplates",
        "",
        "resource.k8s.io/v1",
        true,
        "ResourceClaimTemplate",
        ALL_VERBS,
        "",
    ),
    (
        "resourceslices",
        "",
        "resource.k8s.io/v1",
        false,
        "ResourceSlice",
        ALL_VERBS,
        "",
    ),
    (
        "priorityclasses",
        "pc",
        "scheduling.k8s.io/v1",
        false,
        "PriorityClass",
        ALL_VERBS,
        "",
    ),
    (
        "csidrivers",
        "",
        "storage.k8s.io/v1",
        false,
        "CSIDriver",
        ALL_VERBS,
        "",
    ),
    (
        "csinodes",
        "",
        "storage.k8s.io/v1",
        false,
        "CSINode",
        ALL_VERBS,
        "",
    ),
    (
        "csistoragecapacities",
        "",
        "storage.k8s.io/v1",
        true,
        "CSIStorageCapacity",
        ALL_VERBS,
        "",
    ),
    (
        "storageclasses",
        "sc",
        "storage.k8s.io/v1",
        false,
        "StorageClass",
        ALL_VERBS,
        "",
    ),
    (
        "volumeattachments",
        "",
        "storage.k8s.io/v1",
        false,
        "VolumeAttachment",
        ALL_VERBS,
        "",
    ),
    (
        "volumeattributesclasses",
        "vac",
        "storage.k8s.io/v1",
        false,
        "VolumeAttributesClass",
        ALL_VERBS,
        "",
    ),
    (
        "localsubjectaccessreviews",
        "",
        "authorization.k8s.io/v1",
        true,
        "LocalSubjectAccessReview",
        "create",
        "",
    ),
    (
        "selfsubjectaccessreviews",
        "",
        "authorization.k8s.io/v1",
        false,
        "SelfSubjectAccessReview",
        "create",
        "",
    ),
    (
        "selfsubjectrulesreviews",
        "",
        "authorization.k8s.io/v1",
        false,
        "SelfSubjectRulesReview",
        "create",
        "",
    ),
    (
        "subjectaccessreviews",
        "",
        "authorization.k8s.io/v1",
        false,
        "SubjectAccessReview",
        "create",
        "",
    ),
];

const ALL_VERBS: &str = "create,delete,deletecollection,get,list,patch,update,watch";

/// Upstream 1.35 API groups this server does not serve yet, with the issue that brings them.
const KNOWN_EXCLUDED: &[(&str, &str)] = &[(
    "flowcontrol.apiserver.k8s.io/v1",
    "API priority and fairness (own issue)",
)];

/// The rows of `kubectl api-resources -o wide`, cut at the header's column starts.
fn parse_api_resources(out: &str) -> Vec<[String; 7]> {
    let mut lines = out.lines();
    let header = lines.next().expect("header");
    let starts: Vec<usize> = [
        "NAME",
        "SHORTNAMES",
        "APIVERSION",
        "NAMESPACED",
        "KIND",
        "VERBS",
        "CATEGORIES",
    ]
    .iter()
    .map(|h| header.find(h).unwrap_or_else(|| panic!("{h} in {header}")))
    .collect();
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            std::array::from_fn(|i| {
                let end = starts.get(i + 1).copied().unwrap_or(line.len());
                line.get(starts[i]..end.min(line.len()))
                    .unwrap_or_default()
                    .trim()
                    .to_string()
            })
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_api_resources_lists_the_same_builtin_resources_as_kube_apiserver_1_35() {
    let mut server = ApiServer::start(&[]).await;
    let tools = Tools::new(&server);
    let out = tools.kubectl(&["api-resources", "-o", "wide"]).await;
    let got = parse_api_resources(&out);
    let want: Vec<[String; 7]> = UPSTREAM_API_RESOURCES
        .iter()
        .map(|(n, s, v, ns, k, verbs, c)| {
            [n, s, v, &ns.to_string().as_str(), k, verbs, c].map(|x| x.to_string())
        })
        .collect();
    for (group_version, why) in KNOWN_EXCLUDED {
        assert!(
            !got.iter().any(|r| &r[2] == group_version),
            "{group_version} is served now ({why}): move its rows into the table"
        );
    }
    let missing: Vec<_> = want.iter().filter(|r| !got.contains(r)).collect();
    let extra: Vec<_> = got.iter().filter(|r| !want.contains(r)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing or different: {missing:#?}\nnot upstream's: {extra:#?}\n{out}"
    );
    // kubectl 1.20 reads the same discovery.
    let old = tools
        .ok(
            "kubectl-1.20",
            &["api-resources", "--api-group=certificates.k8s.io"],
        )
        .await;
    assert!(old.contains("certificatesigningrequests"), "{old}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn helm_chart_with_autoscaling_installs_and_its_hpa_reads_back_in_v1_and_v2() {
    let mut server = ApiServer::start(&[]).await;
    let tools = Tools::new(&server);
    let chart = tools.home.path().join("demo").display().to_string();
    let out = run_tool("helm", tools.home.path(), &["create", &chart]).await;
    assert_eq!(out.code, Some(0), "helm create: {out:?}");
    let install = tools
        .ok(
            "helm",
            &[
                "install",
                "demo",
                &chart,
                "--set",
                "autoscaling.enabled=true",
            ],
        )
        .await;
    assert!(install.contains("STATUS: deployed"), "{install}");

    let v2 = tools
        .kubectl(&[
            "get",
            "horizontalpodautoscalers.v2.autoscaling",
            "demo",
            "-o",
            "jsonpath={.apiVersion} {.spec.minReplicas} {.spec.maxReplicas} {.spec.metrics[0].resource.target.averageUtilization}",
        ])
        .await;
    assert_eq!(v2, "autoscaling/v2 1 100 80");
    let v1 = tools
        .kubectl(&[
            "get",
            "horizontalpodautoscalers.v1.autoscaling",
            "demo",
            "-o",
            "jsonpath={.apiVersion} {.spec.minReplicas} {.spec.maxReplicas} {.spec.targetCPUUtilizationPercentage} {.spec.scaleTargetRef.name}",
        ])
        .await;
    assert_eq!(v1, "autoscaling/v1 1 100 80 demo");
    let table = tools.kubectl(&["get", "hpa", "demo"]).await;
    let row: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(
        row[..8],
        [
            "demo",
            "Deployment/demo",
            "cpu:",
            "<unknown>/80%",
            "1",
            "100",
            "0",
            row[7]
        ],
        "{table}"
    );

    // A v2-only metric written through v2 survives a v1 update in the annotations.
    tools
        .kubectl(&[
            "patch",
            "horizontalpodautoscalers.v2.autoscaling",
            "demo",
            "--type=json",
            "-p",
            r#"[{"op":"add","path":"/spec/metrics/-","value":{"type":"Pods","pods":{"metric":{"name":"qps"},"target":{"type":"AverageValue","averageValue":"10"}}}}]"#,
        ])
        .await;
    let annotation = tools
        .kubectl(&[
            "get",
            "horizontalpodautoscalers.v1.autoscaling",
            "demo",
            "-o",
            r#"jsonpath={.metadata.annotations.autoscaling\.alpha\.kubernetes\.io/metrics}"#,
        ])
        .await;
    assert_eq!(
        annotation,
        r#"[{"pods":{"metricName":"qps","targetAverageValue":"10"},"type":"Pods"}]"#
    );
    tools
        .kubectl(&[
            "patch",
            "horizontalpodautoscalers.v1.autoscaling",
            "demo",
            "--type=merge",
            "-p",
            r#"{"spec":{"maxReplicas":7,"targetCPUUtilizationPercentage":60}}"#,
        ])
        .await;
    let after = tools
        .kubectl(&[
            "get",
            "horizontalpodautoscalers.v2.autoscaling",
            "demo",
            "-o",
            "jsonpath={.spec.maxReplicas} {.spec.metrics[*].type} {.spec.metrics[1].resource.target.averageUtilization} {.metadata.annotations}",
        ])
        .await;
    assert!(
        after.starts_with("7 Pods Resource 60 "),
        "v2 after the v1 patch: {after}"
    );
    assert!(!after.contains("autoscaling.alpha"), "{after}");

    // An invalid HPA is refused with upstream's message.
    let bad = tools
        .apply_manifest(
            "kubectl-1.35",
            "bad-hpa.yaml",
            "apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: bad\nspec:\n  scaleTargetRef: {kind: Deployment, name: x}\n  minReplicas: 5\n  maxReplicas: 3\n",
        )
        .await;
    assert_eq!(bad.code, Some(1));
    assert!(
        bad.stderr.contains(
            "spec.maxReplicas: Invalid value: 3: must be greater than or equal to `minReplicas`"
        ),
        "{bad:?}"
    );
    tools.ok("helm", &["uninstall", "demo"]).await;
    server.stop().await;
}

/// A `CertificateSigningRequest` manifest for a fresh PKCS#10 request.
fn csr_manifest(name: &str) -> String {
    use base64::Engine;
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    let pem = params.serialize_request(&key).unwrap().pem().unwrap();
    let request = base64::engine::general_purpose::STANDARD.encode(pem);
    format!(
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata:\n  name: {name}\nspec:\n  request: {request}\n  signerName: kubernetes.io/kube-apiserver-client\n  expirationSeconds: 86400\n  usages: [client auth]\n"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_certificate_approve_and_deny_update_csr_conditions_through_approval() {
    let mut server = ApiServer::start(&[]).await;
    let tools = Tools::new(&server);
    for name in ["alice", "bob", "carol"] {
        let out = tools
            .apply_manifest("kubectl-1.35", &format!("{name}.yaml"), &csr_manifest(name))
            .await;
        assert_eq!(out.code, Some(0), "{out:?}");
    }
    let table = tools.kubectl(&["get", "csr", "alice"]).await;
    let row: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[0], "alice");
    assert_eq!(
        row[2..],
        [
            "kubernetes.io/kube-apiserver-client",
            "admin",
            "24h",
            "Pending"
        ],
        "{table}"
    );

    let approved = tools.kubectl(&["certificate", "approve", "alice"]).await;
    assert_eq!(
        approved.trim(),
        "certificatesigningrequest.certificates.k8s.io/alice approved"
    );
    let denied = tools.kubectl(&["certificate", "deny", "bob"]).await;
    assert_eq!(
        denied.trim(),
        "certificatesigningrequest.certificates.k8s.io/bob denied"
    );
    let old = tools
        .ok("kubectl-1.20", &["certificate", "approve", "carol"])
        .await;
    assert!(old.contains("carol approved"), "{old}");
    let conditions = tools
        .kubectl(&[
            "get",
            "csr",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}={.status.conditions[0].type}/{.status.conditions[0].reason} {end}",
        ])
        .await;
    assert_eq!(
        conditions.trim(),
        "alice=Approved/KubectlApprove bob=Denied/KubectlDeny carol=Approved/KubectlApprove"
    );
    // Approved and Denied exclude each other (kubectl checks this itself, so the approval
    // subresource gets the object directly).
    let mut alice: serde_json::Value =
        serde_json::from_str(&tools.kubectl(&["get", "csr", "alice", "-o", "json"]).await).unwrap();
    alice["status"]["conditions"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"type": "Denied", "status": "True", "reason": "Changed"}));
    let path = tools.home.path().join("alice.json");
    std::fs::write(&path, alice.to_string()).unwrap();
    let both = tools
        .run(
            "kubectl-1.35",
            &[
                "replace",
                "--raw",
                "/apis/certificates.k8s.io/v1/certificatesigningrequests/alice/approval",
                "-f",
                &path.display().to_string(),
            ],
        )
        .await;
    assert_eq!(both.code, Some(1));
    assert!(
        both.stderr
            .contains("Approved and Denied conditions are mutually exclusive"),
        "{both:?}"
    );
    // The status subresource cannot drop the approval.
    tools
        .kubectl(&[
            "patch",
            "csr",
            "alice",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"conditions":[{"type":"Failed","status":"True","reason":"SignerFailed"}]}}"#,
        ])
        .await;
    let table = tools.kubectl(&["get", "csr", "alice"]).await;
    assert!(table.contains("Approved,Failed"), "{table}");

    // A request that is not a PEM certificate request is refused.
    let bad = tools
        .apply_manifest(
            "kubectl-1.35",
            "bad.yaml",
            "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata:\n  name: bad\nspec:\n  request: bm90IGEgcmVxdWVzdA==\n  signerName: example.com\n  usages: [client auth]\n",
        )
        .await;
    assert_eq!(bad.code, Some(1));
    assert!(
        bad.stderr
            .contains("PEM block type must be CERTIFICATE REQUEST"),
        "{bad:?}"
    );
    assert!(
        bad.stderr.contains(
            "must be a fully qualified domain and path of the form 'example.com/signer-name'"
        ),
        "{bad:?}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bindings_bind_a_pod_once_and_componentstatuses_report_the_control_plane() {
    let mut server = ApiServer::start(&[]).await;
    let tools = Tools::new(&server);
    // Resources that are not stored get no storageVersionHash in discovery, as upstream's
    // (their REST is no StorageVersionProvider); stored ones do.
    for (path, unstored, stored) in [
        ("/api/v1", &["bindings", "componentstatuses"][..], "pods"),
        (
            "/apis/authorization.k8s.io/v1",
            &["subjectaccessreviews", "selfsubjectrulesreviews"][..],
            "",
        ),
    ] {
        let list: serde_json::Value =
            serde_json::from_str(&tools.kubectl(&["get", "--raw", path]).await).unwrap();
        let resources = list["resources"].as_array().unwrap();
        let hash = |name: &str| {
            resources
                .iter()
                .find(|r| r["name"] == name)
                .unwrap_or_else(|| panic!("{name} in {path}"))
                .get("storageVersionHash")
                .is_some()
        };
        for name in unstored {
            assert!(!hash(name), "{name} has a storageVersionHash");
        }
        if !stored.is_empty() {
            assert!(hash(stored), "{stored} has no storageVersionHash");
        }
    }
    tools
        .kubectl(&["run", "web", "--image=nginx", "--restart=Never"])
        .await;
    let binding = "apiVersion: v1\nkind: Binding\nmetadata:\n  name: web\ntarget:\n  kind: Node\n  name: node-1\n";
    let out = tools
        .apply_manifest("kubectl-1.35", "b1.yaml", binding)
        .await;
    assert_eq!(out.code, Some(0), "{out:?}");
    let bound = tools
        .kubectl(&[
            "get",
            "pod",
            "web",
            "-o",
            "jsonpath={.spec.nodeName} {.status.conditions[?(@.type==\"PodScheduled\")].status}",
        ])
        .await;
    assert_eq!(bound, "node-1 True");
    let again = tools
        .apply_manifest(
            "kubectl-1.35",
            "b2.yaml",
            &binding.replace("node-1", "node-2"),
        )
        .await;
    assert_eq!(again.code, Some(1));
    assert!(
        again.stderr.contains(
            "Operation cannot be fulfilled on pods/binding \"web\": pod web is already assigned to node \"node-1\""
        ),
        "{again:?}"
    );
    let missing = tools
        .apply_manifest(
            "kubectl-1.35",
            "b3.yaml",
            &binding.replace("name: web", "name: nope"),
        )
        .await;
    assert!(
        missing.stderr.contains("pods \"nope\" not found"),
        "{missing:?}"
    );

    let cs = tools
        .run("kubectl-1.35", &["get", "componentstatuses"])
        .await;
    assert_eq!(cs.code, Some(0), "{cs:?}");
    assert!(
        cs.stderr
            .contains("v1 ComponentStatus is deprecated in v1.19+"),
        "{cs:?}"
    );
    let rows: Vec<Vec<&str>> = cs
        .stdout
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 3, "{}", cs.stdout);
    assert_eq!(rows[0][..2], ["controller-manager", "Unhealthy"]);
    assert_eq!(rows[1], ["etcd-0", "Healthy", "ok"]);
    assert_eq!(rows[2][..2], ["scheduler", "Unhealthy"]);
    assert!(
        cs.stdout.contains("connect: connection refused"),
        "{}",
        cs.stdout
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn new_kinds_are_stored_validated_printed_and_explained() {
    let mut server = ApiServer::start(&[]).await;
    let tools = Tools::new(&server);
    let manifests = r#"apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: gvisor}
handler: runsc
---
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: hostpath.csi.k8s.io}
spec: {}
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata: {name: va1}
spec: {attacher: hostpath.csi.k8s.io, nodeName: node-1, source: {persistentVolumeName: pv1}}
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttributesClass
metadata: {name: gold}
driverName: hostpath.csi.k8s.io
parameters: {iops: "100"}
---
apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: {name: extra}
spec: {cidrs: [10.96.0.0/16]}
---
apiVersion: networking.k8s.io/v1
kind: IPAddress
metadata: {name: 10.96.0.10}
spec: {parentRef: {resource: services, namespace: default, name: web}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec: {}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: gpu-claim}
spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-1-gpus}
spec: {driver: gpu.example.com, nodeName: node-1, pool: {name: node-1, resourceSliceCount: 1}}
---
apiVersion: v1
kind: PodTemplate
metadata: {name: tmpl}
template:
  metadata: {labels: {app: web}}
  spec: {containers: [{name: c, image: nginx}]}
"#;
    let out = tools
        .apply_manifest("kubectl-1.35", "all.yaml", manifests)
        .await;
    assert_eq!(out.code, Some(0), "{out:?}");
    for (resource, row) in [
        ("runtimeclasses", vec!["gvisor", "runsc"]),
        (
            "csidrivers",
            vec![
                "hostpath.csi.k8s.io",
                "true",
                "false",
                "false",
                "<unset>",
                "false",
                "Persistent",
            ],
        ),
        (
            "volumeattachments",
            vec!["va1", "hostpath.csi.k8s.io", "pv1", "node-1", "false"],
        ),
        (
            "volumeattributesclasses",
            vec!["gold", "hostpath.csi.k8s.io"],
        ),
        ("servicecidrs", vec!["extra", "10.96.0.0/16"]),
        ("ipaddresses", vec!["10.96.0.10", "services/default/web"]),
        ("resourceclaims", vec!["gpu-claim", "pending"]),
        (
            "resourceslices",
            vec!["node-1-gpus", "node-1", "gpu.example.com", "node-1"],
        ),
        ("podtemplates", vec!["tmpl", "c", "nginx", "app=web"]),
    ] {
        let table = tools.kubectl(&["get", resource]).await;
        let cells: Vec<&str> = table
            .lines()
            .nth(1)
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        assert_eq!(cells[..row.len()], row[..], "{resource}:\n{table}");
    }
    let defaulted = tools
        .kubectl(&[
            "get",
            "resourceclaim",
            "gpu-claim",
            "-o",
            "jsonpath={.spec.devices.requests[0].exactly.allocationMode} {.spec.devices.requests[0].exactly.count}",
        ])
        .await;
    assert_eq!(defaulted, "ExactCount 1");
    // Immutable and invalid fields are refused as upstream words it.
    let changed = tools
        .run(
            "kubectl-1.35",
            &[
                "patch",
                "runtimeclass",
                "gvisor",
                "--type=merge",
                "-p",
                r#"{"handler":"runc"}"#,
            ],
        )
        .await;
    assert!(
        changed
            .stderr
            .contains("handler: Invalid value: \"runc\": field is immutable"),
        "{changed:?}"
    );
    let bad_ip = tools
        .apply_manifest(
            "kubectl-1.35",
            "ip.yaml",
            "apiVersion: networking.k8s.io/v1\nkind: IPAddress\nmetadata: {name: not-an-ip}\nspec: {parentRef: {resource: services, name: x}}\n",
        )
        .await;
    assert!(
        bad_ip.stderr.contains("must be a valid IP address"),
        "{bad_ip:?}"
    );
    for (what, needle) in [
        ("runtimeclass.handler", "FIELD: handler <string>"),
        ("csr.spec.signerName", "FIELD: signerName <string>"),
        ("resourceclaim.spec.devices", "FIELD: devices <DeviceClaim>"),
        (
            "volumeattachment.spec.source",
            "FIELD: source <VolumeAttachmentSource>",
        ),
        ("servicecidr.spec.cidrs", "FIELD: cidrs <[]string>"),
        ("podtemplate.template", "FIELD: template <PodTemplateSpec>"),
    ] {
        let out = tools.kubectl(&["explain", what]).await;
        assert!(out.contains(needle), "explain {what}:\n{out}");
    }
    server.stop().await;
}
