//! Validation of ACS v0.1.0 messages against the constraints of the
//! standard's JSON Schemas (pure, no I/O).
//!
//! The schemas are transcribed into a small tree of [`Node`]s: types,
//! `required`, `enum`/`const`, `minItems`, `uniqueItems`, `minLength`/`maxLength`,
//! `minimum`/`maximum`, the patterns the schemas use, the formats `uuid`,
//! `date-time` and `uri`, and `additionalProperties` where a schema forbids
//! or constrains extra members. The first violation is reported with its
//! JSON Pointer path (RFC 6901). A conformance test checks this validator's
//! verdict against the official schemas with the `jsonschema` crate.

use serde_json::{Map, Value};
use std::fmt::Write as _;
use std::sync::OnceLock;

/// A schema violation: where (JSON Pointer into the checked document) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ValidationError {
    /// JSON Pointer of the failing value, e.g. `/params/payload/entries_to_compact`.
    pub path: String,
    /// What was wrong.
    pub message: String,
}

/// String patterns used by the ACS schemas.
#[derive(Debug, Clone, Copy)]
pub enum Pattern {
    /// `^\d+\.\d+\.\d+$`
    Semver,
    /// `^(steps/|protocols/|agbom/|trace/|system/|handshake/|wrapped:).+`
    Method,
    /// `^[0-9a-f]{64}$`
    Sha256Hex,
}

/// String formats used by the ACS schemas.
#[derive(Debug, Clone, Copy)]
pub enum Format {
    /// RFC 4122 textual UUID (8-4-4-4-12 hex digits).
    Uuid,
    /// RFC 3339 date-time.
    DateTime,
    /// An absolute URI (scheme ":" …).
    Uri,
}

/// Rule for object members not listed in `properties`.
#[derive(Debug, Clone)]
pub enum Additional {
    /// Any value.
    Allow,
    /// None allowed (`additionalProperties: false`).
    Forbid,
    /// Each must match this node.
    Schema(Box<Node>),
}

/// One schema node.
#[derive(Debug, Clone)]
pub enum Node {
    /// `{}`: anything.
    Any,
    /// `const` string.
    Const(&'static str),
    /// A string with optional constraints.
    Str {
        /// Allowed values (empty: any).
        enumv: &'static [&'static str],
        /// Pattern.
        pattern: Option<Pattern>,
        /// Format.
        format: Option<Format>,
        /// minLength in code points.
        min_len: Option<usize>,
        /// maxLength in code points.
        max_len: Option<usize>,
    },
    /// An integer (a number with no fractional part) with optional minimum.
    Int {
        /// minimum.
        min: Option<i64>,
    },
    /// A number with optional bounds.
    Num {
        /// minimum.
        min: Option<f64>,
        /// maximum.
        max: Option<f64>,
    },
    /// A boolean.
    Bool,
    /// An array.
    Arr {
        /// Schema of every item.
        items: Box<Node>,
        /// minItems.
        min_items: usize,
        /// uniqueItems.
        unique: bool,
    },
    /// An object.
    Obj {
        /// Required member names, in schema order.
        required: &'static [&'static str],
        /// Declared members.
        props: Vec<(&'static str, Node)>,
        /// Rule for other members.
        additional: Additional,
        /// minProperties.
        min_props: usize,
    },
    /// `oneOf: [string, number]` (JSON-RPC id in requests).
    StrOrNum,
    /// `type: [string, number, null]` (JSON-RPC id in responses).
    StrNumOrNull,
    /// An ACS result object with its decision-dependent `required` rules.
    AcsResult(Box<Node>),
    /// The response envelope: exactly one of `result` / `error`, result ids non-null.
    ResponseEnvelope(Box<Node>),
}

// ---- builders -------------------------------------------------------------

