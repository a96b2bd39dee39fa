//! The Node authorizer's graph (upstream `plugin/pkg/auth/authorizer/node/graph.go`): vertices
//! for the objects a kubelet may reach, edges pointing towards the node that needs them:
//!
//! ```text
//! secret, configmap, pvc, serviceaccount, resourceclaim -> pod -> node
//! secret -> pv -> pvc
//! volumeattachment -> node
//! resourceslice -> node
//! ```
//!
//! A vertex lives while it has an edge: deleting a pod drops the secrets only it used.

use std::collections::{HashMap, HashSet};
use std::sync::RwLock;

use serde_json::Value;

use crate::apis::json::{array_at, str_at};

/// The kinds of vertices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VertexType {
    /// A configmap.
    ConfigMap,
    /// A node.
    Node,
    /// A pod.
    Pod,
    /// A persistent volume claim.
    Pvc,
    /// A persistent volume.
    Pv,
    /// A DRA resource claim.
    ResourceClaim,
    /// A DRA resource slice.
    ResourceSlice,
    /// A secret.
    Secret,
    /// A service account.
    ServiceAccount,
    /// A volume attachment.
    VolumeAttachment,
}

/// One vertex: its type, namespace (empty for cluster-scoped objects) and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Vertex {
    ty: VertexType,
    namespace: String,
    name: String,
}

impl Vertex {
    /// The vertex of `ty` `namespace/name`.
    pub fn new(ty: VertexType, namespace: &str, name: &str) -> Self {
        Vertex {
            ty,
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }

    fn node(name: &str) -> Self {
        Self::new(VertexType::Node, "", name)
    }
}

#[derive(Default)]
struct Edges {
    out: HashMap<Vertex, HashSet<Vertex>>,
    into: HashMap<Vertex, HashSet<Vertex>>,
}

impl Edges {
    fn add(&mut self, from: Vertex, to: Vertex) {
        self.into
            .entry(to.clone())
            .or_default()
            .insert(from.clone());
        self.out.entry(from).or_default().insert(to);
    }

    fn degree(&self, v: &Vertex) -> usize {
        self.out.get(v).map_or(0, HashSet::len) + self.into.get(v).map_or(0, HashSet::len)
    }

    /// Removes `v` with its edges, and the neighbours left without any edge.
    fn delete_vertex(&mut self, v: &Vertex) {
        let outs = self.out.remove(v).unwrap_or_default();
        let ins = self.into.remove(v).unwrap_or_default();
        for to in &outs {
            if let Some(set) = self.into.get_mut(to) {
                set.remove(v);
            }
        }
        for from in &ins {
            if let Some(set) = self.out.get_mut(from) {
                set.remove(v);
            }
        }
        for neighbour in outs.iter().chain(ins.iter()) {
            if self.degree(neighbour) == 0 {
                self.out.remove(neighbour);
                self.into.remove(neighbour);
            }
        }
    }

    fn exists(&self, v: &Vertex) -> bool {
        self.degree(v) > 0
    }

