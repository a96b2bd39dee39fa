//! Field paths rendered as upstream's `field.Path` (`spec.versions[0].schema`,
//! `properties[spec]`).

/// `path.name` (just `name` at the root).
pub(crate) fn sub(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// `path[key]`.
pub(crate) fn key(path: &str, k: &str) -> String {
    format!("{path}[{k}]")
}

/// `path[i]`.
pub(crate) fn idx(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}
