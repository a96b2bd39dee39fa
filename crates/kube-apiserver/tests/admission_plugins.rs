//! The built-in admission plugins through the real binary with kubectl 1.35: each test
//! starts a server (with the plugins and flags it needs) and checks what a client sees — the
//! objects a plugin changed, and its refusals with upstream's text.

mod common;

use std::path::PathBuf;

use apiserver::server::serving::kubeconfig::write_admin_kubeconfig;
use apiserver::server::serving::selfsigned::new_client_cert;
use common::{ApiServer, ToolOutput, eventually, run_tool};
use serde_json::Value;

const KUBECTL: &str = "kubectl-1.35";

/// A server and a kubectl home for it.
struct Cluster {
    server: ApiServer,
    home: tempfile::TempDir,
}

/// Who runs kubectl.
#[derive(Clone, Copy)]
enum As<'a> {
    /// The admin kubeconfig (`system:masters`).
    Admin,
    /// The admin impersonating a user (`--as`).
    User(&'a str),
    /// A kubeconfig of its own (e.g. a kubelet's client certificate).
    Kubeconfig(&'a str),
}

impl Cluster {
    async fn start(args: &[&str]) -> Cluster {
        Cluster {
            server: ApiServer::start(args).await,
            home: tempfile::tempdir().unwrap(),
        }
    }

    async fn kubectl_as(&self, who: As<'_>, args: &[&str]) -> ToolOutput {
        let admin = self.server.kubeconfig().display().to_string();
        let mut all: Vec<String> = match who {
            As::Admin => vec!["--kubeconfig".into(), admin],
            As::User(user) => vec!["--kubeconfig".into(), admin, format!("--as={user}")],
            As::Kubeconfig(path) => vec!["--kubeconfig".into(), path.to_string()],
        };
        all.extend(args.iter().map(|a| a.to_string()));
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        run_tool(KUBECTL, self.home.path(), &all).await
    }

    /// Runs kubectl as the admin; it must succeed.
    async fn ok(&self, args: &[&str]) -> String {
        let out = self.kubectl_as(As::Admin, args).await;
        assert_eq!(out.code, Some(0), "{args:?}: {out:?}");
        out.stdout
    }

    /// `kubectl get -o json` of one object.
    async fn get(&self, args: &[&str]) -> Value {
        let mut all = vec!["get", "-o", "json"];
        all.extend_from_slice(args);
        serde_json::from_str(&self.ok(&all).await).unwrap()
    }

    /// Writes `manifest` and applies it as `who`.
    async fn apply_as(&self, who: As<'_>, name: &str, manifest: &str) -> ToolOutput {
        let path = self.home.path().join(name);
        std::fs::write(&path, manifest).unwrap();
        self.kubectl_as(who, &["apply", "-f", &path.display().to_string()])
            .await
    }

    /// Applies `manifest` as the admin; it must succeed.
    async fn apply(&self, name: &str, manifest: &str) {
        let out = self.apply_as(As::Admin, name, manifest).await;
        assert_eq!(out.code, Some(0), "{name}: {out:?}");
    }

    /// Runs kubectl as `who`, which must fail with `message` in its error output.
    async fn refused(&self, who: As<'_>, args: &[&str], message: &str) {
        let out = self.kubectl_as(who, args).await;
        assert_ne!(out.code, Some(0), "{args:?}: {out:?}");
        assert!(
            out.stderr.contains(message),
            "{args:?}: want {message:?}\n{out:?}"
        );
    }

    /// A kubeconfig with a kubelet's client certificate for `node` (`system:node:<node>` in
    /// `system:nodes`), signed by the server's CA.
    fn node_kubeconfig(&self, node: &str) -> PathBuf {
        let pki = self.server.pki();
        let ca_cert = std::fs::read_to_string(pki.join("ca.crt")).unwrap();
        let ca_key = std::fs::read_to_string(pki.join("ca.key")).unwrap();
        let key = rcgen::KeyPair::from_pem(&ca_key).unwrap();
        let issuer = rcgen::Issuer::from_ca_cert_pem(&ca_cert, key).unwrap();
        let cert = new_client_cert(
            &issuer,
            &format!("system:node:{node}"),
            Some("system:nodes"),
        )
        .unwrap();
        let path = self.home.path().join(format!("{node}.kubeconfig"));
        write_admin_kubeconfig(
            &path,
            &format!("https://127.0.0.1:{}", self.server.addr.port()),
            ca_cert.as_bytes(),
            cert.cert_pem.as_bytes(),
            cert.key_pem.as_bytes(),
        )
        .unwrap();
        path
    }

    /// Waits until the `default` service account of `namespace` exists.
    async fn default_service_account(&self, namespace: &str) {
        eventually(
            &format!("serviceaccount default in {namespace}"),
            || async {
                let out = self
                    .kubectl_as(
                        As::Admin,
                        &["get", "serviceaccount", "default", "-n", namespace],
                    )
                    .await;
                (out.code == Some(0)).then_some(())
            },
        )
        .await;
    }
}

fn names(list: &Value) -> Vec<&str> {
    list.as_array()
        .map(|a| a.iter().filter_map(|v| v["name"].as_str()).collect())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pod_gets_the_default_service_account_and_a_projected_token_in_every_container() {
    let cluster = Cluster::start(&[]).await;
    cluster.ok(&["create", "namespace", "team"]).await;
    // The service-account controller gives every new namespace its `default` account.
    cluster.default_service_account("team").await;
    cluster
        .apply(
            "pod.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: team\nspec:\n  initContainers:\n  - name: init\n    image: busybox\n  containers:\n  - name: app\n    image: nginx\n  - name: own-mount\n    image: nginx\n    volumeMounts:\n    - name: mine\n      mountPath: /var/run/secrets/kubernetes.io/serviceaccount\n  volumes:\n  - name: mine\n    emptyDir: {}\n",
        )
        .await;
    let pod = cluster.get(&["pod", "web", "-n", "team"]).await;
    assert_eq!(pod["spec"]["serviceAccountName"], "default", "{pod}");
    let volume = pod["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"].as_str().unwrap().starts_with("kube-api-access-"))
        .unwrap_or_else(|| panic!("no token volume: {pod}"))
        .clone();
    let volume_name = volume["name"].as_str().unwrap();
    assert_eq!(volume_name.len(), "kube-api-access-".len() + 5, "{volume}");
    let sources = &volume["projected"]["sources"];
    assert_eq!(sources[0]["serviceAccountToken"]["expirationSeconds"], 3607);
    assert_eq!(sources[0]["serviceAccountToken"]["path"], "token");
    assert_eq!(sources[1]["configMap"]["name"], "kube-root-ca.crt");
    assert_eq!(sources[1]["configMap"]["items"][0]["key"], "ca.crt");
    assert_eq!(
        sources[2]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"],
        "metadata.namespace"
    );
    assert_eq!(volume["projected"]["defaultMode"], 420);
    for container in [
        &pod["spec"]["initContainers"][0],
        &pod["spec"]["containers"][0],
    ] {
        let mount = &container["volumeMounts"][0];
        assert_eq!(mount["name"], volume_name, "{container}");
        assert_eq!(
            mount["mountPath"],
            "/var/run/secrets/kubernetes.io/serviceaccount"
        );
        assert_eq!(mount["readOnly"], true);
    }
    // A container mounting something of its own at the path keeps it.
    assert_eq!(
        names(&pod["spec"]["containers"][1]["volumeMounts"]),
        ["mine"]
    );

    // Automounting turned off on the pod: no volume.
    cluster
        .apply(
            "quiet.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: quiet\n  namespace: team\nspec:\n  automountServiceAccountToken: false\n  containers:\n  - name: app\n    image: nginx\n",
        )
        .await;
    let quiet = cluster.get(&["pod", "quiet", "-n", "team"]).await;
    assert!(quiet["spec"].get("volumes").is_none(), "{quiet}");
    // ... or on the service account, with its image pull secrets copied to the pod.
    cluster
        .apply(
            "builder.yaml",
            "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: builder\n  namespace: team\nautomountServiceAccountToken: false\nimagePullSecrets:\n- name: registry\n",
        )
        .await;
    cluster
        .apply(
            "built.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: built\n  namespace: team\nspec:\n  serviceAccountName: builder\n  containers:\n  - name: app\n    image: nginx\n",
        )
        .await;
    let built = cluster.get(&["pod", "built", "-n", "team"]).await;
    assert!(built["spec"].get("volumes").is_none(), "{built}");
    assert_eq!(names(&built["spec"]["imagePullSecrets"]), ["registry"]);

    // A service account that does not exist.
    let path = cluster.home.path().join("ghost.yaml");
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: ghost\n  namespace: team\nspec:\n  serviceAccountName: nobody\n  containers:\n  - name: app\n    image: nginx\n",
    )
    .unwrap();
    cluster
        .refused(
            As::Admin,
            &["create", "-f", &path.display().to_string()],
            "Error from server (Forbidden): error when creating \"",
        )
        .await;
    cluster
        .refused(
            As::Admin,
            &["create", "-f", &path.display().to_string()],
            "pods \"ghost\" is forbidden: error looking up service account team/nobody: serviceaccount \"nobody\" not found",
        )
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_immortal_namespaces_cannot_be_deleted_and_missing_ones_take_no_content() {
    let cluster = Cluster::start(&[]).await;
    for namespace in ["default", "kube-system", "kube-public"] {
        cluster
            .refused(
                As::Admin,
                &["delete", "namespace", namespace],
                &format!(
                    "Error from server (Forbidden): namespaces \"{namespace}\" is forbidden: this namespace may not be deleted"
                ),
            )
            .await;
    }
    cluster
        .refused(
            As::Admin,
            &["create", "configmap", "c", "-n", "nowhere"],
            "failed to create configmap: namespaces \"nowhere\" not found",
        )
        .await;
    // Other namespaces go; content held by a finalizer keeps one terminating, and nothing new
    // may be created in it meanwhile.
    cluster.ok(&["create", "namespace", "short-lived"]).await;
    cluster
        .apply(
            "held.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  namespace: short-lived\n  finalizers: [example.com/hold]\n",
        )
        .await;
    cluster
        .ok(&["delete", "namespace", "short-lived", "--wait=false"])
        .await;
    cluster
        .refused(
            As::Admin,
            &["create", "configmap", "late", "-n", "short-lived"],
            "configmaps \"late\" is forbidden: unable to create new content in namespace short-lived because it is being terminated",
        )
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kubelet_may_change_only_its_own_node_and_not_its_taints_or_restricted_labels() {
    let cluster = Cluster::start(&["--enable-admission-plugins=NodeRestriction"]).await;
    for node in ["n1", "n2"] {
        cluster
            .apply(
                &format!("{node}.yaml"),
                &format!("apiVersion: v1\nkind: Node\nmetadata:\n  name: {node}\n"),
            )
            .await;
    }
    // TaintNodesByCondition: new nodes are not ready until the node controller says so.
    let node = cluster.get(&["node", "n1"]).await;
    assert_eq!(
        node["spec"]["taints"],
        serde_json::json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]),
        "{node}"
    );
    let kubelet = cluster.node_kubeconfig("n1");
    let kubelet = kubelet.to_str().unwrap();
    cluster
        .refused(
            As::Kubeconfig(kubelet),
            &["label", "node", "n2", "team=a"],
            "nodes \"n2\" is forbidden: node \"n1\" is not allowed to modify node \"n2\"",
        )
        .await;
    cluster
        .refused(
            As::Kubeconfig(kubelet),
            &["label", "node", "n1", "node-role.kubernetes.io/control-plane="],
            "nodes \"n1\" is forbidden: is not allowed to modify labels: node-role.kubernetes.io/control-plane",
        )
        .await;
    cluster
        .refused(
            As::Kubeconfig(kubelet),
            &[
                "taint",
                "node",
                "n1",
                "node.kubernetes.io/not-ready:NoSchedule-",
            ],
            "nodes \"n1\" is forbidden: node \"n1\" is not allowed to modify taints",
        )
        .await;
    let labelled = cluster
        .kubectl_as(
            As::Kubeconfig(kubelet),
            &[
                "label",
                "node",
                "n1",
                "node.kubernetes.io/pool=blue",
                "team=a",
            ],
        )
        .await;
    assert_eq!(labelled.code, Some(0), "{labelled:?}");
    // Kubelets create only mirror pods of their own node.
    cluster
        .refused(
            As::Kubeconfig(kubelet),
            &["run", "web", "--image=nginx", "--restart=Never"],
            "pods \"web\" is forbidden: pod does not have \"kubernetes.io/config.mirror\" annotation, node \"n1\" can only create mirror pods",
        )
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn priority_class_names_resolve_to_priorities_and_unknown_ones_are_refused() {
    let cluster = Cluster::start(&[]).await;
    cluster
        .apply(
            "classes.yaml",
            "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: high\nvalue: 1000\npreemptionPolicy: Never\n---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: everyday\nvalue: 10\nglobalDefault: true\n",
        )
        .await;
    cluster
        .apply(
            "pods.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: important\nspec:\n  priorityClassName: high\n  containers:\n  - name: app\n    image: nginx\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: ordinary\nspec:\n  containers:\n  - name: app\n    image: nginx\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: critical\n  namespace: kube-system\nspec:\n  priorityClassName: system-node-critical\n  containers:\n  - name: app\n    image: nginx\n",
        )
        .await;
    let important = cluster.get(&["pod", "important"]).await;
    assert_eq!(important["spec"]["priority"], 1000, "{important}");
    assert_eq!(important["spec"]["preemptionPolicy"], "Never");
    let ordinary = cluster.get(&["pod", "ordinary"]).await;
    assert_eq!(
        ordinary["spec"]["priorityClassName"], "everyday",
        "{ordinary}"
    );
    assert_eq!(ordinary["spec"]["priority"], 10);
    assert_eq!(ordinary["spec"]["preemptionPolicy"], "PreemptLowerPriority");
    // The system classes exist from the start.
    let critical = cluster.get(&["pod", "critical", "-n", "kube-system"]).await;
    assert_eq!(critical["spec"]["priority"], 2_000_001_000, "{critical}");

    cluster
        .refused(
            As::Admin,
            &[
                "run",
                "lost",
                "--image=nginx",
                "--restart=Never",
                "--overrides={\"spec\":{\"priorityClassName\":\"nope\"}}",
            ],
            "pods \"lost\" is forbidden: no PriorityClass with name nope was found",
        )
        .await;
    cluster
        .refused(
            As::Admin,
            &["run", "forced", "--image=nginx", "--restart=Never", "--overrides={\"spec\":{\"priorityClassName\":\"high\",\"priority\":5}}"],
            "pods \"forced\" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name",
        )
        .await;
    let path = cluster.home.path().join("second.yaml");
    std::fs::write(
        &path,
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: another\nvalue: 5\nglobalDefault: true\n",
    )
    .unwrap();
    cluster
        .refused(
            As::Admin,
            &["create", "-f", &path.display().to_string()],
            "priorityclasses.scheduling.k8s.io \"another\" is forbidden: PriorityClass everyday is already marked as default. Only one default can exist",
        )
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_claim_gets_the_default_storage_class_and_protection_and_grows_only_if_allowed() {
    let cluster = Cluster::start(&[]).await;
    cluster
        .apply(
            "classes.yaml",
            "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: standard\n  annotations:\n    storageclass.kubernetes.io/is-default-class: \"true\"\nprovisioner: example.com/disk\nallowVolumeExpansion: true\n---\napiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: fixed\nprovisioner: example.com/disk\n",
        )
        .await;
    cluster
        .apply(
            "claims.yaml",
            "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\nspec:\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: 1Gi\n---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: rigid\nspec:\n  storageClassName: fixed\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: 1Gi\n---\napiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: disk\nspec:\n  capacity:\n    storage: 1Gi\n  accessModes: [ReadWriteOnce]\n  hostPath:\n    path: /tmp\n",
        )
        .await;
    let data = cluster.get(&["pvc", "data"]).await;
    assert_eq!(data["spec"]["storageClassName"], "standard", "{data}");
    assert_eq!(
        data["metadata"]["finalizers"],
        serde_json::json!(["kubernetes.io/pvc-protection"])
    );
    let disk = cluster.get(&["pv", "disk"]).await;
    assert_eq!(
        disk["metadata"]["finalizers"],
        serde_json::json!(["kubernetes.io/pv-protection"]),
        "{disk}"
    );
    // Growing needs a bound claim of a class that allows expansion.
    let grow = "{\"spec\":{\"resources\":{\"requests\":{\"storage\":\"2Gi\"}}}}";
    for claim in ["data", "rigid"] {
        cluster
            .ok(&[
                "patch",
                "pvc",
                claim,
                "--subresource=status",
                "-p",
                "{\"status\":{\"phase\":\"Bound\"}}",
            ])
            .await;
    }
    cluster
        .refused(
            As::Admin,
            &["patch", "pvc", "rigid", "-p", grow],
            "persistentvolumeclaims \"rigid\" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize",
        )
        .await;
    cluster.ok(&["patch", "pvc", "data", "-p", grow]).await;
    let grown = cluster.get(&["pvc", "data"]).await;
    assert_eq!(grown["spec"]["resources"]["requests"]["storage"], "2Gi");

    // The protection controllers let a claim go once no pod uses it, and an unbound volume.
    cluster
        .apply(
            "user.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: user\nspec:\n  containers:\n  - name: app\n    image: nginx\n  volumes:\n  - name: data\n    persistentVolumeClaim:\n      claimName: data\n",
        )
        .await;
    cluster
        .ok(&["delete", "pvc", "data", "rigid", "--wait=false"])
        .await;
    cluster.ok(&["delete", "pv", "disk", "--wait=false"]).await;
    let gone = |args: &'static [&'static str]| {
        let cluster = &cluster;
        async move {
            eventually(&format!("{args:?} gone"), || async {
                let out = cluster.kubectl_as(As::Admin, args).await;
                out.stderr.contains("NotFound").then_some(())
            })
            .await
        }
    };
    gone(&["get", "pvc", "rigid"]).await;
    gone(&["get", "pv", "disk"]).await;
    let held = cluster.get(&["pvc", "data"]).await;
    assert!(held["metadata"]["deletionTimestamp"].is_string(), "{held}");
    cluster
        .ok(&["delete", "pod", "user", "--grace-period=0", "--force"])
        .await;
    gone(&["get", "pvc", "data"]).await;
}

/// A CertificateSigningRequest manifest for a fresh request with this subject.
fn csr_manifest(name: &str, organizations: &[&str], signer: &str) -> String {
    use base64::Engine;
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    for org in organizations {
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, *org);
    }
    let pem = params.serialize_request(&key).unwrap().pem().unwrap();
    let request = base64::engine::general_purpose::STANDARD.encode(pem);
    format!(
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata:\n  name: {name}\nspec:\n  request: {request}\n  signerName: {signer}\n  usages: [client auth]\n"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn approving_a_csr_needs_the_approve_verb_on_its_signer() {
    let cluster = Cluster::start(&["--authorization-mode=RBAC"]).await;
    cluster
        .apply(
            "approver.yaml",
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: csr-approver\nrules:\n- apiGroups: [certificates.k8s.io]\n  resources: [certificatesigningrequests]\n  verbs: [get, list]\n- apiGroups: [certificates.k8s.io]\n  resources: [certificatesigningrequests/approval]\n  verbs: [update]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: csr-approver\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: csr-approver\nsubjects:\n- apiGroup: rbac.authorization.k8s.io\n  kind: User\n  name: alice\n",
        )
        .await;
    cluster
        .apply(
            "csr.yaml",
            &csr_manifest("worker", &[], "example.com/signer"),
        )
        .await;
    // Allowed on the approval subresource, but not on the signer.
    eventually("alice may read CSRs", || async {
        let out = cluster
            .kubectl_as(As::User("alice"), &["get", "csr", "worker"])
            .await;
        (out.code == Some(0)).then_some(())
    })
    .await;
    cluster
        .refused(
            As::User("alice"),
            &["certificate", "approve", "worker"],
            "certificatesigningrequests.certificates.k8s.io \"worker\" is forbidden: user not permitted to approve requests with signerName \"example.com/signer\"",
        )
        .await;
    // `approve` on the signer's domain wildcard is enough.
    cluster
        .apply(
            "signer.yaml",
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: csr-approver\nrules:\n- apiGroups: [certificates.k8s.io]\n  resources: [certificatesigningrequests]\n  verbs: [get, list]\n- apiGroups: [certificates.k8s.io]\n  resources: [certificatesigningrequests/approval]\n  verbs: [update]\n- apiGroups: [certificates.k8s.io]\n  resources: [certificatesigningrequests/status]\n  verbs: [update]\n- apiGroups: [certificates.k8s.io]\n  resources: [signers]\n  resourceNames: [example.com/*]\n  verbs: [approve]\n",
        )
        .await;
    eventually("alice approves", || async {
        let out = cluster
            .kubectl_as(As::User("alice"), &["certificate", "approve", "worker"])
            .await;
        (out.code == Some(0)).then_some(())
    })
    .await;
    let approved = cluster.get(&["csr", "worker"]).await;
    assert_eq!(approved["status"]["conditions"][0]["type"], "Approved");

    // Issuing the certificate through `status` needs `sign` on the signer.
    let mut issued = approved.clone();
    let cert = rcgen::CertificateParams::new(vec!["worker".to_string()])
        .unwrap()
        .self_signed(&rcgen::KeyPair::generate().unwrap())
        .unwrap();
    issued["status"]["certificate"] = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD
            .encode(cert.pem())
            .into()
    };
    let path = cluster.home.path().join("issued.json");
    std::fs::write(&path, issued.to_string()).unwrap();
    cluster
        .refused(
            As::User("alice"),
            &[
                "replace",
                "--raw",
                "/apis/certificates.k8s.io/v1/certificatesigningrequests/worker/status",
                "-f",
                &path.display().to_string(),
            ],
            "certificatesigningrequests.certificates.k8s.io \"worker\" is forbidden: user not permitted to sign requests with signerName \"example.com/signer\"",
        )
        .await;

    // Nobody asks the kube-apiserver-client signer for system:masters.
    let path = cluster.home.path().join("root.yaml");
    std::fs::write(
        &path,
        csr_manifest(
            "root",
            &["system:masters"],
            "kubernetes.io/kube-apiserver-client",
        ),
    )
    .unwrap();
    cluster
        .refused(
            As::Admin,
            &["create", "-f", &path.display().to_string()],
            "certificatesigningrequests.certificates.k8s.io \"root\" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed",
        )
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn events_beyond_the_namespace_burst_are_refused_with_429() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("admission.yaml");
    std::fs::write(
        &config,
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: EventRateLimit\n  configuration:\n    apiVersion: eventratelimit.admission.k8s.io/v1alpha1\n    kind: Configuration\n    limits:\n    - type: Namespace\n      qps: 1\n      burst: 3\n",
    )
    .unwrap();
    let cluster = Cluster::start(&[
        "--enable-admission-plugins=EventRateLimit",
        &format!("--admission-control-config-file={}", config.display()),
    ])
    .await;
    let events: Vec<String> = (0..12)
        .map(|i| {
            format!(
                "apiVersion: v1\nkind: Event\nmetadata:\n  name: e{i}\ninvolvedObject:\n  kind: Pod\n  name: web\n  namespace: default\nreason: Test\nmessage: event {i}\n"
            )
        })
        .collect();
    let path = cluster.home.path().join("events.yaml");
    std::fs::write(&path, events.join("---\n")).unwrap();
    let out = cluster
        .kubectl_as(As::Admin, &["create", "-f", &path.display().to_string()])
        .await;
    assert_ne!(out.code, Some(0), "{out:?}");
    assert!(
        out.stderr.contains(
            "Error from server (TooManyRequests): error when creating \""
        ) && out.stderr.contains(
            "Too many requests: Too many requests: limit reached on type Namespace for key default"
        ),
        "{out:?}"
    );
    // The burst went through before the refusals.
    let created = out.stdout.lines().filter(|l| l.contains("created")).count();
    assert!((3..12).contains(&created), "{out:?}");
    // Other namespaces have buckets of their own.
    cluster.ok(&["create", "namespace", "quiet"]).await;
    let other = cluster
        .kubectl_as(
            As::Admin,
            &["create", "-n", "quiet", "-f", &path.display().to_string()],
        )
        .await;
    assert!(other.stdout.contains("event/e0 created"), "{other:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_with_event_rate_limit_and_no_configuration_does_not_start() {
    let out = common::run_to_exit(&["--enable-admission-plugins=EventRateLimit"]).await;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("limits: Invalid value: null: must not be empty"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pod_of_a_runtime_class_gets_its_overhead_and_scheduling() {
    let cluster = Cluster::start(&[]).await;
    cluster
        .apply(
            "class.yaml",
            "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata:\n  name: sandboxed\nhandler: runsc\noverhead:\n  podFixed:\n    cpu: 250m\n    memory: 120Mi\nscheduling:\n  nodeSelector:\n    sandbox: \"true\"\n  tolerations:\n  - key: sandbox\n    operator: Exists\n    effect: NoSchedule\n",
        )
        .await;
    cluster
        .apply(
            "pod.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: isolated\nspec:\n  runtimeClassName: sandboxed\n  nodeSelector:\n    zone: a\n  containers:\n  - name: app\n    image: nginx\n",
        )
        .await;
    let pod = cluster.get(&["pod", "isolated"]).await;
    assert_eq!(
        pod["spec"]["overhead"],
        serde_json::json!({"cpu": "250m", "memory": "120Mi"}),
        "{pod}"
    );
    assert_eq!(
        pod["spec"]["nodeSelector"],
        serde_json::json!({"sandbox": "true", "zone": "a"})
    );
    let tolerations = pod["spec"]["tolerations"].as_array().unwrap();
    assert!(
        tolerations
            .iter()
            .any(|t| t["key"] == "sandbox" && t["effect"] == "NoSchedule"),
        "{pod}"
    );
    // DefaultTolerationSeconds: five minutes on not-ready and unreachable nodes.
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        assert!(
            tolerations.iter().any(|t| t["key"] == key
                && t["effect"] == "NoExecute"
                && t["tolerationSeconds"] == 300),
            "{key}: {pod}"
        );
    }
    cluster
        .refused(
            As::Admin,
            &["run", "conflict", "--image=nginx", "--restart=Never", "--overrides={\"spec\":{\"runtimeClassName\":\"sandboxed\",\"nodeSelector\":{\"sandbox\":\"false\"}}}"],
            "pods \"conflict\" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[sandbox] = true; pod.spec.nodeSelector[sandbox] = false",
        )
        .await;
    cluster
        .refused(
            As::Admin,
            &[
                "run",
                "unknown",
                "--image=nginx",
                "--restart=Never",
                "--overrides={\"spec\":{\"runtimeClassName\":\"gvisor\"}}",
            ],
            "pods \"unknown\" is forbidden: pod rejected: RuntimeClass \"gvisor\" not found",
        )
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn blocking_an_owners_deletion_needs_update_on_its_finalizers() {
    let cluster = Cluster::start(&[
        "--authorization-mode=RBAC",
        "--enable-admission-plugins=OwnerReferencesPermissionEnforcement",
    ])
    .await;
    cluster
        .apply(
            "rbac.yaml",
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: configmaps\n  namespace: default\nrules:\n- apiGroups: [\"\"]\n  resources: [configmaps]\n  verbs: [get, list, create, update, patch, delete]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: configmaps\n  namespace: default\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: configmaps\nsubjects:\n- apiGroup: rbac.authorization.k8s.io\n  kind: User\n  name: bob\n",
        )
        .await;
    cluster.ok(&["create", "configmap", "owner"]).await;
    let uid = cluster.get(&["configmap", "owner"]).await["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    let owned = |name: &str, block: bool| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  ownerReferences:\n  - apiVersion: v1\n    kind: ConfigMap\n    name: owner\n    uid: {uid}\n    blockOwnerDeletion: {block}\n"
        )
    };
    // A plain owner reference needs nothing more.
    let plain = cluster
        .apply_as(As::User("bob"), "plain.yaml", &owned("plain", false))
        .await;
    assert_eq!(plain.code, Some(0), "{plain:?}");
    let blocking = cluster
        .apply_as(As::User("bob"), "blocking.yaml", &owned("blocking", true))
        .await;
    assert_ne!(blocking.code, Some(0), "{blocking:?}");
    assert!(
        blocking.stderr.contains(
            "configmaps \"blocking\" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: "
        ),
        "{blocking:?}"
    );
    cluster
        .apply(
            "finalizers.yaml",
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: configmaps\n  namespace: default\nrules:\n- apiGroups: [\"\"]\n  resources: [configmaps]\n  verbs: [get, list, create, update, patch, delete]\n- apiGroups: [\"\"]\n  resources: [configmaps/finalizers]\n  verbs: [update]\n",
        )
        .await;
    eventually("bob may block the owner's deletion", || async {
        let out = cluster
            .apply_as(As::User("bob"), "blocking.yaml", &owned("blocking", true))
            .await;
        (out.code == Some(0)).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn blocking_a_custom_resource_owners_deletion_needs_update_on_its_finalizers() {
    let cluster = Cluster::start(&[
        "--authorization-mode=RBAC",
        "--enable-admission-plugins=OwnerReferencesPermissionEnforcement",
    ])
    .await;
    cluster
        .apply(
            "crd.yaml",
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {plural: widgets, singular: widget, kind: Widget}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}\n",
        )
        .await;
    cluster
        .ok(&[
            "wait",
            "--for=condition=Established",
            "crd/widgets.example.com",
            "--timeout=60s",
        ])
        .await;
    cluster
        .apply("owner.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: owner\n  namespace: default\n")
        .await;
    let uid = cluster.get(&["widget", "owner"]).await["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    let role = |extra: &str| {
        format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: configmaps\n  namespace: default\nrules:\n- apiGroups: [\"\"]\n  resources: [configmaps]\n  verbs: [get, list, create, update, patch, delete]\n{extra}---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: configmaps\n  namespace: default\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: configmaps\nsubjects:\n- apiGroup: rbac.authorization.k8s.io\n  kind: User\n  name: bob\n"
        )
    };
    cluster.apply("rbac.yaml", &role("")).await;
    let owned = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: blocking\n  ownerReferences:\n  - apiVersion: example.com/v1\n    kind: Widget\n    name: owner\n    uid: {uid}\n    blockOwnerDeletion: true\n"
    );
    let refused = cluster
        .apply_as(As::User("bob"), "blocking.yaml", &owned)
        .await;
    assert!(
        refused.stderr.contains(
            "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: "
        ),
        "{refused:?}"
    );
    cluster
        .apply(
            "rbac.yaml",
            &role("- apiGroups: [example.com]\n  resources: [widgets/finalizers]\n  verbs: [update]\n"),
        )
        .await;
    eventually("bob may block the widget's deletion", || async {
        let out = cluster
            .apply_as(As::User("bob"), "blocking.yaml", &owned)
            .await;
        (out.code == Some(0)).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_ingress_without_a_class_gets_the_default_one() {
    let cluster = Cluster::start(&[]).await;
    cluster
        .apply(
            "classes.yaml",
            "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata:\n  name: nginx\n  annotations:\n    ingressclass.kubernetes.io/is-default-class: \"true\"\nspec:\n  controller: k8s.io/ingress-nginx\n---\napiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata:\n  name: other\nspec:\n  controller: example.com/other\n",
        )
        .await;
    let ingress = |name: &str, class: &str| {
        format!(
            "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: {name}\nspec:\n{class}  defaultBackend:\n    service:\n      name: web\n      port:\n        number: 80\n"
        )
    };
    cluster.apply("plain.yaml", &ingress("plain", "")).await;
    cluster
        .apply(
            "chosen.yaml",
            &ingress("chosen", "  ingressClassName: other\n"),
        )
        .await;
    let plain = cluster.get(&["ingress", "plain"]).await;
    assert_eq!(plain["spec"]["ingressClassName"], "nginx", "{plain}");
    let chosen = cluster.get(&["ingress", "chosen"]).await;
    assert_eq!(chosen["spec"]["ingressClassName"], "other", "{chosen}");
}

#[tokio::test(flavor = "multi_thread")]
async fn always_pull_images_and_always_deny_apply_only_when_enabled() {
    let cluster = Cluster::start(&["--enable-admission-plugins=AlwaysPullImages"]).await;
    cluster
        .ok(&[
            "run",
            "web",
            "--image=nginx",
            "--restart=Never",
            "--image-pull-policy=IfNotPresent",
        ])
        .await;
    let pod = cluster.get(&["pod", "web"]).await;
    assert_eq!(
        pod["spec"]["containers"][0]["imagePullPolicy"], "Always",
        "{pod}"
    );
    drop(cluster);

    let denying = Cluster::start(&["--enable-admission-plugins=AlwaysDeny"]).await;
    denying
        .refused(
            As::Admin,
            &["create", "configmap", "c"],
            "configmaps \"c\" is forbidden: admission control is denying all modifications",
        )
        .await;
    assert!(
        denying
            .server
            .stderr
            .find("AlwaysDeny admission controller is deprecated")
            .is_some()
    );
}
