//! The Guardian's local trust and compaction policy (TOML; pure parsing and
//! validation, no I/O). Bad values are rejected with their key path.
//!
//! ```toml
//! policy_id = "mnemo-default"
//! [trust]
//! tool_output = "untrusted"        # each ACS origin: trusted | untrusted
//! agent_generated = "lineage"      # minimum of its lineage (default)
//! unknown_lineage = "untrusted"    # lineage ids the Guardian never saw
//! [[trust.source]]                 # origin + source-id glob, first match wins
//! origin = "tool_output"
//! source_id = "mcp__github__*"
//! trust = "trusted"
//! [compaction]
//! on_untrusted = "deny"            # deny | allow
//! regrounding = ["user_input"]     # trusted origins that end the taint window
//! manual_override = true           # a manual compaction counts as re-grounding
//! max_compression_ratio = 100      # estimated_input_tokens / target_summary_tokens
//! allow_untrusted_below_tokens = 0 # small compactions tolerate taint
//! [compaction.triggers]            # per triggered_by: policy | allow | deny
//! agent_initiated = "policy"
//! [guardian]
//! skew_window_ms = 300000
//! max_request_bytes = 1048576
//! ```

use crate::model::{Origin, Trigger};
use std::collections::BTreeMap;

/// Trust classification, ordered: `Untrusted < Trusted`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Trust {
    /// Policy-untrusted.
    Untrusted,
    /// Policy-trusted.
    Trusted,
}

impl Trust {
    /// Lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Trust::Untrusted => "untrusted",
            Trust::Trusted => "trusted",
        }
    }
}

/// How an origin is classified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OriginRule {
    /// Fixed class.
    Fixed(Trust),
    /// Minimum of the lineage (`derived_from`); no lineage means trusted.
    Lineage,
}

/// An origin + source-id glob rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRule {
    /// Origin it applies to.
    pub origin: Origin,
    /// Glob over `source_id` (`*` any run, `?` one character).
    pub source_id: String,
    /// Class when matched.
    pub trust: Trust,
}

/// What happens when untrusted content entered after the last re-grounding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnUntrusted {
    /// Deny the compaction (with a named way out).
    Deny,
    /// Allow it; the summary carries the taint in its lineage.
    Allow,
}

/// Per-trigger rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TriggerRule {
    /// Apply the taint and magnitude rules.
    Policy,
    /// Always allow.
    Allow,
    /// Always deny (another trigger is the way out).
    Deny,
}

/// Where an HMAC secret comes from: an environment variable, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HmacKeySource {
    /// The label (`key_id`) requests name it by.
    pub key_id: String,
    /// The environment variable holding the secret.
    pub env: String,
    /// How the variable's text encodes the secret's bytes.
    pub encoding: KeyEncoding,
}

/// Encoding of a secret in its environment variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyEncoding {
    /// The text's UTF-8 bytes.
    Utf8,
    /// Standard or URL-safe base64.
    Base64,
    /// Hexadecimal.
    Hex,
}

/// What the Guardian tells clients to do when no decision arrives
/// (`on_decision_failure` in the ServerHello, ACS §6.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecisionFailure {
    /// Fail open (the standard's default).
    Proceed,
    /// Fail closed.
    Deny,
}

impl DecisionFailure {
    /// Wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionFailure::Proceed => "proceed",
            DecisionFailure::Deny => "deny",
        }
    }
}

/// Envelope settings of the Guardian server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardianSettings {
    /// Allowed clock skew of request timestamps, ms (`None`: not checked).
    pub skew_window_ms: Option<u64>,
    /// Largest accepted request, bytes.
    pub max_request_bytes: usize,
    /// HMAC key id expected in signatures.
    pub hmac_key_id: Option<String>,
    /// Environment variable that holds the HMAC key.
    pub hmac_key_env: Option<String>,
    /// Whether `handshake/hello` must come first (servers; `check` never needs it).
    pub require_handshake: bool,
    /// More HMAC secrets, each under its own label (`[[guardian.hmac_keys]]`).
    pub hmac_keys: Vec<HmacKeySource>,
    /// Whether a client declaring `provenance_producer: "none"` is refused
    /// (PROVENANCE_REQUIRED, -32002); decisions rest on provenance.
    pub require_provenance: bool,
    /// `on_decision_failure` announced in the ServerHello.
    pub on_decision_failure: DecisionFailure,
    /// `agent_id` globs of clients that cannot apply MODIFY (ACS §6.5): at
    /// `steps/postCompact` they get ALLOW with `modify_unsupported`.
    pub modify_unsupported_agents: Vec<String>,
    /// `agent_id` globs the policy permits (`permitted_agents`); `None`:
    /// every agent. Any other agent's hello and steps are refused with
    /// SESSION_REFUSED (-32000, ACS §17.1: "an `agent_id` the policy does
    /// not permit").
    pub permitted_agents: Option<Vec<String>>,
}

impl Default for GuardianSettings {
    fn default() -> Self {
        GuardianSettings {
            skew_window_ms: Some(300_000),
            max_request_bytes: 1 << 20,
            hmac_key_id: None,
            hmac_key_env: None,
            require_handshake: true,
            hmac_keys: Vec::new(),
            require_provenance: true,
            on_decision_failure: DecisionFailure::Proceed,
            modify_unsupported_agents: Vec::new(),
            permitted_agents: None,
        }
    }
}

