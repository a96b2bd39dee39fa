//! Output content negotiation (upstream `handlers/negotiation/negotiate.go` over goautoneg).
//!
//! The `Accept` header is parsed goautoneg-style into clauses ordered by q-value; the first clause
//! (in that order) that matches a supported serializer (`type/subtype`, `type/*` or `*/*`) and
//! whose parameters the endpoint allows wins. Kubernetes quirks kept on purpose: a `q=0` clause
//! still matches, parameter names are case-sensitive, an empty header picks the first supported
//! type, and unknown parameters are ignored (recorded in [`MediaTypeOptions::unrecognized`]).

use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde::Serialize;

use crate::body::{Response, full};
use crate::status::{ApiError, reason};

/// One media type a handler can produce (upstream `runtime.SerializerInfo`, reduced to what
/// negotiation needs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SerializerInfo {
    /// The full media type, e.g. `application/json`.
    pub media_type: &'static str,
    /// Whether a stream (watch) serializer exists for it.
    pub streaming: bool,
    /// Whether a pretty variant exists (JSON only upstream).
    pub pretty: bool,
}

impl SerializerInfo {
    /// The part before `/`.
    pub fn media_type_type(&self) -> &'static str {
        self.media_type
            .split_once('/')
            .map_or(self.media_type, |(t, _)| t)
    }

    /// The part after `/`.
    pub fn media_type_subtype(&self) -> &'static str {
        self.media_type.split_once('/').map_or("", |(_, s)| s)
    }
}

/// `application/json` (streams, pretty).
pub const JSON: SerializerInfo = SerializerInfo {
    media_type: "application/json",
    streaming: true,
    pretty: true,
};

/// `application/yaml` (no stream serializer, no pretty variant).
pub const YAML: SerializerInfo = SerializerInfo {
    media_type: "application/yaml",
    streaming: false,
    pretty: false,
};

/// `application/vnd.kubernetes.protobuf`.
pub const PROTOBUF: SerializerInfo = SerializerInfo {
    media_type: "application/vnd.kubernetes.protobuf",
    streaming: true,
    pretty: false,
};

/// The serializers of the default codec factory, in upstream order.
pub const DEFAULT_SERIALIZERS: &[SerializerInfo] = &[JSON, YAML, PROTOBUF];

/// One parsed clause of an `Accept` header (goautoneg's `Accept`).
#[derive(Clone, Debug, PartialEq)]
pub struct AcceptClause {
    /// The type, e.g. `application` or `*`.
    pub type_: String,
    /// The subtype, e.g. `json` or `*`.
    pub sub_type: String,
    /// The q-value (1.0 when absent, 0.0 when unparsable).
    pub q: f64,
    /// The other parameters in header order; a repeated name keeps its last value.
    pub params: Vec<(String, String)>,
}

