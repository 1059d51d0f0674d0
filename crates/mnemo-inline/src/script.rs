//! `compress-inline.py` as a whole program: its command line (argparse), its
//! four modes and their exact output, as a pure function of the arguments
//! and of what the caller's [`Env`] answers (file contents, the scrubber).

use crate::argparse::{self, Kind, Opt, Parsed, Spec, flag, get_str};
use crate::pytext::{json_string, repr, rstrip, splitlines, strip};
use crate::rules::{KEYWORDS, Score, score};

/// Longest "What changed" line kept, in characters, before `…`.
pub const WHAT_CHANGED_CHARS: usize = 80;

/// What a run printed and its exit status.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Outcome {
    /// Exit status.
    pub code: u8,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// Why a batch file could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// An `OSError`: the script prints `- PATH: ERROR — MESSAGE` and goes on.
    Os(String),
    /// Not UTF-8: the script stops with a `UnicodeDecodeError` (exit 1,
    /// nothing on standard output); the message names the byte.
    Decode(String),
}

/// The world the script sees: files to read and the scrubber.
pub trait Env {
    /// Reads a batch file (the path as given, stripped); its text, or the
    /// error worded as Python words it.
    fn read(&self, path: &str) -> Result<String, ReadError>;
    /// Scrubs a text before it is scored or printed.
    fn scrub(&self, text: &str) -> String;
}

const OPTIONS: &[Opt] = &[
    Opt {
        strings: &["-h", "--help"],
        dest: "help",
        kind: Kind::Help,
    },
    Opt {
        strings: &["--text"],
        dest: "text",
        kind: Kind::Value,
    },
    Opt {
        strings: &["--files"],
        dest: "files",
        kind: Kind::Value,
    },
    Opt {
        strings: &["--from-agent"],
        dest: "from_agent",
        kind: Kind::Value,
    },
    Opt {
        strings: &["--to-agent"],
        dest: "to_agent",
        kind: Kind::Value,
    },
    Opt {
        strings: &["--blocker"],
        dest: "blocker",
        kind: Kind::Flag,
    },
];

const USAGE: &str = "usage: mnemo inline [-h] [--text TEXT] [--files FILES]
                    [--from-agent FROM_AGENT] [--to-agent TO_AGENT]
                    [--blocker]
                    {score,compress,stats,batch}
";

const HELP: &str = "usage: mnemo inline [-h] [--text TEXT] [--files FILES]
                    [--from-agent FROM_AGENT] [--to-agent TO_AGENT]
                    [--blocker]
                    {score,compress,stats,batch}

A drop-in for Pantheon's compress-inline.py: the same modes, options, output
bytes and exit statuses (`mnemo inline scrub` is scrub-secrets.py).

positional arguments:
  {score,compress,stats,batch}
                        Operation mode

options:
  -h, --help            show this help message and exit
  --text TEXT           Input text to process
  --files FILES         Comma-separated file paths (batch mode, or for file
                        count in scoring)
  --from-agent FROM_AGENT
                        Source agent for downstream relevance
  --to-agent TO_AGENT   Target agent for downstream relevance
  --blocker             Hint that entry was a blocker
";

/// The script's argparse declaration.
pub const SPEC: Spec = Spec {
    prog: "mnemo inline",
    usage: USAGE,
    help: HELP,
    options: OPTIONS,
    positional: Some(("mode", &["score", "compress", "stats", "batch"])),
    exclusive: &[],
};

/// Formats hundredths as Python's `repr(float)` of a two-decimal value:
/// `0.0`, `0.7`, `0.74`, `1.0`.
pub fn python_float(h: u32) -> String {
    if h.is_multiple_of(100) {
        format!("{}.0", h / 100)
    } else if h.is_multiple_of(10) {
        format!("{}.{}", h / 100, (h % 100) / 10)
    } else {
        format!("{}.{:02}", h / 100, h % 100)
    }
}

/// `len([f for f in files.split(",") if f.strip()])`.
pub fn file_count(files: &str) -> usize {
    files.split(',').filter(|f| !strip(f).is_empty()).count()
}

/// The stripped, non-blank paths of `--files`.
pub fn split_files(files: &str) -> Vec<&str> {
    files
        .split(',')
        .map(strip)
        .filter(|f| !f.is_empty())
        .collect()
}

/// The first non-blank line (Python's `splitlines` and `strip`), cut to 80
/// characters with `…`; `None` when there is none.
pub fn what_changed(text: &str) -> Option<String> {
    let line = splitlines(text).map(strip).find(|l| !l.is_empty())?;
    if line.chars().count() > WHAT_CHANGED_CHARS {
        let cut: String = line.chars().take(WHAT_CHANGED_CHARS).collect();
        Some(format!("{cut}…"))
    } else {
        Some(line.to_string())
    }
}

