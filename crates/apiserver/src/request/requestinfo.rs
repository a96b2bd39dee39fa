//! Resolving a request's [`RequestInfo`] from its method and URL (upstream
//! `endpoints/request/requestinfo.go`), and deciding whether it is long-running
//! (`server/filters/longrunning.go`).

use std::collections::HashSet;
use std::sync::LazyLock;

use http::{Method, Uri};
use regex::Regex;

use super::RequestInfo;

/// Why a request's info could not be resolved. The request-info filter answers 500.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestInfoError {
    /// A special verb (`watch`, `proxy`) with nothing after it, e.g. `/api/v1/watch`.
    #[error("unable to determine kind and namespace from url, {0}")]
    NoKind(String),
}

/// Path segments that are verbs rather than resources (`/api/v1/watch/pods`).
const SPECIAL_VERBS: [&str; 2] = ["proxy", "watch"];
/// Special verbs whose remaining path is not `name/subresource`.
const SPECIAL_VERBS_NO_SUBRESOURCES: [&str; 1] = ["proxy"];
/// Subresources of a namespace, as opposed to resources inside it.
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

/// Resolves [`RequestInfo`] (upstream `RequestInfoFactory`).
#[derive(Debug, Clone)]
pub struct RequestInfoResolver {
    /// Path prefixes of API requests, without slashes (`api`, `apis`).
    pub api_prefixes: HashSet<String>,
    /// Prefixes not followed by a group (`api`).
    pub groupless_api_prefixes: HashSet<String>,
}

impl Default for RequestInfoResolver {
    /// The standard prefixes `{api, apis}`, groupless `{api}`.
    fn default() -> Self {
        RequestInfoResolver {
            api_prefixes: ["api", "apis"].iter().map(|s| s.to_string()).collect(),
            groupless_api_prefixes: std::iter::once("api".to_string()).collect(),
        }
    }
}

impl RequestInfoResolver {
    /// Parses `method` and `uri`. On error the partial info is lost; the filter answers 500.
    pub fn resolve(&self, method: &Method, uri: &Uri) -> Result<RequestInfo, RequestInfoError> {
        let path = decode_path(uri.path());
        let mut info = RequestInfo {
            is_resource_request: false,
            path: path.clone(),
            verb: method.as_str().to_lowercase(),
            ..Default::default()
        };

        let trimmed = path.trim_matches('/');
        let mut parts: Vec<String> = if trimmed.is_empty() {
            Vec::new()
        } else {
            trimmed.split('/').map(str::to_string).collect()
        };
        if parts.len() < 3 || !self.api_prefixes.contains(&parts[0]) {
            return Ok(info);
        }
        info.api_prefix = parts.remove(0);
        if !self.groupless_api_prefixes.contains(&info.api_prefix) {
            // Grouped prefixes need `/apis/<group>/<version>/<something>`.
            if parts.len() < 3 {
                return Ok(info);
            }
            info.api_group = parts.remove(0);
        }
        info.is_resource_request = true;
        info.api_version = parts.remove(0);

        let mut watch_via_path = false;
        if SPECIAL_VERBS.contains(&parts[0].as_str()) {
            if parts.len() < 2 {
                let url = uri
                    .path_and_query()
                    .map(|p| p.as_str().to_string())
                    .unwrap_or_default();
                return Err(RequestInfoError::NoKind(url));
            }
            info.verb = parts.remove(0);
            watch_via_path = info.verb == "watch";
        } else {
            info.verb = match *method {
                Method::POST => "create",
                Method::GET | Method::HEAD => "get",
                Method::PUT => "update",
                Method::PATCH => "patch",
                Method::DELETE => "delete",
                _ => "",
            }
            .to_string();
        }

        if parts[0] == "namespaces" {
            if parts.len() > 1 {
                info.namespace = parts[1].clone();
                if parts.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&parts[2].as_str()) {
                    parts.drain(..2);
                }
            }
        } else {
            info.namespace.clear();
        }