/// The whole policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Cited in `policy_references`.
    pub policy_id: String,
    /// Cited in `policy_references`.
    pub policy_version: String,
    /// Class per origin.
    pub origins: BTreeMap<Origin, OriginRule>,
    /// Origin + source rules (first match wins, before `origins`).
    pub sources: Vec<SourceRule>,
    /// Class of lineage ids never seen.
    pub unknown_lineage: Trust,
    /// Untrusted content after the last re-grounding.
    pub on_untrusted: OnUntrusted,
    /// Origins that end the taint window.
    pub regrounding: Vec<Origin>,
    /// A manual compaction counts as re-grounding.
    pub manual_override: bool,
    /// Per-trigger rules.
    pub triggers: BTreeMap<Trigger, TriggerRule>,
    /// Deny when input/target exceeds this ratio.
    pub max_compression_ratio: Option<u64>,
    /// Tolerate taint when `estimated_input_tokens` is at most this.
    pub allow_untrusted_below_tokens: Option<u64>,
    /// Server settings.
    pub guardian: GuardianSettings,
    /// Tool-call rules (`[tools]`); empty by default: every tool is allowed.
    pub tools: ToolRules,
}

/// Rules for `steps/toolCallRequest` and wrapped MCP `tools/call`
/// (`[tools]`). mnemo's Guardian governs compaction; these rules let a
/// deployment that sends it tool calls refuse the ones it does not govern.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolRules {
    /// When set, a tool whose name matches none of these globs is denied
    /// (`tool_unregistered`).
    pub registered: Option<Vec<String>>,
    /// Tool + command globs that are denied (`tool_denied`), first match wins.
    pub deny: Vec<ToolDeny>,
    /// Whether a `steps/toolCallResult` whose `request_id_ref` names no
    /// `steps/toolCallRequest` of its session is denied
    /// (`on_unresolved_ref = "deny"`). Either way the Guardian records the
    /// unresolved reference (hooks.md, toolCallResult); the default allows.
    pub deny_unresolved_ref: bool,
    /// Per-turn call budgets (`[[tools.budget]]`), first match wins.
    pub budgets: Vec<ToolBudget>,
    /// Tools that need an approver's grant (`[tools.approval]`, ACS §9).
    pub approval: ApprovalRules,
    /// How a capability refusal (a tool outside the registered set, a
    /// spent budget, a call no valid approval covers) is answered
    /// (`refusal_form`): a `deny` decision (default) or the
    /// CAPABILITY_NOT_NEGOTIATED error the ACS-Core vectors expect.
    pub refusal_form: RefusalForm,
}

/// `[tools] refusal_form`: the wire form of a capability refusal.
///
/// ACS §6.4 counts an error "instead of a decision" as a decision failure,
/// resolved by the client's `on_decision_failure` posture (default
/// `proceed`), so the error form is accepted only together with
/// `[guardian] on_decision_failure = "deny"`: a conformant client then
/// blocks the call either way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RefusalForm {
    /// A `deny` decision with its reason codes (§17.1 keeps -32003 for
    /// methods and profiles the handshake did not negotiate).
    #[default]
    Decision,
    /// JSON-RPC error -32003 CAPABILITY_NOT_NEGOTIATED, `data.reason` the
    /// decisive reason code, `data.reason_codes` all of them (the
    /// `agent-evidence-vectors` ACS-Core corpus, families acs-f-1/-4/-7).
    Error,
}

/// Reason codes of the capability refusals that [`RefusalForm::Error`]
/// answers as CAPABILITY_NOT_NEGOTIATED (the decisive, first code of a
/// refusal): a tool outside the registered capabilities, a spent per-turn
/// budget, and a call that needs an approval no valid grant covers.
pub const CAPABILITY_REFUSALS: &[&str] = &[
    "tool_unregistered",
    "budget_exhausted",
    "approver_unavailable",
];

/// One `[[tools.budget]]` rule: at most `max_calls_per_turn` calls of the
/// tools matching `tool` within one turn (`metadata.turn_id`; calls without
/// a turn id count together, per session). The Guardian counts the calls
/// itself; nothing the request says about earlier calls is read (ACS-R-009:
/// a session-state hint from the governed party is only a hint).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolBudget {
    /// Tool-name glob.
    pub tool: String,
    /// Calls allowed per turn.
    pub max_calls_per_turn: u64,
}

/// `[tools.approval]`: the deployment's approver model (ACS §9). mnemo's
/// Guardian routes no ASK: a call that needs approval is allowed only on a
/// standing grant of an authenticated approver bound to the calling agent
/// and tool; otherwise the client cannot resolve ASK (§9.2) and the call is
/// denied with `approver_unavailable`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApprovalRules {
    /// Tool-name globs that need a grant.
    pub required: Vec<String>,
    /// The approvers the policy authenticates, as `type:id` (`human:u-1`).
    pub approvers: Vec<String>,
    /// Standing grants (`[[tools.approval.grant]]`).
    pub grants: Vec<ApprovalGrant>,
}

