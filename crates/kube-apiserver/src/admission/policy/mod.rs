//! Admission plugins (filled in by issue 10's work on this part).

use super::Registry;

/// Registers this module's plugins.
pub fn register(plugins: &mut Registry) {
    let _ = plugins;
}