impl AcceptClause {
    /// The value of parameter `name`.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Parses an `Accept` header as goautoneg does: comma-separated clauses, `;`-separated
/// parameters, `*` alone meaning `*/*`, malformed media ranges skipped, then sorted by q-value
/// with concrete types before wildcards.
pub fn parse_accept(header: &str) -> Vec<AcceptClause> {
    let mut clauses = Vec::new();
    for part in header.split(',') {
        let part = part.trim_matches(' ');
        let mut pieces = part.split(';');
        let media_range = pieces.next().unwrap_or_default();
        let mut range = media_range.split('/');
        let type_ = range
            .next()
            .unwrap_or_default()
            .trim_matches(' ')
            .to_string();
        let sub_type = match (range.next(), range.next()) {
            (None, _) if type_ == "*" => "*".to_string(),
            (Some(sub), None) => sub.trim_matches(' ').to_string(),
            _ => continue,
        };
        let mut clause = AcceptClause {
            type_,
            sub_type,
            q: 1.0,
            params: Vec::new(),
        };
        for param in pieces {
            let Some((name, value)) = param.split_once('=') else {
                continue;
            };
            let name = name.trim_matches(' ');
            if name == "q" {
                // Go parses the untrimmed value and keeps 0 on error.
                clause.q = value.parse::<f32>().map(f64::from).unwrap_or_default();
            } else {
                let value = value.trim_matches(' ').to_string();
                match clause.params.iter_mut().find(|(k, _)| k == name) {
                    Some(existing) => existing.1 = value,
                    None => clause.params.push((name.to_string(), value)),
                }
            }
        }
        clauses.push(clause);
    }
    sort_like_go(&mut clauses);
    clauses
}

/// goautoneg's ordering predicate. It is not a strict weak order, so the result depends on the
/// algorithm: Go's `sort.Sort` runs an insertion sort on short slices (every real header), which
/// this reproduces.
fn accept_less(a: &AcceptClause, b: &AcceptClause) -> bool {
    if a.q > b.q {
        return true;
    }
    if a.type_ != "*" && b.type_ == "*" {
        return true;
    }
    a.sub_type != "*" && b.sub_type == "*"
}

fn sort_like_go(clauses: &mut [AcceptClause]) {
    for i in 1..clauses.len() {
        let mut j = i;
        while j > 0 && accept_less(&clauses[j], &clauses[j - 1]) {
            clauses.swap(j, j - 1);
            j -= 1;
        }
    }
}

/// A group/version/kind an `Accept` clause asks the object to be transformed into
/// (`;g=…;v=…;as=…`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupVersionKind {
    /// `g`
    pub group: String,
    /// `v`
    pub version: String,
    /// `as`
    pub kind: String,
}

/// What an endpoint allows beyond a plain media type (upstream `EndpointRestrictions`).
pub trait EndpointRestrictions {
    /// Whether the endpoint can transform its output into `target` (`None` = no transform).
    fn allows_media_type_transform(
        &self,
        media_type: &str,
        target: Option<&GroupVersionKind>,
    ) -> bool;
    /// Whether the endpoint accepts the `sv` (server version) parameter value.
    fn allows_server_version(&self, version: &str) -> bool;
    /// Whether the endpoint accepts the `stream` parameter value.
    fn allows_stream_schema(&self, schema: &str) -> bool;
}

/// The default restrictions: no transforms, no server versions, `stream=watch` only.
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultEndpointRestrictions;

impl EndpointRestrictions for DefaultEndpointRestrictions {
    fn allows_media_type_transform(&self, _: &str, target: Option<&GroupVersionKind>) -> bool {
        target.is_none()
    }

    fn allows_server_version(&self, _: &str) -> bool {
        false
    }

    fn allows_stream_schema(&self, schema: &str) -> bool {
        schema == "watch"
    }
}

/// The outcome of negotiation (upstream `MediaTypeOptions`).
#[derive(Clone, Debug, PartialEq)]
pub struct MediaTypeOptions {
    /// The serializer chosen.
    pub accepted: SerializerInfo,
    /// The requested transform (`g`, `v`, `as`), if any of them was given.
    pub convert: Option<GroupVersionKind>,
    /// The `stream` parameter (empty when absent).
    pub stream: String,
    /// The `sv` parameter (empty when absent).
    pub use_server_version: String,
    /// `export=1`.
    pub export: bool,
    /// `pretty=1`.
    pub pretty: bool,
    /// The `profile` parameter (empty when absent).
    pub profile: String,
    /// Names of parameters that were not recognised.
    pub unrecognized: Vec<String>,
}

/// Matches `header` against `supported` under `restrictions`. An empty header selects the first
/// supported type; `None` means nothing matched (a 406).
pub fn negotiate_media_type_options(
    header: &str,
    supported: &[SerializerInfo],
    restrictions: &dyn EndpointRestrictions,
) -> Option<MediaTypeOptions> {
    if header.is_empty() {
        return supported
            .first()
            .map(|accepted| options_for(*accepted, Default::default()));
    }
    for clause in parse_accept(header) {
        for accepts in supported {
            let matches = (clause.type_ == accepts.media_type_type()
                && (clause.sub_type == accepts.media_type_subtype() || clause.sub_type == "*"))
                || (clause.type_ == "*" && clause.sub_type == "*");
            if !matches {
                continue;
            }
            if let Some(options) = accept_media_type_options(&clause, *accepts, restrictions) {
                return Some(options);
            }
        }
    }
    None
}