/// An approver's recorded answer for an agent and a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalGrant {
    /// `type:id` of the approver.
    pub approver: String,
    /// Agent-id glob the grant was issued for (`*` when absent).
    pub agent_id: String,
    /// Tool-name glob the grant was issued for.
    pub tool: String,
    /// The approver's answer.
    pub decision: ApproverDecision,
}

/// What an approver answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApproverDecision {
    /// Granted.
    Allow,
    /// Refused.
    Deny,
    /// Asked again: illegal, approvers MUST NOT return ASK (§9, single hop).
    Ask,
}

impl ApprovalRules {
    /// `None` when `tool` needs no approval or a valid grant covers the
    /// call; otherwise the reason codes (first: the decisive one) and the
    /// reasoning of the deny.
    pub fn check(&self, tool: &str, agent_id: &str) -> Option<(Vec<&'static str>, String)> {
        if !self.required.iter().any(|g| glob_match(g, tool)) {
            return None;
        }
        let mut codes: Vec<&'static str> = Vec::new();
        let mut why: Vec<String> = Vec::new();
        let mut note = |code: &'static str, text: String, codes: &mut Vec<&'static str>| {
            if !codes.contains(&code) {
                codes.push(code);
            }
            why.push(text);
        };
        for g in self.grants.iter().filter(|g| glob_match(&g.tool, tool)) {
            if !self.approvers.iter().any(|a| a == &g.approver) {
                note(
                    "approver_unauthenticated",
                    format!(
                        "the grant of {} names an approver the policy does not authenticate",
                        g.approver
                    ),
                    &mut codes,
                );
                continue;
            }
            if !glob_match(&g.agent_id, agent_id) {
                note(
                    "approval_binding_mismatch",
                    format!(
                        "the grant of {} was issued for agent {:?}, not {agent_id:?}",
                        g.approver, g.agent_id
                    ),
                    &mut codes,
                );
                continue;
            }
            match g.decision {
                ApproverDecision::Allow => return None,
                ApproverDecision::Deny => {
                    return Some((
                        vec!["approval_denied"],
                        format!("The approver {} refused {tool} for this agent.", g.approver),
                    ));
                }
                ApproverDecision::Ask => note(
                    "approver_returned_ask",
                    format!(
                        "the approver {} answered ASK, which an approver must not return (single hop, §9)",
                        g.approver
                    ),
                    &mut codes,
                ),
            }
        }
        let mut all = vec!["approver_unavailable"];
        all.extend(codes);
        let detail = if why.is_empty() {
            "no grant covers it".to_string()
        } else {
            why.join("; ")
        };
        Some((
            all,
            format!(
                "The policy requires an approver's grant for {tool} ([tools.approval] required) and {detail}. This Guardian routes no ASK, so the client cannot resolve one (§9.2): denied, not asked."
            ),
        ))
    }
}

/// One `[[tools.deny]]` rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolDeny {
    /// Tool-name glob.
    pub tool: String,
    /// Command glob (the call's `raw_command` or `arguments.command.value`);
    /// `None`: every call of the tool.
    pub command: Option<String>,
}

impl ToolRules {
    /// The first budget whose glob matches `tool`.
    pub fn budget(&self, tool: &str) -> Option<&ToolBudget> {
        self.budgets.iter().find(|b| glob_match(&b.tool, tool))
    }

    /// The reason code and reasoning of a denied call, or `None`.
    pub fn check(&self, tool: &str, command: Option<&str>) -> Option<(&'static str, String)> {
        if let Some(reg) = &self.registered
            && !reg.iter().any(|g| glob_match(g, tool))
        {
            return Some((
                "tool_unregistered",
                format!(
                    "The tool {tool} is not registered with this Guardian's policy ([tools] registered); register it to allow it."
                ),
            ));
        }
        for d in &self.deny {
            if glob_match(&d.tool, tool)
                && match (&d.command, command) {
                    (None, _) => true,
                    (Some(g), Some(c)) => glob_match(g, c),
                    (Some(_), None) => false,
                }
            {
                return Some((
                    "tool_denied",
                    format!(
                        "The policy denies this call of {tool} ([[tools.deny]] tool = {:?}{}).",
                        d.tool,
                        d.command
                            .as_ref()
                            .map(|c| format!(", command = {c:?}"))
                            .unwrap_or_default()
                    ),
                ));
            }
        }
        None
    }
}

impl Default for Policy {
    fn default() -> Self {
        let mut origins = BTreeMap::new();
        for o in Origin::ALL {
            let rule = match o {
                Origin::UserInput | Origin::System => OriginRule::Fixed(Trust::Trusted),
                Origin::AgentGenerated => OriginRule::Lineage,
                _ => OriginRule::Fixed(Trust::Untrusted),
            };
            origins.insert(o, rule);
        }
        Policy {
            policy_id: "mnemo-default".into(),
            policy_version: "1".into(),
            origins,
            sources: Vec::new(),
            unknown_lineage: Trust::Untrusted,
            on_untrusted: OnUntrusted::Deny,
            regrounding: vec![Origin::UserInput],
            manual_override: true,
            triggers: Trigger::ALL
                .into_iter()
                .map(|t| (t, TriggerRule::Policy))
                .collect(),
            max_compression_ratio: None,
            allow_untrusted_below_tokens: None,
            guardian: GuardianSettings::default(),
            tools: ToolRules::default(),
        }
    }
}

