//! The command line of Pantheon's `scrub-secrets.py` (`mnemo inline scrub`):
//! its argparse declaration (`--file FILE | --stdin | --audit FILE`, one of
//! them required) and the lines it prints. Files and the scrubber are the
//! caller's: this module decides what to do and words the report.

use crate::argparse::{self, Kind, Opt, Parsed, Spec, get_str};

const OPTIONS: &[Opt] = &[
    Opt {
        strings: &["-h", "--help"],
        dest: "help",
        kind: Kind::Help,
    },
    Opt {
        strings: &["--file"],
        dest: "file",
        kind: Kind::Value,
    },
    Opt {
        strings: &["--stdin"],
        dest: "stdin",
        kind: Kind::Flag,
    },
    Opt {
        strings: &["--audit"],
        dest: "audit",
        kind: Kind::Value,
    },
];

const USAGE: &str = "usage: mnemo inline scrub [-h] (--file FILE | --stdin | --audit AUDIT)\n";

const HELP: &str = "usage: mnemo inline scrub [-h] (--file FILE | --stdin | --audit AUDIT)

Scrub secrets from text before promoting to permanent memory bank files
(Pantheon's scrub-secrets.py command line, with mnemo's scrubber).

options:
  -h, --help     show this help message and exit
  --file FILE    Scrub file in-place (with .bak backup)
  --stdin        Read stdin, write scrubbed to stdout
  --audit AUDIT  Only report what would be redacted
";

/// The script's argparse declaration.
pub const SPEC: Spec = Spec {
    prog: "mnemo inline scrub",
    usage: USAGE,
    help: HELP,
    options: OPTIONS,
    positional: None,
    exclusive: &["file", "stdin", "audit"],
};

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// `--file PATH`: scrub in place, keeping the original as `PATH.bak`.
    File(String),
    /// `--stdin`: standard input to standard output.
    Stdin,
    /// `--audit PATH`: report only.
    Audit(String),
    /// Nothing (`--file ''`): the script does nothing and exits 0.
    Nothing,
}

/// Parses the command line: the action, or what argparse prints and its
/// exit status.
pub fn parse(args: &[String]) -> Result<Action, (u8, String, String)> {
    let values = match argparse::parse(&SPEC, args) {
        Parsed::Args(v) => v,
        Parsed::Exit {
            code,
            stdout,
            stderr,
        } => return Err((code, stdout, stderr)),
    };
    // The script tests them in this order, and an empty path counts as absent.
    if let Some(f) = get_str(&values, "file").filter(|f| !f.is_empty()) {
        return Ok(Action::File(f.to_string()));
    }
    if argparse::flag(&values, "stdin") {
        return Ok(Action::Stdin);
    }
    if let Some(f) = get_str(&values, "audit").filter(|f| !f.is_empty()) {
        return Ok(Action::Audit(f.to_string()));
    }
    Ok(Action::Nothing)
}

/// One redaction as the script reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reported {
    /// The kind of secret (`github_pat`, `bearer_token`, …).
    pub kind: String,
    /// Character offsets into the original text.
    pub start: usize,
    /// End (exclusive), in characters.
    pub end: usize,
    /// What replaced it.
    pub replacement: String,
}

/// The script's name for the kind of secret a rule found: its own label
/// where Pantheon's scrubber has that kind, else the rule id with `_`.
pub fn kind_label(rule: &str, pantheon_replacement: Option<&str>) -> String {
    let by_replacement = match pantheon_replacement {
        Some("[SSH PRIVATE KEY REDACTED]") => Some("ssh_private_key"),
        Some("[PRIVATE KEY REDACTED]") => Some("private_key"),
        Some("[CERTIFICATE REDACTED]") => Some("certificate"),
        Some("[JWT REDACTED]") => Some("jwt"),
        Some("[GITHUB TOKEN REDACTED]") => Some("github_pat"),
        Some("[OPENAI KEY REDACTED]") => Some("openai_key"),
        Some("[AWS KEY REDACTED]") => Some("aws_key"),
        Some("[GOOGLE API KEY REDACTED]") => Some("google_api_key"),
        Some("[SLACK TOKEN REDACTED]") => Some("slack_token"),
        Some("[HEROKU API KEY REDACTED]") => Some("heroku_uuid"),
        Some("[POSTGRESQL CONNECTION REDACTED]") => Some("postgresql_conn"),
        Some("[MYSQL CONNECTION REDACTED]") => Some("mysql_conn"),
        Some("[REDIS CONNECTION REDACTED]") => Some("redis_conn"),
        Some("[ENV EXPORT REDACTED]") => Some("env_export"),
        _ => None,
    };
    match by_replacement {
        Some(l) => l.to_string(),
        None if rule == "bearer-token" => "bearer_token".to_string(),
        None => rule.replace('-', "_"),
    }
}