    /// Whether `to` can be reached from `from` along edges.
    fn reaches(&self, from: &Vertex, to: &Vertex) -> bool {
        let mut seen = HashSet::new();
        let mut stack = vec![from];
        while let Some(v) = stack.pop() {
            if v == to {
                return true;
            }
            if !seen.insert(v) {
                continue;
            }
            if let Some(next) = self.out.get(v) {
                stack.extend(next.iter());
            }
        }
        false
    }
}

/// Why a node may not reach an object (the authorizer answers with its own text).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The graph has no such node.
    #[error("unknown node '{0}'")]
    UnknownNode(String),
    /// The graph has no such object.
    #[error("node '{node}' cannot get unknown {ty:?} {namespace}/{name}")]
    UnknownObject {
        /// The node.
        node: String,
        /// The object's type.
        ty: VertexType,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
}

/// The graph, shared between the populator (writes from informer events) and the authorizer
/// (reads per request).
#[derive(Default)]
pub struct Graph {
    edges: RwLock<Edges>,
}

/// The annotation of a mirror pod (a kubelet's static pod): it never grants anything.
const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// Every container of a pod, init and ephemeral ones included.
fn containers(pod: &Value) -> impl Iterator<Item = &Value> {
    [
        "spec.initContainers",
        "spec.containers",
        "spec.ephemeralContainers",
    ]
    .into_iter()
    .flat_map(move |p| array_at(pod, p).iter())
}

/// The secrets a pod refers to (upstream `VisitPodSecretNames`).
fn pod_secret_names(pod: &Value) -> Vec<&str> {
    let mut names: Vec<&str> = array_at(pod, "spec.imagePullSecrets")
        .iter()
        .filter_map(|s| str_at(s, "name"))
        .collect();
    for c in containers(pod) {
        names.extend(
            array_at(c, "envFrom")
                .iter()
                .filter_map(|e| str_at(e, "secretRef.name")),
        );
        names.extend(
            array_at(c, "env")
                .iter()
                .filter_map(|e| str_at(e, "valueFrom.secretKeyRef.name")),
        );
    }
    for v in array_at(pod, "spec.volumes") {
        for path in [
            "secret.secretName",
            "azureFile.secretName",
            "cephfs.secretRef.name",
            "cinder.secretRef.name",
            "flexVolume.secretRef.name",
            "rbd.secretRef.name",
            "scaleIO.secretRef.name",
            "iscsi.secretRef.name",
            "storageos.secretRef.name",
            "csi.nodePublishSecretRef.name",
        ] {
            names.extend(str_at(v, path));
        }
        names.extend(
            array_at(v, "projected.sources")
                .iter()
                .filter_map(|s| str_at(s, "secret.name")),
        );
    }
    names.retain(|n| !n.is_empty());
    names
}

/// The configmaps a pod refers to (upstream `VisitPodConfigmapNames`).
fn pod_configmap_names(pod: &Value) -> Vec<&str> {
    let mut names = Vec::new();
    for c in containers(pod) {
        names.extend(
            array_at(c, "envFrom")
                .iter()
                .filter_map(|e| str_at(e, "configMapRef.name")),
        );
        names.extend(
            array_at(c, "env")
                .iter()
                .filter_map(|e| str_at(e, "valueFrom.configMapKeyRef.name")),
        );
    }
    for v in array_at(pod, "spec.volumes") {
        names.extend(str_at(v, "configMap.name"));
        names.extend(
            array_at(v, "projected.sources")
                .iter()
                .filter_map(|s| str_at(s, "configMap.name")),
        );
    }
    names.retain(|n| !n.is_empty());
    names
}

/// The claims of a pod's volumes: named ones, and the `<pod>-<volume>` claims of ephemeral
/// volumes.
fn pod_claim_names(pod: &Value) -> Vec<String> {
    let pod_name = str_at(pod, "metadata.name").unwrap_or_default();
    array_at(pod, "spec.volumes")
        .iter()
        .filter_map(|v| {
            if let Some(claim) = str_at(v, "persistentVolumeClaim.claimName") {
                Some(claim.to_string())
            } else if v.get("ephemeral").is_some_and(|e| !e.is_null()) {
                Some(format!("{pod_name}-{}", str_at(v, "name")?))
            } else {
                None
            }
        })
        .filter(|n| !n.is_empty())
        .collect()
}

/// The resource claims of a pod: named ones, and those generated from templates as its
/// status records them (upstream `resourceclaim.Name`).
fn pod_resource_claim_names(pod: &Value) -> Vec<&str> {
    let statuses = array_at(pod, "status.resourceClaimStatuses");
    let mut names: Vec<&str> = array_at(pod, "spec.resourceClaims")
        .iter()
        .filter_map(|c| {
            if let Some(name) = str_at(c, "resourceClaimName") {
                return Some(name);
            }
            let entry = str_at(c, "name")?;
            statuses
                .iter()
                .find(|s| str_at(s, "name") == Some(entry))
                .and_then(|s| str_at(s, "resourceClaimName"))
        })
        .collect();
    names.extend(str_at(
        pod,
        "status.extendedResourceClaimStatus.resourceClaimName",
    ));
    names.retain(|n| !n.is_empty());
    names
}

/// The secrets a persistent volume refers to that the kubelet uses, with their namespaces
/// (upstream `VisitPVSecretNames`, kubelet-visible ones only).
fn pv_secret_names(pv: &Value) -> Vec<(String, String)> {
    let claim_ns = str_at(pv, "spec.claimRef.namespace").unwrap_or_default();
    let mut out = Vec::new();
    let mut add = |ns: Option<&str>, name: Option<&str>| {
        if let Some(name) = name.filter(|n| !n.is_empty()) {
            let ns = ns.filter(|n| !n.is_empty()).unwrap_or(claim_ns);
            out.push((ns.to_string(), name.to_string()));
        }
    };
    add(
        str_at(pv, "spec.azureFile.secretNamespace"),
        str_at(pv, "spec.azureFile.secretName"),
    );
    for source in [
        "cephfs",
        "cinder",
        "flexVolume",
        "rbd",
        "scaleIO",
        "iscsi",
        "storageos",
    ] {
        add(
            str_at(pv, &format!("spec.{source}.secretRef.namespace")),
            str_at(pv, &format!("spec.{source}.secretRef.name")),
        );
    }
    for secret in [
        "nodePublishSecretRef",
        "nodeStageSecretRef",
        "nodeExpandSecretRef",
    ] {
        add(
            str_at(pv, &format!("spec.csi.{secret}.namespace")),
            str_at(pv, &format!("spec.csi.{secret}.name")),
        );
    }
    out
}

impl Graph {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Edges> {
        // A panic while holding the lock cannot leave the maps half-updated in a way that
        // matters more than losing every decision, so a poisoned lock is used as it is.
        self.edges.write().unwrap_or_else(|p| p.into_inner())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Edges> {
        self.edges.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a pod bound to a node, with everything it refers to (upstream `AddPod`);
    /// replaces what an earlier version of the pod recorded. A pod without a node is left out.
    pub fn add_pod(&self, pod: &Value) {
        let namespace = str_at(pod, "metadata.namespace").unwrap_or_default();
        let name = str_at(pod, "metadata.name").unwrap_or_default();
        let pod_vertex = Vertex::new(VertexType::Pod, namespace, name);
        let mut edges = self.write();
        edges.delete_vertex(&pod_vertex);
        let Some(node) = str_at(pod, "spec.nodeName").filter(|n| !n.is_empty()) else {
            return;
        };
        edges.add(pod_vertex.clone(), Vertex::node(node));
        let mirror = pod
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(MIRROR_POD_ANNOTATION))
            .is_some();
        if mirror {
            // A node could create such a pod itself: it must not grant anything.
            return;
        }
        let mut link = |ty: VertexType, from: &str| {
            edges.add(Vertex::new(ty, namespace, from), pod_vertex.clone());
        };
        if let Some(sa) = str_at(pod, "spec.serviceAccountName").filter(|n| !n.is_empty()) {
            link(VertexType::ServiceAccount, sa);
        }
        for secret in pod_secret_names(pod) {
            link(VertexType::Secret, secret);
        }
        for configmap in pod_configmap_names(pod) {
            link(VertexType::ConfigMap, configmap);
        }
        for claim in pod_claim_names(pod) {
            link(VertexType::Pvc, &claim);
        }
        for claim in pod_resource_claim_names(pod) {
            link(VertexType::ResourceClaim, claim);
        }
    }

