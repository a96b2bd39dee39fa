//! Prometheus metrics of the server: the process-wide registry served at `/metrics`, the
//! health-check SLI registry served at `/metrics/slis`, and the request metrics upstream keeps in
//! `pkg/endpoints/metrics`.
//!
//! Metric names, labels, help texts (with component-base's `[STABLE]`/`[ALPHA]` prefix) and
//! histogram buckets follow upstream so dashboards and alerts written for kube-apiserver work.
//! One addition of ours: `apiserver_graceful_termination_event_timestamp_seconds{name}`, a gauge
//! set to the Unix time at which each lifecycle signal (`ShutdownInitiated`, …) fired.

use std::io::Write;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::request::Parts;
use http::{HeaderValue, Method, StatusCode, header};
use prometheus::{
    CounterVec, Encoder, GaugeVec, HistogramOpts, HistogramVec, IntCounter, Opts, Registry,
    TextEncoder,
};

use crate::body::{Request, Response, TEXT_PLAIN_UTF8, full, go_http_error, with_content_type};
use crate::filters::{HttpService, service_fn};
use crate::request::RequestInfo;

/// The `component` label of request metrics.
pub const APISERVER_COMPONENT: &str = "apiserver";
/// The verb reported for HTTP methods upstream does not know.
pub const OTHER_REQUEST_METHOD: &str = "other";
/// The content type of the text exposition format.
pub const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Upstream's `apiserver_request_duration_seconds` buckets.
const REQUEST_DURATION_BUCKETS: &[f64] = &[
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

/// Verbs reported as they are; anything else becomes [`OTHER_REQUEST_METHOD`].
const VALID_REQUEST_VERBS: &[&str] = &[
    "APPLY",
    "CONNECT",
    "CREATE",
    "DELETE",
    "DELETECOLLECTION",
    "GET",
    "LIST",
    "PATCH",
    "POST",
    "PROXY",
    "PUT",
    "UPDATE",
    "WATCH",
    "WATCHLIST",
];

/// Subresources whose requests are reported as `CONNECT`.
const CONNECT_SUBRESOURCES: &[&str] = &["log", "exec", "proxy", "attach", "portforward"];

const REQUEST_LABELS: &[&str] = &[
    "verb",
    "dry_run",
    "group",
    "version",
    "resource",
    "subresource",
    "scope",
    "component",
];

/// The kind of request counted by the max-in-flight limiter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestKind {
    /// Non-mutating requests (`readOnly`).
    ReadOnly,
    /// Mutating requests (`mutating`).
    Mutating,
}

impl RequestKind {
    /// The `request_kind` label value.
    pub fn as_str(self) -> &'static str {
        match self {
            RequestKind::ReadOnly => "readOnly",
            RequestKind::Mutating => "mutating",
        }
    }
}

/// The labels a request is recorded under (everything but `code`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestMetricLabels {
    /// Normalised verb: `GET`, `LIST`, `WATCH`, `POST`, `PUT`, `PATCH`, `APPLY`, `DELETE`,
    /// `CONNECT`, or `other`.
    pub verb: String,
    /// `""`, `All`, or `invalid`.
    pub dry_run: String,
    /// API group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Resource.
    pub resource: String,
    /// Subresource; the path for non-resource requests.
    pub subresource: String,
    /// `resource`, `namespace`, `cluster`, or `""` for non-resource requests.
    pub scope: String,
    /// Always [`APISERVER_COMPONENT`] here.
    pub component: String,
}

