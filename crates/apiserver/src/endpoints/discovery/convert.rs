//! Conversion of an unaggregated `APIResource` list into aggregated form (upstream
//! `ConvertGroupVersionIntoToDiscovery`): subresources are nested under their parent.

use std::collections::HashMap;

use super::aggregated_types::{
    APIResourceDiscovery, APISubresourceDiscovery, GroupVersionKind, ResourceScope,
};
use super::types::APIResource;

/// A resource list that cannot be expressed in aggregated discovery.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    /// A subresource's scope differs from its parent's (upstream's message, verbatim).
    #[error(
        "Error: Parent {parent} (scope: {parent_scope}) and subresource {subresource} (scope: {subresource_scope}) scope do not match"
    )]
    ScopeMismatch {
        /// The parent resource.
        parent: String,
        /// Its scope.
        parent_scope: ResourceScope,
        /// The subresource name.
        subresource: String,
        /// Its scope.
        subresource_scope: ResourceScope,
    },
}

fn scope_of(resource: &APIResource) -> ResourceScope {
    if resource.namespaced {
        ResourceScope::Namespaced
    } else {
        ResourceScope::Cluster
    }
}

/// Converts `list` (resources and `resource/subresource` entries, in the order given) into
/// aggregated resources. Parents keep the order of `list`; a subresource without a parent gets
/// a placeholder parent with an empty kind, appended after the real ones.
pub fn convert_api_resources_to_discovery(
    list: &[APIResource],
) -> Result<Vec<APIResourceDiscovery>, ConvertError> {
    let mut out: Vec<APIResourceDiscovery> = Vec::new();
    let mut parents: HashMap<String, usize> = HashMap::new();

    for r in list.iter().filter(|r| !r.name.contains('/')) {
        out.push(APIResourceDiscovery {
            resource: r.name.clone(),
            response_kind: GroupVersionKind {
                group: r.group.clone(),
                version: r.version.clone(),
                kind: r.kind.clone(),
            },
            scope: scope_of(r),
            singular_resource: r.singular_name.clone(),
            verbs: r.verbs.clone(),
            short_names: r.short_names.clone(),
            categories: r.categories.clone(),
            subresources: Vec::new(),
        });
        parents.insert(r.name.clone(), out.len() - 1);
    }

    for r in list {
        let Some((parent, sub)) = r.name.split_once('/') else {
            continue;
        };
        let scope = scope_of(r);
        let index = match parents.get(parent) {
            Some(index) => *index,
            None => {
                out.push(APIResourceDiscovery {
                    resource: parent.to_string(),
                    scope,
                    ..Default::default()
                });
                parents.insert(parent.to_string(), out.len() - 1);
                out.len() - 1
            }
        };
        let entry = &mut out[index];
        if entry.scope != scope {
            return Err(ConvertError::ScopeMismatch {
                parent: parent.to_string(),
                parent_scope: entry.scope,
                subresource: sub.to_string(),
                subresource_scope: scope,
            });
        }
        let response_kind = if r.kind.is_empty() {
            GroupVersionKind::default()
        } else {
            GroupVersionKind {
                group: r.group.clone(),
                version: r.version.clone(),
                kind: r.kind.clone(),
            }
        };
        entry.subresources.push(APISubresourceDiscovery {
            subresource: sub.to_string(),
            response_kind,
            accepted_types: Vec::new(),
            verbs: r.verbs.clone(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(name: &str, namespaced: bool, kind: &str, verbs: &[&str]) -> APIResource {
        APIResource {
            name: name.into(),
            namespaced,
            kind: kind.into(),
            verbs: verbs.iter().map(|v| v.to_string()).collect(),
            ..Default::default()
        }
    }

    fn gvk(group: &str, version: &str, kind: &str) -> GroupVersionKind {
        GroupVersionKind {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }

    // Upstream `TestConvertAPIResourceToDiscovery`.
    #[test]
    fn basic_resource_with_status_and_scale() {
        let mut pods = resource("pods", true, "Pod", &["get", "list"]);
        pods.short_names = vec!["po".into()];
        pods.singular_name = "pod".into();
        let status = resource("pods/status", true, "Pod", &["get", "patch"]);
        let mut scale = resource("deployments/scale", true, "Scale", &["get"]);
        scale.group = "autoscaling".into();
        scale.version = "v1".into();
        let deployments = resource("deployments", true, "Deployment", &["get"]);
        let got = convert_api_resources_to_discovery(&[pods, status, deployments, scale]).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].resource, "pods");
        assert_eq!(got[0].singular_resource, "pod");
        assert_eq!(got[0].short_names, vec!["po".to_string()]);
        assert_eq!(got[0].response_kind, gvk("", "", "Pod"));
        assert_eq!(
            got[0].subresources,
            vec![APISubresourceDiscovery {
                subresource: "status".into(),
                response_kind: gvk("", "", "Pod"),
                accepted_types: vec![],
                verbs: vec!["get".into(), "patch".into()],
            }]
        );
        assert_eq!(got[1].subresources[0].subresource, "scale");
        assert_eq!(
            got[1].subresources[0].response_kind,
            gvk("autoscaling", "v1", "Scale")
        );
    }

    #[test]
    fn cluster_scope() {
        let got = convert_api_resources_to_discovery(&[resource("nodes", false, "Node", &["get"])])
            .unwrap();
        assert_eq!(got[0].scope, ResourceScope::Cluster);
    }

    #[test]
    fn subresource_without_parent_gets_placeholder() {
        let got = convert_api_resources_to_discovery(&[
            resource("pods/log", true, "", &["get"]),
            resource("pods/exec", true, "PodExecOptions", &["create", "get"]),
        ])
        .unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].resource, "pods");
        assert_eq!(got[0].response_kind, GroupVersionKind::default());
        assert!(got[0].verbs.is_empty());
        assert_eq!(got[0].subresources.len(), 2);
        assert_eq!(
            got[0].subresources[0].response_kind,
            GroupVersionKind::default()
        );
        assert_eq!(got[0].subresources[1].response_kind.kind, "PodExecOptions");
    }

    #[test]
    fn scope_mismatch_is_an_error() {
        let err = convert_api_resources_to_discovery(&[
            resource("nodes", false, "Node", &["get"]),
            resource("nodes/status", true, "Node", &["get"]),
        ])
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Error: Parent nodes (scope: Cluster) and subresource status (scope: Namespaced) scope do not match"
        );
    }
}
