//! The kubeconfig file a webhook is configured with (upstream reads it with client-go's
//! `clientcmd`): the current context's cluster (`server`, `certificate-authority(-data)`,
//! `insecure-skip-tls-verify`, `tls-server-name`) and user (`client-certificate(-data)` +
//! `client-key(-data)`, `token`, `tokenFile`). Relative file names are relative to the
//! kubeconfig's directory, as client-go resolves them.

use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

/// Why a webhook kubeconfig could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KubeconfigError {
    /// The file could not be read.
    #[error("failed to read {path}: {reason}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        reason: String,
    },
    /// The file is not YAML/JSON.
    #[error("error loading config file \"{path}\": {reason}")]
    Parse {
        /// The file.
        path: String,
        /// The parser's message.
        reason: String,
    },
    /// No usable cluster, server or credentials (client-go's `invalid configuration: …`).
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

/// What a webhook client needs from a kubeconfig.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WebhookKubeconfig {
    /// The server URL (the request goes to exactly this URL, path included).
    pub server: String,
    /// PEM CA bundle to verify the server with; empty means the system roots are not
    /// available either, so only `insecure_skip_tls_verify` connects.
    pub ca_pem: Vec<u8>,
    /// Skip verifying the server certificate.
    pub insecure_skip_tls_verify: bool,
    /// The name to verify the server certificate for (default: the URL's host).
    pub tls_server_name: Option<String>,
    /// PEM client certificate chain and key.
    pub client_cert: Option<(Vec<u8>, Vec<u8>)>,
    /// A bearer token.
    pub token: Option<String>,
}

fn named<'a>(doc: &'a Value, list: &str, name: &str, field: &str) -> Option<&'a Value> {
    doc.get(list)?
        .as_array()?
        .iter()
        .find(|e| e.get("name").and_then(Value::as_str) == Some(name))?
        .get(field)
}

fn only<'a>(doc: &'a Value, list: &str, field: &str) -> Option<&'a Value> {
    let items = doc.get(list)?.as_array()?;
    match items.as_slice() {
        [one] => one.get(field),
        _ => None,
    }
}

fn string(v: Option<&Value>, key: &str) -> Option<String> {
    v?.get(key)?
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// Reads `data` (inline base64) or `file` (relative to `dir`).
fn data_or_file(
    v: Option<&Value>,
    data_key: &str,
    file_key: &str,
    dir: &Path,
) -> Result<Option<Vec<u8>>, KubeconfigError> {
    if let Some(data) = string(v, data_key) {
        return STANDARD
            .decode(data.trim())
            .map(Some)
            .map_err(|e| KubeconfigError::Invalid(format!("{data_key}: {e}")));
    }
    if let Some(file) = string(v, file_key) {
        let path = resolve(dir, &file);
        return std::fs::read(&path)
            .map(Some)
            .map_err(|e| KubeconfigError::Read {
                path: path.display().to_string(),
                reason: e.to_string(),
            });
    }
    Ok(None)
}

fn resolve(dir: &Path, file: &str) -> PathBuf {
    let p = Path::new(file);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        dir.join(p)
    }
}

/// Where a pod's service-account credentials are mounted.
const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