impl RequestMetricLabels {
    /// Labels from the full request: HTTP method, `?watch`, `?dryRun` and the apply content type
    /// refine what the request info alone says.
    pub fn from_request(info: &RequestInfo, parts: &Parts) -> Self {
        let content_type = parts
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok());
        Self::build(info, parts.method.as_str(), parts.uri.query(), content_type)
    }

    /// Labels from the request info alone; the HTTP method is inferred from the verb.
    pub fn from_info(info: &RequestInfo) -> Self {
        let method = if info.is_resource_request {
            match info.verb.as_str() {
                "get" | "list" | "watch" => "GET",
                "create" => "POST",
                "update" => "PUT",
                "patch" => "PATCH",
                "delete" | "deletecollection" => "DELETE",
                _ => "",
            }
            .to_owned()
        } else {
            info.verb.to_ascii_uppercase()
        };
        let method = if method.is_empty() {
            info.verb.to_ascii_uppercase()
        } else {
            method
        };
        Self::build(info, &method, None, None)
    }

    /// Labels of a non-resource handler instrumented by path (upstream `InstrumentHandlerFunc`
    /// as the health endpoints use it: subresource = path, empty scope and `component`).
    pub fn non_resource(method: &str, path: &str, query: Option<&str>, component: &str) -> Self {
        let info = RequestInfo {
            path: path.to_owned(),
            verb: method.to_ascii_lowercase(),
            ..RequestInfo::default()
        };
        let mut labels = Self::build(&info, method, query, None);
        component.clone_into(&mut labels.component);
        labels
    }

    fn build(
        info: &RequestInfo,
        method: &str,
        query: Option<&str>,
        content_type: Option<&str>,
    ) -> Self {
        let scope = clean_scope(info);
        let verb = report_verb(method, scope, info, query, content_type);
        let (group, version, resource, subresource) = if info.is_resource_request {
            (
                info.api_group.clone(),
                info.api_version.clone(),
                info.resource.clone(),
                info.subresource.clone(),
            )
        } else {
            (
                String::new(),
                String::new(),
                String::new(),
                info.path.clone(),
            )
        };
        RequestMetricLabels {
            verb,
            dry_run: clean_dry_run(query),
            group,
            version,
            resource,
            subresource,
            scope: scope.to_owned(),
            component: APISERVER_COMPONENT.to_owned(),
        }
    }

    fn values(&self) -> [&str; 8] {
        [
            &self.verb,
            &self.dry_run,
            &self.group,
            &self.version,
            &self.resource,
            &self.subresource,
            &self.scope,
            &self.component,
        ]
    }
}

/// Upstream `CleanScope`: a named object or a create is `resource`, then `namespace`, then
/// `cluster`; non-resource requests have no scope.
pub fn clean_scope(info: &RequestInfo) -> &'static str {
    if !info.name.is_empty() || info.verb == "create" {
        "resource"
    } else if !info.namespace.is_empty() {
        "namespace"
    } else if info.is_resource_request {
        "cluster"
    } else {
        ""
    }
}

/// Upstream `CanonicalVerb`: a GET (or HEAD) of a collection is a LIST.
fn canonical_verb(method: &str, scope: &str) -> String {
    let method = method.to_ascii_uppercase();
    match method.as_str() {
        "GET" | "HEAD" if scope != "resource" && !scope.is_empty() => "LIST".to_owned(),
        _ => method,
    }
}

/// Whether `?watch` asks for a watch (the first value, unless `0` or `false`), for GET/LIST.
fn is_watch_query(method: &str, query: Option<&str>) -> bool {
    let method = method.to_ascii_uppercase();
    if method != "GET" && method != "LIST" {
        return false;
    }
    query_values(query, "watch")
        .first()
        .is_some_and(|v| !matches!(v.to_ascii_lowercase().as_str(), "0" | "false"))
}

/// Upstream `cleanVerb(CanonicalVerb(…))`: WATCH from `?watch` or `/watch/` paths, APPLY for
/// apply patches, CONNECT for connect subresources, and `other` for unknown methods.
fn report_verb(
    method: &str,
    scope: &str,
    info: &RequestInfo,
    query: Option<&str>,
    content_type: Option<&str>,
) -> String {
    if info.verb == "watch" || is_watch_query(method, query) {
        return "WATCH".to_owned();
    }
    let mut verb = canonical_verb(method, scope);
    if verb == "WATCHLIST" {
        verb = "WATCH".to_owned();
    }
    if verb == "PATCH" && content_type == Some("application/apply-patch+yaml") {
        verb = "APPLY".to_owned();
    }
    if info.is_resource_request && CONNECT_SUBRESOURCES.contains(&info.subresource.as_str()) {
        verb = "CONNECT".to_owned();
    }
    if VALID_REQUEST_VERBS.contains(&verb.as_str()) {
        verb
    } else {
        OTHER_REQUEST_METHOD.to_owned()
    }
}