fn options_for(accepted: SerializerInfo, convert: Option<GroupVersionKind>) -> MediaTypeOptions {
    MediaTypeOptions {
        accepted,
        convert,
        stream: String::new(),
        use_server_version: String::new(),
        export: false,
        pretty: false,
        profile: String::new(),
        unrecognized: Vec::new(),
    }
}

fn accept_media_type_options(
    clause: &AcceptClause,
    accepts: SerializerInfo,
    restrictions: &dyn EndpointRestrictions,
) -> Option<MediaTypeOptions> {
    let mut options = options_for(accepts, None);
    for (name, value) in &clause.params {
        match name.as_str() {
            "as" => options.convert.get_or_insert_with(Default::default).kind = value.clone(),
            "g" => options.convert.get_or_insert_with(Default::default).group = value.clone(),
            "v" => options.convert.get_or_insert_with(Default::default).version = value.clone(),
            "stream" => {
                if !value.is_empty()
                    && (!accepts.streaming || !restrictions.allows_stream_schema(value))
                {
                    return None;
                }
                options.stream = value.clone();
            }
            "sv" => {
                if !value.is_empty() && !restrictions.allows_server_version(value) {
                    return None;
                }
                options.use_server_version = value.clone();
            }
            "export" => options.export = value == "1",
            "pretty" => options.pretty = value == "1",
            "profile" => options.profile = value.clone(),
            _ => options.unrecognized.push(name.clone()),
        }
    }
    if !restrictions.allows_media_type_transform(accepts.media_type, options.convert.as_ref()) {
        return None;
    }
    Some(options)
}

/// The negotiated output of a request: the options and whether to pretty-print.
#[derive(Clone, Debug, PartialEq)]
pub struct NegotiatedOutput {
    /// The matched media type and its parameters.
    pub options: MediaTypeOptions,
    /// Whether the pretty serializer is used (`pretty=1`, `?pretty=true`, or a browser/CLI
    /// user agent), only for serializers that have one.
    pub pretty: bool,
}

/// Negotiates the output for a request (upstream `NegotiateOutputMediaType`): the first `Accept`
/// header against `supported`, or a 406 listing the supported media types.
pub fn negotiate_output_media_type(
    uri: &http::Uri,
    headers: &HeaderMap,
    supported: &[SerializerInfo],
    restrictions: &dyn EndpointRestrictions,
) -> Result<NegotiatedOutput, ApiError> {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let options = negotiate_media_type_options(accept, supported, restrictions)
        .ok_or_else(|| not_acceptable(supported))?;
    let pretty = options.accepted.pretty && (options.pretty || is_pretty_print(uri, headers));
    Ok(NegotiatedOutput { options, pretty })
}

/// 406 NotAcceptable: `only the following media types are accepted: <types>`.
pub fn not_acceptable(supported: &[SerializerInfo]) -> ApiError {
    let types: Vec<&str> = supported.iter().map(|s| s.media_type).collect();
    ApiError::new(
        StatusCode::NOT_ACCEPTABLE,
        reason::NOT_ACCEPTABLE,
        format!(
            "only the following media types are accepted: {}",
            types.join(", ")
        ),
    )
}

