//! klog verbosity levels on `tracing`.
//!
//! Upstream writes many lines with `klog.V(n).Info…`: shown only when `-v` is at least `n`.
//! Here such a line is an `info` event whose target is [`V1`] … [`V5`]; a subscriber maps `-v`
//! to filter directives with [`directives_for_verbosity`] (targets above the level are off).
//! Plain `tracing::info!` lines are klog's `V(0)`: always shown.

/// The target of `klog.V(1)` lines.
pub const V1: &str = "klog::v1";
/// The target of `klog.V(2)` lines.
pub const V2: &str = "klog::v2";
/// The target of `klog.V(3)` lines.
pub const V3: &str = "klog::v3";
/// The target of `klog.V(4)` lines.
pub const V4: &str = "klog::v4";
/// The target of `klog.V(5)` lines.
pub const V5: &str = "klog::v5";

const LEVELS: [(i32, &str); 5] = [(1, V1), (2, V2), (3, V3), (4, V4), (5, V5)];

/// Filter directives (`target=level`, as `EnvFilter` reads them) that show the `V(n)` lines
/// with `n <= verbosity` and hide the others.
pub fn directives_for_verbosity(verbosity: i32) -> Vec<String> {
    LEVELS
        .iter()
        .map(|(level, target)| {
            let shown = if *level <= verbosity { "info" } else { "off" };
            format!("{target}={shown}")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbosity_shows_the_levels_up_to_it() {
        assert_eq!(
            directives_for_verbosity(0),
            [
                "klog::v1=off",
                "klog::v2=off",
                "klog::v3=off",
                "klog::v4=off",
                "klog::v5=off"
            ]
        );
        assert_eq!(
            directives_for_verbosity(2),
            [
                "klog::v1=info",
                "klog::v2=info",
                "klog::v3=off",
                "klog::v4=off",
                "klog::v5=off"
            ]
        );
        assert!(
            directives_for_verbosity(9)
                .iter()
                .all(|d| d.ends_with("=info"))
        );
    }
}
