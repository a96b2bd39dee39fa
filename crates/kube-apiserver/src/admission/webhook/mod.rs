//! The `MutatingAdmissionWebhook` and `ValidatingAdmissionWebhook` plugins (upstream
//! `admission/plugin/webhook`): the webhooks of the stored Mutating/ValidatingWebhookConfigurations,
//! read through informers, called over TLS with AdmissionReview v1 (or v1beta1).
//!
//! - [`hooks`]: the configurations as webhooks, kept current from the informers.
//! - [`rules`], [`conditions`]: which requests a webhook selects.
//! - [`review`]: the AdmissionReview sent and the checks on the answer.
//! - [`client`], [`config`]: HTTPS clients, `caBundle`, credentials from the admission
//!   kubeconfig, Services resolved to addresses.
//! - [`dispatch`]: selection, calls, failure policy; [`patch`]: JSON patches.
//! - [`metrics`]: upstream's webhook metrics.

pub mod client;
pub mod conditions;
pub mod config;
pub mod dispatch;
pub mod equivalent;
pub mod hooks;
pub mod metrics;
pub mod patch;
pub mod review;
pub mod rules;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use apiserver::admission::{self, Attributes, Operation, Plugin};
use apiserver::status::ApiError;
use serde_json::Value;

use self::client::Clients;
use self::dispatch::{CallError, Dispatcher, Invocation, apply_patch, failed_closed, record};
use self::hooks::{HookKind, HookSource};

/// The mutating plugin's name.
pub const MUTATING: &str = "MutatingAdmissionWebhook";
/// The validating plugin's name.
pub const VALIDATING: &str = "ValidatingAdmissionWebhook";

/// How long a request waits for the configurations to be loaded (upstream
/// `timeToWaitForReady`).
const READY_WAIT: Duration = Duration::from_secs(10);

/// Mutation audit annotation prefix.
const MUTATION_PREFIX: &str = "mutation.webhook.admission.k8s.io/";
/// The prefix of the audit annotations (at level `Request`) carrying a mutating webhook's
/// patch.
const PATCH_PREFIX: &str = "patch.webhook.admission.k8s.io/";
/// Fail-open audit annotation prefixes.
const MUTATION_FAILED_OPEN_PREFIX: &str = "failed-open.mutation.webhook.admission.k8s.io/";
const VALIDATING_FAILED_OPEN_PREFIX: &str = "failed-open.validating.webhook.admission.k8s.io/";

/// Registers both plugins.
pub fn register(plugins: &mut super::Registry) {
    plugins.register(MUTATING, new_mutating);
    plugins.register(VALIDATING, new_validating);
}

fn source(
    ctx: &super::PluginContext,
    resource: &str,
    kind: HookKind,
) -> Result<HookSource, String> {
    let informer = ctx
        .informers
        .informer("admissionregistration.k8s.io", resource)
        .ok_or_else(|| {
            format!("the server does not serve admissionregistration.k8s.io/{resource}")
        })?;
    Ok(HookSource::new(informer, kind))
}

fn dispatcher(ctx: &super::PluginContext) -> Result<Dispatcher, String> {
    let auth = config::load(ctx.config.as_ref())?;
    metrics::init();
    Ok(Dispatcher {
        clients: Clients::new(
            auth,
            ctx.service_resolver
                .clone()
                .map(|r| Arc::new(r) as Arc<dyn client::ResolveService>),
        ),
        namespaces: ctx.informers.informer("", "namespaces"),
        namespace_store: ctx
            .informers
            .stores()
            .get(&(String::new(), "namespaces".to_string()))
            .map(|store| {
                Arc::new(store.clone()) as Arc<dyn apiserver::registry::rest::RestStorage>
            }),
        equivalents: equivalent::Equivalents::from_groups(&crate::apis::builtin_groups()),
        strategies: ctx
            .informers
            .stores()
            .iter()
            .map(|(key, store)| (key.clone(), store.shared_strategy().clone()))
            .collect(),
        authz: ctx.authz.clone(),
    })
}

