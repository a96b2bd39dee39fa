//! The Kubernetes schema extensions k8s-openapi's schemas lack, encoded by the project: patch
//! strategies and merge keys (which also drive strategic merge patch), list types and map keys,
//! map types, and the group-version-kind of each kind.
//!
//! The table restates the markers of the upstream Go types (`patchStrategy`, `patchMergeKey`,
//! `+listType`, `+listMapKey`, `+mapType`/`+structType`) for the built-in types this server
//! serves.

use serde_json::{Map, Value, json};

/// The extensions of one property of one definition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldExtensions {
    /// The definition, e.g. `io.k8s.api.core.v1.PodSpec`.
    pub definition: &'static str,
    /// The property, e.g. `containers`.
    pub property: &'static str,
    /// `x-kubernetes-patch-strategy` (`merge`, `retainKeys`, `merge,retainKeys`, `replace`).
    pub patch_strategy: Option<&'static str>,
    /// `x-kubernetes-patch-merge-key`.
    pub patch_merge_key: Option<&'static str>,
    /// `x-kubernetes-list-type` (`atomic`, `set`, `map`).
    pub list_type: Option<&'static str>,
    /// `x-kubernetes-list-map-keys` (with list type `map`).
    pub list_map_keys: &'static [&'static str],
}

/// A list merged by key under strategic merge patch and a `map` list for apply.
const fn merge_map(
    definition: &'static str,
    property: &'static str,
    merge_key: &'static str,
    map_keys: &'static [&'static str],
) -> FieldExtensions {
    FieldExtensions {
        definition,
        property,
        patch_strategy: Some("merge"),
        patch_merge_key: Some(merge_key),
        list_type: Some("map"),
        list_map_keys: map_keys,
    }
}

/// Like [`merge_map`] with strategy `merge,retainKeys` (volumes and similar unions).
const fn merge_retain_map(
    definition: &'static str,
    property: &'static str,
    merge_key: &'static str,
    map_keys: &'static [&'static str],
) -> FieldExtensions {
    FieldExtensions {
        patch_strategy: Some("merge,retainKeys"),
        ..merge_map(definition, property, merge_key, map_keys)
    }
}

/// A list with only a list type.
const fn list(
    definition: &'static str,
    property: &'static str,
    list_type: &'static str,
) -> FieldExtensions {
    FieldExtensions {
        definition,
        property,
        patch_strategy: None,
        patch_merge_key: None,
        list_type: Some(list_type),
        list_map_keys: &[],
    }
}

/// A list merged by key under strategic merge patch but atomic for apply.
const fn merge_atomic(
    definition: &'static str,
    property: &'static str,
    merge_key: &'static str,
) -> FieldExtensions {
    FieldExtensions {
        definition,
        property,
        patch_strategy: Some("merge"),
        patch_merge_key: Some(merge_key),
        list_type: Some("atomic"),
        list_map_keys: &[],
    }
}

/// A list of primitives merged as a set.
const fn merge_set(definition: &'static str, property: &'static str) -> FieldExtensions {
    FieldExtensions {
        definition,
        property,
        patch_strategy: Some("merge"),
        patch_merge_key: None,
        list_type: Some("set"),
        list_map_keys: &[],
    }
}

macro_rules! core {
    ($name:literal) => {
        concat!("io.k8s.api.core.v1.", $name)
    };
}

/// Conditions lists: merged by `type`, a map keyed by `type`.
macro_rules! conditions {
    ($def:expr) => {
        merge_map($def, "conditions", "type", &["type"])
    };
}

