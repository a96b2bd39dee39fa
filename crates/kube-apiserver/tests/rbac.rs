//! RBAC through the real binary with real kubectl (1.35 and 1.20): a user from
//! `--token-auth-file`, a service-account identity (impersonated by the admin) and a real
//! service-account token denied with upstream's 403 text and then allowed by bindings (RoleBinding, ClusterRoleBinding,
//! resourceNames, subresources, non-resource URLs), `kubectl auth can-i` (yes/no, `--as`,
//! `--list`, `-n`), escalation refused with upstream's message and then allowed by `escalate`
//! and `bind`, the access reviews, and every decision again after a restart.

mod common;

use std::path::{Path, PathBuf};

use common::client::Proto;
use common::{ApiServer, ToolOutput, eventually, run_tool};

const NEW: &str = "kubectl-1.35";
const OLD: &str = "kubectl-1.20";

/// Who runs kubectl: the admin (client certificate, `system:masters`), the admin impersonating
/// someone, or a token from the token file.
#[derive(Clone, Copy)]
enum As<'a> {
    Admin,
    Impersonating(&'a str),
    Token(&'a str),
}

struct Cluster {
    server: ApiServer,
    home: tempfile::TempDir,
    args: Vec<String>,
}

const TOKENS: &str = "alice-token,alice,1001,\"developers\"\n";

fn token_file(dir: &Path) -> PathBuf {
    let tokens = dir.join("tokens.csv");
    std::fs::write(&tokens, TOKENS).unwrap();
    tokens
}

impl Cluster {
    async fn start(data: &Path, tokens: &Path) -> Cluster {
        let args = vec![
            format!("--token-auth-file={}", tokens.display()),
            "--authorization-mode=RBAC".to_string(),
        ];
        let server = ApiServer::builder()
            .data_dir(data)
            .args(args.iter().map(String::as_str))
            .start()
            .await;
        Cluster {
            server,
            home: tempfile::tempdir().unwrap(),
            args,
        }
    }

    async fn restart(&mut self) {
        self.server.stop().await;
        let data = self.server.data_dir.clone();
        self.server = ApiServer::builder()
            .data_dir(&data)
            .args(self.args.iter().map(String::as_str))
            .start()
            .await;
    }

    async fn kubectl_with(&self, tool: &str, who: As<'_>, args: &[&str]) -> ToolOutput {
        let kubeconfig = self.server.kubeconfig().display().to_string();
        let server = format!("--server=https://127.0.0.1:{}", self.server.addr.port());
        let ca = format!(
            "--certificate-authority={}",
            self.server.pki().join("ca.crt").display()
        );
        let mut all: Vec<String> = match who {
            As::Admin => vec!["--kubeconfig".into(), kubeconfig],
            As::Impersonating(user) => {
                vec!["--kubeconfig".into(), kubeconfig, format!("--as={user}")]
            }
            As::Token(token) => vec![server, ca, format!("--token={token}")],
        };
        all.extend(args.iter().map(|a| a.to_string()));
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        run_tool(tool, self.home.path(), &all).await
    }

    async fn kubectl(&self, who: As<'_>, args: &[&str]) -> ToolOutput {
        self.kubectl_with(NEW, who, args).await
    }

    async fn ok(&self, who: As<'_>, args: &[&str]) -> String {
        let out = self.kubectl(who, args).await;
        assert_eq!(out.code, Some(0), "{args:?}: {out:?}");
        out.stdout
    }

    /// Applies a manifest as the admin.
    async fn apply(&self, manifest: &str) {
        let path = self.home.path().join("manifest.yaml");
        std::fs::write(&path, manifest).unwrap();
        let path = path.display().to_string();
        self.ok(As::Admin, &["apply", "-f", &path]).await;
    }

    /// Waits until `args` succeeds for `who` (bindings reach the authorizer through its
    /// informers, a moment after the write).
    async fn eventually_ok(&self, who: As<'_>, args: &[&str]) -> String {
        eventually(&format!("{args:?} allowed"), || async {
            let out = self.kubectl(who, args).await;
            (out.code == Some(0)).then_some(out.stdout)
        })
        .await
    }

    /// Asserts that `args` fails for `who` with `message` in its error output.
    async fn denied(&self, who: As<'_>, args: &[&str], message: &str) {
        let out = self.kubectl(who, args).await;
        assert_ne!(out.code, Some(0), "{args:?}: {out:?}");
        assert!(
            out.stderr.contains(message),
            "{args:?}: want {message:?}\n{out:?}"
        );
    }

    /// `kubectl auth can-i` as `who`: its answer (`yes` or `no`).
    async fn can_i(&self, tool: &str, who: As<'_>, args: &[&str]) -> String {
        let mut all = vec!["auth", "can-i"];
        all.extend_from_slice(args);
        let out = self.kubectl_with(tool, who, &all).await;
        // `no` may carry the authorizer's reason: `no - RBAC: …`.
        let answer = out
            .stdout
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string();
        match answer.as_str() {
            "yes" => assert_eq!(out.code, Some(0), "{out:?}"),
            "no" => assert_eq!(out.code, Some(1), "{out:?}"),
            _ => panic!("can-i {args:?}: {out:?}"),
        }
        answer
    }
}

/// What the bootstrap policy grants every authenticated user (discovery and the self
/// reviews), written here so that this file depends on nothing but RBAC itself.
const BASICS: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: test-basics}
rules:
- {nonResourceURLs: [/api, "/api/*", /apis, "/apis/*", /openapi, "/openapi/*", /version], verbs: [get]}
- {apiGroups: [authorization.k8s.io], resources: [selfsubjectaccessreviews, selfsubjectrulesreviews], verbs: [create]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: test-basics}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: test-basics}
subjects:
- {kind: Group, name: system:authenticated}
"#;

