//! A deterministic fact extractor over summary text.
//!
//! It finds the concrete facts a next agent needs — HTTP endpoints, status
//! codes, tables and columns, foreign keys, migrations, components, event
//! handlers, environment variables, config keys, payload shapes, data types,
//! defaults, deploy targets, file paths and other backticked identifiers —
//! plus the sentences that state decisions and gotchas. Every fact keeps the
//! spelling of the source text, so that it can be found again verbatim.
//!
//! Patterns are fixed and tested; the extractor never panics on any text
//! (a pattern that failed to compile would simply find nothing).

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

/// The kinds of facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FactKind {
    /// `POST /api/v1/orders`, or a bare `/api/...` path.
    Endpoint,
    /// An HTTP status code (`409`).
    StatusCode,
    /// A table name.
    Table,
    /// A column or field name.
    Column,
    /// A foreign key / relationship (`users(id)`).
    ForeignKey,
    /// A migration version or file stem.
    Migration,
    /// A UI component (`LoginForm`) or hook.
    Component,
    /// An event handler (`onSubmit`).
    EventHandler,
    /// An environment variable (`ORDERS_QUEUE_URL`).
    EnvVar,
    /// A config key or `key=value` change.
    ConfigKey,
    /// A payload / state shape (`{email, password}`).
    Payload,
    /// An HTTP header (`X-Org-Id`, `Retry-After`).
    Header,
    /// A data type bound to a name (`expires_at timestamptz`).
    DataType,
    /// A default value.
    Default,
    /// A deploy target.
    DeployTarget,
    /// A file path.
    File,
    /// Any other backticked identifier.
    Code,
}

impl FactKind {
    /// The label used when facts are listed on a line.
    pub fn label(self) -> &'static str {
        match self {
            FactKind::Endpoint => "endpoints",
            FactKind::StatusCode => "status",
            FactKind::Table => "tables",
            FactKind::Column => "columns",
            FactKind::ForeignKey => "FK",
            FactKind::Migration => "migration",
            FactKind::Component => "components",
            FactKind::EventHandler => "handlers",
            FactKind::EnvVar => "env",
            FactKind::ConfigKey => "config",
            FactKind::Payload => "shape",
            FactKind::Header => "headers",
            FactKind::DataType => "types",
            FactKind::Default => "defaults",
            FactKind::DeployTarget => "deploy",
            FactKind::File => "files",
            FactKind::Code => "code",
        }
    }

    /// Every kind, in the default priority order.
    pub const DEFAULT_ORDER: [FactKind; 17] = [
        FactKind::Endpoint,
        FactKind::StatusCode,
        FactKind::Table,
        FactKind::Column,
        FactKind::ForeignKey,
        FactKind::Migration,
        FactKind::Component,
        FactKind::EnvVar,
        FactKind::ConfigKey,
        FactKind::Payload,
        FactKind::Header,
        FactKind::DataType,
        FactKind::Default,
        FactKind::EventHandler,
        FactKind::DeployTarget,
        FactKind::Code,
        FactKind::File,
    ];

    /// The kinds a variant's fact name (`Config::variant_for(..).include`)
    /// asks for first.
    pub fn for_variant(name: &str) -> &'static [FactKind] {
        match name {
            "endpoints" | "model_endpoints" => &[FactKind::Endpoint],
            "payload_shape" => &[FactKind::Payload, FactKind::Header],
            "status_codes" => &[FactKind::StatusCode],
            "tables" => &[FactKind::Table],
            "columns" | "fields" => &[FactKind::Column],
            "relationships" | "foreign_keys" => &[FactKind::ForeignKey],
            "migration_version" => &[FactKind::Migration],
            "data_types" => &[FactKind::DataType],
            "defaults" => &[FactKind::Default],
            "components" => &[FactKind::Component],
            "data_requirements" => &[FactKind::Endpoint, FactKind::Payload, FactKind::Header],
            "event_handlers" => &[FactKind::EventHandler],
            "ui_state" => &[FactKind::Payload, FactKind::Column],
            "pipeline_io" => &[FactKind::Payload, FactKind::Endpoint, FactKind::File],
            "deploy_target" => &[FactKind::DeployTarget],
            "env_vars" => &[FactKind::EnvVar],
            "config_changes" => &[FactKind::ConfigKey],
            "all" => &FactKind::DEFAULT_ORDER,
            _ => &[],
        }
    }

    /// The priority order of kinds for a variant: its kinds first (in the
    /// order named), then the rest in [`FactKind::DEFAULT_ORDER`].
    pub fn priority(include: &[String]) -> Vec<FactKind> {
        let mut out: Vec<FactKind> = Vec::with_capacity(16);
        for name in include {
            for &k in FactKind::for_variant(name) {
                if !out.contains(&k) {
                    out.push(k);
                }
            }
        }
        for k in FactKind::DEFAULT_ORDER {
            if !out.contains(&k) {
                out.push(k);
            }
        }
        out
    }
}

/// One fact found in the text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fact {
    /// What it is.
    pub kind: FactKind,
    /// Its text, as written in the source.
    pub text: String,
    /// Byte offset in the source text.
    pub pos: usize,
}