/// Whether the request asks for pretty output outside the media type: a non-empty `pretty`
/// query value that parses as a Go bool, else a `curl`, `Wget` or `Mozilla/5.0` user agent.
pub fn is_pretty_print(uri: &http::Uri, headers: &HeaderMap) -> bool {
    if let Some(query) = uri.query().filter(|q| q.contains("pretty")) {
        let value = query
            .split('&')
            .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
            .find(|(k, _)| *k == "pretty")
            .map(|(_, v)| v);
        if let Some(value) = value.filter(|v| !v.is_empty()) {
            return parse_go_bool(value).unwrap_or(false);
        }
    }
    let agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    ["curl", "Wget", "Mozilla/5.0"]
        .iter()
        .any(|prefix| agent.starts_with(prefix))
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(value: &str) -> Option<bool> {
    match value {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

/// Upstream `WriteRawJSON`: indented JSON (no trailing newline), `Content-Type:
/// application/json`. Used for errors when output negotiation itself failed (the 406).
pub fn raw_json_response<T: Serialize>(code: StatusCode, value: &T) -> Response {
    match crate::util::gojson::to_indented(value) {
        Ok(text) => {
            let mut response = http::Response::new(full(text));
            *response.status_mut() = code;
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        Err(err) => crate::body::go_http_error(StatusCode::INTERNAL_SERVER_ERROR, &err.to_string()),
    }
}

/// The response for a failed negotiation: the Status as raw indented JSON with its own code.
pub fn not_acceptable_response(err: &ApiError) -> Response {
    raw_json_response(err.code(), &*err.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn negotiate(accept: &str, supported: &[SerializerInfo]) -> Option<MediaTypeOptions> {
        negotiate_media_type_options(accept, supported, &DefaultEndpointRestrictions)
    }

    // Upstream `negotiate_test.go TestNegotiate`.
    #[test]
    fn upstream_negotiate_table() {
        let json_only: &[SerializerInfo] = &[JSON];
        let proto = SerializerInfo {
            media_type: "application/protobuf",
            streaming: false,
            pretty: false,
        };
        let json_and_proto: &[SerializerInfo] = &[JSON, proto];
        let bare: &[SerializerInfo] = &[SerializerInfo {
            media_type: "application",
            streaming: false,
            pretty: false,
        }];
        let uri = |s: &str| s.parse::<http::Uri>().unwrap();
        let headers = |pairs: &[(header::HeaderName, &'static str)]| {
            HeaderMap::from_iter(
                pairs
                    .iter()
                    .map(|(k, v)| (k.clone(), HeaderValue::from_static(v))),
            )
        };
        let accept = |v: &'static str| headers(&[(header::ACCEPT, v)]);
        // (path, headers, supported, Ok((media type, pretty)) or Err(message))
        type Case<'a> = (
            &'a str,
            HeaderMap,
            &'a [SerializerInfo],
            Result<(&'a str, bool), &'a str>,
        );
        let table: Vec<Case> = vec![
            (
                "/",
                HeaderMap::new(),
                json_only,
                Ok(("application/json", false)),
            ),
            (
                "/",
                accept("*/*"),
                json_only,
                Ok(("application/json", false)),
            ),
            (
                "/",
                accept("application/*"),
                json_only,
                Ok(("application/json", false)),
            ),
            (
                "/",
                accept("application/json"),
                json_only,
                Ok(("application/json", false)),
            ),
            (
                "/",
                accept("application/json; export=true"),
                json_only,
                Ok(("application/json", false)),
            ),
            (
                "/",
                accept("application/json"),
                json_and_proto,
                Ok(("application/json", false)),
            ),
            (
                "/",
                accept("application/protobuf"),
                json_and_proto,
                Ok(("application/protobuf", false)),
            ),
            (
                "/",
                accept("application/json; pretty=1"),
                json_only,
                Ok(("application/json", true)),
            ),
            (
                "/",
                accept("unrecognized/stuff,application/json; pretty=1"),
                json_only,
                Ok(("application/json", true)),
            ),
            (
                "/?pretty=1",
                accept("application/json"),
                json_only,
                Ok(("application/json", true)),
            ),
            (
                "/",
                headers(&[
                    (header::ACCEPT, "application/json"),
                    (header::USER_AGENT, "curl"),
                ]),
                json_only,
                Ok(("application/json", true)),
            ),
            (
                "/",
                headers(&[
                    (header::ACCEPT, "application/json"),
                    (header::USER_AGENT, "Wget"),
                ]),
                json_only,
                Ok(("application/json", true)),
            ),
            (
                "/",
                headers(&[
                    (header::ACCEPT, "application/json"),
                    (header::USER_AGENT, "Mozilla/5.0"),
                ]),
                json_only,
                Ok(("application/json", true)),
            ),
            (
                "/",
                accept("application"),
                bare,
                Err("only the following media types are accepted: application"),
            ),
            (
                "/",
                HeaderMap::new(),
                &[],
                Err("only the following media types are accepted: "),
            ),
            (
                "/",
                accept("*/*"),
                &[],
                Err("only the following media types are accepted: "),
            ),
        ];
        for (i, (path, headers, supported, want)) in table.into_iter().enumerate() {
            let got = negotiate_output_media_type(
                &uri(path),
                &headers,
                supported,
                &DefaultEndpointRestrictions,
            );
            match (got, want) {
                (Ok(got), Ok((media_type, pretty))) => {
                    assert_eq!(got.options.accepted.media_type, media_type, "case {i}");
                    assert_eq!(got.pretty, pretty, "case {i}");
                }
                (Err(err), Err(message)) => {
                    assert_eq!(err.0.message, message, "case {i}");
                    assert_eq!(err.code(), StatusCode::NOT_ACCEPTABLE, "case {i}");
                    assert_eq!(err.0.status, "Failure", "case {i}");
                }
                (got, want) => panic!("case {i}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn parse_sorts_by_q_then_specificity() {
        let clauses = parse_accept("text/*;q=0.5, */*;q=0.1, application/json, text/plain;q=0.5");
        let order: Vec<String> = clauses
            .iter()
            .map(|c| format!("{}/{}", c.type_, c.sub_type))
            .collect();
        assert_eq!(
            order,
            vec!["application/json", "text/plain", "text/*", "*/*"]
        );
        assert_eq!(clauses[1].q, 0.5);
    }

    #[test]
    fn parse_star_alone_and_malformed() {
        let clauses = parse_accept("*, a/b/c, text ;x=1, application/json;charset=utf-8;q= 1");
        assert_eq!(clauses.len(), 2);
        let json = clauses.iter().find(|c| c.type_ == "application").unwrap();
        // `q= 1` does not parse in Go (untrimmed), so it is 0 and sorts last.
        assert_eq!(json.q, 0.0);
        assert_eq!(json.param("charset"), Some("utf-8"));
        // goautoneg's predicate puts a concrete type before a wildcard even when its q-value
        // is lower; Go's insertion sort therefore yields this order.
        assert_eq!(clauses[0].type_, "application");
        assert_eq!(
            (clauses[1].type_.as_str(), clauses[1].sub_type.as_str()),
            ("*", "*")
        );
    }

    #[test]
    fn empty_accept_selects_first_supported() {
        let got = negotiate("", DEFAULT_SERIALIZERS).unwrap();
        assert_eq!(got.accepted, JSON);
    }

    #[test]
    fn wildcards_match() {
        assert_eq!(
            negotiate("*/*", DEFAULT_SERIALIZERS).unwrap().accepted,
            JSON
        );
        assert_eq!(
            negotiate("application/*", DEFAULT_SERIALIZERS)
                .unwrap()
                .accepted,
            JSON
        );
        assert_eq!(
            negotiate("text/*, application/yaml", DEFAULT_SERIALIZERS)
                .unwrap()
                .accepted,
            YAML
        );
        assert!(negotiate("text/*", DEFAULT_SERIALIZERS).is_none());
        assert!(negotiate("*/json", DEFAULT_SERIALIZERS).is_none());
    }

    #[test]
    fn q_order_wins_over_header_order() {
        let got = negotiate(
            "application/json;q=0.5, application/vnd.kubernetes.protobuf",
            DEFAULT_SERIALIZERS,
        )
        .unwrap();
        assert_eq!(got.accepted, PROTOBUF);
    }

    #[test]
    fn q_zero_still_matches_like_upstream() {
        assert_eq!(
            negotiate("application/json;q=0", DEFAULT_SERIALIZERS)
                .unwrap()
                .accepted,
            JSON
        );
    }

    #[test]
    fn transform_needs_restrictions() {
        let table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        let got = negotiate(table, DEFAULT_SERIALIZERS).unwrap();
        assert_eq!(got.accepted, JSON);
        assert_eq!(got.convert, None);
        assert!(
            negotiate(
                "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
                DEFAULT_SERIALIZERS
            )
            .is_none()
        );
    }

    struct AllowAll;
    impl EndpointRestrictions for AllowAll {
        fn allows_media_type_transform(&self, _: &str, _: Option<&GroupVersionKind>) -> bool {
            true
        }
        fn allows_server_version(&self, _: &str) -> bool {
            true
        }
        fn allows_stream_schema(&self, _: &str) -> bool {
            true
        }
    }

    #[test]
    fn parameters_are_recorded() {
        let got = negotiate_media_type_options(
            "application/json;as=Table;g=meta.k8s.io;v=v1;pretty=1;export=1;sv=v1;profile=nopeer;foo=bar",
            DEFAULT_SERIALIZERS,
            &AllowAll,
        )
        .unwrap();
        assert_eq!(
            got.convert,
            Some(GroupVersionKind {
                group: "meta.k8s.io".into(),
                version: "v1".into(),
                kind: "Table".into()
            })
        );
        assert!(got.pretty && got.export);
        assert_eq!(got.use_server_version, "v1");
        assert_eq!(got.profile, "nopeer");
        assert_eq!(got.unrecognized, vec!["foo".to_string()]);
    }

    #[test]
    fn stream_parameter() {
        let got = negotiate("application/json;stream=watch", DEFAULT_SERIALIZERS).unwrap();
        assert_eq!(got.stream, "watch");
        assert!(negotiate("application/json;stream=other", DEFAULT_SERIALIZERS).is_none());
        // YAML has no stream serializer.
        assert!(negotiate("application/yaml;stream=watch", DEFAULT_SERIALIZERS).is_none());
        // `sv` is refused by default.
        assert!(negotiate("application/json;sv=v1", DEFAULT_SERIALIZERS).is_none());
    }

    #[test]
    fn not_acceptable_lists_supported_types() {
        let err = negotiate_output_media_type(
            &"/api".parse().unwrap(),
            &HeaderMap::from_iter([(header::ACCEPT, HeaderValue::from_static("text/html"))]),
            DEFAULT_SERIALIZERS,
            &DefaultEndpointRestrictions,
        )
        .unwrap_err();
        assert_eq!(err.code(), StatusCode::NOT_ACCEPTABLE);
        assert_eq!(
            err.0.message,
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
        let response = not_acceptable_response(&err);
        assert_eq!(response.status(), StatusCode::NOT_ACCEPTABLE);
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
    }

    #[test]
    fn pretty_detection() {
        let headers = |agent: &'static str| {
            HeaderMap::from_iter([(header::USER_AGENT, HeaderValue::from_static(agent))])
        };
        let uri = |s: &str| s.parse::<http::Uri>().unwrap();
        assert!(is_pretty_print(&uri("/api"), &headers("curl/8.0")));
        assert!(is_pretty_print(&uri("/api"), &headers("Mozilla/5.0 (X11)")));
        assert!(!is_pretty_print(&uri("/api"), &headers("kubectl/v1.35")));
        assert!(is_pretty_print(
            &uri("/api?pretty=true"),
            &headers("kubectl")
        ));
        assert!(!is_pretty_print(
            &uri("/api?pretty=0"),
            &headers("curl/8.0")
        ));
        assert!(!is_pretty_print(
            &uri("/api?pretty=bogus"),
            &headers("curl/8.0")
        ));
        // An empty value falls through to the user agent.
        assert!(is_pretty_print(&uri("/api?pretty="), &headers("Wget/1.0")));

        let json_pretty = negotiate_output_media_type(
            &uri("/api"),
            &HeaderMap::from_iter([(
                header::ACCEPT,
                HeaderValue::from_static("application/json;pretty=1"),
            )]),
            DEFAULT_SERIALIZERS,
            &DefaultEndpointRestrictions,
        )
        .unwrap();
        assert!(json_pretty.pretty);
        let yaml = negotiate_output_media_type(
            &uri("/api?pretty=true"),
            &HeaderMap::from_iter([(header::ACCEPT, HeaderValue::from_static("application/yaml"))]),
            DEFAULT_SERIALIZERS,
            &DefaultEndpointRestrictions,
        )
        .unwrap();
        assert!(!yaml.pretty);
    }
}
