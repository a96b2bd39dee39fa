//! Go's `time.ParseDuration` and `Duration.String`, for flags (`1m30s`) and `?timeout=`.

use std::time::Duration;

/// A duration string Go would reject.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("time: invalid duration \"{0}\"")]
pub struct InvalidDuration(pub String);

/// Parses a Go duration (`300ms`, `-1.5h`, `2h45m`, `0`). Negative values are returned as
/// `Err` only by callers that forbid them; this returns the absolute value and the sign.
pub fn parse_signed(input: &str) -> Result<(bool, Duration), InvalidDuration> {
    let err = || InvalidDuration(input.to_string());
    let mut s = input;
    let mut negative = false;
    if let Some(rest) = s.strip_prefix('-') {
        negative = true;
        s = rest;
    } else if let Some(rest) = s.strip_prefix('+') {
        s = rest;
    }
    if s == "0" {
        return Ok((negative, Duration::ZERO));
    }
    if s.is_empty() {
        return Err(err());
    }
    let mut total: f64 = 0.0;
    while !s.is_empty() {
        let num_end = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(s.len());
        let number = &s[..num_end];
        if number.is_empty() || number == "." {
            return Err(err());
        }
        let value: f64 = number.parse().map_err(|_| err())?;
        s = &s[num_end..];
        let unit_end = s
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(s.len());
        let unit = &s[..unit_end];
        s = &s[unit_end..];
        let scale = match unit {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(err()),
        };
        total += value * scale;
    }
    if !total.is_finite() || total > 9.3e9 {
        return Err(err());
    }
    Ok((negative, Duration::from_secs_f64(total)))
}

/// Parses a non-negative Go duration.
pub fn parse(input: &str) -> Result<Duration, InvalidDuration> {
    match parse_signed(input)? {
        (true, d) if !d.is_zero() => Err(InvalidDuration(input.to_string())),
        (_, d) => Ok(d),
    }
}

/// Formats like Go's `Duration.String` (`1m30s`, `500ms`, `0s`).
pub fn format(d: Duration) -> String {
    if d.is_zero() {
        return "0s".into();
    }
    let nanos = d.as_nanos();
    if nanos < 1_000 {
        return format!("{nanos}ns");
    }
    if nanos < 1_000_000 {
        return format!("{}µs", trim_float(nanos as f64 / 1e3));
    }
    if nanos < 1_000_000_000 {
        return format!("{}ms", trim_float(nanos as f64 / 1e6));
    }
    let total_secs = d.as_secs();
    let h = total_secs / 3600;
    let m = (total_secs % 3600) / 60;
    let s = (total_secs % 60) as f64 + f64::from(d.subsec_nanos()) / 1e9;
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if h > 0 || m > 0 {
        out.push_str(&format!("{m}m"));
    }
    out.push_str(&format!("{}s", trim_float(s)));
    out
}

fn trim_float(v: f64) -> String {
    let text = format!("{v:.9}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    text.to_string()
}

/// Upstream `duration.HumanDuration` for a number of seconds: two significant units at most,
/// coarser as the duration grows (`45s`, `5m30s`, `3h4m`, `5d2h`, `2y3d`).
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let days = (hours / 24) % 365;
        return if days == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{days}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_go_forms() {
        assert_eq!(parse("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse("1.5h").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse("0").unwrap(), Duration::ZERO);
        assert_eq!(parse("2h45m").unwrap(), Duration::from_secs(9900));
        assert!(parse("foo").is_err());
        assert!(parse("10").is_err());
        assert!(parse("").is_err());
        assert!(parse("-1s").is_err());
        assert_eq!(
            parse("foo").unwrap_err().to_string(),
            "time: invalid duration \"foo\""
        );
    }

    #[test]
    fn formats_like_go() {
        assert_eq!(format(Duration::from_secs(90)), "1m30s");
        assert_eq!(format(Duration::from_secs(60)), "1m0s");
        assert_eq!(format(Duration::from_millis(500)), "500ms");
        assert_eq!(format(Duration::ZERO), "0s");
        assert_eq!(format(Duration::from_secs(3600)), "1h0m0s");
    }
}
