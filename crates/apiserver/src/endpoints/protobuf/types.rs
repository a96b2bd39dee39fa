//! Field tables of the supported messages: numbers from upstream's `generated.proto`, JSON names
//! from the Go `json` tags, and `ptr` for Go pointer fields (their zero values are meaningful).

use super::schema::{Message, Ty, map, ptr, rep, val};
use super::{networking, workloads};

use Ty::{Bool, Bytes, Int, IntOrString, MicroTime, Quantity, RawJson, String as Str, Time};

const fn msg(m: &'static Message) -> Ty {
    Ty::Message(m)
}

// ---- meta.k8s.io/v1 -------------------------------------------------------------------------

/// `metav1.ObjectMeta`.
pub(super) static OBJECT_META: Message = Message {
    name: "ObjectMeta",
    fields: &[
        val(1, "name", Str),
        val(2, "generateName", Str),
        val(3, "namespace", Str),
        val(4, "selfLink", Str),
        val(5, "uid", Str),
        val(6, "resourceVersion", Str),
        val(7, "generation", Int),
        val(8, "creationTimestamp", Time),
        ptr(9, "deletionTimestamp", Time),
        ptr(10, "deletionGracePeriodSeconds", Int),
        map(11, "labels", &Str),
        map(12, "annotations", &Str),
        rep(13, "ownerReferences", msg(&OWNER_REFERENCE)),
        rep(14, "finalizers", Str),
        rep(17, "managedFields", msg(&MANAGED_FIELDS_ENTRY)),
    ],
};

static OWNER_REFERENCE: Message = Message {
    name: "OwnerReference",
    fields: &[
        val(5, "apiVersion", Str),
        val(1, "kind", Str),
        val(3, "name", Str),
        val(4, "uid", Str),
        ptr(6, "controller", Bool),
        ptr(7, "blockOwnerDeletion", Bool),
    ],
};

static MANAGED_FIELDS_ENTRY: Message = Message {
    name: "ManagedFieldsEntry",
    fields: &[
        val(1, "manager", Str),
        val(2, "operation", Str),
        val(3, "apiVersion", Str),
        ptr(4, "time", Time),
        val(6, "fieldsType", Str),
        ptr(7, "fieldsV1", RawJson),
        val(8, "subresource", Str),
    ],
};

/// `metav1.DeleteOptions` (sent with the apiVersion of whichever client sends it).
pub(super) static DELETE_OPTIONS: Message = Message {
    name: "DeleteOptions",
    fields: &[
        ptr(1, "gracePeriodSeconds", Int),
        ptr(2, "preconditions", msg(&PRECONDITIONS)),
        ptr(3, "orphanDependents", Bool),
        ptr(4, "propagationPolicy", Str),
        rep(5, "dryRun", Str),
        ptr(6, "ignoreStoreReadErrorWithClusterBreakingPotential", Bool),
    ],
};

static PRECONDITIONS: Message = Message {
    name: "Preconditions",
    fields: &[ptr(1, "uid", Str), ptr(2, "resourceVersion", Str)],
};

pub(super) static LABEL_SELECTOR: Message = Message {
    name: "LabelSelector",
    fields: &[
        map(1, "matchLabels", &Str),
        rep(2, "matchExpressions", msg(&LABEL_SELECTOR_REQUIREMENT)),
    ],
};

static LABEL_SELECTOR_REQUIREMENT: Message = Message {
    name: "LabelSelectorRequirement",
    fields: &[
        val(1, "key", Str),
        val(2, "operator", Str),
        rep(3, "values", Str),
    ],
};

static CONDITION: Message = Message {
    name: "Condition",
    fields: &[
        val(1, "type", Str),
        val(2, "status", Str),
        val(3, "observedGeneration", Int),
        val(4, "lastTransitionTime", Time),
        val(5, "reason", Str),
        val(6, "message", Str),
    ],
};

// ---- core/v1 --------------------------------------------------------------------------------

/// `v1.ConfigMap`.
pub(super) static CONFIG_MAP: Message = Message {
    name: "ConfigMap",
    fields: &[
        val(1, "metadata", msg(&OBJECT_META)),
        ptr(4, "immutable", Bool),
        map(2, "data", &Str),
        map(3, "binaryData", &Bytes),
    ],
};

