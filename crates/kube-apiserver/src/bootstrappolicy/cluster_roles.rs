//! The default ClusterRoles of users and components (upstream `ClusterRoles()` of the
//! bootstrap policy), as kube-apiserver v1.35 creates them with its default feature gates.

use k8s_openapi::api::rbac::v1::PolicyRule;

use super::rules::{READ, READ_UPDATE, READ_WRITE, WRITE, events_rule, named_rule, rule, url_rule};
use super::{AGGREGATE_TO_ADMIN, AGGREGATE_TO_EDIT, AGGREGATE_TO_VIEW, RoleSpec};

const CORE: &str = "";
const APPS: &str = "apps";
const AUTHENTICATION: &str = "authentication.k8s.io";
const AUTHORIZATION: &str = "authorization.k8s.io";
const AUTOSCALING: &str = "autoscaling";
const BATCH: &str = "batch";
const CERTIFICATES: &str = "certificates.k8s.io";
const COORDINATION: &str = "coordination.k8s.io";
const DISCOVERY: &str = "discovery.k8s.io";
const EXTENSIONS: &str = "extensions";
const NETWORKING: &str = "networking.k8s.io";
const POLICY: &str = "policy";
const RBAC: &str = "rbac.authorization.k8s.io";
const RESOURCE: &str = "resource.k8s.io";
const STORAGE: &str = "storage.k8s.io";

/// What a kubelet may do (upstream `NodeRules`): the `system:node` role, and the static
/// rules the Node authorizer applies to resources its graph does not cover.
pub fn node_rules() -> Vec<PolicyRule> {
    vec![
        rule(&["create"], &[AUTHENTICATION], &["tokenreviews"]),
        rule(
            &["create"],
            &[AUTHORIZATION],
            &["subjectaccessreviews", "localsubjectaccessreviews"],
        ),
        rule(READ, &[CORE], &["services"]),
        rule(&["create", "get", "list", "watch"], &[CORE], &["nodes"]),
        rule(&["update", "patch"], &[CORE], &["nodes/status"]),
        rule(&["update", "patch"], &[CORE], &["nodes"]),
        rule(&["create", "update", "patch"], &[CORE], &["events"]),
        rule(READ, &[CORE], &["pods"]),
        rule(&["create", "delete"], &[CORE], &["pods"]),
        rule(&["update", "patch"], &[CORE], &["pods/status"]),
        rule(&["create"], &[CORE], &["pods/eviction"]),
        rule(READ, &[CORE], &["secrets", "configmaps"]),
        rule(
            &["get"],
            &[CORE],
            &["persistentvolumeclaims", "persistentvolumes"],
        ),
        rule(&["get"], &[CORE], &["endpoints"]),
        rule(
            &["create", "get", "list", "watch"],
            &[CERTIFICATES],
            &["certificatesigningrequests"],
        ),
        rule(
            &["get", "create", "update", "patch", "delete"],
            &[COORDINATION],
            &["leases"],
        ),
        rule(&["get"], &[STORAGE], &["volumeattachments"]),
        rule(&["create"], &[CORE], &["serviceaccounts/token"]),
        rule(
            &["get", "update", "patch"],
            &[CORE],
            &["persistentvolumeclaims/status"],
        ),
        rule(READ, &[STORAGE], &["csidrivers"]),
        rule(
            &["get", "create", "update", "patch", "delete"],
            &[STORAGE],
            &["csinodes"],
        ),
        rule(READ, &["node.k8s.io"], &["runtimeclasses"]),
        rule(&["get"], &[RESOURCE], &["resourceclaims"]),
        rule(&["deletecollection"], &[RESOURCE], &["resourceslices"]),
    ]
}

fn signer_approver(name: &'static str, signer: &str) -> RoleSpec {
    RoleSpec::cluster(
        name,
        vec![named_rule(
            &["approve"],
            &[CERTIFICATES],
            &["signers"],
            &[signer],
        )],
    )
}

