//! Resource quantities (upstream `resource.Quantity`): parsing, exact arithmetic at nano
//! precision (finer amounts round up, as upstream), comparison and the canonical text
//! (`1500m`, `2Gi`, `1k`) upstream prints in quota messages and statuses.

use std::cmp::Ordering;
use std::fmt;

/// How a quantity prints (upstream `resource.Format`); sums keep the left side's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    /// Powers of ten with SI suffixes (`m`, `k`, `M`, ...), and plain numbers.
    #[default]
    DecimalSI,
    /// Powers of 1024 (`Ki`, `Mi`, ...).
    BinarySI,
    /// `e<n>` exponents.
    DecimalExponent,
}

/// A quantity as a signed number of nano-units.
#[derive(Clone, Copy, Debug, Default)]
pub struct Quantity {
    nanos: i128,
    format: Format,
}

/// Why a text is no quantity.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// The text does not have a quantity's shape (upstream `ErrFormatWrong`).
    #[error(
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )]
    Format,
    /// The suffix is unknown (upstream `ErrSuffix`).
    #[error("unable to parse quantity's suffix")]
    Suffix,
    /// Too large to be represented here.
    #[error("quantity is too large")]
    TooLarge,
}

const NANO: i128 = 1_000_000_000;

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

/// `a / b` rounded away from zero (upstream rounds finer-than-nano amounts up).
fn div_away_from_zero(a: i128, b: i128) -> i128 {
    let q = a / b;
    if a % b == 0 {
        q
    } else if (a < 0) == (b < 0) {
        q + 1
    } else {
        q - 1
    }
}

impl Quantity {
    /// `value` whole units, printed as a plain number.
    pub fn from_units(value: i64) -> Self {
        Quantity {
            nanos: i128::from(value) * NANO,
            format: Format::DecimalSI,
        }
    }

    /// Zero, printed as `0`.
    pub fn zero() -> Self {
        Quantity::default()
    }

    /// Parses `text` as upstream's `ParseQuantity`.
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(QuantityError::Format);
        }
        let (negative, rest) = match text.as_bytes()[0] {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(number_end);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
            return Err(QuantityError::Format);
        }
        if !suffix
            .chars()
            .all(|c| "eEinumkKMGTP+-".contains(c) || c.is_ascii_digit())
        {
            return Err(QuantityError::Format);
        }
        let (base, exponent, format) = parse_suffix(suffix)?;
        let digits = format!("{whole}{fraction}");
        let digits = digits.trim_start_matches('0');
        if digits.len() > 36 {
            return Err(QuantityError::TooLarge);
        }
        let mantissa: i128 = if digits.is_empty() {
            0
        } else {
            digits.parse().map_err(|_| QuantityError::Format)?
        };
        // value = mantissa × 10^-fraction × base^exponent, in nanos.
        let mut numerator = mantissa;
        let mut denominator: i128 = 1;
        let mut ten_exp: i32 = 9 - fraction.len() as i32;
        if base == 10 {
            ten_exp += exponent;
        } else {
            for _ in 0..exponent {
                numerator = numerator.checked_mul(1024).ok_or(QuantityError::TooLarge)?;
            }
        }
        if ten_exp >= 0 {
            for _ in 0..ten_exp {
                numerator = numerator.checked_mul(10).ok_or(QuantityError::TooLarge)?;
            }
        } else {
            for _ in 0..(-ten_exp).min(40) {
                denominator *= 10;
            }
        }
        let mut nanos = div_away_from_zero(numerator, denominator);
        if negative {
            nanos = -nanos;
        }
        Ok(Quantity { nanos, format })
    }

    /// Whether the quantity is zero.
    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    /// Whether the quantity is below zero.
    pub fn is_negative(&self) -> bool {
        self.nanos < 0
    }

    /// `self + other`; a zero left side takes the right side's format (upstream `Add`).
    pub fn add(&self, other: &Quantity) -> Quantity {
        Quantity {
            nanos: self.nanos.saturating_add(other.nanos),
            format: if self.nanos == 0 {
                other.format
            } else {
                self.format
            },
        }
    }

    /// `self - other`, in the left side's format (upstream `Sub`).
    pub fn sub(&self, other: &Quantity) -> Quantity {
        Quantity {
            nanos: self.nanos.saturating_sub(other.nanos),
            format: if self.nanos == 0 {
                other.format
            } else {
                self.format
            },
        }
    }

    /// The value in thousandths, rounded up (upstream `MilliValue`).
    pub fn milli_value(&self) -> i128 {
        div_away_from_zero(self.nanos, 1_000_000)
    }
}