/// A policy error: key path and reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("policy {key}: {reason}")]
pub struct PolicyError {
    /// Dotted key path, e.g. `compaction.on_untrusted`.
    pub key: String,
    /// Why it was rejected.
    pub reason: String,
}

fn perr(key: impl Into<String>, reason: impl Into<String>) -> PolicyError {
    PolicyError {
        key: key.into(),
        reason: reason.into(),
    }
}

fn as_str<'a>(v: &'a toml::Value, key: &str) -> Result<&'a str, PolicyError> {
    v.as_str()
        .ok_or_else(|| perr(key, format!("expected a string, got {}", v.type_str())))
}

fn as_u64(v: &toml::Value, key: &str) -> Result<u64, PolicyError> {
    match v.as_integer() {
        Some(i) if i >= 0 => Ok(i as u64),
        Some(_) => Err(perr(key, "must not be negative")),
        None => Err(perr(
            key,
            format!("expected an integer, got {}", v.type_str()),
        )),
    }
}

fn as_bool(v: &toml::Value, key: &str) -> Result<bool, PolicyError> {
    v.as_bool()
        .ok_or_else(|| perr(key, format!("expected true or false, got {}", v.type_str())))
}

fn as_table<'a>(v: &'a toml::Value, key: &str) -> Result<&'a toml::Table, PolicyError> {
    v.as_table()
        .ok_or_else(|| perr(key, format!("expected a table, got {}", v.type_str())))
}

/// An array of strings; an item that is not a string is named `key[i]`.
fn string_list(v: &toml::Value, key: &str) -> Result<Vec<String>, PolicyError> {
    let a = v
        .as_array()
        .ok_or_else(|| perr(key, format!("expected an array, got {}", v.type_str())))?;
    a.iter()
        .enumerate()
        .map(|(i, x)| as_str(x, &format!("{key}[{i}]")).map(str::to_string))
        .collect()
}

/// One of a fixed set of words, each with its value; anything else is
/// refused naming them all (`expected "a", "b" or "c", got "x"`).
fn choice<T: Copy>(v: &toml::Value, key: &str, words: &[(&str, T)]) -> Result<T, PolicyError> {
    let s = as_str(v, key)?;
    if let Some((_, t)) = words.iter().find(|(w, _)| *w == s) {
        return Ok(*t);
    }
    let quoted: Vec<String> = words.iter().map(|(w, _)| format!("\"{w}\"")).collect();
    let expected = match quoted.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    };
    Err(perr(key, format!("expected {expected}, got \"{s}\"")))
}

fn parse_trust(v: &toml::Value, key: &str) -> Result<Trust, PolicyError> {
    choice(
        v,
        key,
        &[("trusted", Trust::Trusted), ("untrusted", Trust::Untrusted)],
    )
}

fn parse_origin(v: &toml::Value, key: &str) -> Result<Origin, PolicyError> {
    let s = as_str(v, key)?;
    Origin::parse(s).ok_or_else(|| perr(key, format!("unknown ACS origin \"{s}\"")))
}

fn parse_grant(x: &toml::Value, key: &str) -> Result<ApprovalGrant, PolicyError> {
    let (mut approver, mut agent_id, mut tool, mut decision) = (None, None, None, None);
    for (name, val) in as_table(x, key)? {
        let kk = format!("{key}.{name}");
        match name.as_str() {
            "approver" => approver = Some(as_str(val, &kk)?.to_string()),
            "agent_id" => agent_id = Some(as_str(val, &kk)?.to_string()),
            "tool" => tool = Some(as_str(val, &kk)?.to_string()),
            "decision" => {
                decision = Some(match as_str(val, &kk)? {
                    "allow" => ApproverDecision::Allow,
                    "deny" => ApproverDecision::Deny,
                    "ask" => ApproverDecision::Ask,
                    other => {
                        return Err(perr(
                            kk,
                            format!("expected \"allow\", \"deny\" or \"ask\", got \"{other}\""),
                        ));
                    }
                })
            }
            _ => return Err(perr(kk, "unknown key")),
        }
    }
    Ok(ApprovalGrant {
        approver: approver.ok_or_else(|| perr(format!("{key}.approver"), "required"))?,
        agent_id: agent_id.unwrap_or_else(|| "*".into()),
        tool: tool.ok_or_else(|| perr(format!("{key}.tool"), "required"))?,
        decision: decision.unwrap_or(ApproverDecision::Allow),
    })
}

