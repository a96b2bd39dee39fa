//! DefaultIngressClass (upstream `plugin/pkg/admission/network/defaultingressclass`): a new
//! Ingress without `spec.ingressClassName` (and without the old `kubernetes.io/ingress.class`
//! annotation) gets the default IngressClass (annotation
//! `ingressclass.kubernetes.io/is-default-class: "true"`; the newest if several).

use std::sync::Arc;

use apiserver::admission::{Attributes, Operation, Plugin};
use apiserver::registry::informer::Informer;
use apiserver::status::ApiError;
use async_trait::async_trait;
use serde_json::{Value, json};

use super::default_class::newest_default;
use crate::admission::PluginContext;
use crate::apis::json::{get, str_at};

/// The plugin's name.
pub const NAME: &str = "DefaultIngressClass";

/// The annotation marking the default IngressClass.
const DEFAULT_ANNOTATION: &str = "ingressclass.kubernetes.io/is-default-class";
/// The class annotation Ingresses had before `spec.ingressClassName`.
const INGRESS_CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";

/// The DefaultIngressClass plugin.
pub struct DefaultIngressClass {
    classes: Informer,
}

/// Builds the plugin over the IngressClass informer.
pub fn new(ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    let classes = ctx
        .informers
        .informer("networking.k8s.io", "ingressclasses")
        .ok_or("DefaultIngressClass needs the ingressclasses resource")?;
    Ok(Arc::new(DefaultIngressClass { classes }))
}

fn has_class(ingress: &Value) -> bool {
    get(ingress, "spec.ingressClassName").is_some_and(|c| !c.is_null())
        || get(ingress, "metadata.annotations")
            .and_then(|a| a.get(INGRESS_CLASS_ANNOTATION))
            .and_then(Value::as_str)
            .is_some_and(|c| !c.is_empty())
}

#[async_trait]
impl Plugin for DefaultIngressClass {
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
        if attrs.resource.group != "networking.k8s.io"
            || attrs.resource.resource != "ingresses"
            || !attrs.subresource.is_empty()
        {
            return Ok(());
        }
        let Some(ingress) = attrs.object.as_mut() else {
            return Ok(());
        };
        if has_class(ingress) {
            return Ok(());
        }
        let Some(class) = newest_default(self.classes.list(), &[DEFAULT_ANNOTATION]) else {
            return Ok(());
        };
        let name = str_at(&class, "metadata.name").unwrap_or_default();
        if let Some(obj) = ingress.as_object_mut() {
            let spec = obj.entry("spec").or_insert_with(|| json!({}));
            if let Some(spec) = spec.as_object_mut() {
                spec.insert("ingressClassName".into(), Value::String(name.to_string()));
            }
        }
        Ok(())
    }
}