/// `score` mode's JSON line (without the newline).
pub fn score_json(s: &Score) -> String {
    let h = |v: u8| python_float(u32::from(v));
    let keywords: Vec<String> = s
        .keywords
        .iter()
        .map(|&i| json_string(KEYWORDS[i].name))
        .collect();
    format!(
        "{{\"score\": {}, \"band\": \"{}\", \"impact\": {}, \"risk\": {}, \"novelty\": {}, \"blockers\": {}, \"downstream\": {}, \"keywords_found\": [{}]}}",
        python_float(s.rounded_hundredths()),
        s.band().as_str(),
        h(s.impact),
        h(s.risk),
        h(s.novelty),
        h(s.blockers),
        h(s.downstream),
        keywords.join(", ")
    )
}

/// The two lines "What changed" and "Priority" of a compressed entry.
fn entry(summary: &str, s: &Score) -> String {
    let p = s.rounded_hundredths();
    format!(
        "- What changed: {summary}\n- Priority: {} (score: {}.{:02})",
        s.band().as_str(),
        p / 100,
        p % 100
    )
}

/// `stats` mode's JSON line for a non-empty text.
pub fn stats_json(text: &str) -> String {
    let chars = text.chars().count();
    format!(
        "{{\"tokens\": {}, \"lines\": {}, \"chars\": {chars}}}",
        (chars / 4).max(1),
        crate::pytext::line_count(text)
    )
}

/// The script's arguments, once parsed.
#[derive(Debug, Clone, Copy, Default)]
pub struct Args<'a> {
    /// The mode.
    pub mode: &'a str,
    /// `--text` (default empty).
    pub text: &'a str,
    /// `--files` (default empty).
    pub files: &'a str,
    /// `--from-agent`.
    pub from_agent: Option<&'a str>,
    /// `--to-agent`.
    pub to_agent: Option<&'a str>,
    /// `--blocker`.
    pub blocker: bool,
}

fn ok(stdout: String) -> Outcome {
    Outcome {
        code: 0,
        stdout,
        stderr: String::new(),
    }
}

/// Runs one mode on parsed arguments.
pub fn run_mode(a: &Args<'_>, env: &dyn Env) -> Outcome {
    if a.mode == "batch" {
        if a.files.is_empty() {
            return Outcome {
                code: 1,
                stdout: String::new(),
                stderr: "Error: --files is required for batch mode\n".to_string(),
            };
        }
        return batch(&split_files(a.files), a, env);
    }
    if a.text.is_empty() {
        return ok(match a.mode {
            "score" => "{\"score\": 0.0, \"band\": \"LOW\", \"impact\": 0.0, \"risk\": 0.0, \"novelty\": 0.0, \"blockers\": 0.0, \"downstream\": 0.5, \"keywords_found\": []}\n".to_string(),
            "compress" => "- What changed: (empty)\n- Priority: LOW (score: 0.00)\n".to_string(),
            _ => "{\"tokens\": 0, \"lines\": 0, \"chars\": 0}\n".to_string(),
        });
    }
    match a.mode {
        "score" => {
            let s = score(
                a.text,
                a.from_agent,
                a.to_agent,
                file_count(a.files),
                a.blocker,
            );
            ok(format!("{}\n", score_json(&s)))
        }
        "compress" => {
            let clean = env.scrub(a.text);
            let s = score(&clean, a.from_agent, a.to_agent, file_count(a.files), false);
            let mut out = entry(&what_changed(&clean).unwrap_or_default(), &s);
            if !a.files.is_empty() {
                out.push_str("\n- Files: ");
                out.push_str(&env.scrub(a.files));
            }
            out.push('\n');
            ok(out)
        }
        _ => ok(format!("{}\n", stats_json(a.text))),
    }
}

/// Python's `os.path.basename`.
fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// One batch file, once read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// Read: the `### name` heading (the base name) and the text.
    Read {
        /// The heading's name.
        name: String,
        /// The file's text.
        content: String,
    },
    /// Not read (`OSError`): the path as given and the message.
    Failed {
        /// The path as given.
        path: String,
        /// The message, worded as Python words it.
        message: String,
    },
}

/// `batch` mode over files already read (a file that is not UTF-8 is the
/// caller's to report).
pub fn batch_items(
    items: &[Item],
    from: Option<&str>,
    to: Option<&str>,
    scrub: &dyn Fn(&str) -> String,
) -> String {
    let mut parts: Vec<String> = Vec::new();
    for item in items {
        match item {
            Item::Read { name, content } => {
                let clean = scrub(content);
                let s = score(&clean, from, to, 1, false);
                let summary = what_changed(&clean).unwrap_or_else(|| "(empty)".to_string());
                parts.push(format!("### {}", scrub(name)));
                parts.push(entry(&summary, &s));
                parts.push(String::new());
            }
            Item::Failed { path, message } => {
                parts.push(format!("- {}: ERROR — {}", scrub(path), scrub(message)));
            }
        }
    }
    rstrip(&parts.join("\n")).to_string()
}

