//! DNS name checks with upstream's messages (`k8s.io/apimachinery/pkg/util/validation`).

pub(crate) use apiserver::registry::names::{dns1035_label, dns1123_subdomain};

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
