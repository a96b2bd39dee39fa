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

/// The text Go's `encoding/json` gives for the syntax error serde_json found in `input`
/// (`invalid character 'b' looking for beginning of object key string`, `unexpected end of
/// JSON input`), for the errors clients show; `None` when there is no Go equivalent to name
/// (serde_json's own text is then the best there is).
pub fn syntax_error_text(input: &[u8], err: &serde_json::Error) -> Option<String> {
    use serde_json::error::Category;
    match err.classify() {
        Category::Eof => return Some("unexpected end of JSON input".to_string()),
        Category::Syntax => {}
        Category::Data | Category::Io => return None,
    }
    let offending = byte_at(input, err.line(), err.column())?;
    let message = err.to_string();
    let context = if message.starts_with("key must be a string") {
        "looking for beginning of object key string"
    } else if message.starts_with("expected value") {
        "looking for beginning of value"
    } else if message.starts_with("trailing comma") {
        match offending {
            b'}' => "looking for beginning of object key string",
            _ => "looking for beginning of value",
        }
    } else if message.starts_with("expected `:`") {
        "after object key"
    } else if message.starts_with("expected `,` or `}`") {
        "after object key:value pair"
    } else if message.starts_with("expected `,` or `]`") {
        "after array element"
    } else if message.starts_with("trailing characters") {
        "after top-level value"
    } else if message.starts_with("invalid escape") {
        "in string escape code"
    } else if message.starts_with("control character") {
        "in string literal"
    } else if message.starts_with("invalid number") {
        "in numeric literal"
    } else {
        return None;
    };
    Some(format!(
        "invalid character {} {context}",
        go_quote_char(offending)
    ))
}

/// The byte at serde_json's 1-based `line` and `column`.
fn byte_at(input: &[u8], line: usize, column: usize) -> Option<u8> {
    let start: usize = input
        .split(|b| *b == b'\n')
        .take(line.checked_sub(1)?)
        .map(|l| l.len() + 1)
        .sum();
    input.get(start + column.checked_sub(1)?).copied()
}

/// Go's `quoteChar`: the byte as a rune in single quotes, escaped as `strconv.Quote` does.
fn go_quote_char(byte: u8) -> String {
    match byte {
        b'\'' => r"'\''".to_string(),
        b'"' => "'\"'".to_string(),
        b'\n' => r"'\n'".to_string(),
        b'\r' => r"'\r'".to_string(),
        b'\t' => r"'\t'".to_string(),
        0x00..=0x1f | 0x7f => format!(r"'\x{byte:02x}'"),
        _ => format!("'{}'", char::from(byte)),
    }
}

#[cfg(test)]
mod syntax_error_tests {
    use super::*;

    fn go_text(input: &str) -> Option<String> {
        let err = serde_json::from_str::<serde_json::Value>(input).unwrap_err();
        syntax_error_text(input.as_bytes(), &err)
    }

    #[test]
    fn syntax_errors_read_as_go_writes_them() {
        let cases = [
            (
                "{bad",
                "invalid character 'b' looking for beginning of object key string",
            ),
            (
                "{\"a\":1,}",
                "invalid character '}' looking for beginning of object key string",
            ),
            (
                "[1,]",
                "invalid character ']' looking for beginning of value",
            ),
            ("{\"a\" 1}", "invalid character '1' after object key"),
            (
                "{\"a\":1 \"b\":2}",
                "invalid character '\"' after object key:value pair",
            ),
            ("[1 2]", "invalid character '2' after array element"),
            ("{} x", "invalid character 'x' after top-level value"),
            (
                "{\n  \"a\": x}",
                "invalid character 'x' looking for beginning of value",
            ),
            (
                "{\"a\":\"\\q\"}",
                "invalid character 'q' in string escape code",
            ),
            ("{\"a\":-}", "invalid character '}' in numeric literal"),
            (
                "'",
                "invalid character '\\'' looking for beginning of value",
            ),
            ("", "unexpected end of JSON input"),
            ("{\"a\":", "unexpected end of JSON input"),
        ];
        for (input, want) in cases {
            assert_eq!(go_text(input).as_deref(), Some(want), "{input:?}");
        }
        // No Go equivalent is named: serde_json's own text stays.
        assert_eq!(go_text("{\"a\":tru}"), None);
    }
}