impl WebhookKubeconfig {
    /// client-go's in-cluster configuration: `https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`
    /// with the pod's service-account token and CA.
    pub fn in_cluster() -> Result<Self, KubeconfigError> {
        let host = std::env::var("KUBERNETES_SERVICE_HOST").unwrap_or_default();
        let port = std::env::var("KUBERNETES_SERVICE_PORT").unwrap_or_default();
        if host.is_empty() || port.is_empty() {
            return Err(KubeconfigError::Invalid(
                "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined".into(),
            ));
        }
        let dir = Path::new(SERVICE_ACCOUNT_DIR);
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read(&path).map_err(|e| KubeconfigError::Read {
                path: path.display().to_string(),
                reason: e.to_string(),
            })
        };
        let token = String::from_utf8_lossy(&read("token")?).trim().to_string();
        let host = if host.contains(':') {
            format!("[{host}]")
        } else {
            host
        };
        Ok(WebhookKubeconfig {
            server: format!("https://{host}:{port}"),
            ca_pem: read("ca.crt")?,
            token: Some(token),
            ..Default::default()
        })
    }

    /// Loads and interprets the kubeconfig at `path`.
    pub fn load(path: &Path) -> Result<Self, KubeconfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| KubeconfigError::Read {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        Self::parse(&text, dir).map_err(|e| match e {
            KubeconfigError::Parse { reason, .. } => KubeconfigError::Parse {
                path: path.display().to_string(),
                reason,
            },
            other => other,
        })
    }

    /// Interprets kubeconfig `text`, resolving relative files against `dir`.
    pub fn parse(text: &str, dir: &Path) -> Result<Self, KubeconfigError> {
        let doc: Value = serde_saphyr::from_str(text).map_err(|e| KubeconfigError::Parse {
            path: String::new(),
            reason: crate::apis::apiserver::yaml_error_line(&e.to_string()),
        })?;
        let context_name = doc
            .get("current-context")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let context = match context_name {
            Some(name) => Some(named(&doc, "contexts", name, "context").ok_or_else(|| {
                KubeconfigError::Invalid(format!(
                    "context was not found for specified context: {name}"
                ))
            })?),
            None => only(&doc, "contexts", "context"),
        };
        let (cluster, user) = match context {
            Some(ctx) => {
                let cluster = string(Some(ctx), "cluster")
                    .and_then(|c| named(&doc, "clusters", &c, "cluster"));
                let user = string(Some(ctx), "user").and_then(|u| named(&doc, "users", &u, "user"));
                (cluster, user)
            }
            None => (
                only(&doc, "clusters", "cluster"),
                only(&doc, "users", "user"),
            ),
        };
        let server = string(cluster, "server")
            .ok_or_else(|| KubeconfigError::Invalid("no configuration has been provided".into()))?;
        if !(server.starts_with("https://") || server.starts_with("http://")) {
            return Err(KubeconfigError::Invalid(format!(
                "host must be a URL or a host:port pair: {server:?}"
            )));
        }
        let ca_pem = data_or_file(
            cluster,
            "certificate-authority-data",
            "certificate-authority",
            dir,
        )?
        .unwrap_or_default();
        let insecure_skip_tls_verify = cluster
            .and_then(|c| c.get("insecure-skip-tls-verify"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let cert = data_or_file(user, "client-certificate-data", "client-certificate", dir)?;
        let key = data_or_file(user, "client-key-data", "client-key", dir)?;
        let client_cert = match (cert, key) {
            (Some(c), Some(k)) => Some((c, k)),
            (None, None) => None,
            (Some(_), None) => {
                return Err(KubeconfigError::Invalid(
                    "client-key-data or client-key must be specified to use the clientCert authentication method".into(),
                ));
            }
            (None, Some(_)) => {
                return Err(KubeconfigError::Invalid(
                    "client-cert-data or client-cert must be specified to use the clientCert authentication method".into(),
                ));
            }
        };
        let token = match string(user, "token") {
            Some(t) => Some(t),
            None => match string(user, "tokenFile") {
                Some(file) => {
                    let path = resolve(dir, &file);
                    let t = std::fs::read_to_string(&path).map_err(|e| KubeconfigError::Read {
                        path: path.display().to_string(),
                        reason: e.to_string(),
                    })?;
                    Some(t.trim().to_string())
                }
                None => None,
            },
        };
        Ok(WebhookKubeconfig {
            server,
            ca_pem,
            insecure_skip_tls_verify,
            tls_server_name: string(cluster, "tls-server-name"),
            client_cert,
            token,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_context_picks_cluster_and_user() {
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: other\n  cluster:\n    server: https://other\n- name: hook\n  cluster:\n    server: https://127.0.0.1:9443/authn\n    certificate-authority-data: {}\ncontexts:\n- name: c\n  context:\n    cluster: hook\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: secret\n",
            STANDARD.encode("CA")
        );
        let cfg = WebhookKubeconfig::parse(&text, Path::new("/")).unwrap();
        assert_eq!(cfg.server, "https://127.0.0.1:9443/authn");
        assert_eq!(cfg.ca_pem, b"CA");
        assert_eq!(cfg.token.as_deref(), Some("secret"));
        assert!(cfg.client_cert.is_none());
    }

    #[test]
    fn single_cluster_without_context_and_relative_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ca.pem"), "CAFILE").unwrap();
        std::fs::write(dir.path().join("c.pem"), "CERT").unwrap();
        std::fs::write(dir.path().join("k.pem"), "KEY").unwrap();
        let text = "clusters:\n- name: x\n  cluster:\n    server: https://h:1\n    certificate-authority: ca.pem\nusers:\n- name: y\n  user:\n    client-certificate: c.pem\n    client-key: k.pem\n";
        let cfg = WebhookKubeconfig::parse(text, dir.path()).unwrap();
        assert_eq!(cfg.ca_pem, b"CAFILE");
        assert_eq!(cfg.client_cert, Some((b"CERT".to_vec(), b"KEY".to_vec())));
    }

    #[test]
    fn bad_files_are_errors() {
        assert!(matches!(
            WebhookKubeconfig::parse("clusters: [", Path::new("/")),
            Err(KubeconfigError::Parse { .. })
        ));
        assert_eq!(
            WebhookKubeconfig::parse("kind: Config\n", Path::new("/"))
                .unwrap_err()
                .to_string(),
            "invalid configuration: no configuration has been provided"
        );
        let missing_ctx =
            "current-context: nope\nclusters:\n- name: x\n  cluster:\n    server: https://h\n";
        assert_eq!(
            WebhookKubeconfig::parse(missing_ctx, Path::new("/"))
                .unwrap_err()
                .to_string(),
            "invalid configuration: context was not found for specified context: nope"
        );
        assert!(WebhookKubeconfig::load(Path::new("/nonexistent/kubeconfig")).is_err());
    }
}
