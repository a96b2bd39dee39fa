//! Resource quantities as the plugins compare them, by value (`100m` = `0.1`), on the shared
//! [`Quantity`] parser.

use std::cmp::Ordering;

use serde_json::{Map, Value};

use crate::apis::quantity::Quantity;

/// Compares two quantities by value; `None` if either does not parse.
pub fn compare(a: &str, b: &str) -> Option<Ordering> {
    Some(Quantity::parse(a).ok()?.cmp(&Quantity::parse(b).ok()?))
}

/// Whether two resource lists (`{"cpu": "100m", …}`) hold the same resources with equal
/// values (upstream's semantic equality of `ResourceList`).
pub fn lists_equal(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    a.len() == b.len()
        && a.iter().all(|(name, qa)| {
            b.get(name)
                .is_some_and(|qb| match (qa.as_str(), qb.as_str()) {
                    (Some(x), Some(y)) => compare(x, y) == Some(Ordering::Equal),
                    _ => qa == qb,
                })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_compare_by_value() {
        assert_eq!(compare("100m", "0.1"), Some(Ordering::Equal));
        assert_eq!(compare("1Ki", "1024"), Some(Ordering::Equal));
        assert_eq!(compare("1Gi", "1G"), Some(Ordering::Greater));
        assert_eq!(compare("2Gi", "3Gi"), Some(Ordering::Less));
        assert_eq!(compare("1e3", "1k"), Some(Ordering::Equal));
        assert_eq!(compare("-1", "0"), Some(Ordering::Less));
        assert_eq!(compare("1Ei", "1152921504606846976"), Some(Ordering::Equal));
        assert_eq!(compare("abc", "1"), None);
        assert_eq!(compare("1Xi", "1"), None);
        assert_eq!(compare("", "1"), None);
    }
}
