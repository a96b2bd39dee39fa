//! Built-in non-API routes (upstream `pkg/server/routes`): index, version, profiling, debug
//! flags, the debug unix socket, and the end-of-chain not-found handler.

pub mod debugsocket;
pub mod flags;
pub mod index;
pub mod notfound;
pub mod profiling;
pub mod version;

/// Serializes `value` as Go's `json.MarshalIndent(v, "", "  ")` does: 2-space indentation, no
/// trailing newline, and `<`, `>`, `&`, U+2028, U+2029 escaped (Go's HTML-safe encoding).
pub fn go_indented_json<T: serde::Serialize>(value: &T) -> Result<String, serde_json::Error> {
    crate::util::gojson::to_indented(value)
}

/// Upstream `responsewriters.WriteRawJSON`: `code`, `application/json`, indented JSON.
pub fn write_raw_json<T: serde::Serialize>(
    code: http::StatusCode,
    value: &T,
) -> crate::body::Response {
    match go_indented_json(value) {
        Ok(text) => crate::body::with_content_type(code, "application/json", text),
        Err(err) => {
            crate::body::go_http_error(http::StatusCode::INTERNAL_SERVER_ERROR, &err.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_json_escapes_html() {
        let v = serde_json::json!({"a": ["<x>&"]});
        assert_eq!(
            go_indented_json(&v).unwrap(),
            "{\n  \"a\": [\n    \"\\u003cx\\u003e\\u0026\"\n  ]\n}"
        );
    }
}
