//! Bearer tokens carried in the WebSocket subprotocol list
//! (`authentication/request/websocket`): browsers cannot set `Authorization` on a WebSocket,
//! so clients send `Sec-WebSocket-Protocol: base64url.bearer.authorization.k8s.io.<token>`.

use std::sync::Arc;

use base64::Engine;
use http::{HeaderMap, HeaderValue};

use super::bearertoken::TokenAuthenticator;
use super::{AuthError, AuthResponse, Authenticator};

/// The subprotocol prefix that carries a base64url (unpadded) bearer token.
pub const BEARER_PROTOCOL_PREFIX: &str = "base64url.bearer.authorization.k8s.io.";

const PROTOCOL_HEADER: &str = "sec-websocket-protocol";

/// Authenticates WebSocket upgrade requests by the token in their subprotocols.
pub struct WebSocketProtocolAuthenticator {
    tokens: Arc<dyn TokenAuthenticator>,
}

impl WebSocketProtocolAuthenticator {
    /// Wraps a token authenticator.
    pub fn new(tokens: Arc<dyn TokenAuthenticator>) -> Self {
        WebSocketProtocolAuthenticator { tokens }
    }
}

/// Whether the request asks for a WebSocket upgrade (`Connection: upgrade` and
/// `Upgrade: websocket`).
pub fn is_websocket_request(headers: &HeaderMap) -> bool {
    let connection_upgrade = headers
        .get_all(http::header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case("upgrade"));
    let upgrade_websocket = headers
        .get(http::header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("websocket"));
    connection_upgrade && upgrade_websocket
}

/// The protocols of the request: (other protocols, decoded token if any).
fn split_protocols(headers: &HeaderMap) -> Result<(Vec<String>, String), AuthError> {
    let mut token = String::new();
    let mut saw_token = false;
    let mut others = Vec::new();
    for value in headers.get_all(PROTOCOL_HEADER) {
        let Ok(value) = value.to_str() else { continue };
        for protocol in value.split(',') {
            let protocol = protocol.trim();
            let Some(encoded) = protocol.strip_prefix(BEARER_PROTOCOL_PREFIX) else {
                others.push(protocol.to_string());
                continue;
            };
            if saw_token {
                return Err(AuthError::Other(
                    "multiple base64.bearer.authorization tokens specified".into(),
                ));
            }
            saw_token = true;
            let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(encoded)
                .map_err(|_| {
                    AuthError::Other("invalid base64.bearer.authorization token encoding".into())
                })?;
            token = String::from_utf8(decoded).map_err(|_| {
                AuthError::Other("invalid base64.bearer.authorization token".into())
            })?;
        }
    }
    Ok((others, token))
}

/// Removes the token protocol from `Sec-WebSocket-Protocol` (called after a successful
/// authentication, so the token never travels further).
pub fn strip_token_protocol(headers: &mut HeaderMap) {
    if !is_websocket_request(headers) {
        return;
    }
    let Ok((others, token)) = split_protocols(headers) else {
        return;
    };
    if token.is_empty() {
        return;
    }
    headers.remove(PROTOCOL_HEADER);
    if let Ok(value) = HeaderValue::from_str(&others.join(",")) {
        headers.insert(PROTOCOL_HEADER, value);
    }
}

#[async_trait::async_trait]
impl Authenticator for WebSocketProtocolAuthenticator {
    async fn authenticate(
        &self,
        req: &http::request::Parts,
    ) -> Result<Option<AuthResponse>, AuthError> {
        if !is_websocket_request(&req.headers) {
            return Ok(None);
        }
        let (others, token) = split_protocols(&req.headers)?;
        // Another subprotocol must remain to be echoed back once the token one is removed.
        if !token.is_empty() && others.is_empty() {
            return Err(AuthError::Other("missing additional subprotocol".into()));
        }
        if token.is_empty() {
            return Ok(None);
        }
        match self.tokens.authenticate_token(req, &token).await? {
            Some(resp) => Ok(Some(resp)),
            None => Err(AuthError::InvalidBearerToken),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::UserInfo;

    struct Tokens;
    #[async_trait::async_trait]
    impl TokenAuthenticator for Tokens {
        async fn authenticate_token(
            &self,
            _req: &http::request::Parts,
            token: &str,
        ) -> Result<Option<AuthResponse>, AuthError> {
            Ok((token == "token").then(|| {
                AuthResponse::new(UserInfo {
                    name: "user".into(),
                    ..Default::default()
                })
            }))
        }
    }

    fn parts(protocols: &[&str], websocket: bool) -> http::request::Parts {
        let mut b = http::Request::builder();
        if websocket {
            b = b
                .header("Connection", "Upgrade")
                .header("Upgrade", "websocket");
        }
        for p in protocols {
            b = b.header("Sec-WebSocket-Protocol", *p);
        }
        b.body(()).unwrap().into_parts().0
    }

    fn encoded(token: &str) -> String {
        format!(
            "{BEARER_PROTOCOL_PREFIX}{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token)
        )
    }

    #[tokio::test]
    async fn websocket_tokens() {
        let auth = WebSocketProtocolAuthenticator::new(Arc::new(Tokens));
        let good = format!("{}, v4.channel.k8s.io", encoded("token"));
        assert!(
            auth.authenticate(&parts(&[&good], true))
                .await
                .unwrap()
                .is_some()
        );
        // Not a websocket request: no opinion.
        assert_eq!(
            auth.authenticate(&parts(&[&good], false)).await.unwrap(),
            None
        );
        // No token: no opinion.
        assert_eq!(
            auth.authenticate(&parts(&["v4.channel.k8s.io"], true))
                .await
                .unwrap(),
            None
        );
        // Only the token protocol.
        assert_eq!(
            auth.authenticate(&parts(&[&encoded("token")], true))
                .await
                .unwrap_err()
                .to_string(),
            "missing additional subprotocol"
        );
        // Unknown token.
        let bad = format!("{}, v4.channel.k8s.io", encoded("other"));
        assert_eq!(
            auth.authenticate(&parts(&[&bad], true))
                .await
                .unwrap_err()
                .to_string(),
            "invalid bearer token"
        );
        // Two tokens.
        assert!(
            auth.authenticate(&parts(&[&good, &encoded("token")], true))
                .await
                .is_err()
        );

        let mut p = parts(&[&good], true);
        strip_token_protocol(&mut p.headers);
        assert_eq!(p.headers[PROTOCOL_HEADER], "v4.channel.k8s.io");
    }
}
