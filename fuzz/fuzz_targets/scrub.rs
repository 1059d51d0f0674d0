//! Fuzz target for mnemo-scrub: no panic on any input, offsets valid and on
//! char boundaries, redactions sorted and disjoint, the output is the input
//! with the spans replaced, a redacted span's bytes (>= 8) never survive
//! (unless they also occur elsewhere in the input or inside a placeholder),
//! idempotency; and the same for the streaming form with tiny chunks.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mnemo_scrub::{Redaction, ReplacementStyle, Scrubber, StreamOptions};

fn check(input: &str, out: &str, reds: &[Redaction]) {
    let mut last = 0usize;
    let mut rebuilt = String::new();
    for r in reds {
        assert!(r.start < r.end && r.end <= input.len(), "{r:?}");
        assert!(r.start >= last, "overlap/unsorted");
        assert!(input.is_char_boundary(r.start) && input.is_char_boundary(r.end));
        rebuilt.push_str(&input[last..r.start]);
        rebuilt.push_str(&r.replacement);
        last = r.end;
    }
    rebuilt.push_str(&input[last..]);
    assert_eq!(rebuilt, out);
    for r in reds {
        let secret = &input[r.start..r.end];
        // (A span can also be a piece of a placeholder: "assword-as" is in
        // "[REDACTED:password-assignment]"; the fuzzer found that one.)
        let in_placeholder = reds.iter().any(|x| x.replacement.contains(secret));
        if secret.len() >= 8 && input.matches(secret).count() == 1 && !in_placeholder {
            assert!(!out.contains(secret), "redacted bytes survive");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(s) = Scrubber::default_rules() else {
        return;
    };
    // raw bytes: audit must not panic and must give valid spans
    let mut last = 0;
    for f in s.find_bytes(data) {
        assert!(f.start >= last && f.start < f.end && f.end <= data.len());
        last = f.end;
    }
    let text = String::from_utf8_lossy(data);
    let out = s.scrub(&text);
    check(&text, &out.text, &out.redactions);
    assert_eq!(s.scrub(&out.text).text, out.text, "not idempotent");
    let p = s.scrub_with(&text, ReplacementStyle::Pantheon);
    check(&text, &p.text, &p.redactions);

    // streaming with tiny chunks derived from the input
    let chunk = 1 + usize::from(data.first().copied().unwrap_or(0) % 64);
    let carry = usize::from(data.get(1).copied().unwrap_or(0) % 128);
    let opts = StreamOptions { chunk_size: chunk, carry, style: ReplacementStyle::Named };
    let mut sink = Vec::new();
    let mut reds = Vec::new();
    let stats = s
        .scrub_stream_with(text.as_bytes(), &mut sink, &opts, |r| reds.push(r))
        .unwrap_or_default();
    assert_eq!(stats.bytes_in as usize, text.len());
    let streamed = String::from_utf8(sink).unwrap_or_default();
    check(&text, &streamed, &reds);
});