/// Upstream `cleanDryRun`: empty without `dryRun`, `invalid` unless every value is `All`, else
/// the sorted distinct values joined by `,`.
fn clean_dry_run(query: Option<&str>) -> String {
    if !query.is_some_and(|q| q.contains("dryRun")) {
        return String::new();
    }
    let mut values = query_values(query, "dryRun");
    if values.is_empty() {
        return String::new();
    }
    if values.iter().any(|v| v != "All") {
        return "invalid".to_owned();
    }
    values.sort();
    values.dedup();
    values.join(",")
}

fn query_values(query: Option<&str>, key: &str) -> Vec<String> {
    query
        .unwrap_or_default()
        .split('&')
        .filter(|kv| !kv.is_empty() && !kv.contains(';'))
        .filter_map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (k == key).then(|| v.to_owned())
        })
        .collect()
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The metrics of one server process (a single process-wide instance backs the free functions;
/// tests build their own).
pub struct ApiserverMetrics {
    registry: Registry,
    sli_registry: Registry,
    request_total: CounterVec,
    request_duration: HistogramVec,
    inflight: GaugeVec,
    termination_events: GaugeVec,
    tls_handshake_errors: IntCounter,
    healthcheck: GaugeVec,
    healthchecks_total: CounterVec,
}

impl std::fmt::Debug for ApiserverMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiserverMetrics").finish_non_exhaustive()
    }
}

/// Errors building the metrics (only on programming mistakes such as duplicate names).
pub type MetricsError = prometheus::Error;

impl ApiserverMetrics {
    /// Creates and registers all metrics in two fresh registries.
    pub fn new() -> Result<Self, MetricsError> {
        let registry = Registry::new();
        let sli_registry = Registry::new();
        let request_total = CounterVec::new(
            Opts::new(
                "apiserver_request_total",
                "[STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
            ),
            &[REQUEST_LABELS, &["code"]].concat(),
        )?;
        let request_duration = HistogramVec::new(
            HistogramOpts::new(
                "apiserver_request_duration_seconds",
                "[STABLE] Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
            )
            .buckets(REQUEST_DURATION_BUCKETS.to_vec()),
            REQUEST_LABELS,
        )?;
        let inflight = GaugeVec::new(
            Opts::new(
                "apiserver_current_inflight_requests",
                "[STABLE] Maximal number of currently used inflight request limit of this apiserver per request kind in last second.",
            ),
            &["request_kind"],
        )?;
        let termination_events = GaugeVec::new(
            Opts::new(
                "apiserver_graceful_termination_event_timestamp_seconds",
                "[ALPHA] Unix time at which each graceful-termination lifecycle signal fired.",
            ),
            &["name"],
        )?;
        let tls_handshake_errors = IntCounter::with_opts(Opts::new(
            "apiserver_tls_handshake_errors_total",
            "[ALPHA] Number of requests dropped with 'TLS handshake error from' error",
        ))?;
        let healthcheck = GaugeVec::new(
            Opts::new(
                "kubernetes_healthcheck",
                "[STABLE] This metric records the result of a single healthcheck.",
            ),
            &["name", "type"],
        )?;
        let healthchecks_total = CounterVec::new(
            Opts::new(
                "kubernetes_healthchecks_total",
                "[STABLE] This metric records the results of all healthcheck.",
            ),
            &["name", "status", "type"],
        )?;
        registry.register(Box::new(request_total.clone()))?;
        registry.register(Box::new(request_duration.clone()))?;
        registry.register(Box::new(inflight.clone()))?;
        registry.register(Box::new(termination_events.clone()))?;
        registry.register(Box::new(tls_handshake_errors.clone()))?;
        crate::storage::value::metrics::register(&registry)?;
        crate::filters::authn_metrics::register(&registry)?;
        crate::admission::metrics::register(&registry)?;
        crate::server::encryptionconfig::metrics::register(&registry)?;
        crate::server::authconfig_metrics::register(&registry)?;
        crate::authn::jwt::metrics::register(&registry)?;
        crate::authn::tokencache::register(&registry)?;
        crate::audit::metrics::register(&registry)?;
        sli_registry.register(Box::new(healthcheck.clone()))?;
        sli_registry.register(Box::new(healthchecks_total.clone()))?;
        Ok(ApiserverMetrics {
            registry,
            sli_registry,
            request_total,
            request_duration,
            inflight,
            termination_events,
            tls_handshake_errors,
            healthcheck,
            healthchecks_total,
        })
    }