/// `v1.Secret`.
pub(super) static SECRET: Message = Message {
    name: "Secret",
    fields: &[
        val(1, "metadata", msg(&OBJECT_META)),
        ptr(5, "immutable", Bool),
        map(2, "data", &Bytes),
        map(4, "stringData", &Str),
        val(3, "type", Str),
    ],
};

/// `v1.Namespace`.
pub(super) static NAMESPACE: Message = Message {
    name: "Namespace",
    fields: &[
        val(1, "metadata", msg(&OBJECT_META)),
        val(2, "spec", msg(&NAMESPACE_SPEC)),
        val(3, "status", msg(&NAMESPACE_STATUS)),
    ],
};

static NAMESPACE_SPEC: Message = Message {
    name: "NamespaceSpec",
    fields: &[rep(1, "finalizers", Str)],
};

static NAMESPACE_STATUS: Message = Message {
    name: "NamespaceStatus",
    fields: &[
        val(1, "phase", Str),
        rep(2, "conditions", msg(&NAMESPACE_CONDITION)),
    ],
};

static NAMESPACE_CONDITION: Message = Message {
    name: "NamespaceCondition",
    fields: &[
        val(1, "type", Str),
        val(2, "status", Str),
        val(4, "lastTransitionTime", Time),
        val(5, "reason", Str),
        val(6, "message", Str),
    ],
};

/// `v1.ServiceAccount`.
pub(super) static SERVICE_ACCOUNT: Message = Message {
    name: "ServiceAccount",
    fields: &[
        val(1, "metadata", msg(&OBJECT_META)),
        rep(2, "secrets", msg(&OBJECT_REFERENCE)),
        rep(3, "imagePullSecrets", msg(&LOCAL_OBJECT_REFERENCE)),
        ptr(4, "automountServiceAccountToken", Bool),
    ],
};

pub(super) static OBJECT_REFERENCE: Message = Message {
    name: "ObjectReference",
    fields: &[
        val(1, "kind", Str),
        val(2, "namespace", Str),
        val(3, "name", Str),
        val(4, "uid", Str),
        val(5, "apiVersion", Str),
        val(6, "resourceVersion", Str),
        val(7, "fieldPath", Str),
    ],
};

pub(super) static LOCAL_OBJECT_REFERENCE: Message = Message {
    name: "LocalObjectReference",
    fields: &[val(1, "name", Str)],
};

/// `v1.Service`.
pub(super) static SERVICE: Message = Message {
    name: "Service",
    fields: &[
        val(1, "metadata", msg(&OBJECT_META)),
        val(2, "spec", msg(&SERVICE_SPEC)),
        val(3, "status", msg(&SERVICE_STATUS)),
    ],
};

static SERVICE_SPEC: Message = Message {
    name: "ServiceSpec",
    fields: &[
        rep(1, "ports", msg(&SERVICE_PORT)),
        map(2, "selector", &Str),
        val(3, "clusterIP", Str),
        rep(18, "clusterIPs", Str),
        val(4, "type", Str),
        rep(5, "externalIPs", Str),
        val(7, "sessionAffinity", Str),
        val(8, "loadBalancerIP", Str),
        rep(9, "loadBalancerSourceRanges", Str),
        val(10, "externalName", Str),
        val(11, "externalTrafficPolicy", Str),
        val(12, "healthCheckNodePort", Int),
        val(13, "publishNotReadyAddresses", Bool),
        ptr(14, "sessionAffinityConfig", msg(&SESSION_AFFINITY_CONFIG)),
        rep(19, "ipFamilies", Str),
        ptr(17, "ipFamilyPolicy", Str),
        ptr(20, "allocateLoadBalancerNodePorts", Bool),
        ptr(21, "loadBalancerClass", Str),
        ptr(22, "internalTrafficPolicy", Str),
        ptr(23, "trafficDistribution", Str),
    ],
};

static SERVICE_PORT: Message = Message {
    name: "ServicePort",
    fields: &[
        val(1, "name", Str),
        val(2, "protocol", Str),
        ptr(6, "appProtocol", Str),
        val(3, "port", Int),
        val(4, "targetPort", IntOrString),
        val(5, "nodePort", Int),
    ],
};

static SESSION_AFFINITY_CONFIG: Message = Message {
    name: "SessionAffinityConfig",
    fields: &[ptr(1, "clientIP", msg(&CLIENT_IP_CONFIG))],
};

static CLIENT_IP_CONFIG: Message = Message {
    name: "ClientIPConfig",
    fields: &[ptr(1, "timeoutSeconds", Int)],
};

