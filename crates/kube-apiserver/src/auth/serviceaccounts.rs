//! The service-account and bootstrap-token authenticators over the server's informers
//! (upstream `newLegacyServiceAccountAuthenticator`, `newServiceAccountAuthenticator` and the
//! bootstrap authenticator of `pkg/kubeapiserver/authenticator/config.go`).

use std::sync::Arc;

use apiserver::authn::bearertoken::TokenAuthenticator;
use apiserver::registry::informer::Informer;
use apiserver::registry::rest::{
    GetOptions, RequestContext, RestStorage, UpdateFunc, UpdateOptions,
};
use apiserver::status::ApiError;
use serde_json::Value;

use super::AuthDeps;
use super::bootstrap_token::{self, BootstrapTokenAuthenticator, SecretLister};
use crate::serviceaccount::authenticator::ServiceAccountAuthenticator;
use crate::serviceaccount::claims::{Kind, LAST_USED_LABEL, ObjectGetter};

/// One resource's informer and its store (for reads the cache cannot answer yet).
struct Source {
    informer: Informer,
    store: Arc<dyn RestStorage>,
}

/// The objects tokens are bound to: from the informers' caches; on a miss, one read from
/// storage, as upstream's getter falls back to a live client (an object created a moment ago
/// may not have reached the cache).
pub struct InformerObjectGetter {
    serviceaccounts: Source,
    secrets: Source,
    pods: Source,
    nodes: Source,
}

impl InformerObjectGetter {
    /// The getter over the shared informers; `None` when a store is missing.
    pub fn new(deps: &AuthDeps<'_>) -> Option<Self> {
        let source = |resource: &str| -> Option<Source> {
            let informer = deps.informers.informer("", resource)?;
            let store = deps
                .informers
                .stores()
                .get(&(String::new(), resource.to_string()))?;
            Some(Source {
                informer,
                store: Arc::new(store.clone()),
            })
        };
        Some(InformerObjectGetter {
            serviceaccounts: source("serviceaccounts")?,
            secrets: source("secrets")?,
            pods: source("pods")?,
            nodes: source("nodes")?,
        })
    }
}

#[async_trait::async_trait]
impl ObjectGetter for InformerObjectGetter {
    async fn get(&self, kind: Kind, namespace: &str, name: &str) -> Result<Arc<Value>, ApiError> {
        let (source, namespace) = match kind {
            Kind::ServiceAccount => (&self.serviceaccounts, namespace),
            Kind::Secret => (&self.secrets, namespace),
            Kind::Pod => (&self.pods, namespace),
            Kind::Node => (&self.nodes, ""),
        };
        if let Some(obj) = source.informer.get(namespace, name) {
            return Ok(obj);
        }
        let ctx = RequestContext {
            namespace: namespace.to_string(),
            name: name.to_string(),
            ..Default::default()
        };
        source
            .store
            .get(&ctx, name, &GetOptions::default())
            .await
            .map(Arc::new)
    }

    fn mark_legacy_token_used(&self, namespace: &str, name: &str, day: &str) {
        let store = self.secrets.store.clone();
        let ctx = RequestContext {
            namespace: namespace.to_string(),
            name: name.to_string(),
            ..Default::default()
        };
        let (name, day) = (name.to_string(), day.to_string());
        tokio::spawn(async move {
            let label = day.clone();
            let update: UpdateFunc = Box::new(move |current: Option<&Value>| {
                let mut secret = current
                    .cloned()
                    .ok_or_else(|| ApiError::not_found("", "secrets", ""))?;
                let meta = secret
                    .get_mut("metadata")
                    .and_then(Value::as_object_mut)
                    .ok_or_else(|| ApiError::internal("the secret has no metadata"))?;
                let labels = meta
                    .entry("labels")
                    .or_insert_with(|| Value::Object(serde_json::Map::new()));
                if !labels.is_object() {
                    *labels = Value::Object(serde_json::Map::new());
                }
                if let Some(labels) = labels.as_object_mut() {
                    labels.insert(LAST_USED_LABEL.into(), Value::String(label.clone()));
                }
                Ok(secret)
            });
            if let Err(err) = store
                .update(&ctx, &name, update, &UpdateOptions::default(), false)
                .await
            {
                tracing::error!(
                    "Failed to label legacy service account token secret with last-used, err: {err}"
                );
            }
        });
    }
}

/// `kube-system` secrets from the secrets informer.
struct KubeSystemSecrets(Informer);

impl SecretLister for KubeSystemSecrets {
    fn get(&self, name: &str) -> Option<Arc<Value>> {
        self.0.get(bootstrap_token::NAMESPACE, name)
    }
}

/// The legacy and bound service-account authenticators, then (with
/// `--enable-bootstrap-token-auth`) the bootstrap-token one.
pub fn token_authenticators(
    deps: &AuthDeps<'_>,
) -> Result<Vec<Arc<dyn TokenAuthenticator>>, String> {
    let sa = &deps.service_accounts;
    // Upstream's token metrics are in /metrics from the start.
    crate::serviceaccount::metrics::get();
    let getter: Arc<dyn ObjectGetter> = Arc::new(
        InformerObjectGetter::new(deps)
            .ok_or("service-account authentication needs the core stores")?,
    );
    let keys = Arc::new(sa.public_keys.clone());
    let mut out: Vec<Arc<dyn TokenAuthenticator>> = vec![
        Arc::new(ServiceAccountAuthenticator::legacy(
            keys.clone(),
            sa.api_audiences.clone(),
            sa.lookup,
            getter.clone(),
        )),
        Arc::new(ServiceAccountAuthenticator::bound(
            sa.issuers.clone(),
            keys,
            sa.api_audiences.clone(),
            getter,
        )),
    ];
    if deps.opts.enable_bootstrap_token_auth {
        let secrets = deps
            .informers
            .informer("", "secrets")
            .ok_or("bootstrap-token authentication needs the secrets store")?;
        out.push(Arc::new(BootstrapTokenAuthenticator::new(Arc::new(
            KubeSystemSecrets(secrets),
        ))));
    }
    Ok(out)
}