fn s() -> Node {
    Node::Str {
        enumv: &[],
        pattern: None,
        format: None,
        min_len: None,
        max_len: None,
    }
}
fn s_enum(v: &'static [&'static str]) -> Node {
    Node::Str {
        enumv: v,
        pattern: None,
        format: None,
        min_len: None,
        max_len: None,
    }
}
fn s_pat(p: Pattern) -> Node {
    Node::Str {
        enumv: &[],
        pattern: Some(p),
        format: None,
        min_len: None,
        max_len: None,
    }
}
fn s_fmt(f: Format) -> Node {
    Node::Str {
        enumv: &[],
        pattern: None,
        format: Some(f),
        min_len: None,
        max_len: None,
    }
}
fn int0() -> Node {
    Node::Int { min: Some(0) }
}
fn int1() -> Node {
    Node::Int { min: Some(1) }
}
fn arr(items: Node) -> Node {
    Node::Arr {
        items: Box::new(items),
        min_items: 0,
        unique: false,
    }
}
fn arr_min1(items: Node) -> Node {
    Node::Arr {
        items: Box::new(items),
        min_items: 1,
        unique: false,
    }
}
fn arr_unique(items: Node) -> Node {
    Node::Arr {
        items: Box::new(items),
        min_items: 0,
        unique: true,
    }
}
fn obj(required: &'static [&'static str], props: Vec<(&'static str, Node)>) -> Node {
    Node::Obj {
        required,
        props,
        additional: Additional::Allow,
        min_props: 0,
    }
}
fn obj_any() -> Node {
    obj(&[], vec![])
}
fn map_of(n: Node) -> Node {
    Node::Obj {
        required: &[],
        props: vec![],
        additional: Additional::Schema(Box::new(n)),
        min_props: 0,
    }
}

/// The seven ACS origins.
pub const ORIGINS: &[&str] = &[
    "user_input",
    "system",
    "tool_output",
    "retrieved",
    "agent_generated",
    "a2a_inbound",
    "external",
];

const SIG_ALGS: &[&str] = &[
    "HMAC-SHA256",
    "ECDSA-P256",
    "RSA-PSS-SHA256",
    "ML-DSA-65",
    "ML-DSA-44",
    "ML-DSA-87",
    "SLH-DSA-128s",
    "SLH-DSA-128f",
    "ML-DSA-65+ECDSA-P256",
    "ML-DSA-65+RSA-PSS-SHA256",
];
const PROFILES: &[&str] = &[
    "acs-core",
    "acs-trace",
    "acs-inspect",
    "acs-inspect-dynamic",
    "acs-provenance",
    "acs-crypto",
    "acs-audit",
];
const TRANSPORTS: &[&str] = &["http", "https", "stdio"];
const CONTENT_TYPES: &[&str] = &["text", "image", "audio", "file"];
const SCOPES: &[&str] = &["session", "user", "tenant", "global"];

/// `provenance.json`.
pub fn provenance() -> Node {
    obj(
        &["provenance_id", "origin"],
        vec![
            ("provenance_id", s()),
            ("origin", s_enum(ORIGINS)),
            ("source_id", s()),
            ("derived_from", arr(s())),
        ],
    )
}

/// `provenance-summary.json`.
pub fn provenance_summary() -> Node {
    obj(
        &[],
        vec![
            ("origins_seen", arr_unique(s_enum(ORIGINS))),
            ("entry_count", int0()),
            ("entry_count_by_origin", map_of(int0())),
            ("earliest_step_id_by_origin", map_of(s())),
            ("max_lineage_depth", int0()),
        ],
    )
}

fn signature() -> Node {
    obj(
        &["algorithm", "value", "key_id"],
        vec![
            ("algorithm", s_enum(SIG_ALGS)),
            ("value", s()),
            ("key_id", s()),
        ],
    )
}

/// `request-envelope.json` (payload checked separately per method).
pub fn request_envelope() -> Node {
    let metadata = obj(
        &["agent_id", "session_id"],
        vec![
            ("agent_id", s()),
            ("agent_name", s()),
            ("session_id", s_fmt(Format::Uuid)),
            ("turn_id", s()),
            ("parent_turn_id", s()),
            ("session_state", obj(&[], vec![("chain_hash", s())])),
            (
                "environment",
                s_enum(&["development", "staging", "production"]),
            ),
            ("platform", s()),
            ("platform_version", s()),
            (
                "user_context",
                obj(
                    &[],
                    vec![
                        ("user_id", s()),
                        ("roles", arr(s())),
                        ("authentication_method", s()),
                    ],
                ),
            ),
        ],
    );
    let params = obj(
        &[
            "acs_version",
            "request_id",
            "timestamp",
            "metadata",
            "payload",
        ],
        vec![
            ("acs_version", s_pat(Pattern::Semver)),
            ("request_id", s_fmt(Format::Uuid)),
            ("timestamp", s_fmt(Format::DateTime)),
            (
                "nonce",
                Node::Str {
                    enumv: &[],
                    pattern: None,
                    format: None,
                    min_len: Some(16),
                    max_len: Some(64),
                },
            ),
            ("tenant_id", s()),
            ("metadata", metadata),
            ("payload", obj_any()),
            ("signature", signature()),
        ],
    );
    Node::Obj {
        required: &["jsonrpc", "method", "id", "params"],
        props: vec![
            ("jsonrpc", Node::Const("2.0")),
            ("method", s_pat(Pattern::Method)),
            ("id", Node::StrOrNum),
            ("params", params),
        ],
        additional: Additional::Forbid,
        min_props: 0,
    }
}

