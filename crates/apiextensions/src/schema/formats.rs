//! String formats that custom resource validation checks (upstream
//! `pkg/apiserver/validation/formats.go`, checked as go-openapi's `strfmt` registry does).
//! Unsupported formats are ignored, as upstream strips them before validating.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::OnceLock;

use base64::Engine as _;
use regex::Regex;

use super::names;

/// Formats checked on strings (go-openapi names, without dashes).
const SUPPORTED: [&str; 25] = [
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
    "k8sshortname",
];

fn normalize(format: &str) -> String {
    format.replace('-', "")
}

/// The format validation uses for a schema of type `type_` (upstream's
/// `StripUnsupportedFormatsPostProcessor`): empty when the format is not checked.
pub(crate) fn effective(type_: &str, int_or_string: bool, format: &str) -> String {
    if format.is_empty() {
        return String::new();
    }
    let t = if int_or_string { "" } else { type_ };
    let keep = match t {
        "" | "string" => {
            let n = normalize(format);
            SUPPORTED.contains(&n.as_str()) || n == "k8slongname"
        }
        "integer" => format == "int32" || format == "int64",
        "number" => format == "float" || format == "double",
        _ => false,
    };
    if keep {
        format.to_string()
    } else {
        String::new()
    }
}

/// Whether the string validator of go-openapi knows `format` (only string formats are in
/// its registry; `int32` and the like are not).
pub(crate) fn is_string_format(format: &str) -> bool {
    let n = normalize(format);
    SUPPORTED.contains(&n.as_str()) || n == "k8slongname"
}

fn re(cell: &'static OnceLock<Option<Regex>>, pattern: &str) -> Option<&'static Regex> {
    cell.get_or_init(|| Regex::new(pattern).ok()).as_ref()
}

macro_rules! matches_re {
    ($pattern:expr, $s:expr) => {{
        static CELL: OnceLock<Option<Regex>> = OnceLock::new();
        re(&CELL, $pattern).is_some_and(|r| r.is_match($s))
    }};
}

/// Whether `s` is valid for `format` (a supported string format).
pub(crate) fn valid(format: &str, s: &str) -> bool {
    match normalize(format).as_str() {
        "bsonobjectid" => s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit()),
        "uri" => valid_uri(s),
        "email" => {
            matches_re!(r"^[^@\s<>]+@[^@\s<>]+$", s)
                || matches_re!(r"^[^<>]*<[^@\s<>]+@[^@\s<>]+>$", s)
        }
        "hostname" => {
            s.len() <= 255
                && matches_re!(
                    r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$",
                    s
                )
        }
        "ipv4" => parse_ip(s).is_some() && s.contains('.'),
        "ipv6" => parse_ip(s).is_some() && s.contains(':'),
        "cidr" => valid_cidr(s),
        "mac" => valid_mac(s),
        "uuid" => matches_re!(
            r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
            s
        ),
        "uuid3" => matches_re!(
            r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
            s
        ),
        "uuid4" => matches_re!(
            r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
            s
        ),
        "uuid5" => matches_re!(
            r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
            s
        ),
        "isbn" => isbn10(s) || isbn13(s),
        "isbn10" => isbn10(s),
        "isbn13" => isbn13(s),
        "creditcard" => credit_card(s),
        "ssn" => matches_re!(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$", s),
        "hexcolor" => matches_re!(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$", s),
        "rgbcolor" => matches_re!(
            r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$",
            s
        ),
        "byte" => base64::engine::general_purpose::STANDARD.decode(s).is_ok(),
        "password" => true,
        "date" => valid_date(s),
        "duration" => valid_duration(s),
        "datetime" => valid_date_time(s),
        "k8sshortname" => names::dns1035_label(s).is_empty(),
        "k8slongname" => names::dns1123_subdomain(s).is_empty(),
        _ => true,
    }
}

/// Go's `net.ParseIP`: dotted IPv4 (no leading zeros) or IPv6 (possibly with an embedded IPv4).
fn parse_ip(s: &str) -> Option<IpAddr> {
    if let Ok(v4) = s.parse::<Ipv4Addr>() {
        return Some(IpAddr::V4(v4));
    }
    s.parse::<Ipv6Addr>().ok().map(IpAddr::V6)
}

fn valid_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Some(addr) = parse_ip(ip) else {
        return false;
    };
    let max = if addr.is_ipv4() { 32 } else { 128 };
    !bits.is_empty()
        && bits.len() <= 3
        && bits.bytes().all(|b| b.is_ascii_digit())
        && !(bits.len() > 1 && bits.starts_with('0'))
        && bits.parse::<u32>().is_ok_and(|b| b <= max)
}

/// Go's `net.ParseMAC`: 6, 8 or 20 octets, `:`/`-` separated pairs or `.` separated quads.
fn valid_mac(s: &str) -> bool {
    let hex = |p: &str, n: usize| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit());
    let octets_ok = |n: usize| n == 6 || n == 8 || n == 20;
    if s.contains(':') || s.contains('-') {
        let sep = if s.contains(':') { ':' } else { '-' };
        let parts: Vec<&str> = s.split(sep).collect();
        octets_ok(parts.len()) && parts.iter().all(|p| hex(p, 2))
    } else if s.contains('.') {
        let parts: Vec<&str> = s.split('.').collect();
        octets_ok(parts.len() * 2) && parts.iter().all(|p| hex(p, 4))
    } else {
        false
    }
}

/// Go's `url.ParseRequestURI`: an absolute URI or an absolute path, without spaces.
fn valid_uri(s: &str) -> bool {
    if s.is_empty() || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    if s.starts_with('/') {
        return true;
    }
    match s.split_once(':') {
        Some((scheme, _)) => matches_re!(r"^[a-zA-Z][a-zA-Z0-9+.\-]*$", scheme),
        None => false,
    }
}

