//! The proxy to a remote APIService (upstream `handler_proxy.go`): the request goes to the
//! resolved service over TLS with the front-proxy identity headers instead of the client's
//! credentials; responses (watches, upgrades) stream back.

use std::sync::{Arc, RwLock};

use apiserver::body::{BoxError, Request, Response, go_http_error};
use apiserver::filters::{HttpService, service_fn};
use apiserver::request::{RequestUser, UserInfo};
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{StatusCode, Uri};
use http_body_util::BodyExt;
use hyper_util::rt::TokioIo;
use rustls::ClientConfig;
use tokio::sync::Notify;

use crate::apiservice::ServiceReference;
use crate::resolver::ServiceResolver;
use crate::transport::connect;

/// What the proxy needs to reach one APIService's server.
#[derive(Clone, Debug)]
pub struct HandlingInfo {
    /// The Service.
    pub service: ServiceReference,
    /// TLS to the server.
    pub tls: Arc<ClientConfig>,
    /// Whether the last availability check passed.
    pub available: bool,
}

impl HandlingInfo {
    /// The name the server certificate must carry: `<service>.<namespace>.svc`.
    pub fn server_name(&self) -> String {
        format!("{}.{}.svc", self.service.name, self.service.namespace)
    }
}

/// The proxy of one remote APIService, updated in place by the controller.
#[derive(Clone)]
pub struct ProxyTarget {
    info: Arc<RwLock<Option<HandlingInfo>>>,
    resolver: ServiceResolver,
    /// Woken when the server could not be reached, so availability is re-checked at once.
    unreachable: Arc<Notify>,
    /// `--aggregator-reject-forwarding-redirect`.
    reject_redirects: bool,
}

impl ProxyTarget {
    /// A target not yet handling anything (503 until [`ProxyTarget::set`]); with
    /// `reject_redirects`, redirects from the server become 502 (upstream's
    /// `--aggregator-reject-forwarding-redirect`).
    pub fn new(
        resolver: ServiceResolver,
        unreachable: Arc<Notify>,
        reject_redirects: bool,
    ) -> Self {
        ProxyTarget {
            info: Arc::default(),
            resolver,
            unreachable,
            reject_redirects,
        }
    }

    /// Replaces the handling information.
    pub fn set(&self, info: HandlingInfo) {
        if let Ok(mut slot) = self.info.write() {
            *slot = Some(info);
        }
    }

    /// Marks the server (un)available.
    pub fn set_available(&self, available: bool) {
        if let Ok(mut slot) = self.info.write()
            && let Some(info) = slot.as_mut()
        {
            info.available = available;
        }
    }

    /// The current handling information.
    pub fn info(&self) -> Option<HandlingInfo> {
        self.info.read().ok().and_then(|i| i.clone())
    }

    /// The proxy handler.
    pub fn service(&self) -> HttpService {
        let target = self.clone();
        service_fn(move |req: Request| {
            let target = target.clone();
            async move { target.proxy(req).await }
        })
    }

