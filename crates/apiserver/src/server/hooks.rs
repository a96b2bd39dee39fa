//! Post-start and pre-shutdown hooks (upstream `pkg/server/hooks.go`).
//!
//! Post-start hooks run concurrently once the server listens; each has a health check
//! `poststarthook/<name>` that fails with `not finished` until the hook returns. A failing hook
//! is fatal, as upstream's `klog.Fatalf`: the server's `run` returns an error and the binary
//! exits. Pre-shutdown hooks run one after another right after stop, while the server still
//! serves normally.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use super::loopback::LoopbackClientConfig;

/// A boxed hook future.
pub type HookFuture = Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'static>>;

/// What a post-start hook receives.
#[derive(Clone, Debug)]
pub struct PostStartHookContext {
    /// How to reach this server over loopback as a privileged client.
    pub loopback: LoopbackClientConfig,
    /// Cancelled when the HTTP server stops (upstream's `stopHTTPServerCtx`): at
    /// NotAcceptingNewRequest, or once in-flight requests drained with
    /// `shutdown_send_retry_after`; not at the stop signal, so what a hook starts keeps running
    /// through the shutdown delay.
    pub stop: CancellationToken,
}

/// A post-start hook function.
pub type PostStartHookFn = Arc<dyn Fn(PostStartHookContext) -> HookFuture + Send + Sync>;

/// A pre-shutdown hook function.
pub type PreShutdownHookFn = Arc<dyn Fn() -> HookFuture + Send + Sync>;

/// Errors of hook registration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookError {
    /// The name is empty.
    #[error("missing name")]
    MissingName,
    /// Added after the hooks were started.
    #[error("unable to add {0:?} because PostStartHooks have already been called")]
    AlreadyCalled(String),
    /// A pre-shutdown hook added after the hooks ran.
    #[error("unable to add {0:?} because PreShutdownHooks have already been called")]
    PreShutdownAlreadyCalled(String),
    /// A post-start hook name used twice (upstream names the stack that registered it first;
    /// here the source location of that registration).
    #[error("unable to add {name:?} because it was already registered by: {registered_by}")]
    DuplicatePostStart {
        /// The hook's name.
        name: String,
        /// Where the first hook of that name was registered.
        registered_by: String,
    },
    /// A pre-shutdown hook name used twice.
    #[error("unable to add {0:?} because it is already registered")]
    DuplicatePreShutdown(String),
}

/// A registered post-start hook, shared between the server that registered it and every
/// server that delegates to it (so the health check sees the hook finish wherever it runs).
#[derive(Clone)]
pub struct PostStartHookEntry {
    /// The hook.
    pub hook: PostStartHookFn,
    /// Fired when the hook returned successfully.
    pub done: CancellationToken,
    /// Where the hook was registered (`file:line:column`), named when the name is reused.
    pub registered_by: String,
}

impl std::fmt::Debug for PostStartHookEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostStartHookEntry")
            .field("done", &self.done.is_cancelled())
            .finish()
    }
}

/// The post-start hooks of a server.
#[derive(Default)]
pub struct PostStartHooks {
    inner: Mutex<PostStartState>,
}

#[derive(Default)]
struct PostStartState {
    hooks: BTreeMap<String, PostStartHookEntry>,
    called: bool,
}

impl PostStartHooks {
    /// Registers an entry (a new hook, or one copied from a delegate).
    pub fn add_entry(&self, name: &str, entry: PostStartHookEntry) -> Result<(), HookError> {
        if name.is_empty() {
            return Err(HookError::MissingName);
        }
        let mut state = self.inner.lock().map_err(|_| HookError::MissingName)?;
        if state.called {
            return Err(HookError::AlreadyCalled(name.to_string()));
        }
        if let Some(existing) = state.hooks.get(name) {
            return Err(HookError::DuplicatePostStart {
                name: name.to_string(),
                registered_by: existing.registered_by.clone(),
            });
        }
        state.hooks.insert(name.to_string(), entry);
        Ok(())
    }

    /// Whether a hook of that name is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.inner
            .lock()
            .map(|s| s.hooks.contains_key(name))
            .unwrap_or(false)
    }

    /// A copy of the registered entries.
    pub fn entries(&self) -> BTreeMap<String, PostStartHookEntry> {
        self.inner
            .lock()
            .map(|s| s.hooks.clone())
            .unwrap_or_default()
    }

    /// Marks the hooks as called and starts each in its own task. A hook error is reported on
    /// `failures` (the caller treats it as fatal).
    pub fn run(
        &self,
        ctx: PostStartHookContext,
        failures: tokio::sync::mpsc::UnboundedSender<String>,
    ) {
        let entries = match self.inner.lock() {
            Ok(mut state) => {
                state.called = true;
                state.hooks.clone()
            }
            Err(_) => return,
        };
        for (name, entry) in entries {
            let ctx = ctx.clone();
            let failures = failures.clone();
            tokio::spawn(async move {
                match (entry.hook)(ctx).await {
                    Ok(()) => entry.done.cancel(),
                    Err(err) => {
                        let message = format!("PostStartHook {name:?} failed: {err}");
                        tracing::error!("{message}");
                        let _ = failures.send(message);
                    }
                }
            });
        }
    }
}