static SERVICE_STATUS: Message = Message {
    name: "ServiceStatus",
    fields: &[
        val(1, "loadBalancer", msg(&LOAD_BALANCER_STATUS)),
        rep(2, "conditions", msg(&CONDITION)),
    ],
};

static LOAD_BALANCER_STATUS: Message = Message {
    name: "LoadBalancerStatus",
    fields: &[rep(1, "ingress", msg(&LOAD_BALANCER_INGRESS))],
};

static LOAD_BALANCER_INGRESS: Message = Message {
    name: "LoadBalancerIngress",
    fields: &[
        val(1, "ip", Str),
        val(2, "hostname", Str),
        ptr(3, "ipMode", Str),
        rep(4, "ports", msg(&PORT_STATUS)),
    ],
};

static PORT_STATUS: Message = Message {
    name: "PortStatus",
    fields: &[
        val(1, "port", Int),
        val(2, "protocol", Str),
        ptr(3, "error", Str),
    ],
};

/// `v1.ResourceQuota`.
pub(super) static RESOURCE_QUOTA: Message = Message {
    name: "ResourceQuota",
    fields: &[
        val(1, "metadata", msg(&OBJECT_META)),
        val(2, "spec", msg(&RESOURCE_QUOTA_SPEC)),
        val(3, "status", msg(&RESOURCE_QUOTA_STATUS)),
    ],
};

static RESOURCE_QUOTA_SPEC: Message = Message {
    name: "ResourceQuotaSpec",
    fields: &[
        map(1, "hard", &Quantity),
        rep(2, "scopes", Str),
        ptr(3, "scopeSelector", msg(&SCOPE_SELECTOR)),
    ],
};

static RESOURCE_QUOTA_STATUS: Message = Message {
    name: "ResourceQuotaStatus",
    fields: &[map(1, "hard", &Quantity), map(2, "used", &Quantity)],
};

static SCOPE_SELECTOR: Message = Message {
    name: "ScopeSelector",
    fields: &[rep(
        1,
        "matchExpressions",
        msg(&SCOPED_RESOURCE_SELECTOR_REQUIREMENT),
    )],
};

static SCOPED_RESOURCE_SELECTOR_REQUIREMENT: Message = Message {
    name: "ScopedResourceSelectorRequirement",
    fields: &[
        val(1, "scopeName", Str),
        val(2, "operator", Str),
        rep(3, "values", Str),
    ],
};

// ---- rbac.authorization.k8s.io/v1 -----------------------------------------------------------

/// `rbacv1.Role`.
pub(super) static ROLE: Message = Message {
    name: "Role",
    fields: &[
        val(1, "metadata", msg(&OBJECT_META)),
        rep(2, "rules", msg(&POLICY_RULE)),
    ],
};

/// `rbacv1.ClusterRole`.
pub(super) static CLUSTER_ROLE: Message = Message {
    name: "ClusterRole",
    fields: &[
        val(1, "metadata", msg(&OBJECT_META)),
        rep(2, "rules", msg(&POLICY_RULE)),
        ptr(3, "aggregationRule", msg(&AGGREGATION_RULE)),
    ],
};

/// `rbacv1.RoleBinding` and `rbacv1.ClusterRoleBinding` (same fields).
pub(super) static ROLE_BINDING: Message = Message {
    name: "RoleBinding",
    fields: &[
        val(1, "metadata", msg(&OBJECT_META)),
        rep(2, "subjects", msg(&SUBJECT)),
        val(3, "roleRef", msg(&ROLE_REF)),
    ],
};

static POLICY_RULE: Message = Message {
    name: "PolicyRule",
    fields: &[
        rep(1, "verbs", Str),
        rep(2, "apiGroups", Str),
        rep(3, "resources", Str),
        rep(4, "resourceNames", Str),
        rep(5, "nonResourceURLs", Str),
    ],
};

static AGGREGATION_RULE: Message = Message {
    name: "AggregationRule",
    fields: &[rep(1, "clusterRoleSelectors", msg(&LABEL_SELECTOR))],
};

static SUBJECT: Message = Message {
    name: "Subject",
    fields: &[
        val(1, "kind", Str),
        val(2, "apiGroup", Str),
        val(3, "name", Str),
        val(4, "namespace", Str),
    ],
};

