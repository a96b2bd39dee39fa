//! The ValidatingAdmissionPolicy and MutatingAdmissionPolicy plugins (upstream
//! `admission/plugin/policy/{generic,matching,validating,mutating}` and `admission/plugin/cel`).

use super::Registry;

pub mod cel;
pub mod compiled;
pub mod dispatch;
pub mod matching;
pub mod metrics;
pub mod mutating;
pub mod mutation;
pub mod params;
pub mod source;
pub mod status;
pub mod typecheck;
pub mod validating;

/// Registers this module's plugins.
pub fn register(plugins: &mut Registry) {
    plugins.register(mutating::NAME, mutating::new);
    plugins.register(validating::NAME, validating::new);
}
