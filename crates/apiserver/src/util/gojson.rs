//! JSON as Go's `encoding/json` writes it: HTML-safe (`<`, `>`, `&`, U+2028 and U+2029 are
//! escaped), so bodies match upstream's byte for byte.

/// Escapes what Go's encoder escapes. These characters only ever occur inside JSON strings,
/// so replacing them everywhere is the same as escaping them in strings.
pub fn escape_html(json: String) -> String {
    if !json.contains(['<', '>', '&', '\u{2028}', '\u{2029}']) {
        return json;
    }
    json.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// `json.Marshal` followed by a newline, as the Kubernetes JSON serializer writes objects.
pub fn to_line<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, serde_json::Error> {
    let mut text = escape_html(serde_json::to_string(value)?);
    text.push('\n');
    Ok(text.into_bytes())
}

/// `json.MarshalIndent(v, "", "  ")`: two-space indentation, no trailing newline.
pub fn to_indented<T: serde::Serialize>(value: &T) -> Result<String, serde_json::Error> {
    Ok(escape_html(serde_json::to_string_pretty(value)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_like_go() {
        assert_eq!(
            String::from_utf8(to_line(&"<a&b>").unwrap()).unwrap(),
            "\"\\u003ca\\u0026b\\u003e\"\n"
        );
        assert_eq!(to_indented(&vec![1]).unwrap(), "[\n  1\n]");
    }
}