    /// The `/metrics` registry (other modules may register their own collectors here).
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The `/metrics/slis` registry.
    pub fn sli_registry(&self) -> &Registry {
        &self.sli_registry
    }

    /// Records one finished request.
    pub fn observe(&self, labels: &RequestMetricLabels, code: u16, elapsed: Duration) {
        let values = labels.values();
        let code = code.to_string();
        let mut with_code = values.to_vec();
        with_code.push(&code);
        self.request_total.with_label_values(&with_code).inc();
        self.request_duration
            .with_label_values(&values)
            .observe(elapsed.as_secs_f64());
    }

    /// Sets the in-flight gauge of `kind`.
    pub fn set_inflight(&self, kind: RequestKind, n: usize) {
        self.inflight
            .with_label_values(&[kind.as_str()])
            .set(n as f64);
    }

    /// Counts a failed TLS handshake.
    pub fn tls_handshake_error(&self) {
        self.tls_handshake_errors.inc();
    }

    /// Stamps the time a lifecycle signal fired.
    pub fn graceful_termination_event(&self, name: &str) {
        self.termination_events
            .with_label_values(&[name])
            .set(unix_now());
    }

    /// Records one health check result of endpoint `kind` (`healthz`, `livez`, `readyz`).
    pub fn observe_healthcheck(&self, name: &str, kind: &str, healthy: bool) {
        let status = if healthy { "success" } else { "error" };
        self.healthcheck
            .with_label_values(&[name, kind])
            .set(if healthy { 1.0 } else { 0.0 });
        self.healthchecks_total
            .with_label_values(&[name, status, kind])
            .inc();
    }

    /// Resets every resettable metric of `/metrics` (what `DELETE /metrics` does).
    pub fn reset(&self) {
        self.request_total.reset();
        self.request_duration.reset();
        self.inflight.reset();
        self.termination_events.reset();
        self.tls_handshake_errors.reset();
    }

    /// Resets the SLI metrics.
    pub fn reset_slis(&self) {
        self.healthcheck.reset();
        self.healthchecks_total.reset();
    }
}

static METRICS: LazyLock<Option<Arc<ApiserverMetrics>>> =
    LazyLock::new(|| match ApiserverMetrics::new() {
        Ok(metrics) => Some(Arc::new(metrics)),
        Err(err) => {
            tracing::error!(%err, "cannot create the apiserver metrics");
            None
        }
    });

/// The process-wide metrics (`None` only if registration failed, which is logged).
pub fn global() -> Option<&'static Arc<ApiserverMetrics>> {
    METRICS.as_ref()
}

/// Records a finished request from its request info (method inferred from the verb).
pub fn observe_request(info: &RequestInfo, code: u16, elapsed: Duration) {
    if let Some(m) = global() {
        m.observe(&RequestMetricLabels::from_info(info), code, elapsed);
    }
}

/// Records a finished request under precomputed labels (see
/// [`RequestMetricLabels::from_request`]).
pub fn observe_request_labels(labels: &RequestMetricLabels, code: u16, elapsed: Duration) {
    if let Some(m) = global() {
        m.observe(labels, code, elapsed);
    }
}

/// Sets the in-flight gauge of `kind`.
pub fn set_inflight(kind: RequestKind, n: usize) {
    if let Some(m) = global() {
        m.set_inflight(kind, n);
    }
}