        if parts.len() >= 3 && !SPECIAL_VERBS_NO_SUBRESOURCES.contains(&info.verb.as_str()) {
            info.subresource = parts[2].clone();
        }
        if parts.len() >= 2 {
            info.name = parts[1].clone();
        }
        if !parts.is_empty() {
            info.resource = parts[0].clone();
        }
        info.parts = parts;

        let query = parse_query(uri.query().unwrap_or(""));
        if info.name.is_empty() && info.verb == "get" {
            let options = ListOptionsView::decode(&query);
            info.verb = if options.watch { "watch" } else { "list" }.to_string();
            if let Some(name) = options.field_name
                && is_valid_path_segment_name(&name)
            {
                info.name = name;
            }
        }
        if info.name.is_empty() && info.verb == "delete" {
            info.verb = "deletecollection".to_string();
        }

        // Selectors are only meaningful for collection verbs, and a watch through the legacy
        // `/watch/` prefix keeps none (upstream does not support selectors there for authz).
        if matches!(info.verb.as_str(), "list" | "watch" | "deletecollection") && !watch_via_path {
            if let Some(v) = first(&query, "labelSelector") {
                info.label_selector = v.to_string();
            }
            if let Some(v) = first(&query, "fieldSelector") {
                info.field_selector = v.to_string();
            }
        }
        Ok(info)
    }
}

/// The list-option fields the resolver needs, decoded like upstream's parameter codec: if any
/// option fails to decode, all are discarded except `watch`.
struct ListOptionsView {
    watch: bool,
    field_name: Option<String>,
}

impl ListOptionsView {
    fn decode(query: &[(String, String)]) -> Self {
        let watch = first(query, "watch").is_some_and(go_bool);
        let decoded: Result<Option<String>, ()> = (|| {
            for key in ["timeoutSeconds", "limit"] {
                if let Some(v) = first(query, key)
                    && !v.is_empty()
                    && v.parse::<i64>().is_err()
                {
                    return Err(());
                }
            }
            if let Some(v) = first(query, "labelSelector")
                && !is_valid_label_selector(v)
            {
                return Err(());
            }
            match first(query, "fieldSelector") {
                Some(v) => field_selector_exact_match(v, "metadata.name"),
                None => Ok(None),
            }
        })();
        ListOptionsView {
            watch,
            field_name: decoded.unwrap_or(None),
        }
    }
}

/// Go's `Convert_Slice_string_To_bool`: anything but `false`/`0` is true.
fn go_bool(value: &str) -> bool {
    !matches!(value.to_lowercase().as_str(), "false" | "0")
}

fn first<'a>(query: &'a [(String, String)], key: &str) -> Option<&'a str> {
    query
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// Go's `url.ParseQuery`, keeping order; malformed pairs (bad escapes, semicolons) are skipped.
pub fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty() && !pair.contains(';'))
        .filter_map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            Some((query_unescape(k)?, query_unescape(v)?))
        })
        .collect()
}

fn query_unescape(s: &str) -> Option<String> {
    percent_decode(s, true)
}

/// Percent-decodes `s` (and `+` as space for queries); `None` on a malformed escape.
fn percent_decode(s: &str, plus_is_space: bool) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes.get(i + 1..i + 3)?;
                let hex = std::str::from_utf8(hex).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// The decoded URL path, as Go's `URL.Path` (the raw path if it cannot be decoded).
fn decode_path(raw: &str) -> String {
    percent_decode(raw, false).unwrap_or_else(|| raw.to_string())
}

/// `path.IsValidPathSegmentName`: not `.`/`..`, no `/` or `%`.
fn is_valid_path_segment_name(name: &str) -> bool {
    name != "." && name != ".." && !name.contains('/') && !name.contains('%')
}

/// A malformed field selector.
#[derive(Debug)]
struct InvalidSelector;

