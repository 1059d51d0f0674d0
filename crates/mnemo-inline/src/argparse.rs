//! The command-line parsing of Python's `argparse` (CPython 3.11), for the
//! two small parsers that Pantheon's scripts declare: one optional
//! positional with choices, options that take one value or none, `-h`, and
//! an optional required mutually exclusive group.
//!
//! It reproduces what a caller of the scripts can observe: which argument
//! strings are options (so `--text -x` is refused while `--text "-x y"` and
//! `--text -5` are values), unique prefixes (`--tex`), `--opt=value`, `--`,
//! the order in which errors are found, their messages and exit status 2, and
//! `-h` anywhere before the first error.

use crate::pytext::{is_decimal, repr};

/// How many values an option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `-h` / `--help`: print the help and exit 0.
    Help,
    /// One value (`type=str`).
    Value,
    /// `store_true`.
    Flag,
}

/// One option, as declared by `add_argument`.
#[derive(Debug, Clone, Copy)]
pub struct Opt {
    /// Its option strings, in declaration order (`["-h", "--help"]`).
    pub strings: &'static [&'static str],
    /// Its destination name.
    pub dest: &'static str,
    /// What it takes.
    pub kind: Kind,
}

/// A parser declaration.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// The program name in messages.
    pub prog: &'static str,
    /// The usage block (`usage: …\n`), as `print_usage` writes it.
    pub usage: &'static str,
    /// The whole `--help` text.
    pub help: &'static str,
    /// Options, in declaration order; `-h/--help` first, as argparse adds it.
    pub options: &'static [Opt],
    /// The positional argument, if any: its name and choices.
    pub positional: Option<(&'static str, &'static [&'static str])>,
    /// Destinations of a required mutually exclusive group (may be empty).
    pub exclusive: &'static [&'static str],
}

/// A parsed value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A string option or the positional.
    Str(String),
    /// A flag that was given.
    Flag,
}

