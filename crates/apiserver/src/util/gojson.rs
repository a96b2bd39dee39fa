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

/// Go's `json.Indent(dst, src, "", "  ")` of one compact JSON document: what
/// [`to_indented`] writes, without building a value (a trailing newline is dropped). Empty
/// objects and arrays stay `{}` and `[]`.
pub fn indent(compact: &[u8]) -> Vec<u8> {
    let src = compact.strip_suffix(b"\n").unwrap_or(compact);
    let mut out = Vec::with_capacity(src.len() + src.len() / 2);
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let newline = |out: &mut Vec<u8>, depth: usize| {
        out.push(b'\n');
        out.resize(out.len() + 2 * depth, b' ');
    };
    let mut bytes = src.iter().copied().peekable();
    while let Some(b) = bytes.next() {
        if in_string {
            out.push(b);
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => {
                in_string = true;
                out.push(b);
            }
            b'{' | b'[' => {
                out.push(b);
                // An empty object or array stays on one line.
                if let Some(&close) = bytes.peek()
                    && (close == b'}' || close == b']')
                {
                    out.push(close);
                    bytes.next();
                    continue;
                }
                depth += 1;
                newline(&mut out, depth);
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(b);
            }
            b',' => {
                out.push(b);
                newline(&mut out, depth);
            }
            b':' => out.extend_from_slice(b": "),
            b' ' | b'\t' | b'\n' | b'\r' => {}
            _ => out.push(b),
        }
    }
    out
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

    #[test]
    fn indent_matches_the_pretty_encoder() {
        let value = serde_json::json!({
            "a": [],
            "b": {},
            "c": [1, {"d": "x,y:{[\"]}\\", "e": null}, [true, false]],
            "f": "\u{2028}<",
            "g": -1.5e10,
        });
        let compact = to_line(&value).unwrap();
        let pretty = to_indented(&value).unwrap();
        assert_eq!(String::from_utf8(indent(&compact)).unwrap(), pretty);
    }
}
