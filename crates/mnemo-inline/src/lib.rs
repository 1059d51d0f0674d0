//! Inline compression (the seed's §12, triggers C8, C9 and C11): a drop-in
//! for Pantheon's `compress-inline.py`.
//!
//! The four modes — `score`, `compress`, `stats` and `batch` — produce exactly
//! the bytes that script prints, so that agents and scripts written against
//! it keep working. Keyword matching is the script's (plain case-insensitive
//! substring); scores are mnemo's exact integer arithmetic, rounded half-up.
//!
//! This crate also counts tokens with a real BPE (o200k) for mnemo's native
//! `stats`.
//!
//! It owns output formats only: it never reads files (the caller hands it the
//! contents, or the error it met), never scrubs by itself (the caller passes
//! the scrubber, so that one scrubber serves every path), and never panics.

use mnemo_model::{Config, Hundredths, Matching};
use mnemo_score::{BuildError, Engine, Score, ScoreInput};

/// Longest "What changed" line kept, in characters, before `…`.
pub const WHAT_CHANGED_CHARS: usize = 80;

/// The arguments the script takes.
#[derive(Debug, Clone, Copy, Default)]
pub struct InlineArgs<'a> {
    /// `--text`.
    pub text: &'a str,
    /// `--files`, comma-separated, as given.
    pub files: Option<&'a str>,
    /// `--from-agent`.
    pub from_agent: Option<&'a str>,
    /// `--to-agent`.
    pub to_agent: Option<&'a str>,
    /// `--blocker` (used by `score`, ignored by `compress`, as in the script).
    pub blocker: bool,
}

/// One file of a batch: its contents, or the error met reading it.
#[derive(Debug, Clone)]
pub enum BatchItem {
    /// A file that could be read.
    Read {
        /// The file's base name (the `### name` heading).
        name: String,
        /// Its text.
        content: String,
    },
    /// A file that could not be read.
    Failed {
        /// The path as given on the command line.
        path: String,
        /// The error, worded as the script words it.
        message: String,
    },
}

/// The inline compressor: a scoring engine in Pantheon's matching mode.
#[derive(Debug, Clone)]
pub struct Inline {
    engine: Engine,
    weights: mnemo_model::config::Weights,
}

/// Splits `--files` as the script does: on commas, trimmed, blanks dropped.
pub fn split_files(files: &str) -> Vec<&str> {
    files
        .split(',')
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .collect()
}

/// Formats hundredths as Python's `repr(round(x, 2))`: `0.0`, `0.7`, `0.74`, `1.0`.
pub fn python_float(h: u32) -> String {
    if h.is_multiple_of(100) {
        format!("{}.0", h / 100)
    } else if h.is_multiple_of(10) {
        format!("{}.{}", h / 100, (h % 100) / 10)
    } else {
        format!("{}.{:02}", h / 100, h % 100)
    }
}

/// Encodes a string as Python's `json.dumps` does (ASCII only).
pub fn python_json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Python's `str.splitlines()` line count.
pub fn python_line_count(text: &str) -> usize {
    let mut count = 0;
    let mut chars = text.chars().peekable();
    let mut line_open = false;
    while let Some(c) = chars.next() {
        let is_break = matches!(
            c,
            '\n' | '\r'
                | '\u{0b}'
                | '\u{0c}'
                | '\u{1c}'
                | '\u{1d}'
                | '\u{1e}'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        );
        if is_break {
            if c == '\r' && chars.peek() == Some(&'\n') {
                chars.next();
            }
            count += 1;
            line_open = false;
        } else {
            line_open = true;
        }
    }
    count + usize::from(line_open)
}

/// Words an OS error as Python does, the way the script's `batch` prints a
/// file it cannot read: `[Errno 2] No such file or directory: 'path'`.
pub fn python_os_error(path: &str, e: &std::io::Error) -> String {
    let text = e.to_string();
    let strerror = match text.find(" (os error ") {
        Some(i) => &text[..i],
        None => text.as_str(),
    };
    let quoted = if path.contains('\'') && !path.contains('"') {
        format!("\"{path}\"")
    } else {
        format!("'{}'", path.replace('\'', "\\'"))
    };
    match e.raw_os_error() {
        Some(code) => format!("[Errno {code}] {strerror}: {quoted}"),
        None => format!("{strerror}: {quoted}"),
    }
}

