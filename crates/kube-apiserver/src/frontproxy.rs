//! The front proxy's trust: on first start (when the PKI is generated and no
//! `--requestheader-client-ca-file` / `--proxy-client-*` flags are given) a front-proxy CA and
//! the aggregator's client certificate (CN `front-proxy-client`, as kubeadm names them), and the
//! `kube-system/extension-apiserver-authentication` ConfigMap aggregated API servers read to
//! trust the aggregator (upstream's `start-cluster-authentication-info-controller`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use apiserver::registry::rest::{CreateOptions, RequestContext, RestStorage, UpdateOptions};
use apiserver::registry::store::Store;
use apiserver::server::hooks::PostStartHookFn;
use apiserver::server::serving::kubeconfig::{write_private, write_public};
use apiserver::server::serving::selfsigned::{new_ca, new_client_cert};
use apiserver::status::reason;
use serde_json::{Value, json};

use crate::options::Options;

/// The CN of the generated proxy client certificate (the allowed request-header name).
pub const PROXY_CLIENT_CN: &str = "front-proxy-client";

/// The generated files.
#[derive(Clone, Debug)]
pub struct FrontProxyPki {
    /// `front-proxy-ca.crt`.
    pub ca_cert: PathBuf,
    /// `front-proxy-client.crt`.
    pub client_cert: PathBuf,
    /// `front-proxy-client.key`.
    pub client_key: PathBuf,
}

fn write(path: &Path, data: &str, private: bool) -> Result<(), String> {
    let result = if private {
        write_private(path, data.as_bytes())
    } else {
        write_public(path, data.as_bytes())
    };
    result.map_err(|e| format!("{}: {e}", path.display()))
}

/// Creates the front-proxy CA and client certificate in `dir` unless they exist.
pub fn ensure_front_proxy_pki(dir: &Path) -> Result<FrontProxyPki, String> {
    let pki = FrontProxyPki {
        ca_cert: dir.join("front-proxy-ca.crt"),
        client_cert: dir.join("front-proxy-client.crt"),
        client_key: dir.join("front-proxy-client.key"),
    };
    if [&pki.ca_cert, &pki.client_cert, &pki.client_key]
        .iter()
        .all(|p| p.is_file())
    {
        return Ok(pki);
    }
    let err = |e: rcgen::Error| format!("generating the front-proxy certificates: {e}");
    let ca = new_ca("front-proxy-ca").map_err(err)?;
    let client = new_client_cert(&ca.issuer, PROXY_CLIENT_CN, None).map_err(err)?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    write(&dir.join("front-proxy-ca.key"), &ca.key_pem, true)?;
    write(&pki.client_key, &client.key_pem, true)?;
    write(&pki.client_cert, &client.cert_pem, false)?;
    write(&pki.ca_cert, &ca.cert_pem, false)?;
    Ok(pki)
}

/// Fills the front-proxy flags from the generated PKI when none were given: the proxy client
/// certificate, the request-header CA trusting it, its CN as the allowed name, and the
/// standard header names where unset.
pub fn apply_defaults(opts: &mut Options, pki: &FrontProxyPki) {
    opts.requestheader_client_ca_file = Some(pki.ca_cert.clone());
    opts.proxy_client_cert_file = Some(pki.client_cert.clone());
    opts.proxy_client_key_file = Some(pki.client_key.clone());
    if opts.requestheader_allowed_names.is_empty() {
        opts.requestheader_allowed_names = vec![PROXY_CLIENT_CN.into()];
    }
    let default = |list: &mut Vec<String>, value: &str| {
        if list.is_empty() {
            *list = vec![value.to_string()];
        }
    };
    default(&mut opts.requestheader_username_headers, "X-Remote-User");
    default(&mut opts.requestheader_group_headers, "X-Remote-Group");
    default(
        &mut opts.requestheader_extra_headers_prefix,
        "X-Remote-Extra-",
    );
}