/// `modifications.json`.
pub fn modifications() -> Node {
    Node::Obj {
        required: &[],
        props: vec![
            ("modified_content", s()),
            (
                "redactions",
                arr(obj(&["path"], vec![("path", s()), ("replacement", s())])),
            ),
            ("parameter_overrides", obj_any()),
        ],
        additional: Additional::Allow,
        min_props: 1,
    }
}

/// `response-envelope.json` (the missing `ask-details`/`defer-details` are objects).
pub fn response_envelope() -> Node {
    let result = obj(
        &["type", "acs_version", "request_id", "decision"],
        vec![
            ("type", Node::Const("final")),
            ("acs_version", s_pat(Pattern::Semver)),
            ("request_id", s_fmt(Format::Uuid)),
            (
                "decision",
                s_enum(&["allow", "deny", "modify", "ask", "defer"]),
            ),
            ("reasoning", s()),
            ("reason_codes", arr_unique(s())),
            (
                "policy_references",
                arr(obj(
                    &[],
                    vec![
                        ("policy_id", s()),
                        ("policy_version", s()),
                        ("policy_name", s()),
                        ("rule_id", s()),
                    ],
                )),
            ),
            ("policy_data", obj_any()),
            ("cited_provenance_ids", arr_unique(s())),
            ("modifications", modifications()),
            ("ask_details", obj_any()),
            ("defer_details", obj_any()),
            ("payload", obj_any()),
            ("chain_hash", s_pat(Pattern::Sha256Hex)),
            ("signature", signature()),
            (
                "metadata",
                obj(
                    &[],
                    vec![
                        (
                            "evaluator",
                            s_enum(&["deterministic", "agent", "composite"]),
                        ),
                        ("evaluator_version", s()),
                        ("evaluation_duration_ms", int0()),
                        ("model_id", s()),
                        (
                            "confidence",
                            Node::Num {
                                min: Some(0.0),
                                max: Some(1.0),
                            },
                        ),
                    ],
                ),
            ),
        ],
    );
    let error = obj(
        &["code", "message"],
        vec![
            ("code", Node::Int { min: None }),
            ("message", s()),
            ("data", Node::Any),
        ],
    );
    Node::ResponseEnvelope(Box::new(Node::Obj {
        required: &["jsonrpc", "id"],
        props: vec![
            ("jsonrpc", Node::Const("2.0")),
            ("id", Node::StrNumOrNull),
            ("result", Node::AcsResult(Box::new(result))),
            ("error", error),
        ],
        additional: Additional::Forbid,
        min_props: 0,
    }))
}

/// `handshake.json#/$defs/ClientHello`.
pub fn client_hello() -> Node {
    obj(
        &[
            "acs_versions_supported",
            "methods_implemented",
            "transports_supported",
            "provenance_producer",
        ],
        vec![
            ("acs_versions_supported", arr_min1(s_pat(Pattern::Semver))),
            ("methods_implemented", arr(s_pat(Pattern::Method))),
            ("transports_supported", arr_min1(s_enum(TRANSPORTS))),
            ("max_payload_size_bytes", int1()),
            ("provenance_producer", s_enum(&["deterministic", "none"])),
            (
                "wrapped_protocols",
                arr(obj(
                    &["protocol", "version"],
                    vec![("protocol", s_enum(&["MCP", "A2A"])), ("version", s())],
                )),
            ),
            ("profiles_supported", arr(s_enum(PROFILES))),
        ],
    )
}

/// `handshake.json#/$defs/ServerHello`.
pub fn server_hello() -> Node {
    obj(
        &[
            "negotiated_version",
            "methods_evaluated",
            "selected_transport",
            "timeout_config",
        ],
        vec![
            ("negotiated_version", s_pat(Pattern::Semver)),
            ("methods_evaluated", arr(s())),
            ("selected_transport", s_enum(TRANSPORTS)),
            ("signature_algorithms_supported", arr(s_enum(SIG_ALGS))),
            (
                "timeout_config",
                obj(
                    &["default_ms"],
                    vec![("default_ms", int1()), ("per_method_ms", map_of(int1()))],
                ),
            ),
            ("skew_window_ms", int0()),
            // v0.1.0's name, then the current one (spec §4, §6.4).
            ("on_timeout", s_enum(&["proceed", "deny"])),
            ("on_decision_failure", s_enum(&["proceed", "deny"])),
            (
                "approver_types_supported",
                arr(s_enum(&["human", "agent", "service"])),
            ),
            ("policy_requires_provenance", Node::Bool),
            (
                "agbom_serializations_supported",
                arr(s_enum(&["canonical", "cyclonedx-1.6", "spdx-3.0", "swid"])),
            ),
            (
                "trace_emission",
                obj(
                    &[],
                    vec![
                        ("otel_enabled", Node::Bool),
                        ("ocsf_enabled", Node::Bool),
                        ("otel_collector_endpoint", s_fmt(Format::Uri)),
                    ],
                ),
            ),
            ("profiles_accepted", arr(s_enum(PROFILES))),
        ],
    )
}

