//! The Node authorizer (upstream `plugin/pkg/auth/authorizer/node/node_authorizer.go`): a
//! kubelet (`system:node:<name>` in `system:nodes`) reads only the secrets, configmaps,
//! volumes, claims and service-account tokens of pods bound to its node, as the graph says;
//! the rest of what kubelets do is allowed by the static `system:node` rules. Everything
//! else gets no opinion, so later authorizers (RBAC) decide.

use std::sync::Arc;

use apiserver::authz::rules::UserRules;
use apiserver::authz::{Attributes, AuthorizeResult, Authorizer, Decision};
use apiserver::request::UserInfo;
use apiserver::storage::selection::fields::FieldSelector;
use k8s_openapi::api::rbac::v1::PolicyRule;

use super::graph::{Graph, VertexType};
use crate::auth::rbac::rule::PolicyRule as RbacRule;

/// The prefix of kubelets' user names.
const NODE_USER_PREFIX: &str = "system:node:";
/// The group of kubelets.
const NODES_GROUP: &str = "system:nodes";
/// The namespace of node leases.
const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

/// The node a user is, if it is one (upstream `NodeIdentity`): `Some("")` for a member of
/// `system:nodes` named `system:node:` with no name.
pub fn node_identity(attrs: &Attributes) -> Option<&str> {
    let user = attrs.user.as_deref()?;
    let name = user.name.strip_prefix(NODE_USER_PREFIX)?;
    user.groups.iter().any(|g| g == NODES_GROUP).then_some(name)
}

fn allow() -> AuthorizeResult {
    (Decision::Allow, String::new(), None)
}

fn no_opinion(reason: impl Into<String>) -> AuthorizeResult {
    (Decision::NoOpinion, reason.into(), None)
}

/// Whether the request's field selector has `field=value` for one of `fields`.
fn selects_field(attrs: &Attributes, fields: &[&str], value: &str) -> bool {
    FieldSelector::parse(&attrs.field_selector).is_ok_and(|selector| {
        selector
            .requirements()
            .iter()
            .any(|r| !r.not_equal && fields.contains(&r.field.as_str()) && r.value == value)
    })
}

/// The Node authorizer.
pub struct NodeAuthorizer {
    graph: Arc<Graph>,
    node_rules: Vec<RbacRule>,
}

impl NodeAuthorizer {
    /// An authorizer deciding from `graph`, with `node_rules` (upstream `NodeRules()`) for
    /// the resources the graph does not cover.
    pub fn new(graph: Arc<Graph>, node_rules: Vec<PolicyRule>) -> Self {
        NodeAuthorizer {
            graph,
            node_rules: node_rules.iter().map(RbacRule::from).collect(),
        }
    }

    /// The decision on `attrs`.
    pub fn decide(&self, attrs: &Attributes) -> AuthorizeResult {
        let Some(node) = node_identity(attrs) else {
            return no_opinion("");
        };
        if node.is_empty() {
            return no_opinion(format!("unknown node for user {:?}", attrs.user_name()));
        }
        if attrs.resource_request {
            match (attrs.api_group.as_str(), attrs.resource.as_str()) {
                ("", "secrets") => return self.read_namespaced(node, VertexType::Secret, attrs),
                ("", "configmaps") => {
                    return self.read_namespaced(node, VertexType::ConfigMap, attrs);
                }
                ("", "persistentvolumeclaims") => {
                    return if attrs.subresource == "status" {
                        self.status_update(node, VertexType::Pvc, attrs)
                    } else {
                        self.get(node, VertexType::Pvc, attrs)
                    };
                }
                ("", "persistentvolumes") => return self.get(node, VertexType::Pv, attrs),
                ("resource.k8s.io", "resourceclaims") => {
                    return self.get(node, VertexType::ResourceClaim, attrs);
                }
                ("storage.k8s.io", "volumeattachments") => {
                    return self.get(node, VertexType::VolumeAttachment, attrs);
                }
                ("", "serviceaccounts") => return self.service_account(node, attrs),
                ("coordination.k8s.io", "leases") => return lease(node, attrs),
                ("storage.k8s.io", "csinodes") => return csi_node(node, attrs),
                ("resource.k8s.io", "resourceslices") => return self.resource_slice(node, attrs),
                ("", "nodes") => return own_node(node, attrs),
                ("", "pods") => return self.pod(node, attrs),
                _ => {}
            }
        }
        // Not subdivided: the static rules of every node.
        if self.node_rules.iter().any(|r| r.allows(attrs)) {
            return allow();
        }
        no_opinion("")
    }

