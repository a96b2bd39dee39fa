//! `/version`: the server's `version.Info` (upstream `routes/version.go`).

use http::{Method, StatusCode};
use serde::Serialize;

use super::write_raw_json;
use crate::body::Request;
use crate::filters::{HttpService, service_fn};
use crate::server::mux::PathRecorderMux;
use crate::status::{ApiError, StatusDetails, reason};

/// `k8s.io/apimachinery/pkg/version.Info`, serialized in upstream field order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionInfo {
    /// Major version, e.g. `1`.
    pub major: String,
    /// Minor version, e.g. `35`.
    pub minor: String,
    /// Emulated major version (omitted when empty).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub emulation_major: String,
    /// Emulated minor version (omitted when empty).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub emulation_minor: String,
    /// Minimum compatibility major version (omitted when empty).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub min_compatibility_major: String,
    /// Minimum compatibility minor version (omitted when empty).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub min_compatibility_minor: String,
    /// e.g. `v1.35.0`.
    pub git_version: String,
    /// The source commit.
    pub git_commit: String,
    /// `clean`, `dirty`, or empty.
    pub git_tree_state: String,
    /// RFC 3339 build time, e.g. `1970-01-01T00:00:00Z`.
    pub build_date: String,
    /// The toolchain (upstream: the Go version); here e.g. `rustc 1.95.0`.
    pub go_version: String,
    /// The compiler: `rustc`.
    pub compiler: String,
    /// `<os>/<arch>` in Go's spelling, e.g. `linux/amd64`.
    pub platform: String,
}

/// The rustc that compiled this crate (`rustc 1.95.0`), recorded by the build script.
pub const RUSTC_VERSION: &str = match option_env!("APISERVER_RUSTC_VERSION") {
    Some(v) => v,
    None => "rustc unknown",
};

impl VersionInfo {
    /// Version info for `git_version` (`v1.35.0` → major `1`, minor `35`) with the toolchain,
    /// compiler and platform of this build filled in.
    pub fn for_build(git_version: &str, git_commit: &str, build_date: &str) -> Self {
        let trimmed = git_version.trim_start_matches('v');
        let mut parts = trimmed.split(['.', '-', '+']);
        let major = parts.next().unwrap_or_default().to_owned();
        let minor = parts.next().unwrap_or_default().to_owned();
        VersionInfo {
            major,
            minor,
            git_version: git_version.to_owned(),
            git_commit: git_commit.to_owned(),
            git_tree_state: "clean".to_owned(),
            build_date: build_date.to_owned(),
            go_version: RUSTC_VERSION.to_owned(),
            compiler: "rustc".to_owned(),
            platform: go_platform(),
            ..VersionInfo::default()
        }
    }
}

/// `std::env::consts` spelled the way Go's `GOOS/GOARCH` are.
pub fn go_platform() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64",
        "loongarch64" => "loong64",
        other => other,
    };
    format!("{}/{arch}", std::env::consts::OS)
}

/// The `/version` handler: `GET` → 200 indented JSON; other methods → go-restful's 405 Status.
pub fn version_handler(info: VersionInfo) -> HttpService {
    service_fn(move |req: Request| {
        let response = if req.method() == Method::GET {
            write_raw_json(StatusCode::OK, &info)
        } else {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                reason::METHOD_NOT_ALLOWED,
                "the server does not allow this method on the requested resource",
            )
            .with_details(StatusDetails::default())
            .into_response()
        };
        async move { response }
    })
}

/// Installs `/version` (listed, as the go-restful web service is).
pub fn install_version(mux: &PathRecorderMux, info: VersionInfo) {
    mux.handle("/version", version_handler(info));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::empty;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    #[tokio::test]
    async fn version_body() {
        let info = VersionInfo {
            major: "1".into(),
            minor: "35".into(),
            git_version: "v1.35.0".into(),
            git_commit: "abc".into(),
            git_tree_state: "clean".into(),
            build_date: "2026-01-01T00:00:00Z".into(),
            go_version: "rustc 1.95.0".into(),
            compiler: "rustc".into(),
            platform: "linux/amd64".into(),
            ..Default::default()
        };
        let mux = PathRecorderMux::new("test");
        install_version(&mux, info);
        assert_eq!(mux.listed_paths(), vec!["/version"]);
        let req = http::Request::get("/version").body(empty()).unwrap();
        let resp = mux.service().oneshot(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(resp.headers()["content-type"], "application/json");
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(
            std::str::from_utf8(&body).unwrap(),
            "{\n  \"major\": \"1\",\n  \"minor\": \"35\",\n  \"gitVersion\": \"v1.35.0\",\n  \"gitCommit\": \"abc\",\n  \"gitTreeState\": \"clean\",\n  \"buildDate\": \"2026-01-01T00:00:00Z\",\n  \"goVersion\": \"rustc 1.95.0\",\n  \"compiler\": \"rustc\",\n  \"platform\": \"linux/amd64\"\n}"
        );

        let req = http::Request::post("/version").body(empty()).unwrap();
        let resp = mux.service().oneshot(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(
            std::str::from_utf8(&body).unwrap(),
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"the server does not allow this method on the requested resource\",\"reason\":\"MethodNotAllowed\",\"details\":{},\"code\":405}\n"
        );
    }

    #[test]
    fn for_build_fills_toolchain() {
        let info = VersionInfo::for_build("v1.35.2", "deadbeef", "2026-11-21T00:00:00Z");
        assert_eq!((info.major.as_str(), info.minor.as_str()), ("1", "35"));
        assert_eq!(info.compiler, "rustc");
        assert!(info.go_version.starts_with("rustc "), "{}", info.go_version);
        assert!(info.platform.contains('/'));
    }
}