    /// Forgets a pod (upstream `DeletePod`).
    pub fn delete_pod(&self, namespace: &str, name: &str) {
        self.write()
            .delete_vertex(&Vertex::new(VertexType::Pod, namespace, name));
    }

    /// Records a persistent volume's claim and secrets (upstream `AddPV`).
    pub fn add_pv(&self, pv: &Value) {
        let pv_vertex = Vertex::new(
            VertexType::Pv,
            "",
            str_at(pv, "metadata.name").unwrap_or_default(),
        );
        let mut edges = self.write();
        edges.delete_vertex(&pv_vertex);
        let (Some(claim_ns), Some(claim)) = (
            str_at(pv, "spec.claimRef.namespace"),
            str_at(pv, "spec.claimRef.name"),
        ) else {
            return;
        };
        edges.add(
            pv_vertex.clone(),
            Vertex::new(VertexType::Pvc, claim_ns, claim),
        );
        for (ns, secret) in pv_secret_names(pv) {
            edges.add(
                Vertex::new(VertexType::Secret, &ns, &secret),
                pv_vertex.clone(),
            );
        }
    }

    /// Forgets a persistent volume (upstream `DeletePV`).
    pub fn delete_pv(&self, name: &str) {
        self.write()
            .delete_vertex(&Vertex::new(VertexType::Pv, "", name));
    }

