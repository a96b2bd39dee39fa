//! The built-in API groups: each resource's discovery facts and [`Strategy`] (validation,
//! defaulting, status handling, table printing, field selectors), one module per API group.
//!
//! [`builtin_groups`] lists them in upstream's discovery order; the server turns each
//! [`ResourceDef`] into a generic store and installs it.

// Wired into the server by `server.rs`; until then some items are only used by tests.

use std::sync::Arc;

use apiserver::registry::Strategy;
use serde_json::Value;

pub mod admissionregistration;
pub mod apps;
pub mod authentication;
pub mod authorization;
pub mod autoscaling;
pub mod batch;
pub mod certificates;
pub mod coordination;
pub mod core;
pub mod discovery;
pub mod docs;
pub mod events;
pub mod json;
pub mod networking;
pub mod node;
pub mod podspec;
pub mod policy;
pub mod quantity;
pub mod rbac;
pub mod resource;
pub mod scheduling;
pub mod storage;
pub mod strategy;
pub mod table;
pub use apiextensions::typed;
pub mod validation;
pub mod workload;

/// An API group with its served versions (preferred first).
pub struct GroupDef {
    /// The group name, empty for the legacy core group (`/api`).
    pub group: &'static str,
    /// Versions with their resources.
    pub versions: Vec<(&'static str, Vec<ResourceDef>)>,
}

/// One resource of a group version.
pub struct ResourceDef {
    /// The resource's behaviour and discovery facts (`strategy.info()`).
    pub strategy: Arc<dyn Strategy>,
    /// Its subresources besides the main resource: `"status"`, `"scale"` (and `"finalize"`
    /// for namespaces, `"approval"` for certificate signing requests, `"token"` for service
    /// accounts).
    pub subresources: Vec<&'static str>,
    /// Where its objects live.
    pub backing: Backing,
}

/// Where a resource's objects live.
#[derive(Clone, Copy)]
pub enum Backing {
    /// A generic store of its own (most resources).
    Store,
    /// The store of the same resource in another version of its group, converted on the way
    /// in and out (autoscaling/v1 horizontalpodautoscalers over the v2 store).
    Converted(Conversion),
    /// No store: the installer builds the resource's own REST storage (core `bindings` and
    /// `componentstatuses`).
    Virtual,
}

/// How objects of a served version convert to and from the stored version.
#[derive(Clone, Copy)]
pub struct Conversion {
    /// The version whose store holds the objects.
    pub stored_version: &'static str,
    /// Served → stored.
    pub to_stored: fn(Value) -> Value,
    /// Stored → served.
    pub from_stored: fn(Value) -> Value,
}

impl ResourceDef {
    /// A resource without subresources.
    pub fn new(strategy: impl Strategy + 'static) -> Self {
        ResourceDef {
            strategy: Arc::new(strategy),
            subresources: Vec::new(),
            backing: Backing::Store,
        }
    }

    /// Served from another version's store through `conversion`.
    pub fn converted(mut self, conversion: Conversion) -> Self {
        self.backing = Backing::Converted(conversion);
        self
    }

    /// Served by a REST storage of its own (see [`Backing::Virtual`]).
    pub fn virtual_resource(mut self) -> Self {
        self.backing = Backing::Virtual;
        self
    }

