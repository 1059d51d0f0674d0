//! The one read of a transcript that serves the Guardian and the trail
//! (`read_transcript_keep`, `trail_of_read`) gives what the two separate
//! reads give, and the read in memory what the read line by line gives.

use mnemo_guardian::policy::Policy;
use mnemo_hooks::Host;
use mnemo_hooks::collapse::Limits;
use mnemo_hooks::io::{
    Kept, LOOKBACK, MAX_LINE, Transcript, read_transcript_keep, read_transcript_limits,
};
use mnemo_hooks::trail_hook::{trail_of_bytes, trail_of_file, trail_of_read};
use mnemo_trail::Extractor;
use mnemo_trail::parse::HostKind;
use std::path::{Path, PathBuf};

fn transcripts(tmp: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in [
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/claude"),
        concat!(env!("CARGO_MANIFEST_DIR"), "/../mnemo-trail/tests/golden"),
    ] {
        for f in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = f.path();
            if p.extension().is_some_and(|e| e == "jsonl")
                && p.file_name().is_none_or(|n| n != "codex.jsonl")
            {
                out.push(p);
            }
        }
    }
    // Odd lines: blank ones, a form feed before JSON, not UTF-8, not
    // JSON, a web fetch and its result, no newline at the end.
    let mut odd: Vec<u8> = Vec::new();
    odd.extend_from_slice(b"\n   \n");
    odd.extend_from_slice(br#"{"type":"user","uuid":"u1","message":{"content":"We decided to use port 8443; never touch prod."}}"#);
    odd.extend_from_slice(b"\n\x0c");
    odd.extend_from_slice(
        br#"{"type":"user","uuid":"u2","message":{"content":"after a form feed"}}"#,
    );
    odd.extend_from_slice(
        b"\n{\"type\":\"user\",\"uuid\":\"u3\",\"message\":{\"content\":\"bad \xff byte\"}}\n",
    );
    odd.extend_from_slice(b"not json\n");
    odd.extend_from_slice(br#"{"type":"assistant","uuid":"a1","message":{"content":[{"type":"text","text":"Running it."},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"cargo test -p api"}},{"type":"tool_use","id":"t2","name":"WebFetch","input":{"url":"https://e.x/doc"}}]}}"#);
    odd.push(b'\n');
    odd.extend_from_slice(br#"{"type":"user","uuid":"u4","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"Exit code 101\nerror[E0432]: unresolved import"},{"type":"tool_result","tool_use_id":"t2","content":"page"}]}}"#);
    odd.push(b'\n');
    odd.extend_from_slice(
        br#"{"type":"attachment","uuid":"at1","attachment":{"type":"file","filename":"notes.md"}}"#,
    );
    let p = tmp.join("odd.jsonl");
    assert!(std::fs::write(&p, &odd).is_ok());
    out.push(p);
    out
}

fn same(a: &Transcript, b: &Transcript, what: &str) {
    assert_eq!(a.entries, b.entries, "{what}");
    assert_eq!(a.bad, b.bad, "{what}");
    assert_eq!(a.problems, b.problems, "{what}");
    assert_eq!(a.start, b.start, "{what}");
    assert_eq!(a.boundary, b.boundary, "{what}");
    assert_eq!(a.last_prompt_id, b.last_prompt_id, "{what}");
    assert_eq!(a.folded, b.folded, "{what}");
    assert_eq!(a.represented, b.represented, "{what}");
}

/// An extractor for a Claude Code transcript.
fn kept_with_extractor() -> Kept {
    Kept {
        extractor: Some(Extractor::new(Some(HostKind::ClaudeCode))),
        ..Kept::default()
    }
}

#[test]
fn one_read_gives_the_guardian_and_the_trail_what_two_reads_give() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let policy = Policy::default();
    let files = transcripts(tmp.path());
    assert!(files.len() >= 12, "{files:?}");
    let mut lines_fed = 0;
    for f in &files {
        let what = f.display().to_string();
        let bytes = std::fs::read(f).unwrap_or_default();
        for collapse in [None, Some((&policy, Limits::default()))] {
            // The line-by-line read (a longest line under the file's
            // length keeps it from being read whole) beside the one read.
            let longest = bytes
                .split_inclusive(|&b| b == b'\n')
                .map(<[u8]>::len)
                .max()
                .unwrap_or(0);
            if longest < bytes.len() {
                let two = read_transcript_limits(
                    Host::ClaudeCode,
                    f,
                    bytes.len() - 1,
                    LOOKBACK,
                    collapse,
                );
                let one = read_transcript_limits(Host::ClaudeCode, f, MAX_LINE, LOOKBACK, collapse);
                same(&two, &one, &what);
            }
            let two = read_transcript_limits(Host::ClaudeCode, f, MAX_LINE, LOOKBACK, collapse);
            for budget in [1500, 120] {
                let mut kept = kept_with_extractor();
                let one = read_transcript_keep(
                    Host::ClaudeCode,
                    f,
                    MAX_LINE,
                    LOOKBACK,
                    collapse,
                    Some(&mut kept),
                );
                same(&two, &one, &what);
                assert!(kept.whole && kept.fed, "{what}: a small transcript is kept");
                assert_eq!(kept.bytes, bytes, "{what}");
                let a = trail_of_file(f, HostKind::ClaudeCode, budget);
                assert!(a.is_ok(), "{what}");
                let c = trail_of_bytes(&kept.bytes, HostKind::ClaudeCode, budget);
                assert_eq!(a, c, "{what}: trail of the bytes at {budget}");
                if let Some(x) = &kept.extractor {
                    lines_fed += x.lines();
                }
                let b = trail_of_read(kept, HostKind::ClaudeCode, budget);
                assert_eq!(Some(a), b, "{what}: trail at {budget}");
            }
            // Without an extractor: the bytes, and the same trail from them.
            let mut kept = Kept::default();
            let one = read_transcript_keep(
                Host::ClaudeCode,
                f,
                MAX_LINE,
                LOOKBACK,
                collapse,
                Some(&mut kept),
            );
            same(&two, &one, &what);
            assert!(kept.whole && !kept.fed, "{what}");
            assert_eq!(
                trail_of_read(kept, HostKind::ClaudeCode, 1500),
                Some(trail_of_file(f, HostKind::ClaudeCode, 1500)),
                "{what}"
            );
        }
    }
    assert!(lines_fed > 40, "{lines_fed}");
    // The odd file's trail holds what its lines say.
    let odd = files.last().map(PathBuf::as_path).unwrap_or(Path::new(""));
    let mut kept = kept_with_extractor();
    let t = read_transcript_keep(
        Host::ClaudeCode,
        odd,
        MAX_LINE,
        LOOKBACK,
        None,
        Some(&mut kept),
    );
    assert_eq!(t.bad, 3, "form feed, not UTF-8, not JSON: {:?}", t.entries);
    let trail = trail_of_read(kept, HostKind::ClaudeCode, 1500)
        .unwrap_or_else(|| Err("nothing kept".into()))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(trail.text.contains("cargo test -p api"), "{}", trail.text);
    assert!(trail.text.contains("8443"), "{}", trail.text);
}

/// A transcript with a boundary far enough in for a small look-back to
/// start inside a line: the read in memory and the read line by line take
/// the same lines (and line numbers) from the same start.
#[test]
fn a_look_back_reads_alike_in_memory_and_line_by_line() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut text = String::new();
    for i in 0..40 {
        text.push_str(&format!(
            "{{\"type\":\"user\",\"uuid\":\"u{i}\",\"message\":{{\"content\":\"message number {i} of the session\"}}}}\n"
        ));
        if i == 30 {
            text.push_str(r#"{"type":"system","subtype":"compact_boundary","uuid":"b1","compactMetadata":{"preservedSegment":{"headUuid":"u28","tailUuid":"u30"}}}"#);
            text.push('\n');
        }
    }
    let f = tmp.path().join("lookback.jsonl");
    assert!(std::fs::write(&f, &text).is_ok());
    let mut starts = std::collections::BTreeSet::new();
    for lookback in [0u64, 1, 90, 250, 1000, LOOKBACK] {
        for collapse in [None, Some((&Policy::default(), Limits::default()))] {
            let line_by_line =
                read_transcript_limits(Host::ClaudeCode, &f, text.len() - 1, lookback, collapse);
            let mut kept = kept_with_extractor();
            let whole = read_transcript_keep(
                Host::ClaudeCode,
                &f,
                MAX_LINE,
                lookback,
                collapse,
                Some(&mut kept),
            );
            same(&line_by_line, &whole, &format!("look-back {lookback}"));
            assert!(kept.whole, "{lookback}");
            // Only a region from the first byte feeds the trail's extractor.
            assert_eq!(kept.fed, whole.start == 0, "{lookback}");
            starts.insert(whole.start);
        }
    }
    assert!(starts.len() >= 4, "{starts:?}");
}

#[test]
fn a_transcript_over_the_limit_is_read_line_by_line_and_not_kept() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let files = transcripts(tmp.path());
    let f = files.last().map(PathBuf::as_path).unwrap_or(Path::new(""));
    let len = std::fs::metadata(f).map(|m| m.len()).unwrap_or(0) as usize;
    // A longest line under the file's length: the file is not read whole.
    let max_line = len - 1;
    let two = read_transcript_limits(Host::ClaudeCode, f, max_line, LOOKBACK, None);
    let mut kept = kept_with_extractor();
    let one = read_transcript_keep(
        Host::ClaudeCode,
        f,
        max_line,
        LOOKBACK,
        None,
        Some(&mut kept),
    );
    assert!(!kept.whole && !kept.fed);
    same(&two, &one, "over the limit");
    assert!(trail_of_read(kept, HostKind::ClaudeCode, 1500).is_none());
    // Codex transcripts are read whole for the trail, never parsed for it
    // by the Guardian's read (the Codex mapper reads them).
    for name in ["rollout-tainted.jsonl", "rollout-compacted.jsonl"] {
        let codex = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/codex")
            .join(name);
        let mut kept = Kept {
            extractor: Some(Extractor::new(Some(HostKind::Codex))),
            ..Kept::default()
        };
        let one = read_transcript_keep(
            Host::Codex,
            &codex,
            MAX_LINE,
            LOOKBACK,
            None,
            Some(&mut kept),
        );
        let bytes = std::fs::read(&codex).unwrap_or_default();
        let two = read_transcript_limits(Host::Codex, &codex, bytes.len() - 1, LOOKBACK, None);
        same(&two, &one, name);
        assert_eq!(one.pending_user_turns, two.pending_user_turns, "{name}");
        assert!(kept.whole && !kept.fed, "{name}");
        assert_eq!(
            trail_of_read(kept, HostKind::Codex, 1500),
            Some(trail_of_file(&codex, HostKind::Codex, 1500)),
            "{name}"
        );
    }
}