/// Counts a failed TLS handshake.
pub fn tls_handshake_error() {
    if let Some(m) = global() {
        m.tls_handshake_error();
    }
}

/// Records a graceful-termination lifecycle event (sets its timestamp gauge).
pub fn graceful_termination_event(name: &'static str) {
    if let Some(m) = global() {
        m.graceful_termination_event(name);
    }
}

/// Records one health check result (the `kubernetes_healthcheck*` SLI metrics).
pub fn observe_healthcheck(name: &str, kind: &str, healthy: bool) {
    if let Some(m) = global() {
        m.observe_healthcheck(name, kind, healthy);
    }
}

/// `/metrics` for the process-wide registry; with `enable_reset` (profiling on) `DELETE`
/// resets the metrics.
pub fn metrics_handler(enable_reset: bool) -> HttpService {
    match global() {
        Some(m) => handler_for(m.clone(), enable_reset, false),
        None => unavailable_handler(),
    }
}

/// `/metrics/slis` for the process-wide SLI registry.
pub fn slis_handler(enable_reset: bool) -> HttpService {
    match global() {
        Some(m) => handler_for(m.clone(), enable_reset, true),
        None => unavailable_handler(),
    }
}

fn unavailable_handler() -> HttpService {
    service_fn(|_req: Request| async {
        go_http_error(StatusCode::INTERNAL_SERVER_ERROR, "metrics are unavailable")
    })
}

/// A handler serving `metrics` (its SLI registry when `slis`).
pub fn handler_for(metrics: Arc<ApiserverMetrics>, enable_reset: bool, slis: bool) -> HttpService {
    service_fn(move |req: Request| {
        let metrics = metrics.clone();
        async move {
            if enable_reset && req.method() == Method::DELETE {
                if slis {
                    metrics.reset_slis();
                } else {
                    metrics.reset();
                }
                return with_content_type(StatusCode::OK, TEXT_PLAIN_UTF8, "metrics reset\n");
            }
            let registry = if slis {
                metrics.sli_registry()
            } else {
                metrics.registry()
            };
            let gzip = accepts_gzip(&req);
            render(registry, gzip)
        }
    })
}

fn accepts_gzip(req: &Request) -> bool {
    req.headers()
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|enc| enc.split(';').next().unwrap_or_default().trim() == "gzip")
}

