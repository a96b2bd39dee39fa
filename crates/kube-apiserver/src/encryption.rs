//! Encryption at rest from `--encryption-provider-config` and
//! `--encryption-provider-config-automatic-reload` (upstream's
//! `EtcdOptions.maybeApplyResourceTransformers`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use apiserver::server::encryptionconfig::controller::{
    EncryptionConfigController, KMS_PROVIDERS_CHECK, POLL_INTERVAL,
};
use apiserver::server::encryptionconfig::load_encryption_config;
use apiserver::server::encryptionconfig::metrics::record_last_config;
use apiserver::server::healthz::{SharedHealthChecker, named_check};
use apiserver::server::hooks::PostStartHookFn;
use apiserver::storage::value::ResourceTransformers;

pub use apiserver::server::encryptionconfig::controller::HOOK_NAME as RELOAD_HOOK_NAME;

/// The value transformers of every resource, and the reload controller when asked for.
pub struct Encryption {
    /// What the storage backend encrypts with (identity without a configuration).
    pub transformers: Arc<ResourceTransformers>,
    reload: Option<Mutex<Option<EncryptionConfigController>>>,
}

impl Encryption {
    /// Loads the configuration the flags name; a bad one is the one-line start-up error.
    pub fn from_flags(
        config: Option<&PathBuf>,
        automatic_reload: bool,
        apiserver_id: &str,
    ) -> Result<Self, String> {
        let Some(path) = config else {
            return Ok(Encryption {
                transformers: ResourceTransformers::identity(),
                reload: None,
            });
        };
        let loaded = load_encryption_config(path).map_err(|e| e.to_string())?;
        record_last_config(apiserver_id, &loaded.content_hash);
        let transformers = ResourceTransformers::new(loaded.transformers);
        let reload = automatic_reload.then(|| {
            Mutex::new(Some(EncryptionConfigController::new(
                path,
                transformers.clone(),
                loaded.content_hash,
                apiserver_id.to_string(),
            )))
        });
        Ok(Encryption {
            transformers,
            reload,
        })
    }

    /// The health checks of the encryption configuration: upstream's `kms-providers` when
    /// reloading (healthz and readyz).
    pub fn health_checks(&self) -> Vec<SharedHealthChecker> {
        if self.reload.is_none() {
            return Vec::new();
        }
        vec![named_check(KMS_PROVIDERS_CHECK, |_| Ok(()))]
    }

    /// The post-start hook that starts the reload controller (upstream's
    /// `start-encryption-provider-config-automatic-reload`), when reloading is on.
    pub fn reload_hook(self: &Arc<Self>) -> Option<PostStartHookFn> {
        self.reload.as_ref()?;
        let this = self.clone();
        Some(Arc::new(move |ctx| {
            let controller = this
                .reload
                .as_ref()
                .and_then(|slot| slot.lock().unwrap_or_else(|p| p.into_inner()).take());
            if let Some(controller) = controller {
                controller.spawn(POLL_INTERVAL, ctx.stop.clone());
            }
            Box::pin(async { Ok(()) })
        }))
    }
}
