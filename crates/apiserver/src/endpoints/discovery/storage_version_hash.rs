//! `storageVersionHash` of an `APIResource` (upstream `discovery.StorageVersionHash`): an opaque
//! token that changes when a resource's storage version changes, so clients (the storage
//! migrator) can notice without knowing the version itself.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest, Sha256};

/// `base64(sha256("<group>/<version>/<kind>")[..8])`; the core group is the empty string.
pub fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    let digest = Sha256::digest(format!("{group}/{version}/{kind}").as_bytes());
    STANDARD.encode(&digest[..8])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_values_served_by_kubernetes() {
        assert_eq!(
            storage_version_hash("apps", "v1", "Deployment"),
            "8aSe+NMegvE="
        );
        assert_eq!(storage_version_hash("", "v1", "Pod"), "xPOwRZ+Yhw8=");
        assert_eq!(storage_version_hash("", "v1", "ConfigMap"), "qFsyl6wFWjQ=");
    }
}