/// Required members of a value that carries provenance: with the strict
/// (`*.acs-provenance.json`) schemas `provenance` is required, with the base
/// schemas (ACS-Core, spec §7) it is optional.
fn vp(strict: bool) -> &'static [&'static str] {
    if strict {
        &["value", "provenance"]
    } else {
        &["value"]
    }
}
fn valued(strict: bool) -> Node {
    obj(
        vp(strict),
        vec![("value", Node::Any), ("provenance", provenance())],
    )
}
fn tool() -> Node {
    obj(
        &["name"],
        vec![("name", s()), ("version", s()), ("provider", s())],
    )
}
fn content_items(strict: bool) -> Node {
    arr_min1(obj(
        if strict {
            &["type", "value", "provenance"]
        } else {
            &["type", "value"]
        },
        vec![
            ("type", s_enum(CONTENT_TYPES)),
            ("value", Node::Any),
            ("provenance", provenance()),
        ],
    ))
}
fn memory_store_ref() -> Node {
    obj(&[], vec![("name", s()), ("scope", s_enum(SCOPES))])
}

/// Payload schema of a `steps/*` hook, by method name, as the base
/// (ACS-Core) schemas have it: `provenance` optional on every value (spec
/// §7; the summary of `steps/postCompact` keeps it, its lineage is the
/// point). `None` when the standard's schema for that hook is not available.
pub fn payload_schema(method: &str) -> Option<&'static Node> {
    static CELL: OnceLock<Vec<(&'static str, Node)>> = OnceLock::new();
    lookup(CELL.get_or_init(|| build_all(false)), method)
}

/// The strict (`*.acs-provenance.json`) variant of [`payload_schema`]:
/// `provenance` required on every value, as in the schemas of
/// `shared/acs/v0.1.0/` (which are the older, strict ones).
pub fn payload_schema_strict(method: &str) -> Option<&'static Node> {
    static CELL: OnceLock<Vec<(&'static str, Node)>> = OnceLock::new();
    lookup(CELL.get_or_init(|| build_all(true)), method)
}

/// Methods with a payload schema.
const PAYLOAD_METHODS: &[&str] = &[
    "handshake/hello",
    "steps/preCompact",
    "steps/postCompact",
    "steps/toolCallRequest",
    "steps/toolCallResult",
    "steps/userMessage",
    "steps/agentResponse",
    "steps/knowledgeRetrieval",
    "steps/memoryContextRetrieval",
    "steps/memoryStore",
    "steps/turnEnd",
    "steps/subagentStop",
];

fn build_all(strict: bool) -> Vec<(&'static str, Node)> {
    PAYLOAD_METHODS
        .iter()
        .filter_map(|m| build_payload(m, strict).map(|n| (*m, n)))
        .collect()
}

fn lookup(all: &'static [(&'static str, Node)], method: &str) -> Option<&'static Node> {
    all.iter().find(|(m, _)| *m == method).map(|(_, n)| n)
}

