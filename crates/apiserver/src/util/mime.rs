//! Whether a `Content-Type` parses as Go's `mime.ParseMediaType` reads it: upstream answers
//! 415 for a body whose media type does not parse, before looking at what it names.

/// RFC 1521 token characters (Go's `isTokenChar`).
fn is_token_char(c: char) -> bool {
    c.is_ascii() && c > ' ' && c != '\u{7f}' && !"()<>@,;:\\\"/[]?=".contains(c)
}

/// Splits a token off `s` (possibly empty).
fn token(s: &str) -> (&str, &str) {
    let end = s.find(|c| !is_token_char(c)).unwrap_or(s.len());
    s.split_at(end)
}

/// A parameter value, a token or a quoted string, and what follows it (`None` when neither).
fn value(s: &str) -> Option<(&str, &str)> {
    if let Some(quoted) = s.strip_prefix('"') {
        let mut escaped = false;
        for (i, c) in quoted.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => return Some((&quoted[..i], &quoted[i + 1..])),
                '\r' | '\n' => return None,
                _ => {}
            }
        }
        return None;
    }
    let (tok, rest) = token(s);
    (!tok.is_empty()).then_some((tok, rest))
}

/// `Ok` when `header` is a well-formed media type with parameters, else Go's error text
/// (`mime: no media type`, `mime: expected slash after first token`, …).
pub fn parse_media_type(header: &str) -> Result<(), &'static str> {
    let base = header.split(';').next().unwrap_or_default().trim();
    let (major, rest) = token(base);
    if major.is_empty() {
        return Err("mime: no media type");
    }
    if !rest.is_empty() {
        let Some(rest) = rest.strip_prefix('/') else {
            return Err("mime: expected slash after first token");
        };
        let (minor, rest) = token(rest);
        if minor.is_empty() {
            return Err("mime: expected token after slash");
        }
        if !rest.is_empty() {
            return Err("mime: unexpected content after media subtype");
        }
    }
    let mut params = &header[header.find(';').unwrap_or(header.len())..];
    let mut seen = std::collections::HashMap::new();
    loop {
        params = params.trim_start();
        if params.is_empty() {
            return Ok(());
        }
        let parsed = params.strip_prefix(';').and_then(|p| {
            let (key, rest) = token(p.trim_start());
            if key.is_empty() {
                return None;
            }
            let rest = rest.trim_start().strip_prefix('=')?.trim_start();
            value(rest).map(|(value, rest)| (key.to_ascii_lowercase(), value, rest))
        });
        match parsed {
            Some((key, value, rest)) => {
                // Repeating a parameter with the same value is allowed.
                if seen.insert(key, value).is_some_and(|old| old != value) {
                    return Err("mime: duplicate parameter name");
                }
                params = rest;
            }
            // A trailing semicolon is ignored.
            None if params.trim() == ";" => return Ok(()),
            None => return Err("mime: invalid media parameter"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_media_type;

    #[test]
    fn media_types_parse_as_go() {
        for ok in [
            "application/json",
            "application/json; charset=utf-8",
            "application/json;charset=\"utf-8\"",
            "application/json;",
            "text",
            "Application/JSON ; a=b ; c=d",
        ] {
            assert_eq!(parse_media_type(ok), Ok(()), "{ok}");
        }
        for (bad, err) in [
            (";;;garbage", "mime: no media type"),
            ("application/json; charset", "mime: invalid media parameter"),
            (
                "application/json; a=b; a=c",
                "mime: duplicate parameter name",
            ),
            ("application/", "mime: expected token after slash"),
            ("application json", "mime: expected slash after first token"),
            (
                "application/json x",
                "mime: unexpected content after media subtype",
            ),
            ("", "mime: no media type"),
        ] {
            assert_eq!(parse_media_type(bad), Err(err), "{bad}");
        }
    }
}
