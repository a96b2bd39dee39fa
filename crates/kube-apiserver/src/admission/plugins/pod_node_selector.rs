//! PodNodeSelector (upstream `plugin/pkg/admission/podnodeselector`): a new pod's node
//! selector gets its namespace's (annotation `scheduler.alpha.kubernetes.io/node-selector`,
//! else the configuration's `clusterDefaultNodeSelector`); it may not contradict it, and must
//! stay within the configuration's per-namespace whitelist.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use apiserver::admission::{Attributes, Operation, Plugin, forbidden};
use apiserver::registry::informer::Informer;
use apiserver::registry::rest::{GetOptions, RequestContext, RestStorage};
use apiserver::registry::store::Store;
use apiserver::status::ApiError;
use async_trait::async_trait;
use serde_json::Value;

use super::pods::is_pod_request;
use crate::admission::PluginContext;
use crate::apis::json::get;

/// The plugin's name.
pub const NAME: &str = "PodNodeSelector";

/// The namespace annotation holding its node selector.
const NAMESPACE_NODE_SELECTOR: &str = "scheduler.alpha.kubernetes.io/node-selector";
/// The configuration key of the selector for namespaces without the annotation.
const CLUSTER_DEFAULT: &str = "clusterDefaultNodeSelector";
/// How long to wait for the namespace informer's first list.
const READY_WAIT: Duration = Duration::from_secs(10);

type Labels = BTreeMap<String, String>;

/// Upstream `ConvertSelectorToLabelsMap`: `a=b,c==d` as a map.
fn parse_selector(selector: &str) -> Result<Labels, String> {
    let mut labels = Labels::new();
    for term in selector.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let (key, value) = term
            .split_once("==")
            .or_else(|| term.split_once('='))
            .filter(|(k, _)| !k.trim().is_empty() && !k.contains('!'))
            .ok_or_else(|| format!("invalid selector: '{term}'; can't understand '{term}'"))?;
        labels.insert(key.trim().to_string(), value.trim().to_string());
    }
    Ok(labels)
}

fn conflicts(a: &Labels, b: &Labels) -> bool {
    a.iter().any(|(k, v)| b.get(k).is_some_and(|w| w != v))
}

/// The PodNodeSelector plugin.
pub struct PodNodeSelector {
    informer: Informer,
    store: Store,
    /// `clusterDefaultNodeSelector` and the per-namespace whitelists.
    selectors: BTreeMap<String, String>,
}

/// Builds the plugin from its configuration (`podNodeSelectorPluginConfig`, a map of
/// namespace to selector plus `clusterDefaultNodeSelector`).
pub fn new(ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    let missing = "PodNodeSelector needs the namespaces resource";
    let mut selectors = BTreeMap::new();
    if let Some(config) = ctx.config.as_ref() {
        let entries = config
            .get("podNodeSelectorPluginConfig")
            .and_then(Value::as_object)
            .ok_or("PodNodeSelector configuration: podNodeSelectorPluginConfig is missing")?;
        for (namespace, selector) in entries {
            let selector = selector.as_str().ok_or_else(|| {
                format!(
                    "PodNodeSelector configuration: the selector of {namespace} is not a string"
                )
            })?;
            parse_selector(selector).map_err(|e| format!("PodNodeSelector configuration: {e}"))?;
            selectors.insert(namespace.clone(), selector.to_string());
        }
    }
    Ok(Arc::new(PodNodeSelector {
        informer: ctx.informers.informer("", "namespaces").ok_or(missing)?,
        store: ctx
            .informers
            .stores()
            .get(&(String::new(), "namespaces".to_string()))
            .cloned()
            .ok_or(missing)?,
        selectors,
    }))
}

fn pod_selector(pod: &Value) -> Labels {
    get(pod, "spec.nodeSelector")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

impl PodNodeSelector {
    async fn namespace_selector(&self, attrs: &Attributes) -> Result<Labels, ApiError> {
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
        let selector = get(&namespace, "metadata.annotations")
            .and_then(|a| a.get(NAMESPACE_NODE_SELECTOR))
            .and_then(Value::as_str)
            .or_else(|| self.selectors.get(CLUSTER_DEFAULT).map(String::as_str))
            .unwrap_or_default();
        parse_selector(selector).map_err(|e| forbidden(attrs, &e))
    }
}

fn conflict_error(attrs: &Attributes) -> ApiError {
    forbidden(
        attrs,
        "pod node label selector conflicts with its namespace node label selector",
    )
}

#[async_trait]
impl Plugin for PodNodeSelector {
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
        let namespace_selector = self.namespace_selector(attrs).await?;
        let Some(pod) = attrs.object.as_ref() else {
            return Ok(());
        };
        let mut selector = pod_selector(pod);
        if conflicts(&namespace_selector, &selector) {
            return Err(conflict_error(attrs));
        }
        for (k, v) in namespace_selector {
            selector.entry(k).or_insert(v);
        }
        if selector.is_empty() {
            return Ok(());
        }
        if let Some(spec) = attrs
            .object
            .as_mut()
            .and_then(|p| p.get_mut("spec"))
            .and_then(Value::as_object_mut)
        {
            let map = selector
                .into_iter()
                .map(|(k, v)| (k, Value::String(v)))
                .collect();
            spec.insert("nodeSelector".into(), Value::Object(map));
        }
        Ok(())
    }

    async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError> {
        if !is_pod_request(attrs) {
            return Ok(());
        }
        let namespace_selector = self.namespace_selector(attrs).await?;
        let Some(pod) = attrs.object.as_ref() else {
            return Ok(());
        };
        let selector = pod_selector(pod);
        if conflicts(&namespace_selector, &selector) {
            return Err(conflict_error(attrs));
        }
        let whitelist = parse_selector(
            self.selectors
                .get(&attrs.namespace)
                .map(String::as_str)
                .unwrap_or_default(),
        )
        .map_err(|e| forbidden(attrs, &e))?;
        let within = whitelist.is_empty()
            || selector
                .iter()
                .all(|(k, v)| whitelist.get(k).is_some_and(|w| w == v));
        if !within {
            return Err(forbidden(
                attrs,
                "pod node label selector labels conflict with its namespace whitelist",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_parse_and_conflict_as_upstream() {
        let ns = parse_selector("env=prod, tier==web").unwrap();
        assert_eq!(ns.get("tier").map(String::as_str), Some("web"));
        let pod = parse_selector("env=dev").unwrap();
        assert!(conflicts(&ns, &pod));
        assert!(!conflicts(&ns, &parse_selector("zone=a").unwrap()));
        assert!(parse_selector("env!=prod").is_err());
        assert!(parse_selector("").unwrap().is_empty());
    }
}
