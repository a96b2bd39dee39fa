//! The plugins' configuration from `--admission-control-config-file` (upstream
//! `webhook/config`: `WebhookAdmissionConfiguration` with `kubeConfigFile`) and the client
//! credentials it names (upstream `util/webhook` `defaultAuthenticationInfoResolver`): the
//! kubeconfig's users are looked up by the webhook's `host:port`, then by `*.<domain>`
//! wildcards, then by host alone for port 443, then `*`, then the current context's user.

use std::path::{Path, PathBuf};

use apiserver::util::webhook::WebhookKubeconfig;
use serde_json::{Value, json};

/// Credentials a webhook client presents.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Credentials {
    /// PEM client certificate chain and key.
    pub client_cert: Option<(Vec<u8>, Vec<u8>)>,
    /// A bearer token.
    pub token: Option<String>,
}

/// The users of the admission kubeconfig, looked up per webhook host.
#[derive(Clone, Debug, Default)]
pub struct AuthResolver {
    doc: Value,
    dir: PathBuf,
}

/// Reads the plugin configuration (`None` when the config file does not configure the
/// plugin): the kubeconfig must be an absolute path, and is read at once.
pub fn load(config: Option<&Value>) -> Result<AuthResolver, String> {
    let Some(config) = config else {
        return Ok(AuthResolver::default());
    };
    let api_version = config
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = config
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match (api_version, kind) {
        ("apiserver.config.k8s.io/v1", "WebhookAdmissionConfiguration")
        | ("apiserver.config.k8s.io/v1alpha1", "WebhookAdmission") => {}
        ("", _) | (_, "") => {
            return Err(format!("Object 'Kind' is missing in '{config}'"));
        }
        _ => {
            return Err(format!(
                "no kind \"{kind}\" is registered for version \"{api_version}\" in scheme \"k8s.io/apiserver/pkg/admission/plugin/webhook/config/apis/webhookadmission\""
            ));
        }
    }
    if let Some(map) = config.as_object() {
        for key in map.keys() {
            if !matches!(
                key.as_str(),
                "apiVersion" | "kind" | "kubeConfigFile" | "staticManifestsDir"
            ) {
                return Err(format!("strict decoding error: unknown field \"{key}\""));
            }
        }
    }
    let file = config
        .get("kubeConfigFile")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if file.is_empty() {
        return Ok(AuthResolver::default());
    }
    if !Path::new(file).is_absolute() {
        return Err(format!(
            "kubeConfigFile: Invalid value: {file:?}: must be an absolute file path"
        ));
    }
    let text = std::fs::read(file).map_err(|e| format!("stat {file}: {e}"))?;
    let doc = apiserver::endpoints::handlers::decode::decode_yaml(&text)
        .map_err(|e| format!("error loading config file \"{file}\": {}", e.0.message))?;
    let dir = Path::new(file)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    Ok(AuthResolver { doc, dir })
}

impl AuthResolver {
    fn user(&self, name: &str) -> Option<&Value> {
        self.doc
            .get("users")?
            .as_array()?
            .iter()
            .find(|u| u.get("name").and_then(Value::as_str) == Some(name))?
            .get("user")
    }

    /// The credentials for a webhook at `host_port` (`host:port`, or `name.ns.svc:port`).
    pub fn credentials_for(&self, host_port: &str) -> Result<Credentials, String> {
        let wildcard = |target: &str| -> Option<&Value> {
            if let Some(user) = self.user(target) {
                return Some(user);
            }
            let steps: Vec<&str> = target.split('.').collect();
            (1..steps.len()).find_map(|i| self.user(&format!("*.{}", steps[i..].join("."))))
        };
        let mut found = wildcard(host_port);
        if found.is_none()
            && let Some(host) = host_port.strip_suffix(":443")
        {
            found = wildcard(host);
        }
        if found.is_none() {
            found = self.user("*");
        }
        if found.is_none() {
            let current = self
                .doc
                .get("current-context")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let context_user = self
                .doc
                .get("contexts")
                .and_then(Value::as_array)
                .and_then(|contexts| {
                    contexts
                        .iter()
                        .find(|c| c.get("name").and_then(Value::as_str) == Some(current))
                })
                .and_then(|c| c.pointer("/context/user"))
                .and_then(Value::as_str);
            found = context_user.and_then(|u| self.user(u));
        }
        let Some(user) = found else {
            return Ok(Credentials::default());
        };
        // The user's fields are read the way the webhook kubeconfigs read them (files
        // relative to the kubeconfig, tokenFile, inline data).
        let synthetic = json!({
            "clusters": [{"name": "c", "cluster": {"server": "https://webhook"}}],
            "users": [{"name": "u", "user": user}],
            "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "x",
        });
        let parsed = WebhookKubeconfig::parse(&synthetic.to_string(), &self.dir)
            .map_err(|e| e.to_string())?;
        Ok(Credentials {
            client_cert: parsed.client_cert,
            token: parsed.token,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolver(yaml: &str) -> AuthResolver {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kubeconfig");
        std::fs::write(&path, yaml).unwrap();
        let config = json!({"apiVersion": "apiserver.config.k8s.io/v1", "kind": "WebhookAdmissionConfiguration",
                            "kubeConfigFile": path.display().to_string()});
        load(Some(&config)).unwrap()
    }

    #[test]
    fn users_are_found_by_host_wildcard_and_default() {
        let r = resolver(
            "users:\n- name: 'hook.example.com:8443'\n  user:\n    token: exact\n- name: '*.ns.svc'\n  user:\n    token: wild\n- name: plain.example.com\n  user:\n    token: port443\n- name: '*'\n  user:\n    token: any\n",
        );
        let token = |target: &str| r.credentials_for(target).unwrap().token;
        assert_eq!(token("hook.example.com:8443").as_deref(), Some("exact"));
        assert_eq!(token("svc.ns.svc:443").as_deref(), Some("wild"));
        assert_eq!(token("plain.example.com:443").as_deref(), Some("port443"));
        assert_eq!(token("other:1234").as_deref(), Some("any"));
        assert_eq!(
            AuthResolver::default().credentials_for("x:1").unwrap(),
            Credentials::default()
        );
    }

    #[test]
    fn bad_configurations_are_refused() {
        let rel = json!({"apiVersion": "apiserver.config.k8s.io/v1", "kind": "WebhookAdmissionConfiguration",
                         "kubeConfigFile": "relative/kubeconfig"});
        assert_eq!(
            load(Some(&rel)).unwrap_err(),
            "kubeConfigFile: Invalid value: \"relative/kubeconfig\": must be an absolute file path"
        );
        let unknown = json!({"apiVersion": "apiserver.config.k8s.io/v1", "kind": "WebhookAdmissionConfiguration",
                             "kubeconfigfile": "/x"});
        assert!(load(Some(&unknown)).unwrap_err().contains("unknown field"));
        assert!(load(None).is_ok());
    }
}