impl Policy {
    /// Parses and validates a TOML policy; absent keys keep their defaults.
    pub fn from_toml(text: &str) -> Result<Policy, PolicyError> {
        let root: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].lines().count().max(1))
                .unwrap_or(0);
            perr(format!("(line {line})"), e.message().to_string())
        })?;
        let mut p = Policy::default();
        for (k, v) in &root {
            match k.as_str() {
                "policy_id" => p.policy_id = as_str(v, k)?.to_string(),
                "policy_version" => p.policy_version = as_str(v, k)?.to_string(),
                "trust" => p.parse_trust_table(as_table(v, k)?)?,
                "compaction" => p.parse_compaction(as_table(v, k)?)?,
                "guardian" => p.parse_guardian(as_table(v, k)?)?,
                "tools" => p.parse_tools(as_table(v, k)?)?,
                _ => return Err(perr(k.as_str(), "unknown key")),
            }
        }
        p.check()?;
        Ok(p)
    }

    fn parse_trust_table(&mut self, t: &toml::Table) -> Result<(), PolicyError> {
        for (k, v) in t {
            let key = format!("trust.{k}");
            if k == "unknown_lineage" {
                self.unknown_lineage = parse_trust(v, &key)?;
            } else if k == "source" {
                let arr = v
                    .as_array()
                    .ok_or_else(|| perr(&key, "expected an array of tables ([[trust.source]])"))?;
                for (i, item) in arr.iter().enumerate() {
                    let ikey = format!("trust.source[{i}]");
                    let tt = as_table(item, &ikey)?;
                    let mut origin = None;
                    let mut pattern = None;
                    let mut trust = None;
                    for (ik, iv) in tt {
                        let fk = format!("{ikey}.{ik}");
                        match ik.as_str() {
                            "origin" => origin = Some(parse_origin(iv, &fk)?),
                            "source_id" => pattern = Some(as_str(iv, &fk)?.to_string()),
                            "trust" => trust = Some(parse_trust(iv, &fk)?),
                            _ => return Err(perr(fk, "unknown key")),
                        }
                    }
                    let origin =
                        origin.ok_or_else(|| perr(format!("{ikey}.origin"), "is required"))?;
                    let source_id =
                        pattern.ok_or_else(|| perr(format!("{ikey}.source_id"), "is required"))?;
                    let trust =
                        trust.ok_or_else(|| perr(format!("{ikey}.trust"), "is required"))?;
                    self.sources.push(SourceRule {
                        origin,
                        source_id,
                        trust,
                    });
                }
            } else if let Some(o) = Origin::parse(k) {
                let rule = match as_str(v, &key)? {
                    "lineage" if o == Origin::AgentGenerated => OriginRule::Lineage,
                    "lineage" => {
                        return Err(perr(key, "\"lineage\" applies only to agent_generated"));
                    }
                    _ => OriginRule::Fixed(parse_trust(v, &key)?),
                };
                self.origins.insert(o, rule);
            } else {
                return Err(perr(
                    key,
                    "unknown key (expected an ACS origin, unknown_lineage or source)",
                ));
            }
        }
        Ok(())
    }

    fn parse_compaction(&mut self, t: &toml::Table) -> Result<(), PolicyError> {
        for (k, v) in t {
            let key = format!("compaction.{k}");
            match k.as_str() {
                "on_untrusted" => {
                    self.on_untrusted = choice(
                        v,
                        &key,
                        &[("deny", OnUntrusted::Deny), ("allow", OnUntrusted::Allow)],
                    )?;
                }
                "regrounding" => {
                    let arr = v
                        .as_array()
                        .ok_or_else(|| perr(&key, "expected an array of origins"))?;
                    self.regrounding.clear();
                    for (i, o) in arr.iter().enumerate() {
                        let o = parse_origin(o, &format!("{key}[{i}]"))?;
                        if !self.regrounding.contains(&o) {
                            self.regrounding.push(o);
                        }
                    }
                }
                "manual_override" => self.manual_override = as_bool(v, &key)?,
                "max_compression_ratio" => {
                    let r = as_u64(v, &key)?;
                    if r == 0 {
                        return Err(perr(key, "must be at least 1"));
                    }
                    self.max_compression_ratio = Some(r);
                }
                "allow_untrusted_below_tokens" => {
                    self.allow_untrusted_below_tokens = Some(as_u64(v, &key)?)
                }
                "triggers" => {
                    for (tk, tv) in as_table(v, &key)? {
                        let fk = format!("{key}.{tk}");
                        let trig = Trigger::parse(tk)
                            .ok_or_else(|| perr(&fk, "unknown trigger (size_threshold, manual, agent_initiated, framework_initiated)"))?;
                        let rule = match as_str(tv, &fk)? {
                            "policy" => TriggerRule::Policy,
                            "allow" => TriggerRule::Allow,
                            "deny" => TriggerRule::Deny,
                            other => {
                                return Err(perr(
                                    fk,
                                    format!(
                                        "expected \"policy\", \"allow\" or \"deny\", got \"{other}\""
                                    ),
                                ));
                            }
                        };
                        self.triggers.insert(trig, rule);
                    }
                }
                _ => return Err(perr(key, "unknown key")),
            }
        }
        Ok(())
    }

    fn parse_tools(&mut self, t: &toml::Table) -> Result<(), PolicyError> {
        for (k, v) in t {
            let key = format!("tools.{k}");
            match k.as_str() {
                "registered" => self.tools.registered = Some(string_list(v, &key)?),
                "refusal_form" => {
                    self.tools.refusal_form = choice(
                        v,
                        &key,
                        &[
                            ("decision", RefusalForm::Decision),
                            ("error", RefusalForm::Error),
                        ],
                    )?;
                }
                "on_unresolved_ref" => {
                    self.tools.deny_unresolved_ref =
                        choice(v, &key, &[("allow", false), ("deny", true)])?;
                }
                "deny" => {
                    let a = v.as_array().ok_or_else(|| {
                        perr(
                            &key,
                            format!("expected an array of tables, got {}", v.type_str()),
                        )
                    })?;
                    for (i, x) in a.iter().enumerate() {
                        let k2 = format!("{key}[{i}]");
                        let mut tool = None;
                        let mut command = None;
                        for (name, val) in as_table(x, &k2)? {
                            match name.as_str() {
                                "tool" => {
                                    tool = Some(as_str(val, &format!("{k2}.tool"))?.to_string())
                                }
                                "command" => {
                                    command =
                                        Some(as_str(val, &format!("{k2}.command"))?.to_string())
                                }
                                _ => return Err(perr(format!("{k2}.{name}"), "unknown key")),
                            }
                        }
                        let tool = tool.ok_or_else(|| perr(format!("{k2}.tool"), "required"))?;
                        self.tools.deny.push(ToolDeny { tool, command });
                    }
                }
                "budget" => {
                    let a = v.as_array().ok_or_else(|| {
                        perr(
                            &key,
                            format!("expected an array of tables, got {}", v.type_str()),
                        )
                    })?;
                    for (i, x) in a.iter().enumerate() {
                        let k2 = format!("{key}[{i}]");
                        let mut tool = None;
                        let mut max = None;
                        for (name, val) in as_table(x, &k2)? {
                            let kk = format!("{k2}.{name}");
                            match name.as_str() {
                                "tool" => tool = Some(as_str(val, &kk)?.to_string()),
                                "max_calls_per_turn" => max = Some(as_u64(val, &kk)?),
                                _ => return Err(perr(kk, "unknown key")),
                            }
                        }
                        self.tools.budgets.push(ToolBudget {
                            tool: tool.ok_or_else(|| perr(format!("{k2}.tool"), "required"))?,
                            max_calls_per_turn: max.ok_or_else(|| {
                                perr(format!("{k2}.max_calls_per_turn"), "required")
                            })?,
                        });
                    }
                }
                "approval" => {
                    for (name, val) in as_table(v, &key)? {
                        let kk = format!("{key}.{name}");
                        match name.as_str() {
                            "required" => self.tools.approval.required = string_list(val, &kk)?,
                            "approvers" => self.tools.approval.approvers = string_list(val, &kk)?,
                            "grant" => {
                                let a = val.as_array().ok_or_else(|| {
                                    perr(
                                        &kk,
                                        format!(
                                            "expected an array of tables, got {}",
                                            val.type_str()
                                        ),
                                    )
                                })?;
                                for (i, x) in a.iter().enumerate() {
                                    let k3 = format!("{kk}[{i}]");
                                    self.tools.approval.grants.push(parse_grant(x, &k3)?);
                                }
                            }
                            _ => return Err(perr(kk, "unknown key")),
                        }
                    }
                }
                _ => return Err(perr(key, "unknown key")),
            }
        }
        Ok(())
    }

    fn parse_guardian(&mut self, t: &toml::Table) -> Result<(), PolicyError> {
        for (k, v) in t {
            let key = format!("guardian.{k}");
            match k.as_str() {
                "skew_window_ms" => self.guardian.skew_window_ms = Some(as_u64(v, &key)?),
                "check_timestamps" => {
                    if !as_bool(v, &key)? {
                        self.guardian.skew_window_ms = None;
                    }
                }
                "max_request_bytes" => {
                    let n = as_u64(v, &key)?;
                    if n < 256 {
                        return Err(perr(key, "must be at least 256"));
                    }
                    self.guardian.max_request_bytes = usize::try_from(n).unwrap_or(usize::MAX);
                }
                "hmac_key_id" => self.guardian.hmac_key_id = Some(as_str(v, &key)?.to_string()),
                "hmac_key_env" => self.guardian.hmac_key_env = Some(as_str(v, &key)?.to_string()),
                "require_handshake" => self.guardian.require_handshake = as_bool(v, &key)?,
                "require_provenance" => self.guardian.require_provenance = as_bool(v, &key)?,
                "on_decision_failure" => {
                    self.guardian.on_decision_failure = choice(
                        v,
                        &key,
                        &[
                            ("proceed", DecisionFailure::Proceed),
                            ("deny", DecisionFailure::Deny),
                        ],
                    )?;
                }
                "modify_unsupported_agents" => {
                    self.guardian.modify_unsupported_agents = string_list(v, &key)?
                }
                "permitted_agents" => self.guardian.permitted_agents = Some(string_list(v, &key)?),
                "hmac_keys" => {
                    let a = v.as_array().ok_or_else(|| {
                        perr(
                            &key,
                            format!("expected an array of tables, got {}", v.type_str()),
                        )
                    })?;
                    for (i, x) in a.iter().enumerate() {
                        let k = format!("{key}[{i}]");
                        let t = as_table(x, &k)?;
                        let mut id = None;
                        let mut env = None;
                        let mut encoding = KeyEncoding::Utf8;
                        for (name, val) in t {
                            let kk = format!("{k}.{name}");
                            match name.as_str() {
                                "key_id" => id = Some(as_str(val, &kk)?.to_string()),
                                "env" => env = Some(as_str(val, &kk)?.to_string()),
                                "encoding" => {
                                    encoding = match as_str(val, &kk)? {
                                        "utf8" => KeyEncoding::Utf8,
                                        "base64" => KeyEncoding::Base64,
                                        "hex" => KeyEncoding::Hex,
                                        other => {
                                            return Err(perr(
                                                kk,
                                                format!(
                                                    "expected \"utf8\", \"base64\" or \"hex\", got \"{other}\""
                                                ),
                                            ));
                                        }
                                    }
                                }
                                _ => return Err(perr(kk, "unknown key")),
                            }
                        }
                        let key_id = id
                            .filter(|s| !s.is_empty())
                            .ok_or_else(|| perr(format!("{k}.key_id"), "required"))?;
                        let env = env
                            .filter(|s| !s.is_empty())
                            .ok_or_else(|| perr(format!("{k}.env"), "required"))?;
                        if self.guardian.hmac_keys.iter().any(|h| h.key_id == key_id) {
                            return Err(perr(
                                format!("{k}.key_id"),
                                format!("{key_id} is configured twice"),
                            ));
                        }
                        self.guardian.hmac_keys.push(HmacKeySource {
                            key_id,
                            env,
                            encoding,
                        });
                    }
                }
                _ => return Err(perr(key, "unknown key")),
            }
        }
        if self.guardian.hmac_key_env.is_some() && self.guardian.hmac_key_id.is_none() {
            // ACS §10: key_id is a label taken from the configuration, never a built-in one.
            return Err(perr(
                "guardian.hmac_key_id",
                "required with guardian.hmac_key_env (the label requests name the key by)",
            ));
        }
        Ok(())
    }

    /// Cross-key checks: every deny must have a way out.
    fn check(&self) -> Result<(), PolicyError> {
        if self.tools.refusal_form == RefusalForm::Error
            && self.guardian.on_decision_failure != DecisionFailure::Deny
        {
            return Err(perr(
                "tools.refusal_form",
                "\"error\" needs [guardian] on_decision_failure = \"deny\": a client treats an error as a decision failure (ACS 6.4) and with \"proceed\" would let the refused call through",
            ));
        }
        for o in &self.regrounding {
            if self.origins.get(o) != Some(&OriginRule::Fixed(Trust::Trusted)) {
                return Err(perr(
                    "compaction.regrounding",
                    format!(
                        "{} is not trusted in [trust]; only trusted origins can re-ground",
                        o.as_str()
                    ),
                ));
            }
        }
        if self.on_untrusted == OnUntrusted::Deny
            && self.regrounding.is_empty()
            && !self.manual_override
        {
            return Err(perr(
                "compaction",
                "on_untrusted = \"deny\" needs a way out: a non-empty regrounding list or manual_override = true",
            ));
        }
        if self.triggers.values().all(|r| *r == TriggerRule::Deny) {
            return Err(perr(
                "compaction.triggers",
                "every trigger denies: compaction could never happen",
            ));
        }
        if self.manual_override && self.triggers.get(&Trigger::Manual) == Some(&TriggerRule::Deny) {
            return Err(perr(
                "compaction.triggers.manual",
                "\"deny\" contradicts manual_override = true",
            ));
        }
        Ok(())
    }

    /// Class of an origin + source id, before lineage (`None` for lineage-classified origins).
    pub fn fixed_trust(&self, origin: Origin, source_id: Option<&str>) -> Option<Trust> {
        if let Some(sid) = source_id
            && let Some(rule) = self
                .sources
                .iter()
                .find(|r| r.origin == origin && glob_match(&r.source_id, sid))
        {
            return Some(rule.trust);
        }
        match self.origins.get(&origin) {
            Some(OriginRule::Fixed(t)) => Some(*t),
            Some(OriginRule::Lineage) => None,
            None => Some(Trust::Untrusted),
        }
    }
}

