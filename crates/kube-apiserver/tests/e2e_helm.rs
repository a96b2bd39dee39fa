//! helm 4 against the real binary over TLS with the generated admin kubeconfig: the whole
//! release lifecycle of a chart made with `helm create`. Helm keeps its release records in
//! Secrets it writes with protobuf bodies, so every step also proves those are accepted.

mod common;

use common::{ApiServer, ToolOutput, run_tool};

/// Runs a tool with the server's admin kubeconfig and an isolated HOME.
struct Tools<'a> {
    server: &'a ApiServer,
    home: tempfile::TempDir,
}

impl Tools<'_> {
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

    async fn helm(&self, args: &[&str]) -> String {
        self.ok("helm", args).await
    }

    async fn kubectl(&self, args: &[&str]) -> String {
        self.ok("kubectl-1.35", args).await
    }

    /// The names of helm's release Secrets for `demo`, sorted.
    async fn release_secrets(&self) -> Vec<String> {
        let out = self
            .kubectl(&[
                "get",
                "secrets",
                "-n",
                "default",
                "-l",
                "owner=helm,name=demo",
                "-o",
                "jsonpath={range .items[*]}{.metadata.name} {.type} {.metadata.labels.status}{\"\\n\"}{end}",
            ])
            .await;
        let mut lines: Vec<String> = out.lines().map(str::to_string).collect();
        lines.sort();
        lines
    }

    async fn deployment_replicas(&self) -> String {
        self.kubectl(&[
            "get",
            "deployment",
            "demo",
            "-n",
            "default",
            "-o",
            "jsonpath={.spec.replicas}",
        ])
        .await
    }
}

/// The `helm list` row of `demo` split into its tab-separated columns.
fn list_row(list: &str) -> Vec<String> {
    list.lines()
        .find(|l| l.starts_with("demo"))
        .unwrap_or_else(|| panic!("no demo release:\n{list}"))
        .split('\t')
        .map(|c| c.trim().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn helm_installs_lists_upgrades_rolls_back_shows_status_and_uninstalls_a_helm_create_chart() {
    let mut server = ApiServer::start(&[]).await;
    let tools = Tools {
        server: &server,
        home: tempfile::tempdir().unwrap(),
    };
    let chart = tools.home.path().join("demo").display().to_string();
    let out = run_tool("helm", tools.home.path(), &["create", &chart]).await;
    assert_eq!(out.code, Some(0), "helm create: {out:?}");

    // install (no --wait: there is no kubelet to make the pods ready).
    let install = tools.helm(&["install", "demo", &chart]).await;
    for needle in [
        "NAME: demo",
        "NAMESPACE: default",
        "STATUS: deployed",
        "REVISION: 1",
    ] {
        assert!(install.contains(needle), "{needle:?} missing:\n{install}");
    }
    assert_eq!(
        tools.release_secrets().await,
        ["sh.helm.release.v1.demo.v1 helm.sh/release.v1 deployed"]
    );
    assert_eq!(tools.deployment_replicas().await, "1");
    let services = tools
        .kubectl(&["get", "service", "demo", "-n", "default", "-o", "name"])
        .await;
    assert_eq!(services.trim(), "service/demo");

    // list.
    let row = list_row(&tools.helm(&["list"]).await);
    assert_eq!(row[0], "demo");
    assert_eq!(row[1], "default");
    assert_eq!(row[2], "1");
    assert_eq!(row[4], "deployed");
    assert_eq!(row[5], "demo-0.1.0");

    // upgrade changes the Deployment and records revision 2.
    let upgrade = tools
        .helm(&["upgrade", "demo", &chart, "--set", "replicaCount=2"])
        .await;
    assert!(
        upgrade.contains("Release \"demo\" has been upgraded."),
        "{upgrade}"
    );
    assert!(upgrade.contains("REVISION: 2"), "{upgrade}");
    assert_eq!(tools.deployment_replicas().await, "2");
    assert_eq!(
        tools.release_secrets().await,
        [
            "sh.helm.release.v1.demo.v1 helm.sh/release.v1 superseded",
            "sh.helm.release.v1.demo.v2 helm.sh/release.v1 deployed",
        ]
    );

    // rollback to 1 is revision 3 with revision 1's values.
    let rollback = tools.helm(&["rollback", "demo", "1"]).await;
    assert!(rollback.contains("Rollback was a success!"), "{rollback}");
    assert_eq!(tools.deployment_replicas().await, "1");
    let row = list_row(&tools.helm(&["list"]).await);
    assert_eq!(row[2], "3");
    assert_eq!(row[4], "deployed");

    // status.
    let status = tools.helm(&["status", "demo"]).await;
    for needle in [
        "NAME: demo",
        "STATUS: deployed",
        "REVISION: 3",
        "DESCRIPTION: Rollback to 1",
    ] {
        assert!(status.contains(needle), "{needle:?} missing:\n{status}");
    }

    // uninstall removes the release records and the chart's objects.
    let uninstall = tools.helm(&["uninstall", "demo"]).await;
    assert_eq!(uninstall.trim(), "release \"demo\" uninstalled");
    assert!(tools.release_secrets().await.is_empty());
    let list = tools.helm(&["list"]).await;
    assert!(!list.lines().any(|l| l.starts_with("demo")), "{list}");
    let gone = tools
        .run(
            "kubectl-1.35",
            &["get", "deployment", "demo", "-n", "default"],
        )
        .await;
    assert_eq!(gone.code, Some(1), "{gone:?}");
    assert!(gone.stderr.contains("NotFound"), "{gone:?}");

    drop(tools);
    server.stop().await;
}