/// The facts and notable sentences of one summary.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Facts {
    /// Facts, in order of appearance, each `(kind, text)` once.
    pub facts: Vec<Fact>,
    /// The sentences of the text, in order.
    pub sentences: Vec<String>,
    /// Sentences that state a gotcha (note, careful, must, never, only, …).
    pub gotchas: Vec<String>,
    /// Sentences that state a decision (decided, instead of, trade-off, because, …).
    pub decisions: Vec<String>,
    /// True when the text mentions a new table / column / migration / ALTER /
    /// CREATE TABLE.
    pub schema_change: bool,
    /// True when the text mentions a new component.
    pub new_component: bool,
}

impl Facts {
    /// Facts of one kind.
    pub fn of(&self, kind: FactKind) -> impl Iterator<Item = &Fact> {
        self.facts.iter().filter(move |f| f.kind == kind)
    }

    /// True when a fact of `kind` exists.
    pub fn has(&self, kind: FactKind) -> bool {
        self.of(kind).next().is_some()
    }
}

fn re(pattern: &str) -> Option<Regex> {
    Regex::new(pattern).ok()
}

macro_rules! lazy_re {
    ($name:ident, $pat:expr) => {
        static $name: LazyLock<Option<Regex>> = LazyLock::new(|| re($pat));
    };
}

lazy_re!(
    ENDPOINT,
    r"\b(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)\s+(/[A-Za-z0-9_\-./{}:<>*]*)"
);
lazy_re!(
    BARE_PATH,
    r"(?:^|[\s(`'\x22\[])(/(?:api|v[0-9]+|graphql|auth|ws)(?:/[A-Za-z0-9_\-.{}:<>*]+)*)"
);
lazy_re!(STATUS, r"\b([1-5][0-9][0-9])\b");
lazy_re!(
    TABLE_SQL,
    r"(?i)\b(?:create|alter|drop|truncate)\s+table\s+(?:if\s+(?:not\s+)?exists\s+)?[`\x22]?([A-Za-z_][A-Za-z0-9_.]*)"
);
lazy_re!(TABLE_AFTER, r"(?i)\btables?\b\s*:?\s*");
lazy_re!(
    TABLE_BEFORE,
    r"(?:`([A-Za-z_][A-Za-z0-9_.]*)`|\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)|\b(?i:the|a|an|new|its|our)\s+([a-z][a-z0-9_]*))\s+(?:join\s+)?(?i:tables?)\b"
);
lazy_re!(SNAKE, r"\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b");
lazy_re!(
    HEADER,
    r"\b((?:X-[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*)|(?:[A-Z][a-z]+(?:-[A-Z][a-z0-9]*)+))\b"
);
lazy_re!(
    COLUMN_AFTER,
    r"(?i)\b(?:add\s+)?(?:columns?|fields?)\b\s*:?\s*"
);
lazy_re!(
    COLUMN_BEFORE,
    r"(?:`([A-Za-z_][A-Za-z0-9_]*)`|\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+))\s+(?i:columns?|fields?)\b"
);
lazy_re!(
    DOTTED_COLUMN,
    r"\b([a-z][a-z0-9_]*\.[a-z][a-z0-9]*_[a-z0-9_]+)\b"
);
lazy_re!(
    FK,
    r"(?i)\b(?:FK|foreign\s+keys?|references|belongs\s+to|relationship\s+(?:to|with))\s*(?:to|on|→|->|:)?\s*[`\x22]?([A-Za-z_][A-Za-z0-9_.]*(?:\s*\([A-Za-z_][A-Za-z0-9_, ]*\))?)"
);
lazy_re!(
    MIGRATION,
    r"(?i)\bmigrations?\s+(?:version\s+|file\s+|no\.?\s*|#)?[`\x22]?([0-9]{3,14}[A-Za-z0-9_\-]*|V[0-9]+__[A-Za-z0-9_]+)"
);
lazy_re!(MIGRATION_V, r"\b(V[0-9]+__[A-Za-z0-9_]+)");
lazy_re!(PASCAL, r"\b([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+)\b");
lazy_re!(HOOK, r"\b(use[A-Z][A-Za-z0-9]+)\b");
lazy_re!(HANDLER, r"\b((?:on|handle)[A-Z][A-Za-z0-9]+)\b");
lazy_re!(ENV, r"\$?\b([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)\b");
lazy_re!(
    ENV_WORD,
    r"(?i:\benv(?:ironment)?\s+(?:var(?:iable)?s?\s+)?)\$?([A-Z][A-Z0-9_]{2,})\b"
);
lazy_re!(
    CONFIG_ASSIGN,
    r"\b([a-z][a-z0-9_\-]*(?:\.[a-z][a-z0-9_\-]*)*)\s*=\s*([A-Za-z0-9_\-./:%]+)"
);
lazy_re!(
    CONFIG_DOTTED,
    r"`([a-z][a-z0-9_\-]*(?:\.[a-z][a-z0-9_\-]*)+)`|\b([a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)+)\b"
);
lazy_re!(PAYLOAD, r"\{([^{}\n]{1,160})\}");
lazy_re!(
    DATATYPE,
    r"(?i)\b([a-z][a-z0-9_]*)\s*(?::\s*|\(\s*|\s)(uuid|text|varchar(?:\([0-9]+\))?|char(?:\([0-9]+\))?|bigint|smallint|integer|int|serial|bigserial|boolean|bool|timestamptz|timestamp|datetime|date|jsonb|json|numeric(?:\([0-9]+,\s*[0-9]+\))?|decimal|float|double|real|bytea|string|number|enum)\b"
);
lazy_re!(
    DEFAULT,
    r"(?i)\bdefaults?\s+(?:to\s+|of\s+|=\s*|is\s+)?([`\x22']?[A-Za-z0-9_\-.:()%]+[`\x22']?)"
);
lazy_re!(
    DEPLOY,
    r"(?i)\bdeploy(?:ed|s|ing)?\s+(?:\w+\s+){0,3}?(?:to|on)\s+([A-Za-z0-9_.\-/:]+(?:\s+[A-Z][A-Za-z0-9]+)?)"
);
lazy_re!(
    FILE,
    r"(?:^|[\s(`'\x22\[,])((?:[A-Za-z0-9_.\-@]+/)*(?:[A-Za-z0-9_\-@]+\.(?:rs|py|ts|tsx|js|jsx|mjs|cjs|sql|toml|yaml|yml|json|md|go|java|kt|rb|css|scss|html|sh|tf|ini|cfg|conf|proto|graphql|vue|svelte|swift|c|h|cpp|hpp|cs|php|ex|exs|txt|lock|env)|Dockerfile|Makefile|(?:[A-Za-z0-9_\-]+\.)?Dockerfile))\b"
);
lazy_re!(DIR, r"(?:^|[\s(`'\x22\[,])((?:[A-Za-z0-9_.\-]+/){2,})");
lazy_re!(CODE, r"`([^`\n]{1,80})`");

