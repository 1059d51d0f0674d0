//! Typed model of the ACS v0.1.0 messages the Guardian reads and writes
//! (pure serde types; unknown members are ignored, as the standard asks).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The ACS version this Guardian speaks.
pub const ACS_VERSION: &str = "0.1.0";

/// Where data entered the system (`provenance.json#/properties/origin`):
/// one type for the whole workspace, defined with the summary model.
pub use mnemo_model::Origin;

/// A provenance node (`provenance.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// Unique within the session.
    pub provenance_id: String,
    /// Where the data entered.
    pub origin: Origin,
    /// Tool name, URL, server, path….
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_id: Option<String>,
    /// Lineage edges (provenance ids).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub derived_from: Vec<String>,
}

impl Provenance {
    /// A node without lineage.
    pub fn new(id: impl Into<String>, origin: Origin, source_id: Option<&str>) -> Self {
        Provenance {
            provenance_id: id.into(),
            origin,
            source_id: source_id.map(str::to_string),
            derived_from: Vec::new(),
        }
    }
}

/// `provenance-summary.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProvenanceSummary {
    /// Distinct origins, in order of first appearance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origins_seen: Option<Vec<Origin>>,
    /// Number of provenance objects summarised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_count: Option<u64>,
    /// Count per origin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_count_by_origin: Option<std::collections::BTreeMap<String, u64>>,
    /// Earliest step per origin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub earliest_step_id_by_origin: Option<std::collections::BTreeMap<String, String>>,
    /// Longest derived_from chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_lineage_depth: Option<u64>,
}

/// What caused a compaction (`pre-compact.json#/properties/triggered_by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// The runtime hit a size limit (hosts' `auto`).
    SizeThreshold,
    /// The user asked for it.
    Manual,
    /// The LLM asked for it.
    AgentInitiated,
    /// Scheduled by the framework.
    FrameworkInitiated,
}

impl Trigger {
    /// All triggers.
    pub const ALL: [Trigger; 4] = [
        Trigger::SizeThreshold,
        Trigger::Manual,
        Trigger::AgentInitiated,
        Trigger::FrameworkInitiated,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::SizeThreshold => "size_threshold",
            Trigger::Manual => "manual",
            Trigger::AgentInitiated => "agent_initiated",
            Trigger::FrameworkInitiated => "framework_initiated",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Trigger> {
        Trigger::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

/// `steps/preCompact` payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreCompact {
    /// Step ids to be summarised.
    pub entries_to_compact: Vec<String>,
    /// Optional condensed facts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_compact_provenance_summary: Option<ProvenanceSummary>,
    /// Why now.
    pub triggered_by: Trigger,
    /// Size of the region.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_input_tokens: Option<u64>,
    /// Size of the summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_summary_tokens: Option<u64>,
}

/// The summary of `steps/postCompact`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactSummary {
    /// Summary text.
    pub value: String,
    /// Its provenance (must be agent_generated with the exact lineage).
    pub provenance: Provenance,
}

/// `steps/postCompact` payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PostCompact {
    /// The summary produced.
    pub summary: CompactSummary,
    /// Step ids summarised.
    pub entries_compacted: Vec<String>,
    /// Chain head when compaction began.
    pub pre_compact_chain_hash: String,
    /// Chain head after this entry.
    pub post_compact_chain_hash: String,
    /// Lineage depth of the summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lineage_depth_after: Option<u64>,
}

/// `handshake.json#/$defs/ClientHello`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientHello {
    /// Versions the client speaks.
    pub acs_versions_supported: Vec<String>,
    /// Methods it will send.
    pub methods_implemented: Vec<String>,
    /// Transports.
    pub transports_supported: Vec<String>,
    /// `deterministic` or `none`.
    pub provenance_producer: String,
    /// Largest request it sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_payload_size_bytes: Option<u64>,
    /// Profiles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiles_supported: Option<Vec<String>>,
}

