//! The Guardian core: one JSON-RPC 2.0 request in, one response out
//! ([`Guardian::handle`]). Pure apart from the [`SessionStore`] it is given
//! and the clock; the transports (stdio, HTTP, one-shot) live in `server`.

use crate::chain::{self, Hash};
use crate::decide::{CompactionInput, Decision, EntryProvenance, TrustResolver, decide_compaction};
use crate::model::{
    self, ACS_VERSION, AcsParams, ClientHello, Origin, PostCompact, PreCompact, Provenance,
    Trigger, Verdict,
};
use crate::policy::{CAPABILITY_REFUSALS, DecisionFailure, Policy, RefusalForm, Trust, glob_match};
use crate::precompact::{PreCompactDecision, decide_pre_compact};
use crate::store::{CompactionRecord, SessionHandshake, SessionStore, StepRecord, StoreError};
use crate::validate::{self, ValidationError};
use mnemo_acs::sign::{self, SignatureError};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};

pub use mnemo_acs::sign::{base64_decode, base64_encode, session_key};

/// JSON-RPC and ACS error codes.
pub mod codes {
    /// Invalid JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a valid request object (or too large, or no handshake yet).
    pub const INVALID_REQUEST: i64 = -32600;
    /// Unknown method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Params or payload violate the schema.
    pub const INVALID_PARAMS: i64 = -32602;
    /// The Guardian failed (store error).
    pub const INTERNAL_ERROR: i64 = -32603;
    /// ACS SESSION_REFUSED (e.g. no common transport).
    pub const SESSION_REFUSED: i64 = -32000;
    /// ACS UNSUPPORTED_VERSION.
    pub const UNSUPPORTED_VERSION: i64 = -32001;
    /// ACS PROVENANCE_REQUIRED (`provenance_producer: "none"` while the
    /// policy requires provenance).
    pub const PROVENANCE_REQUIRED: i64 = -32002;
    /// ACS CAPABILITY_NOT_NEGOTIATED (no handshake yet, or a method the
    /// handshake did not negotiate).
    pub const CAPABILITY_NOT_NEGOTIATED: i64 = -32003;
    /// ACS signature invalid or missing.
    pub const SIGNATURE_INVALID: i64 = -32004;
    /// ACS replayed request id.
    pub const REPLAY_DETECTED: i64 = -32005;
    /// ACS TIMESTAMP_OUT_OF_WINDOW.
    pub const TIMESTAMP_OUT_OF_WINDOW: i64 = -32006;
    /// ACS CHAIN_MISMATCH.
    pub const CHAIN_MISMATCH: i64 = -32007;
}

/// Conformance profiles this Guardian accepts (ServerHello `profiles_accepted`).
pub const PROFILES_ACCEPTED: &[&str] = &["acs-core"];

/// Methods evaluated by this Guardian.
pub const METHODS: &[&str] = &[
    "handshake/hello",
    "system/ping",
    "steps/preCompact",
    "steps/postCompact",
    "steps/userMessage",
    "steps/agentResponse",
    "steps/toolCallRequest",
    "steps/toolCallResult",
    "steps/knowledgeRetrieval",
    "steps/memoryContextRetrieval",
    "steps/memoryStore",
    "steps/turnEnd",
    "steps/subagentStop",
    "steps/sessionStart",
    "steps/sessionEnd",
    "steps/turnStart",
    "steps/agentTrigger",
    "steps/subagentStart",
    "steps/skillRegister",
    "steps/skillLoad",
    "steps/skillUnload",
];

/// Whether this Guardian evaluates `method`: the methods of [`METHODS`]
/// and wrapped MCP (`protocols/MCP/*`, recorded like any step).
pub fn evaluates(method: &str) -> bool {
    METHODS.contains(&method)
        || method
            .strip_prefix("protocols/MCP/")
            .is_some_and(|rest| !rest.is_empty())
}

/// Reason code and audit finding of a `steps/toolCallResult` whose
/// `request_id_ref` names no `steps/toolCallRequest` of its session.
pub const UNRESOLVED_REF: &str = "request_id_ref_unresolved";
/// Reason code of a call past its per-turn budget (`[[tools.budget]]`).
pub const BUDGET_EXHAUSTED: &str = "budget_exhausted";

/// The tool name and command of a tool call (`steps/toolCallRequest`, or
/// wrapped MCP `tools/call` whose `name` is the tool).
fn tool_call<'a>(method: &str, payload: &'a Value) -> Option<(&'a str, Option<&'a str>)> {
    let tool = match method {
        "steps/toolCallRequest" => payload.at(&["tool", "name"])?.as_str()?,
        "protocols/MCP/tools/call" => payload
            .at(&["tool", "name"])
            .or_else(|| payload.get("name"))?
            .as_str()?,
        _ => return None,
    };
    let command = payload
        .get("raw_command")
        .or_else(|| payload.at(&["arguments", "command", "value"]))
        .or_else(|| payload.at(&["arguments", "command"]))
        .and_then(Value::as_str);
    Some((tool, command))
}

/// Transport names used in the ServerHello.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Content-Length framed stdio.
    Stdio,
    /// HTTP POST.
    Http,
}

/// Envelope settings.
#[derive(Debug, Clone)]
pub struct GuardianConfig {
    /// Allowed timestamp skew (`None`: not checked).
    pub skew_window_ms: Option<u64>,
    /// HMAC-SHA256 secrets by label (`key_id`); when non-empty every request
    /// (but `system/ping`) must be signed, under the per-session key HKDF
    /// derives from the secret its `key_id` names (ACS §10), and every
    /// response is signed under the same key.
    pub hmac_keys: Vec<(String, Vec<u8>)>,
    /// Whether `handshake/hello` must come first in a session.
    pub require_handshake: bool,
    /// Largest request accepted.
    pub max_request_bytes: usize,
    /// Transport answered in the ServerHello.
    pub transport: Transport,
    /// Refuse clients that declare `provenance_producer: "none"` (-32002).
    pub require_provenance: bool,
    /// `on_decision_failure` announced in the ServerHello.
    pub on_decision_failure: DecisionFailure,
    /// `agent_id` globs of clients that cannot apply MODIFY (§6.5).
    pub modify_unsupported_agents: Vec<String>,
}

impl Default for GuardianConfig {
    fn default() -> Self {
        GuardianConfig {
            skew_window_ms: Some(300_000),
            hmac_keys: Vec::new(),
            require_handshake: true,
            max_request_bytes: 1 << 20,
            transport: Transport::Stdio,
            require_provenance: true,
            on_decision_failure: DecisionFailure::Proceed,
            modify_unsupported_agents: Vec::new(),
        }
    }
}

impl GuardianConfig {
    /// Settings from a policy's `[guardian]` table (keys are added by the caller).
    pub fn from_policy(p: &Policy) -> Self {
        GuardianConfig {
            skew_window_ms: p.guardian.skew_window_ms,
            hmac_keys: Vec::new(),
            require_handshake: p.guardian.require_handshake,
            max_request_bytes: p.guardian.max_request_bytes,
            transport: Transport::Stdio,
            require_provenance: p.guardian.require_provenance,
            on_decision_failure: p.guardian.on_decision_failure,
            modify_unsupported_agents: p.guardian.modify_unsupported_agents.clone(),
        }
    }
}

/// A JSON-RPC error.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// Code.
    pub code: i64,
    /// Message.
    pub message: String,
    /// Structured detail.
    pub data: Option<Value>,
}

impl RpcError {
    fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }
    fn with(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
    fn invalid(code: i64, e: &ValidationError) -> Self {
        RpcError::new(
            code,
            format!(
                "invalid {}: {}",
                if code == codes::INVALID_PARAMS {
                    "params"
                } else {
                    "request"
                },
                e
            ),
        )
        .with(json!({"path": e.path, "reason": e.message}))
    }
}

impl From<StoreError> for RpcError {
    fn from(e: StoreError) -> Self {
        RpcError::new(codes::INTERNAL_ERROR, e.to_string())
    }
}

/// The Guardian: policy + envelope settings + session store.
pub struct Guardian<S: SessionStore> {
    policy: Policy,
    config: GuardianConfig,
    store: S,
    clock: fn() -> i64,
    handled: u64,
    in_batch: bool,
    /// The session and key the current response is signed with.
    signer: Option<(String, usize)>,
    /// Per-turn budget counts, (session, turn, budget glob), for a store
    /// that keeps none ([`SessionStore::count_turn_call`] said `None`).
    turn_calls: HashMap<(String, String, String), u64>,
}

