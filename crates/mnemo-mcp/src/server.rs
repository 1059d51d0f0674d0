//! The MCP tools, routed by rmcp's `#[tool_router]`.
//!
//! Each tool takes a typed argument struct (its JSON Schema is generated
//! from the type, unknown fields are refused) and answers either a result or
//! a tool error (`isError: true`) whose text says what was wrong.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use mnemo_inline::{BatchItem, Inline, InlineArgs, python_os_error, python_utf8_error};
use mnemo_model::Config;
use mnemo_scrub::{ReplacementStyle, Scrubber};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::store::{
    Forgotten, ListRequest, ListResult, Memory, MemoryStore, SearchRequest, SearchResults,
    Selector, SqliteStore, StoreError, StoreRequest, StoreStats, Stored,
};

/// Largest `text` of `compress_inline` and `scrub`, in bytes.
pub const MAX_TEXT_BYTES: usize = 4 * 1024 * 1024;
/// Most files of one `batch`.
pub const MAX_BATCH_FILES: usize = 100;
/// Largest file read by `batch`, in bytes.
pub const MAX_BATCH_FILE_BYTES: u64 = 4 * 1024 * 1024;

const INSTRUCTIONS: &str = "mnemo keeps the working memory of multi-agent coding workflows small and secret-free. \
compress_inline scores and compresses a summary (modes score, compress, stats, batch; scrubbing is automatic). \
scrub redacts secrets from a text. memory_store persists a scrubbed memory (namespace, optional unique key, metadata); \
memory_search ranks memories by full-text relevance (BM25) with optional recency decay; memory_recall, memory_list, \
memory_forget and memory_stats manage them. gate runs the phase gate over a batch of summaries (the Guardian is asked first; \
everything written is scrubbed) and handoff returns the next agent's prompt block.";

/// Where the memory store comes from.
#[derive(Clone)]
pub enum StoreSource {
    /// Open (creating if needed) this SQLite file on the first memory call.
    Path(PathBuf),
    /// A store that is open already.
    Ready(Arc<dyn MemoryStore>),
    /// No data directory: the memory tools answer with an error saying so.
    Unavailable,
}

impl std::fmt::Debug for StoreSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreSource::Path(p) => f.debug_tuple("Path").field(p).finish(),
            StoreSource::Ready(_) => f.write_str("Ready(..)"),
            StoreSource::Unavailable => f.write_str("Unavailable"),
        }
    }
}

/// The memory store, opened lazily: a server whose store cannot be opened
/// still serves `compress_inline` and `scrub`, and retries on the next
/// memory call.
struct LazyStore {
    path: Option<PathBuf>,
    slot: Mutex<Option<Arc<dyn MemoryStore>>>,
}

impl LazyStore {
    fn get(&self) -> Result<Arc<dyn MemoryStore>, StoreError> {
        let mut slot = self.slot.lock().map_err(|_| StoreError::Poisoned)?;
        if let Some(store) = slot.as_ref() {
            return Ok(Arc::clone(store));
        }
        let path = self.path.as_deref().ok_or(StoreError::NoDataDir)?;
        let store: Arc<dyn MemoryStore> = Arc::new(SqliteStore::open(path)?);
        *slot = Some(Arc::clone(&store));
        Ok(store)
    }
}

/// Modes of `compress_inline` (those of Pantheon's `compress-inline.py`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum InlineMode {
    /// Preview the priority score (JSON).
    Score,
    /// Scrub, score and compress `text`.
    Compress,
    /// Token estimate, lines and characters of `text` (JSON).
    Stats,
    /// Scrub and compress each file of `files`.
    Batch,
}

/// Arguments of `compress_inline`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompressInlineArgs {
    /// Mode: score, compress, stats or batch.
    pub mode: InlineMode,
    /// The text (score, compress, stats); at most 4 MiB.
    #[serde(default)]
    pub text: String,
    /// Files: for score and compress, the files the work touched (novelty); for batch, the files to compress, relative to the server's working directory and inside it (at most 100, 4 MiB each).
    #[serde(default)]
    pub files: Vec<String>,
    /// Sending agent (e.g. hermes).
    #[serde(default)]
    pub from_agent: Option<String>,
    /// Receiving agent (e.g. themis).
    #[serde(default)]
    pub to_agent: Option<String>,
    /// The work unblocks others (score mode).
    #[serde(default)]
    pub blocker: bool,
}

