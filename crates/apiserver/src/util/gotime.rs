//! Go's `time.Parse(time.RFC3339, …)` errors, which clients see when a `metav1.Time` field of a
//! body does not parse (`parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as
//! "2006"`).

/// Go's `time.RFC3339` layout.
pub const RFC3339: &str = "2006-01-02T15:04:05Z07:00";

fn quote(s: &str) -> String {
    format!("{s:?}")
}

fn cannot_parse(value: &str, rest: &str, element: &str) -> String {
    format!(
        "parsing time {} as {}: cannot parse {} as {}",
        quote(value),
        quote(RFC3339),
        quote(rest),
        quote(element)
    )
}

fn out_of_range(value: &str, what: &str) -> String {
    format!("parsing time {}: {what} out of range", quote(value))
}

/// Reads a number as Go's `getnum`: one or two digits (`fixed`: exactly two).
fn two_digits(s: &str, fixed: bool) -> Option<(u32, &str)> {
    let b = s.as_bytes();
    let digit = |i: usize| {
        b.get(i)
            .filter(|c| c.is_ascii_digit())
            .map(|c| u32::from(c - b'0'))
    };
    let first = digit(0)?;
    match digit(1) {
        Some(second) => Some((first * 10 + second, &s[2..])),
        None if fixed => None,
        None => Some((first, &s[1..])),
    }
}

