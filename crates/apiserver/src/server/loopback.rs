//! The loopback client configuration: how a server's own hooks reach it as a privileged
//! client (upstream's `LoopbackClientConfig`, authorized by `AuthorizeClientBearerToken`).

/// How to reach the server over loopback.
#[derive(Clone, Debug, Default)]
pub struct LoopbackClientConfig {
    /// Base URL, e.g. `https://127.0.0.1:6443`.
    pub host: String,
    /// The bearer token mapped to `system:apiserver` in `system:masters`.
    pub bearer_token: String,
    /// PEM of the CA that signed the serving certificate the loopback client should trust.
    pub ca_pem: Option<String>,
    /// The TLS server name to send (SNI).
    pub server_name: Option<String>,
}

/// A random loopback token (a UUIDv4, as upstream).
pub fn new_loopback_token() -> String {
    uuid::Uuid::new_v4().to_string()
}