/// Replacement style of `scrub`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ScrubStyle {
    /// `[REDACTED:<rule-id>]`.
    #[default]
    Named,
    /// What Pantheon's scrub-secrets.py writes (`[REDACTED]`, `[GITHUB TOKEN REDACTED]`, ...).
    Pantheon,
}

/// Arguments of `scrub`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScrubArgs {
    /// The text to scrub (at most 4 MiB).
    pub text: String,
    /// Replacement style (default named).
    #[serde(default)]
    pub style: ScrubStyle,
}

/// One redaction made by `scrub`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RedactionOut {
    /// The rule that fired (e.g. github-pat).
    #[serde(rename = "type")]
    pub kind: String,
    /// Start byte offset in the input (inclusive).
    pub start: usize,
    /// End byte offset in the input (exclusive).
    pub end: usize,
    /// The text written instead.
    pub replacement: String,
}

/// Answer of `scrub`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ScrubOut {
    /// The scrubbed text.
    pub text: String,
    /// The redactions, sorted by offset.
    pub redactions: Vec<RedactionOut>,
}

/// Errors building the server.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The configuration's scoring tables do not compile.
    #[error("cannot compile the scoring tables: {0}")]
    Config(String),
}

/// The memory bank the `gate` and `handoff` tools work on.
#[derive(Debug, Clone)]
pub struct BankContext {
    /// Bank root (`paths.bank`).
    pub root: PathBuf,
    /// Learnings root (`paths.learnings`).
    pub learnings: PathBuf,
    /// The configuration the gate scores and compresses with.
    pub config: Config,
    /// The Guardian's policy.
    pub policy: mnemo_guardian::Policy,
}

/// Arguments of `gate`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GateArgs {
    /// Phase label (`1`, `2a`).
    #[schemars(length(min = 1, max = 32))]
    pub phase: String,
    /// Sending agent(s) of the phase.
    #[serde(default)]
    pub from: Vec<String>,
    /// Receiving (next) agent(s).
    #[serde(default)]
    pub to: Vec<String>,
    /// Planned phases of the feature (the per-phase budget is 100 / phases).
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub phases: Option<u32>,
    /// Date, `YYYY-MM-DD` (default: today, UTC).
    #[serde(default)]
    #[schemars(regex(pattern = r"^\d{4}-\d{2}-\d{2}$"))]
    pub date: Option<String>,
    /// Feature name.
    #[serde(default)]
    pub feature: Option<String>,
    /// Summaries given inline: markdown `## subtask_summary` blocks, JSON or YAML.
    #[serde(default)]
    pub summaries: Vec<SummaryText>,
    /// Summary files, read relative to (and only inside) the server's working directory.
    #[serde(default)]
    pub files: Vec<String>,
}

/// A summary given inline to `gate`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SummaryText {
    /// A name for messages; its extension tells the format (`hermes.json`, `phase.md`).
    pub name: String,
    /// The summary text.
    pub text: String,
}

/// What `gate` did.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GateOut {
    /// The confirmation line (`Compression complete: …`).
    pub confirmation: String,
    /// Entries compressed.
    pub entries: usize,
    /// Cross-references added to the index.
    pub xrefs_added: usize,
    /// Summaries the preflight skipped, with the reason.
    pub skipped: Vec<String>,
    /// Budget flags (overflow, escalation, overrun).
    pub flags: Vec<String>,
    /// The C7 trim log line, when the section went over its cap.
    pub trim: Option<String>,
    /// Bank files that changed.
    pub changed: Vec<String>,
}

/// Arguments of `handoff`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HandoffArgs {
    /// The phase that just ended.
    #[schemars(length(min = 1, max = 32))]
    pub phase: String,
    /// Feature whose learnings to include.
    #[serde(default)]
    pub feature: Option<String>,
}

/// mnemo's MCP server.
#[derive(Clone)]
pub struct MnemoServer {
    inline: Arc<Inline>,
    bank: Option<Arc<BankContext>>,
    store: Arc<LazyStore>,
    root: PathBuf,
    tool_router: ToolRouter<Self>,
}

impl std::fmt::Debug for MnemoServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MnemoServer")
            .field("root", &self.root)
            .field("store", &self.store.path)
            .finish_non_exhaustive()
    }
}