fn batch(paths: &[&str], a: &Args<'_>, env: &dyn Env) -> Outcome {
    let mut items = Vec::with_capacity(paths.len());
    for &path in paths {
        items.push(match env.read(path) {
            Ok(content) => Item::Read {
                name: basename(path).to_string(),
                content,
            },
            Err(ReadError::Os(message)) => Item::Failed {
                path: path.to_string(),
                message,
            },
            Err(ReadError::Decode(message)) => {
                return Outcome {
                    code: 1,
                    stdout: String::new(),
                    stderr: format!("UnicodeDecodeError: {message}\n"),
                };
            }
        });
    }
    let scrub = |s: &str| env.scrub(s);
    ok(format!(
        "{}\n",
        batch_items(&items, a.from_agent, a.to_agent, &scrub)
    ))
}

/// Runs `compress-inline.py ARGS…`.
pub fn run(args: &[String], env: &dyn Env) -> Outcome {
    let values = match argparse::parse(&SPEC, args) {
        Parsed::Args(v) => v,
        Parsed::Exit {
            code,
            stdout,
            stderr,
        } => {
            return Outcome {
                code,
                stdout,
                stderr,
            };
        }
    };
    let a = Args {
        mode: get_str(&values, "mode").unwrap_or("score"),
        text: get_str(&values, "text").unwrap_or(""),
        files: get_str(&values, "files").unwrap_or(""),
        from_agent: get_str(&values, "from_agent"),
        to_agent: get_str(&values, "to_agent"),
        blocker: flag(&values, "blocker"),
    };
    run_mode(&a, env)
}

/// Words an OS error as Python's `str(OSError)` does for a file it could not
/// open: `[Errno 2] No such file or directory: 'path'`.
pub fn python_os_error(path: &str, errno: Option<i32>, strerror: &str) -> String {
    match errno {
        Some(code) => format!("[Errno {code}] {strerror}: {}", repr(path)),
        None => format!("{strerror}: {}", repr(path)),
    }
}

/// Words a UTF-8 decoding failure as Python's codec does.
pub fn python_decode_error(bytes: &[u8], valid_up_to: usize, error_len: Option<usize>) -> String {
    let byte = bytes.get(valid_up_to).copied().unwrap_or(0);
    let reason = match error_len {
        None => "unexpected end of data",
        Some(_) if (0x80..0xc2).contains(&byte) || byte >= 0xf5 => "invalid start byte",
        Some(_) => "invalid continuation byte",
    };
    format!("'utf-8' codec can't decode byte 0x{byte:02x} in position {valid_up_to}: {reason}")
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Plain;
    impl Env for Plain {
        fn read(&self, path: &str) -> Result<String, ReadError> {
            match path {
                "a.md" => Ok("\n  Added the login endpoint  \nmore".to_string()),
                "bad.md" => Err(ReadError::Decode("x".into())),
                _ => Err(ReadError::Os(python_os_error(
                    path,
                    Some(2),
                    "No such file or directory",
                ))),
            }
        }
        fn scrub(&self, text: &str) -> String {
            text.to_string()
        }
    }

    fn run_args(args: &[&str]) -> Outcome {
        let v: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        run(&v, &Plain)
    }

    #[test]
    fn whitespace_only_text_has_an_empty_summary() {
        let o = run_args(&["compress", "--text", " \u{1f} "]);
        assert_eq!(
            o.stdout,
            "- What changed: \n- Priority: LOW (score: 0.05)\n"
        );
    }

    #[test]
    fn empty_text_prints_no_files_line() {
        let o = run_args(&["compress", "--text", "", "--files", "a,b"]);
        assert_eq!(
            o.stdout,
            "- What changed: (empty)\n- Priority: LOW (score: 0.00)\n"
        );
    }

    #[test]
    fn batch_error_lines_have_no_blank_line_after_them() {
        let o = run_args(&["batch", "--files", "missing.md, a.md ,other"]);
        assert_eq!(
            o.stdout,
            "- missing.md: ERROR — [Errno 2] No such file or directory: 'missing.md'\n### a.md\n- What changed: Added the login endpoint\n- Priority: HIGH (score: 0.70)\n\n- other: ERROR — [Errno 2] No such file or directory: 'other'\n"
        );
        assert_eq!(o.code, 0);
    }

    #[test]
    fn batch_stops_on_a_file_that_is_not_utf8() {
        let o = run_args(&["batch", "--files", "a.md,bad.md"]);
        assert_eq!((o.code, o.stdout.as_str()), (1, ""));
    }

    #[test]
    fn hyphen_text_is_refused() {
        let o = run_args(&["score", "--text", "-x"]);
        assert_eq!(o.code, 2);
        assert!(
            o.stderr
                .ends_with("error: argument --text: expected one argument\n")
        );
    }

    #[test]
    fn decode_errors_like_python() {
        let e = String::from_utf8(vec![b'a', 0xff]).unwrap_err();
        let u = e.utf8_error();
        assert_eq!(
            python_decode_error(e.as_bytes(), u.valid_up_to(), u.error_len()),
            "'utf-8' codec can't decode byte 0xff in position 1: invalid start byte"
        );
    }
}