    async fn proxy(&self, mut req: Request) -> Response {
        let Some(info) = self.info().filter(|i| i.available) else {
            return go_http_error(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
        };
        let Some(user) = req.extensions().get::<RequestUser>().map(|u| u.0.clone()) else {
            return go_http_error(StatusCode::INTERNAL_SERVER_ERROR, "missing user");
        };
        let (host, port) = match self.resolver.resolve(&info.service).await {
            Ok(location) => location,
            Err(err) => {
                tracing::error!(
                    "error resolving {}/{}: {err}",
                    info.service.namespace,
                    info.service.name
                );
                self.unreachable.notify_one();
                return go_http_error(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
            }
        };
        let mut sender = match connect(&host, port, info.tls.clone(), &info.server_name()).await {
            Ok(sender) => sender,
            Err(err) => {
                tracing::error!("Error while proxying request: {err}");
                self.unreachable.notify_one();
                return go_http_error(StatusCode::SERVICE_UNAVAILABLE, &err.to_string());
            }
        };
        let upgrade = is_upgrade(req.headers());
        let client_upgrade = upgrade.then(|| hyper::upgrade::on(&mut req));
        let (parts, body) = req.into_parts();
        // Origin-form target: the path and query of the client's request.
        let target = parts
            .uri
            .path_and_query()
            .and_then(|p| p.as_str().parse::<Uri>().ok())
            .unwrap_or_else(|| Uri::from_static("/"));
        let mut out = http::Request::new(body);
        *out.method_mut() = parts.method.clone();
        *out.uri_mut() = target;
        *out.headers_mut() = outbound_headers(&parts.headers, &user, upgrade);
        let authority = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        if let Ok(value) = HeaderValue::from_str(&authority) {
            out.headers_mut().insert(header::HOST, value);
        }
        let mut response = match sender.send_request(out).await {
            Ok(response) => response,
            Err(err) => {
                tracing::error!("Error while proxying request: {err}");
                return go_http_error(StatusCode::SERVICE_UNAVAILABLE, &err.to_string());
            }
        };
        if response.status() == StatusCode::SWITCHING_PROTOCOLS
            && let Some(client_upgrade) = client_upgrade
        {
            let backend_upgrade = hyper::upgrade::on(&mut response);
            tokio::spawn(async move {
                match (client_upgrade.await, backend_upgrade.await) {
                    (Ok(client), Ok(backend)) => {
                        let mut client = TokioIo::new(client);
                        let mut backend = TokioIo::new(backend);
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut backend).await;
                    }
                    (Err(err), _) | (_, Err(err)) => {
                        tracing::debug!("upgrade through the aggregator failed: {err}");
                    }
                }
            });
        }
        if self.reject_redirects
            && response.status().is_redirection()
            && response.headers().contains_key(header::LOCATION)
        {
            // Upstream replaces the response with a bare 502 carrying this text.
            let mut rejected = http::Response::new(apiserver::body::full(REDIRECT_REJECTED));
            *rejected.status_mut() = StatusCode::BAD_GATEWAY;
            return rejected;
        }
        let (mut parts, body) = response.into_parts();
        if parts.status != StatusCode::SWITCHING_PROTOCOLS {
            remove_hop_by_hop(&mut parts.headers);
        }
        Response::from_parts(
            parts,
            body.map_err(|e| Box::new(e) as BoxError).boxed_unsync(),
        )
    }
}

/// The body of a rejected redirect.
pub const REDIRECT_REJECTED: &str =
    "the backend attempted to redirect this request, which is not permitted";

/// Whether the request asks for a protocol upgrade (`Connection: Upgrade`).
fn is_upgrade(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
        && headers.contains_key(header::UPGRADE)
}

const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
];

fn remove_hop_by_hop(headers: &mut HeaderMap) {
    // Headers named by Connection are hop-by-hop too.
    let named: Vec<String> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().to_ascii_lowercase())
        .filter(|t| !t.is_empty())
        .collect();
    for name in HOP_BY_HOP.iter().map(|s| s.to_string()).chain(named) {
        headers.remove(name.as_str());
    }
    headers.remove(header::UPGRADE);
}

