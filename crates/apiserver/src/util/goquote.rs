//! Go's `strconv.Quote` (what `%q` prints for a string): double quotes, `\"` and `\\`, the
//! C escapes `\a \b \f \n \r \t \v`, other control bytes as `\xNN`, and characters Go does
//! not count as printable (C1 controls, format characters, separators other than the ASCII
//! space) as `\uNNNN`.

/// `s` quoted as Go's `strconv.Quote` quotes valid UTF-8.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if !is_go_printable(c) => {
                let n = c as u32;
                if n > 0xffff {
                    out.push_str(&format!("\\U{n:08x}"));
                } else {
                    out.push_str(&format!("\\u{n:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `strconv.IsPrint` for the characters that matter in practice: C1 controls, the
/// Unicode space separators other than U+0020, line/paragraph separators, the common
/// format characters and private-use code points are not printable.
fn is_go_printable(c: char) -> bool {
    !matches!(c as u32,
        0x80..=0x9f
        | 0xa0
        | 0xad
        | 0x600..=0x605
        | 0x61c
        | 0x6dd
        | 0x70f
        | 0x1680
        | 0x180e
        | 0x2000..=0x200f
        | 0x2028..=0x202f
        | 0x205f..=0x2064
        | 0x2066..=0x206f
        | 0x3000
        | 0xd800..=0xdfff
        | 0xe000..=0xf8ff
        | 0xfeff
        | 0xfff9..=0xfffb
        | 0xfffe..=0xffff
        | 0xf0000..=0x10ffff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_as_go_strconv_quote() {
        assert_eq!(go_quote("plain"), r#""plain""#);
        assert_eq!(go_quote(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(
            go_quote("\u{7}\u{8}\u{c}\n\r\t\u{b}"),
            r#""\a\b\f\n\r\t\v""#
        );
        assert_eq!(go_quote("\u{1}\u{7f}"), r#""\x01\x7f""#);
        assert_eq!(go_quote("\u{85}\u{a0}\u{2028}"), r#""\u0085\u00a0\u2028""#);
        assert_eq!(go_quote("héllo 世界 ✓"), "\"héllo 世界 ✓\"");
        assert_eq!(go_quote("\u{f0000}"), r#""\U000f0000""#);
    }
}
