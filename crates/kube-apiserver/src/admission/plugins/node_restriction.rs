//! NodeRestriction (upstream `plugin/pkg/admission/noderestriction`): a kubelet
//! (`system:node:<name>` in `system:nodes`) may only create mirror pods bound to itself,
//! delete, evict and update the status of its own pods, modify its own Node (no taints, no
//! labels outside the kubelet's own set), use its own lease and CSINode, request tokens for
//! pods bound to it, create resource slices for itself and node CSRs for its own name.

use std::collections::BTreeSet;
use std::sync::Arc;

use apiserver::admission::{Attributes, Operation, Plugin, forbidden};
use apiserver::registry::informer::Informer;
use apiserver::request::UserInfo;
use apiserver::status::ApiError;
use async_trait::async_trait;
use serde_json::{Map, Value};

use super::certificates::{
    KUBE_APISERVER_CLIENT_KUBELET_SIGNER, KUBELET_SERVING_SIGNER, csr_subject,
};
use super::pods::{
    MIRROR_POD_ANNOTATION, is_mirror_pod, references_configmaps, visit_secret_names,
};
use crate::admission::PluginContext;
use crate::apis::json::{array_at, get, str_at};

/// The plugin's name.
pub const NAME: &str = "NodeRestriction";

const NODE_USER_PREFIX: &str = "system:node:";
const NODES_GROUP: &str = "system:nodes";
const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";
/// Labels no kubelet may set: they steer workloads to nodes the administrator chose.
const NODE_RESTRICTION_LABEL_DOMAIN: &str = "node-restriction.kubernetes.io";
/// The kubernetes.io labels a kubelet sets on its Node itself.
const KUBELET_LABELS: [&str; 11] = [
    "kubernetes.io/hostname",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type",
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
];
/// Label domains (and their subdomains) a kubelet may use freely.
const KUBELET_LABEL_DOMAINS: [&str; 2] = ["kubelet.kubernetes.io", "node.kubernetes.io"];

/// The NodeRestriction plugin.
pub struct NodeRestriction {
    pods: Informer,
    nodes: Informer,
}

/// Builds the plugin over the pod and node informers.
pub fn new(ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    let pods = ctx
        .informers
        .informer("", "pods")
        .ok_or("NodeRestriction needs the pods resource")?;
    let nodes = ctx
        .informers
        .informer("", "nodes")
        .ok_or("NodeRestriction needs the nodes resource")?;
    Ok(Arc::new(NodeRestriction { pods, nodes }))
}

/// The node a user is (upstream `NodeIdentity`): `Some("")` for a member of `system:nodes`
/// named `system:node:` with nothing after it.
fn node_identity(user: &UserInfo) -> Option<&str> {
    let name = user.name.strip_prefix(NODE_USER_PREFIX)?;
    user.groups.iter().any(|g| g == NODES_GROUP).then_some(name)
}

fn label_domain(key: &str) -> &str {
    key.split_once('/').map(|(d, _)| d).unwrap_or_default()
}

fn in_domain(domain: &str, parent: &str) -> bool {
    domain == parent
        || domain
            .strip_suffix(parent)
            .is_some_and(|d| d.ends_with('.'))
}

fn is_kubernetes_label(key: &str) -> bool {
    let domain = label_domain(key);
    in_domain(domain, "kubernetes.io") || in_domain(domain, "k8s.io")
}

fn is_kubelet_label(key: &str) -> bool {
    KUBELET_LABELS.contains(&key)
        || KUBELET_LABEL_DOMAINS
            .iter()
            .any(|d| in_domain(label_domain(key), d))
}

