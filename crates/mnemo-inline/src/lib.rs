//! Inline compression (the seed's §12, triggers C8, C9 and C11): a drop-in
//! for Pantheon's `compress-inline.py`, and the command line of its
//! `scrub-secrets.py`.
//!
//! The four modes — `score`, `compress`, `stats` and `batch` — print exactly
//! the bytes that script prints and exit with its statuses, for every
//! command line: its argparse parsing (`argparse`), its rules (`rules`:
//! keyword matching with Python's `re.IGNORECASE`, `\s+` and `\b`, the
//! blocker rule, floating-point bands and rounding) and Python's text
//! semantics (`pytext`: `splitlines`, `strip`, `repr`, `json.dumps`). The
//! tables are the script's (the seed's §3), fixed: a drop-in does not change
//! with a `mnemo.toml`. The only differences are the redactions, which are
//! mnemo's scrubber's.
//!
//! It owns output formats only: it never reads files (the caller's
//! [`script::Env`] hands it the contents, or the error it met), never scrubs
//! by itself (the caller passes the scrubber, so that one scrubber serves
//! every path), and never panics.

pub mod argparse;
pub mod pytables;
pub mod pytext;
pub mod rules;
pub mod script;
pub mod scrub_script;

pub use pytext::json_string as python_json_string;
pub use pytext::line_count as python_line_count;
pub use script::{Env, Outcome, ReadError, WHAT_CHANGED_CHARS, python_float, split_files};

/// The script's arguments, for callers that parse their own command line
/// (the MCP tool).
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
        /// The path as given.
        path: String,
        /// The error, worded as the script words it.
        message: String,
    },
}

/// The inline compressor with the script's tables.
#[derive(Debug, Clone, Copy, Default)]
pub struct Inline;

struct NoFiles<'a> {
    scrub: &'a dyn Fn(&str) -> String,
}

impl Env for NoFiles<'_> {
    fn read(&self, path: &str) -> Result<String, ReadError> {
        Err(ReadError::Os(path.to_string()))
    }
    fn scrub(&self, text: &str) -> String {
        (self.scrub)(text)
    }
}

fn trimmed(o: Outcome) -> String {
    let mut s = o.stdout;
    if s.ends_with('\n') {
        s.pop();
    }
    s
}

impl Inline {
    /// The inline compressor (the script's fixed tables).
    pub fn pantheon() -> Inline {
        Inline
    }

    fn args<'a>(mode: &'a str, a: &InlineArgs<'a>) -> script::Args<'a> {
        script::Args {
            mode,
            text: a.text,
            files: a.files.unwrap_or(""),
            from_agent: a.from_agent,
            to_agent: a.to_agent,
            blocker: a.blocker,
        }
    }

    /// `score` mode: one JSON line, without the trailing newline.
    pub fn score(&self, a: &InlineArgs<'_>) -> String {
        let env = NoFiles {
            scrub: &|s: &str| s.to_string(),
        };
        trimmed(script::run_mode(&Self::args("score", a), &env))
    }

    /// `compress` mode: scrub, score and print the entry, without the
    /// trailing newline.
    pub fn compress(&self, a: &InlineArgs<'_>, scrub: &dyn Fn(&str) -> String) -> String {
        let env = NoFiles { scrub };
        trimmed(script::run_mode(&Self::args("compress", a), &env))
    }

    /// `stats` mode: `{"tokens": …, "lines": …, "chars": …}` with the script's
    /// estimate.
    pub fn stats(text: &str) -> String {
        if text.is_empty() {
            "{\"tokens\": 0, \"lines\": 0, \"chars\": 0}".to_string()
        } else {
            script::stats_json(text)
        }
    }

    /// `batch` mode over files already read, without the trailing newline.
    /// A file that is not UTF-8 is reported as an `ERROR —` line here (the
    /// script would stop).
    pub fn batch(
        &self,
        items: &[BatchItem],
        a: &InlineArgs<'_>,
        scrub: &dyn Fn(&str) -> String,
    ) -> String {
        let items: Vec<script::Item> = items
            .iter()
            .map(|i| match i {
                BatchItem::Read { name, content } => script::Item::Read {
                    name: name.clone(),
                    content: content.clone(),
                },
                BatchItem::Failed { path, message } => script::Item::Failed {
                    path: path.clone(),
                    message: message.clone(),
                },
            })
            .collect();
        script::batch_items(&items, a.from_agent, a.to_agent, scrub)
    }
}

/// Words an OS error as Python does, the way the script's `batch` prints a
/// file it cannot read: `[Errno 2] No such file or directory: 'path'`.
pub fn python_os_error(path: &str, e: &std::io::Error) -> String {
    let text = e.to_string();
    let strerror = match text.find(" (os error ") {
        Some(i) => &text[..i],
        None => text.as_str(),
    };
    script::python_os_error(path, e.raw_os_error(), strerror)
}

/// Words a UTF-8 decoding failure as Python's codec does.
pub fn python_utf8_error(e: &std::string::FromUtf8Error) -> String {
    let u = e.utf8_error();
    script::python_decode_error(e.as_bytes(), u.valid_up_to(), u.error_len())
}

/// The first non-blank line, stripped, cut to 80 characters with `…`, or
/// `(empty)`.
pub fn what_changed(text: &str) -> String {
    script::what_changed(text).unwrap_or_else(|| "(empty)".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn score_line() {
        let out = Inline::pantheon().score(&InlineArgs {
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
    fn batch_of_items() {
        let items = [
            BatchItem::Failed {
                path: "x.md".into(),
                message: "[Errno 2] No such file or directory: 'x.md'".into(),
            },
            BatchItem::Read {
                name: "a.md".into(),
                content: "Fixed a typo".into(),
            },
            BatchItem::Read {
                name: "b.md".into(),
                content: "".into(),
            },
        ];
        let out =
            Inline::pantheon().batch(&items, &InlineArgs::default(), &|s: &str| s.to_string());
        assert_eq!(
            out,
            "- x.md: ERROR — [Errno 2] No such file or directory: 'x.md'\n### a.md\n- What changed: Fixed a typo\n- Priority: LOW (score: 0.05)\n\n### b.md\n- What changed: (empty)\n- Priority: LOW (score: 0.05)"
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
}