    /// Records a cluster-scoped object that belongs to a node (a volume attachment or a
    /// resource slice); an empty node name records nothing.
    pub fn set_node_of(&self, ty: VertexType, name: &str, node: &str) {
        let vertex = Vertex::new(ty, "", name);
        let mut edges = self.write();
        edges.delete_vertex(&vertex);
        if !node.is_empty() {
            edges.add(vertex, Vertex::node(node));
        }
    }

    /// Forgets a cluster-scoped object recorded with [`set_node_of`](Self::set_node_of).
    pub fn delete(&self, ty: VertexType, name: &str) {
        self.write().delete_vertex(&Vertex::new(ty, "", name));
    }

    /// Whether the object leads to the node (upstream `hasPathFrom`).
    pub fn has_path_from(
        &self,
        node: &str,
        ty: VertexType,
        namespace: &str,
        name: &str,
    ) -> Result<bool, PathError> {
        let edges = self.read();
        let node_vertex = Vertex::node(node);
        if !edges.exists(&node_vertex) {
            return Err(PathError::UnknownNode(node.to_string()));
        }
        let start = Vertex::new(ty, namespace, name);
        if !edges.exists(&start) {
            return Err(PathError::UnknownObject {
                node: node.to_string(),
                ty,
                namespace: namespace.to_string(),
                name: name.to_string(),
            });
        }
        Ok(edges.reaches(&start, &node_vertex))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(name: &str, node: &str, secret: &str) -> Value {
        json!({
            "metadata": {"namespace": "ns", "name": name},
            "spec": {
                "nodeName": node,
                "serviceAccountName": "default",
                "containers": [{"name": "c", "env": [
                    {"name": "A", "valueFrom": {"secretKeyRef": {"name": secret, "key": "k"}}},
                    {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}
                ]}],
                "volumes": [
                    {"name": "data", "persistentVolumeClaim": {"claimName": "claim"}},
                    {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}},
                    {"name": "p", "projected": {"sources": [{"secret": {"name": "projected"}}]}}
                ]
            }
        })
    }

    fn reaches(g: &Graph, node: &str, ty: VertexType, ns: &str, name: &str) -> bool {
        g.has_path_from(node, ty, ns, name).unwrap_or(false)
    }