    /// Allowed when the object leads to the node in the graph.
    fn related(&self, node: &str, ty: VertexType, attrs: &Attributes) -> AuthorizeResult {
        if attrs.name.is_empty() {
            return no_opinion("No Object name found");
        }
        match self
            .graph
            .has_path_from(node, ty, &attrs.namespace, &attrs.name)
        {
            Ok(true) => allow(),
            Ok(false) | Err(_) => no_opinion(format!(
                "no relationship found between node '{node}' and this object"
            )),
        }
    }

    fn read_namespaced(&self, node: &str, ty: VertexType, attrs: &Attributes) -> AuthorizeResult {
        if !matches!(attrs.verb.as_str(), "get" | "list" | "watch") {
            return no_opinion("can only read resources of this type");
        }
        if !attrs.subresource.is_empty() {
            return no_opinion("cannot read subresource");
        }
        if attrs.namespace.is_empty() {
            return no_opinion("can only read namespaced object of this type");
        }
        self.related(node, ty, attrs)
    }

    fn get(&self, node: &str, ty: VertexType, attrs: &Attributes) -> AuthorizeResult {
        if attrs.verb != "get" {
            return no_opinion("can only get individual resources of this type");
        }
        if !attrs.subresource.is_empty() {
            return no_opinion("cannot get subresource");
        }
        self.related(node, ty, attrs)
    }

    fn status_update(&self, node: &str, ty: VertexType, attrs: &Attributes) -> AuthorizeResult {
        if !matches!(attrs.verb.as_str(), "update" | "patch") {
            return no_opinion("can only get/update/patch this type");
        }
        if attrs.subresource != "status" {
            return no_opinion("can only update status subresource");
        }
        self.related(node, ty, attrs)
    }

    /// Tokens for the service accounts of the node's pods; reading those service accounts
    /// (kubelet credential providers, on by default since 1.34).
    fn service_account(&self, node: &str, attrs: &Attributes) -> AuthorizeResult {
        if attrs.verb == "get" && attrs.subresource.is_empty() {
            return self.related(node, VertexType::ServiceAccount, attrs);
        }
        if attrs.verb != "create" || attrs.name.is_empty() {
            return no_opinion("can only create tokens for individual service accounts");
        }
        if attrs.subresource != "token" {
            return no_opinion("can only create token subresource of serviceaccount");
        }
        self.related(node, VertexType::ServiceAccount, attrs)
    }

    fn resource_slice(&self, node: &str, attrs: &Attributes) -> AuthorizeResult {
        if !attrs.subresource.is_empty() {
            return no_opinion("cannot authorize ResourceSlice subresources");
        }
        match attrs.verb.as_str() {
            // The NodeRestriction admission plugin checks the new object's node.
            "create" => allow(),
            "get" | "update" | "patch" | "delete" => {
                self.related(node, VertexType::ResourceSlice, attrs)
            }
            "watch" | "list" | "deletecollection" => {
                if selects_field(attrs, &["spec.nodeName", "nodeName"], node) {
                    allow()
                } else {
                    no_opinion(
                        "can only list/watch/deletecollection resourceslices with nodeName field selector",
                    )
                }
            }
            _ => no_opinion(
                "only the following verbs are allowed for a ResourceSlice: get, watch, list, create, update, patch, delete, deletecollection",
            ),
        }
    }

