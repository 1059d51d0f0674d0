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

/// Canonical JSON text of `value` without the object members at the paths
/// in `omit` (each a list of member names from the top, e.g.
/// `&["params", "signature"]`), as if they had been removed from a copy
/// first: the same text as cloning, removing and [`canonicalize`], without
/// the copy. A path that names no member omits nothing.
pub fn canonicalize_omitting(value: &Value, omit: &[&[&str]]) -> String {
    let mut out = String::with_capacity(256);
    write_omitting(&mut out, value, omit);
    out
}

fn write_omitting(out: &mut String, value: &Value, omit: &[&[&str]]) {
    let Value::Object(map) = value else {
        return write_value(out, value);
    };
    if omit.is_empty() {
        return write_value(out, value);
    }
    let mut keys: Vec<(&String, &Value)> = map
        .iter()
        .filter(|(k, _)| !omit.iter().any(|p| p.len() == 1 && p[0] == k.as_str()))
        .collect();
    keys.sort_by(|a, b| utf16_cmp(a.0, b.0));
    out.push('{');
    let mut below: Vec<&[&str]> = Vec::new();
    for (i, (k, v)) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(out, k);
        out.push(':');
        below.clear();
        below.extend(
            omit.iter()
                .filter(|p| p.len() > 1 && p[0] == k.as_str())
                .map(|p| &p[1..]),
        );
        write_omitting(out, v, &below);
    }
    out.push('}');
}

/// RFC 8785's member order: by UTF-16 code units. UTF-8 byte order is code
/// point order, which differs from UTF-16 order only between a character
/// above U+FFFF (a surrogate pair) and one in U+E000..=U+FFFF; a string
/// without any byte >= 0xEE holds neither, so bytes decide.
fn utf16_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    if a.bytes().chain(b.bytes()).all(|c| c < 0xEE) {
        a.as_bytes().cmp(b.as_bytes())
    } else {
        a.encode_utf16().cmp(b.encode_utf16())
    }
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
            keys.sort_by(|a, b| utf16_cmp(a.0, b.0));
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
    while let Some(off) = bytes[run..]
        .iter()
        .position(|&b| b < 0x20 || b == b'"' || b == b'\\')
    {
        let i = run + off;
        // Escapes are ASCII, so `run..i` falls on char boundaries.
        out.push_str(&s[run..i]);
        let b = bytes[i];
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x08 => out.push_str("\\b"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            0x0C => out.push_str("\\f"),
            b'\r' => out.push_str("\\r"),
            _ => {
                let _ = write!(out, "\\u{:04x}", b);
            }
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
    fn omitting_equals_removing_from_a_copy() {
        let v = json!({"params": {"signature": {"value": "x"}, "payload": {"post_compact_chain_hash": "h", "summary": 1}, "z\u{1f600}": 2, "z\u{fb33}": 3}, "signature": "top", "id": 1});
        let mut copy = v.clone();
        if let Some(p) = copy.get_mut("params").and_then(Value::as_object_mut) {
            p.remove("signature");
            if let Some(q) = p.get_mut("payload").and_then(Value::as_object_mut) {
                q.remove("post_compact_chain_hash");
            }
        }
        let omit: &[&[&str]] = &[
            &["params", "signature"],
            &["params", "payload", "post_compact_chain_hash"],
        ];
        assert_eq!(canonicalize_omitting(&v, omit), canonicalize(&copy));
        // The top-level "signature" stays: only the named paths go.
        assert!(canonicalize_omitting(&v, omit).contains("\"signature\":\"top\""));
        // Surrogate pairs sort before U+FB33 (UTF-16 order), also below an omission.
        assert!(canonicalize_omitting(&v, omit).contains("\"z\u{1f600}\":2,\"z\u{fb33}\":3"));
        // A path through a non-object, or naming nothing, omits nothing.
        let none: &[&[&str]] = &[&["id", "x"], &["missing"]];
        assert_eq!(canonicalize_omitting(&v, none), canonicalize(&v));
        assert_eq!(
            canonicalize_omitting(&json!([1, {"a": 2}]), omit),
            "[1,{\"a\":2}]"
        );
    }

    #[test]
    fn control_characters() {
        let v = json!("\u{1}\u{1f}\u{7f}\u{2028}/");
        assert_eq!(canonicalize(&v), "\"\\u0001\\u001f\u{7f}\u{2028}/\"");
    }

    proptest::proptest! {
        /// RFC 8785 string escaping is ECMAScript's JSON.stringify, which
        /// for strings is also what serde_json writes.
        /// The byte-order shortcut of member sorting is UTF-16 order.
        #[test]
        fn member_order_is_utf16_order(a in "\\PC{0,6}|[a\u{7f}\u{e9}\u{e000}\u{fb33}\u{ffff}\u{10000}\u{1f600}]{0,4}", b in "\\PC{0,6}|[a\u{7f}\u{e9}\u{e000}\u{fb33}\u{ffff}\u{10000}\u{1f600}]{0,4}") {
            proptest::prop_assert_eq!(utf16_cmp(&a, &b), a.encode_utf16().cmp(b.encode_utf16()));
        }

        #[test]
        fn strings_escape_like_json_stringify(s in "\\PC*|[\\x00-\\x20\"\\\\\\x7f\u{2028}a\u{e9}\u{1f600}]{0,40}") {
            proptest::prop_assert_eq!(canonicalize(&Value::String(s.clone())), serde_json::to_string(&s).unwrap_or_default());
        }
    }
}
