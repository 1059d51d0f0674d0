//! The one read of a Claude Code transcript that serves the Guardian and
//! the trail (`read_transcript_keep`, `trail_of_kept`) gives what the two
//! separate reads give.

use mnemo_guardian::policy::Policy;
use mnemo_hooks::Host;
use mnemo_hooks::collapse::Limits;
use mnemo_hooks::io::{
    KeptLine, LOOKBACK, MAX_LINE, Transcript, read_transcript_keep, read_transcript_limits,
};
use mnemo_hooks::trail_hook::{trail_of_file, trail_of_kept};
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

#[test]
fn one_read_gives_the_guardian_and_the_trail_what_two_reads_give() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let policy = Policy::default();
    let files = transcripts(tmp.path());
    assert!(files.len() >= 12, "{files:?}");
    let mut parsed_lines = 0;
    for f in &files {
        let what = f.display().to_string();
        let lines = std::fs::read(f).unwrap_or_default();
        let n_lines = lines.split_inclusive(|&b| b == b'\n').count();
        for collapse in [None, Some((&policy, Limits::default()))] {
            let two = read_transcript_limits(Host::ClaudeCode, f, MAX_LINE, LOOKBACK, collapse);
            let mut buf = Vec::new();
            let (one, kept) = read_transcript_keep(
                Host::ClaudeCode,
                f,
                MAX_LINE,
                LOOKBACK,
                collapse,
                Some(&mut buf),
            );
            same(&two, &one, &what);
            let Some(kept) = kept else {
                panic!("{what}: a small transcript is kept")
            };
            assert_eq!(kept.len(), n_lines, "{what}: every line is kept");
            parsed_lines += kept
                .iter()
                .filter(|l| matches!(l, KeptLine::Parsed(_)))
                .count();
            for budget in [1500, 120] {
                let a = trail_of_file(f, HostKind::ClaudeCode, budget);
                let b = trail_of_kept(&kept, HostKind::ClaudeCode, budget);
                assert_eq!(a, b, "{what}: trail at {budget}");
                assert!(a.is_ok(), "{what}");
            }
        }
    }
    assert!(parsed_lines > 40, "{parsed_lines}");
    // The odd file's trail holds what its lines say.
    let mut buf = Vec::new();
    let odd = files.last().map(PathBuf::as_path).unwrap_or(Path::new(""));
    let (t, kept) = read_transcript_keep(
        Host::ClaudeCode,
        odd,
        MAX_LINE,
        LOOKBACK,
        None,
        Some(&mut buf),
    );
    assert_eq!(t.bad, 3, "form feed, not UTF-8, not JSON: {:?}", t.entries);
    let trail = trail_of_kept(&kept.unwrap_or_default(), HostKind::ClaudeCode, 1500)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(trail.text.contains("cargo test -p api"), "{}", trail.text);
    assert!(trail.text.contains("8443"), "{}", trail.text);
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
    let mut buf = Vec::new();
    let (one, kept) = read_transcript_keep(
        Host::ClaudeCode,
        f,
        max_line,
        LOOKBACK,
        None,
        Some(&mut buf),
    );
    assert!(kept.is_none());
    same(&two, &one, "over the limit");
    // Codex transcripts are never kept (the Codex mapper reads them).
    let codex = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/codex/rollout-tainted.jsonl"
    ));
    let (_, kept) =
        read_transcript_keep(Host::Codex, codex, MAX_LINE, LOOKBACK, None, Some(&mut buf));
    assert!(kept.is_none());
}