/// A compaction a host is about to run, as its hook saw it.
#[derive(Debug, Clone, Copy)]
pub struct HostCompaction<'a> {
    /// The host's session id (the store's session key).
    pub session_id: &'a str,
    /// Who asks, e.g. `claude-code`.
    pub agent_id: &'a str,
    /// A fresh id for this decision (its step id in the chain).
    pub request_id: &'a str,
    /// The entries to be compacted, oldest first.
    pub entries: &'a [EntryProvenance],
    /// Entries that come after them and stay outside the summary (Codex:
    /// the user's message of a turn whose pre-turn compaction this is,
    /// not yet in the transcript); only their re-grounding counts.
    pub after: &'a [EntryProvenance],
    /// Why now.
    pub trigger: Trigger,
}

/// A compaction a host has just run, as its PostCompact hook saw it.
#[derive(Debug, Clone, Copy)]
pub struct HostPostCompaction<'a> {
    /// The host's session id.
    pub session_id: &'a str,
    /// Who reports, e.g. `codex`.
    pub agent_id: &'a str,
    /// A fresh id for this step.
    pub request_id: &'a str,
    /// The provenance id the summary gets (the host's transcript names it
    /// the same way at the next PreCompact, so that its lineage resolves).
    pub summary_id: &'a str,
    /// The summary's source id.
    pub summary_source: &'a str,
    /// Lineage id standing for "unknown" when no allowed preCompact of
    /// this session matches the compaction (resolved by the policy's
    /// `unknown_lineage`).
    pub unknown_lineage: &'a str,
    /// Provenance of what the host's transcript holds when its PostCompact
    /// runs, read again (Claude Code: an allow that no pending line could
    /// turn into a deny answers before the host has written every line it
    /// queued, so the preCompact may not have judged them all). Added to
    /// the summary's lineage; the nodes the preCompact did not record are
    /// recorded with the postCompact step. Empty: the preCompact's alone.
    pub transcript: &'a [Provenance],
}

/// What a host's postCompact recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct HostPostRecord {
    /// The summary's provenance, `derived_from` = the union of the
    /// provenance ids of the entries the allowed preCompact judged.
    pub summary: Provenance,
    /// The preCompact whose entries were compacted, when one matched.
    pub pre_compact: Option<String>,
    /// The summary's trust under the policy.
    pub trust: crate::policy::Trust,
    /// Human-readable account.
    pub reasoning: String,
}

/// Requests between two prunings of old request ids.
const PRUNE_EVERY: u64 = 4096;

impl<S: SessionStore> Guardian<S> {
    /// A Guardian over `store`.
    pub fn new(policy: Policy, config: GuardianConfig, store: S) -> Self {
        Guardian {
            policy,
            config,
            store,
            clock: crate::time::now_ms,
            handled: 0,
            in_batch: false,
            signer: None,
            turn_calls: HashMap::new(),
        }
    }

    /// Replaces the clock (Unix ms), for tests.
    pub fn with_clock(mut self, clock: fn() -> i64) -> Self {
        self.clock = clock;
        self
    }

    /// The store.
    pub fn store_mut(&mut self) -> &mut S {
        &mut self.store
    }

