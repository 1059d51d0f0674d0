//! The trail of a transcript file without the CLI, for profiling the
//! extractor alone (`cargo build --profile measure -p mnemo-trail --example
//! trail_file`, then callgrind or `/usr/bin/time -v`).
//!
//! usage: trail_file TRANSCRIPT [--budget N] [--host claude-code|codex|opencode] [--json]
//! prints what `mnemo trail` prints with the same arguments.

use mnemo_trail::parse::HostKind;
use std::io::{BufRead, BufReader, Write};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or("usage: trail_file TRANSCRIPT [--budget N] [--host H] [--json]")?;
    let (mut budget, mut host, mut json) = (mnemo_trail::DEFAULT_BUDGET, None, false);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--budget" => budget = args.next().ok_or("--budget N")?.parse()?,
            "--host" => {
                host = match args.next().as_deref() {
                    Some("claude-code") => Some(HostKind::ClaudeCode),
                    Some("codex") => Some(HostKind::Codex),
                    Some("opencode") => Some(HostKind::OpenCode),
                    _ => None,
                }
            }
            "--json" => json = true,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let mut r = BufReader::with_capacity(1 << 16, std::fs::File::open(&path)?);
    let mut x = mnemo_trail::Extractor::new(host);
    let mut buf = Vec::new();
    while r.read_until(b'\n', &mut buf)? > 0 {
        x.push_bytes(&buf);
        buf.clear();
    }
    let t = x.finish(budget)?;
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string(&t)?)?;
    } else {
        out.write_all(t.text.as_bytes())?;
    }
    Ok(())
}