fn labels(obj: Option<&Value>) -> Map<String, Value> {
    obj.and_then(|o| get(o, "metadata.labels"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// Label keys added, removed or changed between `new` and `old`.
fn modified_labels(new: &Map<String, Value>, old: &Map<String, Value>) -> BTreeSet<String> {
    let changed = |a: &Map<String, Value>, b: &Map<String, Value>| {
        a.iter()
            .filter(|(k, v)| b.get(*k) != Some(*v))
            .map(|(k, _)| k.clone())
            .collect::<Vec<_>>()
    };
    changed(new, old)
        .into_iter()
        .chain(changed(old, new))
        .collect()
}

/// Of the modified labels, those a kubelet may not touch (sorted).
fn forbidden_labels(modified: &BTreeSet<String>) -> Vec<String> {
    modified
        .iter()
        .filter(|key| {
            in_domain(label_domain(key), NODE_RESTRICTION_LABEL_DOMAIN)
                || (is_kubernetes_label(key) && !is_kubelet_label(key))
        })
        .cloned()
        .collect()
}

fn not_found(resource: &str, name: &str) -> ApiError {
    ApiError::not_found("", resource, name)
}

impl NodeRestriction {
    fn pod(&self, namespace: &str, name: &str) -> Result<Arc<Value>, ApiError> {
        self.pods
            .get(namespace, name)
            .ok_or_else(|| not_found("pods", name))
    }

    fn admit_pod(&self, node: &str, attrs: &Attributes) -> Result<(), ApiError> {
        match attrs.operation {
            Operation::Create => self.admit_pod_create(node, attrs),
            Operation::Delete => {
                let pod = self.pod(&attrs.namespace, &attrs.name)?;
                if str_at(&pod, "spec.nodeName") != Some(node) {
                    return Err(forbidden(
                        attrs,
                        &format!(
                            "node {node:?} can only delete pods with spec.nodeName set to itself"
                        ),
                    ));
                }
                Ok(())
            }
            op => Err(forbidden(
                attrs,
                &format!(
                    "unexpected operation {:?}, node {node:?} can only create and delete mirror pods",
                    op.as_str()
                ),
            )),
        }
    }

    fn admit_pod_create(&self, node: &str, attrs: &Attributes) -> Result<(), ApiError> {
        let Some(pod) = attrs.object.as_ref() else {
            return Err(forbidden(attrs, "unexpected type <nil>"));
        };
        if !is_mirror_pod(pod) {
            return Err(forbidden(
                attrs,
                &format!(
                    "pod does not have {MIRROR_POD_ANNOTATION:?} annotation, node {node:?} can only create mirror pods"
                ),
            ));
        }
        if str_at(pod, "spec.nodeName").unwrap_or_default() != node {
            return Err(forbidden(
                attrs,
                &format!("node {node:?} can only create pods with spec.nodeName set to itself"),
            ));
        }
        let owners = array_at(pod, "metadata.ownerReferences");
        let owner = match owners {
            [owner] => owner,
            [] => {
                return Err(forbidden(
                    attrs,
                    &format!(
                        "node {node:?} can only create pods with an owner reference set to itself"
                    ),
                ));
            }
            _ => {
                return Err(forbidden(
                    attrs,
                    &format!(
                        "node {node:?} can only create pods with a single owner reference set to itself"
                    ),
                ));
            }
        };
        if str_at(owner, "apiVersion") != Some("v1")
            || str_at(owner, "kind") != Some("Node")
            || str_at(owner, "name") != Some(node)
        {
            return Err(forbidden(
                attrs,
                &format!(
                    "node {node:?} can only create pods with an owner reference set to itself"
                ),
            ));
        }
        if get(owner, "controller").and_then(Value::as_bool) != Some(true) {
            return Err(forbidden(
                attrs,
                &format!(
                    "node {node:?} can only create pods with a controller owner reference set to itself"
                ),
            ));
        }
        if get(owner, "blockOwnerDeletion").and_then(Value::as_bool) == Some(true) {
            return Err(forbidden(
                attrs,
                &format!("node {node:?} must not set blockOwnerDeletion on an owner reference"),
            ));
        }
        let registered = self
            .nodes
            .get("", node)
            .ok_or_else(|| not_found("nodes", node))?;
        let uid = str_at(&registered, "metadata.uid").unwrap_or_default();
        let owner_uid = str_at(owner, "uid").unwrap_or_default();
        if owner_uid != uid {
            return Err(forbidden(
                attrs,
                &format!("node {node} UID mismatch: expected {owner_uid} got {uid}"),
            ));
        }
        if str_at(pod, "spec.serviceAccountName").is_some_and(|s| !s.is_empty()) {
            return Err(forbidden(
                attrs,
                &format!("node {node:?} can not create pods that reference a service account"),
            ));
        }
        let mut has_secrets = false;
        visit_secret_names(pod, &mut |_| {
            has_secrets = true;
            false
        });
        if has_secrets {
            return Err(forbidden(
                attrs,
                &format!("node {node:?} can not create pods that reference secrets"),
            ));
        }
        if references_configmaps(pod) {
            return Err(forbidden(
                attrs,
                &format!("node {node:?} can not create pods that reference configmaps"),
            ));
        }
        let volumes = array_at(pod, "spec.volumes");
        if volumes.iter().any(|v| {
            array_at(v, "projected.sources")
                .iter()
                .any(|s| get(s, "clusterTrustBundle").is_some_and(|b| !b.is_null()))
        }) {
            return Err(forbidden(
                attrs,
                &format!("node {node:?} can not create pods that reference clustertrustbundles"),
            ));
        }
        if volumes
            .iter()
            .any(|v| get(v, "persistentVolumeClaim").is_some_and(|c| !c.is_null()))
        {
            return Err(forbidden(
                attrs,
                &format!("node {node:?} can not create pods that reference persistentvolumeclaims"),
            ));
        }
        Ok(())
    }

    fn admit_pod_status(&self, node: &str, attrs: &Attributes) -> Result<(), ApiError> {
        if attrs.operation != Operation::Update {
            return Err(forbidden(
                attrs,
                &format!("unexpected operation {:?}", attrs.operation.as_str()),
            ));
        }
        let old = attrs.old_object.as_ref();
        if old.and_then(|o| str_at(o, "spec.nodeName")) != Some(node) {
            return Err(forbidden(
                attrs,
                &format!(
                    "node {node:?} can only update pod status for pods with spec.nodeName set to itself"
                ),
            ));
        }
        if labels(attrs.object.as_ref()) != labels(old) {
            return Err(forbidden(
                attrs,
                &format!("node {node:?} cannot update labels through pod status"),
            ));
        }
        let claims = |o: Option<&Value>| {
            o.and_then(|o| get(o, "status.resourceClaimStatuses"))
                .cloned()
                .filter(|v| !v.is_null())
                .unwrap_or(Value::Array(Vec::new()))
        };
        if claims(attrs.object.as_ref()) != claims(old) {
            return Err(forbidden(
                attrs,
                &format!("node {node:?} cannot update resource claim statues"),
            ));
        }
        Ok(())
    }

    fn admit_pod_eviction(&self, node: &str, attrs: &Attributes) -> Result<(), ApiError> {
        if attrs.operation != Operation::Create {
            return Err(forbidden(
                attrs,
                &format!("unexpected operation {}", attrs.operation.as_str()),
            ));
        }
        let name = if attrs.name.is_empty() {
            attrs
                .object
                .as_ref()
                .and_then(|e| str_at(e, "metadata.name"))
                .unwrap_or_default()
        } else {
            attrs.name.as_str()
        };
        if name.is_empty() {
            return Err(forbidden(
                attrs,
                "could not determine pod from request data",
            ));
        }
        let pod = self.pod(&attrs.namespace, name)?;
        if str_at(&pod, "spec.nodeName") != Some(node) {
            return Err(forbidden(
                attrs,
                &format!("node {node} can only evict pods with spec.nodeName set to itself"),
            ));
        }
        Ok(())
    }

    fn admit_service_account(&self, node: &str, attrs: &Attributes) -> Result<(), ApiError> {
        if attrs.operation != Operation::Create || attrs.subresource != "token" {
            return Ok(());
        }
        let reference = attrs
            .object
            .as_ref()
            .and_then(|tr| get(tr, "spec.boundObjectRef"))
            .filter(|r| !r.is_null());
        let Some(reference) = reference.filter(|r| {
            str_at(r, "apiVersion") == Some("v1")
                && str_at(r, "kind") == Some("Pod")
                && str_at(r, "name").is_some_and(|n| !n.is_empty())
        }) else {
            return Err(forbidden(attrs, "node requested token not bound to a pod"));
        };
        let uid = str_at(reference, "uid").unwrap_or_default();
        if uid.is_empty() {
            return Err(forbidden(
                attrs,
                "node requested token with a pod binding without a uid",
            ));
        }
        let pod = self.pod(
            &attrs.namespace,
            str_at(reference, "name").unwrap_or_default(),
        )?;
        if str_at(&pod, "metadata.uid") != Some(uid) {
            return Err(forbidden(
                attrs,
                &format!(
                    "the UID in the bound object reference ({uid}) does not match the UID in record. The object might have been deleted and then recreated"
                ),
            ));
        }
        if str_at(&pod, "spec.nodeName") != Some(node) {
            return Err(forbidden(
                attrs,
                "node requested token bound to a pod scheduled on a different node",
            ));
        }
        Ok(())
    }
}

fn config_source(node: Option<&Value>) -> Option<&Value> {
    node.and_then(|o| get(o, "spec.configSource"))
        .filter(|c| !c.is_null())
}

fn admit_node(node: &str, attrs: &Attributes) -> Result<(), ApiError> {
    if attrs.name != node {
        return Err(forbidden(
            attrs,
            &format!(
                "node {node:?} is not allowed to modify node {:?}",
                attrs.name
            ),
        ));
    }
    let new = attrs.object.as_ref();
    match attrs.operation {
        Operation::Create => {
            if config_source(new).is_some() {
                return Err(forbidden(
                    attrs,
                    &format!(
                        "node {node:?} is not allowed to create pods with a non-nil configSource"
                    ),
                ));
            }
            let refused = forbidden_labels(&modified_labels(&labels(new), &Map::new()));
            if !refused.is_empty() {
                return Err(forbidden(
                    attrs,
                    &format!(
                        "node {node:?} is not allowed to set the following labels: {}",
                        refused.join(", ")
                    ),
                ));
            }
        }
        Operation::Update => {
            let old = attrs.old_object.as_ref();
            if config_source(new).is_some() && config_source(new) != config_source(old) {
                return Err(forbidden(
                    attrs,
                    &format!(
                        "node {node:?} is not allowed to update configSource to a new non-nil configSource"
                    ),
                ));
            }
            let taints = |o: Option<&Value>| {
                o.and_then(|o| get(o, "spec.taints"))
                    .and_then(Value::as_array)
                    .filter(|t| !t.is_empty())
                    .cloned()
            };
            if taints(new) != taints(old) {
                return Err(forbidden(
                    attrs,
                    &format!("node {node:?} is not allowed to modify taints"),
                ));
            }
            let refused = forbidden_labels(&modified_labels(&labels(new), &labels(old)));
            if !refused.is_empty() {
                // Upstream's message has no node name here.
                return Err(forbidden(
                    attrs,
                    &format!("is not allowed to modify labels: {}", refused.join(", ")),
                ));
            }
        }
        _ => {}
    }
    Ok(())
}

/// A PVC with the fields a kubelet may change (status capacity, conditions and allocated
/// resources) and the server-kept metadata removed.
fn pvc_without_kubelet_fields(pvc: Option<&Value>) -> Value {
    let mut pvc = pvc.cloned().unwrap_or(Value::Null);
    if let Some(meta) = pvc.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
        meta.remove("managedFields");
    }
    if let Some(status) = pvc.get_mut("status").and_then(Value::as_object_mut) {
        for field in [
            "capacity",
            "conditions",
            "allocatedResourceStatuses",
            "allocatedResources",
        ] {
            status.remove(field);
        }
    }
    pvc
}

fn admit_pvc_status(node: &str, attrs: &Attributes) -> Result<(), ApiError> {
    if attrs.operation != Operation::Update {
        return Err(forbidden(
            attrs,
            &format!("unexpected operation {:?}", attrs.operation.as_str()),
        ));
    }
    let new = pvc_without_kubelet_fields(attrs.object.as_ref());
    let old = pvc_without_kubelet_fields(attrs.old_object.as_ref());
    if new != old {
        let changed: Vec<&str> = ["metadata", "spec", "status"]
            .into_iter()
            .filter(|part| new.get(part) != old.get(part))
            .collect();
        return Err(forbidden(
            attrs,
            &format!(
                "node {node:?} is not allowed to update fields other than status.quantity and status.conditions: {} changed",
                changed.join(", ")
            ),
        ));
    }
    Ok(())
}

fn admit_lease(node: &str, attrs: &Attributes) -> Result<(), ApiError> {
    if attrs.namespace != NODE_LEASE_NAMESPACE {
        return Err(forbidden(
            attrs,
            &format!("can only access leases in the {NODE_LEASE_NAMESPACE:?} system namespace"),
        ));
    }
    if addressed_name(attrs) != node {
        return Err(forbidden(
            attrs,
            "can only access node lease with the same name as the requesting node",
        ));
    }
    Ok(())
}

/// The name a request addresses: the created object's on create (the URL has none), the
/// URL's otherwise.
fn addressed_name(attrs: &Attributes) -> &str {
    if attrs.operation == Operation::Create {
        attrs
            .object
            .as_ref()
            .and_then(|o| str_at(o, "metadata.name"))
            .unwrap_or_default()
    } else {
        attrs.name.as_str()
    }
}

fn admit_csinode(node: &str, attrs: &Attributes) -> Result<(), ApiError> {
    if addressed_name(attrs) != node {
        return Err(forbidden(
            attrs,
            "can only access CSINode with the same name as the requesting node",
        ));
    }
    Ok(())
}

fn admit_resource_slice(node: &str, attrs: &Attributes) -> Result<(), ApiError> {
    let (object, verb) = match attrs.operation {
        Operation::Create => (attrs.object.as_ref(), "create"),
        Operation::Delete => (attrs.old_object.as_ref(), "delete"),
        _ => return Ok(()),
    };
    if object.and_then(|s| str_at(s, "spec.nodeName")) != Some(node) {
        return Err(forbidden(
            attrs,
            &format!("can only {verb} ResourceSlice with the same NodeName as the requesting node"),
        ));
    }
    Ok(())
}

fn admit_csr(node: &str, attrs: &Attributes) -> Result<(), ApiError> {
    if attrs.operation != Operation::Create {
        return Ok(());
    }
    let Some(csr) = attrs.object.as_ref() else {
        return Ok(());
    };
    let signer = str_at(csr, "spec.signerName").unwrap_or_default();
    if signer != KUBELET_SERVING_SIGNER && signer != KUBE_APISERVER_CLIENT_KUBELET_SIGNER {
        return Ok(());
    }
    let subject =
        csr_subject(csr).map_err(|e| forbidden(attrs, &format!("unable to parse csr: {e}")))?;
    if subject.common_name != format!("{NODE_USER_PREFIX}{node}") {
        return Err(forbidden(
            attrs,
            &format!("can only create a node CSR with CN={NODE_USER_PREFIX}{node}"),
        ));
    }
    Ok(())
}

#[async_trait]
impl Plugin for NodeRestriction {
    fn name(&self) -> &str {
        NAME
    }

    fn handles(&self, op: Operation) -> bool {
        matches!(
            op,
            Operation::Create | Operation::Update | Operation::Delete
        )
    }

    fn mutates(&self) -> bool {
        true
    }

    async fn admit(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
        let user = attrs.user.clone();
        let Some(node) = node_identity(&user) else {
            return Ok(());
        };
        if node.is_empty() {
            return Err(forbidden(
                attrs,
                &format!("could not determine node from user {:?}", user.name),
            ));
        }
        let attrs = &*attrs;
        match (
            attrs.resource.group.as_str(),
            attrs.resource.resource.as_str(),
        ) {
            ("", "pods") => match attrs.subresource.as_str() {
                "" => self.admit_pod(node, attrs),
                "status" => self.admit_pod_status(node, attrs),
                "eviction" => self.admit_pod_eviction(node, attrs),
                other => Err(forbidden(
                    attrs,
                    &format!(
                        "unexpected pod subresource {other:?}, only 'status' and 'eviction' are allowed"
                    ),
                )),
            },
            ("", "nodes") => admit_node(node, attrs),
            ("", "persistentvolumeclaims") => match attrs.subresource.as_str() {
                "status" => admit_pvc_status(node, attrs),
                _ => Err(forbidden(attrs, "may only update PVC status")),
            },
            ("", "serviceaccounts") => self.admit_service_account(node, attrs),
            ("coordination.k8s.io", "leases") => admit_lease(node, attrs),
            ("storage.k8s.io", "csinodes") => admit_csinode(node, attrs),
            ("resource.k8s.io", "resourceslices") => admit_resource_slice(node, attrs),
            ("certificates.k8s.io", "certificatesigningrequests") => admit_csr(node, attrs),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn kubelets_may_only_change_their_own_label_domains() {
        let old = map(json!({"kubernetes.io/hostname": "n1", "team": "a"}));
        let new = map(json!({
            "kubernetes.io/hostname": "n2",
            "team": "b",
            "node.kubernetes.io/exclude-from-external-load-balancers": "",
            "sub.kubelet.kubernetes.io/x": "y",
            "node-role.kubernetes.io/control-plane": "",
            "node-restriction.kubernetes.io/gpu": "yes",
            "example.k8s.io/thing": "1",
        }));
        assert_eq!(
            forbidden_labels(&modified_labels(&new, &old)),
            [
                "example.k8s.io/thing",
                "node-restriction.kubernetes.io/gpu",
                "node-role.kubernetes.io/control-plane",
            ]
        );
    }

    #[test]
    fn node_identity_needs_the_prefix_and_the_group() {
        let user = |name: &str, groups: &[&str]| UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        };
        assert_eq!(
            node_identity(&user("system:node:n1", &[NODES_GROUP])),
            Some("n1")
        );
        assert_eq!(node_identity(&user("system:node:n1", &[])), None);
        assert_eq!(node_identity(&user("alice", &[NODES_GROUP])), None);
        assert_eq!(
            node_identity(&user("system:node:", &[NODES_GROUP])),
            Some("")
        );
    }
}
