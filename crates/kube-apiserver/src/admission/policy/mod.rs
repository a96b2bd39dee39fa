//! The ValidatingAdmissionPolicy and MutatingAdmissionPolicy plugins (upstream
//! `admission/plugin/policy/{generic,matching,validating,mutating}` and `admission/plugin/cel`).

use super::Registry;

pub mod cel;
pub mod compiled;
pub mod matching;
pub mod mutation;
pub mod params;
pub mod source;
pub mod status;
pub mod typecheck;

/// Registers this module's plugins.
pub fn register(plugins: &mut Registry) {
    let _ = plugins;
}
