//! `mnemo inline`: a drop-in for Pantheon's `compress-inline.py`, and
//! `mnemo inline scrub`, a drop-in for its `scrub-secrets.py`.
//!
//! The command line is the scripts' own (argparse's rules, in
//! `mnemo-inline`), not clap's: `main` hands the arguments after `inline`
//! straight here, before clap is built, which keeps `mnemo inline score`
//! as fast as `/bin/true` within a fraction of a millisecond. This module
//! only reads the files the scripts would read, scrubs, writes and prints.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use mnemo_inline::argparse::{self, Parsed, flag, get_str};
use mnemo_inline::script::{self, Env, Outcome, ReadError};
use mnemo_inline::scrub_script::{self, Action, Reported};
use mnemo_scrub::{ReplacementStyle, Scrubber};

/// Arguments of `mnemo inline`: everything after it, parsed as the script
/// parses its command line.
#[derive(Debug, Args)]
#[command(disable_help_flag = true)]
pub struct InlineCmd {
    /// `score|compress|stats|batch [--text T] [--files F] [--from-agent A]
    /// [--to-agent B] [--blocker]`, or `scrub --stdin | --file F | --audit F`
    /// (`mnemo inline -h` for the script's own help).
    #[arg(
        value_name = "ARGS",
        trailing_var_arg = true,
        allow_hyphen_values = true,
        num_args = 0..
    )]
    args: Vec<OsString>,
}

/// An argument as Python sees it: UTF-8 as is, each byte that is not part
/// of a UTF-8 character one replacement character (Python decodes it to one
/// lone surrogate, which is not a letter, a digit or whitespace either).
fn decode_arg(arg: OsString) -> String {
    match arg.into_string() {
        Ok(s) => s,
        Err(os) => {
            let bytes = os.into_encoded_bytes();
            let mut out = String::with_capacity(bytes.len());
            let mut rest = bytes.as_slice();
            while !rest.is_empty() {
                match std::str::from_utf8(rest) {
                    Ok(s) => {
                        out.push_str(s);
                        break;
                    }
                    Err(e) => {
                        let (good, bad) = rest.split_at(e.valid_up_to());
                        out.push_str(std::str::from_utf8(good).unwrap_or_default());
                        out.push('\u{fffd}');
                        rest = &bad[1..];
                    }
                }
            }
            out
        }
    }
}

/// Python's universal newlines, as `open(path, encoding="utf-8").read()`
/// applies them: `\r\n` and `\r` become `\n`.
fn universal_newlines(text: String) -> String {
    if !text.contains('\r') {
        return text;
    }
    text.replace("\r\n", "\n").replace('\r', "\n")
}

struct Cli {
    scrubber: Option<&'static Scrubber>,
    /// A bar over the files of `batch` (hidden unless stderr is a terminal).
    bar: indicatif::ProgressBar,
}

impl Env for Cli {
    fn read(&self, path: &str) -> Result<String, ReadError> {
        self.bar.inc(1);
        match std::fs::read(path) {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(text) => Ok(universal_newlines(text)),
                Err(e) => Err(ReadError::Decode(mnemo_inline::python_utf8_error(&e))),
            },
            Err(e) => Err(ReadError::Os(mnemo_inline::python_os_error(path, &e))),
        }
    }

    fn scrub(&self, text: &str) -> String {
        match self.scrubber {
            Some(s) => s.scrub_with(text, ReplacementStyle::Pantheon).text,
            None => text.to_string(),
        }
    }
}

/// Writes an outcome; a closed pipe ends quietly.
fn emit(o: &Outcome) -> ExitCode {
    let mut out = std::io::stdout().lock();
    let wrote = out
        .write_all(o.stdout.as_bytes())
        .and_then(|()| out.flush());
    if let Err(e) = wrote
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        let _ = writeln!(
            std::io::stderr(),
            "error: cannot write to standard output: {e}"
        );
        return ExitCode::FAILURE;
    }
    if !o.stderr.is_empty() {
        let _ = std::io::stderr().write_all(o.stderr.as_bytes());
    }
    ExitCode::from(o.code)
}

fn fail(message: String) -> ExitCode {
    let _ = writeln!(std::io::stderr(), "error: {message}");
    ExitCode::FAILURE
}

fn scrubber() -> Result<&'static Scrubber, String> {
    Scrubber::default_rules().map_err(|e| format!("cannot load the secret-scrubbing rules: {e}"))
}

/// Runs `mnemo inline ARGS…`.
pub fn run(cmd: InlineCmd) -> ExitCode {
    run_raw(cmd.args)
}