/// The pre-shutdown hooks of a server.
#[derive(Default)]
pub struct PreShutdownHooks {
    inner: Mutex<PreShutdownState>,
}

#[derive(Default)]
struct PreShutdownState {
    hooks: BTreeMap<String, PreShutdownHookFn>,
    called: bool,
}

impl PreShutdownHooks {
    /// Registers a hook.
    pub fn add(&self, name: &str, hook: PreShutdownHookFn) -> Result<(), HookError> {
        if name.is_empty() {
            return Err(HookError::MissingName);
        }
        let mut state = self.inner.lock().map_err(|_| HookError::MissingName)?;
        if state.called {
            return Err(HookError::PreShutdownAlreadyCalled(name.to_string()));
        }
        if state.hooks.contains_key(name) {
            return Err(HookError::DuplicatePreShutdown(name.to_string()));
        }
        state.hooks.insert(name.to_string(), hook);
        Ok(())
    }

    /// A copy of the registered hooks.
    pub fn entries(&self) -> BTreeMap<String, PreShutdownHookFn> {
        self.inner
            .lock()
            .map(|s| s.hooks.clone())
            .unwrap_or_default()
    }

    /// Runs every hook in turn; returns the aggregated errors (`PreShutdownHook "<n>" failed: …`).
    pub async fn run(&self) -> Result<(), Vec<String>> {
        let hooks = match self.inner.lock() {
            Ok(mut state) => {
                state.called = true;
                state.hooks.clone()
            }
            Err(_) => return Ok(()),
        };
        let mut errors = Vec::new();
        for (name, hook) in hooks {
            if let Err(err) = hook().await {
                errors.push(format!("PreShutdownHook {name:?} failed: {err}"));
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok_hook() -> PostStartHookFn {
        Arc::new(|_ctx| Box::pin(async { Ok(()) }))
    }

    #[test]
    fn registration_errors() {
        let hooks = PostStartHooks::default();
        let entry = PostStartHookEntry {
            hook: ok_hook(),
            done: CancellationToken::new(),
            registered_by: "first.rs:1:1".into(),
        };
        assert_eq!(
            hooks.add_entry("", entry.clone()),
            Err(HookError::MissingName)
        );
        hooks.add_entry("a", entry.clone()).unwrap();
        let again = PostStartHookEntry {
            registered_by: "second.rs:2:2".into(),
            ..entry
        };
        let err = hooks.add_entry("a", again).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unable to add \"a\" because it was already registered by: first.rs:1:1"
        );
    }

    #[tokio::test]
    async fn run_marks_done_and_reports_failures() {
        let hooks = PostStartHooks::default();
        let ok = PostStartHookEntry {
            hook: ok_hook(),
            done: CancellationToken::new(),
            registered_by: String::new(),
        };
        let bad = PostStartHookEntry {
            hook: Arc::new(|_ctx| Box::pin(async { Err("boom".to_string()) })),
            done: CancellationToken::new(),
            registered_by: String::new(),
        };
        hooks.add_entry("ok", ok.clone()).unwrap();
        hooks.add_entry("bad", bad.clone()).unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        hooks.run(
            PostStartHookContext {
                loopback: LoopbackClientConfig::default(),
                stop: CancellationToken::new(),
            },
            tx,
        );
        ok.done.cancelled().await;
        let failure = rx.recv().await.unwrap();
        assert_eq!(failure, "PostStartHook \"bad\" failed: boom");
        assert!(!bad.done.is_cancelled());
        let late = hooks.add_entry("late", ok);
        assert_eq!(late, Err(HookError::AlreadyCalled("late".into())));
    }

    #[tokio::test]
    async fn pre_shutdown_errors_are_aggregated() {
        let hooks = PreShutdownHooks::default();
        hooks
            .add("a", Arc::new(|| Box::pin(async { Err("x".to_string()) })))
            .unwrap();
        hooks
            .add("b", Arc::new(|| Box::pin(async { Ok(()) })))
            .unwrap();
        assert_eq!(
            hooks.add("b", Arc::new(|| Box::pin(async { Ok(()) }))),
            Err(HookError::DuplicatePreShutdown("b".into()))
        );
        assert_eq!(
            hooks.run().await,
            Err(vec!["PreShutdownHook \"a\" failed: x".to_string()])
        );
        assert_eq!(
            hooks
                .add("c", Arc::new(|| Box::pin(async { Ok(()) })))
                .unwrap_err()
                .to_string(),
            "unable to add \"c\" because PreShutdownHooks have already been called"
        );
    }
}