/// The data of `extension-apiserver-authentication` (lists JSON-encoded, as upstream writes
/// them).
pub fn authentication_info(
    client_ca: Option<&Path>,
    opts: &Options,
) -> Result<serde_json::Map<String, Value>, String> {
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    let mut data = serde_json::Map::new();
    if let Some(ca) = client_ca {
        data.insert("client-ca-file".into(), json!(read(ca)?));
    }
    if let Some(ca) = &opts.requestheader_client_ca_file {
        data.insert("requestheader-client-ca-file".into(), json!(read(ca)?));
        let list = |v: &Vec<String>| json!(serde_json::to_string(v).unwrap_or_default());
        data.insert(
            "requestheader-allowed-names".into(),
            list(&opts.requestheader_allowed_names),
        );
        data.insert(
            "requestheader-username-headers".into(),
            list(&opts.requestheader_username_headers),
        );
        data.insert(
            "requestheader-uid-headers".into(),
            list(&opts.requestheader_uid_headers),
        );
        data.insert(
            "requestheader-group-headers".into(),
            list(&opts.requestheader_group_headers),
        );
        data.insert(
            "requestheader-extra-headers-prefix".into(),
            list(&opts.requestheader_extra_headers_prefix),
        );
    }
    Ok(data)
}

/// `start-cluster-authentication-info-controller`: writes `data` into
/// `kube-system/extension-apiserver-authentication` (retrying until kube-system exists).
pub fn authentication_info_hook(
    configmaps: Store,
    data: serde_json::Map<String, Value>,
) -> PostStartHookFn {
    Arc::new(move |ctx| {
        let configmaps = configmaps.clone();
        let data = Value::Object(data.clone());
        Box::pin(async move {
            let rctx = RequestContext {
                namespace: "kube-system".into(),
                ..Default::default()
            };
            let object = json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "extension-apiserver-authentication", "namespace": "kube-system"},
                "data": data,
            });
            loop {
                let result = match configmaps
                    .create(&rctx, object.clone(), &CreateOptions::default())
                    .await
                {
                    Err(err) if err.reason() == reason::ALREADY_EXISTS => {
                        let data = data.clone();
                        let update = Box::new(move |current: Option<&Value>| {
                            let mut next = current.cloned().unwrap_or(Value::Null);
                            next["data"] = data.clone();
                            Ok(next)
                        });
                        configmaps
                            .update(
                                &rctx,
                                "extension-apiserver-authentication",
                                update,
                                &UpdateOptions::default(),
                                false,
                            )
                            .await
                            .map(|_| ())
                    }
                    other => other.map(|_| ()),
                };
                match result {
                    Ok(()) => return Ok(()),
                    Err(err) => {
                        tracing::debug!("writing extension-apiserver-authentication: {err}")
                    }
                }
                tokio::select! {
                    _ = ctx.stop.cancelled() => return Ok(()),
                    _ = tokio::time::sleep(Duration::from_millis(200)) => {}
                }
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn generated_pki_and_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let pki = ensure_front_proxy_pki(dir.path()).unwrap();
        let again = ensure_front_proxy_pki(dir.path()).unwrap();
        assert_eq!(
            std::fs::read(&pki.client_cert).unwrap(),
            std::fs::read(&again.client_cert).unwrap()
        );
        let mut opts = Options::try_parse_from(["kube-apiserver"]).unwrap();
        apply_defaults(&mut opts, &pki);
        assert_eq!(opts.requestheader_allowed_names, ["front-proxy-client"]);
        assert_eq!(opts.requestheader_username_headers, ["X-Remote-User"]);
        let data = authentication_info(None, &opts).unwrap();
        assert_eq!(
            data["requestheader-allowed-names"],
            "[\"front-proxy-client\"]"
        );
        assert_eq!(data["requestheader-group-headers"], "[\"X-Remote-Group\"]");
        assert!(
            data["requestheader-client-ca-file"]
                .as_str()
                .unwrap()
                .starts_with("-----BEGIN CERTIFICATE-----")
        );
    }
}