/// The outcome of parsing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// The values given, by destination (the last one given wins).
    Args(Vec<(&'static str, Value)>),
    /// The parser exits: `--help` (0, the help on stdout) or an error (2, the
    /// usage and the message on stderr).
    Exit {
        /// Exit status.
        code: u8,
        /// What goes to standard output.
        stdout: String,
        /// What goes to standard error.
        stderr: String,
    },
}

/// Looks a destination up in parsed values.
pub fn get<'a>(args: &'a [(&'static str, Value)], dest: &str) -> Option<&'a Value> {
    args.iter().rev().find(|(d, _)| *d == dest).map(|(_, v)| v)
}

/// A string value, if given.
pub fn get_str<'a>(args: &'a [(&'static str, Value)], dest: &str) -> Option<&'a str> {
    match get(args, dest) {
        Some(Value::Str(s)) => Some(s),
        _ => None,
    }
}

/// True when a flag was given.
pub fn flag(args: &[(&'static str, Value)], dest: &str) -> bool {
    matches!(get(args, dest), Some(Value::Flag))
}

/// Which action an option string names: an index into `options`, `None`
/// for an option-looking string the parser does not know.
type Action = Option<usize>;

#[derive(Debug, Clone)]
struct OptTuple {
    action: Action,
    string: String,
    explicit: Option<String>,
}

enum Stop {
    Help,
    Error(String),
}

/// `^-\d+$|^-\d*\.\d+$` as Python's `re.match` sees it (`$` also matches
/// before a final newline).
fn looks_negative(arg: &str) -> bool {
    let Some(rest) = arg.strip_prefix('-') else {
        return false;
    };
    let rest = rest.strip_suffix('\n').unwrap_or(rest);
    let digits = |s: &str| !s.is_empty() && s.chars().all(is_decimal);
    if digits(rest) {
        return true;
    }
    match rest.split_once('.') {
        Some((int, frac)) => (int.is_empty() || digits(int)) && digits(frac),
        None => false,
    }
}

struct Parser<'s> {
    spec: &'s Spec,
    strings: Vec<(&'static str, usize)>,
}

impl<'s> Parser<'s> {
    fn new(spec: &'s Spec) -> Self {
        let strings = spec
            .options
            .iter()
            .enumerate()
            .flat_map(|(i, o)| o.strings.iter().map(move |s| (*s, i)))
            .collect();
        Parser { spec, strings }
    }

    fn lookup(&self, s: &str) -> Option<usize> {
        self.strings.iter().find(|(o, _)| *o == s).map(|&(_, i)| i)
    }

    fn action_name(&self, i: usize) -> String {
        self.spec.options[i].strings.join("/")
    }

    fn option_tuples(&self, arg: &str) -> Vec<OptTuple> {
        let mut out = Vec::new();
        let second = arg.chars().nth(1);
        if second == Some('-') {
            let (prefix, explicit) = match arg.split_once('=') {
                Some((p, e)) => (p, Some(e.to_string())),
                None => (arg, None),
            };
            for &(s, i) in &self.strings {
                if s.starts_with(prefix) {
                    out.push(OptTuple {
                        action: Some(i),
                        string: s.to_string(),
                        explicit: explicit.clone(),
                    });
                }
            }
        } else {
            let split = arg.char_indices().nth(2).map_or(arg.len(), |(i, _)| i);
            let (short, short_explicit) = arg.split_at(split);
            for &(s, i) in &self.strings {
                if s == short {
                    out.push(OptTuple {
                        action: Some(i),
                        string: s.to_string(),
                        explicit: Some(short_explicit.to_string()),
                    });
                } else if s.starts_with(arg) {
                    out.push(OptTuple {
                        action: Some(i),
                        string: s.to_string(),
                        explicit: None,
                    });
                }
            }
        }
        out
    }

    fn parse_optional(&self, arg: &str) -> Result<Option<OptTuple>, Stop> {
        if !arg.starts_with('-') {
            return Ok(None);
        }
        if let Some(i) = self.lookup(arg) {
            return Ok(Some(OptTuple {
                action: Some(i),
                string: arg.to_string(),
                explicit: None,
            }));
        }
        if arg.chars().count() == 1 {
            return Ok(None);
        }
        if let Some((opt, explicit)) = arg.split_once('=')
            && let Some(i) = self.lookup(opt)
        {
            return Ok(Some(OptTuple {
                action: Some(i),
                string: opt.to_string(),
                explicit: Some(explicit.to_string()),
            }));
        }
        let tuples = self.option_tuples(arg);
        if tuples.len() > 1 {
            let options: Vec<&str> = tuples.iter().map(|t| t.string.as_str()).collect();
            return Err(Stop::Error(format!(
                "ambiguous option: {arg} could match {}",
                options.join(", ")
            )));
        }
        if let Some(t) = tuples.into_iter().next() {
            return Ok(Some(t));
        }
        if looks_negative(arg) || arg.contains(' ') {
            return Ok(None);
        }
        Ok(Some(OptTuple {
            action: None,
            string: arg.to_string(),
            explicit: None,
        }))
    }
}

struct State<'p, 's> {
    p: &'p Parser<'s>,
    args: &'p [String],
    pattern: Vec<u8>,
    options: Vec<Option<OptTuple>>,
    values: Vec<(&'static str, Value)>,
    extras: Vec<String>,
    positional_done: bool,
    seen_exclusive: Vec<usize>,
}

impl State<'_, '_> {
    fn take_option(&mut self, i: usize, value: Option<String>) -> Result<(), Stop> {
        let opt = self.p.spec.options[i];
        if opt.kind == Kind::Help {
            return Err(Stop::Help);
        }
        if self.p.spec.exclusive.contains(&opt.dest) {
            for &j in &self.seen_exclusive {
                if j != i {
                    return Err(Stop::Error(format!(
                        "argument {}: not allowed with argument {}",
                        self.p.action_name(i),
                        self.p.action_name(j)
                    )));
                }
            }
            if !self.seen_exclusive.contains(&i) {
                self.seen_exclusive.push(i);
            }
        }
        let v = match value {
            Some(s) => Value::Str(s),
            None => Value::Flag,
        };
        self.values.push((opt.dest, v));
        Ok(())
    }

    fn consume_optional(&mut self, start: usize) -> Result<usize, Stop> {
        let Some(t) = self.options[start].clone() else {
            return Ok(start + 1);
        };
        let OptTuple {
            mut action,
            mut string,
            mut explicit,
        } = t;
        let mut taken: Vec<(usize, Option<String>)> = Vec::new();
        let stop;
        loop {
            let Some(i) = action else {
                self.extras.push(self.args[start].clone());
                return Ok(start + 1);
            };
            let takes_value = self.p.spec.options[i].kind == Kind::Value;
            match explicit.take() {
                Some(e) => {
                    let single_dash = string.chars().nth(1).is_some_and(|c| c != '-');
                    if !takes_value && single_dash && !e.is_empty() {
                        taken.push((i, None));
                        let first = e.chars().next().map(String::from).unwrap_or_default();
                        let next = format!("-{first}");
                        let tail = &e[first.len()..];
                        match self.p.lookup(&next) {
                            Some(j) => {
                                action = Some(j);
                                string = next;
                                explicit = (!tail.is_empty()).then(|| tail.to_string());
                            }
                            None => {
                                return Err(Stop::Error(format!(
                                    "argument {}: ignored explicit argument {}",
                                    self.p.action_name(i),
                                    repr(&e)
                                )));
                            }
                        }
                    } else if takes_value {
                        // argparse drops the first `--` of an option's
                        // strings: `--text=--` leaves an empty list, which
                        // every use in the scripts treats as an empty string.
                        stop = start + 1;
                        taken.push((i, Some(if e == "--" { String::new() } else { e })));
                        break;
                    } else {
                        return Err(Stop::Error(format!(
                            "argument {}: ignored explicit argument {}",
                            self.p.action_name(i),
                            repr(&e)
                        )));
                    }
                }
                None => {
                    if takes_value {
                        if self.pattern.get(start + 1) != Some(&b'A') {
                            return Err(Stop::Error(format!(
                                "argument {}: expected one argument",
                                self.p.action_name(i)
                            )));
                        }
                        stop = start + 2;
                        taken.push((i, Some(self.args[start + 1].clone())));
                    } else {
                        stop = start + 1;
                        taken.push((i, None));
                    }
                    break;
                }
            }
        }
        for (i, v) in taken {
            self.take_option(i, v)?;
        }
        Ok(stop)
    }

    /// `(-*A-*)` at `start`: the number of argument strings it takes.
    fn consume_positionals(&mut self, start: usize) -> Result<usize, Stop> {
        let Some((name, choices)) = self.p.spec.positional else {
            return Ok(start);
        };
        if self.positional_done {
            return Ok(start);
        }
        let rest = &self.pattern[start..];
        let lead = rest.iter().take_while(|&&b| b == b'-').count();
        if rest.get(lead) != Some(&b'A') {
            return Ok(start);
        }
        let trail = rest[lead + 1..].iter().take_while(|&&b| b == b'-').count();
        let count = lead + 1 + trail;
        let mut strings: Vec<&String> = self.args[start..start + count].iter().collect();
        if let Some(k) = strings.iter().position(|s| s.as_str() == "--") {
            strings.remove(k);
        }
        self.positional_done = true;
        // One string is left: `(-*A-*)` holds one `A`, and only the first
        // `--` is a `-`.
        let value = strings.first().map(|s| s.as_str()).unwrap_or_default();
        if !choices.contains(&value) {
            let list: Vec<String> = choices.iter().map(|c| repr(c)).collect();
            return Err(Stop::Error(format!(
                "argument {name}: invalid choice: {} (choose from {})",
                repr(value),
                list.join(", ")
            )));
        }
        self.values.push((name, Value::Str(value.to_string())));
        Ok(start + count)
    }

    fn run(&mut self) -> Result<(), Stop> {
        let indices: Vec<usize> = (0..self.args.len())
            .filter(|&i| self.options[i].is_some())
            .collect();
        let mut start = 0usize;
        while let Some(&next) = indices.iter().find(|&&i| i >= start) {
            if start != next {
                let end = self.consume_positionals(start)?;
                if end > start {
                    start = end;
                    continue;
                }
            }
            if self.options[start].is_none() {
                self.extras.extend(self.args[start..next].iter().cloned());
                start = next;
            }
            start = self.consume_optional(start)?;
        }
        let stop = self.consume_positionals(start)?;
        self.extras.extend(self.args[stop..].iter().cloned());
        if let Some((name, _)) = self.p.spec.positional
            && !self.positional_done
        {
            return Err(Stop::Error(format!(
                "the following arguments are required: {name}"
            )));
        }
        if !self.p.spec.exclusive.is_empty() && self.seen_exclusive.is_empty() {
            let names: Vec<String> = self
                .p
                .spec
                .options
                .iter()
                .enumerate()
                .filter(|(_, o)| self.p.spec.exclusive.contains(&o.dest))
                .map(|(i, _)| self.p.action_name(i))
                .collect();
            return Err(Stop::Error(format!(
                "one of the arguments {} is required",
                names.join(" ")
            )));
        }
        if !self.extras.is_empty() {
            return Err(Stop::Error(format!(
                "unrecognized arguments: {}",
                self.extras.join(" ")
            )));
        }
        Ok(())
    }
}

/// Parses `args` (without the program name) as `spec.parse_args()` would.
pub fn parse(spec: &Spec, args: &[String]) -> Parsed {
    let p = Parser::new(spec);
    let exit = |stop: Stop| match stop {
        Stop::Help => Parsed::Exit {
            code: 0,
            stdout: spec.help.to_string(),
            stderr: String::new(),
        },
        Stop::Error(message) => Parsed::Exit {
            code: 2,
            stdout: String::new(),
            stderr: format!("{}{}: error: {message}\n", spec.usage, spec.prog),
        },
    };
    let mut pattern = Vec::with_capacity(args.len());
    let mut options = Vec::with_capacity(args.len());
    let mut iter = args.iter();
    for arg in iter.by_ref() {
        if arg == "--" {
            pattern.push(b'-');
            options.push(None);
            break;
        }
        match p.parse_optional(arg) {
            Ok(None) => {
                pattern.push(b'A');
                options.push(None);
            }
            Ok(Some(t)) => {
                pattern.push(b'O');
                options.push(Some(t));
            }
            Err(stop) => return exit(stop),
        }
    }
    for _ in iter {
        pattern.push(b'A');
        options.push(None);
    }
    let mut state = State {
        p: &p,
        args,
        pattern,
        options,
        values: Vec::new(),
        extras: Vec::new(),
        positional_done: false,
        seen_exclusive: Vec::new(),
    };
    match state.run() {
        Ok(()) => Parsed::Args(state.values),
        Err(stop) => exit(stop),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPTS: &[Opt] = &[
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
            strings: &["--blocker"],
            dest: "blocker",
            kind: Kind::Flag,
        },
    ];
    const SPEC: Spec = Spec {
        prog: "p",
        usage: "usage: p\n",
        help: "help\n",
        options: OPTS,
        positional: Some(("mode", &["score", "stats"])),
        exclusive: &[],
    };

    fn run(args: &[&str]) -> Parsed {
        let v: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        parse(&SPEC, &v)
    }

    fn err(args: &[&str]) -> String {
        match run(args) {
            Parsed::Exit {
                code: 2, stderr, ..
            } => stderr
                .strip_prefix("usage: p\np: error: ")
                .unwrap_or(&stderr)
                .trim_end()
                .to_string(),
            other => panic!("{args:?}: {other:?}"),
        }
    }

    fn text(args: &[&str]) -> Option<String> {
        match run(args) {
            Parsed::Args(a) => get_str(&a, "text").map(str::to_string),
            other => panic!("{args:?}: {other:?}"),
        }
    }

    #[test]
    fn hyphen_values_as_argparse() {
        assert_eq!(
            err(&["score", "--text", "-x"]),
            "argument --text: expected one argument"
        );
        assert_eq!(text(&["score", "--text", "-x y"]).as_deref(), Some("-x y"));
        assert_eq!(text(&["score", "--text", "-5"]).as_deref(), Some("-5"));
        assert_eq!(
            text(&["score", "--text", "-.5\n"]).as_deref(),
            Some("-.5\n")
        );
        assert_eq!(text(&["score", "--text", "-"]).as_deref(), Some("-"));
        assert_eq!(text(&["score", "--text=-x"]).as_deref(), Some("-x"));
        assert_eq!(text(&["score", "--tex", "a"]).as_deref(), Some("a"));
        assert_eq!(
            err(&["score", "--text", "--", "-x"]),
            "argument --text: expected one argument"
        );
        assert_eq!(text(&["--", "score"]), None);
    }

    #[test]
    fn errors_as_argparse() {
        assert_eq!(
            err(&["bogus"]),
            "argument mode: invalid choice: 'bogus' (choose from 'score', 'stats')"
        );
        assert_eq!(err(&[]), "the following arguments are required: mode");
        assert_eq!(err(&["score", "x", "-q"]), "unrecognized arguments: x -q");
        assert_eq!(
            err(&["--f", "a", "score"]),
            "ambiguous option: --f could match --files, --from-agent"
        );
        assert_eq!(
            err(&["score", "--blocker=1"]),
            "argument --blocker: ignored explicit argument '1'"
        );
        assert_eq!(
            err(&["score", "-hx"]),
            "argument -h/--help: ignored explicit argument 'x'"
        );
        assert_eq!(err(&["score", "--", "x"]), "unrecognized arguments: x");
    }

    #[test]
    fn help_wins_until_the_first_error() {
        assert!(matches!(
            run(&["score", "--help", "--text"]),
            Parsed::Exit { code: 0, .. }
        ));
        assert!(matches!(
            run(&["bogus", "-h"]),
            Parsed::Exit { code: 2, .. }
        ));
        assert!(matches!(
            run(&["-h", "bogus"]),
            Parsed::Exit { code: 0, .. }
        ));
    }
}
