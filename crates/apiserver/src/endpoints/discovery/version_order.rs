//! Kubernetes-aware version ordering (upstream `version.CompareKubeAwareVersionStrings`):
//! GA before beta before alpha, higher major first, then higher minor; strings that are not
//! Kubernetes versions come last, in ascending lexical order.

use std::cmp::Ordering;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Stability {
    Alpha,
    Beta,
    Ga,
}

/// Parses `v<major>[(alpha|beta)<minor>]`.
fn parse_kube_version(v: &str) -> Option<(Stability, u64, u64)> {
    let rest = v.strip_prefix('v')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let major = rest[..digits].parse().ok()?;
    let tail = &rest[digits..];
    if tail.is_empty() {
        return Some((Stability::Ga, major, 0));
    }
    let (stability, minor) = if let Some(m) = tail.strip_prefix("alpha") {
        (Stability::Alpha, m)
    } else if let Some(m) = tail.strip_prefix("beta") {
        (Stability::Beta, m)
    } else {
        return None;
    };
    if minor.is_empty() || !minor.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((stability, major, minor.parse().ok()?))
}

/// Orders `a` relative to `b` by priority: `Ordering::Greater` means `a` is the higher version
/// and sorts first.
pub fn compare_kube_aware_versions(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    match (parse_kube_version(a), parse_kube_version(b)) {
        (None, None) => b.cmp(a),
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(x), Some(y)) => x.cmp(&y),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_aware_order() {
        let mut versions = vec![
            "v1",
            "foo10",
            "v2beta1",
            "v1alpha1",
            "v10",
            "foo1",
            "v1beta2",
            "v2",
            "v1beta1",
            "v11alpha2",
            "v12alpha1",
            "v3beta1",
            "v10beta3",
            "v11beta2",
        ];
        versions.sort_by(|a, b| compare_kube_aware_versions(b, a));
        assert_eq!(
            versions,
            vec![
                "v10",
                "v2",
                "v1",
                "v11beta2",
                "v10beta3",
                "v3beta1",
                "v2beta1",
                "v1beta2",
                "v1beta1",
                "v12alpha1",
                "v11alpha2",
                "v1alpha1",
                "foo1",
                "foo10"
            ]
        );
    }

    #[test]
    fn malformed_versions_are_not_kube_versions() {
        for v in ["v", "vbeta1", "v1beta", "v1gamma1", "1", "v1beta1x", "V1"] {
            assert_eq!(parse_kube_version(v), None, "{v}");
        }
    }
}
