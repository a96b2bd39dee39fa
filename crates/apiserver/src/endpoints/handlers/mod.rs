//! The REST handlers of one resource (upstream `pkg/endpoints/handlers`): each verb family
//! decodes its options and body, calls the resource's [`RestStorage`] and encodes the result.
//!
//! The [`installer`](crate::endpoints::installer) routes a request inside a group-version root
//! to one of these handlers with a [`ResourceScope`].

use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwapOption;
use serde_json::Value;

use crate::body::Request;
use crate::registry::rest::{RequestContext, RestStorage};
use crate::registry::{ResourceInfo, Strategy};
use crate::request::warning::WarningRecorder;
use crate::request::{RequestInfo, RequestUser};
use crate::status::ApiError;

pub mod admit;
pub mod connect;
pub mod create;
pub mod decode;
pub mod delete;
pub mod encode;
pub mod get;
pub mod list;
pub mod options;
pub mod patch;
pub mod seams;
pub mod table;
pub mod update;
pub mod watch;

#[cfg(test)]
mod tests;

/// Decodes a Kubernetes protobuf request body (`k8s\0` + `runtime.Unknown`) into the JSON
/// object it carries. Installed by the protobuf helper; until then such bodies get 415.
pub type ProtobufDecoder = Arc<dyn Fn(&[u8]) -> Result<Value, ApiError> + Send + Sync>;

/// A slot for the protobuf decoder, shared by every installed resource so it can be plugged in
/// (or replaced) after installation.
pub type ProtobufDecoderSlot = Arc<ArcSwapOption<ProtobufDecoder>>;

/// What every handler of a server needs besides its storage.
#[derive(Clone)]
pub struct HandlerConfig {
    /// `--max-request-body-bytes`; bodies longer get 413 (0 = unlimited).
    pub max_request_body_bytes: usize,
    /// `--min-request-timeout`: watches without `timeoutSeconds` last between this and twice it.
    pub min_request_timeout: Duration,
    /// The protobuf body decoder, when plugged in.
    pub protobuf_decoder: ProtobufDecoderSlot,
    /// The admission chain, when the server has one (set once the plugins are built).
    pub admission: AdmissionSlot,
}

/// A slot for the admission chain, shared by every installed resource so it can be plugged
/// in after installation (plugins read the stores the installation creates).
pub type AdmissionSlot = Arc<ArcSwapOption<crate::admission::Chain>>;

impl Default for HandlerConfig {
    fn default() -> Self {
        HandlerConfig {
            max_request_body_bytes: 3 * 1024 * 1024,
            min_request_timeout: Duration::from_secs(1800),
            protobuf_decoder: Arc::default(),
            admission: Arc::default(),
        }
    }
}

impl HandlerConfig {
    /// The protobuf decoder, if one is plugged in.
    pub fn protobuf_decoder(&self) -> Option<ProtobufDecoder> {
        self.protobuf_decoder.load_full().map(|d| (*d).clone())
    }
}

/// One installed resource path (`deployments` or `deployments/status`) of a group-version.
#[derive(Clone)]
pub struct ResourceScope {
    /// The storage serving it.
    pub storage: Arc<dyn RestStorage>,
    /// Group of the served group-version (may differ from the kind's group for `scale`).
    pub group: String,
    /// Version of the served group-version.
    pub version: String,
    /// The resource (`deployments`).
    pub resource: String,
    /// The subresource (`status`), empty for the main resource.
    pub subresource: String,
    /// Server-wide handler settings.
    pub config: HandlerConfig,
}

/// The strategy of a storage without one: the defaults of [`Strategy`].
pub(crate) struct PlainStrategy<'a>(&'a ResourceInfo);

impl Strategy for PlainStrategy<'_> {
    fn info(&self) -> &ResourceInfo {
        self.0
    }
}

impl ResourceScope {
    /// The resource's facts (kind, list kind, namespaced …).
    pub fn info(&self) -> &ResourceInfo {
        self.storage.info()
    }

    /// Runs `f` with the storage's strategy, or the default strategy when it has none.
    pub fn with_strategy<T>(&self, f: impl FnOnce(&dyn Strategy) -> T) -> T {
        match self.storage.strategy() {
            Some(strategy) => f(strategy),
            None => f(&PlainStrategy(self.storage.info())),
        }
    }

    /// `group/version` of the served group-version (`v1` for the core group).
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Whether the resource's objects have a protobuf encoding (built-in kinds; not custom
    /// resources, which are served as JSON and YAML only, as upstream serves them).
    pub fn supports_protobuf(&self) -> bool {
        let info = self.info();
        crate::endpoints::protobuf::can_encode(&info.api_version(), &info.kind)
    }

    /// The 404 for `name` of this resource.
    pub fn not_found(&self, name: &str) -> ApiError {
        ApiError::not_found(&self.info().group, &self.info().resource, name)
    }
}

/// The parts of a request the handlers read (the body is taken separately).
pub struct RequestParts {
    /// The URI.
    pub uri: http::Uri,
    /// The headers.
    pub headers: http::HeaderMap,
    /// Resolved request info (namespace, name, verb …).
    pub info: RequestInfo,
    /// Who asks, where, and where warnings go.
    pub ctx: RequestContext,
    /// The server's shutdown token for watches, if attached.
    pub shutdown: Option<tokio_util::sync::CancellationToken>,
}

impl RequestParts {
    /// Collects the parts of `req` that handlers need.
    pub fn new(req: &Request, info: RequestInfo) -> Self {
        let ctx = RequestContext {
            namespace: info.namespace.clone(),
            name: info.name.clone(),
            user: req.extensions().get::<RequestUser>().map(|u| u.0.clone()),
            warnings: req.extensions().get::<Arc<WarningRecorder>>().cloned(),
            audit: req
                .extensions()
                .get::<Arc<crate::audit::AuditContext>>()
                .cloned(),
            admission: None,
        };
        RequestParts {
            uri: req.uri().clone(),
            headers: req.headers().clone(),
            info,
            ctx,
            shutdown: req
                .extensions()
                .get::<crate::request::ServerShutdownSignal>()
                .map(|s| s.0.clone()),
        }
    }

    /// The raw query string.
    pub fn query(&self) -> &str {
        self.uri.query().unwrap_or("")
    }

    /// A header as text.
    pub fn header(&self, name: http::header::HeaderName) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}
