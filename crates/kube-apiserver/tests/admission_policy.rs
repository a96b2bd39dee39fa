//! Admission policies end to end with kubectl 1.35 against the real binary:
//! ValidatingAdmissionPolicy with ConfigMap params, messageExpression, Warn and Audit actions
//! with audit annotations, a binding's namespaceSelector, type checking in status with
//! failurePolicy, the per-call cost limit, and a MutatingAdmissionPolicy (with its feature gate
//! and group version on).

mod common;

use std::time::{Duration, Instant};

use common::{ApiServer, DEADLINE, ToolOutput, eventually, run_tool};

const KUBECTL: &str = "kubectl-1.35";

/// kubectl 1.35 with the server's admin kubeconfig and a HOME of its own.
struct Kubectl {
    kubeconfig: String,
    home: tempfile::TempDir,
}

impl Kubectl {
    fn new(server: &ApiServer) -> Self {
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

    async fn apply(&self, yaml: &str) {
        let path = self.home.path().join("manifest.yaml");
        std::fs::write(&path, yaml).unwrap();
        self.ok(&["apply", "-f", &path.display().to_string()]).await;
    }

    /// Runs `args` until it fails with `needle` in stderr (policies are picked up by
    /// informers, within a second), then returns that output.
    async fn until_refused(&self, args: &[&str], cleanup: &[&str], needle: &str) -> ToolOutput {
        let start = Instant::now();
        loop {
            let out = self.run(args).await;
            if out.code != Some(0) && out.stderr.contains(needle) {
                return out;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "never refused with {needle:?}: {out:?}"
            );
            if out.code == Some(0) && !cleanup.is_empty() {
                self.ok(cleanup).await;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

const MAX_REPLICAS: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: replica-limit, namespace: default}
data: {maxReplicas: "3"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: max-replicas}
spec:
  failurePolicy: Fail
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["deployments"]
  validations:
  - expression: "object.spec.replicas <= int(params.data.maxReplicas)"
    messageExpression: "'replicas must be no greater than ' + params.data.maxReplicas"
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: max-replicas-binding}
spec:
  policyName: max-replicas
  validationActions: [Deny]
  paramRef: {name: replica-limit, namespace: default, parameterNotFoundAction: Deny}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn vap_with_a_configmap_param_denies_deployments_above_the_limit_with_its_message() {
    let server = ApiServer::start(&[]).await;
    let k = Kubectl::new(&server);
    k.apply(MAX_REPLICAS).await;
    let denied = "ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: replicas must be no greater than 3";
    let out = k
        .until_refused(
            &[
                "create",
                "deployment",
                "big",
                "--image=busybox",
                "--replicas=5",
            ],
            &["delete", "deployment", "big"],
            denied,
        )
        .await;
    assert!(
        out.stderr
            .contains(&format!("deployments.apps \"big\" is forbidden: {denied}")),
        "{out:?}"
    );
    // At the limit: allowed; an update above it: refused.
    k.ok(&[
        "create",
        "deployment",
        "web",
        "--image=busybox",
        "--replicas=3",
    ])
    .await;
    let patched = k
        .run(&[
            "patch",
            "deployment",
            "web",
            "-p",
            r#"{"spec":{"replicas":4}}"#,
        ])
        .await;
    assert_ne!(patched.code, Some(0));
    assert!(patched.stderr.contains(denied), "{patched:?}");
    // The table columns of both kinds.
    let policies = k.ok(&["get", "validatingadmissionpolicies"]).await;
    let row: Vec<&str> = policies
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        row[..3],
        ["max-replicas", "1", "v1/ConfigMap"],
        "{policies}"
    );
    let bindings = k.ok(&["get", "validatingadmissionpolicybindings"]).await;
    let row: Vec<&str> = bindings
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        row[..3],
        [
            "max-replicas-binding",
            "max-replicas",
            "default/replica-limit"
        ],
        "{bindings}"
    );
    // Without the param, `Deny` refuses everything the policy matches.
    k.ok(&["delete", "configmap", "replica-limit"]).await;
    k.until_refused(
        &["create", "deployment", "small", "--image=busybox", "--replicas=1"],
        &["delete", "deployment", "small"],
        "ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction",
    )
    .await;
    // Every denial is counted.
    let metrics = k.ok(&["get", "--raw", "/metrics"]).await;
    let counted = metrics.lines().find(|l| {
        l.starts_with("apiserver_validating_admission_policy_check_total{")
            && l.contains("enforcement_action=\"deny\"")
            && l.contains("policy=\"max-replicas\"")
            && l.contains("policy_binding=\"max-replicas-binding\"")
            && l.contains("error_type=\"no_error\"")
    });
    let count: f64 = counted
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no deny count in /metrics"));
    assert!(count >= 2.0, "{counted:?}");
    // The mutating policies' group version is off by default, as in 1.35.
    let versions = k.ok(&["api-versions"]).await;
    assert!(
        versions
            .lines()
            .any(|l| l == "admissionregistration.k8s.io/v1"),
        "{versions}"
    );
    assert!(
        !versions.contains("admissionregistration.k8s.io/v1beta1"),
        "{versions}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn warn_and_audit_actions_add_a_warning_and_audit_annotations() {
    let dir = tempfile::tempdir().unwrap();
    let policy_file = dir.path().join("audit-policy.yaml");
    std::fs::write(
        &policy_file,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n",
    )
    .unwrap();
    let log = dir.path().join("audit.log");
    let server = ApiServer::start(&[
        &format!("--audit-policy-file={}", policy_file.display()),
        &format!("--audit-log-path={}", log.display()),
    ])
    .await;
    let k = Kubectl::new(&server);
    k.apply(
        r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: no-forbidden-key}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
  validations:
  - expression: "!('forbidden' in object.data)"
    message: "configmaps must not have the key forbidden"
  auditAnnotations:
  - key: data-keys
    valueExpression: "string(size(object.data))"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: warn-and-audit}
spec:
  policyName: no-forbidden-key
  validationActions: [Warn, Audit]
"#,
    )
    .await;
    let warning = "Warning: Validation failed for ValidatingAdmissionPolicy 'no-forbidden-key' with binding 'warn-and-audit': configmaps must not have the key forbidden";
    let mut n = 0;
    let out = eventually("the policy warns", || {
        n += 1;
        let name = format!("cm-{n}");
        let k = &k;
        async move {
            let out = k
                .run(&["create", "configmap", &name, "--from-literal=forbidden=1"])
                .await;
            assert_eq!(out.code, Some(0), "Warn and Audit never refuse: {out:?}");
            out.stderr.contains(warning).then_some(out)
        }
    })
    .await;
    assert!(out.stderr.contains(warning), "{out:?}");
    let event = eventually("the audit event with the annotations", || {
        let log = log.clone();
        async move {
            let text = std::fs::read_to_string(&log).ok()?;
            text.lines()
                .filter(|l| l.contains("\"ResponseComplete\"") && l.contains("configmaps"))
                .find(|l| l.contains("validation.policy.admission.k8s.io/validation_failure"))
                .map(str::to_string)
        }
    })
    .await;
    let event: serde_json::Value = serde_json::from_str(&event).unwrap();
    let annotations = &event["annotations"];
    let failure: serde_json::Value = serde_json::from_str(
        annotations["validation.policy.admission.k8s.io/validation_failure"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        failure,
        serde_json::json!([{"message": "configmaps must not have the key forbidden",
            "policy": "no-forbidden-key", "binding": "warn-and-audit", "expressionIndex": 0,
            "validationActions": ["Warn", "Audit"]}])
    );
    assert_eq!(annotations["no-forbidden-key/data-keys"], "1", "{event}");
    // A configmap the validation accepts: no warning.
    let clean = k
        .run(&["create", "configmap", "clean", "--from-literal=a=1"])
        .await;
    assert_eq!(clean.code, Some(0));
    assert!(!clean.stderr.contains("Validation failed"), "{clean:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_binding_with_a_namespace_selector_applies_only_in_selected_namespaces() {
    let server = ApiServer::start(&[]).await;
    let k = Kubectl::new(&server);
    k.ok(&["create", "namespace", "enforced"]).await;
    k.ok(&["label", "namespace", "enforced", "policy=enforced"])
        .await;
    k.ok(&["create", "namespace", "free"]).await;
    k.apply(
        r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: ok-prefix}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
  validations:
  - expression: "object.metadata.name.startsWith('ok-')"
    messageExpression: "'name ' + object.metadata.name + ' lacks the ok- prefix in ' + namespaceObject.metadata.name"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: enforced-namespaces}
spec:
  policyName: ok-prefix
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels: {policy: enforced}
"#,
    )
    .await;
    let out = k
        .until_refused(
            &["create", "configmap", "bad", "-n", "enforced"],
            &["delete", "configmap", "bad", "-n", "enforced"],
            "ValidatingAdmissionPolicy 'ok-prefix' with binding 'enforced-namespaces' denied request: name bad lacks the ok- prefix in enforced",
        )
        .await;
    assert!(
        out.stderr.contains("configmaps \"bad\" is forbidden"),
        "{out:?}"
    );
    k.ok(&["create", "configmap", "ok-good", "-n", "enforced"])
        .await;
    k.ok(&["create", "configmap", "bad", "-n", "free"]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_bindings_are_refused_and_a_deny_all_policy_cannot_lock_policies_out() {
    let server = ApiServer::start(&[]).await;
    let k = Kubectl::new(&server);
    let path = k.home.path().join("bad.yaml");
    std::fs::write(
        &path,
        r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: bad}
spec:
  policyName: p
  validationActions: [Deny, Warn]
  matchResources:
    namespaceSelector:
      matchExpressions: [{key: env, operator: Sometimes}]
"#,
    )
    .unwrap();
    let out = k.run(&["apply", "-f", &path.display().to_string()]).await;
    assert_ne!(out.code, Some(0), "{out:?}");
    for needle in [
        "The ValidatingAdmissionPolicyBinding \"bad\" is invalid",
        "spec.validationActions: Invalid value: [\"Deny\",\"Warn\"]: must not contain both Deny and Warn",
        "spec.matchResources.namespaceSelector.matchExpressions[0].operator: Invalid value: \"Sometimes\": not a valid selector operator",
    ] {
        assert!(out.stderr.contains(needle), "{needle}: {out:?}");
    }
    // A policy denying every write of every resource still leaves the policies themselves
    // writable (upstream never applies policies to policy resources).
    k.apply(
        r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: deny-all}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: ["*"], apiVersions: ["*"], operations: ["*"], resources: ["*"]}
  validations:
  - expression: "false"
    message: "nothing may change"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: deny-all-binding}