    /// Adds subresources.
    pub fn with(mut self, subresources: &[&'static str]) -> Self {
        self.subresources.extend_from_slice(subresources);
        self
    }
}

/// Every built-in group in upstream's discovery order (core first), without versions that
/// have no resources (and groups left without versions).
pub fn builtin_groups() -> Vec<GroupDef> {
    let mut groups = all_groups();
    for group in &mut groups {
        group
            .versions
            .retain(|(_, resources)| !resources.is_empty());
    }
    groups.retain(|g| !g.versions.is_empty());
    groups
}

fn all_groups() -> Vec<GroupDef> {
    vec![
        GroupDef {
            group: "",
            versions: vec![("v1", core::resources())],
        },
        GroupDef {
            group: "apps",
            versions: vec![("v1", apps::resources())],
        },
        GroupDef {
            group: "events.k8s.io",
            versions: vec![("v1", events::resources())],
        },
        GroupDef {
            group: "authentication.k8s.io",
            versions: vec![("v1", authentication::resources())],
        },
        GroupDef {
            group: "authorization.k8s.io",
            versions: vec![("v1", authorization::resources())],
        },
        GroupDef {
            group: "autoscaling",
            versions: vec![
                ("v2", autoscaling::resources_v2()),
                ("v1", autoscaling::resources_v1()),
            ],
        },
        GroupDef {
            group: "batch",
            versions: vec![("v1", batch::resources())],
        },
        GroupDef {
            group: "certificates.k8s.io",
            versions: vec![("v1", certificates::resources())],
        },
        GroupDef {
            group: "networking.k8s.io",
            versions: vec![("v1", networking::resources())],
        },
        GroupDef {
            group: "policy",
            versions: vec![("v1", policy::resources())],
        },
        GroupDef {
            group: "rbac.authorization.k8s.io",
            versions: vec![("v1", rbac::resources())],
        },
        GroupDef {
            group: "storage.k8s.io",
            versions: vec![("v1", storage::resources())],
        },
        GroupDef {
            group: "admissionregistration.k8s.io",
            versions: vec![
                ("v1", admissionregistration::resources_v1()),
                ("v1beta1", admissionregistration::resources_v1beta1()),
            ],
        },
        GroupDef {
            group: "scheduling.k8s.io",
            versions: vec![("v1", scheduling::resources())],
        },
        GroupDef {
            group: "coordination.k8s.io",
            versions: vec![("v1", coordination::resources())],
        },
        GroupDef {
            group: "node.k8s.io",
            versions: vec![("v1", node::resources())],
        },
        GroupDef {
            group: "discovery.k8s.io",
            versions: vec![("v1", discovery::resources())],
        },
        GroupDef {
            group: "resource.k8s.io",
            versions: vec![("v1", resource::resources())],
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_resource_is_unique_and_consistent() {
        let mut seen = BTreeSet::new();
        for group in builtin_groups() {
            for (version, resources) in &group.versions {
                for def in resources {
                    let info = def.strategy.info();
                    assert_eq!(info.group, group.group);
                    assert_eq!(&info.version, version);
                    // A converted version shares its resource with the stored one.
                    let stored = matches!(def.backing, Backing::Store | Backing::Virtual);
                    assert_eq!(
                        seen.insert((info.group.clone(), info.resource.clone())),
                        stored,
                        "{}",
                        info.resource
                    );
                    assert_eq!(info.list_kind, format!("{}List", info.kind));
                    assert_eq!(info.singular, info.kind.to_lowercase());
                    // every row has a cell per column, even for a bare object.
                    let bare = serde_json::json!({"metadata": {"name": "x"}});
                    assert_eq!(
                        def.strategy.table_row(&bare).len(),
                        def.strategy.table_columns().len(),
                        "{}",
                        info.resource
                    );
                }
            }
        }
        assert_eq!(seen.len(), 63);
    }

    #[test]
    fn status_subresources_keep_status_on_update() {
        for group in builtin_groups() {
            for (_, resources) in group.versions {
                for def in resources {
                    let old =
                        serde_json::json!({"metadata": {"name": "x"}, "status": {"stored": 1}});
                    let mut new =
                        serde_json::json!({"metadata": {"name": "x"}, "status": {"sent": 1}});
                    def.strategy.prepare_for_update(&mut new, &old);
                    let kept = new["status"] == old["status"];
                    assert_eq!(
                        kept,
                        def.subresources.contains(&"status"),
                        "{}",
                        def.strategy.info().resource
                    );
                }
            }
        }
    }

    #[test]
    fn discovery_facts_as_upstream() {
        let mut facts = std::collections::BTreeMap::new();
        for group in builtin_groups() {
            for (_, resources) in group.versions {
                for def in resources {
                    let info = def.strategy.info().clone();
                    facts.insert(info.resource.clone(), info);
                }
            }
        }
        for (resource, short) in [
            ("configmaps", "cm"),
            ("namespaces", "ns"),
            ("services", "svc"),
            ("deployments", "deploy"),
            ("replicasets", "rs"),
            ("statefulsets", "sts"),
            ("daemonsets", "ds"),
            ("pods", "po"),
            ("nodes", "no"),
            ("persistentvolumeclaims", "pvc"),
            ("persistentvolumes", "pv"),
            ("endpoints", "ep"),
            ("serviceaccounts", "sa"),
            ("limitranges", "limits"),
            ("resourcequotas", "quota"),
            ("replicationcontrollers", "rc"),
            ("cronjobs", "cj"),
            ("networkpolicies", "netpol"),
            ("ingresses", "ing"),
            ("poddisruptionbudgets", "pdb"),
            ("storageclasses", "sc"),
            ("priorityclasses", "pc"),
            ("componentstatuses", "cs"),
            ("horizontalpodautoscalers", "hpa"),
            ("certificatesigningrequests", "csr"),
            ("ipaddresses", "ip"),
            ("volumeattributesclasses", "vac"),
        ] {
            assert!(
                facts[resource].short_names.contains(&short.to_string()),
                "{resource}"
            );
        }
        let all: Vec<&str> = facts
            .values()
            .filter(|i| i.categories.contains(&"all".to_string()))
            .map(|i| i.resource.as_str())
            .collect();
        assert_eq!(
            all,
            vec![
                "cronjobs",
                "daemonsets",
                "deployments",
                "horizontalpodautoscalers",
                "jobs",
                "pods",
                "replicasets",
                "replicationcontrollers",
                "services",
                "statefulsets"
            ]
        );
        assert!(!facts["nodes"].namespaced && facts["pods"].namespaced);
    }

    #[test]
    fn create_on_update_as_upstream() {
        let mut allowed = Vec::new();
        for group in builtin_groups() {
            for (_, resources) in group.versions {
                for def in resources {
                    if def.strategy.allow_create_on_update() {
                        let info = def.strategy.info();
                        allowed.push(format!("{}.{}", info.resource, info.group));
                    }
                }
            }
        }
        assert_eq!(
            allowed,
            vec![
                "endpoints.",
                "events.",
                "limitranges.",
                "events.events.k8s.io",
                "clusterrolebindings.rbac.authorization.k8s.io",
                "clusterroles.rbac.authorization.k8s.io",
                "rolebindings.rbac.authorization.k8s.io",
                "roles.rbac.authorization.k8s.io",
                "leases.coordination.k8s.io",
                "endpointslices.discovery.k8s.io",
            ]
        );
    }
}
