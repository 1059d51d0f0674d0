//! Malformed, truncated, mutated and huge inputs never crash the Guardian,
//! the framing reader or the adapters (a deterministic stand-in for the
//! cargo-fuzz targets, run in CI).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_guardian::{Guardian, GuardianConfig, MemoryStore, Policy};
use mnemo_guardian_server::server;
use mnemo_hooks::{claude, codex};
use serde_json::Value;
use std::io::Cursor;
use std::path::PathBuf;

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn corpus() -> Vec<Vec<u8>> {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../mnemo-guardian/tests/fixtures/requests"
    ));
    let mut v: Vec<Vec<u8>> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    v.sort();
    v
}

const TOKENS: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b":",
    b",",
    b"null",
    b"1e999",
    b"-0",
    b"\\u0000",
    b"\xff",
    b"\"steps/preCompact\"",
    b"99999999999999999999999",
];

fn mutate(rng: &mut Rng, base: &[u8]) -> Vec<u8> {
    let mut b = base.to_vec();
    for _ in 0..=rng.below(4) {
        match rng.below(5) {
            0 if !b.is_empty() => {
                let i = rng.below(b.len());
                b.truncate(i);
            }
            1 if !b.is_empty() => {
                let i = rng.below(b.len());
                b[i] = rng.next() as u8;
            }
            2 => {
                let i = rng.below(b.len() + 1);
                let t = TOKENS[rng.below(TOKENS.len())];
                b.splice(i..i, t.iter().copied());
            }
            3 if b.len() > 2 => {
                let i = rng.below(b.len());
                let j = rng.below(b.len());
                let (lo, hi) = if i < j { (i, j) } else { (j, i) };
                b.drain(lo..hi);
            }
            _ => {
                let i = rng.below(b.len() + 1);
                let dup: Vec<u8> = b[..i].to_vec();
                b.extend(dup);
            }
        }
    }
    b
}

#[test]
fn guardian_answers_every_mutated_request_with_a_response() {
    let mut g = Guardian::new(
        Policy::default(),
        GuardianConfig {
            skew_window_ms: None,
            require_handshake: false,
            max_request_bytes: 64 * 1024,
            ..GuardianConfig::default()
        },
        MemoryStore::new(),
    );
    let corpus = corpus();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..4000 {
        let base = &corpus[rng.below(corpus.len())];
        let input = mutate(&mut rng, base);
        let out: Value = serde_json::from_slice(&g.handle(&input)).unwrap();
        assert_eq!(out["jsonrpc"], "2.0");
        assert!(out.get("result").is_some() != out.get("error").is_some());
    }
    // Deep nesting and a huge body.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let out: Value = serde_json::from_slice(&g.handle(deep.as_bytes())).unwrap();
    assert!(out.get("error").is_some());
    let huge = vec![b' '; 10 << 20];
    let out: Value = serde_json::from_slice(&g.handle(&huge)).unwrap();
    assert_eq!(out["error"]["code"], -32600);
}

#[test]
fn stdio_survives_random_byte_streams() {
    let corpus = corpus();
    let mut rng = Rng(42);
    for _ in 0..300 {
        let mut stream = Vec::new();
        for _ in 0..rng.below(6) {
            let pick = rng.below(corpus.len());
            let body = mutate(&mut rng, &corpus[pick]);
            let claimed = match rng.below(4) {
                0 => body.len() + rng.below(10),
                1 => body.len().saturating_sub(rng.below(10)),
                _ => body.len(),
            };
            stream.extend(format!("Content-Length: {claimed}\r\n\r\n").as_bytes());
            stream.extend(&body);
        }
        let cut = rng.below(stream.len() + 1);
        stream.truncate(cut.max(stream.len() / 2));
        let mut g = Guardian::new(
            Policy::default(),
            GuardianConfig {
                skew_window_ms: None,
                require_handshake: false,
                max_request_bytes: 4096,
                ..GuardianConfig::default()
            },
            MemoryStore::new(),
        );
        let mut out = Vec::new();
        server::serve_stdio(&mut g, &mut Cursor::new(stream), &mut out).unwrap();
    }
}

#[test]
fn transcript_parsers_survive_garbage() {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures"));
    let texts: Vec<Vec<u8>> = ["claude/transcript-mcp.jsonl", "codex/rollout-tainted.jsonl"]
        .iter()
        .map(|p| std::fs::read(dir.join(p)).unwrap())
        .collect();
    let mut rng = Rng(7);
    for _ in 0..500 {
        let pick = rng.below(texts.len());
        let b = mutate(&mut rng, &texts[pick]);
        let s = String::from_utf8_lossy(&b);
        let _ = claude::transcript_entries(&s);
        let _ = codex::transcript_entries(&s);
    }
}
