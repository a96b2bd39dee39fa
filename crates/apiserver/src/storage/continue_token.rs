//! List continue tokens (upstream `pkg/storage/continue.go`): base64url without padding of
//! `{"v":"meta.k8s.io/v1","rv":<int>,"start":"<key suffix>"}`.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Token {
    #[serde(default)]
    v: String,
    #[serde(default)]
    rv: i64,
    #[serde(default)]
    start: String,
}

const VERSION: &str = "meta.k8s.io/v1";

/// Decodes a token against the list's key prefix (which ends in `/`), returning the absolute key
/// to start from and the pinned revision. Errors carry upstream's texts (the caller prefixes
/// `invalid continue token: `).
pub fn decode(token: &str, key_prefix: &str) -> Result<(String, i64), String> {
    let data = URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|e| format!("continue key is not valid: {e}"))?;
    let t: Token =
        serde_json::from_slice(&data).map_err(|e| format!("continue key is not valid: {e}"))?;
    if t.v != VERSION {
        return Err(format!(
            "continue key is not valid: server does not recognize this encoded version {}",
            t.v
        ));
    }
    if t.rv == 0 {
        return Err("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)".into());
    }
    if t.start.is_empty() {
        return Err(
            "continue key is not valid: encoded start key empty (version meta.k8s.io/v1)".into(),
        );
    }
    let key = if t.start.starts_with('/') {
        t.start.clone()
    } else {
        format!("/{}", t.start)
    };
    // Reject anything a path cleaning would change (`..`, `//`, trailing `/`), so a token can
    // never escape the prefix it was issued for.
    if clean_path(&key) != key {
        return Err(format!("continue key is not valid: {}", t.start));
    }
    Ok((format!("{key_prefix}{}", &key[1..]), t.rv))
}

/// Encodes a token for continuing at `key` (absolute, under `key_prefix`) at revision `rv`.
pub fn encode(key: &str, key_prefix: &str, rv: i64) -> Result<String, String> {
    let Some(next) = key.strip_prefix(key_prefix) else {
        return Err("unable to encode next field: the key and key prefix do not match".to_string());
    };
    let json = serde_json::to_vec(&Token {
        v: VERSION.into(),
        rv,
        start: next.into(),
    })
    .map_err(|e| e.to_string())?;
    Ok(URL_SAFE_NO_PAD.encode(json))
}

/// Go's `path.Clean` for absolute paths.
fn clean_path(p: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            s => out.push(s),
        }
    }
    format!("/{}", out.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_matches_upstream_bytes() {
        let token = encode("/registry/pods/ns/b\u{0}", "/registry/pods/", 7).unwrap();
        let raw = URL_SAFE_NO_PAD.decode(&token).unwrap();
        assert_eq!(
            std::str::from_utf8(&raw).unwrap(),
            r#"{"v":"meta.k8s.io/v1","rv":7,"start":"ns/b\u0000"}"#
        );
        let (key, rv) = decode(&token, "/registry/pods/").unwrap();
        assert_eq!(key, "/registry/pods/ns/b\u{0}");
        assert_eq!(rv, 7);
    }

    #[test]
    fn rejects_forged_tokens() {
        let forge = |json: &str| URL_SAFE_NO_PAD.encode(json);
        let cases = [
            ("!!!".to_string(), "continue key is not valid: "),
            (forge("{"), "continue key is not valid: "),
            (
                forge(r#"{"v":"x","rv":1,"start":"a"}"#),
                "server does not recognize this encoded version x",
            ),
            (
                forge(r#"{"v":"meta.k8s.io/v1","rv":0,"start":"a"}"#),
                "incorrect encoded start resourceVersion",
            ),
            (
                forge(r#"{"v":"meta.k8s.io/v1","rv":1,"start":""}"#),
                "encoded start key empty",
            ),
            (
                forge(r#"{"v":"meta.k8s.io/v1","rv":1,"start":"../secrets/x"}"#),
                "continue key is not valid: ../secrets/x",
            ),
        ];
        for (token, want) in cases {
            let err = decode(&token, "/registry/pods/").unwrap_err();
            assert!(err.contains(want), "{token}: {err}");
        }
    }
}
