//! `matchPolicy: Equivalent` (upstream's `EquivalentResourceMapper`): a request for one
//! version of a resource also matches rules naming another served version of the same
//! resource; the webhook then gets the object converted to that version, and a mutating
//! webhook's changes are converted back.
//!
//! The equivalences come from the built-in groups: a resource served in several versions of a
//! group, one of them stored and the others converted to and from it (autoscaling/v1 and v2
//! HorizontalPodAutoscalers).

use std::collections::HashMap;

use serde_json::Value;

use crate::apis::{Backing, GroupDef};

/// One served version of a resource.
#[derive(Clone, Debug)]
struct Version {
    version: String,
    kind: String,
    /// This version → the stored version (`None`: this is the stored version).
    to_stored: Option<fn(Value) -> Value>,
    /// The stored version → this version.
    from_stored: Option<fn(Value) -> Value>,
}

/// The served versions of every resource served in more than one version.
#[derive(Clone, Debug, Default)]
pub struct Equivalents {
    resources: HashMap<(String, String), Vec<Version>>,
}

impl Equivalents {
    /// The equivalences of `groups`.
    pub fn from_groups(groups: &[GroupDef]) -> Self {
        let mut resources: HashMap<(String, String), Vec<Version>> = HashMap::new();
        for group in groups {
            for (version, defs) in &group.versions {
                for def in defs {
                    let info = def.strategy.info();
                    let (to_stored, from_stored) = match def.backing {
                        Backing::Converted(c) => (Some(c.to_stored), Some(c.from_stored)),
                        _ => (None, None),
                    };
                    resources
                        .entry((group.group.to_string(), info.resource.clone()))
                        .or_default()
                        .push(Version {
                            version: (*version).to_string(),
                            kind: info.kind.clone(),
                            to_stored,
                            from_stored,
                        });
                }
            }
        }
        resources.retain(|_, versions| versions.len() > 1);
        Equivalents { resources }
    }

    /// The other served versions of `group`/`resource` with their kinds, in serving order.
    pub fn alternatives(
        &self,
        group: &str,
        resource: &str,
        version: &str,
    ) -> Vec<(String, String)> {
        self.resources
            .get(&(group.to_string(), resource.to_string()))
            .map(|versions| {
                versions
                    .iter()
                    .filter(|v| v.version != version)
                    .map(|v| (v.version.clone(), v.kind.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// `object` (of `from`) converted to version `to` of `group`/`resource`.
    pub fn convert(
        &self,
        group: &str,
        resource: &str,
        from: &str,
        to: &str,
        object: Value,
    ) -> Value {
        if from == to || object.is_null() {
            return object;
        }
        let Some(versions) = self
            .resources
            .get(&(group.to_string(), resource.to_string()))
        else {
            return object;
        };
        let find = |v: &str| versions.iter().find(|x| x.version == v);
        let stored = match find(from).and_then(|v| v.to_stored) {
            Some(to_stored) => to_stored(object),
            None => object,
        };
        match find(to).and_then(|v| v.from_stored) {
            Some(from_stored) => from_stored(stored),
            None => stored,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn horizontal_pod_autoscalers_are_equivalent_across_versions() {
        let eq = Equivalents::from_groups(&crate::apis::builtin_groups());
        assert_eq!(
            eq.alternatives("autoscaling", "horizontalpodautoscalers", "v1"),
            vec![("v2".to_string(), "HorizontalPodAutoscaler".to_string())]
        );
        assert!(eq.alternatives("", "configmaps", "v1").is_empty());
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
                        "metadata": {"name": "h"},
                        "spec": {"maxReplicas": 3, "targetCPUUtilizationPercentage": 50,
                                 "scaleTargetRef": {"kind": "Deployment", "name": "d", "apiVersion": "apps/v1"}}});
        let v2 = eq.convert(
            "autoscaling",
            "horizontalpodautoscalers",
            "v1",
            "v2",
            v1.clone(),
        );
        assert_eq!(v2["apiVersion"], "autoscaling/v2");
        assert_eq!(
            v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
            50
        );
        let back = eq.convert("autoscaling", "horizontalpodautoscalers", "v2", "v1", v2);
        assert_eq!(back["spec"]["targetCPUUtilizationPercentage"], 50);
    }
}
