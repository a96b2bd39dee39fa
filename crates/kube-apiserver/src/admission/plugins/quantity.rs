//! Resource quantities (`resource.Quantity`) compared by value, as upstream's `Cmp` and
//! semantic equality do: `100m` equals `0.1`, `1Ki` equals `1024`.

use std::cmp::Ordering;

use serde_json::{Map, Value};

/// A quantity's value in nano-units (the finest suffix's resolution) (saturating far beyond any real quantity), or `None` when
/// the text is not a quantity.
pub fn nano_value(text: &str) -> Option<i128> {
    let text = text.trim();
    let (negative, rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let number_end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(number_end);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
        return None;
    }
    // value = digits * 10^(exp10 - fraction length) * 2^exp2
    let (exp10, exp2): (i32, u32) = match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        s if s.starts_with(['e', 'E']) => (s[1..].parse().ok()?, 0),
        _ => return None,
    };
    let mut digits: i128 = 0;
    for c in whole.chars().chain(fraction.chars()) {
        digits = digits
            .saturating_mul(10)
            .saturating_add(i128::from(c.to_digit(10)?));
    }
    let scale = exp10 + 9 - i32::try_from(fraction.len()).ok()?;
    let mut value = digits.saturating_mul(1i128 << exp2);
    if scale >= 0 {
        for _ in 0..scale.min(40) {
            value = value.saturating_mul(10);
        }
    } else {
        // Finer than nano: round up, as upstream rounds quantities to their scale.
        let divisor = 10i128.checked_pow(scale.unsigned_abs().min(38))?;
        value = (value + divisor - 1) / divisor;
    }
    Some(if negative { -value } else { value })
}

/// Compares two quantities by value; `None` if either does not parse.
pub fn compare(a: &str, b: &str) -> Option<Ordering> {
    Some(nano_value(a)?.cmp(&nano_value(b)?))
}

/// Whether two resource lists (`{"cpu": "100m", …}`) hold the same resources with equal
/// values (upstream's semantic equality of `ResourceList`).
pub fn lists_equal(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    a.len() == b.len()
        && a.iter().all(|(name, qa)| {
            b.get(name)
                .is_some_and(|qb| match (qa.as_str(), qb.as_str()) {
                    (Some(x), Some(y)) => compare(x, y) == Some(Ordering::Equal),
                    _ => qa == qb,
                })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_compare_by_value() {
        assert_eq!(compare("100m", "0.1"), Some(Ordering::Equal));
        assert_eq!(compare("1Ki", "1024"), Some(Ordering::Equal));
        assert_eq!(compare("1Gi", "1G"), Some(Ordering::Greater));
        assert_eq!(compare("2Gi", "3Gi"), Some(Ordering::Less));
        assert_eq!(compare("1e3", "1k"), Some(Ordering::Equal));
        assert_eq!(compare("-1", "0"), Some(Ordering::Less));
        assert_eq!(compare("1Ei", "1152921504606846976"), Some(Ordering::Equal));
        assert_eq!(nano_value("1.5"), Some(1_500_000_000));
        assert_eq!(nano_value("abc"), None);
        assert_eq!(nano_value("1Xi"), None);
        assert_eq!(nano_value(""), None);
    }
}