/// `request-envelope.json#/$defs/Signature`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signature {
    /// Algorithm name.
    pub algorithm: String,
    /// Base64 value.
    pub value: String,
    /// Key identifier.
    pub key_id: String,
}

/// `request-envelope.json#/$defs/Metadata` (the members the Guardian uses).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metadata {
    /// Agent id.
    pub agent_id: String,
    /// Session id (uuid).
    pub session_id: String,
    /// Turn id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
}

/// `request-envelope.json#/$defs/AcsParams`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AcsParams {
    /// Semver.
    pub acs_version: String,
    /// Unique per hook invocation (uuid); also the step id.
    pub request_id: String,
    /// RFC 3339.
    pub timestamp: String,
    /// Optional nonce.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonce: Option<String>,
    /// Session and agent.
    pub metadata: Metadata,
    /// Method-specific payload.
    pub payload: Map<String, Value>,
    /// Optional signature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<Signature>,
}

/// The ACS decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Go ahead.
    Allow,
    /// Do not.
    Deny,
    /// Go ahead with modifications.
    Modify,
}

impl Verdict {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Deny => "deny",
            Verdict::Modify => "modify",
        }
    }
}

/// Collects every provenance object in a payload: every `provenance` member
/// that is an object with `provenance_id` and `origin`, without descending
/// into free-form `value` members.
pub fn collect_provenance(payload: &Value) -> Vec<Provenance> {
    let mut out = Vec::new();
    walk(payload, &mut out);
    out
}

fn walk(v: &Value, out: &mut Vec<Provenance>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                match k.as_str() {
                    "value" | "metadata" | "parameter_overrides" => {}
                    "provenance" => {
                        if let Ok(p) = Provenance::deserialize(child) {
                            out.push(p);
                        }
                    }
                    _ => walk(child, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
        _ => {}
    }
}

/// Entry-level provenance summary of a list of provenance objects.
pub fn summarize(provs: &[Provenance]) -> ProvenanceSummary {
    let mut seen: Vec<Origin> = Vec::new();
    // Counted by position in `seen` (at most seven origins), then named:
    // no key string made per node.
    let mut n: Vec<u64> = Vec::new();
    for p in provs {
        match seen
            .iter()
            .position(|o| *o == p.origin)
            .and_then(|i| n.get_mut(i))
        {
            Some(c) => *c += 1,
            None => {
                seen.push(p.origin);
                n.push(1);
            }
        }
    }
    let counts: std::collections::BTreeMap<String, u64> = seen
        .iter()
        .zip(&n)
        .map(|(o, c)| (o.as_str().to_string(), *c))
        .collect();
    ProvenanceSummary {
        origins_seen: Some(seen),
        entry_count: Some(provs.len() as u64),
        entry_count_by_origin: Some(counts),
        earliest_step_id_by_origin: None,
        max_lineage_depth: None,
    }
}

/// A value with its provenance (`{value, provenance}` in the data hooks).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Valued {
    /// Any JSON value.
    pub value: Value,
    /// Where it came from.
    pub provenance: Provenance,
}

/// A content item of `steps/userMessage` / `steps/agentResponse`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContentItem {
    /// `text`, `image`, `audio` or `file`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The content.
    pub value: Value,
    /// Its provenance.
    pub provenance: Provenance,
}

/// A tool reference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolRef {
    /// Tool name.
    pub name: String,
    /// Version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
}

/// `steps/userMessage` payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserMessage {
    /// At least one item.
    pub content: Vec<ContentItem>,
}

/// `steps/agentResponse` payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentResponse {
    /// At least one item.
    pub content: Vec<ContentItem>,
    /// Optional reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
}

/// `steps/toolCallRequest` payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRequest {
    /// The tool.
    pub tool: ToolRef,
    /// Operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    /// Capability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability: Option<String>,
    /// Arguments by name.
    pub arguments: std::collections::BTreeMap<String, Valued>,
    /// Raw command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_command: Option<String>,
    /// Intent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<Value>,
}

