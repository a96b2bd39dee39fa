//! Cross-origin resource sharing (upstream `WithCORS`, `--cors-allowed-origins`). Preflight
//! requests from an allowed origin are answered here, before authentication.

use std::future::Future;

use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use regex::Regex;

use super::{Filter, Next};
use crate::body::{Request, Response, empty};

const DEFAULT_ALLOWED_METHODS: [&str; 6] = ["POST", "GET", "OPTIONS", "PUT", "DELETE", "PATCH"];
const DEFAULT_ALLOWED_HEADERS: [&str; 7] = [
    "Content-Type",
    "Content-Length",
    "Accept-Encoding",
    "X-CSRF-Token",
    "Authorization",
    "X-Requested-With",
    "If-Modified-Since",
];
const DEFAULT_EXPOSED_HEADERS: [&str; 1] = ["Date"];

/// A bad `--cors-allowed-origins` list.
#[derive(Debug, thiserror::Error)]
pub enum CorsConfigError {
    /// A pattern is not a valid regular expression.
    #[error("--cors-allowed-origins has an invalid regular expression: {pattern:?}: {source}")]
    Regex {
        /// The offending pattern.
        pattern: String,
        /// The compile error.
        source: regex::Error,
    },
    /// A pattern does not pin the start and end of the host (CVE-2022-1996).
    #[error(
        "--cors-allowed-origins has an invalid regular expression: {0:?}: regular expression does not pin to start/end of host in the origin header"
    )]
    NotAnchored(String),
    /// A header value (methods, headers, credentials) is not valid header text.
    #[error("invalid CORS header value: {0:?}")]
    HeaderValue(String),
}

/// Validates `--cors-allowed-origins` as upstream's options do: every pattern must compile and
/// pin the host, i.e. contain a start marker (`^` or `//`) and an end marker (`$` or `:`), since
/// patterns match anywhere in the `Origin` header.
pub fn validate_cors_allowed_origins(patterns: &[String]) -> Result<(), CorsConfigError> {
    for pattern in patterns {
        Regex::new(pattern).map_err(|source| CorsConfigError::Regex {
            pattern: pattern.clone(),
            source,
        })?;
        let pins_start = pattern.contains('^') || pattern.contains("//");
        let pins_end = pattern.contains('$') || pattern.contains(':');
        if !pins_start || !pins_end {
            return Err(CorsConfigError::NotAnchored(pattern.clone()));
        }
    }
    Ok(())
}

/// Answers CORS for origins matching any of the configured regular expressions.
#[derive(Debug, Clone)]
pub struct Cors {
    origins: Vec<Regex>,
    headers: HeaderMap,
}

impl Cors {
    /// The filter with upstream's defaults for methods, headers, exposed headers and
    /// `Access-Control-Allow-Credentials: true`. Patterns are compiled, not validated (see
    /// [`validate_cors_allowed_origins`]).
    pub fn new(allowed_origin_patterns: &[String]) -> Result<Self, CorsConfigError> {
        Self::with_options(allowed_origin_patterns, None, None, None, "true")
    }

    /// The filter with explicit lists; `None` selects upstream's default list.
    pub fn with_options(
        allowed_origin_patterns: &[String],
        allowed_methods: Option<&[String]>,
        allowed_headers: Option<&[String]>,
        exposed_headers: Option<&[String]>,
        allow_credentials: &str,
    ) -> Result<Self, CorsConfigError> {
        let origins = allowed_origin_patterns
            .iter()
            .map(|p| {
                Regex::new(p).map_err(|source| CorsConfigError::Regex {
                    pattern: p.clone(),
                    source,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let join = |given: Option<&[String]>, default: &[&str]| match given {
            Some(list) => list.join(", "),
            None => default.join(", "),
        };
        let value = |s: String| {
            HeaderValue::from_str(&s).map_err(|_| CorsConfigError::HeaderValue(s.clone()))
        };
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            value(join(allowed_methods, &DEFAULT_ALLOWED_METHODS))?,
        );
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            value(join(allowed_headers, &DEFAULT_ALLOWED_HEADERS))?,
        );
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            value(join(exposed_headers, &DEFAULT_EXPOSED_HEADERS))?,
        );
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
            value(allow_credentials.to_string())?,
        );
        Ok(Cors { origins, headers })
    }

    fn allowed(&self, origin: &str) -> bool {
        self.origins.iter().any(|re| re.is_match(origin))
    }
}

impl Filter for Cors {
    fn call(&self, req: Request, next: Next) -> impl Future<Output = Response> + Send + 'static {
        let origin = req
            .headers()
            .get(header::ORIGIN)
            .filter(|v| !v.is_empty())
            .cloned();
        let cors_headers = origin
            .filter(|o| o.to_str().is_ok_and(|o| self.allowed(o)))
            .map(|origin| {
                let mut headers = self.headers.clone();
                headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
                headers
            });
        async move {
            let Some(cors_headers) = cors_headers else {
                return next.run(req).await;
            };
            if req.method() == Method::OPTIONS {
                // Preflight: answered here, before authentication.
                let mut response = http::Response::new(empty());
                *response.status_mut() = StatusCode::NO_CONTENT;
                response.headers_mut().extend(cors_headers);
                return response;
            }
            let mut response = next.run(req).await;
            // Upstream sets these before the handler runs, so handler values win.
            for (name, value) in cors_headers {
                if let Some(name) = name {
                    response.headers_mut().entry(name).or_insert(value);
                }
            }
            response
        }
    }
}

#[cfg(test)]
mod tests {
    use tower::{Layer, ServiceExt};