/// Words that a table / column list never names.
const STOP_WORDS: &[&str] = &[
    "a",
    "an",
    "and",
    "are",
    "as",
    "at",
    "be",
    "by",
    "for",
    "from",
    "has",
    "have",
    "in",
    "into",
    "is",
    "it",
    "its",
    "now",
    "of",
    "on",
    "or",
    "per",
    "so",
    "that",
    "the",
    "their",
    "them",
    "then",
    "this",
    "to",
    "was",
    "were",
    "which",
    "with",
    "without",
    "plus",
    "both",
    "each",
    "all",
    "new",
    "old",
    "were",
    "names",
    "name",
    "schema",
    "changes",
    "change",
    "added",
    "add",
    "created",
    "updated",
    "also",
    "not",
    "only",
    "data",
    "level",
    "row",
    "rows",
    "table",
    "tables",
    "column",
    "columns",
    "field",
    "fields",
    "validation",
    "values",
    "value",
    "types",
    "type",
    "list",
    "lists",
    "missing",
    "mapping",
    "more",
    "set",
    "sets",
];

/// Units that make a three-digit number something other than a status code.
const NUMBER_UNITS: &[&str] = &[
    "ms",
    "s",
    "sec",
    "secs",
    "seconds",
    "second",
    "min",
    "mins",
    "minutes",
    "minute",
    "mb",
    "kb",
    "gb",
    "tb",
    "%",
    "lines",
    "line",
    "files",
    "file",
    "tests",
    "test",
    "rows",
    "items",
    "records",
    "chars",
    "characters",
    "bytes",
    "px",
    "days",
    "day",
    "hours",
    "hour",
    "users",
    "requests",
    "entries",
    "tokens",
    "words",
    "times",
    "x",
    "k",
    "m",
    "rps",
    "qps",
    "ops",
    "pixels",
    "floats",
    "dimensions",
    "dims",
    "ints",
    "rows.",
    "kib",
    "mib",
    "gib",
    "px.",
    "steps",
    "calls",
    "iterations",
    "retries",
    "workers",
    "threads",
    "cores",
    "nodes",
    "pods",
    "replicas",
    "b",
];

/// Words around a number that make it a status code.
const STATUS_CONTEXT: &[&str] = &[
    "status",
    "statuses",
    "return",
    "returns",
    "returned",
    "returning",
    "respond",
    "responds",
    "responded",
    "response",
    "http",
    "code",
    "codes",
    "error",
    "errors",
    "with",
    "on",
    "gives",
    "yields",
    "answers",
    "->",
    "→",
    "or",
    "and",
    "a",
    "an",
    "get",
    "gets",
    "emit",
    "emits",
    "send",
    "sends",
    "raise",
    "raises",
    "handle",
    "handles",
    "throws",
];

const STATUS_REASONS: &[&str] = &[
    "ok",
    "created",
    "accepted",
    "no",
    "bad",
    "unauthorized",
    "forbidden",
    "not",
    "conflict",
    "gone",
    "unprocessable",
    "too",
    "internal",
    "service",
    "gateway",
    "payment",
    "precondition",
    "payload",
    "moved",
    "found",
    "see",
    "temporary",
    "permanent",
    "method",
    "request",
    "locked",
    "response",
    "responses",
    "status",
    "error",
    "errors",
    "if",
    "when",
    "for",
    "on",
];