/// Words a UTF-8 decoding failure as Python's `open().read()` does.
pub fn python_utf8_error(e: &std::string::FromUtf8Error) -> String {
    let pos = e.utf8_error().valid_up_to();
    let byte = e.as_bytes().get(pos).copied().unwrap_or(0);
    format!("'utf-8' codec can't decode byte 0x{byte:02x} in position {pos}: invalid start byte")
}

/// The first non-blank line, trimmed, cut to 80 characters with `…`, or
/// `(empty)`.
pub fn what_changed(text: &str) -> String {
    let Some(line) = text.lines().map(str::trim).find(|l| !l.is_empty()) else {
        return "(empty)".to_string();
    };
    if line.chars().count() > WHAT_CHANGED_CHARS {
        let cut: String = line.chars().take(WHAT_CHANGED_CHARS).collect();
        format!("{cut}…")
    } else {
        line.to_string()
    }
}

/// Counts o200k BPE tokens (GPT-4o and later).
pub fn count_tokens_o200k(text: &str) -> usize {
    bpe_openai::o200k_base().count(text)
}

/// The script's cheap estimate: characters / 4, at least 1 for non-empty text.
pub fn estimate_tokens(text: &str) -> usize {
    let chars = text.chars().count();
    if chars == 0 { 0 } else { (chars / 4).max(1) }
}

impl Inline {
    /// An inline compressor over the configuration's tables, with Pantheon's
    /// substring matching.
    pub fn new(config: &Config) -> Result<Inline, BuildError> {
        Ok(Inline {
            engine: Engine::with_matching(config, Matching::Substring)?,
            weights: config.scoring.weights,
        })
    }

    /// The scoring engine in use.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The score as Pantheon's script prints it: the weighted sum computed in
    /// binary floating point, then rounded to two decimals the way Python's
    /// `round(x, 2)` does (on the exact binary value, ties to even). This is
    /// the one place where mnemo reproduces floating point on purpose: the
    /// printed figure must match the script's (0.175 prints as 0.17). Bands
    /// stay decided on the exact value.
    pub fn printed_hundredths(&self, score: &Score) -> u32 {
        if score.explain.empty_text {
            return 0;
        }
        let w = self.weights;
        let f = |h: Hundredths| f64::from(h.get()) / 100.0;
        let x = f(score.impact) * f(w.impact)
            + f(score.risk) * f(w.risk)
            + f(score.novelty) * f(w.novelty)
            + f(score.blockers) * f(w.blockers)
            + f(score.downstream) * f(w.downstream);
        // `{:.2}` is correctly rounded on the exact binary value, as Python is.
        let text = format!("{x:.2}");
        let (int, frac) = text.split_once('.').unwrap_or((text.as_str(), "0"));
        int.parse::<u32>().unwrap_or(0) * 100 + frac.parse::<u32>().unwrap_or(0)
    }

    fn score_text(&self, text: &str, args: &InlineArgs<'_>, blocker: bool) -> Score {
        self.engine.score(&ScoreInput {
            text,
            files: args.files.map_or(0, |f| split_files(f).len()),
            from: args.from_agent,
            to: args.to_agent,
            unblocks: blocker,
            has_blockers: false,
        })
    }

    /// `score` mode: one JSON line, without the trailing newline.
    pub fn score(&self, args: &InlineArgs<'_>) -> String {
        let s = self.score_text(args.text, args, args.blocker);
        let h = |v: Hundredths| python_float(u32::from(v.get()));
        let keywords: Vec<String> = s
            .keywords
            .iter()
            .filter_map(|&i| self.engine.keywords().get(i))
            .map(|k| python_json_string(&k.keyword))
            .collect();
        format!(
            "{{\"score\": {}, \"band\": \"{}\", \"impact\": {}, \"risk\": {}, \"novelty\": {}, \"blockers\": {}, \"downstream\": {}, \"keywords_found\": [{}]}}",
            python_float(self.printed_hundredths(&s)),
            s.band,
            h(s.impact),
            h(s.risk),
            h(s.novelty),
            h(s.blockers),
            h(s.downstream),
            keywords.join(", ")
        )
    }

    fn compress_block(
        &self,
        text: &str,
        args: &InlineArgs<'_>,
        scrub: &dyn Fn(&str) -> String,
    ) -> (String, Score) {
        let clean = scrub(text);
        let score = self.score_text(&clean, args, false);
        let printed = self.printed_hundredths(&score);
        let body = format!(
            "- What changed: {}\n- Priority: {} (score: {}.{:02})",
            what_changed(&clean),
            score.band,
            printed / 100,
            printed % 100
        );
        (body, score)
    }