fn build_payload(method: &str, strict: bool) -> Option<Node> {
    macro_rules! cached {
        ($build:expr) => {{ Some($build) }};
    }
    match method {
        "handshake/hello" => cached!(client_hello()),
        "steps/preCompact" => cached!(obj(
            &["entries_to_compact", "triggered_by"],
            vec![
                ("entries_to_compact", arr_min1(s())),
                ("pre_compact_provenance_summary", provenance_summary()),
                (
                    "triggered_by",
                    s_enum(&[
                        "size_threshold",
                        "manual",
                        "agent_initiated",
                        "framework_initiated"
                    ]),
                ),
                ("estimated_input_tokens", int0()),
                ("target_summary_tokens", int0()),
            ],
        )),
        "steps/postCompact" => cached!(obj(
            &[
                "summary",
                "entries_compacted",
                "pre_compact_chain_hash",
                "post_compact_chain_hash"
            ],
            vec![
                (
                    "summary",
                    obj(
                        &["value", "provenance"],
                        vec![("value", s()), ("provenance", provenance())]
                    )
                ),
                ("entries_compacted", arr_min1(s())),
                ("pre_compact_chain_hash", s_pat(Pattern::Sha256Hex)),
                ("post_compact_chain_hash", s_pat(Pattern::Sha256Hex)),
                ("lineage_depth_after", int0()),
            ],
        )),
        "steps/toolCallRequest" => cached!(obj(
            &["tool", "arguments"],
            vec![
                ("tool", tool()),
                ("operation", s()),
                ("capability", s()),
                ("arguments", map_of(valued(strict))),
                ("raw_command", s()),
                ("intent", obj(&[], vec![("goal", s())])),
            ],
        )),
        "steps/toolCallResult" => cached!(obj(
            // The current text (hooks.md) describes the payload as
            // execution_id, outputs, exit status and duration: the base
            // schema no longer insists on `tool` nor on an array of outputs.
            if strict {
                &["tool", "exit_status", "outputs"]
            } else {
                &["exit_status"]
            },
            vec![
                ("tool", tool()),
                ("execution_id", s()),
                ("operation", s()),
                ("request_id_ref", s_fmt(Format::Uuid)),
                (
                    "exit_status",
                    s_enum(&["success", "failure", "timeout", "blocked"])
                ),
                (
                    "outputs",
                    if strict {
                        arr(valued(strict))
                    } else {
                        Node::Any
                    }
                ),
                ("duration_ms", int0()),
            ],
        )),
        "steps/userMessage" => cached!(obj(&["content"], vec![("content", content_items(strict))])),
        "steps/agentResponse" => cached!(obj(
            &["content"],
            vec![("content", content_items(strict)), ("reasoning", s())],
        )),
        "steps/knowledgeRetrieval" => cached!(obj(
            &["query", "results"],
            vec![
                (
                    "query",
                    obj(
                        vp(strict),
                        vec![("value", s()), ("provenance", provenance())]
                    )
                ),
                (
                    "source",
                    obj(
                        &[],
                        vec![
                            ("name", s()),
                            (
                                "type",
                                s_enum(&[
                                    "vector_db",
                                    "search_index",
                                    "knowledge_base",
                                    "web_search",
                                    "other"
                                ])
                            ),
                            ("version", s()),
                        ],
                    ),
                ),
                (
                    "results",
                    arr(obj(
                        vp(strict),
                        vec![
                            ("value", Node::Any),
                            ("source_id", s()),
                            (
                                "score",
                                Node::Num {
                                    min: None,
                                    max: None
                                }
                            ),
                            ("provenance", provenance()),
                        ],
                    )),
                ),
            ],
        )),
        "steps/memoryContextRetrieval" => cached!(obj(
            &["results"],
            vec![
                (
                    "query",
                    obj(&[], vec![("value", s()), ("provenance", provenance())])
                ),
                ("memory_store", memory_store_ref()),
                (
                    "results",
                    arr(obj(
                        vp(strict),
                        vec![
                            ("memory_id", s()),
                            ("value", Node::Any),
                            ("stored_at", s_fmt(Format::DateTime)),
                            ("provenance", provenance()),
                        ],
                    )),
                ),
            ],
        )),
        "steps/memoryStore" => cached!(obj(
            &["content"],
            vec![
                ("memory_id", s()),
                ("memory_store", memory_store_ref()),
                ("operation", s_enum(&["create", "update", "delete"])),
                ("content", valued(strict)),
                ("metadata", obj_any()),
            ],
        )),
        "steps/turnEnd" => cached!(obj(
            &["turn_id", "outcome"],
            vec![
                ("turn_id", s()),
                (
                    "outcome",
                    s_enum(&[
                        "completed",
                        "deferred",
                        "error",
                        "interrupted",
                        "denied_at_start"
                    ])
                ),
                ("step_count", int0()),
                (
                    "summary",
                    obj(
                        vp(strict),
                        vec![("value", s()), ("provenance", provenance())]
                    )
                ),
                ("tool_call_count", int0()),
            ],
        )),
        "steps/subagentStop" => cached!(obj(
            &["subagent_session_id", "outcome"],
            vec![
                ("subagent_session_id", s_fmt(Format::Uuid)),
                (
                    "outcome",
                    s_enum(&[
                        "completed",
                        "failed",
                        "cancelled",
                        "timeout",
                        "denied_at_spawn"
                    ])
                ),
                ("final_chain_hash", s_pat(Pattern::Sha256Hex)),
                ("summary", valued(strict)),
                ("subagent_step_count", int0()),
            ],
        )),
        _ => None,
    }
}

