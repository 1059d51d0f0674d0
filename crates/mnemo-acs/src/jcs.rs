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
    let kept = |k: &str| !omit.iter().any(|p| p.len() == 1 && p[0] == k);
    let mut in_order;
    let mut sorted;
    let members: &mut dyn Iterator<Item = (&String, &Value)> = if members_in_order(map) {
        in_order = map.iter().filter(|(k, _)| kept(k));
        &mut in_order
    } else {
        let mut keys: Vec<(&String, &Value)> = map.iter().filter(|(k, _)| kept(k)).collect();
        keys.sort_by(|a, b| utf16_cmp(a.0, b.0));
        sorted = keys.into_iter();
        &mut sorted
    };
    out.push('{');
    let mut below: Vec<&[&str]> = Vec::new();
    for (i, (k, v)) in members.enumerate() {
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

/// Whether the map iterates its members in RFC 8785 order already (each
/// name before the next by UTF-16 code units). serde_json's map is a
/// `BTreeMap`, which iterates in byte order, so this holds unless a name
/// has a character at or above U+E000; then the members are sorted.
fn members_in_order(map: &serde_json::Map<String, Value>) -> bool {
    let mut keys = map.keys();
    let Some(mut prev) = keys.next() else {
        return true;
    };
    for k in keys {
        if utf16_cmp(prev, k) != std::cmp::Ordering::Less {
            return false;
        }
        prev = k;
    }
    true
}

/// Appends the canonical text of `value` to `out` (what [`canonicalize`]
/// returns, written into a buffer the caller keeps).
pub fn append_canonical(out: &mut String, value: &Value) {
    write_value(out, value);
}

/// Appends `s` as a canonical JSON string (quotes and minimal escapes).
pub fn append_string(out: &mut String, s: &str) {
    write_string(out, s);
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
            let mut in_order;
            let mut sorted;
            let members: &mut dyn Iterator<Item = (&String, &Value)> = if members_in_order(map) {
                in_order = map.iter();
                &mut in_order
            } else {
                let mut keys: Vec<(&String, &Value)> = map.iter().collect();
                keys.sort_by(|a, b| utf16_cmp(a.0, b.0));
                sorted = keys.into_iter();
                &mut sorted
            };
            out.push('{');
            for (i, (k, v)) in members.enumerate() {
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
    while let Some(i) = next_escape(bytes, run) {
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

/// Whether a byte needs an escape in a JSON string (RFC 8785 §3.2.2.2).
fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// The first index at or after `from` of a byte that needs an escape.
/// Eight bytes at a time: a word has such a byte exactly when one of its
/// bytes is below 0x20, or equals `"` or `\\` (the classic "has a zero
/// byte" test, which has no false negatives); that word is then searched
/// byte by byte.
fn next_escape(bytes: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let has_zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH != 0;
    let mut i = from;
    while let Some(chunk) = bytes.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        let below_space = w.wrapping_sub(ONES * 0x20) & !w & HIGH != 0;
        if below_space
            || has_zero(w ^ (ONES * u64::from(b'"')))
            || has_zero(w ^ (ONES * u64::from(b'\\')))
        {
            break;
        }
        i += 8;
    }
    bytes
        .get(i..)?
        .iter()
        .position(|&b| needs_escape(b))
        .map(|off| i + off)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-at-a-time search against the byte-by-byte definition, and
    /// the escaped text against serde_json's (the same minimal escapes,
    /// lowercase `\\u00xx`), on strings dense in the bytes at the edges
    /// (0x1f, 0x20, `"`, `\\`, 0x7f, 0x80, multi-byte characters).
    #[test]
    fn escape_search_agrees_with_the_byte_definition() {
        let alphabet: Vec<char> = [
            '\u{0}',
            '\u{8}',
            '\t',
            '\n',
            '\u{c}',
            '\r',
            '\u{1f}',
            ' ',
            '!',
            '"',
            '#',
            '[',
            '\\',
            ']',
            'a',
            '~',
            '\u{7f}',
            '\u{80}',
            '\u{e9}',
            '\u{20ac}',
            '\u{fb33}',
            '\u{1f600}',
        ]
        .to_vec();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for round in 0..3000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let len = (state % 40) as usize;
            let plain = round % 3 == 0;
            let text: String = (0..len)
                .map(|k| {
                    let r = state.rotate_left(k as u32 * 5);
                    if plain {
                        'x'
                    } else {
                        alphabet[(r % alphabet.len() as u64) as usize]
                    }
                })
                .collect();
            let b = text.as_bytes();
            for from in 0..=b.len() {
                let want = b[from..]
                    .iter()
                    .position(|&c| needs_escape(c))
                    .map(|o| from + o);
                assert_eq!(next_escape(b, from), want, "{text:?} from {from}");
            }
            let mut ours = String::new();
            write_string(&mut ours, &text);
            let theirs = serde_json::to_string(&text).unwrap_or_default();
            assert_eq!(ours, theirs, "{text:?}");
        }
    }

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

    /// The canonical text by the definition: members always sorted by
    /// their UTF-16 code units (what the in-order shortcut must equal).
    fn reference(out: &mut String, v: &Value) {
        match v {
            Value::Object(map) => {
                let mut keys: Vec<(&String, &Value)> = map.iter().collect();
                keys.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
                out.push('{');
                for (i, (k, v)) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&serde_json::to_string(k).unwrap_or_default());
                    out.push(':');
                    reference(out, v);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    reference(out, item);
                }
                out.push(']');
            }
            other => write_value(out, other),
        }
    }

    /// Objects whose names mix characters on both sides of the byte-order /
    /// UTF-16-order split (U+E000..U+FFFF against surrogate pairs), nested:
    /// the shortcut that keeps the map's own order when it is already
    /// canonical gives the text of always sorting, with and without omissions.
    #[test]
    fn member_order_shortcut_equals_always_sorting() {
        let alphabet = [
            'a',
            'b',
            'z',
            '\u{e9}',
            '\u{e000}',
            '\u{fb33}',
            '\u{ffff}',
            '\u{10000}',
            '\u{1f600}',
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut high = 0;
        for _ in 0..2000 {
            let mut outer = serde_json::Map::new();
            for _ in 0..(next() % 6) {
                let mut inner = serde_json::Map::new();
                for _ in 0..(next() % 5) {
                    let key: String = (0..1 + next() % 3)
                        .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                        .collect();
                    inner.insert(key, json!(next() % 100));
                }
                let key: String = (0..1 + next() % 3)
                    .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                    .collect();
                outer.insert(key, Value::Object(inner));
            }
            outer.insert("signature".into(), json!("s"));
            let v = Value::Object(outer);
            let mut want = String::new();
            reference(&mut want, &v);
            assert_eq!(canonicalize(&v), want);
            if !members_in_order(v.as_object().unwrap_or(&serde_json::Map::new())) {
                high += 1;
            }
            let mut copy = v.clone();
            if let Some(m) = copy.as_object_mut() {
                m.remove("signature");
            }
            let mut want = String::new();
            reference(&mut want, &copy);
            assert_eq!(canonicalize_omitting(&v, &[&["signature"]]), want);
        }
        // Both paths ran: maps out of UTF-16 order were met and sorted.
        assert!(high > 100, "{high}");
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