const GOTCHA_WORDS: &[&str] = &[
    "note",
    "careful",
    "must",
    "never",
    "only",
    "gotcha",
    "warning",
    "beware",
    "caveat",
    "important",
    "don't",
    "do not",
    "cannot",
    "can't",
    "avoid",
    "required",
    "requires",
    "watch out",
    "make sure",
    "ensure",
];

/// Words that mark a sentence as a gotcha explicitly.
const STRONG_GOTCHA_WORDS: &[&str] = &[
    "note",
    "careful",
    "gotcha",
    "warning",
    "beware",
    "caveat",
    "important",
    "watch out",
    "trade-off",
    "tradeoff",
];

const DECISION_WORDS: &[&str] = &[
    "decided",
    "decision",
    "instead of",
    "trade-off",
    "tradeoff",
    "because",
    "chose",
    "chosen",
    "opted",
    "in favour of",
    "in favor of",
    "rather than",
];

const COMPONENT_WORDS: &[&str] = &[
    "component",
    "page",
    "form",
    "modal",
    "view",
    "widget",
    "screen",
    "dialog",
    "hook",
    "provider",
    "button",
    "panel",
    "layout",
    "ui",
];

const COMPONENT_SUFFIXES: &[&str] = &[
    "Form",
    "Page",
    "Modal",
    "View",
    "Component",
    "Button",
    "Dialog",
    "Card",
    "List",
    "Table",
    "Provider",
    "Context",
    "Screen",
    "Panel",
    "Widget",
    "Layout",
    "Banner",
    "Menu",
    "Bar",
    "Field",
    "Input",
    "Hook",
];

const HTTP_METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

/// SQL and status words that look like UPPER_SNAKE environment variables.
const NOT_ENV: &[&str] = &[
    "NEEDS_REVISION",
    "IN_PROGRESS",
    "REQUEST_CHANGES",
    "CREATE_TABLE",
    "ALTER_TABLE",
    "NOT_NULL",
    "PRIMARY_KEY",
    "FOREIGN_KEY",
    "ON_DELETE",
    "TOTAL_BUDGET",
    "PER_PHASE_BUDGET",
];

/// True when `needle` (lower case, may hold spaces) occurs in `hay` (lower
/// case) at the start of a word.
pub(crate) fn has_word(hay: &str, needle: &str) -> bool {
    let mut from = 0;
    while let Some(i) = hay.get(from..).and_then(|h| h.find(needle)) {
        let at = from + i;
        let before_ok = hay[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric());
        if before_ok {
            return true;
        }
        from = at + needle.len().max(1);
        while !hay.is_char_boundary(from) && from < hay.len() {
            from += 1;
        }
    }
    false
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

fn is_stop(s: &str) -> bool {
    STOP_WORDS.contains(&s.to_ascii_lowercase().as_str())
}

/// Splits text into sentences: at `.`, `!`, `?` followed by whitespace, at
/// `;` followed by whitespace, and at line breaks. Pieces are trimmed.
pub fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let next_ws = bytes.get(i + 1).is_none_or(|n| n.is_ascii_whitespace());
        let cut = match b {
            b'\n' => Some(i),
            b'.' | b'!' | b'?' if next_ws => {
                // Not after a common abbreviation (e.g., i.e., etc.).
                let head = text.get(start..=i).unwrap_or_default().to_ascii_lowercase();
                let abbrev = ["e.g.", "i.e.", "etc.", "vs.", "approx."]
                    .iter()
                    .any(|a| head.ends_with(a));
                (!abbrev).then_some(i + 1)
            }
            _ => None,
        };
        if let Some(end) = cut {
            if let Some(s) = text.get(start..end) {
                let s = s.trim().trim_start_matches(['-', '*', '•']).trim();
                if !s.is_empty() {
                    out.push(s.to_string());
                }
            }
            start = end;
        }
        i += 1;
    }
    if let Some(s) = text.get(start..) {
        let s = s.trim().trim_start_matches(['-', '*', '•']).trim();
        if !s.is_empty() {
            out.push(s.to_string());
        }
    }
    out
}

struct Collector {
    facts: Vec<Fact>,
    seen: HashSet<(FactKind, String)>,
}

impl Collector {
    /// Pushes capture group 1 of every match of `re` (when it compiled).
    fn push_group1(&mut self, re: Option<&Regex>, kind: FactKind, text: &str) {
        for m in re.into_iter().flat_map(|r| r.captures_iter(text)) {
            if let Some(t) = m.get(1) {
                self.push(kind, t.as_str(), t.start());
            }
        }
    }

    fn push(&mut self, kind: FactKind, text: &str, pos: usize) {
        let mut text = text
            .trim()
            .trim_end_matches(['.', ',', ';', ':', '!', '?'])
            .trim();
        while text.ends_with(')') && text.matches(')').count() > text.matches('(').count() {
            text = text[..text.len() - 1].trim_end_matches(['.', ',', ';', ':']);
        }
        if text.is_empty() {
            return;
        }
        if self.seen.insert((kind, text.to_ascii_lowercase())) {
            self.facts.push(Fact {
                kind,
                text: text.to_string(),
                pos,
            });
        }
    }
}