/// The per-field extensions of the built-in types.
pub const FIELD_EXTENSIONS: &[FieldExtensions] = &[
    // metav1.ObjectMeta
    merge_set(
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "finalizers",
    ),
    merge_map(
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "ownerReferences",
        "uid",
        &["uid"],
    ),
    list(
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "managedFields",
        "atomic",
    ),
    list(
        "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector",
        "matchExpressions",
        "atomic",
    ),
    list(
        "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelectorRequirement",
        "values",
        "atomic",
    ),
    // core/v1 PodSpec
    merge_retain_map(core!("PodSpec"), "volumes", "name", &["name"]),
    merge_map(core!("PodSpec"), "initContainers", "name", &["name"]),
    merge_map(core!("PodSpec"), "containers", "name", &["name"]),
    merge_map(core!("PodSpec"), "ephemeralContainers", "name", &["name"]),
    merge_map(core!("PodSpec"), "imagePullSecrets", "name", &["name"]),
    list(core!("PodSpec"), "tolerations", "atomic"),
    merge_map(core!("PodSpec"), "hostAliases", "ip", &["ip"]),
    merge_map(
        core!("PodSpec"),
        "topologySpreadConstraints",
        "topologyKey",
        &["topologyKey", "whenUnsatisfiable"],
    ),
    list(core!("PodSpec"), "readinessGates", "atomic"),
    merge_map(core!("PodSpec"), "schedulingGates", "name", &["name"]),
    merge_retain_map(core!("PodSpec"), "resourceClaims", "name", &["name"]),
    // core/v1 Container and EphemeralContainer
    merge_map(
        core!("Container"),
        "ports",
        "containerPort",
        &["containerPort", "protocol"],
    ),
    merge_map(core!("Container"), "env", "name", &["name"]),
    list(core!("Container"), "envFrom", "atomic"),
    merge_map(
        core!("Container"),
        "volumeMounts",
        "mountPath",
        &["mountPath"],
    ),
    merge_map(
        core!("Container"),
        "volumeDevices",
        "devicePath",
        &["devicePath"],
    ),
    list(core!("Container"), "command", "atomic"),
    list(core!("Container"), "args", "atomic"),
    list(core!("Container"), "resizePolicy", "atomic"),
    merge_map(
        core!("EphemeralContainer"),
        "ports",
        "containerPort",
        &["containerPort", "protocol"],
    ),
    merge_map(core!("EphemeralContainer"), "env", "name", &["name"]),
    list(core!("EphemeralContainer"), "envFrom", "atomic"),
    merge_map(
        core!("EphemeralContainer"),
        "volumeMounts",
        "mountPath",
        &["mountPath"],
    ),
    merge_map(
        core!("EphemeralContainer"),
        "volumeDevices",
        "devicePath",
        &["devicePath"],
    ),
    list(core!("EphemeralContainer"), "command", "atomic"),
    list(core!("EphemeralContainer"), "args", "atomic"),
    list(core!("PodSecurityContext"), "supplementalGroups", "atomic"),
    list(core!("PodSecurityContext"), "sysctls", "atomic"),
    list(core!("Capabilities"), "add", "atomic"),
    list(core!("Capabilities"), "drop", "atomic"),
    list(core!("NodeSelector"), "nodeSelectorTerms", "atomic"),
    list(core!("NodeSelectorTerm"), "matchExpressions", "atomic"),
    list(core!("NodeSelectorTerm"), "matchFields", "atomic"),
    list(core!("ConfigMapVolumeSource"), "items", "atomic"),
    list(core!("SecretVolumeSource"), "items", "atomic"),
    list(core!("ProjectedVolumeSource"), "sources", "atomic"),
    // core/v1 PodStatus
    conditions!(core!("PodStatus")),
    merge_map(core!("PodStatus"), "podIPs", "ip", &["ip"]),
    merge_atomic(core!("PodStatus"), "hostIPs", "ip"),
    merge_retain_map(
        core!("PodStatus"),
        "resourceClaimStatuses",
        "name",
        &["name"],
    ),
    list(core!("PodStatus"), "containerStatuses", "atomic"),
    list(core!("PodStatus"), "initContainerStatuses", "atomic"),
    list(core!("PodStatus"), "ephemeralContainerStatuses", "atomic"),
    // core/v1 Service
    merge_map(core!("ServiceSpec"), "ports", "port", &["port", "protocol"]),
    list(core!("ServiceSpec"), "externalIPs", "atomic"),
    list(core!("ServiceSpec"), "clusterIPs", "atomic"),
    list(core!("ServiceSpec"), "ipFamilies", "atomic"),
    list(core!("ServiceSpec"), "loadBalancerSourceRanges", "atomic"),
    conditions!(core!("ServiceStatus")),
    list(core!("LoadBalancerStatus"), "ingress", "atomic"),
    // core/v1 other kinds
    merge_map(core!("ServiceAccount"), "secrets", "name", &["name"]),
    list(core!("ServiceAccount"), "imagePullSecrets", "atomic"),
    list(core!("Endpoints"), "subsets", "atomic"),
    list(core!("EndpointSubset"), "addresses", "atomic"),
    list(core!("EndpointSubset"), "notReadyAddresses", "atomic"),
    list(core!("EndpointSubset"), "ports", "atomic"),
    merge_set(core!("NodeSpec"), "podCIDRs"),
    list(core!("NodeSpec"), "taints", "atomic"),
    conditions!(core!("NodeStatus")),
    merge_map(core!("NodeStatus"), "addresses", "type", &["type"]),
    list(core!("NodeStatus"), "images", "atomic"),
    list(core!("NodeStatus"), "volumesInUse", "atomic"),
    list(core!("NodeStatus"), "volumesAttached", "atomic"),
    list(core!("NamespaceSpec"), "finalizers", "atomic"),
    conditions!(core!("NamespaceStatus")),
    list(core!("PersistentVolumeClaimSpec"), "accessModes", "atomic"),
    conditions!(core!("PersistentVolumeClaimStatus")),
    list(
        core!("PersistentVolumeClaimStatus"),
        "accessModes",
        "atomic",
    ),
    list(core!("PersistentVolumeSpec"), "accessModes", "atomic"),
    list(core!("PersistentVolumeSpec"), "mountOptions", "atomic"),
    list(core!("LimitRangeSpec"), "limits", "atomic"),
    list(core!("ResourceQuotaSpec"), "scopes", "atomic"),
    conditions!(core!("ReplicationControllerStatus")),
    // apps/v1
    conditions!("io.k8s.api.apps.v1.DeploymentStatus"),
    conditions!("io.k8s.api.apps.v1.ReplicaSetStatus"),
    conditions!("io.k8s.api.apps.v1.StatefulSetStatus"),
    conditions!("io.k8s.api.apps.v1.DaemonSetStatus"),
    list(
        "io.k8s.api.apps.v1.StatefulSetSpec",
        "volumeClaimTemplates",
        "atomic",
    ),
    // batch/v1
    merge_atomic("io.k8s.api.batch.v1.JobStatus", "conditions", "type"),
    list("io.k8s.api.batch.v1.CronJobStatus", "active", "atomic"),
    // policy/v1
    conditions!("io.k8s.api.policy.v1.PodDisruptionBudgetStatus"),
    // networking.k8s.io/v1
    list("io.k8s.api.networking.v1.IngressSpec", "rules", "atomic"),
    list("io.k8s.api.networking.v1.IngressSpec", "tls", "atomic"),
    list(
        "io.k8s.api.networking.v1.HTTPIngressRuleValue",
        "paths",
        "atomic",
    ),
    list(
        "io.k8s.api.networking.v1.NetworkPolicySpec",
        "ingress",
        "atomic",
    ),
    list(
        "io.k8s.api.networking.v1.NetworkPolicySpec",
        "egress",
        "atomic",
    ),
    list(
        "io.k8s.api.networking.v1.NetworkPolicySpec",
        "policyTypes",
        "atomic",
    ),
    // discovery.k8s.io/v1
    list(
        "io.k8s.api.discovery.v1.EndpointSlice",
        "endpoints",
        "atomic",
    ),
    list("io.k8s.api.discovery.v1.EndpointSlice", "ports", "atomic"),
    list("io.k8s.api.discovery.v1.Endpoint", "addresses", "set"),
    // admissionregistration.k8s.io/v1 webhook configurations
    merge_map(
        "io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration",
        "webhooks",
        "name",
        &["name"],
    ),
    merge_map(
        "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration",
        "webhooks",
        "name",
        &["name"],
    ),
    list(
        "io.k8s.api.admissionregistration.v1.MutatingWebhook",
        "rules",
        "atomic",
    ),
    list(
        "io.k8s.api.admissionregistration.v1.MutatingWebhook",
        "admissionReviewVersions",
        "atomic",
    ),
    merge_map(
        "io.k8s.api.admissionregistration.v1.MutatingWebhook",
        "matchConditions",
        "name",
        &["name"],
    ),
    list(
        "io.k8s.api.admissionregistration.v1.ValidatingWebhook",
        "rules",
        "atomic",
    ),
    list(
        "io.k8s.api.admissionregistration.v1.ValidatingWebhook",
        "admissionReviewVersions",
        "atomic",
    ),
    merge_map(
        "io.k8s.api.admissionregistration.v1.ValidatingWebhook",
        "matchConditions",
        "name",
        &["name"],
    ),
    list(
        "io.k8s.api.admissionregistration.v1.RuleWithOperations",
        "operations",
        "atomic",
    ),
    list(
        "io.k8s.api.admissionregistration.v1.RuleWithOperations",
        "apiGroups",
        "atomic",
    ),
    list(
        "io.k8s.api.admissionregistration.v1.RuleWithOperations",
        "apiVersions",
        "atomic",
    ),
    list(
        "io.k8s.api.admissionregistration.v1.RuleWithOperations",
        "resources",
        "atomic",
    ),
    // rbac.authorization.k8s.io/v1
    list("io.k8s.api.rbac.v1.Role", "rules", "atomic"),
    list("io.k8s.api.rbac.v1.ClusterRole", "rules", "atomic"),
    list("io.k8s.api.rbac.v1.RoleBinding", "subjects", "atomic"),
    list(
        "io.k8s.api.rbac.v1.ClusterRoleBinding",
        "subjects",
        "atomic",
    ),
    list("io.k8s.api.rbac.v1.PolicyRule", "verbs", "atomic"),
    list("io.k8s.api.rbac.v1.PolicyRule", "apiGroups", "atomic"),
    list("io.k8s.api.rbac.v1.PolicyRule", "resources", "atomic"),
    list("io.k8s.api.rbac.v1.PolicyRule", "resourceNames", "atomic"),
    // storage.k8s.io/v1
    list(
        "io.k8s.api.storage.v1.StorageClass",
        "mountOptions",
        "atomic",
    ),
    list(
        "io.k8s.api.storage.v1.StorageClass",
        "allowedTopologies",
        "atomic",
    ),
    // apiextensions.k8s.io/v1
    list(
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionSpec",
        "versions",
        "atomic",
    ),
    merge_map(
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionStatus",
        "conditions",
        "type",
        &["type"],
    ),
];