fn new_mutating(ctx: &super::PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(MutatingWebhooks {
        source: source(ctx, "mutatingwebhookconfigurations", HookKind::Mutating)?,
        dispatcher: dispatcher(ctx)?,
    }))
}

fn new_validating(ctx: &super::PluginContext) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(ValidatingWebhooks {
        source: source(ctx, "validatingwebhookconfigurations", HookKind::Validating)?,
        dispatcher: dispatcher(ctx)?,
    }))
}

/// Waits for the configurations (upstream answers 403 `not yet ready to handle request`
/// when they are not loaded within ten seconds).
async fn ready(source: &HookSource, attrs: &Attributes) -> Result<(), ApiError> {
    if source.has_synced() {
        return Ok(());
    }
    tokio::time::timeout(READY_WAIT, source.wait_synced())
        .await
        .map_err(|_| admission::forbidden(attrs, "not yet ready to handle request"))
}

/// The webhooks a request skips: the admission configuration resources themselves.
fn exempt(attrs: &Attributes) -> bool {
    rules::is_exempt(&attrs.kind.group, &attrs.kind.kind)
}

/// The mutating plugin.
pub struct MutatingWebhooks {
    source: HookSource,
    dispatcher: Dispatcher,
}

/// What the mutating plugin remembers between the first pass and the reinvocation pass
/// (upstream `webhookReinvokeContext`).
#[derive(Clone, Debug, Default)]
struct ReinvokeState {
    /// The object after the last webhook pass.
    last_output: Option<Value>,
    /// `IfNeeded` webhooks called since the last change.
    previously_invoked: BTreeSet<String>,
    /// Webhooks to call again in the reinvocation pass.
    reinvoke: BTreeSet<String>,
}

impl ReinvokeState {
    fn require_reinvoking_previous(&mut self) {
        let previous = std::mem::take(&mut self.previously_invoked);
        self.reinvoke.extend(previous);
    }
}

impl std::fmt::Debug for MutatingWebhooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MutatingWebhooks").finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl Plugin for MutatingWebhooks {
    fn name(&self) -> &str {
        MUTATING
    }

    fn handles(&self, _op: Operation) -> bool {
        true
    }

    fn mutates(&self) -> bool {
        true
    }

    async fn admit(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
        if exempt(attrs) {
            return Ok(());
        }
        ready(&self.source, attrs).await?;
        let hooks = self.source.hooks();
        if hooks.is_empty() {
            return Ok(());
        }
        let mut state = attrs
            .state()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove::<ReinvokeState>()
            .unwrap_or_default();
        let reinvoke = attrs.is_reinvoke();
        if reinvoke && state.last_output != attrs.object {
            // Other plugins changed the object since: every IfNeeded webhook runs again.
            state.require_reinvoking_previous();
        }
        let result = self.run(&hooks, attrs, &mut state, reinvoke).await;
        state.last_output = attrs.object.clone();
        attrs
            .state()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(state);
        result
    }
}