spec:
  policyName: deny-all
  validationActions: [Deny]
"#,
    )
    .await;
    k.until_refused(
        &["create", "configmap", "c"],
        &["delete", "configmap", "c"],
        "ValidatingAdmissionPolicy 'deny-all' with binding 'deny-all-binding' denied request: nothing may change",
    )
    .await;
    k.ok(&[
        "delete",
        "validatingadmissionpolicybinding",
        "deny-all-binding",
    ])
    .await;
    eventually("writes allowed again", || {
        let k = &k;
        async move { (k.run(&["create", "configmap", "c"]).await.code == Some(0)).then_some(()) }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_undefined_field_shows_in_type_checking_and_errors_follow_the_failure_policy() {
    let server = ApiServer::start(&[]).await;
    let k = Kubectl::new(&server);
    k.apply(
        r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: typo}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: ["apps"], apiVersions: ["v1"], operations: ["CREATE"], resources: ["deployments"]}
  validations:
  - expression: "object.spec.replicass > 1"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: typo-binding}
spec:
  policyName: typo
  validationActions: [Deny]
"#,
    )
    .await;
    let status = eventually("the status controller's type checking", || {
        let k = &k;
        async move {
            let out = k
                .ok(&["get", "validatingadmissionpolicy", "typo", "-o", "json"])
                .await;
            let policy: serde_json::Value = serde_json::from_str(&out).unwrap();
            (policy["status"]["observedGeneration"] == 1).then(|| policy["status"].clone())
        }
    })
    .await;
    let warnings = &status["typeChecking"]["expressionWarnings"];
    assert_eq!(
        warnings[0]["fieldRef"], "spec.validations[0].expression",
        "{status}"
    );
    assert_eq!(
        warnings[0]["warning"],
        "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replicass'\n | object.spec.replicass > 1\n | ...........^\n",
        "{status}"
    );
    // failurePolicy: Fail turns the evaluation error into a denial.
    k.until_refused(
        &["create", "deployment", "web", "--image=busybox"],
        &["delete", "deployment", "web"],
        "ValidatingAdmissionPolicy 'typo' with binding 'typo-binding' denied request: expression 'object.spec.replicass > 1' resulted in error: no such key: replicass",
    )
    .await;
    // failurePolicy: Ignore lets it through.
    k.ok(&[
        "patch",
        "validatingadmissionpolicy",
        "typo",
        "--type=merge",
        "-p",
        r#"{"spec":{"failurePolicy":"Ignore"}}"#,
    ])
    .await;
    eventually("Ignore admits", || {
        let k = &k;
        async move {
            (k.run(&["create", "deployment", "web", "--image=busybox"])
                .await
                .code
                == Some(0))
            .then_some(())
        }
    })
    .await;
    eventually("the new generation observed", || {
        let k = &k;
        async move {
            let out = k
                .ok(&[
                    "get",
                    "validatingadmissionpolicy",
                    "typo",
                    "-o",
                    "jsonpath={.status.observedGeneration}",
                ])
                .await;
            (out.trim() == "2").then_some(())
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expression_over_the_cost_limit_fails_under_the_failure_policy() {
    let server = ApiServer::start(&[]).await;
    let k = Kubectl::new(&server);
    let list: Vec<String> = (0..150).map(|i| i.to_string()).collect();
    let expression = "variables.l.all(x, variables.l.all(y, variables.l.all(z, x + y + z >= 0)))";
    k.apply(&format!(
        r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {{name: too-expensive}}
spec:
  matchConstraints:
    resourceRules:
    - {{apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}}
  variables:
  - name: l
    expression: "[{}]"
  validations:
  - expression: "{expression}"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {{name: expensive-binding}}
spec:
  policyName: too-expensive
  validationActions: [Deny]
"#,
        list.join(", ")
    ))
    .await;
    k.until_refused(
        &["create", "configmap", "c"],
        &["delete", "configmap", "c"],
        &format!("ValidatingAdmissionPolicy 'too-expensive' with binding 'expensive-binding' denied request: expression '{expression}' resulted in error: operation cancelled: actual cost limit exceeded"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mutating_admission_policy_adds_a_label_and_a_key_with_the_gate_and_group_version_on() {
    let server = ApiServer::start(&[
        "--feature-gates=MutatingAdmissionPolicy=true",
        "--runtime-config=admissionregistration.k8s.io/v1beta1=true",
    ])
    .await;
    let k = Kubectl::new(&server);
    k.apply(
        r#"
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicy
metadata: {name: add-team-label}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
  failurePolicy: Fail
  reinvocationPolicy: IfNeeded
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{metadata: Object.metadata{labels: {'team': 'blue'}}}"
  - patchType: JSONPatch
    jsonPatch:
      expression: "[JSONPatch{op: 'add', path: '/data/added', value: 'by-' + object.metadata.labels.team}]"
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicyBinding
metadata: {name: add-team-label-binding}
spec:
  policyName: add-team-label
"#,
    )
    .await;
    let table = k.ok(&["get", "mutatingadmissionpolicies"]).await;
    let row: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[..3], ["add-team-label", "2", "<unset>"], "{table}");
    let mut n = 0;
    let cm = eventually("the policy mutates new configmaps", || {
        n += 1;
        let name = format!("cm-{n}");
        let k = &k;
        async move {
            k.ok(&["create", "configmap", &name, "--from-literal=a=1"])
                .await;
            let out = k.ok(&["get", "configmap", &name, "-o", "json"]).await;
            let cm: serde_json::Value = serde_json::from_str(&out).unwrap();
            (cm["metadata"]["labels"]["team"] == "blue").then_some(cm)
        }
    })
    .await;
    assert_eq!(
        cm["data"],
        serde_json::json!({"a": "1", "added": "by-blue"}),
        "{cm}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_feature_gates_and_runtime_config_are_one_line_start_errors() {
    for (flag, message) in [
        (
            "--feature-gates=MutatingAdmissionPolicy=yes",
            "invalid value of MutatingAdmissionPolicy=yes, err: strconv.ParseBool: parsing \"yes\": invalid syntax",
        ),
        (
            "--runtime-config=admissionregistration.k8s.io/v1beta1=maybe",
            "invalid value admissionregistration.k8s.io/v1beta1=maybe",
        ),
    ] {
        let out = common::run_to_exit(&[flag]).await;
        assert_eq!(out.status.code(), Some(1), "{flag}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let errors: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("Error: "))
            .collect();
        assert_eq!(errors.len(), 1, "{flag}: {stderr}");
        assert!(errors[0].contains(message), "{flag}: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_authorizer_variable_asks_rbac_as_the_requesting_user() {
    let server = ApiServer::start(&["--authorization-mode=RBAC"]).await;
    let k = Kubectl::new(&server);
    // alice may create and read configmaps in default, not delete them.
    k.ok(&[
        "create",
        "role",
        "cm-writer",
        "-n",
        "default",
        "--verb=create,get",
        "--resource=configmaps",
    ])
    .await;
    k.ok(&[
        "create",
        "rolebinding",
        "alice-cm-writer",
        "-n",
        "default",
        "--role=cm-writer",
        "--user=alice",
    ])
    .await;
    k.apply(
        r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: protected-needs-delete}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
  validations:
  - expression: >-
      !has(object.metadata.labels) || !('protected' in object.metadata.labels) ||
      authorizer.group('').resource('configmaps').namespace(object.metadata.namespace).check('delete').allowed()
    message: only users who may delete configmaps can protect them
    reason: Forbidden
  # Holds for alice: she may create (the request's own resource), the default service
  # account may not list pods.
  - expression: >-
      authorizer.requestResource.check('create').allowed() &&
      !authorizer.serviceAccount('default', 'default').group('').resource('pods').check('list').allowed() &&
      authorizer.path('/healthz').check('get').reason() != 'x'
    message: the request's resource or the service account check failed
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: protected-needs-delete}
spec:
  policyName: protected-needs-delete
  validationActions: [Deny]
"#,
    )
    .await;
    let manifest = k.home.path().join("protected.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: guarded, namespace: default, labels: {protected: \"yes\"}}\n",
    )
    .unwrap();
    let manifest = manifest.display().to_string();
    let out = k
        .until_refused(
            &["--as=alice", "create", "-f", &manifest],
            &["delete", "configmap", "guarded", "-n", "default"],
            "only users who may delete configmaps can protect them",
        )
        .await;
    assert!(
        out.stderr.contains("configmaps \"guarded\" is forbidden"),
        "{out:?}"
    );
    // Without the label alice may create; an admin (who may delete) may protect.
    k.ok(&[
        "--as=alice",
        "create",
        "configmap",
        "plain",
        "-n",
        "default",
    ])
    .await;
    k.ok(&["create", "-f", &manifest]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_custom_resource_param_limits_deployment_replicas() {
    let server = ApiServer::start(&[]).await;
    let k = Kubectl::new(&server);
    k.apply(
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: replicalimits.rules.example.com}
spec:
  group: rules.example.com
  scope: Namespaced
  names: {plural: replicalimits, singular: replicalimit, kind: ReplicaLimit}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          maxReplicas: {type: integer}
"#,
    )
    .await;
    k.ok(&[
        "wait",
        "--for=condition=Established",
        "crd/replicalimits.rules.example.com",
        "--timeout=60s",
    ])
    .await;
    k.apply(
        r#"
apiVersion: rules.example.com/v1
kind: ReplicaLimit
metadata: {name: limit, namespace: default}
maxReplicas: 2
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: crd-replica-limit}
spec:
  failurePolicy: Fail
  paramKind: {apiVersion: rules.example.com/v1, kind: ReplicaLimit}
  matchConstraints:
    resourceRules:
    - {apiGroups: ["apps"], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["deployments"]}
  validations:
  - expression: "object.spec.replicas <= params.maxReplicas"
    messageExpression: "'at most ' + string(params.maxReplicas) + ' replicas'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: crd-replica-limit}
spec:
  policyName: crd-replica-limit
  validationActions: [Deny]
  paramRef: {name: limit, parameterNotFoundAction: Deny}
"#,
    )
    .await;
    let out = k
        .until_refused(
            &[
                "create",
                "deployment",
                "big",
                "--image=nginx",
                "--replicas=3",
            ],
            &["delete", "deployment", "big"],
            "denied request: at most 2 replicas",
        )
        .await;
    assert!(
        out.stderr.contains("deployments.apps \"big\" is forbidden"),
        "{out:?}"
    );
    k.ok(&[
        "create",
        "deployment",
        "small",
        "--image=nginx",
        "--replicas=2",
    ])
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_equivalent_match_validates_an_autoscaling_v1_request_as_the_v2_object() {
    let server = ApiServer::start(&[]).await;
    let k = Kubectl::new(&server);
    k.apply(
        r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: utilization-cap}
spec:
  failurePolicy: Fail
  matchConstraints:
    matchPolicy: Equivalent
    resourceRules:
    - {apiGroups: ["autoscaling"], apiVersions: ["v2"], operations: ["CREATE"], resources: ["horizontalpodautoscalers"]}
  validations:
  - expression: "object.spec.metrics.all(m, m.resource.target.averageUtilization <= 80)"
    messageExpression: "'utilization above 80 in ' + object.apiVersion"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: utilization-cap}
spec:
  policyName: utilization-cap
  validationActions: [Deny]
"#,
    )
    .await;
    let hpa = |name: &str, percent: u32| {
        format!(
            "apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: web}}\n  maxReplicas: 3\n  targetCPUUtilizationPercentage: {percent}\n"
        )
    };
    let path = k.home.path().join("hot.yaml");
    std::fs::write(&path, hpa("hot", 90)).unwrap();
    let path = path.display().to_string();
    k.until_refused(
        &["create", "-f", &path],
        &["delete", "hpa", "hot"],
        "denied request: utilization above 80 in autoscaling/v2",
    )
    .await;
    let cool = k.home.path().join("cool.yaml");
    std::fs::write(&cool, hpa("cool", 50)).unwrap();
    k.ok(&["create", "-f", &cool.display().to_string()]).await;
}
