//! The webhooks of the stored configurations, as the plugins use them (upstream's webhook
//! accessors and configuration managers): configurations sorted by name, webhooks in their
//! order, each with its selectors, match conditions compiled once and the client settings.
//!
//! [`HookSource`] keeps the list current from the configuration informer: the informer's
//! handler only bumps a generation counter, and the next request rebuilds the list when the
//! counter moved, so a change is seen by the first request after the informer saw it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use apiserver::registry::informer::Informer;
use apiserver::util::cel::Expression;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use super::rules::Rule;
use crate::apis::admissionregistration::webhooks::MATCH_CONDITION_VARIABLES;

/// Mutating or validating.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookKind {
    /// A MutatingWebhookConfiguration's webhook.
    Mutating,
    /// A ValidatingWebhookConfiguration's webhook.
    Validating,
}

/// Where a webhook is reached.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// `clientConfig.url`.
    Url(String),
    /// `clientConfig.service`.
    Service {
        /// The Service's namespace.
        namespace: String,
        /// The Service's name.
        name: String,
        /// The URL path (empty for `/`).
        path: String,
        /// The Service port.
        port: u16,
    },
}

/// A webhook's `clientConfig`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClientConfig {
    /// URL or Service.
    pub endpoint: Endpoint,
    /// PEM CA bundle (empty: the system roots).
    pub ca_bundle: Vec<u8>,
}

/// One named match condition, compiled (or the compile error, reported when evaluated).
#[derive(Clone, Debug)]
pub struct MatchCondition {
    /// The condition's name.
    pub name: String,
    /// The compiled expression.
    pub expression: Result<Expression, String>,
    /// The expression's text.
    pub text: String,
}

/// One webhook of a configuration.
#[derive(Clone, Debug)]
pub struct Hook {
    /// `<configuration>/<webhook>/<n>`: unique even when a configuration repeats a name.
    pub uid: String,
    /// The configuration's name.
    pub configuration: String,
    /// The webhook's name.
    pub name: String,
    /// Mutating or validating.
    pub kind: HookKind,
    /// The rules.
    pub rules: Vec<Rule>,
    /// `failurePolicy: Ignore`.
    pub fail_open: bool,
    /// `matchPolicy: Equivalent`.
    pub equivalent: bool,
    /// `namespaceSelector` (a `metav1.LabelSelector`).
    pub namespace_selector: Value,
    /// `objectSelector`.
    pub object_selector: Value,
    /// `sideEffects`, if set.
    pub side_effects: Option<String>,
    /// `timeoutSeconds`.
    pub timeout: Duration,
    /// `admissionReviewVersions`, in preference order.
    pub review_versions: Vec<String>,
    /// `reinvocationPolicy: IfNeeded`.
    pub reinvoke_if_needed: bool,
    /// `matchConditions`.
    pub match_conditions: Vec<MatchCondition>,
    /// Where to call, or why the stored client configuration cannot be used.
    pub client: Result<ClientConfig, String>,
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn client_config(cc: Option<&Value>) -> Result<ClientConfig, String> {
    let cc = cc.unwrap_or(&Value::Null);
    let ca_bundle = match cc.get("caBundle").and_then(Value::as_str) {
        Some(b64) => STANDARD
            .decode(b64)
            .map_err(|e| format!("invalid caBundle: {e}"))?,
        None => Vec::new(),
    };
    let endpoint = if let Some(url) = cc.get("url").and_then(Value::as_str) {
        Endpoint::Url(url.to_string())
    } else if let Some(service) = cc.get("service").filter(|s| s.is_object()) {
        let text = |key: &str| {
            service
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let port = service.get("port").and_then(Value::as_u64).unwrap_or(443);
        Endpoint::Service {
            namespace: text("namespace"),
            name: text("name"),
            path: text("path"),
            port: u16::try_from(port).map_err(|_| format!("invalid port {port}"))?,
        }
    } else {
        return Err("webhook configuration must have either service or URL".into());
    };
    Ok(ClientConfig {
        endpoint,
        ca_bundle,
    })
}

/// The webhooks of one configuration object, in order.
pub fn hooks_of(config: &Value, kind: HookKind) -> Vec<Hook> {
    let configuration = config
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let empty = Vec::new();
    let hooks = config
        .get("webhooks")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    hooks
        .iter()
        .map(|h| {
            let name = h
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let n = seen.entry(name.clone()).or_insert(0);
            let uid = format!("{configuration}/{name}/{n}");
            *n += 1;
            let text = |key: &str| h.get(key).and_then(Value::as_str);
            let match_conditions = h
                .get("matchConditions")
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .map(|c| {
                            let text = c
                                .get("expression")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .trim()
                                .to_string();
                            MatchCondition {
                                name: c
                                    .get("name")
                                    .and_then(Value::as_str)
                                    .unwrap_or_default()
                                    .to_string(),
                                expression: Expression::compile(&text, MATCH_CONDITION_VARIABLES),
                                text,
                            }
                        })
                        .collect()
                })
                .unwrap_or_default();
            Hook {
                uid,
                configuration: configuration.clone(),
                name,
                kind,
                rules: h
                    .get("rules")
                    .and_then(Value::as_array)
                    .map(|rules| rules.iter().map(Rule::parse).collect())
                    .unwrap_or_default(),
                fail_open: text("failurePolicy") == Some("Ignore"),
                equivalent: text("matchPolicy") != Some("Exact"),
                namespace_selector: h.get("namespaceSelector").cloned().unwrap_or(Value::Null),
                object_selector: h.get("objectSelector").cloned().unwrap_or(Value::Null),
                side_effects: text("sideEffects").map(str::to_string),
                timeout: Duration::from_secs(
                    h.get("timeoutSeconds")
                        .and_then(Value::as_u64)
                        .unwrap_or(10)
                        .clamp(1, 30),
                ),
                review_versions: strings(h.get("admissionReviewVersions")),
                reinvoke_if_needed: text("reinvocationPolicy") == Some("IfNeeded"),
                match_conditions,
                client: client_config(h.get("clientConfig")),
            }
        })
        .collect()
}