    /// `compress` mode: scrub, score, and print the compressed entry, without
    /// the trailing newline.
    pub fn compress(&self, args: &InlineArgs<'_>, scrub: &dyn Fn(&str) -> String) -> String {
        let (mut out, _) = self.compress_block(args.text, args, scrub);
        if let Some(files) = args.files.filter(|f| !f.is_empty()) {
            out.push_str("\n- Files: ");
            out.push_str(&scrub(files));
        }
        out
    }

    /// `stats` mode: `{"tokens": …, "lines": …, "chars": …}` with the script's
    /// estimate.
    pub fn stats(text: &str) -> String {
        format!(
            "{{\"tokens\": {}, \"lines\": {}, \"chars\": {}}}",
            estimate_tokens(text),
            python_line_count(text),
            text.chars().count()
        )
    }

    /// `batch` mode: every file compressed, blocks separated by a blank line,
    /// without the trailing newline.
    pub fn batch(
        &self,
        items: &[BatchItem],
        args: &InlineArgs<'_>,
        scrub: &dyn Fn(&str) -> String,
    ) -> String {
        let blocks: Vec<String> = items
            .iter()
            .map(|item| match item {
                BatchItem::Read { name, content } => {
                    let (body, _) = self.compress_block(content, args, scrub);
                    format!("### {}\n{body}", scrub(name))
                }
                BatchItem::Failed { path, message } => {
                    format!("- {}: ERROR — {}", scrub(path), scrub(message))
                }
            })
            .collect();
        blocks.join("\n\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inline() -> Inline {
        Inline::new(&Config::default()).unwrap()
    }

    #[test]
    fn python_floats() {
        assert_eq!(python_float(0), "0.0");
        assert_eq!(python_float(70), "0.7");
        assert_eq!(python_float(74), "0.74");
        assert_eq!(python_float(5), "0.05");
        assert_eq!(python_float(100), "1.0");
    }

    #[test]
    fn json_strings_like_python() {
        assert_eq!(python_json_string("JWT"), "\"JWT\"");
        assert_eq!(python_json_string("é\"\n"), "\"\\u00e9\\\"\\n\"");
        assert_eq!(python_json_string("😀"), "\"\\ud83d\\ude00\"");
    }

    #[test]
    fn splitlines() {
        assert_eq!(python_line_count(""), 0);
        assert_eq!(python_line_count("a"), 1);
        assert_eq!(python_line_count("a\n"), 1);
        assert_eq!(python_line_count("a\r\nb\rc"), 3);
        assert_eq!(python_line_count("\n\n"), 2);
    }

    #[test]
    fn score_line() {
        let out = inline().score(&InlineArgs {
            text: "Added JWT auth endpoint with refresh token rotation",
            from_agent: Some("hermes"),
            to_agent: Some("aphrodite"),
            ..Default::default()
        });
        assert_eq!(
            out,
            "{\"score\": 0.74, \"band\": \"HIGH\", \"impact\": 1.0, \"risk\": 1.0, \"novelty\": 0.5, \"blockers\": 0.0, \"downstream\": 0.9, \"keywords_found\": [\"auth\", \"JWT\", \"token\", \"endpoint\"]}"
        );
    }

    #[test]
    fn os_error_like_python() {
        let e = std::io::Error::from_raw_os_error(2);
        assert_eq!(
            python_os_error("artifacts/missing.md", &e),
            "[Errno 2] No such file or directory: 'artifacts/missing.md'"
        );
    }

    #[test]
    fn what_changed_cuts_at_80() {
        let long = "x".repeat(81);
        assert_eq!(what_changed(&long), format!("{}…", "x".repeat(80)));
        assert_eq!(what_changed(&"y".repeat(80)), "y".repeat(80));
        assert_eq!(what_changed("\n  \n  hi  \nthere"), "hi");
        assert_eq!(what_changed("   "), "(empty)");
    }

    #[test]
    fn tokens() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("ab"), 1);
        assert_eq!(count_tokens_o200k(""), 0);
        let n = count_tokens_o200k("Hello world, this is a test of the system.");
        assert!((8..=12).contains(&n), "{n}");
    }
}