/// A property's OpenAPI `default` (upstream's `+default=` marker), as JSON text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldDefault {
    /// The definition, e.g. `io.k8s.api.core.v1.ServicePort`.
    pub definition: &'static str,
    /// The property, e.g. `protocol`.
    pub property: &'static str,
    /// The default as JSON text, e.g. `"TCP"`.
    pub default: &'static str,
}

/// The defaults of key fields of `map` lists. Server-side apply computes an item's key with
/// them when the applied item omits the field (structured-merge-diff's key defaults), so that
/// `ports: [{port: 80}]` is the same item as the live, defaulted `{port: 80, protocol: TCP}`.
pub const KEY_FIELD_DEFAULTS: &[FieldDefault] = &[
    FieldDefault {
        definition: core!("ContainerPort"),
        property: "protocol",
        default: r#""TCP""#,
    },
    FieldDefault {
        definition: core!("ServicePort"),
        property: "protocol",
        default: r#""TCP""#,
    },
];

/// Definitions upstream marks `x-kubernetes-map-type: atomic` (`+structType=atomic` /
/// `+mapType=atomic`), replaced as a whole by apply.
pub const ATOMIC_STRUCTS: &[&str] = &[
    "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector",
    "io.k8s.api.core.v1.ObjectReference",
    "io.k8s.api.core.v1.LocalObjectReference",
    "io.k8s.api.core.v1.ConfigMapKeySelector",
    "io.k8s.api.core.v1.SecretKeySelector",
    "io.k8s.api.core.v1.ObjectFieldSelector",
    "io.k8s.api.core.v1.ResourceFieldSelector",
    "io.k8s.api.core.v1.NodeSelector",
    "io.k8s.api.core.v1.NodeSelectorTerm",
    "io.k8s.api.core.v1.TopologySelectorTerm",
];