    /// The store, to read.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// A Guardian with this one's policy, settings and clock over another
    /// store (for instance [`SessionStore::another`] handle of the same
    /// one, for a second decider thread); nothing else is shared.
    pub fn sibling<T: SessionStore>(&self, store: T) -> Guardian<T> {
        Guardian::new(self.policy.clone(), self.config.clone(), store).with_clock(self.clock)
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The envelope settings.
    pub fn config(&self) -> &GuardianConfig {
        &self.config
    }

    /// Handles one request's bytes; always returns a response's bytes.
    pub fn handle(&mut self, bytes: &[u8]) -> Vec<u8> {
        let resp = match parse_request(bytes, self.config.max_request_bytes) {
            Ok(v) => self.handle_value(&v),
            Err(e) => e,
        };
        encode_response(&resp)
    }

    /// Handles one parsed request.
    pub fn handle_value(&mut self, req: &Value) -> Value {
        let id = match req.get("id") {
            Some(v @ (Value::String(_) | Value::Number(_))) => v.clone(),
            _ => Value::Null,
        };
        self.signer = None;
        if self.in_batch {
            let resp = match self.process(req) {
                Ok(result) => envelope(id, "result", result),
                Err(e) => error_response(id, &e),
            };
            if self.signer.is_none() {
                self.signer = self.fallback_signer(req);
            }
            return self.signed(resp);
        }
        if let Err(e) = self.store.begin() {
            return error_response(id, &e.into());
        }
        let out = self.process(req);
        // A store failure leaves nothing half-written (where the store can roll back).
        let commit = match &out {
            Err(e) if e.code == codes::INTERNAL_ERROR => self.store.rollback(),
            _ => self.store.commit(),
        };
        if self.signer.is_none() {
            self.signer = self.fallback_signer(req);
        }
        let resp = match (out, commit) {
            (Ok(result), Ok(())) => envelope(id, "result", result),
            (Err(e), _) => error_response(id, &e),
            (Ok(_), Err(e)) => error_response(id, &e.into()),
        };
        self.signed(resp)
    }

    /// The key for answering a request refused before its signature was
    /// looked at (a version or envelope error): the key it names, or the
    /// first when it names none; nothing for an unknown label or a
    /// request without a session id.
    fn fallback_signer(&self, req: &Value) -> Option<(String, usize)> {
        if self.config.hmac_keys.is_empty() {
            return None;
        }
        let session = req.at(&["params", "metadata", "session_id"])?.as_str()?;
        let i = match req.at(&["params", "signature", "key_id"]) {
            Some(k) => {
                let k = k.as_str()?;
                self.config.hmac_keys.iter().position(|(l, _)| l == k)?
            }
            None => 0,
        };
        Some((session.to_string(), i))
    }

    /// Signs a response under the current request's session key (ACS §10:
    /// every response is signed when a key is configured; the key is the
    /// one the request named).
    fn signed(&mut self, mut resp: Value) -> Value {
        if let Some((session, i)) = self.signer.take()
            && let Some((label, secret)) = self.config.hmac_keys.get(i)
        {
            let key = sign::session_key(secret, &session);
            sign::sign_response_with_key(&mut resp, label, &key);
        }
        resp
    }

    /// Handles several parsed requests, in order, in one store transaction
    /// (group commit). When the commit fails every answer is an internal error.
    /// A store that decided the batch against its own copy of a session's
    /// state and found, on sending it, that another process had moved the
    /// session on ([`SessionStore::take_stale`]) kept nothing of it: the
    /// batch is decided once more, against the database.
    pub fn handle_batch(&mut self, reqs: &[Value]) -> Vec<Value> {
        let ids: Vec<Value> = reqs
            .iter()
            .map(|r| match r.get("id") {
                Some(v @ (Value::String(_) | Value::Number(_))) => v.clone(),
                _ => Value::Null,
            })
            .collect();
        let fail = |ids: Vec<Value>, e: StoreError| -> Vec<Value> {
            let e: RpcError = e.into();
            ids.into_iter().map(|id| error_response(id, &e)).collect()
        };
        // Every session of the batch is locked up front, in order (a store
        // shared between processes must never see two batches lock the
        // same sessions in opposite orders).
        let mut sessions: Vec<&str> = reqs
            .iter()
            .filter_map(|r| r.at(&["params", "metadata", "session_id"])?.as_str())
            .collect();
        sessions.sort_unstable();
        sessions.dedup();
        // The replay marks the batch will ask for, per session: a store
        // that pays a round trip per statement reads them with the lock.
        let mut marks: BTreeMap<&str, (Vec<&str>, Vec<&str>)> = BTreeMap::new();
        for r in reqs.iter().filter(|_| self.store.wants_marks_ahead()) {
            let Some(session) = r
                .at(&["params", "metadata", "session_id"])
                .and_then(Value::as_str)
            else {
                continue;
            };
            let (ids, nonces) = marks.entry(session).or_default();
            if let Some(id) = r.at(&["params", "request_id"]).and_then(Value::as_str) {
                ids.push(id);
            }
            if let Some(n) = r.at(&["params", "nonce"]).and_then(Value::as_str) {
                nonces.push(n);
            }
        }
        let mut first_try = true;
        loop {
            if let Err(e) = self.store.begin() {
                return fail(ids, e);
            }
            let announced = marks
                .iter()
                .try_for_each(|(s, (ids, nonces))| self.store.expect_marks(s, ids, nonces));
            if let Err(e) = announced.and_then(|()| self.store.lock_sessions(&sessions)) {
                let _ = self.store.rollback();
                if std::mem::take(&mut first_try) && self.store.take_stale() {
                    continue;
                }
                return fail(ids, e);
            }
            self.in_batch = true;
            let out: Vec<Value> = reqs.iter().map(|r| self.handle_value(r)).collect();
            self.in_batch = false;
            match self.store.commit() {
                Ok(()) => return out,
                Err(e) => {
                    if std::mem::take(&mut first_try) && self.store.take_stale() {
                        continue;
                    }
                    return fail(ids, e);
                }
            }
        }
    }

    fn process(&mut self, req: &Value) -> Result<Value, RpcError> {
        let Some(obj) = req.as_object() else {
            return Err(RpcError::new(
                codes::INVALID_REQUEST,
                "request must be a JSON object",
            ));
        };
        // Version first, so a future major gets UNSUPPORTED_VERSION whatever
        // its shape; never for system/ping, which answers no ACS error (§13).
        if obj.get("method").and_then(Value::as_str) != Some("system/ping")
            && let Some(v) = obj
                .get("params")
                .and_then(|p| p.get("acs_version"))
                .and_then(Value::as_str)
            && validate::pattern_matches(validate::Pattern::Semver, v)
            && major(v) != major(ACS_VERSION)
        {
            return Err(unsupported(v));
        }
        if let Err(e) = validate::validate(validate::request_envelope_schema(), req, "") {
            let code = if e.path.starts_with("/params") {
                codes::INVALID_PARAMS
            } else {
                codes::INVALID_REQUEST
            };
            return Err(RpcError::invalid(code, &e));
        }
        let method = obj
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !evaluates(method) {
            return Err(RpcError::new(
                codes::METHOD_NOT_FOUND,
                format!("method not found: {method}"),
            ));
        }
        let params_v = obj.get("params").unwrap_or(&Value::Null);
        let params = typed::<ParamsHead>(params_v)?.into_params();
        let session = params.metadata.session_id.clone();
        let now = (self.clock)();
        if method == "system/ping" {
            return self.ping(req, &params, params_v, &session, now);
        }
        self.check_signature(req, &session)?;
        if let Some(window) = self.config.skew_window_ms {
            let ts = crate::time::parse_rfc3339_ms(&params.timestamp).unwrap_or(i64::MIN);
            let skew = now.saturating_sub(ts).unsigned_abs();
            if skew > window {
                return Err(RpcError::new(codes::TIMESTAMP_OUT_OF_WINDOW, "timestamp outside the allowed window").with(
                    json!({"reason": "timestamp_out_of_window", "skew_window_ms": window, "server_time": crate::time::format_rfc3339_ms(now), "timestamp": params.timestamp}),
                ));
            }
        }
        self.handled += 1;
        if let Some(window) = self.config.skew_window_ms
            && self.handled % PRUNE_EVERY == 1
        {
            let w = i64::try_from(window)
                .unwrap_or(i64::MAX / 4)
                .min(i64::MAX / 4);
            self.store.prune_requests(now.saturating_sub(2 * w))?;
        }
        // Replays are scoped to the session (§10.3).
        if !self.store.mark_request(&session, &params.request_id, now)? {
            return Err(RpcError::new(codes::REPLAY_DETECTED, "replayed request_id")
                .with(json!({"reason": "duplicate_request_id", "request_id": params.request_id})));
        }
        if let Some(nonce) = &params.nonce
            && !self.store.mark_nonce(&session, nonce, now)?
        {
            return Err(RpcError::new(codes::REPLAY_DETECTED, "replayed nonce")
                .with(json!({"reason": "duplicate_nonce", "nonce": nonce})));
        }
        if let Some(permitted) = &self.policy.guardian.permitted_agents
            && !permitted
                .iter()
                .any(|g| glob_match(g, &params.metadata.agent_id))
        {
            return Err(RpcError::new(
                codes::SESSION_REFUSED,
                format!(
                    "agent {:?} is not permitted by this Guardian's policy ([guardian] permitted_agents)",
                    params.metadata.agent_id
                ),
            )
            .with(json!({"reason": "agent_not_permitted", "agent_id": params.metadata.agent_id, "method": method})));
        }
        if method == "handshake/hello" {
            return self.hello(&params, params_v, &session);
        }
        if self.config.require_handshake {
            match self.store.handshake(&session)? {
                None => {
                    return Err(RpcError::new(
                        codes::CAPABILITY_NOT_NEGOTIATED,
                        "handshake/hello required before other methods",
                    )
                    .with(
                        json!({"reason": "no_handshake", "method": method, "session_id": session}),
                    ));
                }
                Some(hs) if !hs.allows(method) => {
                    return Err(RpcError::new(
                        codes::CAPABILITY_NOT_NEGOTIATED,
                        format!("{method} was not negotiated in this session's handshake"),
                    )
                    .with(json!({"reason": "method_not_negotiated", "method": method, "session_id": session})));
                }
                Some(_) => {}
            }
        }
        // §8.6: a client's chain_hash that disagrees with the head is
        // CHAIN_MISMATCH (the Guardian cannot proceed on a forked chain).
        let claimed = params_v
            .at(&["metadata", "session_state", "chain_hash"])
            .or_else(|| params_v.at(&["metadata", "chain_hash"]))
            .and_then(Value::as_str);
        if let Some(claimed) = claimed {
            let head = self.store.chain_head(&session)?;
            let head_hex = head.map(|(_, h)| chain::to_hex(&h));
            if head_hex.as_deref() != Some(claimed) {
                return Err(RpcError::new(
                    codes::CHAIN_MISMATCH,
                    "the client's chain_hash is not this session's chain head",
                )
                .with(json!({"reason": "chain_mismatch", "client_chain_hash": claimed, "chain_hash": head_hex})));
            }
        }
        let payload = payload_of(params_v);
        if let Some(schema) = validate::payload_schema(method)
            && let Err(e) = validate::validate(schema, payload, "/params/payload")
        {
            return Err(RpcError::invalid(codes::INVALID_PARAMS, &e));
        }
        match method {
            "steps/preCompact" => self.pre_compact(method, &params, params_v, &session),
            "steps/postCompact" => self.post_compact(method, &params, params_v, &session),
            _ => {
                let provs = model::collect_provenance(payload);
                // hooks.md, toolCallResult: a request_id_ref that names no
                // toolCallRequest of this session is recorded whatever the
                // decision (in the chain entry and the response); whether
                // it is grounds to deny is the policy's.
                let unresolved = match payload.get("request_id_ref").and_then(Value::as_str) {
                    Some(r) if method == "steps/toolCallResult" => {
                        (!self.store.has_step(&session, r, "steps/toolCallRequest")?)
                            .then(|| r.to_string())
                    }
                    _ => None,
                };
                let call = tool_call(method, payload);
                let mut refused: Option<(Vec<&'static str>, String)> = call
                    .and_then(|(tool, command)| self.policy.tools.check(tool, command))
                    .map(|(code, why)| (vec![code], why));
                if refused.is_none()
                    && let Some((tool, _)) = call
                {
                    refused = self
                        .policy
                        .tools
                        .approval
                        .check(tool, &params.metadata.agent_id);
                }
                if refused.is_none()
                    && let Some((tool, _)) = call
                    && let Some(b) = self.policy.tools.budget(tool).cloned()
                {
                    let turn = params.metadata.turn_id.as_deref().unwrap_or("");
                    let n = match self.store.count_turn_call(&session, turn, &b.tool)? {
                        Some(n) => n,
                        None => {
                            let n = self
                                .turn_calls
                                .entry((session.clone(), turn.to_string(), b.tool.clone()))
                                .or_insert(0);
                            *n += 1;
                            *n
                        }
                    };
                    if n > b.max_calls_per_turn {
                        refused = Some((
                            vec![BUDGET_EXHAUSTED],
                            format!(
                                "Call {n} of {tool} in turn {turn:?}; the policy allows {} per turn ([[tools.budget]] tool = {:?}). The Guardian counts the calls itself; the request's own account of earlier calls is not read.",
                                b.max_calls_per_turn, b.tool
                            ),
                        ));
                    }
                }
                if refused.is_none()
                    && self.policy.tools.deny_unresolved_ref
                    && let Some(r) = &unresolved
                {
                    refused = Some((
                        vec![UNRESOLVED_REF],
                        format!(
                            "request_id_ref {r} names no steps/toolCallRequest of this session; the policy denies unresolved references ([tools] on_unresolved_ref = \"deny\")."
                        ),
                    ));
                }
                if self.policy.tools.refusal_form == RefusalForm::Error
                    && let Some((why, reasoning)) = &refused
                    && why.first().is_some_and(|c| CAPABILITY_REFUSALS.contains(c))
                {
                    // `[tools] refusal_form = "error"`: the ACS-Core vectors'
                    // form of a capability refusal. Nothing is chained (an
                    // error writes no ContextEntry); a budget call is counted.
                    let tool = call.map(|(t, _)| t).unwrap_or_default();
                    let reason = why.first().copied().unwrap_or_default();
                    return Err(RpcError::new(
                        codes::CAPABILITY_NOT_NEGOTIATED,
                        format!("{tool} is outside this session's capabilities: {reasoning}"),
                    )
                    .with(json!({
                        "reason": reason,
                        "reason_codes": why,
                        "message": reasoning,
                        "method": method,
                        "capability": tool,
                        "decision": "deny",
                        "policy_references": [{"policy_id": self.policy.policy_id, "policy_version": self.policy.policy_version, "rule_id": reason}],
                    })));
                }
                let mut r = match refused {
                    Some((codes, reasoning)) => {
                        let mut r = self.result(&params, Verdict::Deny, Some(reasoning));
                        r.set("reason_codes", json!(codes));
                        r.set(
                            "policy_references",
                            json!([{"policy_id": self.policy.policy_id, "policy_version": self.policy.policy_version, "rule_id": codes.first().copied().unwrap_or_default()}]),
                        );
                        r
                    }
                    None => self.result(
                        &params,
                        Verdict::Allow,
                        Some("Recorded with its provenance.".into()),
                    ),
                };
                let finding =
                    unresolved.map(|r| json!({"finding": UNRESOLVED_REF, "request_id_ref": r}));
                if let Some(f) = &finding {
                    let mut codes: Vec<Value> =
                        r.0.get("reason_codes")
                            .and_then(Value::as_array)
                            .cloned()
                            .unwrap_or_default();
                    if !codes.iter().any(|c| c == UNRESOLVED_REF) {
                        codes.push(json!(UNRESOLVED_REF));
                    }
                    r.set("reason_codes", Value::Array(codes));
                    r.set("policy_data", json!({"audit_findings": [f]}));
                }
                let hash =
                    self.append_step_with(&session, method, &params, params_v, provs, finding)?;
                r.set("chain_hash", Value::String(chain::to_hex(&hash)));
                Ok(r.0)
            }
        }
    }

    /// `system/ping` (§13): always `allow`, never an ACS-specific error, no
    /// signature required, no chain entry, no replay bookkeeping.
    fn ping(
        &mut self,
        req: &Value,
        params: &AcsParams,
        params_v: &Value,
        session: &str,
        now: i64,
    ) -> Result<Value, RpcError> {
        if !self.config.hmac_keys.is_empty() {
            // Answer under the key the request named when it names a known
            // one, else the first; a bad signature changes nothing here.
            let named = req
                .at(&["params", "signature", "key_id"])
                .and_then(Value::as_str)
                .and_then(|k| self.config.hmac_keys.iter().position(|(l, _)| l == k));
            self.signer = Some((session.to_string(), named.unwrap_or(0)));
        }
        let echo = payload_of(params_v)
            .get("echo")
            .cloned()
            .unwrap_or(Value::Null);
        let mut body =
            json!({"status": "ok", "server_timestamp": crate::time::format_rfc3339_ms(now)});
        if !echo.is_null()
            && let Value::Object(m) = &mut body
        {
            m.insert("echo".into(), echo);
        }
        Ok(self
            .result(params, Verdict::Allow, None)
            .with_payload(body)
            .0)
    }

    fn check_signature(&mut self, req: &Value, session: &str) -> Result<(), RpcError> {
        if self.config.hmac_keys.is_empty() {
            return Ok(());
        }
        let sig = req.at(&["params", "signature"]);
        let named = sig
            .and_then(|s| s.get("key_id"))
            .and_then(Value::as_str)
            .map(|k| self.config.hmac_keys.iter().position(|(l, _)| l == k));
        // Answer under the named key; with no key_id at all, under the
        // first; an unknown label names no key to answer with.
        self.signer = match named {
            Some(Some(i)) => Some((session.to_string(), i)),
            Some(None) => None,
            None => Some((session.to_string(), 0)),
        };
        let input = sign::request_signing_input(req);
        sign::verify(sig, &input, session, &self.config.hmac_keys)
            .map(|_| ())
            .map_err(|e| {
                let reason = match e {
                    SignatureError::Missing => "signature_missing",
                    SignatureError::Algorithm(_) => "algorithm_unsupported",
                    SignatureError::UnknownKey(_) => "unknown_key_id",
                    SignatureError::Encoding => "signature_malformed",
                    SignatureError::Mismatch => "signature_mismatch",
                };
                RpcError::new(codes::SIGNATURE_INVALID, e.to_string())
                    .with(json!({"reason": reason}))
            })
    }

    fn hello(
        &mut self,
        params: &AcsParams,
        params_v: &Value,
        session: &str,
    ) -> Result<Value, RpcError> {
        let payload = payload_of(params_v);
        if let Some(schema) = validate::payload_schema("handshake/hello") {
            validate::validate(schema, payload, "/params/payload")
                .map_err(|e| RpcError::invalid(codes::INVALID_PARAMS, &e))?;
        }
        let hello: ClientHello = typed(payload)?;
        if !hello
            .acs_versions_supported
            .iter()
            .any(|v| major(v) == major(ACS_VERSION))
        {
            return Err(unsupported(&hello.acs_versions_supported.join(", ")));
        }
        // The transport this request came over must be one the client offers.
        let (ours, also): (&str, &[&str]) = match self.config.transport {
            Transport::Stdio => ("stdio", &[]),
            Transport::Http => ("http", &["https"]),
        };
        let Some(selected) = hello
            .transports_supported
            .iter()
            .find(|t| *t == ours || also.contains(&t.as_str()))
            .cloned()
        else {
            return Err(RpcError::new(
                codes::SESSION_REFUSED,
                format!(
                    "this Guardian is reached over {ours}, which the client does not offer ({})",
                    hello.transports_supported.join(", ")
                ),
            )
            .with(json!({"reason": "transport_not_offered", "transport": ours, "transports_supported": hello.transports_supported})));
        };
        if self.config.require_provenance && hello.provenance_producer == "none" {
            // Decisions rest on provenance: refuse rather than silently degrade (§4).
            return Err(RpcError::new(
                codes::PROVENANCE_REQUIRED,
                "this Guardian's policy requires provenance: provenance_producer must be \"deterministic\"",
            )
            .with(json!({"reason": "provenance_required", "path": "/params/payload/provenance_producer", "policy_requires_provenance": true})));
        }
        let evaluated: Vec<&String> = hello
            .methods_implemented
            .iter()
            .filter(|m| evaluates(m))
            .collect();
        self.store.set_handshake(
            session,
            &SessionHandshake {
                version: ACS_VERSION.to_string(),
                methods: Some(evaluated.iter().map(|m| m.to_string()).collect()),
            },
        )?;
        let sigs: Vec<&str> = if self.config.hmac_keys.is_empty() {
            vec![]
        } else {
            vec![sign::HMAC_SHA256]
        };
        let profiles: Vec<&str> = match &hello.profiles_supported {
            Some(offered) => PROFILES_ACCEPTED
                .iter()
                .copied()
                .filter(|p| offered.iter().any(|o| o == p))
                .collect(),
            None => PROFILES_ACCEPTED.to_vec(),
        };
        let failure = self.config.on_decision_failure.as_str();
        let mut server = json!({
            "negotiated_version": ACS_VERSION,
            "methods_evaluated": evaluated,
            "selected_transport": selected,
            "signature_algorithms_supported": sigs,
            "timeout_config": {"default_ms": 1000},
            "on_decision_failure": failure,
            "on_timeout": failure,
            "approver_types_supported": [],
            "policy_requires_provenance": self.config.require_provenance,
            "profiles_accepted": profiles,
        });
        if let (Some(w), Value::Object(m)) = (self.config.skew_window_ms, &mut server) {
            m.insert("skew_window_ms".into(), json!(w));
        }
        // The ServerHello is the result itself, where current clients read
        // it; the v0.1.0 decision members and a copy under `payload` keep
        // clients that read `result.payload` working (unknown members are
        // ignored, §3).
        let mut r = self
            .result(params, Verdict::Allow, Some("Session accepted.".into()))
            .with_payload(server.clone());
        if let Value::Object(m) = server {
            for (k, v) in m {
                r.set(&k, v);
            }
        }
        Ok(r.0)
    }

    fn pre_compact(
        &mut self,
        method: &str,
        params: &AcsParams,
        params_v: &Value,
        session: &str,
    ) -> Result<Value, RpcError> {
        let pc: PreCompact = typed(payload_of(params_v))?;
        // Reads the region, the newest re-grounding after it and the
        // lineage it reaches through the store's indexes, not every step.
        let PreCompactDecision {
            decision: d,
            unrecorded,
        } = decide_pre_compact(&mut self.store, &self.policy, session, &pc)?;
        let mut codes_extra = Vec::new();
        if pc.pre_compact_provenance_summary.is_none() && !unrecorded.is_empty() {
            codes_extra.push("unrecorded_entries".to_string());
        }
        let record = CompactionRecord {
            step_id: params.request_id.clone(),
            entries: pc.entries_to_compact.clone(),
            verdict: d.verdict,
            reasoning: Some(d.reasoning.clone()),
            reason_codes: d.reason_codes.iter().chain(&codes_extra).cloned().collect(),
        };
        let hash =
            self.record_pre_compact(session, method, params, params_v, record, Vec::new())?;
        let mut reason_codes = d.reason_codes.clone();
        reason_codes.extend(codes_extra);
        let mut policy_data = d.policy_data.clone();
        if !unrecorded.is_empty()
            && let Value::Object(m) = &mut policy_data
        {
            m.insert("unrecorded_entries".into(), json!(unrecorded));
        }
        let mut r = self.result(params, d.verdict, Some(d.reasoning.clone()));
        r.set("reason_codes", json!(reason_codes));
        r.set("cited_provenance_ids", json!(d.cited_provenance_ids));
        r.set("policy_data", policy_data);
        r.set(
            "policy_references",
            json!([{"policy_id": self.policy.policy_id, "policy_version": self.policy.policy_version, "rule_id": d.rule_id}]),
        );
        r.set("chain_hash", Value::String(chain::to_hex(&hash)));
        Ok(r.0)
    }

    /// Records a preCompact decision (for the matching postCompact) and
    /// its chain entry, whose provenance is `judged` (what a host's
    /// allowed compaction folds; empty otherwise).
    fn record_pre_compact(
        &mut self,
        session: &str,
        method: &str,
        params: &AcsParams,
        params_v: &Value,
        record: CompactionRecord,
        judged: Vec<Provenance>,
    ) -> Result<Hash, RpcError> {
        self.store.record_compaction(session, &record)?;
        self.append_step(session, method, params, params_v, judged)
    }

    /// The decision [`Self::pre_compact_from_host`] would take on `host`,
    /// with nothing recorded (no request id marked, no step, no chain
    /// entry): lets an adapter see whether a second look at a transcript
    /// the host is still writing is worth its wait.
    pub fn dry_pre_compact_from_host(&mut self, host: &HostCompaction<'_>) -> Decision {
        let known = self.known_lineage(host);
        self.decide_host(host, &known)
    }

    /// The recorded nodes the lineage of `host`'s entries reaches (earlier
    /// compactions' summaries and what they derive from), looked up
    /// through the store's index one level at a time instead of reading
    /// every step; a store that cannot say leaves lineage unknown.
    fn known_lineage(&mut self, host: &HostCompaction<'_>) -> Vec<Provenance> {
        crate::precompact::recorded_lineage(
            &mut self.store,
            &self.policy,
            host.session_id,
            host.entries.iter().chain(host.after),
        )
        .unwrap_or_default()
    }

    /// A host's compaction (the Claude Code and Codex hooks): the region's
    /// entries, oldest first, come from the host's own transcript instead
    /// of recorded steps, so that ordering (and with it re-grounding) is
    /// known. Decided by the same policy and recorded like an ACS
    /// `steps/preCompact` whose payload carries the entry ids and their
    /// provenance summary: the decision (for a later postCompact) and a
    /// chain entry, in one store transaction. The decision stands even when
    /// recording it fails (nothing is recorded then, and the error is
    /// returned beside it): a broken store never turns a deny into an allow.
    pub fn pre_compact_from_host(
        &mut self,
        host: &HostCompaction<'_>,
    ) -> (Decision, Result<Hash, RpcError>) {
        let all: Vec<Provenance> = host
            .entries
            .iter()
            .flat_map(|e| e.provenance.iter().cloned())
            .collect();
        let mut summary = model::summarize(&all);
        let mut earliest = std::collections::BTreeMap::new();
        for e in host.entries {
            for p in &e.provenance {
                // Looked up by name first: a key string is made once per origin.
                if !earliest.contains_key(p.origin.as_str()) {
                    earliest.insert(p.origin.as_str().to_string(), e.step_id.clone());
                }
            }
        }
        summary.earliest_step_id_by_origin = Some(earliest);
        let mut pc = PreCompact {
            entries_to_compact: host.entries.iter().map(|e| e.step_id.clone()).collect(),
            pre_compact_provenance_summary: Some(summary),
            triggered_by: host.trigger,
            estimated_input_tokens: None,
            target_summary_tokens: None,
        };
        let params = AcsParams {
            acs_version: ACS_VERSION.to_string(),
            request_id: host.request_id.to_string(),
            timestamp: crate::time::format_rfc3339_ms((self.clock)()),
            nonce: None,
            metadata: model::Metadata {
                agent_id: host.agent_id.to_string(),
                session_id: host.session_id.to_string(),
                turn_id: None,
            },
            // The payload is only read from `params_v` (the step's request
            // hash); it is put there once instead of being converted twice.
            payload: Map::new(),
            signature: None,
        };
        let mut params_v = serde_json::to_value(&params).unwrap_or(Value::Null);
        let payload = match serde_json::to_value(&pc) {
            Ok(v @ Value::Object(_)) => v,
            _ => Value::Object(Map::new()),
        };
        if let Value::Object(m) = &mut params_v {
            m.insert("payload".into(), payload);
        }
        let entries_to_compact = std::mem::take(&mut pc.entries_to_compact);
        if let Err(e) = self.store.begin() {
            let d = self.decide_host(host, &[]);
            return (d, Err(e.into()));
        }
        let known = self.known_lineage(host);
        let d = self.decide_host(host, &known);
        // An allowed compaction keeps what it judged, so that the
        // postCompact can give the summary its lineage.
        let judged = if d.verdict == Verdict::Allow {
            all
        } else {
            Vec::new()
        };
        let recorded = self
            .store
            .mark_request(host.session_id, &params.request_id, (self.clock)())
            .map_err(RpcError::from)
            .and_then(|_| {
                let record = CompactionRecord {
                    step_id: params.request_id.clone(),
                    entries: entries_to_compact,
                    verdict: d.verdict,
                    reasoning: Some(d.reasoning.clone()),
                    reason_codes: d.reason_codes.clone(),
                };
                self.record_pre_compact(
                    host.session_id,
                    "steps/preCompact",
                    &params,
                    &params_v,
                    record,
                    judged,
                )
            });
        match recorded {
            Ok(hash) => match self.store.commit() {
                Ok(()) => (d, Ok(hash)),
                Err(e) => (d, Err(e.into())),
            },
            Err(e) => {
                let _ = self.store.rollback();
                (d, Err(e))
            }
        }
    }

    fn decide_host(&self, host: &HostCompaction<'_>, known: &[Provenance]) -> Decision {
        decide_compaction(
            &self.policy,
            &CompactionInput {
                entries: host.entries,
                after: host.after,
                known,
                trigger: host.trigger,
                estimated_input_tokens: None,
                target_summary_tokens: None,
            },
        )
    }

    /// A host's compaction has run (the PostCompact hooks): records a
    /// `steps/postCompact` step whose provenance is the summary,
    /// `agent_generated`, `derived_from` the union of the provenance ids of
    /// the entries the session's last preCompact allowed (recorded by
    /// [`Self::pre_compact_from_host`]), and its chain entry, in one store
    /// transaction. When no allowed preCompact is waiting for its
    /// postCompact (the hook was not installed for that trigger, or the
    /// compaction was already recorded), the lineage is unknown
    /// (`unknown_lineage`): trust never rises across a compaction the
    /// Guardian did not see. The summary's trust is what a later
    /// compaction of the summary inherits.
    pub fn post_compact_from_host(
        &mut self,
        host: &HostPostCompaction<'_>,
    ) -> (HostPostRecord, Result<Hash, RpcError>) {
        let mut record = HostPostRecord {
            summary: Provenance {
                provenance_id: host.summary_id.to_string(),
                origin: Origin::AgentGenerated,
                source_id: Some(host.summary_source.to_string()),
                derived_from: vec![host.unknown_lineage.to_string()],
            },
            pre_compact: None,
            trust: self.policy.unknown_lineage,
            reasoning: String::new(),
        };
        if let Err(e) = self.store.begin() {
            record.reasoning = "session store unavailable: lineage unknown".into();
            return (record, Err(e.into()));
        }
        let r = (|| -> Result<Hash, RpcError> {
            // Through the store's indexes, not every step: the allowed
            // preCompact's step, and whether a postCompact came after it.
            let last = self.store.last_compaction(host.session_id)?;
            let waiting = match last.filter(|rec| rec.verdict == Verdict::Allow) {
                Some(rec) => {
                    let step = self
                        .store
                        .steps_by_id(host.session_id, &[rec.step_id.as_str()])?
                        .into_iter()
                        .find(|s| s.step_id == rec.step_id);
                    match step {
                        Some(st) if !self.post_compact_after(host.session_id, st.seq)? => {
                            Some((rec, st.provenance))
                        }
                        _ => None,
                    }
                }
                None => None,
            };
            let mut union: BTreeSet<String> = BTreeSet::new();
            match &waiting {
                Some((rec, judged)) => {
                    union.extend(judged.iter().map(|p| p.provenance_id.clone()));
                    record.pre_compact = Some(rec.step_id.clone());
                }
                None => {
                    union.insert(host.unknown_lineage.to_string());
                    record.reasoning = "no allowed preCompact of this session waits for this compaction; the summary's lineage is unknown".into();
                }
            }
            // What the transcript holds now and the preCompact did not
            // record: in the lineage, and recorded with this step.
            let late: Vec<&Provenance> = {
                let mut seen: std::collections::HashSet<&str> = waiting
                    .iter()
                    .flat_map(|(_, judged)| judged.iter().map(|j| j.provenance_id.as_str()))
                    .collect();
                host.transcript
                    .iter()
                    .filter(|p| seen.insert(p.provenance_id.as_str()))
                    .collect()
            };
            union.extend(late.iter().map(|p| p.provenance_id.clone()));
            record.summary.derived_from = union.into_iter().collect();
            let known = crate::precompact::recorded_lineage_with(
                &mut self.store,
                &self.policy,
                host.session_id,
                std::iter::once(&record.summary),
                late.iter().copied(),
            )?;
            record.trust =
                TrustResolver::new(&self.policy, known.iter().chain(late.iter().copied()))
                    .trust(&record.summary);
            if let Some((rec, judged)) = &waiting {
                record.reasoning = format!(
                    "Summary of the {} entries the preCompact {} allowed ({} provenance ids{}); recorded as {}.",
                    rec.entries.len(),
                    rec.step_id,
                    judged.len(),
                    if late.is_empty() {
                        String::new()
                    } else {
                        format!(
                            ", and {} the transcript held at postCompact that it had not judged",
                            late.len()
                        )
                    },
                    record.trust.as_str()
                );
            } else {
                record
                    .reasoning
                    .push_str(&format!("; recorded as {}.", record.trust.as_str()));
            }
            let head = self.store.chain_head(host.session_id)?;
            let payload = json!({
                "entries_compacted": waiting.as_ref().map(|(rec, _)| rec.entries.clone()).unwrap_or_default(),
                "summary": {"provenance": record.summary},
                "pre_compact_chain_hash": head.map(|(_, h)| chain::to_hex(&h)).unwrap_or_default(),
            });
            let params = AcsParams {
                acs_version: ACS_VERSION.to_string(),
                request_id: host.request_id.to_string(),
                timestamp: crate::time::format_rfc3339_ms((self.clock)()),
                nonce: None,
                metadata: model::Metadata {
                    agent_id: host.agent_id.to_string(),
                    session_id: host.session_id.to_string(),
                    turn_id: None,
                },
                payload: match payload {
                    Value::Object(m) => m,
                    _ => Map::new(),
                },
                signature: None,
            };
            let params_v = serde_json::to_value(&params).unwrap_or(Value::Null);
            self.store
                .mark_request(host.session_id, host.request_id, (self.clock)())?;
            let mut nodes = vec![record.summary.clone()];
            nodes.extend(late.iter().map(|p| (*p).clone()));
            self.append_step(
                host.session_id,
                "steps/postCompact",
                &params,
                &params_v,
                nodes,
            )
        })();
        match r {
            Ok(hash) => match self.store.commit() {
                Ok(()) => (record, Ok(hash)),
                Err(e) => (record, Err(e.into())),
            },
            Err(e) => {
                let _ = self.store.rollback();
                (record, Err(e))
            }
        }
    }

    /// Whether the session recorded a `steps/postCompact` after step
    /// number `seq` (its provenance is the `agent_generated` summary, so
    /// the origin index finds it; pages newest first).
    fn post_compact_after(&mut self, session: &str, seq: u64) -> Result<bool, StoreError> {
        const PAGE: usize = 64;
        let mut before: Option<u64> = None;
        loop {
            let page = self.store.steps_with_origin(
                session,
                &[Origin::AgentGenerated],
                seq,
                before,
                PAGE,
            )?;
            if page.iter().any(|s| s.method == "steps/postCompact") {
                return Ok(true);
            }
            match page.last() {
                Some(oldest) if page.len() == PAGE => before = Some(oldest.seq),
                _ => return Ok(false),
            }
        }
    }

    fn post_compact(
        &mut self,
        method: &str,
        params: &AcsParams,
        params_v: &Value,
        session: &str,
    ) -> Result<Value, RpcError> {
        let pc: PostCompact = typed(payload_of(params_v))?;
        let steps = self.store.steps(session)?;
        let mut problems: Vec<(&str, String)> = Vec::new();
        // Lineage union over the compacted entries.
        let mut union: BTreeSet<String> = BTreeSet::new();
        let mut missing = Vec::new();
        for id in &pc.entries_compacted {
            match steps.iter().find(|s| &s.step_id == id) {
                Some(s) => union.extend(s.provenance.iter().map(|p| p.provenance_id.clone())),
                None => missing.push(id.clone()),
            }
        }
        if !missing.is_empty() {
            problems.push((
                "unrecorded_entries",
                format!("entries never recorded: {}", missing.join(", ")),
            ));
        }
        let claimed: BTreeSet<String> =
            pc.summary.provenance.derived_from.iter().cloned().collect();
        if claimed != union {
            let extra: Vec<&String> = claimed.difference(&union).collect();
            let lacking: Vec<&String> = union.difference(&claimed).collect();
            problems.push((
                "lineage_mismatch",
                format!("derived_from must equal the union of the compacted entries' provenance ids (missing {lacking:?}, extra {extra:?})"),
            ));
        }
        if pc.summary.provenance.origin != Origin::AgentGenerated {
            problems.push((
                "origin_not_agent_generated",
                format!(
                    "summary origin is {}, must be agent_generated",
                    pc.summary.provenance.origin.as_str()
                ),
            ));
        }
        let corrected = Provenance {
            provenance_id: pc.summary.provenance.provenance_id.clone(),
            origin: Origin::AgentGenerated,
            source_id: pc.summary.provenance.source_id.clone(),
            derived_from: union.iter().cloned().collect(),
        };
        let known: Vec<Provenance> = steps
            .iter()
            .flat_map(|s| s.provenance.iter().cloned())
            .collect();
        let (claimed_trust, true_trust) = {
            let mut r = TrustResolver::new(&self.policy, known.iter());
            (r.trust(&pc.summary.provenance), r.trust(&corrected))
        };
        if claimed_trust > true_trust {
            problems.push((
                "trust_rise",
                format!(
                    "the summary as labelled would be {} while its lineage is {}",
                    claimed_trust.as_str(),
                    true_trust.as_str()
                ),
            ));
        }
        match self.store.last_compaction(session)? {
            Some(rec) if rec.verdict == Verdict::Allow => {
                let a: BTreeSet<&String> = rec.entries.iter().collect();
                let b: BTreeSet<&String> = pc.entries_compacted.iter().collect();
                if a != b {
                    problems.push((
                        "precompact_mismatch",
                        format!(
                            "entries_compacted differ from those the preCompact {} allowed",
                            rec.step_id
                        ),
                    ));
                }
            }
            Some(rec) => problems.push((
                "precompact_not_allowed",
                format!(
                    "the last preCompact ({}) was {}",
                    rec.step_id,
                    rec.verdict.as_str()
                ),
            )),
            None => problems.push((
                "no_precompact",
                "no preCompact was allowed for this compaction".into(),
            )),
        }
        // Chain.
        let head = self.store.chain_head(session)?;
        let head_hex = head.map(|(_, h)| chain::to_hex(&h));
        if head_hex.as_deref() != Some(pc.pre_compact_chain_hash.as_str()) {
            problems.push((
                "chain_mismatch",
                format!(
                    "pre_compact_chain_hash is not the chain head ({})",
                    head_hex.as_deref().unwrap_or("empty chain")
                ),
            ));
        }
        let hash = self.append_step(session, method, params, params_v, vec![corrected.clone()])?;
        let hash_hex = chain::to_hex(&hash);
        if hash_hex != pc.post_compact_chain_hash {
            problems.push((
                "chain_mismatch",
                format!("post_compact_chain_hash differs from the Guardian's head {hash_hex}"),
            ));
        }
        let mut codes: Vec<&str> = Vec::new();
        for (c, _) in &problems {
            if !codes.contains(c) {
                codes.push(c);
            }
        }
        let trust_label = true_trust.as_str();
        // §6.5: a client that cannot apply MODIFY gets ALLOW here (DENY is
        // not legal at postCompact), with `modify_unsupported` naming the
        // rewrite; the corrected provenance is what the store records.
        let modify_unsupported = !problems.is_empty()
            && self
                .config
                .modify_unsupported_agents
                .iter()
                .any(|g| glob_match(g, &params.metadata.agent_id));
        let mut r = if problems.is_empty() {
            let mut r = self.result(
                params,
                Verdict::Allow,
                Some(format!(
                    "Summary lineage verified; recorded as {trust_label}."
                )),
            );
            r.set("reason_codes", json!(["lineage_verified"]));
            r
        } else if modify_unsupported {
            let text: Vec<String> = problems.iter().map(|(_, t)| t.clone()).collect();
            let mut r = self.result(
                params,
                Verdict::Allow,
                Some(format!(
                    "{}. This client cannot apply MODIFY, so the summary stands unmodified; the Guardian records it with the corrected provenance (trust {trust_label}) and would have rewritten summary.provenance to it.",
                    text.join("; ")
                )),
            );
            let mut all = vec!["modify_unsupported"];
            all.extend(codes.iter().copied());
            r.set("reason_codes", json!(all));
            r.set(
                "policy_data",
                json!({"fides": {"summary_trust": trust_label, "derived_from": corrected.derived_from},
                       "modify_unsupported": {"intended_modifications": {"parameter_overrides": {"summary": {"provenance": corrected}}}}}),
            );
            r
        } else {
            let text: Vec<String> = problems.iter().map(|(_, t)| t.clone()).collect();
            let mut r = self.result(
                params,
                Verdict::Modify,
                Some(format!(
                    "{}. The Guardian records the summary with the corrected provenance (trust {trust_label}).",
                    text.join("; ")
                )),
            );
            r.set("reason_codes", json!(codes));
            r.set(
                "modifications",
                json!({"parameter_overrides": {"summary": {"provenance": corrected}}}),
            );
            r
        };
        r.set("cited_provenance_ids", json!(corrected.derived_from));
        if !modify_unsupported {
            r.set("policy_data", json!({"fides": {"summary_trust": trust_label, "derived_from": corrected.derived_from}}));
        }
        r.set("chain_hash", json!(hash_hex));
        Ok(r.0)
    }

    /// Records a step and its chain entry; returns the new head.
    fn append_step(
        &mut self,
        session: &str,
        method: &str,
        params: &AcsParams,
        params_v: &Value,
        provenance: Vec<Provenance>,
    ) -> Result<Hash, RpcError> {
        self.append_step_with(session, method, params, params_v, provenance, None)
    }

    /// [`Self::append_step`] with an audit finding kept in the chain entry
    /// (`findings`, e.g. an unresolved `request_id_ref`).
    fn append_step_with(
        &mut self,
        session: &str,
        method: &str,
        params: &AcsParams,
        params_v: &Value,
        provenance: Vec<Provenance>,
        finding: Option<Value>,
    ) -> Result<Hash, RpcError> {
        let head = self.store.chain_head(session)?;
        let seq = head.map(|(n, _)| n).unwrap_or(0) + 1;
        let req_hash = step_request_hash(method, params_v);
        let canonical = context_entry_canonical(
            seq,
            &params.request_id,
            method,
            &req_hash,
            &params.timestamp,
            &provenance,
            finding.as_ref(),
        );
        let hash = chain::entry_hash_canonical(&canonical, head.as_ref().map(|(_, h)| h));
        self.store.append_chain(session, seq, &canonical, &hash)?;
        self.store.record_step(
            session,
            &StepRecord {
                seq,
                step_id: params.request_id.clone(),
                method: method.to_string(),
                provenance,
            },
        )?;
        Ok(hash)
    }

    fn result(
        &self,
        params: &AcsParams,
        verdict: Verdict,
        reasoning: Option<String>,
    ) -> ResultBuilder {
        // Values made directly (`json!` goes through serde's Serializer for each).
        let mut meta = Map::new();
        meta.insert("evaluator".into(), Value::from("deterministic"));
        meta.insert(
            "evaluator_version".into(),
            Value::from(concat!("mnemo-guardian ", env!("CARGO_PKG_VERSION"))),
        );
        let mut m = Map::new();
        m.insert("type".into(), Value::from("final"));
        m.insert("acs_version".into(), Value::from(ACS_VERSION));
        m.insert("request_id".into(), Value::from(params.request_id.as_str()));
        m.insert("decision".into(), Value::from(verdict.as_str()));
        if let Some(r) = reasoning {
            m.insert("reasoning".into(), Value::String(r));
        }
        m.insert("metadata".into(), Value::Object(meta));
        ResultBuilder(Value::Object(m))
    }
}

/// The ContextEntry written to the chain for a step (see docs/guardian.md).
pub fn context_entry(
    seq: u64,
    step_id: &str,
    method: &str,
    request_hash: &Hash,
    timestamp: &str,
    provenance: &[Provenance],
) -> Value {
    let mut e = json!({
        "entry_id": seq.to_string(),
        "step_id": step_id,
        "step_type": method,
        "request_hash": chain::to_hex(request_hash),
        "timestamp": timestamp,
    });
    if !provenance.is_empty()
        && let (Value::Object(m), Ok(s)) =
            (&mut e, serde_json::to_value(model::summarize(provenance)))
    {
        m.insert("provenance_summary".into(), s);
    }
    e
}

/// The canonical text (RFC 8785) of the chain entry [`context_entry`]
/// builds, with `findings: [finding]` when there is one, written straight
/// into one string: the same bytes as `canonicalize` of that object, without
/// building it (members in their canonical order, which is fixed: every
/// name is ASCII).
pub fn context_entry_canonical(
    seq: u64,
    step_id: &str,
    method: &str,
    request_hash: &Hash,
    timestamp: &str,
    provenance: &[Provenance],
    finding: Option<&Value>,
) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(
        256 + step_id.len() + method.len() + timestamp.len() + 40 * provenance.len(),
    );
    let _ = write!(out, "{{\"entry_id\":\"{seq}\"");
    if let Some(f) = finding {
        out.push_str(",\"findings\":[");
        crate::jcs::append_canonical(&mut out, f);
        out.push(']');
    }
    if !provenance.is_empty() {
        // model::summarize: counts by origin (in name order), the count, the
        // origins in order of first appearance.
        let mut seen: Vec<Origin> = Vec::new();
        for p in provenance {
            if !seen.contains(&p.origin) {
                seen.push(p.origin);
            }
        }
        let mut by_name: Vec<&'static str> = seen.iter().map(|o| o.as_str()).collect();
        by_name.sort_unstable();
        let _ = write!(
            out,
            ",\"provenance_summary\":{{\"entry_count\":{},\"entry_count_by_origin\":{{",
            provenance.len()
        );
        for (i, name) in by_name.iter().enumerate() {
            let n = provenance
                .iter()
                .filter(|p| p.origin.as_str() == *name)
                .count();
            let _ = write!(out, "{}\"{name}\":{n}", if i > 0 { "," } else { "" });
        }
        out.push_str("},\"origins_seen\":[");
        for (i, o) in seen.iter().enumerate() {
            let _ = write!(out, "{}\"{}\"", if i > 0 { "," } else { "" }, o.as_str());
        }
        out.push_str("]}");
    }
    out.push_str(",\"request_hash\":\"");
    chain::push_hex(&mut out, request_hash);
    out.push_str("\",\"step_id\":");
    crate::jcs::append_string(&mut out, step_id);
    out.push_str(",\"step_type\":");
    crate::jcs::append_string(&mut out, method);
    out.push_str(",\"timestamp\":");
    crate::jcs::append_string(&mut out, timestamp);
    out.push('}');
    out
}

/// The request hash a step's chain entry carries: SHA-256 of the JCS of its
/// `params` without `signature` (and, for `steps/postCompact`, without
/// `payload.post_compact_chain_hash`, which depends on this very entry).
pub fn step_request_hash(method: &str, params: &Value) -> Hash {
    if method == "steps/postCompact" {
        chain::request_hash_omitting(
            params,
            &[&["signature"], &["payload", "post_compact_chain_hash"]],
        )
    } else {
        chain::request_hash_omitting(params, &[&["signature"]])
    }
}

/// The `post_compact_chain_hash` a client must send: the head after the
/// Guardian appends this postCompact as entry number `seq` after `previous`.
/// `params` is the request's `params` (its `post_compact_chain_hash` is ignored).
pub fn expected_post_compact_hash(
    params: &Value,
    seq: u64,
    previous: Option<&Hash>,
) -> Option<String> {
    let request_id = params.get("request_id")?.as_str()?;
    let timestamp = params.get("timestamp")?.as_str()?;
    let summary = params.get("payload")?.get("summary")?.get("provenance")?;
    let mut prov: Provenance = serde_json::from_value(summary.clone()).ok()?;
    prov.origin = Origin::AgentGenerated;
    let h = step_request_hash("steps/postCompact", params);
    let entry = context_entry_canonical(
        seq,
        request_id,
        "steps/postCompact",
        &h,
        timestamp,
        &[prov],
        None,
    );
    Some(chain::to_hex(&chain::entry_hash_canonical(
        &entry, previous,
    )))
}

struct ResultBuilder(Value);

impl ResultBuilder {
    fn set(&mut self, k: &str, v: Value) {
        if let Value::Object(m) = &mut self.0 {
            m.insert(k.to_string(), v);
        }
    }
    fn with_payload(mut self, v: Value) -> Self {
        self.set("payload", v);
        self
    }
}

/// A member reached through object members by name (`Value::pointer`
/// without parsing and allocating a JSON Pointer on every call).
trait At {
    fn at(&self, path: &[&str]) -> Option<&Value>;
}

impl At for Value {
    fn at(&self, path: &[&str]) -> Option<&Value> {
        path.iter()
            .try_fold(self, |v, k| validate::member(v.as_object()?, k))
    }
}

/// Parses a request's bytes (size-checked); the error is a ready response.
/// Transports call this outside any lock, then [`Guardian::handle_value`].
pub fn parse_request(bytes: &[u8], max_request_bytes: usize) -> Result<Value, Value> {
    if bytes.len() > max_request_bytes {
        return Err(error_response(
            Value::Null,
            &RpcError::new(codes::INVALID_REQUEST, "request too large")
                .with(json!({"max_request_bytes": max_request_bytes, "size": bytes.len()})),
        ));
    }
    serde_json::from_slice::<Value>(bytes).map_err(|e| {
        error_response(
            Value::Null,
            &RpcError::new(codes::PARSE_ERROR, format!("parse error: {e}")),
        )
    })
}

/// A request's `params` as [`AcsParams`] reads them, except that the
/// payload is only required, not copied: every method reads its payload
/// from the request itself ([`payload_of`]), and the envelope schema has
/// already checked that it is an object (so this accepts and refuses
/// exactly what `AcsParams` does after validation).
#[derive(Deserialize)]
struct ParamsHead {
    acs_version: String,
    request_id: String,
    timestamp: String,
    #[serde(default)]
    nonce: Option<String>,
    metadata: model::Metadata,
    #[allow(dead_code)]
    payload: serde::de::IgnoredAny,
    #[serde(default)]
    signature: Option<model::Signature>,
}

impl ParamsHead {
    /// The params with an empty `payload` (see [`ParamsHead`]).
    fn into_params(self) -> AcsParams {
        AcsParams {
            acs_version: self.acs_version,
            request_id: self.request_id,
            timestamp: self.timestamp,
            nonce: self.nonce,
            metadata: self.metadata,
            payload: Map::new(),
            signature: self.signature,
        }
    }
}

/// The `payload` member of a request's `params`.
fn payload_of(params: &Value) -> &Value {
    params.get("payload").unwrap_or(&Value::Null)
}

/// Deserialises params or a payload into its typed model; -32602 when it does not fit.
fn typed<'a, T: Deserialize<'a>>(v: &'a Value) -> Result<T, RpcError> {
    T::deserialize(v)
        .map_err(|e| RpcError::new(codes::INVALID_PARAMS, format!("invalid params: {e}")))
}

/// Serialises a response.
pub fn encode_response(resp: &Value) -> Vec<u8> {
    // One allocation for a usual answer (serde_json's own starts at 128
    // bytes and grows three times on the way to a decision's ~500).
    let mut out = Vec::with_capacity(640);
    match serde_json::to_writer(&mut out, resp) {
        Ok(()) => out,
        Err(_) => b"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32603,\"message\":\"internal error\"}}".to_vec(),
    }
}

fn error_response(id: Value, e: &RpcError) -> Value {
    let mut err = json!({"code": e.code, "message": e.message});
    if let (Some(d), Value::Object(m)) = (&e.data, &mut err) {
        m.insert("data".into(), d.clone());
    }
    envelope(id, "error", err)
}

/// A JSON-RPC response object, `{"jsonrpc": "2.0", "id": id, key: value}`,
/// with `id` and `value` moved in (`json!` would copy both).
fn envelope(id: Value, key: &str, value: Value) -> Value {
    let mut m = Map::new();
    m.insert("jsonrpc".into(), Value::String("2.0".into()));
    m.insert("id".into(), id);
    m.insert(key.into(), value);
    Value::Object(m)
}

fn unsupported(v: &str) -> RpcError {
    RpcError::new(
        codes::UNSUPPORTED_VERSION,
        format!("unsupported ACS version {v}"),
    )
    .with(json!({"reason": "unsupported_version", "supported": [ACS_VERSION], "supported_versions": [ACS_VERSION]}))
}

fn major(v: &str) -> &str {
    v.split('.').next().unwrap_or(v)
}

/// The canonical text a request signature covers: the JCS of the whole
/// envelope with `params.signature` removed.
pub fn signing_input(req: &Value) -> String {
    sign::request_signing_input(req)
}

/// Signs a request envelope in place with HMAC-SHA256 under the per-session
/// key that HKDF derives from `secret` (ACS §10; clients and tests).
pub fn sign_request(req: &mut Value, key_id: &str, secret: &[u8]) {
    sign::sign_request(req, key_id, secret);
}

/// Maps a host's trigger word (`manual` / `auto`) to the ACS trigger.
pub fn trigger_from_host(s: &str) -> Trigger {
    match s {
        "manual" => Trigger::Manual,
        _ => Trigger::SizeThreshold,
    }
}

/// Trust of a provenance node against recorded lineage (for callers outside the protocol).
pub fn trust_with(policy: &Policy, known: &[Provenance], p: &Provenance) -> Trust {
    TrustResolver::new(policy, known.iter()).trust(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jcs::canonicalize;

    /// The chain entry written straight to text is byte for byte the
    /// canonical text of the object [`context_entry`] builds (with the
    /// finding added as `findings`), over every origin mix, repeated
    /// origins, ids that need escapes and entries without provenance.
    #[test]
    fn entry_text_equals_canonicalized_entry_object() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let ids = ["s-1", "step \"q\"\n\\x", "\u{e9}t\u{1f600}", ""];
        let methods = [
            "steps/userMessage",
            "steps/toolCallResult",
            "steps/postCompact",
        ];
        for round in 0..500u64 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let n = (state % 9) as usize;
            let provs: Vec<Provenance> = (0..n)
                .map(|k| {
                    let o = Origin::ALL[((state >> (k * 3)) % 7) as usize];
                    Provenance::new(format!("p{k}"), o, None)
                })
                .collect();
            let id = ids[(round % 4) as usize];
            let method = methods[(round % 3) as usize];
            let hash = chain::sha256(&round.to_le_bytes());
            let ts = "2026-09-19T10:00:00.5Z";
            let finding = (round % 2 == 0)
                .then(|| json!({"finding": UNRESOLVED_REF, "request_id_ref": id, "z\u{fb33}": 1, "z\u{1f600}": [2]}));
            let mut entry = context_entry(round * 7919, id, method, &hash, ts, &provs);
            if let (Some(f), Value::Object(m)) = (&finding, &mut entry) {
                m.insert("findings".into(), json!([f]));
            }
            assert_eq!(
                context_entry_canonical(
                    round * 7919,
                    id,
                    method,
                    &hash,
                    ts,
                    &provs,
                    finding.as_ref()
                ),
                canonicalize(&entry),
                "round {round}"
            );
        }
    }
}