fn text_limit(field: &str, text: &str) -> Result<(), String> {
    if text.len() > MAX_TEXT_BYTES {
        Err(format!(
            "`{field}` is {} bytes, more than {MAX_TEXT_BYTES}",
            text.len()
        ))
    } else {
        Ok(())
    }
}

fn store_err(tool: &str, e: StoreError) -> String {
    format!("{tool}: {e}")
}

fn read_batch_file(root: &Path, given: &str) -> BatchItem {
    let failed = |message: String| BatchItem::Failed {
        path: given.to_string(),
        message,
    };
    let candidate = root.join(given);
    let full = match candidate.canonicalize() {
        Ok(p) => p,
        Err(e) => return failed(python_os_error(given, &e)),
    };
    if !full.starts_with(root) {
        return failed(format!(
            "refused: '{given}' is outside the server's working directory"
        ));
    }
    match std::fs::metadata(&full) {
        Ok(m) if m.is_dir() => return failed(format!("[Errno 21] Is a directory: '{given}'")),
        Ok(m) if m.len() > MAX_BATCH_FILE_BYTES => {
            return failed(format!(
                "refused: '{given}' is {} bytes, more than {MAX_BATCH_FILE_BYTES}",
                m.len()
            ));
        }
        Ok(_) => {}
        Err(e) => return failed(python_os_error(given, &e)),
    }
    match std::fs::read(&full) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(content) => BatchItem::Read {
                name: full
                    .file_name()
                    .map_or_else(|| given.to_string(), |n| n.to_string_lossy().into_owned()),
                content,
            },
            Err(e) => failed(python_utf8_error(&e)),
        },
        Err(e) => failed(python_os_error(given, &e)),
    }
}

/// The formats of JSON Schema 2020-12's format vocabulary. schemars also
/// writes `uint`, `uint32`, `uint64`, `int64`, `double`, … for Rust's number
/// types; those are not JSON Schema formats (validators warn about them, or
/// reject them in strict mode), and the `minimum` it writes beside them
/// already says what they meant.
const JSON_SCHEMA_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Removes every `format` that is not a JSON Schema format from a schema,
/// at any depth (`$defs`, `properties`, `items`, `anyOf`, …).
pub fn strip_nonstandard_formats(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            if let Some(serde_json::Value::String(f)) = map.get("format")
                && !JSON_SCHEMA_FORMATS.contains(&f.as_str())
            {
                map.remove("format");
            }
            map.values_mut().for_each(strip_nonstandard_formats);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip_nonstandard_formats),
        _ => {}
    }
}