/// The cached request-envelope schema.
pub fn request_envelope_schema() -> &'static Node {
    static CELL: OnceLock<Node> = OnceLock::new();
    CELL.get_or_init(request_envelope)
}

/// The cached response-envelope schema.
pub fn response_envelope_schema() -> &'static Node {
    static CELL: OnceLock<Node> = OnceLock::new();
    CELL.get_or_init(response_envelope)
}

// ---- validation -------------------------------------------------------------

/// Validates `value` against `node`; `base` is the JSON Pointer of `value`.
pub fn validate(node: &Node, value: &Value, base: &str) -> Result<(), ValidationError> {
    let mut path = Path {
        base,
        tokens: Vec::new(),
    };
    check(node, value, &mut path)
}

/// Where the walk is: `base` and the member names and item indexes below
/// it, kept as references and written out as a JSON Pointer only when an
/// error is reported (a valid request never builds its paths' text).
struct Path<'a> {
    base: &'a str,
    tokens: Vec<Token<'a>>,
}

#[derive(Clone, Copy)]
enum Token<'a> {
    Name(&'a str),
    Index(usize),
}

impl<'a> Path<'a> {
    fn len(&self) -> usize {
        self.tokens.len()
    }
    fn truncate(&mut self, len: usize) {
        self.tokens.truncate(len);
    }
    fn push(&mut self, name: &'a str) {
        self.tokens.push(Token::Name(name));
    }
    fn index(&mut self, i: usize) {
        self.tokens.push(Token::Index(i));
    }
    fn text(&self) -> String {
        let mut out = String::from(self.base);
        for t in &self.tokens {
            match t {
                Token::Name(n) => push_token(&mut out, n),
                Token::Index(i) => {
                    let _ = write!(out, "/{i}");
                }
            }
        }
        out
    }
}