/// Every webhook of `configs`, configurations sorted by name.
pub fn all_hooks(configs: &[Arc<Value>], kind: HookKind) -> Vec<Arc<Hook>> {
    let mut sorted: Vec<&Arc<Value>> = configs.iter().collect();
    sorted.sort_by(|a, b| {
        let name = |v: &Value| {
            v.pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        name(a).cmp(&name(b))
    });
    sorted
        .into_iter()
        .flat_map(|c| hooks_of(c, kind))
        .map(Arc::new)
        .collect()
}

/// The current webhooks of one configuration resource, rebuilt after a change.
pub struct HookSource {
    informer: Informer,
    kind: HookKind,
    generation: Arc<AtomicU64>,
    cached: RwLock<(u64, Arc<Vec<Arc<Hook>>>)>,
}

impl std::fmt::Debug for HookSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookSource")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl HookSource {
    /// A source over the configuration informer.
    pub fn new(informer: Informer, kind: HookKind) -> Self {
        // Generation 1 so that the first request builds the list.
        let generation = Arc::new(AtomicU64::new(1));
        let bump = generation.clone();
        informer.add_handler(Arc::new(move |_event| {
            bump.fetch_add(1, Ordering::SeqCst);
        }));
        HookSource {
            informer,
            kind,
            generation,
            cached: RwLock::new((0, Arc::new(Vec::new()))),
        }
    }

    /// Whether the informer has loaded the configurations.
    pub fn has_synced(&self) -> bool {
        self.informer.has_synced()
    }

    /// Waits until the informer has loaded the configurations.
    pub async fn wait_synced(&self) {
        self.informer.wait_synced().await;
    }

    /// The current webhooks.
    pub fn hooks(&self) -> Arc<Vec<Arc<Hook>>> {
        let generation = self.generation.load(Ordering::SeqCst);
        {
            let cached = self.cached.read().unwrap_or_else(|e| e.into_inner());
            if cached.0 == generation {
                return cached.1.clone();
            }
        }
        let hooks = Arc::new(all_hooks(&self.informer.list(), self.kind));
        let mut cached = self.cached.write().unwrap_or_else(|e| e.into_inner());
        if cached.0 < generation {
            *cached = (generation, hooks.clone());
        }
        hooks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn configurations_sort_by_name_and_uids_count_repeated_names() {
        let b = Arc::new(json!({"metadata": {"name": "b"}, "webhooks": [
            {"name": "x.example.com", "clientConfig": {"url": "https://h/x"}, "failurePolicy": "Ignore",
             "matchPolicy": "Exact", "timeoutSeconds": 3, "reinvocationPolicy": "IfNeeded",
             "admissionReviewVersions": ["v1beta1", "v1"], "sideEffects": "None"},
            {"name": "x.example.com", "clientConfig": {"service": {"namespace": "ns", "name": "svc", "path": "/p"}}}
        ]}));
        let a = Arc::new(json!({"metadata": {"name": "a"}, "webhooks": [
            {"name": "y.example.com", "clientConfig": {}, "matchConditions": [{"name": "c", "expression": "object != null"}]}
        ]}));
        let hooks = all_hooks(&[b, a], HookKind::Mutating);
        let uids: Vec<&str> = hooks.iter().map(|h| h.uid.as_str()).collect();
        assert_eq!(
            uids,
            [
                "a/y.example.com/0",
                "b/x.example.com/0",
                "b/x.example.com/1"
            ]
        );
        assert!(hooks[0].client.is_err());
        assert!(hooks[0].match_conditions[0].expression.is_ok());
        let x = &hooks[1];
        assert!(x.fail_open && !x.equivalent && x.reinvoke_if_needed);
        assert_eq!(x.timeout, Duration::from_secs(3));
        assert_eq!(x.review_versions, ["v1beta1", "v1"]);
        assert_eq!(
            hooks[2].client.as_ref().unwrap().endpoint,
            Endpoint::Service {
                namespace: "ns".into(),
                name: "svc".into(),
                path: "/p".into(),
                port: 443
            }
        );
        assert!(!hooks[2].fail_open && hooks[2].equivalent);
    }
}