/// Glob match: `*` matches any run (including empty), `?` one character.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approval_policy(grants: &str) -> Result<Policy, PolicyError> {
        Policy::from_toml(&format!(
            "[tools.approval]\nrequired = [\"records.*\"]\napprovers = [\"human:u-1\"]\n{grants}"
        ))
    }

    #[test]
    fn approvals_bind_agent_and_tool_and_refuse_ask() {
        let grant = "[[tools.approval.grant]]\napprover = \"human:u-1\"\nagent_id = \"agent-A\"\ntool = \"records.write\"\n";
        let p = approval_policy(grant);
        assert!(p.is_ok(), "{p:?}");
        let a = p.map(|p| p.tools.approval).unwrap_or_default();
        assert_eq!(
            a.check("records.write", "agent-A"),
            None,
            "the grant's own agent and tool"
        );
        assert_eq!(
            a.check("other.tool", "agent-B"),
            None,
            "no approval required"
        );
        let codes = |r: Option<(Vec<&'static str>, String)>| r.map(|(c, _)| c).unwrap_or_default();
        assert_eq!(
            codes(a.check("records.write", "agent-B")),
            vec!["approver_unavailable", "approval_binding_mismatch"]
        );
        assert_eq!(
            codes(a.check("records.lookup", "agent-A")),
            vec!["approver_unavailable"],
            "required, and no grant names the tool"
        );
        let ask = approval_policy(
            "[[tools.approval.grant]]\napprover = \"human:u-1\"\ntool = \"records.write\"\ndecision = \"ask\"\n",
        )
        .map(|p| p.tools.approval)
        .unwrap_or_default();
        assert_eq!(
            codes(ask.check("records.write", "anyone")),
            vec!["approver_unavailable", "approver_returned_ask"]
        );
        let stranger = approval_policy(
            "[[tools.approval.grant]]\napprover = \"human:u-9\"\ntool = \"records.write\"\n",
        )
        .map(|p| p.tools.approval)
        .unwrap_or_default();
        assert_eq!(
            codes(stranger.check("records.write", "anyone")),
            vec!["approver_unavailable", "approver_unauthenticated"]
        );
        let refused = approval_policy(
            "[[tools.approval.grant]]\napprover = \"human:u-1\"\ntool = \"records.write\"\ndecision = \"deny\"\n",
        )
        .map(|p| p.tools.approval)
        .unwrap_or_default();
        assert_eq!(
            codes(refused.check("records.write", "x")),
            vec!["approval_denied"]
        );
        let bad = approval_policy(
            "[[tools.approval.grant]]\napprover = \"human:u-1\"\ntool = \"t\"\ndecision = \"maybe\"\n",
        );
        assert!(bad.is_err_and(|e| e.key == "tools.approval.grant[0].decision"));
    }

    #[test]
    fn budgets_parse_and_match_first() {
        let p = Policy::from_toml(
            "[[tools.budget]]\ntool = \"records.*\"\nmax_calls_per_turn = 3\n[[tools.budget]]\ntool = \"*\"\nmax_calls_per_turn = 10\n",
        );
        assert!(p.is_ok(), "{p:?}");
        let t = p.map(|p| p.tools).unwrap_or_default();
        assert_eq!(
            t.budget("records.lookup").map(|b| b.max_calls_per_turn),
            Some(3)
        );
        assert_eq!(t.budget("Bash").map(|b| b.max_calls_per_turn), Some(10));
        let missing = Policy::from_toml("[[tools.budget]]\ntool = \"x\"\n");
        assert!(missing.is_err_and(|e| e.key == "tools.budget[0].max_calls_per_turn"));
    }

    #[test]
    fn globs() {
        assert!(glob_match("mcp__github__*", "mcp__github__create_issue"));
        assert!(glob_match("*", ""));
        assert!(glob_match("a?c", "abc"));
        assert!(!glob_match("a*d", "abc"));
        assert!(glob_match("*.example.com/*", "https://docs.example.com/x"));
    }

    #[test]
    fn rejects_bad_values_with_key_path() {
        let e = Policy::from_toml("[compaction]\non_untrusted = \"maybe\"\n").err();
        assert_eq!(e.map(|e| e.key), Some("compaction.on_untrusted".into()));
        let e = Policy::from_toml("[trust]\ntool_output = \"sorta\"\n").err();
        assert_eq!(e.map(|e| e.key), Some("trust.tool_output".into()));
        let e = Policy::from_toml("[compaction]\nregrounding = [\"tool_output\"]\n").err();
        assert_eq!(e.map(|e| e.key), Some("compaction.regrounding".into()));
        let e =
            Policy::from_toml("[compaction]\nregrounding = []\nmanual_override = false\n").err();
        assert_eq!(e.map(|e| e.key), Some("compaction".into()));
        let e = Policy::from_toml("[compaction.triggers]\nmanual = \"deny\"\n").err();
        assert_eq!(e.map(|e| e.key), Some("compaction.triggers.manual".into()));
        let e = Policy::from_toml("bogus = 1\n").err();
        assert_eq!(e.map(|e| e.key), Some("bogus".into()));
        assert!(Policy::from_toml("[[trust.source]]\norigin = \"tool_output\"\n").is_err());
    }

    #[test]
    fn parses_full_policy() {
        let p = Policy::from_toml(
            "policy_id = \"p\"\n[trust]\nretrieved = \"trusted\"\n[[trust.source]]\norigin = \"tool_output\"\nsource_id = \"mcp__github__*\"\ntrust = \"trusted\"\n[compaction]\non_untrusted = \"deny\"\nregrounding = [\"user_input\", \"system\"]\nmanual_override = false\nmax_compression_ratio = 20\n[compaction.triggers]\nagent_initiated = \"deny\"\n[guardian]\nskew_window_ms = 1000\n",
        );
        let p = match p {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(
            p.fixed_trust(Origin::ToolOutput, Some("mcp__github__x")),
            Some(Trust::Trusted)
        );
        assert_eq!(
            p.fixed_trust(Origin::ToolOutput, Some("Bash")),
            Some(Trust::Untrusted)
        );
        assert_eq!(p.fixed_trust(Origin::Retrieved, None), Some(Trust::Trusted));
        assert_eq!(p.fixed_trust(Origin::AgentGenerated, None), None);
        assert_eq!(p.regrounding, vec![Origin::UserInput, Origin::System]);
        assert_eq!(p.guardian.skew_window_ms, Some(1000));
    }
}