fn render(registry: &Registry, gzip: bool) -> Response {
    let mut text = Vec::new();
    if let Err(err) = TextEncoder::new().encode(&registry.gather(), &mut text) {
        return go_http_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("error encoding and sending metric family: {err}"),
        );
    }
    let mut response = with_content_type(StatusCode::OK, METRICS_CONTENT_TYPE, Vec::new());
    if gzip {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        match encoder.write_all(&text).and_then(|()| encoder.finish()) {
            Ok(compressed) => {
                *response.body_mut() = full(compressed);
                response
                    .headers_mut()
                    .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
                return response;
            }
            Err(err) => tracing::warn!(%err, "cannot gzip metrics, sending them uncompressed"),
        }
    }
    *response.body_mut() = full(text);
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::empty;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    fn info(verb: &str, ns: &str, name: &str, sub: &str) -> RequestInfo {
        RequestInfo {
            is_resource_request: true,
            path: "/api/v1/pods".into(),
            verb: verb.into(),
            api_prefix: "api".into(),
            api_version: "v1".into(),
            namespace: ns.into(),
            resource: "pods".into(),
            subresource: sub.into(),
            name: name.into(),
            ..Default::default()
        }
    }

    fn labels(
        info: &RequestInfo,
        method: &str,
        uri: &str,
        ct: Option<&str>,
    ) -> RequestMetricLabels {
        let mut b = http::Request::builder().method(method).uri(uri);
        if let Some(ct) = ct {
            b = b.header("content-type", ct);
        }
        let (parts, ()) = b.body(()).unwrap().into_parts();
        RequestMetricLabels::from_request(info, &parts)
    }

    #[test]
    fn scope() {
        assert_eq!(clean_scope(&info("get", "ns", "p", "")), "resource");
        assert_eq!(clean_scope(&info("create", "ns", "", "")), "resource");
        assert_eq!(clean_scope(&info("list", "ns", "", "")), "namespace");
        assert_eq!(clean_scope(&info("list", "", "", "")), "cluster");
        let non = RequestInfo {
            verb: "get".into(),
            path: "/healthz".into(),
            ..Default::default()
        };
        assert_eq!(clean_scope(&non), "");
    }

    #[test]
    fn verbs() {
        let cases = [
            (info("get", "ns", "p", ""), "GET", "/x", None, "GET"),
            (info("list", "ns", "", ""), "GET", "/x", None, "LIST"),
            (
                info("watch", "ns", "", ""),
                "GET",
                "/x?watch=true",
                None,
                "WATCH",
            ),
            (
                info("list", "ns", "", ""),
                "GET",
                "/x?watch=false",
                None,
                "LIST",
            ),
            (
                info("list", "ns", "", ""),
                "GET",
                "/x?watch=0",
                None,
                "LIST",
            ),
            (
                info("watch", "ns", "", ""),
                "GET",
                "/api/v1/watch/x",
                None,
                "WATCH",
            ),
            (info("create", "ns", "", ""), "POST", "/x", None, "POST"),
            (info("update", "ns", "p", ""), "PUT", "/x", None, "PUT"),
            (
                info("patch", "ns", "p", ""),
                "PATCH",
                "/x",
                Some("application/merge-patch+json"),
                "PATCH",
            ),
            (
                info("patch", "ns", "p", ""),
                "PATCH",
                "/x",
                Some("application/apply-patch+yaml"),
                "APPLY",
            ),
            (
                info("deletecollection", "ns", "", ""),
                "DELETE",
                "/x",
                None,
                "DELETE",
            ),
            (info("get", "ns", "p", "exec"), "GET", "/x", None, "CONNECT"),
            (info("get", "ns", "p", "status"), "GET", "/x", None, "GET"),
            (info("get", "ns", "p", ""), "OPTIONS", "/x", None, "other"),
        ];
        for (i, method, uri, ct, want) in cases {
            assert_eq!(
                labels(&i, method, uri, ct).verb,
                want,
                "{method} {uri} {i:?}"
            );
        }
    }

    #[test]
    fn dry_run_and_non_resource() {
        let i = info("create", "ns", "", "");
        assert_eq!(labels(&i, "POST", "/x?dryRun=All", None).dry_run, "All");
        assert_eq!(
            labels(&i, "POST", "/x?dryRun=All&dryRun=All", None).dry_run,
            "All"
        );
        assert_eq!(
            labels(&i, "POST", "/x?dryRun=bogus", None).dry_run,
            "invalid"
        );
        assert_eq!(labels(&i, "POST", "/x", None).dry_run, "");
        let non = RequestInfo {
            verb: "get".into(),
            path: "/healthz".into(),
            ..Default::default()
        };
        let l = RequestMetricLabels::from_info(&non);
        assert_eq!(
            (
                l.verb.as_str(),
                l.subresource.as_str(),
                l.scope.as_str(),
                l.component.as_str()
            ),
            ("GET", "/healthz", "", "apiserver")
        );
        assert_eq!(
            RequestMetricLabels::from_info(&info("list", "", "", "")).verb,
            "LIST"
        );
        assert_eq!(
            RequestMetricLabels::from_info(&info("create", "ns", "", "")).verb,
            "POST"
        );
    }

    async fn scrape(svc: HttpService, method: Method) -> (StatusCode, String, String) {
        let req = http::Request::builder()
            .method(method)
            .uri("/metrics")
            .body(empty())
            .unwrap();
        let resp = svc.oneshot(req).await.unwrap();
        let status = resp.status();
        let ct = resp.headers()["content-type"].to_str().unwrap().to_owned();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, ct, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn handler_serves_and_resets() {
        let m = Arc::new(ApiserverMetrics::new().unwrap());
        m.observe(
            &RequestMetricLabels::from_info(&info("get", "ns", "p", "")),
            200,
            Duration::from_millis(30),
        );
        m.set_inflight(RequestKind::Mutating, 3);
        m.tls_handshake_error();
        m.graceful_termination_event("ShutdownInitiated");
        let (status, ct, text) = scrape(handler_for(m.clone(), true, false), Method::GET).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(ct, "text/plain; version=0.0.4; charset=utf-8");
        assert!(text.contains("apiserver_request_total{code=\"200\",component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"pods\",scope=\"resource\",subresource=\"\",verb=\"GET\",version=\"v1\"} 1\n"), "{text}");
        assert!(text.contains("apiserver_request_duration_seconds_bucket{component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"pods\",scope=\"resource\",subresource=\"\",verb=\"GET\",version=\"v1\",le=\"0.05\"} 1\n"), "{text}");
        assert!(
            text.contains("apiserver_current_inflight_requests{request_kind=\"mutating\"} 3\n")
        );
        assert!(text.contains("apiserver_tls_handshake_errors_total 1\n"));
        assert!(text.contains(
            "apiserver_graceful_termination_event_timestamp_seconds{name=\"ShutdownInitiated\"}"
        ));

        // Without reset enabled, DELETE just scrapes.
        let (_, _, again) = scrape(handler_for(m.clone(), false, false), Method::DELETE).await;
        assert!(again.contains("apiserver_request_total{"));

        let (status, _, text) = scrape(handler_for(m.clone(), true, false), Method::DELETE).await;
        assert_eq!((status, text.as_str()), (StatusCode::OK, "metrics reset\n"));
        let (_, _, text) = scrape(handler_for(m.clone(), true, false), Method::GET).await;
        assert!(!text.contains("apiserver_request_total{"), "{text}");
        assert!(text.contains("apiserver_tls_handshake_errors_total 0\n"));
    }

    #[tokio::test]
    async fn health_check_slis() {
        let m = Arc::new(ApiserverMetrics::new().unwrap());
        m.observe_healthcheck("etcd", "readyz", true);
        m.observe_healthcheck("etcd", "readyz", false);
        m.observe_healthcheck("etcd", "readyz", false);
        let (_, _, text) = scrape(handler_for(m.clone(), false, true), Method::GET).await;
        assert!(
            text.contains("kubernetes_healthcheck{name=\"etcd\",type=\"readyz\"} 0\n"),
            "{text}"
        );
        assert!(text.contains(
            "kubernetes_healthchecks_total{name=\"etcd\",status=\"error\",type=\"readyz\"} 2\n"
        ));
        assert!(text.contains(
            "kubernetes_healthchecks_total{name=\"etcd\",status=\"success\",type=\"readyz\"} 1\n"
        ));
        let (_, _, main) = scrape(handler_for(m, false, false), Method::GET).await;
        assert!(!main.contains("kubernetes_healthcheck"));
    }

    #[tokio::test]
    async fn gzip_when_accepted() {
        let m = Arc::new(ApiserverMetrics::new().unwrap());
        m.tls_handshake_error();
        let req = http::Request::get("/metrics")
            .header("accept-encoding", "gzip, deflate")
            .body(empty())
            .unwrap();
        let resp = handler_for(m, false, false).oneshot(req).await.unwrap();
        assert_eq!(resp.headers()["content-encoding"], "gzip");
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        let mut text = String::new();
        use std::io::Read;
        flate2::read::GzDecoder::new(&body[..])
            .read_to_string(&mut text)
            .unwrap();
        assert!(text.contains("apiserver_tls_handshake_errors_total 1\n"));
    }

    #[tokio::test]
    async fn global_functions_record() {
        graceful_termination_event("TestSignal");
        let mut i = info("get", "ns", "p", "");
        i.resource = "globaltestresource".into();
        observe_request(&i, 201, Duration::from_millis(1));
        let (_, _, text) = scrape(metrics_handler(false), Method::GET).await;
        assert!(text.contains("name=\"TestSignal\""));
        assert!(text.contains("resource=\"globaltestresource\""));
    }
}
