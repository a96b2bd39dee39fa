//! The automatic reload of `--encryption-provider-config`
//! (`--encryption-provider-config-automatic-reload`, upstream's
//! `DynamicEncryptionConfigContent`): the file is re-read when it changes (inotify on its
//! directory, so editors' rename-into-place and `..data` symlink swaps are seen) and every
//! poll interval (upstream polls every minute). A changed file that loads replaces every
//! resource's transformers at once; one that does not is logged and counted, and the previous
//! configuration stays in force.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::metrics::{record_reload_failure, record_reload_success};
use super::{config_hash, load_encryption_config};
use crate::server::serving::dynamic_certs::{DirectoryWatches, is_change};
use crate::storage::value::ResourceTransformers;

/// How often the file is re-read besides on changes (upstream's
/// `EncryptionConfigFileChangePollDuration`).
pub const POLL_INTERVAL: Duration = Duration::from_secs(60);

/// The name upstream gives the post-start hook that starts the controller.
pub const HOOK_NAME: &str = "start-encryption-provider-config-automatic-reload";

/// The health check upstream adds (healthz and readyz) when reloading: the KMS plugins of the
/// configuration in force. Without KMS providers (none are supported here) it always passes,
/// as upstream's does for a configuration without any.
pub const KMS_PROVIDERS_CHECK: &str = "kms-providers";

/// Reloads the encryption configuration into `transformers`.
pub struct EncryptionConfigController {
    path: PathBuf,
    transformers: Arc<ResourceTransformers>,
    last_hash: String,
    apiserver_id: String,
}

impl EncryptionConfigController {
    /// A controller for the file at `path`, whose content (hashing to `loaded_hash`) is in
    /// force in `transformers`.
    pub fn new(
        path: &Path,
        transformers: Arc<ResourceTransformers>,
        loaded_hash: String,
        apiserver_id: String,
    ) -> Self {
        EncryptionConfigController {
            path: path.to_path_buf(),
            transformers,
            last_hash: loaded_hash,
            apiserver_id,
        }
    }

    /// Reloads when the content changed; true when a new configuration is in force.
    pub fn process(&mut self) -> bool {
        match config_hash(&self.path) {
            Ok(hash) if hash == self.last_hash => return false,
            Ok(_) => {}
            Err(err) => {
                self.failed(&err.to_string());
                return false;
            }
        }
        match load_encryption_config(&self.path) {
            Ok(loaded) if loaded.content_hash == self.last_hash => false,
            Ok(loaded) => {
                self.transformers.set(loaded.transformers);
                self.last_hash = loaded.content_hash;
                record_reload_success(&self.apiserver_id, &self.last_hash);
                tracing::info!(
                    name = "encryption-provider-config-automatic-reload-controller",
                    "Loaded new kms encryption config content"
                );
                true
            }
            Err(err) => {
                self.failed(&err.to_string());
                false
            }
        }
    }

    fn failed(&self, err: &str) {
        record_reload_failure(&self.apiserver_id);
        tracing::error!(
            "error processing encryption config file {}: {err}",
            self.path.display()
        );
    }

    /// Runs until `stop`: reloads on every change of the file and every `interval`.
    pub fn spawn(self, interval: Duration, stop: CancellationToken) {
        tokio::spawn(self.run(interval, stop));
    }

    async fn run(self, interval: Duration, stop: CancellationToken) {
        tracing::info!(
            name = "encryption-provider-config-automatic-reload-controller",
            "Starting controller"
        );
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<notify::Result<notify::Event>>();
        let watcher = match notify::recommended_watcher(move |event| {
            let _ = tx.send(event);
        }) {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::error!(
                    "cannot watch the encryption provider configuration, relying on periodic re-reads: {e}"
                );
                None
            }
        };
        let mut watches = DirectoryWatches::new(watcher);
        let path = self.path.clone();
        watches.refresh(&[path.as_path()]);
        let period = interval.max(Duration::from_millis(10));
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut me = Some(self);
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                event = rx.recv() => {
                    let mut changed = false;
                    let mut next = event;
                    loop {
                        match next {
                            Some(Ok(event)) if is_change(&event.kind) => {
                                changed = true;
                                watches.forget_removed(&event);
                            }
                            Some(Ok(_)) | None => {}
                            Some(Err(e)) => tracing::debug!("encryption config watch error: {e}"),
                        }
                        match rx.try_recv() {
                            Ok(more) => next = Some(more),
                            Err(_) => break,
                        }
                    }
                    if changed {
                        watches.refresh(&[path.as_path()]);
                        me = process_in_background(me).await;
                    }
                }
                _ = tick.tick() => {
                    watches.refresh(&[path.as_path()]);
                    me = process_in_background(me).await;
                }
            }
            if me.is_none() {
                break;
            }
        }
        tracing::info!(
            name = "encryption-provider-config-automatic-reload-controller",
            "Shutting down controller"
        );
    }
}

/// [`EncryptionConfigController::process`] off the async worker threads (it reads the file
/// and derives keys).
async fn process_in_background(
    controller: Option<EncryptionConfigController>,
) -> Option<EncryptionConfigController> {
    let mut controller = controller?;
    match tokio::task::spawn_blocking(move || {
        controller.process();
        controller
    })
    .await
    {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::error!("encryption config reload failed: {e}");
            None
        }
    }
}