impl MutatingWebhooks {
    async fn run(
        &self,
        hooks: &[Arc<hooks::Hook>],
        attrs: &mut Attributes,
        state: &mut ReinvokeState,
        reinvoke: bool,
    ) -> Result<(), ApiError> {
        let round = usize::from(reinvoke);
        for (index, hook) in hooks.iter().enumerate() {
            let Some(invocation) = self.dispatcher.should_call(hook, attrs).await? else {
                continue;
            };
            // A webhook is never called for the first time in the reinvocation pass.
            if reinvoke && !state.reinvoke.contains(&hook.uid) {
                continue;
            }
            let started = Instant::now();
            let mut changed = false;
            let (object, old_object) = self.dispatcher.versioned(attrs, &invocation.matched);
            let result = match self
                .dispatcher
                .call(&invocation, attrs, &object, &old_object)
                .await
            {
                Ok(verdict) => {
                    let mut versioned = (!object.is_null()).then_some(object);
                    match apply_patch(&hook.name, &verdict, &mut versioned) {
                        Ok(c) => {
                            changed = c;
                            if let Some(value) = dispatch::patch_annotation(
                                &hook.configuration,
                                &hook.name,
                                &verdict,
                            ) {
                                attrs.add_annotation_with_level(
                                    &format!("{PATCH_PREFIX}round_{round}_index_{index}"),
                                    &value,
                                    apiserver::audit::Level::Request,
                                );
                            }
                            if c && let Some(patched) = versioned {
                                attrs.object = Some(self.dispatcher.unversioned(
                                    attrs,
                                    &invocation.matched,
                                    patched,
                                ));
                            }
                            Ok(verdict)
                        }
                        Err(e) => Err(e),
                    }
                }
                Err(e) => Err(e),
            };
            record(hook, "admit", attrs.operation.as_str(), started, &result);
            attrs.add_annotation(
                &format!("{MUTATION_PREFIX}round_{round}_index_{index}"),
                &dispatch::mutation_annotation(&hook.configuration, &hook.name, changed),
            );
            if changed {
                state.require_reinvoking_previous();
                attrs.request_reinvocation();
            }
            if hook.reinvoke_if_needed {
                state.previously_invoked.insert(hook.uid.clone());
            }
            match result {
                Ok(_) => {}
                Err(CallError::Calling { reason, .. }) if hook.fail_open => {
                    tracing::warn!(webhook = %hook.name, error = %reason, "failed calling webhook, failing open");
                    metrics::fail_open(&hook.name, "admit");
                    attrs.add_annotation(
                        &format!("{MUTATION_FAILED_OPEN_PREFIX}round_{round}_index_{index}"),
                        &hook.name,
                    );
                }
                Err(CallError::Calling { reason, .. }) => {
                    tracing::warn!(webhook = %hook.name, error = %reason, "failed calling webhook, failing closed");
                    return Err(failed_closed(&hook.name, &reason));
                }
                Err(CallError::Rejected(e) | CallError::Other(e)) => return Err(e),
            }
        }
        Ok(())
    }
}

/// The validating plugin.
pub struct ValidatingWebhooks {
    source: HookSource,
    dispatcher: Dispatcher,
}

impl std::fmt::Debug for ValidatingWebhooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValidatingWebhooks").finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl Plugin for ValidatingWebhooks {
    fn name(&self) -> &str {
        VALIDATING
    }

    fn handles(&self, _op: Operation) -> bool {
        true
    }

    fn validates(&self) -> bool {
        true
    }

    async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError> {
        if exempt(attrs) {
            return Ok(());
        }
        ready(&self.source, attrs).await?;
        let hooks = self.source.hooks();
        let mut relevant: Vec<Invocation> = Vec::new();
        for hook in hooks.iter() {
            if let Some(invocation) = self.dispatcher.should_call(hook, attrs).await? {
                relevant.push(invocation);
            }
        }
        if relevant.is_empty() {
            return Ok(());
        }
        let operation = attrs.operation.as_str();
        let calls = relevant.iter().map(|invocation| async move {
            let started = Instant::now();
            let (object, old_object) = self.dispatcher.versioned(attrs, &invocation.matched);
            let result = self
                .dispatcher
                .call(invocation, attrs, &object, &old_object)
                .await;
            record(&invocation.hook, "validating", operation, started, &result);
            result
        });
        let results = futures::future::join_all(calls).await;
        let mut first: Option<ApiError> = None;
        for (index, (invocation, result)) in relevant.iter().zip(results).enumerate() {
            let hook = &invocation.hook;
            let err = match result {
                Ok(_) => continue,
                Err(CallError::Calling { reason, .. }) if hook.fail_open => {
                    tracing::warn!(webhook = %hook.name, error = %reason, "failed calling webhook, failing open");
                    metrics::fail_open(&hook.name, "validating");
                    attrs.add_annotation(
                        &format!("{VALIDATING_FAILED_OPEN_PREFIX}round_0_index_{index}"),
                        &hook.name,
                    );
                    continue;
                }
                Err(CallError::Calling { reason, .. }) => {
                    tracing::warn!(webhook = %hook.name, error = %reason, "failed calling webhook, failing closed");
                    failed_closed(&hook.name, &reason)
                }
                Err(CallError::Rejected(e) | CallError::Other(e)) => e,
            };
            first.get_or_insert(err);
        }
        match first {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }
}
