//! RFC 8785 JSON Canonicalization Scheme (JCS), written for mnemo.
//!
//! Pure functions, no I/O. Object members are sorted by the UTF-16 code units
//! of their names, strings use the minimal JSON escapes, and numbers are
//! printed as ECMAScript's `Number.prototype.toString` prints an IEEE-754
//! double (via `ryu-js`).

use serde_json::Value;
use std::fmt::Write as _;

/// Canonical JSON text of `value` (RFC 8785).
pub fn canonicalize(value: &Value) -> String {
    let mut out = String::with_capacity(256);
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<(&String, &Value)> = map.iter().collect();
            keys.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push('{');
            for (i, (k, v)) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, k);
                out.push(':');
                write_value(out, v);
            }
            out.push('}');
        }
    }
}

/// 2^53: integers strictly below this magnitude print identically as i64 and as f64.
const EXACT_INT: u64 = 1 << 53;

fn write_number(out: &mut String, n: &serde_json::Number) {
    if let Some(u) = n.as_u64()
        && u < EXACT_INT
    {
        let _ = write!(out, "{u}");
        return;
    }
    if let Some(i) = n.as_i64()
        && i.unsigned_abs() < EXACT_INT
    {
        let _ = write!(out, "{i}");
        return;
    }
    let f = n.as_f64().unwrap_or(0.0);
    write_f64(out, f);
}

/// ECMAScript `Number::toString` of a finite double (`-0` prints as `0`).
pub fn write_f64(out: &mut String, f: f64) {
    if f == 0.0 {
        out.push('0');
        return;
    }
    if !f.is_finite() {
        // JSON cannot carry these; RFC 8785 says they are errors. serde_json
        // never produces them, so print null defensively.
        out.push_str("null");
        return;
    }
    let mut buf = ryu_js::Buffer::new();
    out.push_str(buf.format_finite(f));
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    let bytes = s.as_bytes();
    let mut run = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            b'\t' => "\\t",
            b'\n' => "\\n",
            0x0C => "\\f",
            b'\r' => "\\r",
            0..0x20 => "",
            _ => continue,
        };
        // Escapes are ASCII, so `run..i` falls on char boundaries.
        out.push_str(&s[run..i]);
        if esc.is_empty() {
            let _ = write!(out, "\\u{:04x}", b);
        } else {
            out.push_str(esc);
        }
        run = i + 1;
    }
    out.push_str(&s[run..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sorts_by_utf16_and_escapes() {
        // RFC 8785 §3.2.3 sorting example (subset).
        let v = json!({"\u{20ac}": "Euro Sign", "\r": "Carriage Return", "\u{fb33}": "Hebrew", "1": "One", "\u{1f600}": "Emoji", "\u{80}": "Control", "\u{f6}": "Latin"});
        assert_eq!(
            canonicalize(&v),
            "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{80}\":\"Control\",\"\u{f6}\":\"Latin\",\"\u{20ac}\":\"Euro Sign\",\"\u{1f600}\":\"Emoji\",\"\u{fb33}\":\"Hebrew\"}"
        );
    }

    #[test]
    fn numbers_follow_ecmascript() {
        let v: Value = serde_json::from_str(
            "[333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001, -0, 1e21, 1e20, 9007199254740993, -1.5e-7, 100]",
        )
        .unwrap_or(Value::Null);
        assert_eq!(
            canonicalize(&v),
            "[333333333.3333333,1e+30,4.5,0.002,1e-27,0,1e+21,100000000000000000000,9007199254740992,-1.5e-7,100]"
        );
    }

    #[test]
    fn ecmascript_number_edge_cases() {
        let cases: &[(f64, &str)] = &[
            (1e-7, "1e-7"),
            (123e-20, "1.23e-18"),
            (0.1, "0.1"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (295147905179352830000.0, "295147905179352830000"),
            (-0.000001, "-0.000001"),
            (1e-6, "0.000001"),
            (123456789012345680000.0, "123456789012345680000"),
            (4.35, "4.35"),
            (0.000001234, "0.000001234"),
        ];
        for (f, want) in cases {
            let mut out = String::new();
            write_f64(&mut out, *f);
            assert_eq!(&out, want, "{f:e}");
        }
    }

    #[test]
    fn control_characters() {
        let v = json!("\u{1}\u{1f}\u{7f}\u{2028}/");
        assert_eq!(canonicalize(&v), "\"\\u0001\\u001f\u{7f}\u{2028}/\"");
    }

    proptest::proptest! {
        /// RFC 8785 string escaping is ECMAScript's JSON.stringify, which
        /// for strings is also what serde_json writes.
        #[test]
        fn strings_escape_like_json_stringify(s in "\\PC*|[\\x00-\\x20\"\\\\\\x7f\u{2028}a\u{e9}\u{1f600}]{0,40}") {
            proptest::prop_assert_eq!(canonicalize(&Value::String(s.clone())), serde_json::to_string(&s).unwrap_or_default());
        }
    }
}
