//! RuntimeClass (upstream `plugin/pkg/admission/runtimeclass`): a new pod naming a
//! RuntimeClass gets its `overhead` and its scheduling constraints (node selector merged,
//! tolerations merged); the RuntimeClass must exist, and a pod may only carry an overhead that
//! matches its RuntimeClass's.

use std::sync::Arc;

use apiserver::admission::{Attributes, Operation, Plugin, forbidden};
use apiserver::registry::informer::Informer;
use apiserver::registry::rest::{GetOptions, RequestContext, RestStorage};
use apiserver::registry::store::Store;
use apiserver::status::{ApiError, reason};
use async_trait::async_trait;
use serde_json::{Map, Value};

use super::pods::is_pod_request;
use super::quantity;
use super::tolerations::merge_tolerations;
use crate::admission::PluginContext;
use crate::apis::json::{array_at, get, str_at};

/// The plugin's name.
pub const NAME: &str = "RuntimeClass";

/// The RuntimeClass plugin.
pub struct RuntimeClass {
    informer: Informer,
    store: Store,
}

/// Builds the plugin over the RuntimeClass informer and store.
pub fn new(ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    let missing = "RuntimeClass needs the runtimeclasses resource";
    let informer = ctx
        .informers
        .informer("node.k8s.io", "runtimeclasses")
        .ok_or(missing)?;
    let store = ctx
        .informers
        .stores()
        .get(&("node.k8s.io".to_string(), "runtimeclasses".to_string()))
        .cloned()
        .ok_or(missing)?;
    Ok(Arc::new(RuntimeClass { informer, store }))
}

fn object_at<'a>(obj: &'a Value, path: &str) -> Option<&'a Map<String, Value>> {
    get(obj, path).and_then(Value::as_object)
}

fn overhead_matches(pod_overhead: &Map<String, Value>, class: &Value) -> bool {
    object_at(class, "overhead.podFixed")
        .is_some_and(|fixed| quantity::lists_equal(fixed, pod_overhead))
}

impl RuntimeClass {
    /// The pod's RuntimeClass, `None` when it names none.
    async fn runtime_class(&self, attrs: &Attributes) -> Result<Option<Arc<Value>>, ApiError> {
        let Some(name) = attrs
            .object
            .as_ref()
            .and_then(|p| str_at(p, "spec.runtimeClassName"))
        else {
            return Ok(None);
        };
        if let Some(class) = self.informer.get("", name) {
            return Ok(Some(class));
        }
        // The informer may lag behind a class created just before.
        match self
            .store
            .get(&RequestContext::default(), name, &GetOptions::default())
            .await
        {
            Ok(class) => Ok(Some(Arc::new(class))),
            Err(e) if e.reason() == reason::NOT_FOUND => Err(forbidden(
                attrs,
                &format!("pod rejected: RuntimeClass {name:?} not found"),
            )),
            Err(e) => Err(e),
        }
    }
}

fn set_overhead(attrs: &mut Attributes, class: &Value) -> Result<(), ApiError> {
    let Some(fixed) = object_at(class, "overhead.podFixed").cloned() else {
        return Ok(());
    };
    let Some(pod) = attrs.object.as_mut() else {
        return Ok(());
    };
    let given = object_at(pod, "spec.overhead").cloned().unwrap_or_default();
    if !given.is_empty() && !quantity::lists_equal(&fixed, &given) {
        return Err(forbidden(
            attrs,
            "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead",
        ));
    }
    if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("overhead".into(), Value::Object(fixed));
    }
    Ok(())
}

fn set_scheduling(attrs: &mut Attributes, class: &Value) -> Result<(), ApiError> {
    if get(class, "scheduling").is_none_or(Value::is_null) {
        return Ok(());
    }
    let Some(pod) = attrs.object.as_ref() else {
        return Ok(());
    };
    let mut selector = object_at(pod, "spec.nodeSelector")
        .cloned()
        .unwrap_or_default();
    if let Some(required) = object_at(class, "scheduling.nodeSelector") {
        for (key, value) in required {
            if let Some(existing) = selector.get(key)
                && existing != value
            {
                let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
                return Err(forbidden(
                    attrs,
                    &format!(
                        "conflict: runtimeClass.scheduling.nodeSelector[{key}] = {}; pod.spec.nodeSelector[{key}] = {}",
                        text(value),
                        text(existing)
                    ),
                ));
            }
            selector.insert(key.clone(), value.clone());
        }
    }
    let tolerations = merge_tolerations(
        array_at(pod, "spec.tolerations"),
        array_at(class, "scheduling.tolerations"),
    );
    let Some(spec) = attrs
        .object
        .as_mut()
        .and_then(|p| p.get_mut("spec"))
        .and_then(Value::as_object_mut)
    else {
        return Ok(());
    };
    if !selector.is_empty() {
        spec.insert("nodeSelector".into(), Value::Object(selector));
    }
    if !tolerations.is_empty() {
        spec.insert("tolerations".into(), Value::Array(tolerations));
    }
    Ok(())
}

#[async_trait]
impl Plugin for RuntimeClass {
    fn name(&self) -> &str {
        NAME
    }

    fn handles(&self, op: Operation) -> bool {
        op == Operation::Create
    }

    fn mutates(&self) -> bool {
        true
    }

    fn validates(&self) -> bool {
        true
    }

    async fn admit(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
        if !is_pod_request(attrs) {
            return Ok(());
        }
        let Some(class) = self.runtime_class(attrs).await? else {
            return Ok(());
        };
        set_overhead(attrs, &class)?;
        set_scheduling(attrs, &class)
    }

    async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError> {
        if !is_pod_request(attrs) {
            return Ok(());
        }
        let class = self.runtime_class(attrs).await?;
        let Some(overhead) = attrs
            .object
            .as_ref()
            .and_then(|p| object_at(p, "spec.overhead"))
            .filter(|o| !o.is_empty())
        else {
            return Ok(());
        };
        match class {
            Some(class) if get(&class, "overhead").is_some_and(|o| !o.is_null()) => {
                if overhead_matches(overhead, &class) {
                    Ok(())
                } else {
                    Err(forbidden(
                        attrs,
                        "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead",
                    ))
                }
            }
            _ => Err(forbidden(
                attrs,
                "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead",
            )),
        }
    }
}