/// `--stdin`: the lines written to standard error, one per redaction.
pub fn stdin_notes(found: &[Reported]) -> String {
    found
        .iter()
        .map(|r| format!("  [REDACTED {}]\n", r.kind))
        .collect()
}

/// `--audit PATH`: the report.
pub fn audit_report(path: &str, found: &[Reported]) -> String {
    if found.is_empty() {
        return format!("[OK] {path}: no secrets found\n");
    }
    let mut s = format!(
        "[SCAN] {path}: {} potential secret(s) found:\n",
        found.len()
    );
    for r in found {
        s.push_str(&format!(
            "   [{}] at ({}, {}) -> {}\n",
            r.kind, r.start, r.end, r.replacement
        ));
    }
    s
}

/// `--file PATH` without anything to redact.
pub fn file_unchanged(path: &str) -> String {
    format!("[OK] {path}: no secrets found, file unchanged\n")
}

/// `--file PATH` when `PATH.bak` exists already (it is kept as it is).
pub fn backup_exists(bak: &str) -> String {
    format!("[WARN] {bak} already exists, skipping backup\n")
}

/// `--file PATH` after the file was rewritten.
pub fn file_scrubbed(path: &str, bak: &str, found: &[Reported]) -> String {
    let kinds: Vec<&str> = found.iter().map(|r| r.kind.as_str()).collect();
    format!(
        "[SECURE] {path}: {} secret(s) redacted ({})\n   Backup: {bak}\n",
        found.len(),
        kinds.join(" + ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Action, (u8, String, String)> {
        let v: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        parse(&v)
    }

    #[test]
    fn command_line_like_the_script() {
        assert_eq!(p(&["--stdin"]), Ok(Action::Stdin));
        assert_eq!(p(&["--fi", "a.md"]), Ok(Action::File("a.md".into())));
        assert_eq!(p(&["--audit=a.md"]), Ok(Action::Audit("a.md".into())));
        assert_eq!(p(&["--file", ""]), Ok(Action::Nothing));
        let (code, _, err) = p(&[]).unwrap_err();
        assert_eq!(code, 2);
        assert!(err.ends_with("error: one of the arguments --file --stdin --audit is required\n"));
        let (_, _, err) = p(&["--stdin", "--file", "x"]).unwrap_err();
        assert!(err.ends_with("error: argument --file: not allowed with argument --stdin\n"));
    }

    #[test]
    fn reports_like_the_script() {
        let found = [Reported {
            kind: kind_label("github-pat", Some("[GITHUB TOKEN REDACTED]")),
            start: 4,
            end: 44,
            replacement: "[GITHUB TOKEN REDACTED]".into(),
        }];
        assert_eq!(
            file_scrubbed("a.md", "a.md.bak", &found),
            "[SECURE] a.md: 1 secret(s) redacted (github_pat)\n   Backup: a.md.bak\n"
        );
        assert_eq!(
            audit_report("a.md", &found),
            "[SCAN] a.md: 1 potential secret(s) found:\n   [github_pat] at (4, 44) -> [GITHUB TOKEN REDACTED]\n"
        );
        assert_eq!(stdin_notes(&found), "  [REDACTED github_pat]\n");
        assert_eq!(kind_label("stripe-secret-key", None), "stripe_secret_key");
    }
}
