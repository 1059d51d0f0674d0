//! Exact decimal values in hundredths.
//!
//! Every weight, keyword score and threshold of the seed is a multiple of
//! 0.01. Keeping them as integers makes the band boundaries exact: 0.75 is
//! CRITICAL and 0.7499 is not, whatever floating point would have said.

use std::fmt;

use serde::{Serialize, Serializer};

/// A value in `0.00..=1.00`, stored as an integer number of hundredths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Hundredths(u16);

impl Hundredths {
    /// 0.00
    pub const ZERO: Hundredths = Hundredths(0);
    /// 1.00
    pub const ONE: Hundredths = Hundredths(100);

    /// `n` hundredths, when `n <= 100`.
    pub const fn new(n: u16) -> Option<Hundredths> {
        if n <= 100 { Some(Hundredths(n)) } else { None }
    }

    /// The number of hundredths.
    pub const fn get(self) -> u16 {
        self.0
    }

    /// Converts a decimal such as 0.75; `None` unless it lies in `[0, 1]` and
    /// is a whole number of hundredths (within 1e-9).
    pub fn from_f64(v: f64) -> Option<Hundredths> {
        if !v.is_finite() || !(0.0..=1.0).contains(&v) {
            return None;
        }
        let scaled = v * 100.0;
        let rounded = scaled.round();
        if (scaled - rounded).abs() > 1e-9 {
            return None;
        }
        // `rounded` is within 0..=100 here.
        Hundredths::new(rounded as u16)
    }

    /// The value as `f64` (for JSON output).
    pub fn as_f64(self) -> f64 {
        f64::from(self.0) / 100.0
    }

    /// Formats a sum of hundredths (possibly above 1.00) as `1.10`.
    pub fn format_sum(sum: u32) -> String {
        format!("{}.{:02}", sum / 100, sum % 100)
    }
}

impl fmt::Display for Hundredths {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:02}", self.0 / 100, self.0 % 100)
    }
}

impl Serialize for Hundredths {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.as_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_exact_hundredths_only() {
        assert_eq!(Hundredths::from_f64(0.3), Hundredths::new(30));
        assert_eq!(Hundredths::from_f64(0.07), Hundredths::new(7));
        assert_eq!(Hundredths::from_f64(1.0), Some(Hundredths::ONE));
        assert_eq!(Hundredths::from_f64(0.305), None);
        assert_eq!(Hundredths::from_f64(1.01), None);
        assert_eq!(Hundredths::from_f64(-0.1), None);
        assert_eq!(Hundredths::from_f64(f64::NAN), None);
    }

    #[test]
    fn display() {
        assert_eq!(Hundredths::new(5).unwrap().to_string(), "0.05");
        assert_eq!(Hundredths::ONE.to_string(), "1.00");
        assert_eq!(Hundredths::format_sum(110), "1.10");
    }
}
