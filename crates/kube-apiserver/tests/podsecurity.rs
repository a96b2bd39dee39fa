//! The PodSecurity admission plugin through the real binary with kubectl 1.35: enforce, warn
//! and audit levels from namespace labels, workloads warned but never refused, exemptions and
//! defaults from the admission configuration file, the scan of existing pods when a namespace's
//! enforce level tightens, bad label values, and the plugin's metrics.

mod common;

use std::path::PathBuf;

use common::{ApiServer, ToolOutput, eventually, run_tool};

const KUBECTL: &str = "kubectl-1.35";

/// What restricted:latest says about the privileged pod of [`privileged_pod`].
const PRIVILEGED_VIOLATIONS: &str = concat!(
    r#"privileged (container "app" must not set securityContext.privileged=true), "#,
    r#"allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false), "#,
    r#"unrestricted capabilities (container "app" must set securityContext.capabilities.drop=["ALL"]), "#,
    r#"runAsNonRoot != true (pod or container "app" must set securityContext.runAsNonRoot=true), "#,
    r#"seccompProfile (pod or container "app" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")"#
);

struct Cluster {
    server: ApiServer,
    home: tempfile::TempDir,
}

impl Cluster {
    async fn start(args: &[&str]) -> Cluster {
        // Privileged pods pass validation only with --allow-privileged (upstream's default
        // is false); these tests are about what PodSecurity says of them.
        let mut args = args.to_vec();
        args.push("--allow-privileged=true");
        Cluster {
            server: ApiServer::start(&args).await,
            home: tempfile::tempdir().unwrap(),
        }
    }

    /// `kubectl <args>` as the admin.
    async fn kubectl(&self, args: &[&str]) -> ToolOutput {
        let kubeconfig = self.server.kubeconfig().display().to_string();
        let mut all = vec!["--kubeconfig", kubeconfig.as_str()];
        all.extend_from_slice(args);
        run_tool(KUBECTL, self.home.path(), &all).await
    }

    async fn ok(&self, args: &[&str]) -> ToolOutput {
        let out = self.kubectl(args).await;
        assert_eq!(out.code, Some(0), "{args:?}: {out:?}");
        out
    }

    fn manifest(&self, name: &str, yaml: &str) -> String {
        let path: PathBuf = self.home.path().join(format!("{name}.yaml"));
        std::fs::write(&path, yaml).unwrap();
        path.display().to_string()
    }

    /// `kubectl apply -f` of `yaml` (extra args after it), whatever the outcome.
    async fn apply(&self, yaml: &str, extra: &[&str]) -> ToolOutput {
        let path = self.manifest("manifest", yaml);
        let mut args = vec!["apply", "-f", path.as_str()];
        args.extend_from_slice(extra);
        self.kubectl(&args).await
    }

    /// A namespace with `labels` (its `default` service account comes from the server's
    /// service-account controller, as from kube-controller-manager's upstream).
    async fn namespace(&self, name: &str, labels: &[(&str, &str)]) {
        let labels: String = labels
            .iter()
            .map(|(k, v)| format!("\n    {k}: {v}"))
            .collect();
        let yaml = format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n  labels:\n    team: x{labels}\n"
        );
        let out = self.apply(&yaml, &[]).await;
        assert_eq!(out.code, Some(0), "{out:?}");
    }
}

fn privileged_pod(namespace: &str, name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: {namespace}}}\nspec:\n  containers:\n  - name: app\n    image: nginx\n    securityContext: {{privileged: true}}\n"
    )
}

fn restricted_pod(namespace: &str, name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: {namespace}}}\nspec:\n  securityContext:\n    runAsNonRoot: true\n    seccompProfile: {{type: RuntimeDefault}}\n  containers:\n  - name: app\n    image: nginx\n    securityContext:\n      allowPrivilegeEscalation: false\n      capabilities: {{drop: [ALL]}}\n"
    )
}

