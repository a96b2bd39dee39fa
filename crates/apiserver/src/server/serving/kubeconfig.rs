//! The admin kubeconfig of the embedded default PKI.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// The cluster, user and context name used in the generated kubeconfig.
pub const KUBECONFIG_NAME: &str = "apiserver";

/// The kubeconfig YAML text for `server_url` with inlined CA, client certificate and key.
pub fn admin_kubeconfig(
    server_url: &str,
    ca_pem: &[u8],
    client_cert_pem: &[u8],
    client_key_pem: &[u8],
) -> String {
    // A JSON string is a valid YAML double-quoted scalar (IPv6 URLs contain `[`).
    let server = serde_json::Value::String(server_url.to_string()).to_string();
    let name = KUBECONFIG_NAME;
    format!(
        "apiVersion: v1\n\
         kind: Config\n\
         clusters:\n\
         - cluster:\n    certificate-authority-data: {ca}\n    server: {server}\n  name: {name}\n\
         contexts:\n\
         - context:\n    cluster: {name}\n    user: {name}\n  name: {name}\n\
         current-context: {name}\n\
         preferences: {{}}\n\
         users:\n\
         - name: {name}\n  user:\n    client-certificate-data: {cert}\n    client-key-data: {key}\n",
        ca = STANDARD.encode(ca_pem),
        cert = STANDARD.encode(client_cert_pem),
        key = STANDARD.encode(client_key_pem),
    )
}

/// Writes [`admin_kubeconfig`] to `path` with mode 0600 (it holds a private key).
pub fn write_admin_kubeconfig(
    path: &Path,
    server_url: &str,
    ca_pem: &[u8],
    client_cert_pem: &[u8],
    client_key_pem: &[u8],
) -> std::io::Result<()> {
    let text = admin_kubeconfig(server_url, ca_pem, client_cert_pem, client_key_pem);
    write_private(path, text.as_bytes())
}

/// Writes a file only its owner can read (mode 0600), atomically: a reader never sees part
/// of it.
pub fn write_private(path: &Path, data: &[u8]) -> std::io::Result<()> {
    crate::util::files::write_atomically(path, data, 0o600)
}

/// Writes a file anyone may read (mode 0644: certificates), atomically.
pub fn write_public(path: &Path, data: &[u8]) -> std::io::Result<()> {
    crate::util::files::write_atomically(path, data, 0o644)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubeconfig_is_valid_yaml_with_inlined_data() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("admin.kubeconfig");
        write_admin_kubeconfig(&path, "https://[::1]:6443", b"CA", b"CERT", b"KEY").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let doc: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(doc["current-context"], "apiserver");
        assert_eq!(
            doc["clusters"][0]["cluster"]["server"],
            "https://[::1]:6443"
        );
        assert_eq!(
            doc["clusters"][0]["cluster"]["certificate-authority-data"],
            STANDARD.encode("CA")
        );
        assert_eq!(
            doc["users"][0]["user"]["client-key-data"],
            STANDARD.encode("KEY")
        );
        assert_eq!(doc["contexts"][0]["context"]["user"], "apiserver");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