/// The extensions recorded for `definition.property`.
#[cfg(test)]
pub fn field_extensions(definition: &str, property: &str) -> Option<&'static FieldExtensions> {
    FIELD_EXTENSIONS
        .iter()
        .find(|f| f.definition == definition && f.property == property)
}

/// Writes the table's extensions into the definitions that exist in `definitions`.
pub fn apply_field_extensions(definitions: &mut Map<String, Value>) {
    for field in FIELD_EXTENSIONS {
        let Some(property) = definitions
            .get_mut(field.definition)
            .and_then(|d| d.get_mut("properties"))
            .and_then(|p| p.get_mut(field.property))
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        if let Some(strategy) = field.patch_strategy {
            property.insert("x-kubernetes-patch-strategy".into(), json!(strategy));
        }
        if let Some(key) = field.patch_merge_key {
            property.insert("x-kubernetes-patch-merge-key".into(), json!(key));
        }
        if let Some(list_type) = field.list_type {
            property.insert("x-kubernetes-list-type".into(), json!(list_type));
        }
        if !field.list_map_keys.is_empty() {
            property.insert(
                "x-kubernetes-list-map-keys".into(),
                json!(field.list_map_keys),
            );
        }
    }
    for field in KEY_FIELD_DEFAULTS {
        let Some(property) = definitions
            .get_mut(field.definition)
            .and_then(|d| d.get_mut("properties"))
            .and_then(|p| p.get_mut(field.property))
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        if let Ok(default) = serde_json::from_str::<Value>(field.default) {
            property.insert("default".into(), default);
        }
    }
    for name in ATOMIC_STRUCTS {
        if let Some(def) = definitions.get_mut(*name).and_then(Value::as_object_mut) {
            def.insert("x-kubernetes-map-type".into(), json!("atomic"));
        }
    }
}

/// Appends `{group, kind, version}` to a definition's `x-kubernetes-group-version-kind` list
/// (once).
pub fn add_group_version_kind(definition: &mut Value, group: &str, version: &str, kind: &str) {
    let Some(obj) = definition.as_object_mut() else {
        return;
    };
    let gvk = json!({ "group": group, "kind": kind, "version": version });
    let entry = obj
        .entry("x-kubernetes-group-version-kind")
        .or_insert_with(|| json!([]));
    if let Some(list) = entry.as_array_mut()
        && !list.contains(&gvk)
    {
        list.push(gvk);
    }
}