/// The headers sent to the remote server: the client's, without hop-by-hop headers, its
/// credentials, impersonation and front-proxy headers, plus the front-proxy identity of
/// `user` (`X-Remote-User`, `X-Remote-Uid` when the user has one, one `X-Remote-Group` per
/// group, `X-Remote-Extra-<key>` with the key escaped as upstream does).
pub fn outbound_headers(incoming: &HeaderMap, user: &UserInfo, upgrade: bool) -> HeaderMap {
    let mut headers = incoming.clone();
    let (connection, upgrade_value) = (
        headers.get(header::CONNECTION).cloned(),
        headers.get(header::UPGRADE).cloned(),
    );
    remove_hop_by_hop(&mut headers);
    if upgrade {
        if let Some(v) = connection {
            headers.insert(header::CONNECTION, v);
        }
        if let Some(v) = upgrade_value {
            headers.insert(header::UPGRADE, v);
        }
    }
    headers.remove(header::AUTHORIZATION);
    headers.remove(header::HOST);
    let doomed: Vec<HeaderName> = headers
        .keys()
        .filter(|k| {
            let k = k.as_str();
            k.starts_with("impersonate-") || k.starts_with("x-remote-")
        })
        .cloned()
        .collect();
    for name in doomed {
        headers.remove(name);
    }
    if let Ok(v) = HeaderValue::from_str(&user.name) {
        headers.insert("x-remote-user", v);
    }
    // Sent when known (upstream's RemoteRequestHeaderUID).
    if !user.uid.is_empty()
        && let Ok(v) = HeaderValue::from_str(&user.uid)
    {
        headers.insert("x-remote-uid", v);
    }
    for group in &user.groups {
        if let Ok(v) = HeaderValue::from_str(group) {
            headers.append("x-remote-group", v);
        }
    }
    for (key, values) in &user.extra {
        let Ok(name) =
            HeaderName::from_bytes(format!("x-remote-extra-{}", escape_extra_key(key)).as_bytes())
        else {
            continue;
        };
        for value in values {
            if let Ok(v) = HeaderValue::from_str(value) {
                headers.append(name.clone(), v);
            }
        }
    }
    headers
}

/// Escapes an extra key for a header name as upstream's `headerKeyEscape` does: characters
/// that are not legal in header names (and `%`) become `%XX`.
fn escape_extra_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for b in key.bytes() {
        let legal = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'!' | b'#'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'*'
                    | b'+'
                    | b'-'
                    | b'.'
                    | b'^'
                    | b'_'
                    | b'`'
                    | b'|'
                    | b'~'
            );
        if legal {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn identity_headers_replace_credentials() {
        let mut incoming = HeaderMap::new();
        incoming.insert("authorization", HeaderValue::from_static("Bearer secret"));
        incoming.insert("impersonate-user", HeaderValue::from_static("bob"));
        incoming.insert("x-remote-user", HeaderValue::from_static("mallory"));
        incoming.insert("connection", HeaderValue::from_static("keep-alive"));
        incoming.insert("accept", HeaderValue::from_static("application/json"));
        let user = UserInfo {
            name: "admin".into(),
            uid: "42".into(),
            groups: vec!["system:masters".into(), "system:authenticated".into()],
            extra: BTreeMap::from([("example.com/key".to_string(), vec!["a".to_string()])]),
        };
        let out = outbound_headers(&incoming, &user, false);
        assert!(out.get("authorization").is_none());
        assert!(out.get("impersonate-user").is_none());
        assert!(out.get("connection").is_none());
        assert_eq!(out["accept"], "application/json");
        assert_eq!(out["x-remote-user"], "admin");
        assert_eq!(out["x-remote-uid"], "42");
        assert_eq!(
            out.get_all("x-remote-group").iter().collect::<Vec<_>>(),
            ["system:masters", "system:authenticated"]
        );
        assert_eq!(out["x-remote-extra-example.com%2Fkey"], "a");
    }

    #[test]
    fn upgrades_keep_their_headers() {
        let mut incoming = HeaderMap::new();
        incoming.insert("connection", HeaderValue::from_static("Upgrade"));
        incoming.insert("upgrade", HeaderValue::from_static("websocket"));
        assert!(is_upgrade(&incoming));
        let out = outbound_headers(&incoming, &UserInfo::default(), true);
        assert_eq!(out["upgrade"], "websocket");
        assert_eq!(out["connection"], "Upgrade");
    }

    #[test]
    fn extra_keys_are_escaped() {
        assert_eq!(escape_extra_key("scopes.k8s.io"), "scopes.k8s.io");
        assert_eq!(escape_extra_key("a/b%c"), "a%2Fb%25c");
    }
}