fn err(path: &Path<'_>, message: impl Into<String>) -> ValidationError {
    ValidationError {
        path: path.text(),
        message: message.into(),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn push_token(path: &mut String, token: &str) {
    path.push('/');
    if !token.contains(['~', '/']) {
        path.push_str(token);
        return;
    }
    for c in token.chars() {
        match c {
            '~' => path.push_str("~0"),
            '/' => path.push_str("~1"),
            c => path.push(c),
        }
    }
}

fn as_integer(v: &Value) -> Option<f64> {
    let n = v.as_number()?;
    if n.is_i64() || n.is_u64() {
        return n.as_f64();
    }
    let f = n.as_f64()?;
    (f.fract() == 0.0).then_some(f)
}

fn check<'a>(node: &'a Node, value: &'a Value, path: &mut Path<'a>) -> Result<(), ValidationError> {
    match node {
        Node::Any => Ok(()),
        Node::Const(c) => match value {
            Value::String(s) if s == c => Ok(()),
            _ => Err(err(path, format!("must be \"{c}\""))),
        },
        Node::Str {
            enumv,
            pattern,
            format,
            min_len,
            max_len,
        } => {
            let Value::String(s) = value else {
                return Err(err(
                    path,
                    format!("expected string, got {}", type_name(value)),
                ));
            };
            if !enumv.is_empty() && !enumv.contains(&s.as_str()) {
                return Err(err(path, format!("must be one of {}", enumv.join(", "))));
            }
            let count = || s.chars().count();
            if let Some(m) = min_len
                && count() < *m
            {
                return Err(err(path, format!("shorter than {m} characters")));
            }
            if let Some(m) = max_len
                && count() > *m
            {
                return Err(err(path, format!("longer than {m} characters")));
            }
            if let Some(p) = pattern
                && !pattern_matches(*p, s)
            {
                return Err(err(
                    path,
                    format!("does not match pattern {}", pattern_text(*p)),
                ));
            }
            if let Some(f) = format
                && !format_matches(*f, s)
            {
                return Err(err(path, format!("is not a valid {}", format_text(*f))));
            }
            Ok(())
        }
        Node::Int { min } => {
            let Some(f) = as_integer(value) else {
                return Err(err(
                    path,
                    format!("expected integer, got {}", type_name(value)),
                ));
            };
            if let Some(m) = min {
                // Exact for the small bounds the schemas use.
                let below = match value.as_i64() {
                    Some(i) => i < *m,
                    None => value.as_u64().is_none() && f < *m as f64,
                };
                if below {
                    return Err(err(path, format!("must be at least {m}")));
                }
            }
            Ok(())
        }
        Node::Num { min, max } => {
            let Some(f) = value.as_f64() else {
                return Err(err(
                    path,
                    format!("expected number, got {}", type_name(value)),
                ));
            };
            if let Some(m) = min
                && f < *m
            {
                return Err(err(path, format!("must be at least {m}")));
            }
            if let Some(m) = max
                && f > *m
            {
                return Err(err(path, format!("must be at most {m}")));
            }
            Ok(())
        }
        Node::Bool => match value {
            Value::Bool(_) => Ok(()),
            _ => Err(err(
                path,
                format!("expected boolean, got {}", type_name(value)),
            )),
        },
        Node::StrOrNum => match value {
            Value::String(_) | Value::Number(_) => Ok(()),
            _ => Err(err(
                path,
                format!("expected string or number, got {}", type_name(value)),
            )),
        },
        Node::StrNumOrNull => match value {
            Value::String(_) | Value::Number(_) | Value::Null => Ok(()),
            _ => Err(err(
                path,
                format!("expected string, number or null, got {}", type_name(value)),
            )),
        },
        Node::Arr {
            items,
            min_items,
            unique,
        } => {
            let Value::Array(a) = value else {
                return Err(err(
                    path,
                    format!("expected array, got {}", type_name(value)),
                ));
            };
            if a.len() < *min_items {
                return Err(err(path, format!("must have at least {min_items} item(s)")));
            }
            for (i, item) in a.iter().enumerate() {
                let len = path.len();
                path.index(i);
                check(items, item, path)?;
                path.truncate(len);
            }
            if *unique {
                for i in 0..a.len() {
                    for j in 0..i {
                        if json_equal(&a[i], &a[j]) {
                            return Err(err(
                                path,
                                format!("items {j} and {i} are equal (uniqueItems)"),
                            ));
                        }
                    }
                }
            }
            Ok(())
        }
        Node::Obj {
            required,
            props,
            additional,
            min_props,
        } => {
            let Value::Object(map) = value else {
                return Err(err(
                    path,
                    format!("expected object, got {}", type_name(value)),
                ));
            };
            check_object(map, required, props, additional, *min_props, path)
        }
        Node::AcsResult(inner) => {
            check(inner, value, path)?;
            if let Value::Object(map) = value {
                let needs: &[&str] = match map.get("decision").and_then(Value::as_str) {
                    Some("deny") => &["reasoning"],
                    Some("modify") => &["reasoning", "modifications"],
                    Some("ask") => &["reasoning", "ask_details"],
                    Some("defer") => &["reasoning", "defer_details"],
                    _ => &[],
                };
                for k in needs {
                    if !map.contains_key(*k) {
                        let len = path.len();
                        path.push(k);
                        let e = err(path, "required by this decision");
                        path.truncate(len);
                        return Err(e);
                    }
                }
            }
            Ok(())
        }
        Node::ResponseEnvelope(inner) => {
            check(inner, value, path)?;
            if let Value::Object(map) = value {
                match (map.get("result"), map.get("error")) {
                    (Some(_), None) => {
                        if map.get("id").is_some_and(Value::is_null) {
                            let len = path.len();
                            path.push("id");
                            let e = err(path, "a result response must carry a non-null id");
                            path.truncate(len);
                            return Err(e);
                        }
                    }
                    (None, Some(_)) => {}
                    _ => return Err(err(path, "exactly one of result and error is required")),
                }
            }
            Ok(())
        }
    }
}

fn check_object<'a>(
    map: &'a Map<String, Value>,
    required: &'a [&'a str],
    props: &'a [(&'static str, Node)],
    additional: &'a Additional,
    min_props: usize,
    path: &mut Path<'a>,
) -> Result<(), ValidationError> {
    if map.len() < min_props {
        return Err(err(
            path,
            format!("must have at least {min_props} member(s)"),
        ));
    }
    for r in required {
        if member(map, r).is_none() {
            let len = path.len();
            path.push(r);
            let e = err(path, "is required");
            path.truncate(len);
            return Err(e);
        }
    }
    for (name, node) in props {
        if let Some(v) = member(map, name) {
            let len = path.len();
            path.push(name);
            check(node, v, path)?;
            path.truncate(len);
        }
    }
    match additional {
        Additional::Allow => Ok(()),
        Additional::Forbid | Additional::Schema(_) => {
            for (k, v) in map {
                if props.iter().any(|(n, _)| n == k) {
                    continue;
                }
                let len = path.len();
                path.push(k);
                match additional {
                    Additional::Schema(node) => check(node, v, path)?,
                    _ => return Err(err(path, "is not allowed (additionalProperties: false)")),
                }
                path.truncate(len);
            }
            Ok(())
        }
    }
}