/// Parses a field selector like `fields.ParseSelector` and returns the value it requires for
/// `field` with `=`/`==`, if any.
fn field_selector_exact_match(selector: &str, field: &str) -> Result<Option<String>, ()> {
    let mut terms = split_unescaped(selector, ',');
    terms.sort();
    let mut found = None;
    for term in terms.iter().filter(|t| !t.is_empty()) {
        let (lhs, op, rhs) = split_field_term(term).ok_or(())?;
        let value = unescape_field_value(rhs).map_err(|_| ())?;
        if op != "!=" && lhs == field && found.is_none() {
            found = Some(value);
        }
    }
    Ok(found)
}

/// Splits on `sep` where not escaped by a backslash (escapes are kept).
fn split_unescaped(s: &str, sep: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut escaped = false;
    for c in s.chars() {
        if escaped {
            current.push(c);
            escaped = false;
        } else if c == '\\' {
            current.push(c);
            escaped = true;
        } else if c == sep {
            out.push(std::mem::take(&mut current));
        } else {
            current.push(c);
        }
    }
    out.push(current);
    out
}

/// Splits a term at the first operator (`!=`, `==`, `=`), skipping escaped characters.
fn split_field_term(term: &str) -> Option<(&str, &str, &str)> {
    let bytes = term.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            i += 2;
            continue;
        }
        for op in ["!=", "==", "="] {
            if term[i..].starts_with(op) {
                return Some((&term[..i], op, &term[i + op.len()..]));
            }
        }
        i += 1;
    }
    None
}