/// Runs `mnemo inline` on the raw arguments after `inline`.
pub fn run_raw(args: Vec<OsString>) -> ExitCode {
    let args: Vec<String> = args.into_iter().map(decode_arg).collect();
    if args.first().map(String::as_str) == Some("scrub") {
        return scrub(&args[1..]);
    }
    let values = match argparse::parse(&script::SPEC, &args) {
        Parsed::Args(v) => v,
        Parsed::Exit {
            code,
            stdout,
            stderr,
        } => {
            return emit(&Outcome {
                code,
                stdout,
                stderr,
            });
        }
    };
    let a = script::Args {
        mode: get_str(&values, "mode").unwrap_or("score"),
        text: get_str(&values, "text").unwrap_or(""),
        files: get_str(&values, "files").unwrap_or(""),
        from_agent: get_str(&values, "from_agent"),
        to_agent: get_str(&values, "to_agent"),
        blocker: flag(&values, "blocker"),
    };
    // Fail closed: the modes that print text scrub it, and print nothing
    // when the scrubber cannot load. score and stats print numbers only.
    let scrubber = match a.mode {
        "compress" | "batch" => match scrubber() {
            Ok(s) => Some(s),
            Err(e) => return fail(e),
        },
        _ => None,
    };
    // `batch` over many files draws a bar on a terminal's stderr; the script
    // has no --quiet, and nothing changes on stdout or in pipes.
    let files = script::split_files(a.files).len();
    let show = a.mode == "batch"
        && files >= crate::progress::MANY_INPUTS
        && crate::progress::wanted(false, false);
    let bar = crate::progress::items(show, files, "compressing files".to_string());
    let outcome = script::run_mode(
        &a,
        &Cli {
            scrubber,
            bar: bar.clone(),
        },
    );
    bar.finish_and_clear();
    emit(&outcome)
}

fn reported(scrubber: &Scrubber, text: &str) -> (String, Vec<Reported>) {
    let out = scrubber.scrub_with(text, ReplacementStyle::Pantheon);
    let char_at = |byte: usize| text.get(..byte).map_or(0, |s| s.chars().count());
    let found = out
        .redactions
        .iter()
        .map(|r| {
            let rule = scrubber.rules().iter().find(|x| x.id() == r.rule);
            Reported {
                kind: scrub_script::kind_label(
                    &r.rule,
                    rule.and_then(|x| x.pantheon_replacement()),
                ),
                start: char_at(r.start),
                end: char_at(r.end),
                replacement: r.replacement.clone(),
            }
        })
        .collect();
    (out.text, found)
}

fn read_text(path: &str) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    String::from_utf8(bytes).map_err(|e| format!("{path}: {}", mnemo_inline::python_utf8_error(&e)))
}

/// `mnemo inline scrub`: scrub-secrets.py's command line.
fn scrub(args: &[String]) -> ExitCode {
    let action = match scrub_script::parse(args) {
        Ok(a) => a,
        Err((code, stdout, stderr)) => {
            return emit(&Outcome {
                code,
                stdout,
                stderr,
            });
        }
    };
    let scrubber = match scrubber() {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    match action {
        Action::Nothing => ExitCode::SUCCESS,
        Action::Stdin => {
            let mut bytes = Vec::new();
            if let Err(e) = std::io::stdin().read_to_end(&mut bytes) {
                return fail(format!("cannot read standard input: {e}"));
            }
            let text = match String::from_utf8(bytes) {
                Ok(t) => t,
                Err(e) => return fail(format!("<stdin>: {}", mnemo_inline::python_utf8_error(&e))),
            };
            let (clean, found) = reported(scrubber, &text);
            emit(&Outcome {
                code: 0,
                stdout: clean,
                stderr: scrub_script::stdin_notes(&found),
            })
        }
        Action::Audit(path) => match read_text(&path) {
            Ok(text) => {
                let (_, found) = reported(scrubber, &text);
                emit(&Outcome {
                    code: 0,
                    stdout: scrub_script::audit_report(&path, &found),
                    stderr: String::new(),
                })
            }
            Err(e) => fail(e),
        },
        Action::File(path) => scrub_file(scrubber, &path),
    }
}

/// `--file PATH`: the original is kept as `PATH.bak` (unless that exists,
/// as the script does), then the scrubbed text replaces `PATH` atomically
/// with the original's permissions. Nothing is written when the file has
/// nothing to redact.
fn scrub_file(scrubber: &Scrubber, path: &str) -> ExitCode {
    let text = match read_text(path) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    let (clean, found) = reported(scrubber, &text);
    if found.is_empty() {
        return emit(&Outcome {
            code: 0,
            stdout: scrub_script::file_unchanged(path),
            stderr: String::new(),
        });
    }
    let bak = format!("{path}.bak");
    let mut stdout = String::new();
    if std::fs::symlink_metadata(&bak).is_ok() {
        stdout.push_str(&scrub_script::backup_exists(&bak));
    } else if let Err(e) = keep_backup(Path::new(path), Path::new(&bak)) {
        return fail(format!("cannot keep the original as {bak}: {e}"));
    }
    if let Err(e) = replace_file(Path::new(path), clean.as_bytes()) {
        return fail(format!("cannot write {path}: {e}"));
    }
    stdout.push_str(&scrub_script::file_scrubbed(path, &bak, &found));
    emit(&Outcome {
        code: 0,
        stdout,
        stderr: String::new(),
    })
}

/// The original's bytes under `bak` (a hard link, else a synced copy);
/// never replaces an existing file.
fn keep_backup(path: &Path, bak: &Path) -> std::io::Result<()> {
    if std::fs::hard_link(path, bak).is_ok() {
        return Ok(());
    }
    let bytes = std::fs::read(path)?;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(bak)?;
    f.write_all(&bytes)?;
    f.sync_all()?;
    if let Ok(meta) = std::fs::metadata(path) {
        let _ = std::fs::set_permissions(bak, meta.permissions());
    }
    Ok(())
}

/// Replaces `path` with `bytes`: a temporary file beside it, synced, given
/// the original's permissions, renamed over it; the directory is synced.
fn replace_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.mnemo-tmp", std::process::id()));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        if let Ok(meta) = std::fs::metadata(path) {
            f.set_permissions(meta.permissions())?;
        }
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