    fn pod(&self, node: &str, attrs: &Attributes) -> AuthorizeResult {
        match (attrs.subresource.as_str(), attrs.verb.as_str()) {
            ("", "get") => self.get(node, VertexType::Pod, attrs),
            ("", "list" | "watch") => {
                if selects_field(attrs, &["spec.nodeName"], node) {
                    allow()
                } else if !attrs.name.is_empty() {
                    self.related(node, VertexType::Pod, attrs)
                } else {
                    no_opinion("can only list/watch pods with spec.nodeName field selector")
                }
            }
            // Mirror pods, pod status and evictions: NodeRestriction limits them to the node.
            ("", "create" | "delete") | ("status", "update" | "patch") | ("eviction", "create") => {
                allow()
            }
            _ => no_opinion(""),
        }
    }
}

#[async_trait::async_trait]
impl Authorizer for NodeAuthorizer {
    async fn authorize(&self, attrs: &Attributes) -> AuthorizeResult {
        self.decide(attrs)
    }

    /// Kubelets' permissions are not enumerable (they follow the graph): incomplete, with
    /// upstream's error; nothing for anyone else.
    async fn rules_for(&self, user: &UserInfo, _namespace: &str) -> UserRules {
        let is_node =
            user.name.starts_with(NODE_USER_PREFIX) && user.groups.iter().any(|g| g == NODES_GROUP);
        if is_node {
            UserRules::unsupported("node authorizer does not support user rule resolution")
        } else {
            UserRules::default()
        }
    }
}

fn lease(node: &str, attrs: &Attributes) -> AuthorizeResult {
    let verb = attrs.verb.as_str();
    if !matches!(verb, "get" | "create" | "update" | "patch" | "delete") {
        return no_opinion("can only get, create, update, patch, or delete a node lease");
    }
    if attrs.namespace != NODE_LEASE_NAMESPACE {
        return no_opinion(format!(
            "can only access leases in the {NODE_LEASE_NAMESPACE:?} system namespace"
        ));
    }
    // The name of a create is not known here; NodeRestriction checks it.
    if verb != "create" && attrs.name != node {
        return no_opinion("can only access node lease with the same name as the requesting node");
    }
    allow()
}

fn csi_node(node: &str, attrs: &Attributes) -> AuthorizeResult {
    let verb = attrs.verb.as_str();
    if !matches!(verb, "get" | "create" | "update" | "patch" | "delete") {
        return no_opinion("can only get, create, update, patch, or delete a CSINode");
    }
    if !attrs.subresource.is_empty() {
        return no_opinion("cannot authorize CSINode subresources");
    }
    if verb != "create" && attrs.name != node {
        return no_opinion("can only access CSINode with the same name as the requesting node");
    }
    allow()
}

/// A node's own Node object (by name, so a kubelet can read it before creating it).
fn own_node(node: &str, attrs: &Attributes) -> AuthorizeResult {
    match (attrs.subresource.as_str(), attrs.verb.as_str()) {
        ("", "create" | "update" | "patch") | ("status", "update" | "patch") => allow(),
        ("", "get" | "list" | "watch") => {
            if attrs.name == node {
                allow()
            } else if attrs.name.is_empty() {
                no_opinion(format!(
                    "node '{node}' cannot read all nodes, only its own Node object"
                ))
            } else {
                no_opinion(format!(
                    "node '{node}' cannot read '{}', only its own Node object",
                    attrs.name
                ))
            }
        }
        _ => no_opinion(""),
    }
}

#[cfg(test)]
mod tests {
    use apiserver::request::UserInfo;
    use serde_json::json;

    use super::*;
    use crate::bootstrappolicy::node_rules;

    fn node_user(name: &str) -> Option<Arc<UserInfo>> {
        Some(Arc::new(UserInfo {
            name: format!("system:node:{name}"),
            groups: vec!["system:nodes".into(), "system:authenticated".into()],
            ..UserInfo::default()
        }))
    }

    fn request(verb: &str, group: &str, resource: &str, ns: &str, name: &str) -> Attributes {
        Attributes {
            user: node_user("n1"),
            verb: verb.into(),
            api_group: group.into(),
            resource: resource.into(),
            namespace: ns.into(),
            name: name.into(),
            resource_request: true,
            ..Attributes::default()
        }
    }

