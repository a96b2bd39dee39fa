//! The warning recorder: handlers add warnings, and the warning filter turns them into
//! `Warning: 299 <agent> "<text>"` headers (`k8s.io/apiserver/pkg/endpoints/warning`).

use std::sync::{Arc, Mutex};

/// Collects the warnings of one request.
#[derive(Debug, Default)]
pub struct WarningRecorder {
    inner: Mutex<RecorderState>,
}

#[derive(Debug, Default)]
struct RecorderState {
    /// `(agent, text)` in the order added, deduplicated by text.
    warnings: Vec<(String, String)>,
    /// Set once the request has timed out: later warnings are dropped.
    closed: bool,
}

impl WarningRecorder {
    /// A new, shareable recorder.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Adds a warning; empty text and duplicates are ignored.
    pub fn add(&self, agent: &str, text: &str) {
        if text.is_empty() {
            return;
        }
        let Ok(mut state) = self.inner.lock() else {
            return;
        };
        if state.closed || state.warnings.iter().any(|(_, t)| t == text) {
            return;
        }
        state.warnings.push((agent.to_string(), text.to_string()));
    }

    /// Stops accepting warnings (used when the request timed out).
    pub fn close(&self) {
        if let Ok(mut state) = self.inner.lock() {
            state.closed = true;
        }
    }

    /// The recorded `(agent, text)` pairs.
    pub fn warnings(&self) -> Vec<(String, String)> {
        self.inner
            .lock()
            .map(|s| s.warnings.clone())
            .unwrap_or_default()
    }
}

/// Adds a warning to the request's recorder, if it has one.
pub fn add_warning(extensions: &http::Extensions, agent: &str, text: &str) {
    if let Some(recorder) = extensions.get::<Arc<WarningRecorder>>() {
        recorder.add(agent, text);
    }
}
