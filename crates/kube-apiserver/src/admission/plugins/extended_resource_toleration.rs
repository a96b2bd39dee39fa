//! ExtendedResourceToleration (upstream `plugin/pkg/admission/extendedresourcetoleration`):
//! a pod requesting an extended resource (`example.com/gpu`) tolerates the
//! `<resource>:NoSchedule` taint of the nodes that offer it.

use std::collections::BTreeSet;
use std::sync::Arc;

use apiserver::admission::{Attributes, Operation, Plugin};
use apiserver::status::ApiError;
use async_trait::async_trait;
use serde_json::{Value, json};

use super::pods::is_pod_request;
use super::tolerations::merge_tolerations;
use crate::admission::PluginContext;
use crate::apis::json::{array_at, get};

/// The plugin's name.
pub const NAME: &str = "ExtendedResourceToleration";

/// The ExtendedResourceToleration plugin.
pub struct ExtendedResourceToleration;

/// Builds the plugin.
pub fn new(_: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(ExtendedResourceToleration))
}

/// Upstream `IsExtendedResourceName`: a domain-qualified name outside `kubernetes.io` that is
/// not a quota's `requests.` form.
fn is_extended_resource(name: &str) -> bool {
    name.contains('/') && !name.contains("kubernetes.io/") && !name.starts_with("requests.")
}

fn extended_resources(pod: &Value) -> BTreeSet<String> {
    ["spec.containers", "spec.initContainers"]
        .iter()
        .flat_map(|path| array_at(pod, path))
        .filter_map(|c| get(c, "resources.requests").and_then(Value::as_object))
        .flat_map(|requests| requests.keys())
        .filter(|name| is_extended_resource(name))
        .cloned()
        .collect()
}

#[async_trait]
impl Plugin for ExtendedResourceToleration {
    fn name(&self) -> &str {
        NAME
    }

    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }

    fn mutates(&self) -> bool {
        true
    }

    async fn admit(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
        if !is_pod_request(attrs) {
            return Ok(());
        }
        let Some(pod) = attrs.object.as_mut() else {
            return Ok(());
        };
        let resources = extended_resources(pod);
        if resources.is_empty() {
            return Ok(());
        }
        let wanted: Vec<Value> = resources
            .iter()
            .map(|r| json!({"key": r, "operator": "Exists", "effect": "NoSchedule"}))
            .collect();
        let merged = merge_tolerations(array_at(pod, "spec.tolerations"), &wanted);
        if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("tolerations".into(), Value::Array(merged));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_domain_qualified_non_kubernetes_resources_are_extended() {
        assert!(is_extended_resource("example.com/gpu"));
        assert!(!is_extended_resource("cpu"));
        assert!(!is_extended_resource("hugepages-2Mi"));
        assert!(!is_extended_resource("kubernetes.io/something"));
        assert!(!is_extended_resource("requests.example.com/gpu"));
    }
}