fn unescape_field_value(value: &str) -> Result<String, InvalidSelector> {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(e @ ('\\' | ',' | '=')) => out.push(e),
                _ => return Err(InvalidSelector),
            }
        } else if c == ',' || c == '=' {
            return Err(InvalidSelector);
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

const LABEL_KEY: &str =
    r"(?:[A-Za-z0-9](?:[-A-Za-z0-9.]*[A-Za-z0-9])?/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?";
const LABEL_VALUE: &str = r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?";

static LABEL_REQUIREMENT: LazyLock<Option<Regex>> = LazyLock::new(|| {
    let k = LABEL_KEY;
    let v = LABEL_VALUE;
    Regex::new(&format!(
        r"^\s*(?:!\s*{k}|{k}|{k}\s*(?:==|!=|=)\s*{v}|{k}\s+(?:in|notin)\s*\(\s*{v}(?:\s*,\s*{v})*\s*\)|{k}\s*[<>]\s*-?[0-9]+)\s*$"
    ))
    .ok()
});

/// A structural check of a label selector (requirements separated by commas outside
/// parentheses), close enough to `labels.Parse` to decide whether list options decode.
fn is_valid_label_selector(selector: &str) -> bool {
    if selector.trim().is_empty() {
        return true;
    }
    let Some(re) = LABEL_REQUIREMENT.as_ref() else {
        return true;
    };
    let mut depth = 0usize;
    let mut start = 0;
    let mut requirements = Vec::new();
    for (i, c) in selector.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                requirements.push(&selector[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    requirements.push(&selector[start..]);
    requirements.iter().all(|r| re.is_match(r))
}

/// Decides whether a request is long-running (upstream `BasicLongRunningRequestCheck`):
/// long-running requests are not subject to the request timeout, max-in-flight or the
/// non-long-running wait group.
#[derive(Debug, Clone, Default)]
pub struct LongRunningRequestCheck {
    verbs: HashSet<String>,
    subresources: HashSet<String>,
}

impl LongRunningRequestCheck {
    /// Long-running if the verb is in `verbs`, or a resource request's subresource is in
    /// `subresources` (the generic default is verbs `{watch}`; kube-apiserver adds `proxy` and
    /// subresources `attach, exec, proxy, log, portforward`).
    pub fn basic(verbs: &[&str], subresources: &[&str]) -> Self {
        LongRunningRequestCheck {
            verbs: verbs.iter().map(|s| s.to_string()).collect(),
            subresources: subresources.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// Whether the request described by `info` is long-running. Non-resource requests under
    /// `/debug/pprof/` (profiles that run for a given duration) are too.
    pub fn is_long_running(&self, info: &RequestInfo) -> bool {
        if !info.is_resource_request {
            return info.path.starts_with("/debug/pprof/");
        }
        self.verbs.contains(&info.verb) || self.subresources.contains(&info.subresource)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(method: &str, url: &str) -> Result<RequestInfo, RequestInfoError> {
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        let uri: Uri = url.parse().unwrap();
        RequestInfoResolver::default().resolve(&method, &uri)
    }

    #[test]
    #[allow(clippy::type_complexity)] // a test table
    fn get_api_request_info() {
        #[rustfmt::skip]
        let cases: &[(&str, &str, &str, &str, &str, &str, &str, &str, &str, &str, &str)] = &[
            // method, url, verb, prefix, group, version, namespace, resource, subresource, name, parts
            ("GET", "/api/v1/namespaces", "list", "api", "", "v1", "", "namespaces", "", "", "namespaces"),
            ("GET", "/api/v1/namespaces/other", "get", "api", "", "v1", "other", "namespaces", "", "other", "namespaces/other"),
            ("GET", "/api/v1/namespaces/other/pods", "list", "api", "", "v1", "other", "pods", "", "", "pods"),
            ("GET", "/api/v1/namespaces/other/pods/foo", "get", "api", "", "v1", "other", "pods", "", "foo", "pods/foo"),
            ("HEAD", "/api/v1/namespaces/other/pods/foo", "get", "api", "", "v1", "other", "pods", "", "foo", "pods/foo"),
            ("GET", "/api/v1/pods", "list", "api", "", "v1", "", "pods", "", "", "pods"),
            ("HEAD", "/api/v1/pods", "list", "api", "", "v1", "", "pods", "", "", "pods"),
            ("PATCH", "/api/v1/namespaces/new-namespace", "patch", "api", "", "v1", "new-namespace", "namespaces", "", "new-namespace", "namespaces/new-namespace"),
            // special verbs
            ("GET", "/api/v1/proxy/namespaces/other/pods/foo", "proxy", "api", "", "v1", "other", "pods", "", "foo", "pods/foo"),
            ("GET", "/api/v1/proxy/namespaces/other/pods/foo/subpath/not/a/subresource", "proxy", "api", "", "v1", "other", "pods", "", "foo", "pods/foo/subpath/not/a/subresource"),
            ("GET", "/api/v1/watch/pods", "watch", "api", "", "v1", "", "pods", "", "", "pods"),
            ("GET", "/api/v1/pods?watch=true", "watch", "api", "", "v1", "", "pods", "", "", "pods"),
            ("GET", "/api/v1/pods?watch=false", "list", "api", "", "v1", "", "pods", "", "", "pods"),
            ("GET", "/api/v1/watch/namespaces/other/pods", "watch", "api", "", "v1", "other", "pods", "", "", "pods"),
            ("GET", "/api/v1/namespaces/other/pods?watch=1", "watch", "api", "", "v1", "other", "pods", "", "", "pods"),
            ("GET", "/api/v1/namespaces/other/pods?watch=0", "list", "api", "", "v1", "other", "pods", "", "", "pods"),
            // subresource identification
            ("GET", "/api/v1/namespaces/other/pods/foo/status", "get", "api", "", "v1", "other", "pods", "status", "foo", "pods/foo/status"),
            ("GET", "/api/v1/namespaces/other/pods/foo/proxy/subpath", "get", "api", "", "v1", "other", "pods", "proxy", "foo", "pods/foo/proxy/subpath"),
            ("PUT", "/api/v1/namespaces/other/finalize", "update", "api", "", "v1", "other", "namespaces", "finalize", "other", "namespaces/other/finalize"),
            ("PUT", "/api/v1/namespaces/other/status", "update", "api", "", "v1", "other", "namespaces", "status", "other", "namespaces/other/status"),
            // verb identification
            ("PATCH", "/api/v1/namespaces/other/pods/foo", "patch", "api", "", "v1", "other", "pods", "", "foo", "pods/foo"),
            ("DELETE", "/api/v1/namespaces/other/pods/foo", "delete", "api", "", "v1", "other", "pods", "", "foo", "pods/foo"),
            ("POST", "/api/v1/namespaces/other/pods", "create", "api", "", "v1", "other", "pods", "", "", "pods"),
            // deletecollection verb identification
            ("DELETE", "/api/v1/nodes", "deletecollection", "api", "", "v1", "", "nodes", "", "", "nodes"),
            ("DELETE", "/api/v1/namespaces", "deletecollection", "api", "", "v1", "", "namespaces", "", "", "namespaces"),
            ("DELETE", "/api/v1/namespaces/other/pods", "deletecollection", "api", "", "v1", "other", "pods", "", "", "pods"),
            ("DELETE", "/apis/extensions/v1/namespaces/other/pods", "deletecollection", "apis", "extensions", "v1", "other", "pods", "", "", "pods"),
            // api group and version identification
            ("POST", "/apis/extensions/v1/namespaces/other/pods", "create", "apis", "extensions", "v1", "other", "pods", "", "", "pods"),
            ("POST", "/apis/extensions/v1beta3/namespaces/other/pods", "create", "apis", "extensions", "v1beta3", "other", "pods", "", "", "pods"),
        ];
        for (method, url, verb, prefix, group, version, ns, resource, sub, name, parts) in cases {
            let info = resolve(method, url).unwrap();
            assert!(info.is_resource_request, "{url}");
            assert_eq!(info.verb, *verb, "{method} {url}");
            assert_eq!(info.api_prefix, *prefix, "{url}");
            assert_eq!(info.api_group, *group, "{url}");
            assert_eq!(info.api_version, *version, "{url}");
            assert_eq!(info.namespace, *ns, "{url}");
            assert_eq!(info.resource, *resource, "{url}");
            assert_eq!(info.subresource, *sub, "{url}");
            assert_eq!(info.name, *name, "{url}");
            assert_eq!(info.parts.join("/"), *parts, "{url}");
        }

        for url in [
            "/",
            "/api/version/",
            "/apis/group/version/",
            "/badprefix/version/resource",
            "/apis/version/resource",
        ] {
            let info = resolve("GET", url).unwrap();
            assert!(!info.is_resource_request, "{url}");
            assert_eq!(info.verb, "get");
            assert_eq!(info.path, url);
        }

        let err = resolve("GET", "/api/v1/watch").unwrap_err();
        assert_eq!(
            err.to_string(),
            "unable to determine kind and namespace from url, /api/v1/watch"
        );
    }

    #[test]
    fn get_non_api_request_info() {
        let cases = [
            ("/api/version/resource", true),
            ("/apis/group/version/resource/name/subresource", true),
            ("/api/version/resource/name/subresource", true),
            ("/apis/batch/v1/job", true),
            ("/apis/batch/v1/job/foo", true),
            ("/apis/batch/v1/job/foo/scale", true),
            ("/not-api/version/resource", false),
            ("/apis/extensions/v1beta1", false),
            ("/apis/extensions/v1beta1/", false),
            ("/api/version", false),
            ("/api", false),
            ("/", false),
            ("/healthz", false),
            ("/apis", false),
        ];
        for (url, expected) in cases {
            let info = resolve("GET", url).unwrap();
            assert_eq!(info.is_resource_request, expected, "{url}");
        }
        let info = resolve("POST", "/healthz").unwrap();
        assert_eq!(info.verb, "post");
    }

    #[test]
    fn selector_parsing() {
        // (method, url, verb, name, label selector, field selector)
        #[rustfmt::skip]
        let cases = [
            ("GET", "/apis/group/version/resource", "list", "", "", ""),
            ("GET", "/apis/group/version/resource?fieldSelector=metadata.name=name1", "list", "name1", "", "metadata.name=name1"),
            ("GET", "/apis/group/version/resource?watch=true&fieldSelector=metadata.name=name1", "watch", "name1", "", "metadata.name=name1"),
            ("GET", "/apis/group/version/resource?fieldSelector=metadata.name==name1", "list", "name1", "", "metadata.name==name1"),
            ("GET", "/apis/group/version/resource?fieldSelector=metadata.name!=name1", "list", "", "", "metadata.name!=name1"),
            ("GET", "/apis/group/version/resource?fieldSelector=foo=bar", "list", "", "", "foo=bar"),
            ("GET", "/apis/group/version/resource?fieldSelector=metadata.name=name1,foo", "list", "", "", "metadata.name=name1,foo"),
            ("GET", "/apis/group/version/resource?fieldSelector=metadata.name=name1,foo&watch=true", "watch", "", "", "metadata.name=name1,foo"),
            ("GET", "/apis/group/version/resource?fieldSelector=metadata.name=name1,foo&watch=false", "list", "", "", "metadata.name=name1,foo"),
            ("GET", "/apis/group/version/resource?fieldSelector=metadata.name=a%2Fb", "list", "", "", "metadata.name=a/b"),
            ("GET", "/apis/group/version/resource?labelSelector=app%3Dfoo&fieldSelector=spec.x%3Dy", "list", "", "app=foo", "spec.x=y"),
            ("GET", "/apis/group/version/resource?labelSelector=app+in+(a,b)", "list", "", "app in (a,b)", ""),
            ("GET", "/apis/group/version/resource?labelSelector=a&labelSelector=b", "list", "", "a", ""),
            ("GET", "/apis/group/version/resource?watch=1&labelSelector=a", "watch", "", "a", ""),
            ("DELETE", "/apis/group/version/resource?labelSelector=a&fieldSelector=b=c", "deletecollection", "", "a", "b=c"),
            // the legacy /watch/ prefix keeps no selectors
            ("GET", "/apis/group/version/watch/resource?labelSelector=a&fieldSelector=b=c", "watch", "", "", ""),
            // not a collection verb: no selectors
            ("GET", "/apis/group/version/resource/name?labelSelector=a&fieldSelector=b=c", "get", "name", "", ""),
            ("POST", "/apis/group/version/resource?labelSelector=a&fieldSelector=b=c", "create", "", "", ""),
            ("DELETE", "/apis/group/version/resource/name?labelSelector=a", "delete", "name", "", ""),
            // an undecodable option makes the metadata.name selector ignored
            ("GET", "/apis/group/version/resource?limit=x&fieldSelector=metadata.name=n", "list", "", "", "metadata.name=n"),
            ("GET", "/apis/group/version/resource?labelSelector=%3D%3D&fieldSelector=metadata.name=n", "list", "", "==", "metadata.name=n"),
        ];
        for (method, url, verb, name, labels, fields) in cases {
            let info = resolve(method, url).unwrap();
            assert_eq!(info.verb, verb, "{url}");
            assert_eq!(info.name, name, "{url}");
            assert_eq!(info.label_selector, labels, "{url}");
            assert_eq!(info.field_selector, fields, "{url}");
        }
    }

    #[test]
    fn long_running_check() {
        let check = LongRunningRequestCheck::basic(
            &["watch", "proxy"],
            &["attach", "exec", "proxy", "log", "portforward"],
        );
        let lr = |m, u| check.is_long_running(&resolve(m, u).unwrap());
        assert!(lr("GET", "/api/v1/pods?watch=true"));
        assert!(lr("GET", "/api/v1/namespaces/a/pods/b/exec"));
        assert!(lr("GET", "/api/v1/namespaces/a/pods/b/log"));
        assert!(!lr("GET", "/api/v1/namespaces/a/pods/b"));
        assert!(lr("GET", "/debug/pprof/profile"));
        assert!(!lr("GET", "/debug/pprof"));
        assert!(!lr("GET", "/healthz"));
    }
}
