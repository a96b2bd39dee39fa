//! The `Age` table cell (upstream `translateTimestampSince` with `duration.HumanDuration`).

/// The human duration since an RFC 3339 timestamp, or `<unknown>` without one.
pub fn translate_timestamp_since(timestamp: Option<&str>) -> String {
    let Some(ts) = timestamp.and_then(|t| t.parse::<jiff::Timestamp>().ok()) else {
        return "<unknown>".into();
    };
    human_duration(jiff::Timestamp::now().as_second() - ts.as_second())
}

/// Two significant units at most, coarser as the duration grows (`45s`, `5m30s`, `3h4m`,
/// `5d2h`, `2y3d`).
pub fn human_duration(seconds: i64) -> String {
    let pair = |big: i64, big_unit: &str, small: i64, small_unit: &str| {
        if small == 0 {
            format!("{big}{big_unit}")
        } else {
            format!("{big}{big_unit}{small}{small_unit}")
        }
    };
    let minutes = seconds / 60;
    let hours = seconds / 3600;
    match seconds {
        s if s < -1 => "<invalid>".into(),
        s if s < 0 => "0s".into(),
        s if s < 120 => format!("{s}s"),
        _ if minutes < 10 => pair(minutes, "m", seconds % 60, "s"),
        _ if minutes < 180 => format!("{minutes}m"),
        _ if hours < 8 => pair(hours, "h", minutes % 60, "m"),
        _ if hours < 48 => format!("{hours}h"),
        _ if hours < 24 * 8 => pair(hours / 24, "d", hours % 24, "h"),
        _ if hours < 24 * 365 * 2 => format!("{}d", hours / 24),
        _ if hours < 24 * 365 * 8 => pair(hours / 24 / 365, "y", (hours / 24) % 365, "d"),
        _ => format!("{}y", hours / 24 / 365),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations() {
        for (secs, text) in [
            (-2, "<invalid>"),
            (-1, "0s"),
            (45, "45s"),
            (330, "5m30s"),
            (600, "10m"),
            (3 * 3600 + 240, "3h4m"),
            (20 * 3600, "20h"),
            (5 * 86400 + 7200, "5d2h"),
            (100 * 86400, "100d"),
            (2 * 365 * 86400 + 3 * 86400, "2y3d"),
        ] {
            assert_eq!(human_duration(secs), text, "{secs}");
        }
        assert_eq!(translate_timestamp_since(None), "<unknown>");
    }
}