/// Runs as root with a host port: fine for baseline... except the host port.
fn root_pod(namespace: &str, name: &str, host_port: bool) -> String {
    let ports = if host_port {
        "\n    ports: [{containerPort: 80, hostPort: 8080}]"
    } else {
        ""
    };
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: {namespace}}}\nspec:\n  containers:\n  - name: app\n    image: nginx\n    securityContext: {{runAsUser: 0, capabilities: {{add: [CHOWN]}}}}{ports}\n"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn restricted_namespace_rejects_a_privileged_pod_with_upstreams_message() {
    let c = Cluster::start(&[]).await;
    c.namespace(
        "secure",
        &[("pod-security.kubernetes.io/enforce", "restricted")],
    )
    .await;

    let out = c.apply(&privileged_pod("secure", "priv"), &[]).await;
    assert_eq!(out.code, Some(1), "{out:?}");
    let expected = format!(
        r#"Error from server (Forbidden): error when creating "{}": pods "priv" is forbidden: violates PodSecurity "restricted:latest": {PRIVILEGED_VIOLATIONS}"#,
        c.home.path().join("manifest.yaml").display()
    );
    assert_eq!(out.stderr.trim_end(), expected);
    let out = c.kubectl(&["get", "pod", "priv", "-n", "secure"]).await;
    assert_eq!(out.code, Some(1), "refused pods are not stored: {out:?}");

    // A pod meeting restricted is created, without warnings.
    let out = c.apply(&restricted_pod("secure", "good"), &[]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.stderr, "", "{out:?}");

    // Dry-run is refused the same way.
    let out = c
        .apply(&privileged_pod("secure", "dry"), &["--dry-run=server"])
        .await;
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr
            .contains(r#"pods "dry" is forbidden: violates PodSecurity"#),
        "{out:?}"
    );

    let metrics = c.ok(&["get", "--raw", "/metrics"]).await.stdout;
    for line in [
        r#"pod_security_evaluations_total{decision="deny",mode="enforce",policy_level="restricted",policy_version="latest",request_operation="create",resource="pod",subresource=""}"#,
        r#"pod_security_evaluations_total{decision="allow",mode="enforce",policy_level="restricted",policy_version="latest",request_operation="create",resource="pod",subresource=""}"#,
    ] {
        assert!(metrics.contains(line), "{line} missing from:\n{metrics}");
    }
    // Upstream's pre-created series are listed from the start, at 0.
    assert!(
        metrics.contains(r#"pod_security_exemptions_total{request_operation="update",resource="controller",subresource=""} 0"#),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn baseline_namespace_allows_root_pods_and_rejects_host_ports_and_privileged_debug_containers()
 {
    let c = Cluster::start(&[]).await;
    c.namespace(
        "base",
        &[("pod-security.kubernetes.io/enforce", "baseline")],
    )
    .await;

    // Running as root and adding a default capability is baseline; it warns nothing, as warn
    // follows enforce when it is not set.
    let out = c.apply(&root_pod("base", "root", false), &[]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.stderr, "", "{out:?}");

    let out = c.apply(&root_pod("base", "hostport", true), &[]).await;
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains(r#"pods "hostport" is forbidden: violates PodSecurity "baseline:latest": hostPort (container "app" uses hostPort 8080)"#),
        "{out:?}"
    );
    let out = c.apply(&privileged_pod("base", "priv"), &[]).await;
    assert!(
        out.stderr.contains(r#"pods "priv" is forbidden: violates PodSecurity "baseline:latest": privileged (container "app" must not set securityContext.privileged=true)"#),
        "{out:?}"
    );

    // Ephemeral containers (pods/ephemeralcontainers) are checked too: kubectl debug's
    // sysadmin profile runs privileged, its baseline profile does not.
    let out = c
        .kubectl(&[
            "debug",
            "root",
            "-n",
            "base",
            "--image=busybox",
            "-c",
            "dbg",
            "--profile=sysadmin",
        ])
        .await;
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains(r#"pods "root" is forbidden: violates PodSecurity "baseline:latest": privileged (container "dbg" must not set securityContext.privileged=true)"#),
        "{out:?}"
    );
    c.ok(&[
        "debug",
        "root",
        "-n",
        "base",
        "--image=busybox",
        "-c",
        "dbg2",
        "--profile=baseline",
    ])
    .await;
    let names = c
        .ok(&[
            "get",
            "pod",
            "root",
            "-n",
            "base",
            "-o",
            "jsonpath={.spec.ephemeralContainers[*].name}",
        ])
        .await
        .stdout;
    assert_eq!(names, "dbg2");
}

#[tokio::test(flavor = "multi_thread")]
async fn warn_level_gives_the_warning_kubectl_prints_and_the_pod_is_created() {
    let c = Cluster::start(&[]).await;
    c.namespace(
        "warned",
        &[("pod-security.kubernetes.io/warn", "restricted")],
    )
    .await;

    let out = c.apply(&privileged_pod("warned", "priv"), &[]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(
        out.stderr.trim_end(),
        format!(
            r#"Warning: would violate PodSecurity "restricted:latest": {PRIVILEGED_VIOLATIONS}"#
        )
    );
    assert!(out.stdout.contains("pod/priv created"), "{out:?}");
    // Changing only labels is not evaluated again: no warning.
    let out = c
        .ok(&["label", "pod", "priv", "-n", "warned", "tier=web"])
        .await;
    assert_eq!(out.stderr, "", "{out:?}");
    // Changing the image is.
    let out = c
        .ok(&["set", "image", "pod/priv", "-n", "warned", "app=nginx:1.27"])
        .await;
    assert!(
        out.stderr
            .starts_with(r#"Warning: would violate PodSecurity "restricted:latest": privileged"#),
        "{out:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn deployment_in_an_enforce_restricted_namespace_is_created_with_a_warning() {
    let c = Cluster::start(&[]).await;
    c.namespace(
        "secure",
        &[("pod-security.kubernetes.io/enforce", "restricted")],
    )
    .await;
    let deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: secure}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - name: app\n        image: nginx\n        securityContext: {privileged: true}\n";
    let out = c.apply(deployment, &[]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(
        out.stderr.trim_end(),
        format!(
            r#"Warning: would violate PodSecurity "restricted:latest": {PRIVILEGED_VIOLATIONS}"#
        )
    );
    c.ok(&["get", "deployment", "web", "-n", "secure"]).await;
    // Scaling is a subresource: not evaluated, no warning.
    let out = c
        .ok(&["scale", "deployment", "web", "-n", "secure", "--replicas=2"])
        .await;
    assert_eq!(out.stderr, "", "{out:?}");
    let cronjob = "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly, namespace: secure}\nspec:\n  schedule: '0 0 * * *'\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: Never\n          hostNetwork: true\n          containers:\n          - name: app\n            image: busybox\n            securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}, runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}\n";
    let out = c.apply(cronjob, &[]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(
        out.stderr.trim_end(),
        r#"Warning: would violate PodSecurity "restricted:latest": host namespaces (hostNetwork=true)"#
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn exemptions_and_defaults_come_from_the_admission_config_file() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("admission.yaml");
    std::fs::write(
        &config,
        r#"apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults:
      enforce: baseline
      audit: restricted
      audit-version: v1.30
    exemptions:
      usernames: [ci-bot]
      namespaces: [exempt]
      runtimeClasses: [kata]
"#,
    )
    .unwrap();
    let policy = tmp.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n",
    )
    .unwrap();
    let log = tmp.path().join("audit.log");
    let mut c = Cluster::start(&[
        &format!("--admission-control-config-file={}", config.display()),
        &format!("--audit-policy-file={}", policy.display()),
        &format!("--audit-log-path={}", log.display()),
    ])
    .await;
    c.namespace("plain", &[]).await;
    c.namespace("exempt", &[]).await;

    // The default enforce level applies to a namespace without labels.
    let out = c.apply(&privileged_pod("plain", "priv"), &[]).await;
    assert!(
        out.stderr.contains(
            r#"pods "priv" is forbidden: violates PodSecurity "baseline:latest": privileged"#
        ),
        "{out:?}"
    );
    // Exempt namespace, user and runtime class.
    let out = c.apply(&privileged_pod("exempt", "priv"), &[]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    let out = c
        .apply(&privileged_pod("plain", "by-bot"), &["--as=ci-bot"])
        .await;
    assert_eq!(out.code, Some(0), "{out:?}");
    // The RuntimeClass plugin wants the class to exist.
    let class = c
        .apply(
            "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: kata}\nhandler: kata\n",
            &[],
        )
        .await;
    assert_eq!(class.code, Some(0), "{class:?}");
    let kata =
        privileged_pod("plain", "kata").replace("spec:\n", "spec:\n  runtimeClassName: kata\n");
    let out = c.apply(&kata, &[]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    // Audited at restricted:v1.30 by default, without a warning.
    let out = c.apply(&root_pod("plain", "root", false), &[]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.stderr, "", "{out:?}");
    let metrics = c.ok(&["get", "--raw", "/metrics"]).await.stdout;
    assert!(
        metrics.contains(r#"pod_security_exemptions_total{request_operation="create",resource="pod",subresource=""} 3"#),
        "{metrics}"
    );
    c.server.stop().await;

    // The pod creates, in order (a create's objectRef carries no name here: matched by order).
    let text = std::fs::read_to_string(&log).unwrap();
    let creates: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| {
            e["verb"] == "create"
                && e["stage"] == "ResponseComplete"
                && e["objectRef"]["resource"] == "pods"
        })
        .collect();
    assert_eq!(creates.len(), 5, "{text}");
    let annotation = |i: usize, key: &str| {
        creates[i]["annotations"][format!("pod-security.kubernetes.io/{key}")]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(creates[0]["responseStatus"]["code"], 403);
    assert_eq!(annotation(0, "enforce-policy"), "baseline:latest");
    assert_eq!(
        annotation(0, "audit-violations"),
        format!(r#"would violate PodSecurity "restricted:v1.30": {PRIVILEGED_VIOLATIONS}"#)
    );
    assert_eq!(annotation(1, "exempt"), "namespace");
    assert_eq!(annotation(2, "exempt"), "user");
    assert_eq!(annotation(3, "exempt"), "runtimeClass");
    assert_eq!(annotation(4, "enforce-policy"), "baseline:latest");
    let violations = annotation(4, "audit-violations");
    assert!(
        violations.starts_with(
            r#"would violate PodSecurity "restricted:v1.30": allowPrivilegeEscalation != false"#
        ) && violations.contains(r#"runAsUser=0 (container "app" must not set runAsUser=0)"#),
        "{violations}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn labelling_a_namespace_with_violating_pods_warns_about_them() {
    let c = Cluster::start(&[]).await;
    c.namespace("legacy", &[]).await;
    for name in ["priv-b", "priv-a"] {
        let out = c.apply(&privileged_pod("legacy", name), &[]).await;
        assert_eq!(out.code, Some(0), "{out:?}");
    }
    let out = c.apply(&root_pod("legacy", "hostport", true), &[]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    let out = c.apply(&restricted_pod("legacy", "good"), &[]).await;
    assert_eq!(out.code, Some(0), "{out:?}");

    let expected = [
        r#"Warning: existing pods in namespace "legacy" violate the new PodSecurity enforce level "baseline:latest""#,
        "Warning: hostport: hostPort",
        "Warning: priv-a (and 1 other pod): privileged",
    ];
    // The plugin reads pods from its informer, a moment behind the writes: label until it has
    // seen all three (removing the label between tries, so each try tightens enforce again).
    eventually("the label's warnings name the three pods", || async {
        let out = c
            .ok(&[
                "label",
                "ns",
                "legacy",
                "pod-security.kubernetes.io/enforce=baseline",
            ])
            .await;
        let warnings: Vec<&str> = out.stderr.lines().collect();
        if warnings == expected {
            return Some(());
        }
        c.ok(&[
            "label",
            "ns",
            "legacy",
            "pod-security.kubernetes.io/enforce-",
        ])
        .await;
        None
    })
    .await;
    // The pods stay; new violating pods are now refused.
    c.ok(&["get", "pod", "priv-a", "-n", "legacy"]).await;
    let out = c.apply(&privileged_pod("legacy", "priv-c"), &[]).await;
    assert_eq!(out.code, Some(1), "{out:?}");

    // Relaxing at the same version scans nothing.
    let out = c
        .ok(&[
            "label",
            "--overwrite",
            "ns",
            "legacy",
            "pod-security.kubernetes.io/enforce=privileged",
        ])
        .await;
    assert_eq!(out.stderr, "", "{out:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_pod_security_label_values_are_rejected_with_upstreams_error() {
    let c = Cluster::start(&[]).await;
    c.namespace("team", &[]).await;
    let out = c
        .kubectl(&[
            "label",
            "ns",
            "team",
            "pod-security.kubernetes.io/enforce=strict",
        ])
        .await;
    assert_eq!(out.code, Some(1), "{out:?}");
    assert_eq!(
        out.stderr.trim_end(),
        r#"The Namespace "team" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted"#
    );
    let out = c
        .kubectl(&[
            "label",
            "ns",
            "team",
            "pod-security.kubernetes.io/warn-version=1.30",
        ])
        .await;
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains(r#"metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: "1.30": must be "latest" or "v1.x""#),
        "{out:?}"
    );
    // Creating a namespace with a bad value is refused too.
    let out = c
        .apply(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: broken\n  labels: {pod-security.kubernetes.io/audit: everything}\n",
            &[],
        )
        .await;
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains(r#"The Namespace "broken" is invalid: metadata.labels[pod-security.kubernetes.io/audit]: Invalid value: "everything": must be one of privileged, baseline, restricted"#),
        "{out:?}"
    );
    // A valid version label is accepted.
    c.ok(&[
        "label",
        "ns",
        "team",
        "pod-security.kubernetes.io/enforce-version=v1.30",
    ])
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_pod_security_configuration_is_a_one_line_start_up_error() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("admission.yaml");
    std::fs::write(
        &config,
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodSecurity\n  configuration:\n    apiVersion: pod-security.admission.config.k8s.io/v1\n    kind: PodSecurityConfiguration\n    defaults: {enforce: strict}\n",
    )
    .unwrap();
    let out = common::run_to_exit(&[&format!(
        "--admission-control-config-file={}",
        config.display()
    )])
    .await;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("Error")).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].contains(r#"defaults.enforce: Invalid value: "strict": must be one of privileged, baseline, restricted"#),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_1_20_sees_the_same_refusal_and_warning() {
    let c = Cluster::start(&[]).await;
    c.namespace(
        "mixed",
        &[
            ("pod-security.kubernetes.io/enforce", "baseline"),
            ("pod-security.kubernetes.io/warn", "restricted"),
        ],
    )
    .await;
    let kubeconfig = c.server.kubeconfig().display().to_string();
    let old = |args: Vec<String>| {
        let kubeconfig = kubeconfig.clone();
        let home = c.home.path().to_path_buf();
        async move {
            let mut all = vec!["--kubeconfig".to_string(), kubeconfig];
            all.extend(args);
            let all: Vec<&str> = all.iter().map(String::as_str).collect();
            run_tool("kubectl-1.20", &home, &all).await
        }
    };
    let priv_path = c.manifest("priv", &privileged_pod("mixed", "priv"));
    let out = old(vec!["create".into(), "-f".into(), priv_path]).await;
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains(r#"pods "priv" is forbidden: violates PodSecurity "baseline:latest": privileged (container "app" must not set securityContext.privileged=true)"#),
        "{out:?}"
    );
    let root_path = c.manifest("root", &root_pod("mixed", "root", false));
    let out = old(vec!["create".into(), "-f".into(), root_path]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stderr.starts_with(r#"Warning: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false"#),
        "{out:?}"
    );
}