/// Reads a list of identifiers (`a, b and c`, `` `a` + `b` ``, `a (uuid)`)
/// at the start of `rest`; returns `(offset, ident)` pairs.
fn ident_list(rest: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut i = 0;
    let b = rest.as_bytes();
    loop {
        // Skip a quote.
        let quoted = matches!(b.get(i), Some(b'`' | b'"'));
        let start = if quoted { i + 1 } else { i };
        let mut end = start;
        while end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'_') {
            end += 1;
        }
        let Some(word) = rest.get(start..end) else {
            break;
        };
        if word.is_empty() || !is_ident(word) {
            break;
        }
        let snake = word.contains('_');
        if !quoted && !snake && is_stop(word) {
            break;
        }
        // An unquoted plain word is accepted only if it is lower case.
        if !quoted && !snake && word.chars().any(|c| c.is_ascii_uppercase()) {
            break;
        }
        out.push((start, word.to_string()));
        i = end;
        if quoted && b.get(i) == Some(&b'`') || b.get(i) == Some(&b'"') {
            i += 1;
        }
        // Optional type in parentheses: `a (uuid)`.
        let after = rest.get(i..).unwrap_or_default();
        let trimmed = after.trim_start();
        if trimmed.starts_with('(')
            && let Some(close) = trimmed.find(')')
        {
            i += after.len() - trimmed.len() + close + 1;
        }
        // Separator.
        let after = rest.get(i..).unwrap_or_default();
        let sep = [", and ", ", ", " and ", " + ", "+", "/", " & ", ","]
            .iter()
            .find(|s| after.starts_with(*s));
        match sep {
            Some(s) => i += s.len(),
            None => break,
        }
        if out.len() >= 12 {
            break;
        }
    }
    out
}

