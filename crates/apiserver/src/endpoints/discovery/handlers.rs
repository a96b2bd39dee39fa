//! The discovery HTTP handlers, all served from a [`DiscoveryManager`].
//!
//! `/api` and `/apis` first try the aggregated document: if the `Accept` header selects
//! `application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList` it is served with an
//! ETag; anything else (plain JSON, `*/*`, the retired `v2beta1`) goes to the unaggregated
//! handler, which answers 406 for a transform it cannot satisfy (upstream `WrappedHandler`).

use http::{HeaderValue, Method, StatusCode, header};
use serde::Serialize;

use super::addresses::client_ip;
use super::aggregated_types::{APIDISCOVERY_GROUP, APIDISCOVERY_V2, APIGROUP_DISCOVERY_LIST};
use super::manager::DiscoveryManager;
use crate::body::{Request, Response, empty, full};
use crate::endpoints::negotiation::{
    DefaultEndpointRestrictions, EndpointRestrictions, GroupVersionKind, JSON, NegotiatedOutput,
    SerializerInfo, negotiate_media_type_options, negotiate_output_media_type,
    not_acceptable_response,
};
use crate::filters::{HttpService, service_fn};
use crate::request::ConnectionInfo;
use crate::status::{ApiError, reason};
use crate::util::gojson;

/// The media types discovery can write. Upstream also offers YAML and protobuf; we only encode
/// JSON, so a client asking for protobuf with a JSON fallback (client-go's default) gets JSON.
pub const DISCOVERY_SERIALIZERS: &[SerializerInfo] = &[JSON];

/// The content type of the aggregated document.
pub const AGGREGATED_CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Restrictions of the aggregated endpoint: the only transform allowed is into
/// `apidiscovery.k8s.io/v2 APIGroupDiscoveryList` (`v2beta1` is retired since 1.35).
#[derive(Clone, Copy, Debug, Default)]
pub struct DiscoveryEndpointRestrictions;

/// Whether `gvk` is the aggregated discovery list.
pub fn is_aggregated_discovery_gvk(gvk: Option<&GroupVersionKind>) -> bool {
    gvk.is_some_and(|gvk| {
        gvk.group == APIDISCOVERY_GROUP
            && gvk.version == APIDISCOVERY_V2
            && gvk.kind == APIGROUP_DISCOVERY_LIST
    })
}

impl EndpointRestrictions for DiscoveryEndpointRestrictions {
    fn allows_media_type_transform(&self, _: &str, target: Option<&GroupVersionKind>) -> bool {
        is_aggregated_discovery_gvk(target)
    }

    fn allows_server_version(&self, _: &str) -> bool {
        false
    }

    fn allows_stream_schema(&self, schema: &str) -> bool {
        schema == "watch"
    }
}

/// Whether the request's `Accept` selects the aggregated document.
pub fn wants_aggregated(req: &Request) -> bool {
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    negotiate_media_type_options(
        accept,
        DISCOVERY_SERIALIZERS,
        &DiscoveryEndpointRestrictions,
    )
    .is_some_and(|options| is_aggregated_discovery_gvk(options.convert.as_ref()))
}

/// go-restful's answer for a path inside a discovery root that has no route.
fn not_found() -> Response {
    ApiError::no_route().into_response()
}

/// go-restful's answer for a method the route does not serve.
fn method_not_allowed() -> Response {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        reason::METHOD_NOT_ALLOWED,
        "the server does not allow this method on the requested resource",
    )
    .with_details(Default::default())
    .into_response()
}

/// Encodes `value` as the negotiated JSON: compact plus newline, or indented without one.
fn encode<T: Serialize>(value: &T, pretty: bool) -> Result<Vec<u8>, ApiError> {
    if pretty {
        gojson::to_indented(value).map(String::into_bytes)
    } else {
        gojson::to_line(value)
    }
    .map_err(ApiError::internal)
}

fn json_response(content_type: &'static str, body: Vec<u8>) -> Response {
    let mut response = http::Response::new(full(body));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// Upstream `WriteObjectNegotiated` for an unaggregated document (no transforms allowed).
fn write_negotiated<T: Serialize>(req: &Request, value: &T) -> Response {
    let negotiated = match negotiate_output_media_type(
        req.uri(),
        req.headers(),
        DISCOVERY_SERIALIZERS,
        &DefaultEndpointRestrictions,
    ) {
        Ok(negotiated) => negotiated,
        Err(err) => return not_acceptable_response(&err),
    };
    match encode(value, negotiated.pretty) {
        Ok(body) => json_response(negotiated.options.accepted.media_type, body),
        Err(err) => err.into_response(),
    }
}

/// The aggregated document with its cache headers (upstream `ServeHTTPWithETag`).
fn write_aggregated(manager: &DiscoveryManager, req: &Request, legacy: bool) -> Response {
    let negotiated: NegotiatedOutput = match negotiate_output_media_type(
        req.uri(),
        req.headers(),
        DISCOVERY_SERIALIZERS,
        &DiscoveryEndpointRestrictions,
    ) {
        Ok(negotiated) => negotiated,
        Err(err) => return not_acceptable_response(&err),
    };
    let cached = manager.aggregated(legacy);
    let quoted = format!("\"{}\"", cached.etag);
    // Upstream serves without cache headers when it could not compute a tag.
    let tagged = !cached.etag.is_empty();
    let mut response = if tagged
        && req
            .headers()
            .get(header::IF_NONE_MATCH)
            .is_some_and(|tag| tag.as_bytes() == quoted.as_bytes())
    {
        let mut response = http::Response::new(empty());
        *response.status_mut() = StatusCode::NOT_MODIFIED;
        response
    } else {
        let body = if negotiated.pretty {
            match encode(&cached.list, true) {
                Ok(body) => body,
                Err(err) => return err.into_response(),
            }
        } else {
            cached.json.to_vec()
        };
        json_response(AGGREGATED_CONTENT_TYPE, body)
    };
    if tagged {
        let headers = response.headers_mut();
        if let Ok(etag) = HeaderValue::from_str(&quoted) {
            headers.insert(header::ETAG, etag);
        }
        headers.insert(header::VARY, HeaderValue::from_static("Accept"));
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public"));
    }
    response
}

fn request_client_ip(req: &Request) -> Option<std::net::IpAddr> {
    client_ip(req.headers(), req.extensions().get::<ConnectionInfo>())
}

/// Trims one trailing `/` (go-restful serves a web-service root with or without it).
fn trimmed(path: &str) -> &str {
    if path.len() > 1 {
        path.strip_suffix('/').unwrap_or(path)
    } else {
        path
    }
}

/// A discovery path, as [`DiscoveryManager::service`] routes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DiscoveryPath {
    /// `/api`
    LegacyRoot,
    /// `/apis`
    ApisRoot,
    /// `/apis/<group>`
    Group(String),
    /// `/api/<version>` (group `""`) or `/apis/<group>/<version>`.
    GroupVersion(String, String),
}

