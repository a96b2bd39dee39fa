//! DNS name checks with upstream's messages (`k8s.io/apimachinery/pkg/util/validation`).

fn label_ok(s: &str, first_alpha: bool) -> bool {
    let b = s.as_bytes();
    let (Some(first), Some(last)) = (b.first(), b.last()) else {
        return false;
    };
    let first_ok = if first_alpha {
        first.is_ascii_lowercase()
    } else {
        first.is_ascii_lowercase() || first.is_ascii_digit()
    };
    first_ok
        && (last.is_ascii_lowercase() || last.is_ascii_digit())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}

fn max_len(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// `IsDNS1035Label`: the error messages (empty when valid).
pub(crate) fn dns1035_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len(63));
    }
    if !label_ok(s, true) {
        errs.push("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')".into());
    }
    errs
}

/// `IsDNS1123Subdomain`: the error messages (empty when valid).
pub(crate) fn dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push(max_len(253));
    }
    if !s.split('.').all(|l| label_ok(l, false)) {
        errs.push("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".into());
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_names() {
        assert!(dns1035_label("abc-1").is_empty());
        assert_eq!(dns1035_label("1abc").len(), 1);
        assert_eq!(dns1035_label("").len(), 1);
        assert!(dns1123_subdomain("a.b-c.example.com").is_empty());
        assert_eq!(dns1123_subdomain("A.b").len(), 1);
        assert_eq!(dns1123_subdomain("a..b").len(), 1);
    }
}
