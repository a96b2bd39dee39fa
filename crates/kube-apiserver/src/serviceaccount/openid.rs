//! Service-account issuer discovery (upstream `serviceaccount/openidmetadata.go` and
//! `routes/openidmetadata.go`): `/.well-known/openid-configuration` and `/openid/v1/jwks`,
//! rendered once at start-up from the issuer and the verification keys.

use std::collections::BTreeSet;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Serialize;

use apiserver::body::{Request, with_content_type};
use apiserver::filters::{HttpService, service_fn};
use apiserver::server::mux::PathRecorderMux;
use apiserver::status::{ApiError, StatusDetails, reason};
use http::{HeaderValue, Method, StatusCode};

use super::keys::{Algorithm, KeyMaterial, PublicKey};

/// The discovery document's path.
pub const OPENID_CONFIG_PATH: &str = "/.well-known/openid-configuration";
/// The key set's path.
pub const JWKS_PATH: &str = "/openid/v1/jwks";
/// Both responses may be cached for an hour (upstream overrides the default no-cache).
pub const CACHE_CONTROL: &str = "public, max-age=3600";
/// The key set's content type.
pub const JWKS_CONTENT_TYPE: &str = "application/jwk-set+json";

/// Why discovery cannot be served (upstream then logs and leaves the endpoints out).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum MetadataError {
    /// The issuer is not an https URL without query or fragment.
    #[error("{0}")]
    Issuer(String),
    /// No verification keys.
    #[error("no keys provided for validating keyset")]
    NoKeys,
}

#[derive(Serialize)]
struct Configuration<'a> {
    issuer: &'a str,
    jwks_uri: &'a str,
    response_types_supported: [&'a str; 1],
    subject_types_supported: [&'a str; 1],
    id_token_signing_alg_values_supported: Vec<&'static str>,
}

/// One JSON Web Key, fields in go-jose's order.
#[derive(Serialize)]
struct Jwk<'a> {
    #[serde(rename = "use")]
    use_: &'a str,
    kty: &'a str,
    kid: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    crv: Option<&'a str>,
    alg: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    x: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    y: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    n: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    e: Option<String>,
}

#[derive(Serialize)]
struct KeySet<'a> {
    keys: Vec<Jwk<'a>>,
}

/// The rendered discovery responses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenIdMetadata {
    /// The discovery document.
    pub configuration: Vec<u8>,
    /// The key set.
    pub jwks: Vec<u8>,
}

/// The `jwks_uri`: `--service-account-jwks-uri`, or `https://<external address>/openid/v1/jwks`.
pub fn jwks_uri(flag: Option<&str>, external_address: &str) -> String {
    match flag.filter(|f| !f.is_empty()) {
        Some(uri) => uri.to_string(),
        None => format!("https://{external_address}{JWKS_PATH}"),
    }
}

/// The address clients reach the server at (upstream's external host and port): the bound
/// address, or for a wildcard bind the address of the default route (the host name when there
/// is none), as upstream's advertise address defaults.
pub fn external_address(bound: std::net::SocketAddr) -> String {
    let port = bound.port();
    if !bound.ip().is_unspecified() {
        return std::net::SocketAddr::new(bound.ip(), port).to_string();
    }
    // Connecting a UDP socket sends nothing; it only picks the route's source address.
    let routed = std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| s.connect("10.255.255.255:1").map(|()| s))
        .and_then(|s| s.local_addr())
        .map(|a| a.ip())
        .ok()
        .filter(|ip| !ip.is_unspecified());
    match routed {
        Some(ip) => std::net::SocketAddr::new(ip, port).to_string(),
        None => {
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_string())
                .ok()
                .filter(|h| !h.is_empty())
                .unwrap_or_else(|| "localhost".into());
            format!("{host}:{port}")
        }
    }
}

/// Checks the issuer as OIDC discovery requires (upstream `NewOpenIDMetadata`).
fn check_issuer(issuer: &str) -> Result<(), MetadataError> {
    if issuer.is_empty() {
        return Err(MetadataError::Issuer("empty issuer URL".into()));
    }
    if !issuer.starts_with("https://") {
        return Err(MetadataError::Issuer(format!(
            "issuer URL must use https scheme, got: {issuer}"
        )));
    }
    if issuer.contains('?') {
        return Err(MetadataError::Issuer(format!(
            "issuer URL may not include a query, got: {issuer}"
        )));
    }
    if issuer.contains('#') {
        return Err(MetadataError::Issuer(format!(
            "issuer URL may not include a fragment, got: {issuer}"
        )));
    }
    Ok(())
}