fn days_in(month: u32, year: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `Ok` when `value` parses as RFC 3339 the way Go's `time.Parse` does, else Go's message.
pub fn parse_rfc3339(value: &str) -> Result<(), String> {
    let mut rest = value;
    // 2006
    let year = match rest
        .get(..4)
        .filter(|y| y.bytes().all(|c| c.is_ascii_digit()))
    {
        Some(y) => {
            rest = &rest[4..];
            y.parse::<u32>().unwrap_or_default()
        }
        None => return Err(cannot_parse(value, rest, "2006")),
    };
    let literal = |rest: &mut &str, lit: &str| -> Result<(), String> {
        match rest.strip_prefix(lit) {
            Some(tail) => {
                *rest = tail;
                Ok(())
            }
            None => Err(cannot_parse(value, rest, lit)),
        }
    };
    // Each numeric element: layout text, fixed width, valid range, range name.
    let number = |rest: &mut &str, element: &str, fixed: bool, max: u32, min: u32, name: &str| {
        match two_digits(rest, fixed) {
            None => Err(cannot_parse(value, rest, element)),
            Some((n, tail)) => {
                *rest = tail;
                if n < min || n > max {
                    Err(out_of_range(value, name))
                } else {
                    Ok(n)
                }
            }
        }
    };
    literal(&mut rest, "-")?;
    let month = number(&mut rest, "01", true, 12, 1, "month")?;
    literal(&mut rest, "-")?;
    let day = number(&mut rest, "02", true, 31, 1, "day")?;
    literal(&mut rest, "T")?;
    number(&mut rest, "15", false, 23, 0, "hour")?;
    literal(&mut rest, ":")?;
    number(&mut rest, "04", true, 59, 0, "minute")?;
    literal(&mut rest, ":")?;
    number(&mut rest, "05", true, 59, 0, "second")?;
    // A fractional second the layout does not name is accepted.
    let b = rest.as_bytes();
    if b.len() >= 2 && matches!(b[0], b'.' | b',') && b[1].is_ascii_digit() {
        let digits = rest[1..].bytes().take_while(u8::is_ascii_digit).count();
        rest = &rest[1 + digits..];
    }
    // Z07:00
    if let Some(tail) = rest.strip_prefix('Z') {
        rest = tail;
    } else {
        let b = rest.as_bytes();
        let ok = b.len() >= 6
            && matches!(b[0], b'+' | b'-')
            && b[1].is_ascii_digit()
            && b[2].is_ascii_digit()
            && b[3] == b':'
            && b[4].is_ascii_digit()
            && b[5].is_ascii_digit();
        if !ok {
            return Err(cannot_parse(value, rest, "Z07:00"));
        }
        rest = &rest[6..];
    }
    if !rest.is_empty() {
        return Err(format!(
            "parsing time {}: extra text: {}",
            quote(value),
            quote(rest)
        ));
    }
    if day > days_in(month, year) {
        return Err(out_of_range(value, "day"));
    }
    Ok(())
}

/// The instant of an RFC 3339 time Go's `time.Parse` accepts (`None` otherwise).
pub fn parse_timestamp(value: &str) -> Option<jiff::Timestamp> {
    parse_rfc3339(value).ok()?;
    value.parse::<jiff::Timestamp>().ok()
}

/// A `type: date` table cell as upstream's `ConvertToHumanReadableDateType` writes it: the
/// age of `value` in `HumanDuration` form (`5s`, `3m`), `<unknown>` for the zero time and
/// `<invalid>` for a value that does not parse.
pub fn human_age(value: &str, now: jiff::Timestamp) -> String {
    let Some(then) = parse_timestamp(value) else {
        return "<invalid>".into();
    };
    // Go's zero time, 0001-01-01T00:00:00Z.
    if then.as_second() == -62_135_596_800 && then.subsec_nanosecond() == 0 {
        return "<unknown>".into();
    }
    crate::util::duration::human_duration(now.duration_since(then).as_secs())
}

/// What `metav1.Time`'s JSON decoding says of `value`: `null` is the zero time, a string must
/// be RFC 3339, anything else is not a string.
pub fn check_time_value(value: &serde_json::Value) -> Result<(), String> {
    use serde_json::Value;
    match value {
        Value::Null => Ok(()),
        Value::String(s) => parse_rfc3339(s),
        Value::Bool(_) => Err("json: cannot unmarshal bool into Go value of type string".into()),
        Value::Number(_) => {
            Err("json: cannot unmarshal number into Go value of type string".into())
        }
        Value::Array(_) => Err("json: cannot unmarshal array into Go value of type string".into()),
        Value::Object(_) => {
            Err("json: cannot unmarshal object into Go value of type string".into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_errors_read_as_go() {
        assert!(parse_rfc3339("2024-01-02T03:04:05Z").is_ok());
        assert!(parse_rfc3339("2024-02-29T03:04:05.123+02:00").is_ok());
        assert_eq!(
            parse_rfc3339("x").unwrap_err(),
            r#"parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006""#
        );
        assert_eq!(
            parse_rfc3339("").unwrap_err(),
            r#"parsing time "" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "2006""#
        );
        assert_eq!(
            parse_rfc3339("2024/01/02").unwrap_err(),
            r#"parsing time "2024/01/02" as "2006-01-02T15:04:05Z07:00": cannot parse "/01/02" as "-""#
        );
        assert_eq!(
            parse_rfc3339("2024-13-02T03:04:05Z").unwrap_err(),
            r#"parsing time "2024-13-02T03:04:05Z": month out of range"#
        );
        assert_eq!(
            parse_rfc3339("2023-02-29T03:04:05Z").unwrap_err(),
            r#"parsing time "2023-02-29T03:04:05Z": day out of range"#
        );
        assert_eq!(
            parse_rfc3339("2024-01-02T03:04:05").unwrap_err(),
            r#"parsing time "2024-01-02T03:04:05" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "Z07:00""#
        );
        assert_eq!(
            parse_rfc3339("2024-01-02T03:04:05Zjunk").unwrap_err(),
            r#"parsing time "2024-01-02T03:04:05Zjunk": extra text: "junk""#
        );
        assert_eq!(
            check_time_value(&serde_json::json!(5)).unwrap_err(),
            "json: cannot unmarshal number into Go value of type string"
        );
        assert!(check_time_value(&serde_json::Value::Null).is_ok());
    }

    #[test]
    fn date_cells_are_human_ages() {
        let now: jiff::Timestamp = "2024-05-01T12:00:00Z".parse().unwrap();
        assert_eq!(human_age("2024-05-01T11:59:55Z", now), "5s");
        assert_eq!(human_age("2024-05-01T11:57:00Z", now), "3m");
        assert_eq!(human_age("2024-05-01T14:00:00+02:00", now), "0s");
        assert_eq!(human_age("2024-04-28T12:00:00Z", now), "3d");
        assert_eq!(human_age("0001-01-01T00:00:00Z", now), "<unknown>");
        assert_eq!(human_age("yesterday", now), "<invalid>");
        assert_eq!(human_age("2024-05-01T12:00:10Z", now), "<invalid>");
    }
}