static ROLE_REF: Message = Message {
    name: "RoleRef",
    fields: &[
        val(1, "apiGroup", Str),
        val(2, "kind", Str),
        val(3, "name", Str),
    ],
};

// ---- scheduling.k8s.io/v1, policy/v1, coordination.k8s.io/v1 --------------------------------

/// `schedulingv1.PriorityClass`.
pub(super) static PRIORITY_CLASS: Message = Message {
    name: "PriorityClass",
    fields: &[
        val(1, "metadata", msg(&OBJECT_META)),
        // `value` has no omitempty: a JSON client sends `"value": 0`, so keep the zero.
        ptr(2, "value", Int),
        val(3, "globalDefault", Bool),
        val(4, "description", Str),
        ptr(5, "preemptionPolicy", Str),
    ],
};

/// `policyv1.PodDisruptionBudget`.
pub(super) static POD_DISRUPTION_BUDGET: Message = Message {
    name: "PodDisruptionBudget",
    fields: &[
        val(1, "metadata", msg(&OBJECT_META)),
        val(2, "spec", msg(&PDB_SPEC)),
        val(3, "status", msg(&PDB_STATUS)),
    ],
};

static PDB_SPEC: Message = Message {
    name: "PodDisruptionBudgetSpec",
    fields: &[
        ptr(1, "minAvailable", IntOrString),
        ptr(2, "selector", msg(&LABEL_SELECTOR)),
        ptr(3, "maxUnavailable", IntOrString),
        ptr(4, "unhealthyPodEvictionPolicy", Str),
    ],
};

static PDB_STATUS: Message = Message {
    name: "PodDisruptionBudgetStatus",
    fields: &[
        val(1, "observedGeneration", Int),
        map(2, "disruptedPods", &Time),
        val(3, "disruptionsAllowed", Int),
        val(4, "currentHealthy", Int),
        val(5, "desiredHealthy", Int),
        val(6, "expectedPods", Int),
        rep(7, "conditions", msg(&CONDITION)),
    ],
};

/// `policyv1.Eviction` (`kubectl drain`).
pub(super) static EVICTION: Message = Message {
    name: "Eviction",
    fields: &[
        val(1, "metadata", msg(&OBJECT_META)),
        ptr(2, "deleteOptions", msg(&DELETE_OPTIONS)),
    ],
};

/// `coordinationv1.Lease`.
pub(super) static LEASE: Message = Message {
    name: "Lease",
    fields: &[
        val(1, "metadata", msg(&OBJECT_META)),
        val(2, "spec", msg(&LEASE_SPEC)),
    ],
};

static LEASE_SPEC: Message = Message {
    name: "LeaseSpec",
    fields: &[
        ptr(1, "holderIdentity", Str),
        ptr(2, "leaseDurationSeconds", Int),
        ptr(3, "acquireTime", MicroTime),
        ptr(4, "renewTime", MicroTime),
        ptr(5, "leaseTransitions", Int),
        ptr(6, "strategy", Str),
        ptr(7, "preferredHolder", Str),
    ],
};

/// The kinds whose bodies are decoded: `(apiVersion, kind, message)`.
pub(super) static KINDS: &[(&str, &str, &Message)] = &[
    ("v1", "ConfigMap", &CONFIG_MAP),
    ("v1", "Secret", &SECRET),
    ("v1", "Namespace", &NAMESPACE),
    ("v1", "ServiceAccount", &SERVICE_ACCOUNT),
    ("v1", "Service", &SERVICE),
    ("v1", "ResourceQuota", &RESOURCE_QUOTA),
    ("rbac.authorization.k8s.io/v1", "Role", &ROLE),
    ("rbac.authorization.k8s.io/v1", "ClusterRole", &CLUSTER_ROLE),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", &ROLE_BINDING),
    (
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        &ROLE_BINDING,
    ),
    ("scheduling.k8s.io/v1", "PriorityClass", &PRIORITY_CLASS),
    ("policy/v1", "PodDisruptionBudget", &POD_DISRUPTION_BUDGET),
    ("policy/v1", "Eviction", &EVICTION),
    ("coordination.k8s.io/v1", "Lease", &LEASE),
    ("apps/v1", "Deployment", &workloads::DEPLOYMENT),
    ("batch/v1", "Job", &workloads::JOB),
    ("batch/v1", "CronJob", &workloads::CRON_JOB),
    ("networking.k8s.io/v1", "Ingress", &networking::INGRESS),
];