/// `map.get(name)`; a small object is searched by comparing names, which
/// costs less than hashing `name` (keys are unique, so the answer is the same).
pub fn member<'a>(map: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    if map.len() <= 8 {
        map.iter().find(|(k, _)| k.as_str() == name).map(|(_, v)| v)
    } else {
        map.get(name)
    }
}

/// JSON Schema equality: numbers compare by value (1 == 1.0).
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(i), Some(j)) => i == j,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

fn pattern_text(p: Pattern) -> &'static str {
    match p {
        Pattern::Semver => r"^\d+\.\d+\.\d+$",
        Pattern::Method => r"^(steps/|protocols/|agbom/|trace/|system/|handshake/|wrapped:).+",
        Pattern::Sha256Hex => "^[0-9a-f]{64}$",
    }
}

fn format_text(f: Format) -> &'static str {
    match f {
        Format::Uuid => "uuid",
        Format::DateTime => "date-time",
        Format::Uri => "uri",
    }
}

/// Whether `s` matches one of the schemas' patterns (ECMA-262 semantics).
pub fn pattern_matches(p: Pattern, s: &str) -> bool {
    match p {
        Pattern::Semver => {
            let mut parts = s.split('.');
            let ok = |x: Option<&str>| {
                x.is_some_and(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
            };
            ok(parts.next()) && ok(parts.next()) && ok(parts.next()) && parts.next().is_none()
        }
        Pattern::Method => {
            const PREFIXES: &[&str] = &[
                "steps/",
                "protocols/",
                "agbom/",
                "trace/",
                "system/",
                "handshake/",
                "wrapped:",
            ];
            PREFIXES.iter().any(|p| {
                s.strip_prefix(p)
                    .and_then(|rest| rest.chars().next())
                    .is_some_and(|c| !matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}'))
            })
        }
        Pattern::Sha256Hex => {
            s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        }
    }
}

/// Whether `s` is a valid instance of a format the schemas use.
pub fn format_matches(f: Format, s: &str) -> bool {
    match f {
        Format::Uuid => {
            let b = s.as_bytes();
            b.len() == 36
                && b.iter().enumerate().all(|(i, c)| match i {
                    8 | 13 | 18 | 23 => *c == b'-',
                    _ => c.is_ascii_hexdigit(),
                })
        }
        Format::DateTime => crate::time::parse_rfc3339_ms(s).is_some(),
        Format::Uri => {
            let Some((scheme, _)) = s.split_once(':') else {
                return false;
            };
            scheme
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
                && !s.chars().any(|c| c.is_whitespace() || c.is_control())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reports_paths() {
        let n = payload_schema("steps/preCompact")
            .cloned()
            .unwrap_or(Node::Any);
        let e = validate(
            &n,
            &json!({"entries_to_compact": [], "triggered_by": "manual"}),
            "/params/payload",
        );
        assert_eq!(
            e.map_err(|e| e.path),
            Err("/params/payload/entries_to_compact".to_string())
        );
        let e = validate(
            &n,
            &json!({"entries_to_compact": ["a"], "triggered_by": "x"}),
            "",
        );
        assert_eq!(e.map_err(|e| e.path), Err("/triggered_by".to_string()));
        assert!(
            validate(
                &n,
                &json!({"entries_to_compact": ["a"], "triggered_by": "auto"}),
                ""
            )
            .is_err()
        );
        assert!(validate(&n, &json!({"entries_to_compact": ["a"], "triggered_by": "manual", "target_summary_tokens": 3.0}), "").is_ok());
    }

    #[test]
    fn patterns_and_formats() {
        assert!(pattern_matches(Pattern::Semver, "0.1.0"));
        assert!(!pattern_matches(Pattern::Semver, "0.1"));
        assert!(!pattern_matches(Pattern::Semver, "0.1.0.1"));
        assert!(pattern_matches(Pattern::Method, "steps/x"));
        assert!(!pattern_matches(Pattern::Method, "steps/"));
        assert!(!pattern_matches(Pattern::Method, "foo/bar"));
        assert!(format_matches(
            Format::Uuid,
            "550e8400-e29b-41d4-a716-446655440000"
        ));
        assert!(!format_matches(
            Format::Uuid,
            "550e8400e29b41d4a716446655440000"
        ));
    }
}