fn isbn_digits(s: &str) -> String {
    s.chars().filter(|c| *c != '-' && *c != ' ').collect()
}

fn isbn10(s: &str) -> bool {
    let d = isbn_digits(s);
    if !matches_re!(r"^(?:[0-9]{9}X|[0-9]{10})$", &d) {
        return false;
    }
    let sum: u32 = d
        .chars()
        .enumerate()
        .map(|(i, c)| {
            let v = if c == 'X' {
                10
            } else {
                c.to_digit(10).unwrap_or(0)
            };
            v * (10 - i as u32)
        })
        .sum();
    sum.is_multiple_of(11)
}

fn isbn13(s: &str) -> bool {
    let d = isbn_digits(s);
    if !matches_re!(r"^(?:[0-9]{13})$", &d) {
        return false;
    }
    let sum: u32 = d
        .chars()
        .enumerate()
        .map(|(i, c)| c.to_digit(10).unwrap_or(0) * if i % 2 == 0 { 1 } else { 3 })
        .sum();
    sum.is_multiple_of(10)
}

fn credit_card(s: &str) -> bool {
    let digits: String = s.chars().filter(char::is_ascii_digit).collect();
    if !matches_re!(
        r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|(222[1-9]|22[3-9][0-9]|2[3-6][0-9]{2}|27[01][0-9]|2720)[0-9]{12}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11}|6[27][0-9]{14})$",
        &digits
    ) {
        return false;
    }
    // Luhn.
    let mut sum = 0;
    for (i, c) in digits.chars().rev().enumerate() {
        let mut v = c.to_digit(10).unwrap_or(0);
        if i % 2 == 1 {
            v *= 2;
            if v > 9 {
                v -= 9;
            }
        }
        sum += v;
    }
    sum % 10 == 0
}

fn valid_date(s: &str) -> bool {
    if !matches_re!(r"^\d{4}-\d{2}-\d{2}$", s) {
        return false;
    }
    let y: u32 = s[0..4].parse().unwrap_or(0);
    let m: u32 = s[5..7].parse().unwrap_or(0);
    let d: u32 = s[8..10].parse().unwrap_or(0);
    let leap = (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400);
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// strfmt's date-time: RFC 3339 (with or without fractional seconds or a zone), or the
/// reduced-precision `2006-01-02T15:04` forms it also accepts.
fn valid_date_time(s: &str) -> bool {
    if !matches_re!(
        r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:\d{2}|[+-]\d{4})?$",
        s
    ) {
        return false;
    }
    let h: u32 = s[11..13].parse().unwrap_or(99);
    let min: u32 = s[14..16].parse().unwrap_or(99);
    valid_date(&s[..10]) && h < 24 && min < 60
}

/// Go's `time.ParseDuration`, or strfmt's `<n> <unit>` forms (`3 days`, `1w`).
fn valid_duration(s: &str) -> bool {
    matches_re!(
        r"^[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$",
        s
    ) || s == "0"
        || matches_re!(
            r"^((\d+)\s*(ns|us|µs|ms|s|m|h|d|w|nanoseconds?|microseconds?|milliseconds?|seconds?|minutes?|hours?|days?|weeks?|mins?|secs?|hrs?))+$",
            s
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        let cases = [
            ("uuid", "6ba7b810-9dad-11d1-80b4-00c04fd430c8", true),
            ("uuid", "nope", false),
            ("ipv4", "1.2.3.4", true),
            ("ipv4", "1.2.3", false),
            ("ipv6", "::1", true),
            ("ipv6", "1.2.3.4", false),
            ("cidr", "10.0.0.0/8", true),
            ("cidr", "10.0.0.0/33", false),
            ("mac", "00:00:5e:00:53:01", true),
            ("mac", "00:00:5e", false),
            ("date", "2024-02-29", true),
            ("date", "2023-02-29", false),
            ("date-time", "2024-01-02T03:04:05Z", true),
            ("date-time", "2024-01-02T03:04:05.123+01:00", true),
            ("date-time", "yesterday", false),
            ("byte", "aGVsbG8=", true),
            ("byte", "!!", false),
            ("duration", "1h30m", true),
            ("duration", "3 days", true),
            ("duration", "soon", false),
            ("hostname", "example.com", true),
            ("hostname", "-bad", false),
            ("email", "a@b.c", true),
            ("email", "nope", false),
            ("uri", "https://x/y", true),
            ("uri", "x y", false),
            ("k8s-short-name", "abc", true),
            ("k8s-short-name", "1abc", false),
            ("k8s-long-name", "a.b.c", true),
            ("isbn10", "0321751043", true),
            ("isbn13", "978-0321751041", true),
            ("creditcard", "4111 1111 1111 1111", true),
            ("hexcolor", "#fff", true),
            ("rgbcolor", "rgb(1, 2, 255)", true),
            ("ssn", "111-11-1111", true),
            ("bsonobjectid", "507f1f77bcf86cd799439011", true),
        ];
        for (f, s, want) in cases {
            assert_eq!(valid(f, s), want, "{f} {s}");
        }
    }

    #[test]
    fn strips_unsupported() {
        assert_eq!(effective("string", false, "date-time"), "date-time");
        assert_eq!(effective("string", false, "int32"), "");
        assert_eq!(effective("integer", false, "int32"), "int32");
        assert_eq!(effective("integer", false, "date"), "");
        assert_eq!(effective("object", false, "date"), "");
        assert_eq!(effective("", true, "uuid"), "uuid");
    }
}
