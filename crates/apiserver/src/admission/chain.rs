//! The ordered plugins of a server (upstream `chainAdmissionHandler` wrapped in the
//! reinvoker and the metrics decorators).

use std::sync::Arc;
use std::time::Instant;

use super::metrics::{Phase, observe_controller, observe_step};
use super::{Attributes, Operation, Plugin};
use crate::status::ApiError;

/// Admission plugins in the order they run.
#[derive(Clone, Default)]
pub struct Chain {
    plugins: Vec<Arc<dyn Plugin>>,
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.plugins.iter().map(|p| p.name().to_string()))
            .finish()
    }
}

impl Chain {
    /// A chain of `plugins`, run in this order.
    pub fn new(plugins: Vec<Arc<dyn Plugin>>) -> Self {
        Chain { plugins }
    }

    /// The plugins, in order.
    pub fn plugins(&self) -> &[Arc<dyn Plugin>] {
        &self.plugins
    }

    /// The names of the plugins, in order.
    pub fn names(&self) -> Vec<String> {
        self.plugins.iter().map(|p| p.name().to_string()).collect()
    }

    /// Whether no plugin looks at `operation` in either phase.
    pub fn is_empty_for(&self, operation: Operation) -> bool {
        !self.plugins.iter().any(|p| p.handles(operation))
    }

    /// The mutating phase: every mutating plugin that handles the operation, in order; when
    /// one asked for reinvocation, all of them once more (upstream's reinvoker).
    pub async fn admit(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
        let operation = attrs.operation;
        if !self
            .plugins
            .iter()
            .any(|p| p.mutates() && p.handles(operation))
        {
            return Ok(());
        }
        let started = Instant::now();
        let mut result = self.admit_once(attrs).await;
        if result.is_ok() && attrs.reinvocation_requested() {
            attrs.start_reinvocation();
            result = self.admit_once(attrs).await;
        }
        observe_step(Phase::Admit, operation, result.is_err(), started.elapsed());
        result
    }

    async fn admit_once(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
        for plugin in &self.plugins {
            if !plugin.mutates() || !plugin.handles(attrs.operation) {
                continue;
            }
            let started = Instant::now();
            let result = plugin.admit(attrs).await;
            observe_controller(
                plugin.name(),
                Phase::Admit,
                attrs.operation,
                result.is_err(),
                started.elapsed(),
            );
            result?;
        }
        Ok(())
    }

    /// The validating phase: every validating plugin that handles the operation, in order;
    /// the first refusal ends it.
    pub async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError> {
        let operation = attrs.operation;
        if !self
            .plugins
            .iter()
            .any(|p| p.validates() && p.handles(operation))
        {
            return Ok(());
        }
        let started = Instant::now();
        let mut result = Ok(());
        for plugin in &self.plugins {
            if !plugin.validates() || !plugin.handles(operation) {
                continue;
            }
            let plugin_started = Instant::now();
            result = plugin.validate(attrs).await;
            observe_controller(
                plugin.name(),
                Phase::Validate,
                operation,
                result.is_err(),
                plugin_started.elapsed(),
            );
            if result.is_err() {
                break;
            }
        }
        observe_step(
            Phase::Validate,
            operation,
            result.is_err(),
            started.elapsed(),
        );
        result
    }
}
