//! PodTolerationRestriction (upstream `plugin/pkg/admission/podtolerationrestriction`): a new
//! pod gets its namespace's default tolerations (annotation
//! `scheduler.alpha.kubernetes.io/defaultTolerations`, else the configuration's `default`),
//! pods that are not BestEffort tolerate memory pressure, and a pod's tolerations must be
//! within its namespace's whitelist (`scheduler.alpha.kubernetes.io/tolerationsWhitelist`, else
//! the configuration's `whitelist`).

use std::sync::Arc;
use std::time::Duration;

use apiserver::admission::{Attributes, Operation, Plugin, forbidden};
use apiserver::registry::informer::Informer;
use apiserver::registry::rest::{GetOptions, RequestContext, RestStorage};
use apiserver::registry::store::Store;
use apiserver::status::ApiError;
use async_trait::async_trait;
use serde_json::{Value, json};

use super::pods::is_pod_request;
use super::tolerations::{is_superset, merge_tolerations};
use crate::admission::PluginContext;
use crate::apis::json::{array_at, get, str_at};

/// The plugin's name.
pub const NAME: &str = "PodTolerationRestriction";

const DEFAULT_TOLERATIONS: &str = "scheduler.alpha.kubernetes.io/defaultTolerations";
const TOLERATIONS_WHITELIST: &str = "scheduler.alpha.kubernetes.io/tolerationsWhitelist";
const CONFIG_API_VERSION: &str = "podtolerationrestriction.admission.k8s.io/v1alpha1";
const MEMORY_PRESSURE_TAINT: &str = "node.kubernetes.io/memory-pressure";
/// How long to wait for the namespace informer's first list.
const READY_WAIT: Duration = Duration::from_secs(10);

/// The PodTolerationRestriction plugin.
pub struct PodTolerationRestriction {
    informer: Informer,
    store: Store,
    default: Option<Vec<Value>>,
    whitelist: Option<Vec<Value>>,
}

fn toleration_list(value: Option<&Value>, what: &str) -> Result<Option<Vec<Value>>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(list)) if list.iter().all(Value::is_object) => Ok(Some(list.clone())),
        Some(_) => Err(format!("{what} must be a list of tolerations")),
    }
}

/// Builds the plugin from its optional `Configuration`.
pub fn new(ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    let missing = "PodTolerationRestriction needs the namespaces resource";
    let (mut default, mut whitelist) = (None, None);
    if let Some(config) = ctx.config.as_ref() {
        let api_version = str_at(config, "apiVersion").unwrap_or_default();
        let kind = str_at(config, "kind").unwrap_or_default();
        if api_version != CONFIG_API_VERSION || kind != "Configuration" {
            return Err(format!(
                "PodTolerationRestriction configuration: expected kind Configuration of {CONFIG_API_VERSION}, got kind {kind:?} of {api_version:?}"
            ));
        }
        default = toleration_list(config.get("default"), "PodTolerationRestriction default")?;
        whitelist = toleration_list(
            config.get("whitelist"),
            "PodTolerationRestriction whitelist",
        )?;
    }
    Ok(Arc::new(PodTolerationRestriction {
        informer: ctx.informers.informer("", "namespaces").ok_or(missing)?,
        store: ctx
            .informers
            .stores()
            .get(&(String::new(), "namespaces".to_string()))
            .cloned()
            .ok_or(missing)?,
        default,
        whitelist,
    }))
}

/// Whether no container (nor init container) requests or limits CPU or memory.
fn is_best_effort(pod: &Value) -> bool {
    ["spec.initContainers", "spec.containers"]
        .iter()
        .flat_map(|path| array_at(pod, path))
        .all(|c| {
            ["resources.requests", "resources.limits"]
                .iter()
                .all(|part| {
                    get(c, part)
                        .and_then(Value::as_object)
                        .is_none_or(|m| !m.contains_key("cpu") && !m.contains_key("memory"))
                })
        })
}

