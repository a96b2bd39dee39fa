//! DefaultTolerationSeconds (upstream `plugin/pkg/admission/defaulttolerationseconds`): a pod
//! that does not tolerate the `node.kubernetes.io/not-ready` or
//! `node.kubernetes.io/unreachable` NoExecute taints gets tolerations for them, for
//! `--default-not-ready-toleration-seconds` and `--default-unreachable-toleration-seconds`
//! (300 s each by default).

use std::sync::Arc;

use apiserver::admission::{Attributes, Operation, Plugin};
use apiserver::status::ApiError;
use async_trait::async_trait;
use serde_json::{Value, json};

use super::pods::is_pod_request;
use crate::admission::PluginContext;
use crate::apis::json::{array_at, str_at};

/// The plugin's name.
pub const NAME: &str = "DefaultTolerationSeconds";

/// The taint of nodes whose Ready condition is false.
pub const NOT_READY_TAINT: &str = "node.kubernetes.io/not-ready";
/// The taint of nodes the node controller cannot reach.
const UNREACHABLE_TAINT: &str = "node.kubernetes.io/unreachable";

/// The DefaultTolerationSeconds plugin.
pub struct DefaultTolerationSeconds {
    not_ready_seconds: i64,
    unreachable_seconds: i64,
}

/// Builds the plugin from the two flags' values.
pub fn new(ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(DefaultTolerationSeconds {
        not_ready_seconds: ctx.options.default_not_ready_toleration_seconds,
        unreachable_seconds: ctx.options.default_unreachable_toleration_seconds,
    }))
}

/// Whether some toleration tolerates the NoExecute taint `key` (an empty key or effect
/// matches any).
fn tolerates(tolerations: &[Value], key: &str) -> bool {
    tolerations.iter().any(|t| {
        let t_key = str_at(t, "key").unwrap_or_default();
        let effect = str_at(t, "effect").unwrap_or_default();
        (t_key == key || t_key.is_empty()) && (effect == "NoExecute" || effect.is_empty())
    })
}

impl DefaultTolerationSeconds {
    fn add_tolerations(&self, pod: &mut Value) {
        let tolerations = array_at(pod, "spec.tolerations");
        let missing: Vec<Value> = [
            (NOT_READY_TAINT, self.not_ready_seconds),
            (UNREACHABLE_TAINT, self.unreachable_seconds),
        ]
        .into_iter()
        .filter(|(key, _)| !tolerates(tolerations, key))
        .map(|(key, seconds)| {
            json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds})
        })
        .collect();
        if missing.is_empty() {
            return;
        }
        let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        let list = spec
            .entry("tolerations")
            .or_insert_with(|| Value::Array(Vec::new()));
        if !list.is_array() {
            *list = Value::Array(Vec::new());
        }
        if let Some(list) = list.as_array_mut() {
            list.extend(missing);
        }
    }
}

#[async_trait]
impl Plugin for DefaultTolerationSeconds {
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
        if let Some(pod) = attrs.object.as_mut() {
            self.add_tolerations(pod);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_tolerations_are_added_with_the_configured_seconds() {
        let plugin = DefaultTolerationSeconds {
            not_ready_seconds: 300,
            unreachable_seconds: 60,
        };
        let mut pod = json!({"spec": {"tolerations": [
            {"key": NOT_READY_TAINT, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10}
        ]}});
        plugin.add_tolerations(&mut pod);
        assert_eq!(
            pod["spec"]["tolerations"],
            json!([
                {"key": NOT_READY_TAINT, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10},
                {"key": UNREACHABLE_TAINT, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}
            ])
        );
        // A toleration of everything tolerates both.
        let mut all = json!({"spec": {"tolerations": [{"operator": "Exists"}]}});
        plugin.add_tolerations(&mut all);
        assert_eq!(all["spec"]["tolerations"].as_array().unwrap().len(), 1);
    }
}
