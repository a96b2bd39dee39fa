//! The `Age` table cell (upstream `translateTimestampSince` with `duration.HumanDuration`).

use apiserver::util::duration::human_duration;

/// The human duration since an RFC 3339 timestamp, or `<unknown>` without one.
pub fn translate_timestamp_since(timestamp: Option<&str>) -> String {
    let Some(ts) = timestamp.and_then(|t| t.parse::<jiff::Timestamp>().ok()) else {
        return "<unknown>".into();
    };
    human_duration(jiff::Timestamp::now().as_second() - ts.as_second())
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