    use super::*;
    use crate::body::full;
    use crate::filters::{FilterLayer, HttpService, service_fn};

    fn svc(cors: Cors) -> HttpService {
        FilterLayer::new(cors).layer(service_fn(|_r: Request| async {
            http::Response::new(full("inner"))
        }))
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    async fn request(svc: HttpService, method: Method, origin: &str) -> Response {
        let req = http::Request::builder()
            .method(method)
            .uri("/version")
            .header("Origin", origin)
            .body(full(""))
            .unwrap();
        svc.oneshot(req).await.unwrap()
    }

    #[tokio::test]
    async fn cors_allowed_origins() {
        let table: &[(&[&str], &str, bool)] = &[
            (&[], "example.com", false),
            (&["example.com"], "example.com", true),
            (&["example.com"], "not-allowed.com", false),
            (&["not-matching.com", "example.com"], "example.com", true),
            (&[".*"], "example.com", true),
            // Unpinned patterns match anywhere (CVE-2022-1996), pinned ones do not.
            (&["//example.com"], "http://example.com.evil.com", true),
            (
                &["//example.com(:|$)"],
                "http://example.com.evil.com",
                false,
            ),
            (&["//example.com(:|$)"], "http://example.com:8080", true),
        ];
        for (patterns, origin, allowed) in table {
            let resp = request(
                svc(Cors::new(&strings(patterns)).unwrap()),
                Method::GET,
                origin,
            )
            .await;
            assert_eq!(resp.status(), StatusCode::OK);
            let h = resp.headers();
            if *allowed {
                assert_eq!(
                    h["access-control-allow-origin"], *origin,
                    "{patterns:?} {origin}"
                );
                assert_eq!(h["access-control-allow-credentials"], "true");
                assert_eq!(
                    h["access-control-allow-headers"],
                    "Content-Type, Content-Length, Accept-Encoding, X-CSRF-Token, Authorization, X-Requested-With, If-Modified-Since"
                );
                assert_eq!(
                    h["access-control-allow-methods"],
                    "POST, GET, OPTIONS, PUT, DELETE, PATCH"
                );
                assert_eq!(h["access-control-expose-headers"], "Date");
            } else {
                for name in [
                    "access-control-allow-origin",
                    "access-control-allow-credentials",
                    "access-control-allow-headers",
                    "access-control-allow-methods",
                    "access-control-expose-headers",
                ] {
                    assert!(h.get(name).is_none(), "{patterns:?} {origin} {name}");
                }
            }
        }
        // No Origin header: untouched.
        let req = http::Request::get("/version").body(full("")).unwrap();
        let resp = svc(Cors::new(&strings(&[".*"])).unwrap())
            .oneshot(req)
            .await
            .unwrap();
        assert!(resp.headers().get("access-control-allow-origin").is_none());
    }

    #[tokio::test]
    async fn cors_allowed_methods() {
        let tests: &[(Option<&[&str]>, &str, bool)] = &[
            (None, "POST", true),
            (None, "GET", true),
            (None, "OPTIONS", true),
            (None, "PUT", true),
            (None, "DELETE", true),
            (None, "PATCH", true),
            (Some(&["GET", "POST"]), "PATCH", false),
        ];
        for (methods, method, allowed) in tests {
            let methods = methods.map(strings);
            let cors =
                Cors::with_options(&strings(&[".*"]), methods.as_deref(), None, None, "true")
                    .unwrap();
            let method = Method::from_bytes(method.as_bytes()).unwrap();
            let resp = request(svc(cors), method.clone(), "allowed.com").await;
            let listed = resp.headers()["access-control-allow-methods"]
                .to_str()
                .unwrap()
                .split(',')
                .any(|m| m.trim() == method.as_str());
            assert_eq!(listed, *allowed, "{method}");
            if method == Method::OPTIONS {
                assert_eq!(resp.status(), StatusCode::NO_CONTENT);
                let body = crate::body::read_limited(resp.into_body(), 0)
                    .await
                    .unwrap()
                    .unwrap();
                assert!(body.is_empty(), "preflight must not reach the handler");
            } else {
                assert_eq!(resp.status(), StatusCode::OK);
            }
        }
    }

    #[tokio::test]
    async fn options_without_allowed_origin_reaches_handler() {
        let resp = request(
            svc(Cors::new(&strings(&["^https://ok$"])).unwrap()),
            Method::OPTIONS,
            "https://other",
        )
        .await;
        assert_eq!(resp.status(), StatusCode::OK);
    }

    #[test]
    fn compile_regex() {
        let cors = Cors::new(&strings(&["endsWithMe$", "^startingWithMe"])).unwrap();
        assert!(cors.origins[0].is_match("Something that endsWithMe"));
        assert!(!cors.origins[0].is_match("Something that doesn't endsWithMe."));
        assert!(cors.origins[1].is_match("startingWithMe is very important"));
        assert!(!cors.origins[1].is_match("not startingWithMe should fail"));
        assert!(Cors::new(&strings(&["("])).is_err());
    }

    #[test]
    fn validate_allowed_origins() {
        for ok in [
            "^https://example.com$",
            "//example.com(:|$)",
            "^http://localhost:",
            "//127.0.0.1$",
        ] {
            assert!(
                validate_cors_allowed_origins(&strings(&[ok])).is_ok(),
                "{ok}"
            );
        }
        for bad in [
            "example.com",
            "^example.com",
            "example.com$",
            "//example.com",
            "(",
        ] {
            assert!(
                validate_cors_allowed_origins(&strings(&[bad])).is_err(),
                "{bad}"
            );
        }
    }
}