fn aggregate_to_edit_rules() -> Vec<PolicyRule> {
    vec![
        // Reading the escalating resources.
        rule(
            READ,
            &[CORE],
            &[
                "pods/attach",
                "pods/proxy",
                "pods/exec",
                "pods/portforward",
                "secrets",
                "services/proxy",
            ],
        ),
        rule(&["impersonate"], &[CORE], &["serviceaccounts"]),
        rule(
            WRITE,
            &[CORE],
            &[
                "pods",
                "pods/attach",
                "pods/proxy",
                "pods/exec",
                "pods/portforward",
            ],
        ),
        rule(&["create"], &[CORE], &["pods/eviction"]),
        rule(
            WRITE,
            &[CORE],
            &[
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/proxy",
                "persistentvolumeclaims",
                "configmaps",
                "secrets",
                "events",
            ],
        ),
        rule(&["create"], &[CORE], &["serviceaccounts/token"]),
        rule(
            WRITE,
            &[APPS],
            &[
                "statefulsets",
                "statefulsets/scale",
                "daemonsets",
                "deployments",
                "deployments/scale",
                "deployments/rollback",
                "replicasets",
                "replicasets/scale",
            ],
        ),
        rule(WRITE, &[AUTOSCALING], &["horizontalpodautoscalers"]),
        rule(WRITE, &[BATCH], &["jobs", "cronjobs"]),
        rule(
            WRITE,
            &[EXTENSIONS],
            &[
                "daemonsets",
                "deployments",
                "deployments/scale",
                "deployments/rollback",
                "ingresses",
                "replicasets",
                "replicasets/scale",
                "replicationcontrollers/scale",
                "networkpolicies",
            ],
        ),
        rule(WRITE, &[POLICY], &["poddisruptionbudgets"]),
        rule(WRITE, &[NETWORKING], &["networkpolicies", "ingresses"]),
        rule(READ_WRITE, &[COORDINATION], &["leases"]),
    ]
}

fn aggregate_to_view_rules() -> Vec<PolicyRule> {
    vec![
        rule(
            READ,
            &[CORE],
            &[
                "pods",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "configmaps",
            ],
        ),
        rule(
            READ,
            &[CORE],
            &[
                "limitranges",
                "resourcequotas",
                "bindings",
                "events",
                "pods/status",
                "resourcequotas/status",
                "namespaces/status",
                "replicationcontrollers/status",
                "pods/log",
            ],
        ),
        // Reading namespaces at namespace scope reads only that namespace.
        rule(READ, &[CORE], &["namespaces"]),
        rule(READ, &[DISCOVERY], &["endpointslices"]),
        rule(
            READ,
            &[APPS],
            &[
                "controllerrevisions",
                "statefulsets",
                "statefulsets/status",
                "statefulsets/scale",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/status",
                "deployments/scale",
                "replicasets",
                "replicasets/status",
                "replicasets/scale",
            ],
        ),
        rule(
            READ,
            &[AUTOSCALING],
            &[
                "horizontalpodautoscalers",
                "horizontalpodautoscalers/status",
            ],
        ),
        rule(
            READ,
            &[BATCH],
            &["jobs", "cronjobs", "cronjobs/status", "jobs/status"],
        ),
        rule(
            READ,
            &[EXTENSIONS],
            &[
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "ingresses",
                "ingresses/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "replicationcontrollers/scale",
                "networkpolicies",
            ],
        ),
        rule(
            READ,
            &[POLICY],
            &["poddisruptionbudgets", "poddisruptionbudgets/status"],
        ),
        rule(
            READ,
            &[NETWORKING],
            &["networkpolicies", "ingresses", "ingresses/status"],
        ),
    ]
}

fn kube_controller_manager_rules() -> Vec<PolicyRule> {
    vec![
        events_rule(),
        // Leader election.
        rule(&["create"], &[COORDINATION], &["leases"]),
        named_rule(
            &["get", "update"],
            &[COORDINATION],
            &["leases"],
            &["kube-controller-manager"],
        ),
        // Service-account token minting with --use-service-account-credentials.
        rule(&["create"], &[CORE], &["secrets", "serviceaccounts"]),
        rule(&["delete"], &[CORE], &["secrets"]),
        rule(
            &["get"],
            &[CORE],
            &["namespaces", "secrets", "serviceaccounts", "configmaps"],
        ),
        rule(&["update"], &[CORE], &["secrets", "serviceaccounts"]),
        // Delegated authentication and authorization of its own endpoints.
        rule(&["create"], &[AUTHENTICATION], &["tokenreviews"]),
        rule(&["create"], &[AUTHORIZATION], &["subjectaccessreviews"]),
        // The informers of every controller.
        rule(&["list", "watch"], &["*"], &["*"]),
        rule(&["create"], &[CORE], &["serviceaccounts/token"]),
    ]
}