/// Rewrites every `"type": [A, B, …]` (schemars' spelling of `Option<T>`:
/// `["string", "null"]`) as `"anyOf": [{"type": A}, {"type": B}, …]`, at any
/// depth. Both are legal JSON Schema, but clients that map tool schemas onto
/// a single-`type` dialect reject or weaken the array form (the MCP
/// Inspector's `--strict` check warns about it). The other keywords stay
/// where they are: each applies only to instances of its own type, so the
/// meaning does not change. An object that already has an `anyOf` gets the
/// new one beside it under `allOf`.
pub fn split_type_arrays(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            map.values_mut().for_each(split_type_arrays);
            if let Some(serde_json::Value::Array(types)) = map.get("type") {
                let branches: Vec<serde_json::Value> = types
                    .iter()
                    .map(|t| serde_json::json!({ "type": t }))
                    .collect();
                map.remove("type");
                let any_of = serde_json::Value::Array(branches);
                match map.remove("anyOf") {
                    None => {
                        map.insert("anyOf".into(), any_of);
                    }
                    Some(existing) => {
                        let mut all = match map.remove("allOf") {
                            Some(serde_json::Value::Array(a)) => a,
                            Some(other) => vec![other],
                            None => Vec::new(),
                        };
                        all.push(serde_json::json!({ "anyOf": existing }));
                        all.push(serde_json::json!({ "anyOf": any_of }));
                        map.insert("allOf".into(), serde_json::Value::Array(all));
                    }
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(split_type_arrays),
        _ => {}
    }
}

fn standard_schema(schema: &Arc<rmcp::model::JsonObject>) -> Arc<rmcp::model::JsonObject> {
    let mut v = serde_json::Value::Object(schema.as_ref().clone());
    strip_nonstandard_formats(&mut v);
    split_type_arrays(&mut v);
    match v {
        serde_json::Value::Object(map) => Arc::new(map),
        _ => Arc::clone(schema),
    }
}

/// Every tool's input and output schema in standard JSON Schema.
fn standard_schemas<S>(mut router: ToolRouter<S>) -> ToolRouter<S> {
    for route in router.map.values_mut() {
        route.attr.input_schema = standard_schema(&route.attr.input_schema);
        if let Some(out) = &route.attr.output_schema {
            route.attr.output_schema = Some(standard_schema(out));
        }
    }
    router
}

impl MnemoServer {
    /// A server with the given configuration and memory store. Batch files
    /// are read relative to (and only inside) the current working directory.
    pub fn new(config: &Config, store: StoreSource) -> Result<Self, ServerError> {
        let root = std::env::current_dir()
            .and_then(|d| d.canonicalize())
            .unwrap_or_else(|_| PathBuf::from("."));
        Self::with_root(config, store, root)
    }

    /// [`MnemoServer::new`] with an explicit directory for batch files.
    pub fn with_root(
        _config: &Config,
        store: StoreSource,
        root: PathBuf,
    ) -> Result<Self, ServerError> {
        let inline = Inline::pantheon();
        let root = root.canonicalize().unwrap_or(root);
        let (path, slot) = match store {
            StoreSource::Path(p) => (Some(p), None),
            StoreSource::Ready(s) => (None, Some(s)),
            StoreSource::Unavailable => (None, None),
        };
        Ok(MnemoServer {
            inline: Arc::new(inline),
            bank: None,
            store: Arc::new(LazyStore {
                path,
                slot: Mutex::new(slot),
            }),
            root,
            tool_router: standard_schemas(Self::tool_router()),
        })
    }

    /// Lets the `gate` and `handoff` tools work on this bank.
    pub fn with_bank(mut self, bank: BankContext) -> Self {
        self.bank = Some(Arc::new(bank));
        self
    }

    fn bank(&self, tool: &str) -> Result<Arc<BankContext>, String> {
        self.bank.clone().ok_or_else(|| {
            format!("{tool}: no memory bank is configured for this server (start it with `mnemo mcp` in the project)")
        })
    }

    /// The tool definitions (name, description, input schema), sorted by name.
    pub fn tools(&self) -> Vec<rmcp::model::Tool> {
        self.tool_router.list_all()
    }

    fn memory(&self, tool: &str) -> Result<Arc<dyn MemoryStore>, String> {
        self.store.get().map_err(|e| store_err(tool, e))
    }
}

#[tool_router(router = tool_router)]
impl MnemoServer {
    /// Pantheon's inline compression (seed §12) as a tool.
    #[tool(
        name = "compress_inline",
        description = "Inline compression of agent context (drop-in for Pantheon's compress-inline.py). Modes: score (priority score as JSON), compress (scrub + score + compress `text` to a summary entry), stats (token/line/char counts as JSON), batch (scrub and compress each file of `files`, read relative to the server's working directory). Secrets are scrubbed automatically; source files are never modified.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn compress_inline(
        &self,
        Parameters(args): Parameters<CompressInlineArgs>,
    ) -> Result<String, String> {
        text_limit("text", &args.text)?;
        if args.files.len() > MAX_BATCH_FILES {
            return Err(format!(
                "`files` has {} entries, more than {MAX_BATCH_FILES}",
                args.files.len()
            ));
        }
        let scrubber = Scrubber::default_rules()
            .map_err(|e| format!("cannot load the secret-scrubbing rules: {e}"))?;
        let scrub = |s: &str| scrubber.scrub_with(s, ReplacementStyle::Pantheon).text;
        let files = args.files.join(",");
        let inline_args = InlineArgs {
            text: &args.text,
            files: (!args.files.is_empty()).then_some(files.as_str()),
            from_agent: args.from_agent.as_deref(),
            to_agent: args.to_agent.as_deref(),
            blocker: args.blocker,
        };
        let out = match args.mode {
            InlineMode::Score => self.inline.score(&inline_args),
            InlineMode::Compress => self.inline.compress(&inline_args, &scrub),
            InlineMode::Stats => Inline::stats(&args.text),
            InlineMode::Batch => {
                if args.files.is_empty() {
                    return Err("`files` is required for batch mode".to_string());
                }
                let items: Vec<BatchItem> = args
                    .files
                    .iter()
                    .map(|f| read_batch_file(&self.root, f))
                    .collect();
                self.inline.batch(&items, &inline_args, &scrub)
            }
        };
        Ok(out)
    }

    /// Secret scrubbing (seed §13, Layer 2).
    #[tool(
        name = "scrub",
        description = "Redact secrets (API keys, tokens, private keys, passwords, connection strings, ...) from a text. Returns the scrubbed text and the redactions with byte offsets into the input.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn scrub(
        &self,
        Parameters(args): Parameters<ScrubArgs>,
    ) -> Result<Json<ScrubOut>, String> {
        text_limit("text", &args.text)?;
        let scrubber = Scrubber::default_rules()
            .map_err(|e| format!("cannot load the secret-scrubbing rules: {e}"))?;
        let style = match args.style {
            ScrubStyle::Named => ReplacementStyle::Named,
            ScrubStyle::Pantheon => ReplacementStyle::Pantheon,
        };
        let out = scrubber.scrub_with(&args.text, style);
        Ok(Json(ScrubOut {
            text: out.text,
            redactions: out
                .redactions
                .into_iter()
                .map(|r| RedactionOut {
                    kind: r.rule,
                    start: r.start,
                    end: r.end,
                    replacement: r.replacement,
                })
                .collect(),
        }))
    }

    /// Stores a memory.
    #[tool(
        name = "memory_store",
        description = "Persist a memory. The value and every metadata string are scrubbed of secrets before anything is written; the answer says how many redactions were made. `key` is optional and unique per namespace: storing an existing key is an error, never an overwrite.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    pub async fn memory_store(
        &self,
        Parameters(req): Parameters<StoreRequest>,
    ) -> Result<Json<Stored>, String> {
        let store = self.memory("memory_store")?;
        store
            .store(req)
            .map(Json)
            .map_err(|e| store_err("memory_store", e))
    }

    /// Searches memories.
    #[tool(
        name = "memory_search",
        description = "Full-text search of the memories of a namespace, ranked by BM25 relevance (higher score is better), optionally multiplied by a recency decay 0.5^(age_days / recency_half_life_days). top_k: 1-50, default 5 (larger is an error). The query is plain words: no search syntax.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn memory_search(
        &self,
        Parameters(req): Parameters<SearchRequest>,
    ) -> Result<Json<SearchResults>, String> {
        let store = self.memory("memory_search")?;
        store
            .search(&req)
            .map(Json)
            .map_err(|e| store_err("memory_search", e))
    }

    /// Recalls one memory.
    #[tool(
        name = "memory_recall",
        description = "Return one memory, by `id` or by `key` (in `namespace`, default \"default\"). Give exactly one of id and key.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn memory_recall(
        &self,
        Parameters(sel): Parameters<Selector>,
    ) -> Result<Json<Memory>, String> {
        let store = self.memory("memory_recall")?;
        store
            .recall(&sel)
            .map(Json)
            .map_err(|e| store_err("memory_recall", e))
    }

    /// Lists memories.
    #[tool(
        name = "memory_list",
        description = "List the memories of a namespace, newest first, optionally only those whose key starts with `prefix`. limit: 1-500, default 50 (larger is an error). Entries carry a 120-character preview; use memory_recall for the full value.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn memory_list(
        &self,
        Parameters(req): Parameters<ListRequest>,
    ) -> Result<Json<ListResult>, String> {
        let store = self.memory("memory_list")?;
        store
            .list(&req)
            .map(Json)
            .map_err(|e| store_err("memory_list", e))
    }

    /// Deletes a memory.
    #[tool(
        name = "memory_forget",
        description = "Delete one memory, by `id` or by `key` (in `namespace`, default \"default\"). Give exactly one of id and key. The bytes are overwritten on disk.",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    pub async fn memory_forget(
        &self,
        Parameters(sel): Parameters<Selector>,
    ) -> Result<Json<Forgotten>, String> {
        let store = self.memory("memory_forget")?;
        store
            .forget(&sel)
            .map(Json)
            .map_err(|e| store_err("memory_forget", e))
    }

    /// The phase gate (C1–C3) over a batch of summaries.
    #[tool(
        name = "gate",
        description = "Phase gate (C1-C3): score a batch of subtask summaries (inline texts and/or files), ask the Guardian whether compaction is allowed, allocate the line budget, and write the memory bank (Completed Phases, progress log, cross-reference index, ZZ artifact) atomically. Everything written is scrubbed; re-running with the same input changes nothing. Returns the confirmation line and what was skipped or flagged.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    pub async fn gate(
        &self,
        Parameters(args): Parameters<GateArgs>,
    ) -> Result<Json<GateOut>, String> {
        let bank = self.bank("gate")?;
        if args.summaries.is_empty() && args.files.is_empty() {
            return Err("gate: give at least one summary in `summaries` or `files`".to_string());
        }
        if args.summaries.len() + args.files.len() > MAX_BATCH_FILES {
            return Err(format!("gate: more than {MAX_BATCH_FILES} summaries"));
        }
        let mut inputs = Vec::new();
        for s in &args.summaries {
            text_limit("summaries[].text", &s.text)?;
            inputs.push(mnemo_bank::ops::Input {
                name: s.name.clone(),
                text: s.text.clone(),
            });
        }
        for f in &args.files {
            match read_batch_file(&self.root, f) {
                BatchItem::Read { content, .. } => inputs.push(mnemo_bank::ops::Input {
                    name: f.clone(),
                    text: content,
                }),
                BatchItem::Failed { message, .. } => return Err(format!("gate: {message}")),
            }
        }
        let date = match args.date {
            Some(d) if mnemo_bank::layout::is_date(&d) => d,
            Some(d) => return Err(format!("gate: `date` {d:?} is not a date (YYYY-MM-DD)")),
            None => mnemo_bank::layout::today_utc(),
        };
        let opts = mnemo_bank::GateOptions {
            phase: args.phase,
            from: args.from,
            to: args.to,
            phases: args.phases,
            date,
            feature: args.feature,
            policy: bank.policy.clone(),
            guardian_url: None,
            guardian_cmd: None,
            trace_quiet: false,
            guardian_tls: Default::default(),
            trigger: mnemo_guardian::Trigger::FrameworkInitiated,
            lock_timeout: mnemo_bank::ops::LOCK_TIMEOUT,
        };
        let run = tokio::task::spawn_blocking(move || {
            let b = mnemo_bank::Bank::new(&bank.root);
            mnemo_bank::gate(&b, &bank.config, &opts, &inputs)
        })
        .await
        .map_err(|e| format!("gate: the gate task failed: {e}"))?;
        let r = run.map_err(|e| format!("gate: {e}"))?;
        Ok(Json(GateOut {
            confirmation: r.confirmation,
            entries: r.entries,
            xrefs_added: r.xrefs_added,
            skipped: r.skipped,
            flags: r.flags,
            trim: r.trim,
            changed: r.changed,
        }))
    }

    /// The next agent's prompt block (§15).
    #[tool(
        name = "handoff",
        description = "The next agent's prompt block for the phase that just ended: the feature's learnings and the ZZ context artifact written by `gate`.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn handoff(
        &self,
        Parameters(args): Parameters<HandoffArgs>,
    ) -> Result<String, String> {
        let bank = self.bank("handoff")?;
        tokio::task::spawn_blocking(move || {
            let b = mnemo_bank::Bank::new(&bank.root);
            mnemo_bank::handoff(
                &b,
                &bank.learnings,
                &args.phase,
                args.feature.as_deref(),
                mnemo_bank::ops::LOCK_TIMEOUT,
            )
        })
        .await
        .map_err(|e| format!("handoff: the task failed: {e}"))?
        .map_err(|e| format!("handoff: {e}"))
    }

    /// Store statistics.
    #[tool(
        name = "memory_stats",
        description = "Count memories per namespace and report the database location and size.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn memory_stats(&self) -> Result<Json<StoreStats>, String> {
        let store = self.memory("memory_stats")?;
        store
            .stats()
            .map(Json)
            .map_err(|e| store_err("memory_stats", e))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for MnemoServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("mnemo", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    /// The stand-in for a message over the size limit
    /// ([`crate::limit::limit_lines`]) is answered with an error naming the
    /// limit; any other unknown method is `Method not found`.
    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CustomResult, rmcp::model::ErrorData> {
        if request.method == crate::limit::TOO_LARGE_METHOD {
            let params = request
                .params
                .as_ref()
                .and_then(serde_json::Value::as_object);
            return Err(rmcp::model::ErrorData::invalid_request(
                crate::limit::too_large_error(params),
                None,
            ));
        }
        Err(rmcp::model::ErrorData::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            request.method,
            None,
        ))
    }
}