    #[test]
    fn a_pods_references_reach_its_node_only() {
        let g = Graph::new();
        g.add_pod(&pod("p1", "n1", "s1"));
        g.add_pod(&pod("p2", "n2", "s2"));
        assert!(reaches(&g, "n1", VertexType::Secret, "ns", "s1"));
        assert!(reaches(&g, "n1", VertexType::Secret, "ns", "projected"));
        assert!(!reaches(&g, "n1", VertexType::Secret, "ns", "s2"));
        assert!(reaches(&g, "n1", VertexType::ConfigMap, "ns", "cm"));
        assert!(reaches(&g, "n1", VertexType::Pvc, "ns", "claim"));
        assert!(reaches(&g, "n1", VertexType::Pvc, "ns", "p1-scratch"));
        assert!(reaches(
            &g,
            "n2",
            VertexType::ServiceAccount,
            "ns",
            "default"
        ));
        assert!(reaches(&g, "n1", VertexType::Pod, "ns", "p1"));
        assert!(!reaches(&g, "n1", VertexType::Pod, "ns", "p2"));
    }

    #[test]
    fn deleting_a_pod_drops_what_only_it_used() {
        let g = Graph::new();
        g.add_pod(&pod("p1", "n1", "s1"));
        g.add_pod(&pod("p3", "n1", "s3"));
        g.delete_pod("ns", "p1");
        assert!(matches!(
            g.has_path_from("n1", VertexType::Secret, "ns", "s1"),
            Err(PathError::UnknownObject { .. })
        ));
        // Still used by p3.
        assert!(reaches(&g, "n1", VertexType::ConfigMap, "ns", "cm"));
        g.delete_pod("ns", "p3");
        assert_eq!(
            g.has_path_from("n1", VertexType::ConfigMap, "ns", "cm"),
            Err(PathError::UnknownNode("n1".into()))
        );
    }

    #[test]
    fn an_updated_pod_replaces_its_old_references() {
        let g = Graph::new();
        g.add_pod(&pod("p1", "n1", "s1"));
        g.add_pod(&pod("p1", "n1", "s2"));
        assert!(!reaches(&g, "n1", VertexType::Secret, "ns", "s1"));
        assert!(reaches(&g, "n1", VertexType::Secret, "ns", "s2"));
    }

    #[test]
    fn mirror_pods_grant_nothing() {
        let g = Graph::new();
        let mut mirror = pod("p1", "n1", "s1");
        mirror["metadata"]["annotations"] = json!({"kubernetes.io/config.mirror": "x"});
        g.add_pod(&mirror);
        assert!(reaches(&g, "n1", VertexType::Pod, "ns", "p1"));
        assert!(!reaches(&g, "n1", VertexType::Secret, "ns", "s1"));
    }

    #[test]
    fn volumes_reach_a_node_through_their_claim() {
        let g = Graph::new();
        g.add_pod(&pod("p1", "n1", "s1"));
        g.add_pv(&json!({
            "metadata": {"name": "pv1"},
            "spec": {
                "claimRef": {"namespace": "ns", "name": "claim"},
                "csi": {"driver": "d", "volumeHandle": "h",
                        "nodePublishSecretRef": {"name": "csi-secret", "namespace": "other"},
                        "controllerPublishSecretRef": {"name": "controller", "namespace": "other"}}
            }
        }));
        assert!(reaches(&g, "n1", VertexType::Pv, "", "pv1"));
        assert!(reaches(&g, "n1", VertexType::Secret, "other", "csi-secret"));
        assert!(!reaches(
            &g,
            "n1",
            VertexType::Secret,
            "other",
            "controller"
        ));
        g.delete_pv("pv1");
        assert!(!reaches(&g, "n1", VertexType::Pv, "", "pv1"));
    }

    #[test]
    fn attachments_and_slices_belong_to_their_node() {
        let g = Graph::new();
        g.set_node_of(VertexType::VolumeAttachment, "va", "n1");
        g.set_node_of(VertexType::ResourceSlice, "slice", "n2");
        assert!(reaches(&g, "n1", VertexType::VolumeAttachment, "", "va"));
        assert!(!reaches(&g, "n2", VertexType::VolumeAttachment, "", "va"));
        g.delete(VertexType::VolumeAttachment, "va");
        assert!(!reaches(&g, "n1", VertexType::VolumeAttachment, "", "va"));
    }
}