impl DiscoveryPath {
    /// Classifies `path` (a trailing `/` is ignored); `None` for anything else.
    pub fn parse(path: &str) -> Option<Self> {
        let path = trimmed(path);
        if path == "/api" {
            return Some(DiscoveryPath::LegacyRoot);
        }
        if path == "/apis" {
            return Some(DiscoveryPath::ApisRoot);
        }
        if let Some(version) = path.strip_prefix("/api/") {
            return (!version.is_empty() && !version.contains('/'))
                .then(|| DiscoveryPath::GroupVersion(String::new(), version.to_string()));
        }
        let rest = path.strip_prefix("/apis/")?;
        let mut parts = rest.split('/');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(group), None, None) if !group.is_empty() => {
                Some(DiscoveryPath::Group(group.to_string()))
            }
            (Some(group), Some(version), None) if !group.is_empty() && !version.is_empty() => Some(
                DiscoveryPath::GroupVersion(group.to_string(), version.to_string()),
            ),
            _ => None,
        }
    }
}

impl DiscoveryManager {
    /// Serves one request for `path` (already classified); 405 for methods other than GET.
    pub fn serve(&self, path: &DiscoveryPath, req: &Request) -> Response {
        if req.method() != Method::GET {
            return method_not_allowed();
        }
        match path {
            DiscoveryPath::LegacyRoot if wants_aggregated(req) => write_aggregated(self, req, true),
            DiscoveryPath::LegacyRoot => {
                write_negotiated(req, &self.api_versions(request_client_ip(req)))
            }
            DiscoveryPath::ApisRoot if wants_aggregated(req) => write_aggregated(self, req, false),
            DiscoveryPath::ApisRoot => {
                write_negotiated(req, &self.api_group_list(request_client_ip(req)))
            }
            DiscoveryPath::Group(group) => match self.api_group(group) {
                Some(doc) => write_negotiated(req, &doc),
                None => not_found(),
            },
            DiscoveryPath::GroupVersion(group, version) => {
                match self.api_resource_list(group, version) {
                    Some(doc) => write_negotiated(req, &doc),
                    None => not_found(),
                }
            }
        }
    }

    fn fixed_service(&self, path: DiscoveryPath) -> HttpService {
        let manager = self.clone();
        service_fn(move |req: Request| {
            let response = if DiscoveryPath::parse(req.uri().path()).as_ref() == Some(&path) {
                manager.serve(&path, &req)
            } else {
                not_found()
            };
            async move { response }
        })
    }

    /// The `/api` handler: aggregated discovery or `APIVersions`.
    pub fn legacy_root_service(&self) -> HttpService {
        self.fixed_service(DiscoveryPath::LegacyRoot)
    }

    /// The `/apis` handler: aggregated discovery or `APIGroupList`.
    pub fn apis_root_service(&self) -> HttpService {
        self.fixed_service(DiscoveryPath::ApisRoot)
    }

    /// The `/apis/<group>` handler (`APIGroup`; 404 once the group is removed).
    pub fn group_service(&self, group: &str) -> HttpService {
        self.fixed_service(DiscoveryPath::Group(group.to_string()))
    }

    /// The `/apis/<group>/<version>` handler, or `/api/<version>` for group `""`
    /// (`APIResourceList`; 404 once the version is removed). Paths below the root are 404 here;
    /// the REST layer serves them.
    pub fn group_version_service(&self, group: &str, version: &str) -> HttpService {
        self.fixed_service(DiscoveryPath::GroupVersion(
            group.to_string(),
            version.to_string(),
        ))
    }

    /// One handler for every discovery path; any other path is a 404 Status.
    pub fn service(&self) -> HttpService {
        let manager = self.clone();
        service_fn(move |req: Request| {
            let response = match DiscoveryPath::parse(req.uri().path()) {
                Some(path) => manager.serve(&path, &req),
                None => not_found(),
            };
            async move { response }
        })
    }
}
