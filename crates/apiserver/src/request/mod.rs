//! What the handler chain learns about a request, carried in the request's
//! [`http::Extensions`] (the analogue of Go's request context values).
//!
//! Filters insert these values; later filters and handlers read them:
//! * [`ReceivedTimestamp`]: when the request arrived (request-received-timestamp filter);
//! * [`RequestInfo`] and [`LongRunning`]: the parsed API path (request-info filter);
//! * [`UserInfo`]: the authenticated (or impersonated) user (authentication, impersonation);
//! * [`RequestDeadline`]: when a non-long-running request must be done (request-deadline filter);
//! * [`MuxAndDiscoveryIncomplete`]: set while not all paths are installed;
//! * [`ConnectionInfo`]: the TLS connection the request came in on (serving);
//! * [`crate::request::warning::WarningRecorder`]: `Warning` headers added by handlers.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use rustls_pki_types::CertificateDer;
use tokio_util::sync::CancellationToken;

pub mod requestinfo;
pub mod warning;

/// The parsed meaning of a request path (`k8s.io/apiserver/pkg/endpoints/request.RequestInfo`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestInfo {
    /// Whether the request addresses an API resource (vs. a non-resource path like `/healthz`).
    pub is_resource_request: bool,
    /// The URL path.
    pub path: String,
    /// The Kubernetes verb: `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection`, `proxy`, or the lower-cased HTTP method for non-resource requests.
    pub verb: String,
    /// `api` or `apis` for resource requests.
    pub api_prefix: String,
    /// API group, empty for the core group.
    pub api_group: String,
    /// API version.
    pub api_version: String,
    /// Namespace, empty for cluster-scoped requests.
    pub namespace: String,
    /// Resource, e.g. `pods`.
    pub resource: String,
    /// Subresource, e.g. `status`.
    pub subresource: String,
    /// Object name.
    pub name: String,
    /// Path parts after the namespace, starting with the resource.
    pub parts: Vec<String>,
    /// The raw `fieldSelector` query value (list, watch, deletecollection only).
    pub field_selector: String,
    /// The raw `labelSelector` query value (list, watch, deletecollection only).
    pub label_selector: String,
}

/// Whether the request is long-running (watch, proxy, exec …), decided once by the
/// request-info filter with the configured `LongRunningRequestCheck`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LongRunning(pub bool);

/// Well-known user and group names.
pub mod names {
    /// Members are always authorized and never throttled.
    pub const SYSTEM_MASTERS: &str = "system:masters";
    /// Added to every authenticated user.
    pub const SYSTEM_AUTHENTICATED: &str = "system:authenticated";
    /// The group of the anonymous user.
    pub const SYSTEM_UNAUTHENTICATED: &str = "system:unauthenticated";
    /// The anonymous user.
    pub const ANONYMOUS: &str = "system:anonymous";
    /// The loopback client's user.
    pub const APISERVER_USER: &str = "system:apiserver";
}

/// An authenticated identity (`k8s.io/apiserver/pkg/authentication/user.Info`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// User name.
    pub name: String,
    /// Unique id, may be empty.
    pub uid: String,
    /// Groups.
    pub groups: Vec<String>,
    /// Extra attributes.
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// Whether the user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// Whether this is the anonymous user (by name or by group).
    pub fn is_anonymous(&self) -> bool {
        self.name == names::ANONYMOUS || self.in_group(names::SYSTEM_UNAUTHENTICATED)
    }
}

/// The user a request runs as. Inserted by authentication, replaced by impersonation.
#[derive(Clone, Debug)]
pub struct RequestUser(pub Arc<UserInfo>);

/// The user who actually authenticated, kept when impersonation replaces [`RequestUser`].
#[derive(Clone, Debug)]
pub struct AuthenticatedUser(pub Arc<UserInfo>);

/// When the request was received.
#[derive(Clone, Copy, Debug)]
pub struct ReceivedTimestamp {
    /// Monotonic time, for deadlines and latencies.
    pub instant: Instant,
    /// Wall-clock time, for audit events.
    pub wall: SystemTime,
}

impl ReceivedTimestamp {
    /// Now.
    pub fn now() -> Self {
        ReceivedTimestamp {
            instant: Instant::now(),
            wall: SystemTime::now(),
        }
    }
}

/// The deadline of a non-long-running request (received time + effective timeout).
#[derive(Clone, Copy, Debug)]
pub struct RequestDeadline(pub Instant);

/// Present while the MuxAndDiscoveryComplete signal had not fired when the request arrived.
#[derive(Clone, Copy, Debug)]
pub struct MuxAndDiscoveryIncomplete;

/// Fired when the server stops accepting new requests; watch handlers end their streams on it
/// (upstream's `ServerShutdownSignal`, only attached when watch draining is enabled).
#[derive(Clone, Debug)]
pub struct ServerShutdownSignal(pub CancellationToken);

/// The connection a request arrived on.
#[derive(Clone, Debug)]
pub struct ConnectionInfo {
    /// The client's address.
    pub remote_addr: Option<SocketAddr>,
    /// The server's address the client connected to.
    pub local_addr: Option<SocketAddr>,
    /// Whether the connection is TLS.
    pub tls: bool,
    /// The certificates the client presented (leaf first), unverified.
    pub peer_certificates: Option<Arc<Vec<CertificateDer<'static>>>>,
    /// Cancelling this asks the connection to close gracefully after the current response
    /// (HTTP/2 GOAWAY; upstream sets `Connection: close`, which Go turns into a GOAWAY).
    pub close_connection: CancellationToken,
}

impl ConnectionInfo {
    /// Connection info for a request that did not come from a network listener (tests, loopback).
    pub fn local() -> Self {
        ConnectionInfo {
            remote_addr: None,
            local_addr: None,
            tls: false,
            peer_certificates: None,
            close_connection: CancellationToken::new(),
        }
    }
}