/// `steps/toolCallResult` payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallResult {
    /// The tool.
    pub tool: ToolRef,
    /// Operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    /// The request it answers (uuid).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id_ref: Option<String>,
    /// `success`, `failure`, `timeout` or `blocked`.
    pub exit_status: String,
    /// Outputs.
    pub outputs: Vec<Valued>,
    /// Duration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// A retrieval result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetrievalResult {
    /// The result.
    pub value: Value,
    /// Source id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_id: Option<String>,
    /// Memory id (memory retrievals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_id: Option<String>,
    /// Score.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// When stored (memory retrievals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored_at: Option<String>,
    /// Its provenance.
    pub provenance: Provenance,
}

/// `steps/knowledgeRetrieval` payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KnowledgeRetrieval {
    /// The query.
    pub query: Valued,
    /// The source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Value>,
    /// Results.
    pub results: Vec<RetrievalResult>,
}

/// The optional query of a memory retrieval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OptionalQuery {
    /// Query text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Its provenance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
}

/// `steps/memoryContextRetrieval` payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryContextRetrieval {
    /// The query.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<OptionalQuery>,
    /// The memory store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_store: Option<Value>,
    /// Results.
    pub results: Vec<RetrievalResult>,
}

/// `steps/memoryStore` payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryStoreStep {
    /// Memory id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_id: Option<String>,
    /// The memory store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_store: Option<Value>,
    /// `create`, `update` or `delete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    /// What is stored.
    pub content: Valued,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

/// `steps/turnEnd` payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnEnd {
    /// Turn id.
    pub turn_id: String,
    /// Outcome.
    pub outcome: String,
    /// Steps in the turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_count: Option<u64>,
    /// Turn summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<Valued>,
    /// Tool calls in the turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_count: Option<u64>,
}

/// `steps/subagentStop` payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubagentStop {
    /// Sub-agent session (uuid).
    pub subagent_session_id: String,
    /// Outcome.
    pub outcome: String,
    /// Its chain head.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_chain_hash: Option<String>,
    /// Its summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<Valued>,
    /// Its step count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent_step_count: Option<u64>,
}

/// `handshake.json#/$defs/ServerHello` (the members this Guardian sends).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerHello {
    /// Selected version.
    pub negotiated_version: String,
    /// Methods evaluated.
    pub methods_evaluated: Vec<String>,
    /// Transport.
    pub selected_transport: String,
    /// Signature algorithms verified.
    #[serde(default)]
    pub signature_algorithms_supported: Vec<String>,
    /// Timeouts.
    pub timeout_config: Value,
    /// Allowed clock skew.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skew_window_ms: Option<u64>,
    /// Fail-open or closed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_timeout: Option<String>,
}

/// `modifications.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Modifications {
    /// Replacement content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified_content: Option<String>,
    /// Redactions (`path` JSON pointer, `replacement`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redactions: Option<Vec<Value>>,
    /// Overrides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameter_overrides: Option<Map<String, Value>>,
}

/// `response-envelope.json#/$defs/AcsResult` (the members this Guardian uses).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AcsResult {
    /// Always `final` in v0.1.
    #[serde(rename = "type")]
    pub kind: String,
    /// Version.
    pub acs_version: String,
    /// The request's id.
    pub request_id: String,
    /// The decision.
    pub decision: Verdict,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Codes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason_codes: Option<Vec<String>>,
    /// Provenance ids that drove it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cited_provenance_ids: Option<Vec<String>>,
    /// Paradigm data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_data: Option<Value>,
    /// Modifications (on modify).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modifications: Option<Modifications>,
    /// Method-specific data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
    /// Chain head after this step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain_hash: Option<String>,
}