fn kube_scheduler_rules() -> Vec<PolicyRule> {
    vec![
        events_rule(),
        // Leader election.
        rule(&["create"], &[COORDINATION], &["leases"]),
        named_rule(
            &["get", "update", "list", "watch"],
            &[COORDINATION],
            &["leases"],
            &["kube-scheduler"],
        ),
        rule(READ_WRITE, &[COORDINATION], &["leasecandidates"]),
        rule(READ, &[CORE], &["nodes"]),
        rule(&["get", "list", "watch", "delete"], &[CORE], &["pods"]),
        rule(&["create"], &[CORE], &["pods/binding", "bindings"]),
        rule(&["patch", "update"], &[CORE], &["pods/status"]),
        rule(READ, &[CORE], &["replicationcontrollers", "services"]),
        rule(READ, &[APPS, EXTENSIONS], &["replicasets"]),
        rule(READ, &[APPS], &["statefulsets"]),
        rule(READ, &[POLICY], &["poddisruptionbudgets"]),
        rule(
            READ,
            &[CORE],
            &["persistentvolumeclaims", "persistentvolumes"],
        ),
        // Delegated authentication and authorization of its own endpoints.
        rule(&["create"], &[AUTHENTICATION], &["tokenreviews"]),
        rule(&["create"], &[AUTHORIZATION], &["subjectaccessreviews"]),
        rule(READ, &[STORAGE], &["csinodes"]),
        rule(READ, &[STORAGE], &["volumeattachments"]),
        rule(READ, &[CORE], &["namespaces"]),
        rule(READ, &[STORAGE], &["csidrivers"]),
        rule(READ, &[STORAGE], &["csistoragecapacities"]),
        // Dynamic resource allocation.
        rule(READ, &[RESOURCE], &["deviceclasses"]),
        rule(READ_UPDATE, &[RESOURCE], &["resourceclaims"]),
        rule(READ_UPDATE, &[RESOURCE], &["resourceclaims/status"]),
        rule(READ_UPDATE, &[CORE], &["pods/finalizers"]),
        rule(READ, &[RESOURCE], &["resourceslices"]),
    ]
}