/// `(base, exponent, format)` of a suffix.
fn parse_suffix(suffix: &str) -> Result<(i128, i32, Format), QuantityError> {
    let decimal = |e| Ok((10, e, Format::DecimalSI));
    let binary = |e| Ok((2, e, Format::BinarySI));
    match suffix {
        "" => decimal(0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => binary(1),
        "Mi" => binary(2),
        "Gi" => binary(3),
        "Ti" => binary(4),
        "Pi" => binary(5),
        "Ei" => binary(6),
        _ => {
            let exp = suffix
                .strip_prefix('e')
                .or_else(|| suffix.strip_prefix('E'))
                .ok_or(QuantityError::Suffix)?;
            let exp: i32 = exp.parse().map_err(|_| QuantityError::Suffix)?;
            if !(-60..=60).contains(&exp) {
                return Err(QuantityError::TooLarge);
            }
            Ok((10, exp, Format::DecimalExponent))
        }
    }
}

fn decimal_suffix(exponent: i32, format: Format) -> String {
    if format == Format::DecimalSI {
        let si = match exponent {
            -9 => Some("n"),
            -6 => Some("u"),
            -3 => Some("m"),
            0 => Some(""),
            3 => Some("k"),
            6 => Some("M"),
            9 => Some("G"),
            12 => Some("T"),
            15 => Some("P"),
            18 => Some("E"),
            _ => None,
        };
        if let Some(si) = si {
            return si.to_string();
        }
    }
    if exponent == 0 {
        String::new()
    } else {
        format!("e{exponent}")
    }
}

impl fmt::Display for Quantity {
    /// Upstream's canonical form (`CanonicalizeBytes`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.nanos < 0 { "-" } else { "" };
        let magnitude = self.nanos.unsigned_abs();
        if self.format == Format::BinarySI
            && magnitude >= 1024 * NANO as u128
            && magnitude.is_multiple_of(NANO as u128)
        {
            let mut amount = magnitude / NANO as u128;
            let mut exponent = 0;
            while amount.is_multiple_of(1024) && exponent < 6 {
                amount /= 1024;
                exponent += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][exponent];
            return write!(f, "{sign}{amount}{suffix}");
        }
        if magnitude == 0 {
            return f.write_str("0");
        }
        let format = if self.format == Format::BinarySI {
            Format::DecimalSI
        } else {
            self.format
        };
        let mut amount = magnitude;
        let mut exponent: i32 = -9;
        while amount.is_multiple_of(10) {
            amount /= 10;
            exponent += 1;
        }
        match exponent.rem_euclid(3) {
            1 => {
                amount *= 10;
                exponent -= 1;
            }
            2 => {
                amount *= 100;
                exponent -= 2;
            }
            _ => {}
        }
        write!(f, "{sign}{amount}{}", decimal_suffix(exponent, format))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(text: &str) -> Quantity {
        Quantity::parse(text).unwrap()
    }

    #[test]
    fn canonical_text_is_upstreams() {
        for (input, canonical) in [
            ("1", "1"),
            ("1000m", "1"),
            ("1500m", "1500m"),
            ("0.5", "500m"),
            ("2000", "2k"),
            ("1500", "1500"),
            ("1Gi", "1Gi"),
            ("1024Mi", "1Gi"),
            ("1536Mi", "1536Mi"),
            ("512", "512"),
            ("0", "0"),
            ("1e3", "1e3"),
            ("1.5e3", "1500"),
            ("100M", "100M"),
            ("-2", "-2"),
            ("1n", "1n"),
            ("0.1n", "1n"),
            ("+3", "3"),
        ] {
            assert_eq!(q(input).to_string(), canonical, "{input}");
        }
    }

    #[test]
    fn malformed_quantities_are_refused() {
        for bad in ["", "abc", "1.2.3", "1Ki2", "1K", "1x", "."] {
            assert!(Quantity::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sums_compare_numerically_and_keep_the_left_format() {
        let sum = q("500m").add(&q("1"));
        assert_eq!(sum.to_string(), "1500m");
        assert_eq!(q("1Gi").add(&q("1Gi")).to_string(), "2Gi");
        assert_eq!(Quantity::zero().add(&q("1Gi")).to_string(), "1Gi");
        assert_eq!(q("1Gi"), q("1073741824"));
        assert!(q("1") > q("999m"));
        assert_eq!(q("2").sub(&q("2")).to_string(), "0");
        assert_eq!(q("1500m").milli_value(), 1500);
    }
}