/// Upstream `VerifyAgainstWhitelist`: every toleration is covered by one of the whitelist.
fn within_whitelist(tolerations: &[Value], whitelist: &[Value]) -> bool {
    whitelist.is_empty()
        || tolerations
            .iter()
            .all(|t| whitelist.iter().any(|w| is_superset(w, t)))
}

impl PodTolerationRestriction {
    /// The namespace's annotation `key` as a toleration list; `None` when it has none.
    async fn namespace_tolerations(
        &self,
        attrs: &Attributes,
        key: &str,
    ) -> Result<Option<Vec<Value>>, ApiError> {
        if tokio::time::timeout(READY_WAIT, self.informer.wait_synced())
            .await
            .is_err()
        {
            return Err(forbidden(attrs, "not yet ready to handle request"));
        }
        let namespace = match self.informer.get("", &attrs.namespace) {
            Some(ns) => ns,
            None => Arc::new(
                self.store
                    .get(
                        &RequestContext::default(),
                        &attrs.namespace,
                        &GetOptions::default(),
                    )
                    .await?,
            ),
        };
        let Some(text) = get(&namespace, "metadata.annotations")
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
        else {
            return Ok(None);
        };
        let parsed: Value = serde_json::from_str(text).map_err(|e| {
            ApiError::internal(format!("failed to parse the {key} annotation: {e}"))
        })?;
        toleration_list(Some(&parsed), key).map_err(ApiError::internal)
    }
}

#[async_trait]
impl Plugin for PodTolerationRestriction {
    fn name(&self) -> &str {
        NAME
    }

    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }

    fn mutates(&self) -> bool {
        true
    }

    fn validates(&self) -> bool {
        true
    }

    async fn admit(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
        if !is_pod_request(attrs) || attrs.object.is_none() {
            return Ok(());
        }
        let mut extra = Vec::new();
        if attrs.operation == Operation::Create {
            let defaults = self
                .namespace_tolerations(attrs, DEFAULT_TOLERATIONS)
                .await?
                .or_else(|| self.default.clone())
                .unwrap_or_default();
            extra.extend(defaults);
        }
        let Some(pod) = attrs.object.as_mut() else {
            return Ok(());
        };
        if !is_best_effort(pod) {
            extra.push(
                json!({"key": MEMORY_PRESSURE_TAINT, "operator": "Exists", "effect": "NoSchedule"}),
            );
        }
        if extra.is_empty() {
            return Ok(());
        }
        let merged = merge_tolerations(array_at(pod, "spec.tolerations"), &extra);
        if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("tolerations".into(), Value::Array(merged));
        }
        Ok(())
    }

    async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError> {
        if !is_pod_request(attrs) {
            return Ok(());
        }
        let Some(pod) = attrs.object.as_ref() else {
            return Ok(());
        };
        let tolerations = array_at(pod, "spec.tolerations");
        if tolerations.is_empty() {
            return Ok(());
        }
        let (whitelist, scope) = match self
            .namespace_tolerations(attrs, TOLERATIONS_WHITELIST)
            .await?
        {
            Some(list) => (list, "namespace"),
            None => (self.whitelist.clone().unwrap_or_default(), "cluster"),
        };
        if within_whitelist(tolerations, &whitelist) {
            return Ok(());
        }
        Err(forbidden(
            attrs,
            &format!(
                "pod tolerations (possibly merged with namespace default tolerations) conflict with its {scope} whitelist"
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_effort_pods_request_and_limit_no_cpu_or_memory() {
        assert!(is_best_effort(
            &json!({"spec": {"containers": [{"name": "a"}]}})
        ));
        assert!(!is_best_effort(&json!({"spec": {"containers": [
            {"name": "a", "resources": {"limits": {"memory": "1Gi"}}}]}})));
        let whitelist = [json!({"key": "gpu", "operator": "Exists"})];
        assert!(within_whitelist(
            &[json!({"key": "gpu", "operator": "Equal", "value": "x", "effect": "NoSchedule"})],
            &whitelist
        ));
        assert!(!within_whitelist(
            &[json!({"key": "other", "operator": "Exists"})],
            &whitelist
        ));
    }
}