/// Renders both documents.
pub fn render(
    issuer: &str,
    jwks_uri: &str,
    keys: &[PublicKey],
) -> Result<OpenIdMetadata, MetadataError> {
    check_issuer(issuer)?;
    if keys.is_empty() {
        return Err(MetadataError::NoKeys);
    }
    let algs: BTreeSet<Algorithm> = keys.iter().map(PublicKey::algorithm).collect();
    let mut alg_names: Vec<&'static str> = algs.iter().map(|a| a.name()).collect();
    alg_names.sort_unstable();
    let configuration = Configuration {
        issuer,
        jwks_uri,
        response_types_supported: ["id_token"],
        subject_types_supported: ["public"],
        id_token_signing_alg_values_supported: alg_names,
    };
    let b64 = |b: &[u8]| URL_SAFE_NO_PAD.encode(b);
    let jwks = KeySet {
        keys: keys
            .iter()
            .map(|key| match &key.material {
                KeyMaterial::Rsa { n, e } => Jwk {
                    use_: "sig",
                    kty: "RSA",
                    kid: &key.kid,
                    crv: None,
                    alg: "RS256",
                    x: None,
                    y: None,
                    n: Some(b64(n)),
                    e: Some(b64(e)),
                },
                KeyMaterial::Ec { alg, point } => {
                    let coords = point.get(1..).unwrap_or_default();
                    let (x, y) = coords.split_at(coords.len() / 2);
                    Jwk {
                        use_: "sig",
                        kty: "EC",
                        kid: &key.kid,
                        crv: alg.curve(),
                        alg: alg.name(),
                        x: Some(b64(x)),
                        y: Some(b64(y)),
                        n: None,
                        e: None,
                    }
                }
            })
            .collect(),
    };
    // Serializing structs of strings cannot fail.
    Ok(OpenIdMetadata {
        configuration: serde_json::to_vec(&configuration).unwrap_or_default(),
        jwks: serde_json::to_vec(&jwks).unwrap_or_default(),
    })
}

/// A GET-only handler answering `body` with `content_type`, cacheable for an hour; other
/// methods get go-restful's 405 Status.
fn handler(content_type: &'static str, body: Vec<u8>) -> HttpService {
    let body = bytes::Bytes::from(body);
    service_fn(move |req: Request| {
        let response = if req.method() == Method::GET {
            let mut response = with_content_type(StatusCode::OK, content_type, body.clone());
            response.headers_mut().insert(
                http::header::CACHE_CONTROL,
                HeaderValue::from_static(CACHE_CONTROL),
            );
            response
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

/// Serves both documents on `mux` (listed paths, as upstream's web services are).
pub fn install(mux: &PathRecorderMux, metadata: OpenIdMetadata) {
    mux.handle(
        OPENID_CONFIG_PATH,
        handler("application/json", metadata.configuration),
    );
    mux.handle(JWKS_PATH, handler(JWKS_CONTENT_TYPE, metadata.jwks));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serviceaccount::keys::{parse_public_keys_pem, testkeys};

    #[test]
    fn configuration_and_keys_as_upstream() {
        let mut keys = parse_public_keys_pem(testkeys::p256_pem().as_bytes()).unwrap();
        keys.extend(parse_public_keys_pem(testkeys::p384_pem().as_bytes()).unwrap());
        keys.extend(parse_public_keys_pem(include_bytes!("testdata/p521.pub.pem")).unwrap());
        let md = render(
            "https://kubernetes.default.svc.cluster.local",
            &jwks_uri(None, "10.0.0.1:6443"),
            &keys,
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(md.configuration).unwrap(),
            r#"{"issuer":"https://kubernetes.default.svc.cluster.local","jwks_uri":"https://10.0.0.1:6443/openid/v1/jwks","response_types_supported":["id_token"],"subject_types_supported":["public"],"id_token_signing_alg_values_supported":["ES256","ES384","ES512"]}"#
        );
        let jwks: serde_json::Value = serde_json::from_slice(&md.jwks).unwrap();
        let first = &jwks["keys"][0];
        assert_eq!(first["kty"], "EC");
        assert_eq!(first["crv"], "P-256");
        assert_eq!(first["kid"], keys[0].kid.as_str());
        assert_eq!(first["use"], "sig");
        assert_eq!(
            URL_SAFE_NO_PAD
                .decode(first["x"].as_str().unwrap())
                .unwrap()
                .len(),
            32
        );
        assert_eq!(jwks["keys"][1]["crv"], "P-384");
        let p521 = &jwks["keys"][2];
        assert_eq!(p521["crv"], "P-521");
        assert_eq!(p521["alg"], "ES512");
        for coordinate in ["x", "y"] {
            let bytes = URL_SAFE_NO_PAD
                .decode(p521[coordinate].as_str().unwrap())
                .unwrap();
            assert_eq!(bytes.len(), 66, "{coordinate}");
        }
        assert!(
            String::from_utf8_lossy(&md.jwks)
                .starts_with(r#"{"keys":[{"use":"sig","kty":"EC","kid":"#)
        );
    }

    #[test]
    fn issuers_must_be_https_urls() {
        let keys = parse_public_keys_pem(testkeys::p256_pem().as_bytes()).unwrap();
        for (issuer, message) in [
            ("", "empty issuer URL"),
            (
                "http://x",
                "issuer URL must use https scheme, got: http://x",
            ),
            (
                "https://x?a=b",
                "issuer URL may not include a query, got: https://x?a=b",
            ),
            (
                "https://x#f",
                "issuer URL may not include a fragment, got: https://x#f",
            ),
        ] {
            assert_eq!(
                render(issuer, "https://x/jwks", &keys)
                    .unwrap_err()
                    .to_string(),
                message
            );
        }
        assert_eq!(render("https://x", "u", &[]), Err(MetadataError::NoKeys));
        assert_eq!(jwks_uri(Some("https://a/keys"), "h:1"), "https://a/keys");
    }
}