/// The default ClusterRoles other than the controllers' (upstream `ClusterRoles()`).
pub fn cluster_roles() -> Vec<RoleSpec> {
    vec![
        // Anything at all.
        RoleSpec::cluster(
            "cluster-admin",
            vec![rule(&["*"], &["*"], &["*"]), url_rule(&["*"], &["*"])],
        ),
        // Enough to see whether the server is ready and to negotiate API versions.
        RoleSpec::cluster(
            "system:discovery",
            vec![url_rule(
                &["get"],
                &[
                    "/livez",
                    "/readyz",
                    "/healthz",
                    "/version",
                    "/version/",
                    "/openapi",
                    "/openapi/*",
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                ],
            )],
        ),
        // The monitoring endpoints, including individual health checks.
        RoleSpec::cluster(
            "system:monitoring",
            vec![url_rule(
                &["get"],
                &[
                    "/metrics",
                    "/metrics/slis",
                    "/livez",
                    "/readyz",
                    "/healthz",
                    "/livez/*",
                    "/readyz/*",
                    "/healthz/*",
                ],
            )],
        ),
        // What any user may learn about itself.
        RoleSpec::cluster(
            "system:basic-user",
            vec![
                rule(
                    &["create"],
                    &[AUTHORIZATION],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                rule(&["create"], &[AUTHENTICATION], &["selfsubjectreviews"]),
            ],
        ),
        // Insensitive cluster information.
        RoleSpec::cluster(
            "system:public-info-viewer",
            vec![url_rule(
                &["get"],
                &["/livez", "/readyz", "/healthz", "/version", "/version/"],
            )],
        ),
        RoleSpec::cluster("admin", Vec::new()).aggregating(AGGREGATE_TO_ADMIN),
        RoleSpec::cluster("edit", Vec::new())
            .labelled(AGGREGATE_TO_ADMIN)
            .aggregating(AGGREGATE_TO_EDIT),
        RoleSpec::cluster("view", Vec::new())
            .labelled(AGGREGATE_TO_EDIT)
            .aggregating(AGGREGATE_TO_VIEW),
        RoleSpec::cluster(
            "system:aggregate-to-admin",
            vec![
                rule(
                    &["create"],
                    &[AUTHORIZATION],
                    &["localsubjectaccessreviews"],
                ),
                rule(READ_WRITE, &[RBAC], &["roles", "rolebindings"]),
            ],
        )
        .labelled(AGGREGATE_TO_ADMIN),
        RoleSpec::cluster("system:aggregate-to-edit", aggregate_to_edit_rules())
            .labelled(AGGREGATE_TO_EDIT),
        RoleSpec::cluster("system:aggregate-to-view", aggregate_to_view_rules())
            .labelled(AGGREGATE_TO_VIEW),
        RoleSpec::cluster(
            "system:heapster",
            vec![
                rule(READ, &[CORE], &["events", "pods", "nodes", "namespaces"]),
                rule(READ, &[EXTENSIONS], &["deployments"]),
            ],
        ),
        RoleSpec::cluster("system:node", node_rules()),
        RoleSpec::cluster(
            "system:node-problem-detector",
            vec![
                rule(&["get"], &[CORE], &["nodes"]),
                rule(&["patch"], &[CORE], &["nodes/status"]),
                events_rule(),
            ],
        ),
        RoleSpec::cluster(
            "system:kubelet-api-admin",
            vec![
                rule(READ, &[CORE], &["nodes"]),
                rule(&["proxy"], &[CORE], &["nodes"]),
                rule(
                    &["*"],
                    &[CORE],
                    &[
                        "nodes/proxy",
                        "nodes/metrics",
                        "nodes/stats",
                        "nodes/log",
                        "nodes/pods",
                        "nodes/healthz",
                        "nodes/configz",
                    ],
                ),
            ],
        ),
        RoleSpec::cluster(
            "system:node-bootstrapper",
            vec![rule(
                &["create", "get", "list", "watch"],
                &[CERTIFICATES],
                &["certificatesigningrequests"],
            )],
        ),
        // Delegated authentication and authorization (aggregated servers, webhooks).
        RoleSpec::cluster(
            "system:auth-delegator",
            vec![
                rule(&["create"], &[AUTHENTICATION], &["tokenreviews"]),
                rule(&["create"], &[AUTHORIZATION], &["subjectaccessreviews"]),
            ],
        ),
        RoleSpec::cluster(
            "system:kube-aggregator",
            vec![rule(READ, &[CORE], &["services", "endpoints"])],
        ),
        RoleSpec::cluster(
            "system:persistent-volume-provisioner",
            vec![
                rule(
                    &["get", "list", "watch", "create", "delete"],
                    &[CORE],
                    &["persistentvolumes"],
                ),
                rule(
                    &["get", "list", "watch", "update"],
                    &[CORE],
                    &["persistentvolumeclaims"],
                ),
                rule(READ, &[STORAGE], &["storageclasses"]),
                rule(&["watch"], &[CORE], &["events"]),
                events_rule(),
            ],
        ),
        RoleSpec::cluster(
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            vec![rule(
                &["create"],
                &[CERTIFICATES],
                &["certificatesigningrequests/nodeclient"],
            )],
        ),
        RoleSpec::cluster(
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            vec![rule(
                &["create"],
                &[CERTIFICATES],
                &["certificatesigningrequests/selfnodeclient"],
            )],
        ),
        RoleSpec::cluster(
            "system:volume-scheduler",
            vec![
                rule(READ_UPDATE, &[CORE], &["persistentvolumes"]),
                rule(READ, &[STORAGE], &["storageclasses"]),
                rule(READ_UPDATE, &[CORE], &["persistentvolumeclaims"]),
            ],
        ),
        signer_approver(
            "system:certificates.k8s.io:legacy-unknown-approver",
            "kubernetes.io/legacy-unknown",
        ),
        signer_approver(
            "system:certificates.k8s.io:kubelet-serving-approver",
            "kubernetes.io/kubelet-serving",
        ),
        signer_approver(
            "system:certificates.k8s.io:kube-apiserver-client-approver",
            "kubernetes.io/kube-apiserver-client",
        ),
        signer_approver(
            "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
            "kubernetes.io/kube-apiserver-client-kubelet",
        ),
        RoleSpec::cluster(
            "system:service-account-issuer-discovery",
            vec![url_rule(
                &["get"],
                &[
                    "/.well-known/openid-configuration",
                    "/.well-known/openid-configuration/",
                    "/openid/v1/jwks",
                    "/openid/v1/jwks/",
                ],
            )],
        ),
        RoleSpec::cluster(
            "system:kube-controller-manager",
            kube_controller_manager_rules(),
        ),
        RoleSpec::cluster(
            "system:kube-dns",
            vec![rule(
                &["list", "watch"],
                &[CORE],
                &["endpoints", "services"],
            )],
        ),
        RoleSpec::cluster("system:kube-scheduler", kube_scheduler_rules()),
        RoleSpec::cluster(
            "system:node-proxier",
            vec![
                rule(&["list", "watch"], &[CORE], &["services", "endpoints"]),
                rule(READ, &[CORE], &["nodes"]),
                events_rule(),
                rule(&["list", "watch"], &[DISCOVERY], &["endpointslices"]),
            ],
        ),
    ]
}
