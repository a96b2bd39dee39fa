//! The roles of kube-controller-manager's controllers (upstream `controller_policy.go`):
//! `system:controller:<name>`, each bound to the service account `kube-system/<name>` that
//! the controller runs as with `--use-service-account-credentials`.

use k8s_openapi::api::rbac::v1::PolicyRule;

use super::RoleSpec;
use super::rules::{READ, events_rule, named_rule, rule};

/// The name prefix of controller roles and bindings.
pub const CONTROLLER_ROLE_PREFIX: &str = "system:controller:";

const CORE: &str = "";
const APPS: &str = "apps";
const EXTENSIONS: &str = "extensions";
const BATCH: &str = "batch";
const STORAGE: &str = "storage.k8s.io";
const RESOURCE: &str = "resource.k8s.io";
const NETWORKING: &str = "networking.k8s.io";

fn controller(name: &str, rules: Vec<PolicyRule>) -> RoleSpec {
    RoleSpec::cluster_owned(format!("{CONTROLLER_ROLE_PREFIX}{name}"), rules)
}

/// Every controller role (upstream `ControllerRoles()`).
pub fn controller_roles() -> Vec<RoleSpec> {
    vec![
        controller(
            "attachdetach-controller",
            vec![
                rule(
                    &["list", "watch"],
                    &[CORE],
                    &["persistentvolumes", "persistentvolumeclaims"],
                ),
                rule(READ, &[CORE], &["nodes"]),
                rule(&["patch", "update"], &[CORE], &["nodes/status"]),
                rule(&["list", "watch"], &[CORE], &["pods"]),
                events_rule(),
                rule(
                    &["get", "create", "delete", "list", "watch"],
                    &[STORAGE],
                    &["volumeattachments"],
                ),
                rule(READ, &[STORAGE], &["csidrivers"]),
                rule(READ, &[STORAGE], &["csinodes"]),
            ],
        ),
        controller(
            "clusterrole-aggregation-controller",
            vec![rule(
                &["escalate", "get", "list", "watch", "update", "patch"],
                &["rbac.authorization.k8s.io"],
                &["clusterroles"],
            )],
        ),
        controller(
            "cronjob-controller",
            vec![
                rule(&["get", "list", "watch", "update"], &[BATCH], &["cronjobs"]),
                rule(
                    &[
                        "get", "list", "watch", "create", "update", "delete", "patch",
                    ],
                    &[BATCH],
                    &["jobs"],
                ),
                rule(&["update"], &[BATCH], &["cronjobs/status"]),
                rule(&["update"], &[BATCH], &["cronjobs/finalizers"]),
                rule(&["list", "delete"], &[CORE], &["pods"]),
                events_rule(),
            ],
        ),
        controller(
            "daemon-set-controller",
            vec![
                rule(READ, &[EXTENSIONS, APPS], &["daemonsets"]),
                rule(&["update"], &[EXTENSIONS, APPS], &["daemonsets/status"]),
                rule(&["update"], &[EXTENSIONS, APPS], &["daemonsets/finalizers"]),
                rule(&["list", "watch"], &[CORE], &["nodes"]),
                rule(
                    &["list", "watch", "create", "delete", "patch"],
                    &[CORE],
                    &["pods"],
                ),
                rule(&["create"], &[CORE], &["pods/binding"]),
                rule(
                    &[
                        "get", "list", "watch", "create", "delete", "update", "patch",
                    ],
                    &[APPS],
                    &["controllerrevisions"],
                ),
                events_rule(),
            ],
        ),
        controller(
            "deployment-controller",
            vec![
                rule(
                    &["get", "list", "watch", "update"],
                    &[EXTENSIONS, APPS],
                    &["deployments"],
                ),
                rule(&["update"], &[EXTENSIONS, APPS], &["deployments/status"]),
                rule(
                    &["update"],
                    &[EXTENSIONS, APPS],
                    &["deployments/finalizers"],
                ),
                rule(
                    &[
                        "get", "list", "watch", "create", "update", "patch", "delete",
                    ],
                    &[APPS, EXTENSIONS],
                    &["replicasets"],
                ),
                // The pods are relabelled when a deployment is rolled back.
                rule(&["get", "list", "watch", "update"], &[CORE], &["pods"]),
                events_rule(),
            ],
        ),
        controller(
            "disruption-controller",
            vec![
                rule(READ, &[EXTENSIONS, APPS], &["deployments"]),
                rule(READ, &[APPS, EXTENSIONS], &["replicasets"]),
                rule(READ, &[CORE], &["replicationcontrollers"]),
                rule(READ, &["policy"], &["poddisruptionbudgets"]),
                rule(READ, &[APPS], &["statefulsets"]),
                rule(&["update"], &["policy"], &["poddisruptionbudgets/status"]),
                rule(&["patch", "update"], &[CORE], &["pods/status"]),
                rule(&["get"], &["*"], &["*/scale"]),
                events_rule(),
            ],
        ),
        controller(
            "endpoint-controller",
            vec![
                rule(READ, &[CORE], &["services", "pods"]),
                rule(
                    &["get", "list", "create", "update", "delete"],
                    &[CORE],
                    &["endpoints"],
                ),
                rule(&["create"], &[CORE], &["endpoints/restricted"]),
                events_rule(),
            ],
        ),
        controller(
            "endpointslice-controller",
            vec![
                rule(READ, &[CORE], &["services", "pods", "nodes"]),
                // The owner references of the slices point at their service.
                rule(&["update"], &[CORE], &["services/finalizers"]),
                rule(
                    &["get", "list", "create", "update", "delete"],
                    &["discovery.k8s.io"],
                    &["endpointslices"],
                ),
                events_rule(),
            ],
        ),
        controller(
            "endpointslicemirroring-controller",
            vec![
                rule(READ, &[CORE], &["services", "endpoints"]),
                rule(&["update"], &[CORE], &["services/finalizers"]),
                rule(&["update"], &[CORE], &["endpoints/finalizers"]),
                rule(
                    &["get", "list", "create", "update", "delete"],
                    &["discovery.k8s.io"],
                    &["endpointslices"],
                ),
                events_rule(),
            ],
        ),
        controller(
            "expand-controller",
            vec![
                rule(
                    &["get", "list", "watch", "update", "patch"],
                    &[CORE],
                    &["persistentvolumes"],
                ),
                rule(
                    &["update", "patch"],
                    &[CORE],
                    &["persistentvolumeclaims/status"],
                ),
                rule(READ, &[CORE], &["persistentvolumeclaims"]),
                events_rule(),
                // Gluster's endpoints.
                rule(&["get"], &[CORE], &["services"]),
            ],
        ),
        controller(
            "ephemeral-volume-controller",
            vec![
                rule(READ, &[CORE], &["pods"]),
                rule(&["update"], &[CORE], &["pods/finalizers"]),
                rule(
                    &["get", "list", "watch", "create"],
                    &[CORE],
                    &["persistentvolumeclaims"],
                ),
                events_rule(),
            ],
        ),
        controller(
            "generic-garbage-collector",
            vec![
                rule(
                    &["get", "list", "watch", "patch", "update", "delete"],
                    &["*"],
                    &["*"],
                ),
                events_rule(),
            ],
        ),
        controller(
            "horizontal-pod-autoscaler",
            vec![
                rule(READ, &["autoscaling"], &["horizontalpodautoscalers"]),
                rule(
                    &["update"],
                    &["autoscaling"],
                    &["horizontalpodautoscalers/status"],
                ),
                rule(&["get", "update"], &["*"], &["*/scale"]),
                rule(&["list"], &[CORE], &["pods"]),
                // The resource metrics API.
                rule(&["list"], &["metrics.k8s.io"], &["pods"]),
                // The custom and external metrics APIs.
                rule(&["get", "list"], &["custom.metrics.k8s.io"], &["*"]),
                rule(&["get", "list"], &["external.metrics.k8s.io"], &["*"]),
                events_rule(),
            ],
        ),
        controller(
            "job-controller",
            vec![
                rule(
                    &["get", "list", "watch", "update", "patch"],
                    &[BATCH],
                    &["jobs"],
                ),
                rule(&["update"], &[BATCH], &["jobs/status"]),
                rule(&["update"], &[BATCH], &["jobs/finalizers"]),
                rule(
                    &["list", "watch", "create", "delete", "patch"],
                    &[CORE],
                    &["pods"],
                ),
                events_rule(),
            ],
        ),
        controller(
            "namespace-controller",
            vec![
                rule(
                    &["get", "list", "watch", "delete"],
                    &[CORE],
                    &["namespaces"],
                ),
                rule(
                    &["update"],
                    &[CORE],
                    &["namespaces/finalize", "namespaces/status"],
                ),
                rule(
                    &["get", "list", "delete", "deletecollection"],
                    &["*"],
                    &["*"],
                ),
            ],
        ),
        controller(
            "node-controller",
            vec![
                rule(
                    &["get", "list", "update", "delete", "patch"],
                    &[CORE],
                    &["nodes"],
                ),
                rule(&["patch", "update"], &[CORE], &["nodes/status"]),
                // Marking pods not ready when their node is.
                rule(&["update", "patch"], &[CORE], &["pods/status"]),
                rule(&["list", "get", "delete"], &[CORE], &["pods"]),
                events_rule(),
            ],
        ),
        controller(
            "persistent-volume-binder",
            vec![
                rule(
                    &["get", "list", "watch", "update", "create", "delete"],
                    &[CORE],
                    &["persistentvolumes"],
                ),
                rule(&["update"], &[CORE], &["persistentvolumes/status"]),
                rule(
                    &["get", "list", "watch", "update"],
                    &[CORE],
                    &["persistentvolumeclaims"],
                ),
                rule(&["update"], &[CORE], &["persistentvolumeclaims/status"]),
                rule(
                    &["list", "watch", "get", "create", "delete"],
                    &[CORE],
                    &["pods"],
                ),
                // Dynamic provisioning.
                rule(READ, &[STORAGE], &["storageclasses"]),
                // AWS EBS, GCE PD and Azure disks look up their node's zone.
                rule(&["list", "watch"], &[CORE], &["nodes"]),
                events_rule(),
                // Recycler events.
                rule(&["watch"], &[CORE], &["events"]),
                // Gluster's endpoints.
                rule(&["get"], &[CORE], &["services"]),
            ],
        ),
        controller(
            "pod-garbage-collector",
            vec![
                rule(&["list", "watch", "delete"], &[CORE], &["pods"]),
                rule(&["get", "list"], &[CORE], &["nodes"]),
                rule(&["patch"], &[CORE], &["pods/status"]),
            ],
        ),
        controller(
            "replicaset-controller",
            vec![
                rule(
                    &["get", "list", "watch", "update"],
                    &[APPS, EXTENSIONS],
                    &["replicasets"],
                ),
                rule(&["update"], &[APPS, EXTENSIONS], &["replicasets/status"]),
                rule(
                    &["update"],
                    &[APPS, EXTENSIONS],
                    &["replicasets/finalizers"],
                ),
                rule(
                    &["list", "watch", "patch", "create", "delete"],
                    &[CORE],
                    &["pods"],
                ),
                events_rule(),
            ],
        ),
        controller(
            "replication-controller",
            vec![
                rule(
                    &["get", "list", "watch", "update"],
                    &[CORE],
                    &["replicationcontrollers"],
                ),
                rule(&["update"], &[CORE], &["replicationcontrollers/status"]),
                rule(&["update"], &[CORE], &["replicationcontrollers/finalizers"]),
                rule(
                    &["list", "watch", "patch", "create", "delete"],
                    &[CORE],
                    &["pods"],
                ),
                events_rule(),
            ],
        ),
        controller(
            "resourcequota-controller",
            vec![
                // Quota can count any resource.
                rule(&["list", "watch"], &["*"], &["*"]),
                rule(&["update"], &[CORE], &["resourcequotas/status"]),
                events_rule(),
            ],
        ),
        controller(
            "route-controller",
            vec![
                rule(&["list", "watch"], &[CORE], &["nodes"]),
                rule(&["patch"], &[CORE], &["nodes/status"]),
                events_rule(),
            ],
        ),
        controller(
            "service-account-controller",
            vec![
                rule(&["create"], &[CORE], &["serviceaccounts"]),
                events_rule(),
            ],
        ),
        controller(
            "service-controller",
            vec![
                rule(READ, &[CORE], &["services"]),
                rule(&["patch", "update"], &[CORE], &["services/status"]),
                rule(&["list", "watch"], &[CORE], &["nodes"]),
                events_rule(),
            ],
        ),
        controller(
            "statefulset-controller",
            vec![
                rule(&["list", "watch"], &[CORE], &["pods"]),
                rule(READ, &[APPS], &["statefulsets"]),
                rule(&["update"], &[APPS], &["statefulsets/status"]),
                rule(&["update"], &[APPS], &["statefulsets/finalizers"]),
                rule(
                    &["get", "create", "delete", "update", "patch"],
                    &[CORE],
                    &["pods"],
                ),
                rule(
                    &[
                        "get", "create", "delete", "update", "patch", "list", "watch",
                    ],
                    &[APPS],
                    &["controllerrevisions"],
                ),
                rule(
                    &["get", "create", "list", "watch"],
                    &[CORE],
                    &["persistentvolumeclaims"],
                ),
                events_rule(),
                // Retention policies of volume claim templates.
                rule(&["update", "delete"], &[CORE], &["persistentvolumeclaims"]),
                rule(&["update"], &[CORE], &["pods/finalizers"]),
            ],
        ),
        controller(
            "ttl-controller",
            vec![
                rule(&["update", "patch", "list", "watch"], &[CORE], &["nodes"]),
                events_rule(),
            ],
        ),
        controller(
            "certificate-controller",
            vec![
                rule(
                    &["get", "list", "watch", "delete"],
                    &["certificates.k8s.io"],
                    &["certificatesigningrequests"],
                ),
                rule(
                    &["update"],
                    &["certificates.k8s.io"],
                    &[
                        "certificatesigningrequests/status",
                        "certificatesigningrequests/approval",
                    ],
                ),
                named_rule(
                    &["approve"],
                    &["certificates.k8s.io"],
                    &["signers"],
                    &["kubernetes.io/kube-apiserver-client-kubelet"],
                ),
                named_rule(
                    &["sign"],
                    &["certificates.k8s.io"],
                    &["signers"],
                    &[
                        "kubernetes.io/kube-apiserver-client",
                        "kubernetes.io/kube-apiserver-client-kubelet",
                        "kubernetes.io/kubelet-serving",
                        "kubernetes.io/legacy-unknown",
                    ],
                ),
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["subjectaccessreviews"],
                ),
                events_rule(),
            ],
        ),
        controller(
            "pvc-protection-controller",
            vec![
                rule(
                    &["get", "list", "watch", "update"],
                    &[CORE],
                    &["persistentvolumeclaims"],
                ),
                rule(READ, &[CORE], &["pods"]),
                events_rule(),
            ],
        ),
        controller(
            "pv-protection-controller",
            vec![
                rule(
                    &["get", "list", "watch", "update"],
                    &[CORE],
                    &["persistentvolumes"],
                ),
                events_rule(),
            ],
        ),
        controller(
            "ttl-after-finished-controller",
            vec![
                rule(&["get", "list", "watch", "delete"], &[BATCH], &["jobs"]),
                events_rule(),
            ],
        ),
        controller(
            "root-ca-cert-publisher",
            vec![
                rule(&["create", "update"], &[CORE], &["configmaps"]),
                events_rule(),
            ],
        ),
        controller(
            "validatingadmissionpolicy-status-controller",
            vec![
                rule(
                    READ,
                    &["admissionregistration.k8s.io"],
                    &["validatingadmissionpolicies"],
                ),
                rule(
                    &["get", "patch", "update"],
                    &["admissionregistration.k8s.io"],
                    &["validatingadmissionpolicies/status"],
                ),
                events_rule(),
            ],
        ),
        controller(
            "legacy-service-account-token-cleaner",
            vec![
                named_rule(
                    &["get"],
                    &[CORE],
                    &["configmaps"],
                    &["kube-apiserver-legacy-service-account-token-tracking"],
                ),
                rule(&["patch", "delete"], &[CORE], &["secrets"]),
            ],
        ),
        controller(
            "resource-claim-controller",
            vec![
                rule(READ, &[CORE], &["pods"]),
                rule(&["update"], &[CORE], &["pods/finalizers"]),
                rule(
                    &["get", "list", "watch", "create", "delete"],
                    &[RESOURCE],
                    &["resourceclaims"],
                ),
                rule(
                    &["update", "patch"],
                    &[RESOURCE],
                    &["resourceclaims", "resourceclaims/status"],
                ),
                rule(&["update", "patch"], &[CORE], &["pods/status"]),
                events_rule(),
            ],
        ),
        // SELinuxChangePolicy (on by default since 1.33).
        controller(
            "selinux-warning-controller",
            vec![
                rule(
                    READ,
                    &[CORE],
                    &["persistentvolumeclaims", "persistentvolumes", "pods"],
                ),
                rule(READ, &[STORAGE], &["csidrivers"]),
                events_rule(),
            ],
        ),
        // VolumeAttributesClass (GA in 1.34).
        controller(
            "volumeattributesclass-protection-controller",
            vec![
                rule(
                    &["list", "watch", "get"],
                    &[CORE],
                    &["persistentvolumeclaims"],
                ),
                rule(&["list", "watch", "get"], &[CORE], &["persistentvolumes"]),
                rule(
                    &["get", "list", "watch", "update"],
                    &[STORAGE],
                    &["volumeattributesclasses"],
                ),
                events_rule(),
            ],
        ),
        // MultiCIDRServiceAllocator (GA in 1.33).
        controller(
            "service-cidrs-controller",
            vec![
                rule(
                    &["get", "list", "watch", "patch", "update"],
                    &[NETWORKING],
                    &["servicecidrs"],
                ),
                rule(
                    &["patch", "update"],
                    &[NETWORKING],
                    &["servicecidrs/finalizers"],
                ),
                rule(
                    &["patch", "update"],
                    &[NETWORKING],
                    &["servicecidrs/status"],
                ),
                rule(READ, &[NETWORKING], &["ipaddresses"]),
                events_rule(),
            ],
        ),
    ]
}