    fn authorizer() -> NodeAuthorizer {
        let graph = Arc::new(Graph::new());
        graph.add_pod(&json!({
            "metadata": {"namespace": "ns", "name": "p1"},
            "spec": {"nodeName": "n1", "serviceAccountName": "sa",
                     "volumes": [{"name": "s", "secret": {"secretName": "mine"}}]}
        }));
        graph.add_pod(&json!({
            "metadata": {"namespace": "ns", "name": "p2"},
            "spec": {"nodeName": "n2", "volumes": [{"name": "s", "secret": {"secretName": "theirs"}}]}
        }));
        NodeAuthorizer::new(graph, node_rules())
    }

    #[test]
    fn a_node_reads_the_secrets_of_its_pods_only() {
        let a = authorizer();
        assert_eq!(
            a.decide(&request("get", "", "secrets", "ns", "mine")).0,
            Decision::Allow
        );
        let (decision, reason, _) = a.decide(&request("get", "", "secrets", "ns", "theirs"));
        assert_eq!(decision, Decision::NoOpinion);
        assert_eq!(
            reason,
            "no relationship found between node 'n1' and this object"
        );
        let (_, reason, _) = a.decide(&request("delete", "", "secrets", "ns", "mine"));
        assert_eq!(reason, "can only read resources of this type");
        let (_, reason, _) = a.decide(&request("list", "", "secrets", "ns", ""));
        assert_eq!(reason, "No Object name found");
    }

    #[test]
    fn a_node_creates_tokens_for_its_pods_service_accounts() {
        let a = authorizer();
        let mut token = request("create", "", "serviceaccounts", "ns", "sa");
        token.subresource = "token".into();
        assert_eq!(a.decide(&token).0, Decision::Allow);
        token.name = "other".into();
        assert_eq!(a.decide(&token).0, Decision::NoOpinion);
        let (_, reason, _) = a.decide(&request("create", "", "serviceaccounts", "ns", "sa"));
        assert_eq!(
            reason,
            "can only create token subresource of serviceaccount"
        );
    }

    #[test]
    fn other_users_get_no_opinion_without_a_reason() {
        let a = authorizer();
        let mut attrs = request("get", "", "secrets", "ns", "mine");
        attrs.user = Some(Arc::new(UserInfo {
            name: "system:node:n1".into(),
            ..UserInfo::default()
        }));
        assert_eq!(a.decide(&attrs), (Decision::NoOpinion, String::new(), None));
        attrs.user = Some(Arc::new(UserInfo {
            name: "system:node:".into(),
            groups: vec!["system:nodes".into()],
            ..UserInfo::default()
        }));
        assert_eq!(a.decide(&attrs).1, "unknown node for user \"system:node:\"");
    }

    #[test]
    fn static_rules_cover_what_the_graph_does_not() {
        let a = authorizer();
        assert_eq!(
            a.decide(&request("list", "", "services", "", "")).0,
            Decision::Allow
        );
        assert_eq!(
            a.decide(&request("create", "", "events", "ns", "")).0,
            Decision::Allow
        );
        assert_eq!(
            a.decide(&request("delete", "apps", "deployments", "ns", "d")),
            (Decision::NoOpinion, String::new(), None)
        );
    }

    #[test]
    fn nodes_list_their_own_pods_and_read_their_own_node_and_lease() {
        let a = authorizer();
        let mut list = request("list", "", "pods", "", "");
        assert_eq!(
            a.decide(&list).1,
            "can only list/watch pods with spec.nodeName field selector"
        );
        list.field_selector = "spec.nodeName=n1".into();
        assert_eq!(a.decide(&list).0, Decision::Allow);
        assert_eq!(
            a.decide(&request("get", "", "nodes", "", "n1")).0,
            Decision::Allow
        );
        assert_eq!(
            a.decide(&request("get", "", "nodes", "", "n2")).1,
            "node 'n1' cannot read 'n2', only its own Node object"
        );
        let lease = request(
            "update",
            "coordination.k8s.io",
            "leases",
            "kube-node-lease",
            "n2",
        );
        assert_eq!(
            a.decide(&lease).1,
            "can only access node lease with the same name as the requesting node"
        );
        let lease = request("get", "coordination.k8s.io", "leases", "default", "n1");
        assert_eq!(
            a.decide(&lease).1,
            "can only access leases in the \"kube-node-lease\" system namespace"
        );
    }
}