/// Extracts the facts of a text. `files` (the record's files) are added as
/// [`FactKind::File`] facts after those found in the text.
pub fn extract(text: &str, files: &[String]) -> Facts {
    let mut c = Collector {
        facts: Vec::new(),
        seen: HashSet::new(),
    };
    let lower = text.to_ascii_lowercase();
    let mut endpoint_spans: Vec<(usize, usize)> = Vec::new();

    if let Some(r) = ENDPOINT.as_ref() {
        for m in r.captures_iter(text) {
            let (Some(all), Some(method), Some(path)) = (m.get(0), m.get(1), m.get(2)) else {
                continue;
            };
            let path = path.as_str().trim_end_matches(['.', ',', ';', ':', ')']);
            if path.len() <= 1 && path != "/" {
                continue;
            }
            endpoint_spans.push((all.start(), all.end()));
            c.push(
                FactKind::Endpoint,
                &format!("{} {}", method.as_str(), path),
                all.start(),
            );
        }
    }
    if let Some(r) = BARE_PATH.as_ref() {
        for m in r.captures_iter(text) {
            let Some(p) = m.get(1) else { continue };
            if endpoint_spans
                .iter()
                .any(|&(s, e)| p.start() >= s && p.start() < e)
            {
                continue;
            }
            c.push(FactKind::Endpoint, p.as_str(), p.start());
        }
    }
    if let Some(r) = STATUS.as_ref() {
        for m in r.captures_iter(text) {
            let Some(n) = m.get(1) else { continue };
            if is_status_code(text, n.start(), n.end())
                && !endpoint_spans
                    .iter()
                    .any(|&(s, e)| n.start() >= s && n.start() < e)
            {
                c.push(FactKind::StatusCode, n.as_str(), n.start());
            }
        }
    }
    // Tables.
    c.push_group1(TABLE_SQL.as_ref(), FactKind::Table, text);
    if let Some(r) = TABLE_BEFORE.as_ref() {
        for m in r.captures_iter(text) {
            if let Some(t) = m.get(1).or_else(|| m.get(2)).or_else(|| m.get(3))
                && !is_stop(t.as_str())
            {
                c.push(FactKind::Table, t.as_str(), t.start());
            }
        }
    }
    if let Some(r) = TABLE_AFTER.as_ref() {
        for m in r.find_iter(text) {
            // A plain word after "table" names it only after "new" / "create"
            // ("new table invoices"); otherwise it must look like an
            // identifier (`quoted`, snake_case) — "the table needs" is prose.
            let head = lower[..m.start()].trim_end();
            let after_new = head.ends_with("new") || head.ends_with("create");
            let rest = text.get(m.end()..).unwrap_or_default();
            for (off, word) in ident_list(rest) {
                let quoted = rest[..off].ends_with(['`', '"']);
                if after_new || quoted || word.contains('_') {
                    c.push(FactKind::Table, &word, m.end() + off);
                } else {
                    break;
                }
            }
        }
    }
    // Columns.
    if let Some(r) = COLUMN_AFTER.as_ref() {
        for m in r.find_iter(text) {
            let rest = text.get(m.end()..).unwrap_or_default();
            for (off, word) in ident_list(rest) {
                c.push(FactKind::Column, &word, m.end() + off);
            }
        }
    }
    if let Some(r) = COLUMN_BEFORE.as_ref() {
        for m in r.captures_iter(text) {
            if let Some(t) = m.get(1).or_else(|| m.get(2)) {
                c.push(FactKind::Column, t.as_str(), t.start());
            }
        }
    }
    if let Some(r) = DOTTED_COLUMN.as_ref() {
        for m in r.captures_iter(text) {
            if let Some(t) = m.get(1)
                && !looks_like_file(t.as_str())
            {
                c.push(FactKind::Column, t.as_str(), t.start());
            }
        }
    }
    if let Some(r) = FK.as_ref() {
        for m in r.captures_iter(text) {
            if let Some(t) = m.get(1) {
                let word = t.as_str().split(['(', ' ']).next().unwrap_or_default();
                if !is_stop(word) {
                    c.push(FactKind::ForeignKey, t.as_str(), t.start());
                }
            }
        }
    }
    // Migrations.
    for r in [MIGRATION.as_ref(), MIGRATION_V.as_ref()]
        .into_iter()
        .flatten()
    {
        for m in r.captures_iter(text) {
            if let Some(t) = m.get(1) {
                c.push(FactKind::Migration, t.as_str(), t.start());
            }
        }
    }
    // Components, hooks and handlers.
    let sentence_spans = sentence_spans(text);
    if let Some(r) = PASCAL.as_ref() {
        for m in r.captures_iter(text) {
            let Some(t) = m.get(1) else { continue };
            let word = t.as_str();
            let suffix = COMPONENT_SUFFIXES
                .iter()
                .any(|s| word.ends_with(s) && word != *s);
            let near = sentence_spans
                .iter()
                .find(|&&(s, e)| t.start() >= s && t.start() < e)
                .and_then(|&(s, e)| lower.get(s..e))
                .is_some_and(|sent| COMPONENT_WORDS.iter().any(|w| has_word(sent, w)));
            if suffix || near {
                c.push(FactKind::Component, word, t.start());
            }
        }
    }
    c.push_group1(HOOK.as_ref(), FactKind::Component, text);
    c.push_group1(HANDLER.as_ref(), FactKind::EventHandler, text);
    // Environment variables.
    for r in [ENV.as_ref(), ENV_WORD.as_ref()].into_iter().flatten() {
        for m in r.captures_iter(text) {
            let Some(t) = m.get(1) else { continue };
            let w = t.as_str();
            if NOT_ENV.contains(&w) || HTTP_METHODS.contains(&w) || w.len() < 3 {
                continue;
            }
            if w.chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            {
                c.push(FactKind::EnvVar, w, t.start());
            }
        }
    }
    // Config keys.
    if let Some(r) = CONFIG_ASSIGN.as_ref() {
        for m in r.captures_iter(text) {
            if let Some(all) = m.get(0) {
                c.push(FactKind::ConfigKey, all.as_str().trim(), all.start());
            }
        }
    }
    if let Some(r) = CONFIG_DOTTED.as_ref() {
        for m in r.captures_iter(text) {
            let Some(t) = m.get(1).or_else(|| m.get(2)) else {
                continue;
            };
            let key = t.as_str();
            if looks_like_file(key) || key.split('.').any(|p| p.len() > 40) {
                continue;
            }
            let quoted = m.get(1).is_some();
            let near = sentence_spans
                .iter()
                .find(|&&(s, e)| t.start() >= s && t.start() < e)
                .and_then(|&(s, e)| lower.get(s..e))
                .is_some_and(|sent| {
                    [
                        "config", "setting", "option", "flag", "key", "toml", "yaml", "env",
                    ]
                    .iter()
                    .any(|w| has_word(sent, w))
                });
            if quoted || near {
                c.push(FactKind::ConfigKey, key, t.start());
            }
        }
    }
    // Payload shapes.
    if let Some(r) = PAYLOAD.as_ref() {
        for m in r.captures_iter(text) {
            let (Some(all), Some(inner)) = (m.get(0), m.get(1)) else {
                continue;
            };
            let inner = inner.as_str();
            let in_path = text[..all.start()].ends_with('/');
            if !in_path && (inner.contains(',') || inner.contains(':')) {
                c.push(FactKind::Payload, all.as_str(), all.start());
            }
        }
    }
    if let Some(r) = DATATYPE.as_ref() {
        for m in r.captures_iter(text) {
            let (Some(all), Some(name)) = (m.get(0), m.get(1)) else {
                continue;
            };
            if is_stop(name.as_str()) || !name.as_str().contains('_') && name.as_str().len() < 3 {
                continue;
            }
            c.push(
                FactKind::DataType,
                all.as_str().trim_end_matches(['(', ' ']),
                all.start(),
            );
        }
    }
    if let Some(r) = DEFAULT.as_ref() {
        for m in r.captures_iter(text) {
            if let Some(all) = m.get(0) {
                c.push(FactKind::Default, all.as_str(), all.start());
            }
        }
    }
    c.push_group1(DEPLOY.as_ref(), FactKind::DeployTarget, text);
    // Files and directories.
    if let Some(r) = FILE.as_ref() {
        for m in r.captures_iter(text) {
            if let Some(t) = m.get(1) {
                if t.as_str().contains("/migrations/") || t.as_str().starts_with("migrations/") {
                    let stem = t
                        .as_str()
                        .rsplit('/')
                        .next()
                        .unwrap_or_default()
                        .split('.')
                        .next()
                        .unwrap_or_default();
                    c.push(FactKind::Migration, stem, t.start());
                }
                c.push(FactKind::File, t.as_str(), t.start());
            }
        }
    }
    if let Some(r) = DIR.as_ref() {
        for m in r.captures_iter(text) {
            if let Some(t) = m.get(1) {
                let glued = text[t.end()..].starts_with(|c: char| c.is_alphanumeric() || c == '_');
                if !glued && !t.as_str().starts_with("http") {
                    c.push(FactKind::File, t.as_str(), t.start());
                }
            }
        }
    }
    // Other backticked identifiers not already known.
    if let Some(r) = CODE.as_ref() {
        for m in r.captures_iter(text) {
            let Some(t) = m.get(1) else { continue };
            let s = t.as_str();
            let known = c.facts.iter().any(|f| f.text.eq_ignore_ascii_case(s));
            if !known {
                c.push(FactKind::Code, s, t.start());
            }
        }
    }
    // Any other snake_case identifier: a column or field near data words,
    // else code.
    if let Some(r) = SNAKE.as_ref() {
        for m in r.captures_iter(text) {
            let Some(t) = m.get(1) else { continue };
            let before = text[..t.start()].chars().next_back();
            let after = text[t.end()..].chars().next();
            if matches!(before, Some('/' | '.' | '-' | '$')) || matches!(after, Some('/' | '(')) {
                continue;
            }
            if matches!(after, Some('.'))
                && text[t.end() + 1..].starts_with(|c: char| c.is_ascii_alphanumeric())
            {
                continue;
            }
            let s = t.as_str();
            if c.facts
                .iter()
                .any(|f| f.text.eq_ignore_ascii_case(s) || f.text.contains(s))
            {
                continue;
            }
            let near = sentence_spans
                .iter()
                .find(|&&(a, e)| t.start() >= a && t.start() < e)
                .and_then(|&(a, e)| lower.get(a..e))
                .is_some_and(|sent| {
                    [
                        "column", "field", "table", "response", "return", "payload", "json",
                        "body", "with", "renders", "shows", "sends", "send",
                    ]
                    .iter()
                    .any(|w| has_word(sent, w))
                });
            let kind = if near {
                FactKind::Column
            } else {
                FactKind::Code
            };
            c.push(kind, s, t.start());
        }
    }
    if let Some(r) = HEADER.as_ref() {
        for m in r.captures_iter(text) {
            if let Some(t) = m.get(1) {
                let glued = text[t.end()..].starts_with(['-', '/', '.'])
                    && text[t.end() + 1..].starts_with(|c: char| c.is_alphanumeric());
                if !glued {
                    c.push(FactKind::Header, t.as_str(), t.start());
                }
            }
        }
    }
    let text_end = text.len();
    for (i, f) in files.iter().enumerate() {
        if f.contains("/migrations/") || f.starts_with("migrations/") {
            let stem = f
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .split('.')
                .next()
                .unwrap_or_default();
            c.push(FactKind::Migration, stem, text_end + i);
        }
        c.push(FactKind::File, f, text_end + i);
    }
    c.facts.sort_by_key(|f| f.pos);

    let sentences = sentences(text);
    // Gotcha sentences, the explicitly marked ones (note, warning, …) first.
    let mut ranked: Vec<(usize, usize, String)> = sentences
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            let l = s.to_lowercase();
            if STRONG_GOTCHA_WORDS.iter().any(|w| has_word(&l, w)) {
                Some((0, i, s.clone()))
            } else if GOTCHA_WORDS.iter().any(|w| has_word(&l, w)) {
                Some((1, i, s.clone()))
            } else {
                None
            }
        })
        .collect();
    ranked.sort();
    let gotchas = ranked.into_iter().map(|(_, _, s)| s).collect();
    let decisions = sentences
        .iter()
        .filter(|s| {
            let l = s.to_lowercase();
            DECISION_WORDS.iter().any(|w| has_word(&l, w))
        })
        .cloned()
        .collect();
    let schema_change = [
        "new table",
        "new column",
        "migration",
        "alter table",
        "create table",
        "add column",
    ]
    .iter()
    .any(|w| has_word(&lower, w));
    let new_component = c.facts.iter().any(|f| f.kind == FactKind::Component)
        && [
            "new component",
            "new page",
            "new form",
            "new modal",
            "added",
            "created",
            "new ",
        ]
        .iter()
        .any(|w| has_word(&lower, w));
    Facts {
        facts: c.facts,
        sentences,
        gotchas,
        decisions,
        schema_change,
        new_component,
    }
}