/// A typed, validated payload.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    /// `handshake/hello`.
    Hello(ClientHello),
    /// `steps/preCompact`.
    PreCompact(PreCompact),
    /// `steps/postCompact`.
    PostCompact(PostCompact),
    /// `steps/userMessage`.
    UserMessage(UserMessage),
    /// `steps/agentResponse`.
    AgentResponse(AgentResponse),
    /// `steps/toolCallRequest`.
    ToolCallRequest(ToolCallRequest),
    /// `steps/toolCallResult`.
    ToolCallResult(ToolCallResult),
    /// `steps/knowledgeRetrieval`.
    KnowledgeRetrieval(KnowledgeRetrieval),
    /// `steps/memoryContextRetrieval`.
    MemoryContextRetrieval(MemoryContextRetrieval),
    /// `steps/memoryStore`.
    MemoryStore(MemoryStoreStep),
    /// `steps/turnEnd`.
    TurnEnd(TurnEnd),
    /// `steps/subagentStop`.
    SubagentStop(SubagentStop),
    /// A method without a schema here (an object).
    Other(Map<String, Value>),
}

/// Validates `payload` against the method's schema (errors carry the JSON
/// Pointer under `/params/payload`) and converts it to its typed form.
pub fn parse_payload(
    method: &str,
    payload: &Value,
) -> Result<Payload, crate::validate::ValidationError> {
    let base = "/params/payload";
    if let Some(schema) = crate::validate::payload_schema(method) {
        crate::validate::validate(schema, payload, base)?;
    } else if !payload.is_object() {
        return Err(crate::validate::ValidationError {
            path: base.into(),
            message: "expected object".into(),
        });
    }
    fn de<T: serde::de::DeserializeOwned>(
        v: &Value,
    ) -> Result<T, crate::validate::ValidationError> {
        T::deserialize(v).map_err(|e| crate::validate::ValidationError {
            path: "/params/payload".into(),
            message: e.to_string(),
        })
    }
    Ok(match method {
        "handshake/hello" => Payload::Hello(de(payload)?),
        "steps/preCompact" => Payload::PreCompact(de(payload)?),
        "steps/postCompact" => Payload::PostCompact(de(payload)?),
        "steps/userMessage" => Payload::UserMessage(de(payload)?),
        "steps/agentResponse" => Payload::AgentResponse(de(payload)?),
        "steps/toolCallRequest" => Payload::ToolCallRequest(de(payload)?),
        "steps/toolCallResult" => Payload::ToolCallResult(de(payload)?),
        "steps/knowledgeRetrieval" => Payload::KnowledgeRetrieval(de(payload)?),
        "steps/memoryContextRetrieval" => Payload::MemoryContextRetrieval(de(payload)?),
        "steps/memoryStore" => Payload::MemoryStore(de(payload)?),
        "steps/turnEnd" => Payload::TurnEnd(de(payload)?),
        "steps/subagentStop" => Payload::SubagentStop(de(payload)?),
        _ => Payload::Other(payload.as_object().cloned().unwrap_or_default()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_counts_each_origin_and_keeps_first_appearance_order() {
        let o = [
            Origin::ToolOutput,
            Origin::UserInput,
            Origin::ToolOutput,
            Origin::External,
            Origin::UserInput,
            Origin::ToolOutput,
        ];
        let provs: Vec<Provenance> = o
            .iter()
            .enumerate()
            .map(|(i, o)| Provenance::new(format!("p{i}"), *o, None))
            .collect();
        let s = summarize(&provs);
        assert_eq!(
            s.origins_seen,
            Some(vec![
                Origin::ToolOutput,
                Origin::UserInput,
                Origin::External
            ])
        );
        assert_eq!(s.entry_count, Some(6));
        let counts: Vec<(String, u64)> = s
            .entry_count_by_origin
            .unwrap_or_default()
            .into_iter()
            .collect();
        assert_eq!(
            counts,
            vec![
                ("external".to_string(), 1),
                ("tool_output".to_string(), 3),
                ("user_input".to_string(), 2)
            ]
        );
        assert_eq!(
            summarize(&[]).entry_count_by_origin,
            Some(Default::default())
        );
    }
}
