//! Priority (upstream `plugin/pkg/admission/priority`): a new pod's `priorityClassName`
//! resolves to `spec.priority` and `spec.preemptionPolicy` from its PriorityClass (the
//! global default class, or 0, when it names none); a pod may not bring other values; only one
//! PriorityClass may be the global default.

use std::sync::Arc;

use apiserver::admission::{Attributes, Operation, Plugin, forbidden};
use apiserver::registry::informer::Informer;
use apiserver::status::ApiError;
use async_trait::async_trait;
use serde_json::Value;

use super::pods::is_pod_request;
use crate::admission::PluginContext;
use crate::apis::json::{get, i64_at, str_at};

/// The plugin's name.
pub const NAME: &str = "Priority";

/// The Priority plugin.
pub struct Priority {
    classes: Informer,
}

/// Builds the plugin over the PriorityClass informer.
pub fn new(ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    let classes = ctx
        .informers
        .informer("scheduling.k8s.io", "priorityclasses")
        .ok_or("Priority needs the priorityclasses resource")?;
    Ok(Arc::new(Priority { classes }))
}

fn is_global_default(class: &Value) -> bool {
    get(class, "globalDefault").and_then(Value::as_bool) == Some(true)
}

impl Priority {
    /// The global default class; of several (a race), the one with the lowest value.
    fn default_class(&self) -> Option<Arc<Value>> {
        self.classes
            .list()
            .into_iter()
            .filter(|c| is_global_default(c))
            .min_by_key(|c| i64_at(c, "value").unwrap_or_default())
    }

    fn admit_pod(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
        if attrs.operation == Operation::Update {
            // Keep the priority set at creation when an update leaves it out; validation
            // refuses any other change.
            let old_priority = attrs
                .old_object
                .as_ref()
                .and_then(|o| get(o, "spec.priority"))
                .filter(|p| !p.is_null())
                .cloned();
            if let (Some(priority), Some(spec)) = (
                old_priority,
                attrs
                    .object
                    .as_mut()
                    .and_then(|p| p.get_mut("spec"))
                    .and_then(Value::as_object_mut),
            ) && spec.get("priority").is_none_or(Value::is_null)
            {
                spec.insert("priority".into(), priority);
            }
            return Ok(());
        }
        let Some(pod) = attrs.object.as_ref() else {
            return Ok(());
        };
        let requested = str_at(pod, "spec.priorityClassName")
            .unwrap_or_default()
            .to_string();
        let class = if requested.is_empty() {
            self.default_class()
        } else {
            Some(self.classes.get("", &requested).ok_or_else(|| {
                forbidden(
                    attrs,
                    &format!("no PriorityClass with name {requested} was found"),
                )
            })?)
        };
        let priority = class
            .as_deref()
            .and_then(|c| i64_at(c, "value"))
            .unwrap_or(0);
        let preemption = class
            .as_deref()
            .and_then(|c| str_at(c, "preemptionPolicy"))
            .map(str::to_string);
        if let Some(given) = i64_at(pod, "spec.priority")
            && given != priority
        {
            return Err(forbidden(
                attrs,
                &format!(
                    "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {priority} from the given PriorityClass name"
                ),
            ));
        }
        if let (Some(computed), Some(given)) =
            (preemption.as_deref(), str_at(pod, "spec.preemptionPolicy"))
            && given != computed
        {
            return Err(forbidden(
                attrs,
                &format!(
                    "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {computed} from the given PriorityClass name"
                ),
            ));
        }
        let class_name = class
            .as_deref()
            .and_then(|c| str_at(c, "metadata.name"))
            .map(str::to_string);
        let Some(spec) = attrs
            .object
            .as_mut()
            .and_then(|p| p.get_mut("spec"))
            .and_then(Value::as_object_mut)
        else {
            return Ok(());
        };
        if requested.is_empty()
            && let Some(name) = class_name
        {
            spec.insert("priorityClassName".into(), Value::String(name));
        }
        spec.insert("priority".into(), Value::from(priority));
        if let Some(policy) = preemption {
            spec.insert("preemptionPolicy".into(), Value::String(policy));
        }
        Ok(())
    }

    fn validate_class(&self, attrs: &Attributes) -> Result<(), ApiError> {
        let Some(class) = attrs.object.as_ref() else {
            return Ok(());
        };
        if !is_global_default(class) {
            return Ok(());
        }
        let Some(existing) = self.default_class() else {
            return Ok(());
        };
        let existing_name = str_at(&existing, "metadata.name").unwrap_or_default();
        let name = str_at(class, "metadata.name").unwrap_or_default();
        if attrs.operation == Operation::Create || existing_name != name {
            return Err(forbidden(
                attrs,
                &format!(
                    "PriorityClass {existing_name} is already marked as default. Only one default can exist"
                ),
            ));
        }
        Ok(())
    }
}

#[async_trait]
impl Plugin for Priority {
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

    fn validates(&self) -> bool {
        true
    }

    async fn admit(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
        if matches!(attrs.operation, Operation::Create | Operation::Update) && is_pod_request(attrs)
        {
            return self.admit_pod(attrs);
        }
        Ok(())
    }

    async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError> {
        if matches!(attrs.operation, Operation::Create | Operation::Update)
            && attrs.resource.group == "scheduling.k8s.io"
            && attrs.resource.resource == "priorityclasses"
            && attrs.subresource.is_empty()
        {
            return self.validate_class(attrs);
        }
        Ok(())
    }
}