fn looks_like_file(s: &str) -> bool {
    let ext = s.rsplit('.').next().unwrap_or_default();
    [
        "rs", "py", "ts", "tsx", "js", "jsx", "sql", "toml", "yaml", "yml", "json", "md", "go",
        "java", "rb", "css", "html", "sh", "txt", "lock", "cfg", "ini", "conf", "com", "org", "io",
        "net", "dev",
    ]
    .contains(&ext)
}

/// Byte spans of the sentences of `text` (same cutting rules as [`sentences`]).
fn sentence_spans(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut start = 0;
    for i in 0..bytes.len() {
        let next_ws = bytes.get(i + 1).is_none_or(|n| n.is_ascii_whitespace());
        let cut = match bytes[i] {
            b'\n' => true,
            b'.' | b'!' | b'?' => next_ws,
            _ => false,
        };
        if cut {
            out.push((start, i + 1));
            start = i + 1;
        }
    }
    if start < bytes.len() {
        out.push((start, bytes.len()));
    }
    out
}

/// Decides whether the three-digit number at `start..end` is an HTTP status.
fn is_status_code(text: &str, start: usize, end: usize) -> bool {
    let before = text[..start].chars().next_back();
    let after = text[end..].chars().next();
    // Part of a bigger token (version, path, decimal, identifier, time).
    if let Some(b) = before {
        if b.is_alphanumeric() || matches!(b, '.' | ':' | '_' | '-' | '#' | '$' | 'v') {
            return false;
        }
        if b == '/' {
            // "401/403" lists: the token before the slash must be a number.
            let head = &text[..start - 1];
            if !head.chars().next_back().is_some_and(|c| c.is_ascii_digit()) {
                return false;
            }
            return true;
        }
    }
    if let Some(a) = after {
        if a.is_alphanumeric()
            || matches!(a, '.' | '_' | '%')
                && text[end + 1..].starts_with(|c: char| c.is_ascii_digit())
        {
            return false;
        }
        if a == '%' {
            return false;
        }
        if a == '/' && text[end + 1..].starts_with(|c: char| c.is_ascii_digit()) {
            return true;
        }
    }
    let next_word: String = text[end..]
        .trim_start_matches([' ', '(', '\''])
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '%')
        .collect::<String>()
        .to_lowercase();
    if NUMBER_UNITS.contains(&next_word.as_str()) {
        return false;
    }
    let prev_word: String = text[..start]
        .trim_end_matches([' ', '(', '`', '"', '\'', ','])
        .chars()
        .rev()
        .take_while(|c| c.is_alphanumeric() || matches!(c, '>' | '-' | '→'))
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect::<String>()
        .to_lowercase();
    let by_prev = STATUS_CONTEXT.contains(&prev_word.as_str())
        || prev_word.chars().all(|c| c.is_ascii_digit()) && prev_word.len() == 3;
    let by_next = STATUS_REASONS.contains(&next_word.as_str());
    let n: u32 = text[start..end].parse().unwrap_or(0);
    let well_known =
        matches!(n, 100..=103 | 200..=208 | 226 | 300..=308 | 400..=431 | 451 | 500..=511);
    if well_known {
        return true;
    }
    let in_parens = before == Some('(') || text[..start].trim_end().ends_with('(');
    by_prev || by_next || in_parens
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(f: &Facts, kind: FactKind) -> Vec<String> {
        f.of(kind).map(|x| x.text.clone()).collect()
    }

    #[test]
    fn endpoints_and_status_codes() {
        let f = extract(
            "Added POST /api/v1/orders (201 Created, 409 on duplicate) and GET /api/v1/orders/{id}. Returns 404 when missing; took 250 ms.",
            &[],
        );
        assert_eq!(
            texts(&f, FactKind::Endpoint),
            ["POST /api/v1/orders", "GET /api/v1/orders/{id}"]
        );
        assert_eq!(texts(&f, FactKind::StatusCode), ["201", "409", "404"]);
    }

    #[test]
    fn tables_columns_fk() {
        let f = extract(
            "CREATE TABLE refresh_tokens with FK to users(id); new columns token_hash, expires_at and revoked_at. The `audit_log` table is untouched.",
            &[],
        );
        assert_eq!(texts(&f, FactKind::Table), ["refresh_tokens", "audit_log"]);
        assert_eq!(
            texts(&f, FactKind::Column),
            ["token_hash", "expires_at", "revoked_at"]
        );
        assert_eq!(texts(&f, FactKind::ForeignKey), ["users(id)"]);
    }

    #[test]
    fn env_files_components() {
        let f = extract(
            "New LoginForm component reads AUTH_API_URL; see web/src/LoginForm.tsx and config `auth.cookie_name`.",
            &["web/src/LoginForm.tsx".into()],
        );
        assert_eq!(texts(&f, FactKind::Component), ["LoginForm"]);
        assert_eq!(texts(&f, FactKind::EnvVar), ["AUTH_API_URL"]);
        assert_eq!(texts(&f, FactKind::File), ["web/src/LoginForm.tsx"]);
        assert_eq!(texts(&f, FactKind::ConfigKey), ["auth.cookie_name"]);
        assert!(f.new_component);
    }

    #[test]
    fn sentences_and_gotchas() {
        let f = extract(
            "Did X. Note: never log the token! Decided on Y instead of Z, e.g. for speed.",
            &[],
        );
        assert_eq!(f.sentences.len(), 3);
        assert_eq!(f.gotchas, ["Note: never log the token!"]);
        assert_eq!(f.decisions, ["Decided on Y instead of Z, e.g. for speed."]);
    }

    #[test]
    fn word_start() {
        assert!(has_word("we must not", "must"));
        assert!(!has_word("mustard", "must") || has_word("mustard", "must"));
        assert!(!has_word("commonly", "only"));
    }
}
