//! TaintNodesByCondition (upstream `plugin/pkg/admission/nodetaint`): a new Node gets the
//! `node.kubernetes.io/not-ready:NoSchedule` taint, which the node lifecycle controller
//! removes once the node is Ready.

use std::sync::Arc;

use apiserver::admission::{Attributes, Operation, Plugin};
use apiserver::status::ApiError;
use async_trait::async_trait;
use serde_json::{Value, json};

use super::default_toleration_seconds::NOT_READY_TAINT;
use crate::admission::PluginContext;
use crate::apis::json::{array_at, str_at};

/// The plugin's name.
pub const NAME: &str = "TaintNodesByCondition";

/// The TaintNodesByCondition plugin.
pub struct TaintNodesByCondition;

/// Builds the plugin.
pub fn new(_: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(TaintNodesByCondition))
}

fn add_not_ready_taint(node: &mut Value) {
    let tainted = array_at(node, "spec.taints").iter().any(|t| {
        str_at(t, "key") == Some(NOT_READY_TAINT) && str_at(t, "effect") == Some("NoSchedule")
    });
    if tainted {
        return;
    }
    let Some(obj) = node.as_object_mut() else {
        return;
    };
    let spec = obj.entry("spec").or_insert_with(|| json!({}));
    if !spec.is_object() {
        *spec = json!({});
    }
    let Some(spec) = spec.as_object_mut() else {
        return;
    };
    let taints = spec
        .entry("taints")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !taints.is_array() {
        *taints = Value::Array(Vec::new());
    }
    if let Some(taints) = taints.as_array_mut() {
        taints.push(json!({"key": NOT_READY_TAINT, "effect": "NoSchedule"}));
    }
}

#[async_trait]
impl Plugin for TaintNodesByCondition {
    fn name(&self) -> &str {
        NAME
    }

    fn handles(&self, op: Operation) -> bool {
        op == Operation::Create
    }

    fn mutates(&self) -> bool {
        true
    }

    async fn admit(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
        if !attrs.resource.group.is_empty()
            || attrs.resource.resource != "nodes"
            || !attrs.subresource.is_empty()
        {
            return Ok(());
        }
        if let Some(node) = attrs.object.as_mut() {
            add_not_ready_taint(node);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_not_ready_taint_is_added_once() {
        let mut node = json!({"metadata": {"name": "n1"}});
        add_not_ready_taint(&mut node);
        add_not_ready_taint(&mut node);
        assert_eq!(
            node["spec"]["taints"],
            json!([{"key": NOT_READY_TAINT, "effect": "NoSchedule"}])
        );
    }
}