const ALICE: As = As::Token("alice-token");
const BOT: As = As::Impersonating("system:serviceaccount:team:bot");

const POLICY: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: pod-reader, namespace: team}
rules:
- {apiGroups: [""], resources: [pods], verbs: [get, list, watch]}
- {apiGroups: [""], resources: [configmaps], resourceNames: [allowed], verbs: [get]}
- {apiGroups: [apps], resources: [deployments/scale], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: read-pods, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pod-reader}
subjects:
- {kind: User, name: alice}
- {kind: ServiceAccount, name: bot}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: node-and-health-reader}
rules:
- {apiGroups: [""], resources: [nodes], verbs: [list]}
- {nonResourceURLs: [/healthz, "/readyz*"], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: developers-read-nodes}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: node-and-health-reader}
subjects:
- {kind: Group, name: developers}
"#;

/// Every decision the policy above makes, checked before and after a restart.
async fn policy_decisions_hold(c: &Cluster) {
    c.eventually_ok(ALICE, &["get", "pods", "-n", "team"]).await;
    c.ok(BOT, &["get", "pods", "-n", "team"]).await;
    c.denied(
        ALICE,
        &["delete", "pod", "p", "-n", "team"],
        r#"Error from server (Forbidden): pods "p" is forbidden: User "alice" cannot delete resource "pods" in API group "" in the namespace "team""#,
    )
    .await;
    c.denied(
        ALICE,
        &["get", "pods", "-n", "default"],
        r#"pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default""#,
    )
    .await;
    // ClusterRoleBinding to a group.
    c.ok(ALICE, &["get", "nodes"]).await;
    c.denied(
        BOT,
        &["get", "nodes"],
        r#"nodes is forbidden: User "system:serviceaccount:team:bot" cannot list resource "nodes" in API group "" at the cluster scope"#,
    )
    .await;
    // resourceNames: only the named object, never a list.
    c.ok(ALICE, &["get", "configmap", "allowed", "-n", "team"])
        .await;
    c.denied(
        ALICE,
        &["get", "configmap", "other", "-n", "team"],
        r#"configmaps "other" is forbidden: User "alice" cannot get resource "configmaps" in API group "" in the namespace "team""#,
    )
    .await;
    c.denied(
        ALICE,
        &["get", "configmaps", "-n", "team"],
        r#"configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "team""#,
    )
    .await;
    // A subresource rule allows the subresource only.
    c.ok(
        ALICE,
        &[
            "get",
            "--raw",
            "/apis/apps/v1/namespaces/team/deployments/web/scale",
        ],
    )
    .await;
    c.denied(
        ALICE,
        &["get", "deployment", "web", "-n", "team"],
        r#"deployments.apps "web" is forbidden: User "alice" cannot get resource "deployments" in API group "apps" in the namespace "team""#,
    )
    .await;
    // Non-resource URLs, exact and by prefix.
    assert_eq!(c.ok(ALICE, &["get", "--raw", "/healthz"]).await, "ok");
    assert_eq!(c.ok(ALICE, &["get", "--raw", "/readyz/ping"]).await, "ok");
    c.denied(
        ALICE,
        &["get", "--raw", "/metrics"],
        r#"Error from server (Forbidden): forbidden: User "alice" cannot get path "/metrics""#,
    )
    .await;
    // kubectl auth can-i, both kubectl versions.
    for tool in [NEW, OLD] {
        assert_eq!(
            c.can_i(tool, ALICE, &["list", "pods", "-n", "team"]).await,
            "yes"
        );
        assert_eq!(
            c.can_i(tool, ALICE, &["delete", "pods", "-n", "team"])
                .await,
            "no"
        );
        assert_eq!(c.can_i(tool, ALICE, &["list", "pods"]).await, "no");
        assert_eq!(
            c.can_i(
                tool,
                As::Admin,
                &[
                    "get",
                    "pods",
                    "-n",
                    "team",
                    "--as=system:serviceaccount:team:bot"
                ]
            )
            .await,
            "yes"
        );
        assert_eq!(
            c.can_i(
                tool,
                As::Admin,
                &["list", "nodes", "--as=system:serviceaccount:team:bot"]
            )
            .await,
            "no"
        );
        assert_eq!(c.can_i(tool, ALICE, &["get", "/healthz"]).await, "yes");
        assert_eq!(c.can_i(tool, ALICE, &["get", "/metrics"]).await, "no");
        assert_eq!(
            c.can_i(tool, ALICE, &["get", "configmaps/allowed", "-n", "team"])
                .await,
            "yes"
        );
        assert_eq!(c.can_i(tool, As::Admin, &["delete", "nodes"]).await, "yes");
    }
    for tool in [NEW, OLD] {
        let out = c
            .kubectl_with(tool, ALICE, &["auth", "can-i", "--list", "-n", "team"])
            .await;
        assert_eq!(out.code, Some(0), "{tool}: {out:?}");
        let list = out.stdout;
        let rows: Vec<Vec<&str>> = list
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        for row in [
            vec!["pods", "[]", "[]", "[get", "list", "watch]"],
            vec!["configmaps", "[]", "[allowed]", "[get]"],
            vec!["deployments.apps/scale", "[]", "[]", "[get]"],
            vec!["[/healthz]", "[]", "[get]"],
            vec!["nodes", "[]", "[]", "[list]"],
        ] {
            assert!(rows.contains(&row), "{tool}: {row:?} in\n{list}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn token_user_and_service_account_are_denied_then_allowed_and_decisions_survive_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let tokens = token_file(tmp.path());
    let mut c = Cluster::start(&tmp.path().join("data"), &tokens).await;
    // Discovery first: kubectl needs it to resolve `pods`.
    c.apply(BASICS).await;
    c.eventually_ok(ALICE, &["api-resources"]).await;

    // Before any policy on pods: upstream's 403 texts, with no reason after them.
    c.denied(
        ALICE,
        &["get", "pods", "-n", "team"],
        "Error from server (Forbidden): pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" in the namespace \"team\"\n",
    )
    .await;
    c.denied(
        BOT,
        &["get", "pods", "-n", "team"],
        r#"pods is forbidden: User "system:serviceaccount:team:bot" cannot list resource "pods" in API group "" in the namespace "team""#,
    )
    .await;
    assert_eq!(
        c.can_i(NEW, ALICE, &["list", "pods", "-n", "team"]).await,
        "no"
    );

    c.apply(POLICY).await;
    c.ok(
        As::Admin,
        &["create", "deployment", "web", "--image=nginx", "-n", "team"],
    )
    .await;
    c.ok(As::Admin, &["create", "configmap", "allowed", "-n", "team"])
        .await;
    c.ok(As::Admin, &["create", "configmap", "other", "-n", "team"])
        .await;
    policy_decisions_hold(&c).await;

    // A binding to a role that does not exist is the reason of the denial.
    c.ok(
        As::Admin,
        &[
            "create",
            "rolebinding",
            "dangling",
            "--role=missing",
            "--user=alice",
            "-n",
            "team",
        ],
    )
    .await;
    c.denied(
        ALICE,
        &["get", "secrets", "-n", "team"],
        r#"secrets is forbidden: User "alice" cannot list resource "secrets" in API group "" in the namespace "team": RBAC: role.rbac.authorization.k8s.io "missing" not found"#,
    )
    .await;

    let out = c
        .kubectl(ALICE, &["auth", "can-i", "get", "secrets", "-n", "team"])
        .await;
    assert_eq!(
        out.stdout, "no - RBAC: role.rbac.authorization.k8s.io \"missing\" not found\n",
        "{out:?}"
    );

    // Revoking works too.
    c.ok(
        As::Admin,
        &["delete", "clusterrolebinding", "developers-read-nodes"],
    )
    .await;
    eventually("node listing revoked", || async {
        let out = c.kubectl(ALICE, &["get", "nodes"]).await;
        (out.code != Some(0)).then_some(())
    })
    .await;
    c.ok(
        As::Admin,
        &[
            "create",
            "clusterrolebinding",
            "developers-read-nodes",
            "--clusterrole=node-and-health-reader",
            "--group=developers",
        ],
    )
    .await;
    c.eventually_ok(ALICE, &["get", "nodes"]).await;

    c.restart().await;
    policy_decisions_hold(&c).await;
    c.server.stop().await;
}

const RBAC_MANAGER: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: rbac-manager, namespace: team}
rules:
- {apiGroups: [rbac.authorization.k8s.io], resources: [roles, rolebindings], verbs: [create, get, update, patch]}
- {apiGroups: [""], resources: [configmaps], verbs: [get, list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-manages-rbac, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: rbac-manager}
subjects:
- {kind: User, name: alice}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: secret-admin}
rules:
- {apiGroups: [""], resources: [secrets], verbs: [get, list, delete]}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn escalation_is_refused_with_upstreams_message_until_escalate_or_bind_is_granted() {
    let tmp = tempfile::tempdir().unwrap();
    let tokens = token_file(tmp.path());
    let c = Cluster::start(&tmp.path().join("data"), &tokens).await;
    c.apply(BASICS).await;
    c.apply(RBAC_MANAGER).await;
    c.eventually_ok(ALICE, &["get", "roles", "rbac-manager", "-n", "team"])
        .await;

    // A role with rules alice holds is fine; one with more is refused.
    c.ok(
        ALICE,
        &[
            "create",
            "role",
            "cm-reader",
            "--verb=get",
            "--resource=configmaps",
            "-n",
            "team",
        ],
    )
    .await;
    let refused = "roles.rbac.authorization.k8s.io \"secret-reader\" is forbidden: user \"alice\" (groups=[\"developers\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\"]}";
    c.denied(
        ALICE,
        &[
            "create",
            "role",
            "secret-reader",
            "--verb=get,list",
            "--resource=secrets",
            "-n",
            "team",
        ],
        refused,
    )
    .await;
    // Updating a role to more than alice holds is refused the same way.
    c.denied(
        ALICE,
        &[
            "patch",
            "role",
            "cm-reader",
            "-n",
            "team",
            "--type=json",
            "-p",
            r#"[{"op":"add","path":"/rules/-","value":{"apiGroups":[""],"resources":["secrets"],"verbs":["delete"]}}]"#,
        ],
        "roles.rbac.authorization.k8s.io \"cm-reader\" is forbidden: user \"alice\" (groups=[\"developers\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"delete\"]}",
    )
    .await;
    // Binding a role alice does not hold is refused; one she holds is fine.
    c.denied(
        ALICE,
        &["create", "rolebinding", "bob-secrets", "--clusterrole=secret-admin", "--user=bob", "-n", "team"],
        "rolebindings.rbac.authorization.k8s.io \"bob-secrets\" is forbidden: user \"alice\" (groups=[\"developers\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\" \"delete\"]}",
    )
    .await;
    c.ok(
        ALICE,
        &[
            "create",
            "rolebinding",
            "bob-cm",
            "--role=cm-reader",
            "--user=bob",
            "-n",
            "team",
        ],
    )
    .await;
    // A binding to a role that does not exist is its 404.
    c.denied(
        ALICE,
        &[
            "create",
            "rolebinding",
            "ghost",
            "--role=ghost",
            "--user=bob",
            "-n",
            "team",
        ],
        r#"roles.rbac.authorization.k8s.io "ghost" not found"#,
    )
    .await;

    // `escalate` on roles lets alice write any rules; `bind` on one cluster role lets her bind it.
    c.apply(
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: escalator, namespace: team}
rules:
- {apiGroups: [rbac.authorization.k8s.io], resources: [roles], verbs: [escalate]}
- {apiGroups: [rbac.authorization.k8s.io], resources: [clusterroles], resourceNames: [secret-admin], verbs: [bind]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-escalates, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: escalator}
subjects:
- {kind: User, name: alice}
"#,
    )
    .await;
    c.eventually_ok(
        ALICE,
        &[
            "create",
            "role",
            "secret-reader",
            "--verb=get,list",
            "--resource=secrets",
            "-n",
            "team",
        ],
    )
    .await;
    c.ok(
        ALICE,
        &[
            "create",
            "rolebinding",
            "bob-secrets",
            "--clusterrole=secret-admin",
            "--user=bob",
            "-n",
            "team",
        ],
    )
    .await;
    // `bind` is for the named role only.
    c.ok(
        As::Admin,
        &[
            "create",
            "clusterrole",
            "pod-killer",
            "--verb=delete",
            "--resource=pods",
        ],
    )
    .await;
    c.denied(
        ALICE,
        &[
            "create",
            "rolebinding",
            "bob-kills",
            "--clusterrole=pod-killer",
            "--user=bob",
            "-n",
            "team",
        ],
        r#"rolebindings.rbac.authorization.k8s.io "bob-kills" is forbidden: user "alice""#,
    )
    .await;
    // An aggregation rule can gather anything: it needs `*` on everything.
    c.apply(
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: clusterrole-creator}
rules:
- {apiGroups: [rbac.authorization.k8s.io], resources: [clusterroles], verbs: [create]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: alice-creates-clusterroles}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: clusterrole-creator}
subjects:
- {kind: User, name: alice}
"#,
    )
    .await;
    let aggregated = c.home.path().join("aggregated.yaml");
    std::fs::write(
        &aggregated,
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: gatherer}\naggregationRule:\n  clusterRoleSelectors:\n  - matchLabels: {gather: \"true\"}\nrules: []\n",
    )
    .unwrap();
    let aggregated = aggregated.display().to_string();
    eventually("the aggregation rule refused", || async {
        let out = c.kubectl(ALICE, &["create", "-f", &aggregated]).await;
        out.stderr
            .contains(r#"clusterroles.rbac.authorization.k8s.io "gatherer" is forbidden: must have cluster-admin privileges to use the aggregationRule"#)
            .then_some(())
    })
    .await;

    // The admin (system:masters) is never checked.
    c.ok(
        As::Admin,
        &[
            "create",
            "rolebinding",
            "bob-kills",
            "--clusterrole=pod-killer",
            "--user=bob",
            "-n",
            "team",
        ],
    )
    .await;
    // roleRef cannot change.
    let out = c
        .kubectl(
            As::Admin,
            &[
                "patch",
                "rolebinding",
                "bob-kills",
                "-n",
                "team",
                "--type=merge",
                "-p",
                r#"{"roleRef":{"name":"secret-admin"}}"#,
            ],
        )
        .await;
    assert!(out.stderr.contains("cannot change roleRef"), "{out:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn access_reviews_answer_for_other_users_and_check_their_input() {
    let tmp = tempfile::tempdir().unwrap();
    let tokens = token_file(tmp.path());
    let c = Cluster::start(&tmp.path().join("data"), &tokens).await;
    c.apply(BASICS).await;
    c.apply(POLICY).await;
    let review = |manifest: &str| {
        let path = c.home.path().join("review.json");
        std::fs::write(&path, manifest).unwrap();
        path.display().to_string()
    };
    let sar = review(
        r#"{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview",
            "spec":{"user":"alice","groups":["developers"],
                    "resourceAttributes":{"namespace":"team","verb":"list","resource":"pods"}}}"#,
    );
    let out = eventually("SubjectAccessReview allowed", || async {
        let out = c.ok(As::Admin, &["create", "-f", &sar, "-o", "json"]).await;
        out.contains("\"allowed\": true").then_some(out)
    })
    .await;
    assert!(
        out.contains(r#""reason": "RBAC: allowed by RoleBinding \"read-pods/team\" of Role \"pod-reader\" to User \"alice\"""#),
        "{out}"
    );
    let sar = review(
        r#"{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview",
            "spec":{"user":"alice","nonResourceAttributes":{"verb":"get","path":"/metrics"}}}"#,
    );
    let out = c.ok(As::Admin, &["create", "-f", &sar, "-o", "json"]).await;
    assert!(out.contains("\"allowed\": false"), "{out}");

    // Bad reviews get upstream's 422 texts.
    let admin = c.server.admin_client();
    let post = |path: &'static str, body: &'static str| {
        let admin = admin.clone();
        async move {
            let mut req = admin.request(http::Method::POST, path, body);
            req.headers_mut()
                .insert("content-type", "application/json".parse().unwrap());
            admin.send(Proto::H1, req).await.unwrap()
        }
    };
    let reply = post(
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        r#"{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{}}"#,
    )
    .await;
    assert_eq!(reply.status, 422, "{reply:?}");
    assert!(
        reply.body.contains(r#""message":".authorization.k8s.io \"\" is invalid: [spec: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified, spec.user: Invalid value: \"\": at least one of user or group must be specified]""#),
        "{reply:?}"
    );
    let reply = post(
        "/apis/authorization.k8s.io/v1/namespaces/team/localsubjectaccessreviews",
        r#"{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview",
            "spec":{"user":"alice","resourceAttributes":{"namespace":"default","verb":"list","resource":"pods"}}}"#,
    )
    .await;
    assert_eq!(reply.status, 422, "{reply:?}");
    assert!(
        reply.body.contains(r#"spec.resourceAttributes.namespace: Invalid value: \"default\": must match metadata.namespace"#),
        "{reply:?}"
    );
    let reply = post(
        "/apis/authorization.k8s.io/v1/namespaces/team/localsubjectaccessreviews",
        r#"{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview",
            "spec":{"user":"alice","resourceAttributes":{"namespace":"team","verb":"list","resource":"pods"}}}"#,
    )
    .await;
    assert_eq!(reply.status, 201, "{reply:?}");
    assert!(
        reply
            .body
            .contains(r#""status":{"allowed":true,"reason":"RBAC: allowed by RoleBinding"#),
        "{reply:?}"
    );
    let reply = post(
        "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        r#"{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","spec":{}}"#,
    )
    .await;
    assert_eq!(reply.status, 400, "{reply:?}");
    assert!(
        reply
            .body
            .contains(r#""message":"no namespace on request""#),
        "{reply:?}"
    );

    // Alice may not ask about others, but about herself.
    c.denied(
        ALICE,
        &["create", "-f", &sar],
        r#"subjectaccessreviews.authorization.k8s.io is forbidden: User "alice" cannot create resource "subjectaccessreviews" in API group "authorization.k8s.io" at the cluster scope"#,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn audit_events_record_the_rbac_decision_and_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let policy = tmp.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n",
    )
    .unwrap();
    let log = tmp.path().join("audit.log");
    let mut server = ApiServer::start(&[
        &format!("--audit-policy-file={}", policy.display()),
        &format!("--audit-log-path={}", log.display()),
        &format!("--token-auth-file={}", token_file(tmp.path()).display()),
        "--authorization-mode=RBAC",
    ])
    .await;
    let admin = server.admin_client();
    let alice = server.anonymous_client().with_bearer("alice-token");
    let post = |path: &'static str, body: &'static str| {
        let admin = admin.clone();
        async move {
            let mut req = admin.request(http::Method::POST, path, body);
            req.headers_mut()
                .insert("content-type", "application/json".parse().unwrap());
            admin.send(Proto::H1, req).await.unwrap()
        }
    };
    let reply = post(
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        r#"{"metadata":{"name":"version-reader"},"rules":[{"nonResourceURLs":["/metrics"],"verbs":["get"]}]}"#,
    )
    .await;
    assert_eq!(reply.status, 201, "{reply:?}");
    let reply = post(
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        r#"{"metadata":{"name":"alice-version"},
            "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"version-reader"},
            "subjects":[{"kind":"User","name":"alice"}]}"#,
    )
    .await;
    assert_eq!(reply.status, 201, "{reply:?}");
    eventually("alice reads /metrics", || async {
        let reply = alice.get(Proto::H1, "/metrics?probe=allowed").await.ok()?;
        (reply.status == 200).then_some(())
    })
    .await;
    let reply = alice.get(Proto::H1, "/logs?probe=denied").await.unwrap();
    assert_eq!(reply.status, 403);
    assert_eq!(
        reply.body,
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"forbidden: User \\\"alice\\\" cannot get path \\\"/logs\\\"\",\"reason\":\"Forbidden\",\"details\":{},\"code\":403}\n"
    );
    server.stop().await;

    let text = std::fs::read_to_string(&log).unwrap();
    let annotations = |uri: &str| {
        text.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|e| e["requestURI"] == uri && e["stage"] == "ResponseComplete")
            .unwrap_or_else(|| panic!("no event for {uri} in:\n{text}"))["annotations"]
            .clone()
    };
    let allowed = annotations("/metrics?probe=allowed");
    assert_eq!(allowed["authorization.k8s.io/decision"], "allow");
    assert_eq!(
        allowed["authorization.k8s.io/reason"],
        r#"RBAC: allowed by ClusterRoleBinding "alice-version" of ClusterRole "version-reader" to User "alice""#
    );
    let denied = annotations("/logs?probe=denied");
    assert_eq!(denied["authorization.k8s.io/decision"], "forbid");
    assert_eq!(denied["authorization.k8s.io/reason"], "");
}

/// A real service-account token (from `kubectl create token`) is denied with upstream's 403
/// text, allowed once a RoleBinding names the service account, denied again when the binding
/// goes, and the decision holds across a restart (the token's signing key persists).
#[tokio::test(flavor = "multi_thread")]
async fn a_service_account_token_is_denied_then_allowed_by_a_role_binding() {
    let data = tempfile::tempdir().unwrap();
    let tokens = token_file(data.path());
    let mut c = Cluster::start(&data.path().join("data"), &tokens).await;
    c.apply(
        r#"
apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: bot, namespace: team}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: team}
data: {k: v}
"#,
    )
    .await;
    let token = c
        .ok(As::Admin, &["create", "token", "bot", "-n", "team"])
        .await;
    let token = token.trim();
    let bot = As::Token(token);
    c.denied(
        bot,
        &["get", "configmap", "settings", "-n", "team"],
        r#"configmaps "settings" is forbidden: User "system:serviceaccount:team:bot" cannot get resource "configmaps" in API group "" in the namespace "team""#,
    )
    .await;
    c.apply(
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: settings-reader, namespace: team}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bot-reads-settings, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: settings-reader}
subjects:
- {kind: ServiceAccount, name: bot, namespace: team}
"#,
    )
    .await;
    let out = c
        .eventually_ok(
            bot,
            &["get", "configmap", "settings", "-n", "team", "-o", "name"],
        )
        .await;
    assert_eq!(out.trim(), "configmap/settings");
    // Only what the role grants.
    c.denied(
        bot,
        &["delete", "configmap", "settings", "-n", "team"],
        r#"configmaps "settings" is forbidden: User "system:serviceaccount:team:bot" cannot delete resource "configmaps" in API group "" in the namespace "team""#,
    )
    .await;

    c.restart().await;
    let out = c
        .eventually_ok(
            bot,
            &["get", "configmap", "settings", "-n", "team", "-o", "name"],
        )
        .await;
    assert_eq!(out.trim(), "configmap/settings");

    c.ok(
        As::Admin,
        &["delete", "rolebinding", "bot-reads-settings", "-n", "team"],
    )
    .await;
    eventually("the service account is denied again", || async {
        let out = c
            .kubectl(bot, &["get", "configmap", "settings", "-n", "team"])
            .await;
        (out.code != Some(0) && out.stderr.contains("is forbidden")).then_some(())
    })
    .await;
    c.server.stop().await;
}
