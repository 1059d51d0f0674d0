//! What a client does with what a remote Guardian said, or did not say, and
//! the client's own audit record of it (ACS §4.1, §6.4, §6.5).
//!
//! [`RemoteGuardian::consult`](crate::client::RemoteGuardian::consult)
//! returns a [`Consultation`]: the session, every request id it sent, the
//! `on_decision_failure` the ServerHello announced, and an [`Outcome`]:
//!
//! * [`Outcome::Decided`]: a decision arrived for preCompact; it is honoured
//!   whatever the postures (`modify`, `ask` and `defer` are applied as
//!   `deny`: a compaction can neither be rewritten nor paused);
//! * [`Outcome::Refused`]: the Guardian answered the hello with a refusal
//!   (`SESSION_REFUSED`, `UNSUPPORTED_VERSION`, `PROVENANCE_REQUIRED`, or a
//!   ServerHello of another major version): it has decided (§4.1), so no
//!   posture applies;
//! * [`Outcome::Failed`]: no usable answer (unreachable, silent, not JSON,
//!   an HTTP error page, a JSON-RPC error, a bad signature, a result with no
//!   decision). At the hello that is a **startup failure**, resolved by the
//!   startup posture (§4.1); at a later step a **decision failure**,
//!   resolved by `on_decision_failure` (§6.4).
//!
//! [`apply`] resolves the outcome with the client's [`Postures`] into an
//! [`Applied`] (allow, deny, or proceeded unguarded) whose
//! [`Applied::record`] is the JSON object of the deployment's audit log.
//!
//! **Defaults fail closed**, unlike the standard's (which are `proceed`):
//! mnemo's bank is the deployment, and a compaction that runs unguarded
//! cannot be undone by a Guardian that comes back. The local
//! `on_decision_failure = proceed` takes effect only when the Guardian did
//! not announce `deny` (its ServerHello's `on_decision_failure`, or the
//! v0.1.0 name `on_timeout`; absent means the standard's default,
//! `proceed`; any other value counts as `deny`): the text makes the
//! posture the deployment's, declared in the handshake, so a Guardian that
//! asks for fail-closed gets it, and a client that asks for fail-closed
//! keeps it.

use mnemo_guardian::decide::Decision;
use serde_json::{Value, json};

use crate::client::ClientError;

/// The reason code of an unguarded session start (§4.1).
pub const STARTED_UNGUARDED: &str = "started_unguarded";
/// The reason code of a step that proceeded without a decision (§6.4).
pub const PROCEEDED_WITHOUT_DECISION: &str = "proceeded_without_decision";

/// Where a consultation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// `handshake/hello`.
    Hello,
    /// A `steps/memoryContextRetrieval`.
    Retrieval,
    /// `steps/preCompact`.
    PreCompact,
}

impl Stage {
    /// The method name.
    pub fn method(self) -> &'static str {
        match self {
            Stage::Hello => "handshake/hello",
            Stage::Retrieval => "steps/memoryContextRetrieval",
            Stage::PreCompact => "steps/preCompact",
        }
    }
}

/// One remote consultation: what was sent, what came back.
#[derive(Debug)]
pub struct Consultation {
    /// The session id of the consultation (a fresh UUID).
    pub session_id: String,
    /// When it began (RFC 3339, UTC, milliseconds).
    pub time: String,
    /// The request ids sent, in order (hello, retrievals, preCompact).
    pub request_ids: Vec<String>,
    /// The ServerHello's `on_decision_failure` (or `on_timeout`), when a
    /// ServerHello arrived and carried one.
    pub announced_failure_posture: Option<String>,
    /// How it ended.
    pub outcome: Outcome,
}

/// How a consultation ended.
#[derive(Debug)]
pub enum Outcome {
    /// preCompact was answered with a decision.
    Decided {
        /// The decision as received (`allow`, `deny`, `modify`, `ask`,
        /// `defer`).
        received: String,
        /// The decision as the client applies it (`modify`, `ask`, `defer`
        /// become deny).
        decision: Decision,
    },
    /// The Guardian refused the session at the hello: a decision (§4.1).
    Refused {
        /// What it said.
        error: ClientError,
    },
    /// No usable answer at `stage` (the request id is the last of
    /// `request_ids`).
    Failed {
        /// The step that got no usable answer.
        stage: Stage,
        /// What came back, as the audit log names it ([`failure_kind`]).
        received: &'static str,
        /// The error.
        error: ClientError,
    },
}

/// JSON-RPC codes with which a Guardian refuses a session at the hello
/// (§4.1, §17.1): SESSION_REFUSED, UNSUPPORTED_VERSION, PROVENANCE_REQUIRED.
pub const REFUSAL_CODES: [i64; 3] = [-32000, -32001, -32002];

/// What a failed exchange received, for the audit log: `unreachable` (the
/// connection was refused or could not be made), `no_answer` (silent past
/// the timeout, or the connection closed), `error` (a JSON-RPC error),
/// `not_json`, `http_error` (a status other than 200), `bad_signature`,
/// `malformed` (anything else).
pub fn failure_kind(e: &ClientError) -> &'static str {
    match e {
        ClientError::Rpc { .. } => "error",
        ClientError::Io { source, .. } => match source.kind() {
            std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::NotFound
            | std::io::ErrorKind::AddrNotAvailable
            | std::io::ErrorKind::HostUnreachable
            | std::io::ErrorKind::NetworkUnreachable => "unreachable",
            _ => "no_answer",
        },
        ClientError::Protocol { message, .. } => {
            if message.starts_with("invalid JSON") || message.contains("that is not JSON") {
                "not_json"
            } else if message.starts_with("HTTP status") {
                "http_error"
            } else if message.starts_with("response signature") {
                "bad_signature"
            } else if message.starts_with("connection closed") {
                "no_answer"
            } else {
                "malformed"
            }
        }
        ClientError::Url(_) | ClientError::Tls(_) => "unreachable",
        // The stdio transport: a command that cannot run is unreachable; a
        // child that exits or falls silent before it answers gave no answer.
        ClientError::Command(_) | ClientError::Spawn { .. } => "unreachable",
        ClientError::Exited { .. } | ClientError::NoAnswer { .. } => "no_answer",
    }
}

/// The startup posture (§4.1): what to do when the hello gets no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StartupPosture {
    /// Start nothing (mnemo's default).
    #[default]
    Refuse,
    /// Start unguarded, recorded in the audit log.
    Proceed,
}

/// `on_decision_failure` (§6.4): what to do when a step gets no decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailurePosture {
    /// Block the step (mnemo's default).
    #[default]
    Deny,
    /// Let it proceed, recorded in the audit log.
    Proceed,
}

/// The client's postures (configured out of band: mnemo.toml's
/// `[guardian_client]` or the gate's flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Postures {
    /// Startup posture.
    pub startup: StartupPosture,
    /// Decision-failure posture.
    pub on_decision_failure: FailurePosture,
}

/// What the client applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppliedAs {
    /// The Guardian allowed it.
    Allow,
    /// Denied: by the Guardian, by a substitution, or by a fail-closed
    /// posture.
    Deny,
    /// Went ahead with no decision (a posture `proceed`).
    ProceededUnguarded,
}

impl AppliedAs {
    /// The audit log's name.
    pub fn as_str(self) -> &'static str {
        match self {
            AppliedAs::Allow => "allow",
            AppliedAs::Deny => "deny",
            AppliedAs::ProceededUnguarded => "proceeded_unguarded",
        }
    }
}

/// A consultation resolved by the postures.
#[derive(Debug)]
pub struct Applied {
    /// What the client applied.
    pub applied: AppliedAs,
    /// What happened, for the log: `decision`, `refused` (the Guardian
    /// refused the session), `startup_failed` / `decision_failed` (no
    /// answer, fail closed), [`STARTED_UNGUARDED`],
    /// [`PROCEEDED_WITHOUT_DECISION`].
    pub event: &'static str,
    /// Reason codes: the Guardian's, plus the client's own
    /// (`modify_unsupported`, `started_unguarded`,
    /// `proceeded_without_decision`, `guardian_requires_deny`).
    pub reason_codes: Vec<String>,
    /// One line for the user: the decision's reasoning or the failure.
    pub message: String,
    /// The audit object (see [`Applied::record`]).
    record: Value,
}

impl Applied {
    /// Whether the compaction may go ahead.
    pub fn proceeds(&self) -> bool {
        self.applied != AppliedAs::Deny
    }

    /// The deployment's audit record of the consultation: `session_id`,
    /// `request_ids`, `request_id` (the one the outcome answers),
    /// `method`, `received` (a decision, or what [`failure_kind`] names),
    /// `applied`, `event`, `reason_codes`, `postures` (local and
    /// announced), and `reasoning` or `error`.
    pub fn record(&self) -> &Value {
        &self.record
    }
}

/// Resolves a consultation with the client's postures.
pub fn apply(c: &Consultation, local: Postures) -> Applied {
    let announced = c.announced_failure_posture.as_deref();
    // Proceed only if both allow it: absent is the standard's default
    // (proceed); anything but "proceed" counts as deny.
    let guardian_allows_proceed = announced.is_none_or(|a| a == "proceed");
    let effective_failure =
        if local.on_decision_failure == FailurePosture::Proceed && guardian_allows_proceed {
            FailurePosture::Proceed
        } else {
            FailurePosture::Deny
        };
    let postures = json!({
        "startup_posture": match local.startup {
            StartupPosture::Refuse => "refuse",
            StartupPosture::Proceed => "proceed",
        },
        "on_decision_failure": match local.on_decision_failure {
            FailurePosture::Deny => "deny",
            FailurePosture::Proceed => "proceed",
        },
        "announced_on_decision_failure": announced,
        "effective_on_decision_failure": match effective_failure {
            FailurePosture::Deny => "deny",
            FailurePosture::Proceed => "proceed",
        },
    });
    let last = c.request_ids.last().cloned().unwrap_or_default();
    let mut record = json!({
        "time": c.time,
        "session_id": c.session_id,
        "request_ids": c.request_ids,
        "request_id": last,
        "postures": postures,
    });
    let (applied, event, reason_codes, message, method, received, detail) = match &c.outcome {
        Outcome::Decided { received, decision } => {
            let applied = if decision.allowed() {
                AppliedAs::Allow
            } else {
                AppliedAs::Deny
            };
            (
                applied,
                "decision",
                decision.reason_codes.clone(),
                decision.reasoning.clone(),
                Stage::PreCompact.method(),
                received.clone(),
                ("reasoning", decision.reasoning.clone()),
            )
        }
        Outcome::Refused { error } => (
            AppliedAs::Deny,
            "refused",
            Vec::new(),
            format!("the Guardian refused the session: {error}"),
            Stage::Hello.method(),
            "error".to_string(),
            ("error", error.to_string()),
        ),
        Outcome::Failed {
            stage,
            received,
            error,
        } => {
            let (proceed, ok_event, fail_event, code) = if *stage == Stage::Hello {
                (
                    local.startup == StartupPosture::Proceed,
                    STARTED_UNGUARDED,
                    "startup_failed",
                    STARTED_UNGUARDED,
                )
            } else {
                (
                    effective_failure == FailurePosture::Proceed,
                    PROCEEDED_WITHOUT_DECISION,
                    "decision_failed",
                    PROCEEDED_WITHOUT_DECISION,
                )
            };
            let mut codes = Vec::new();
            if proceed {
                codes.push(code.to_string());
            } else if *stage != Stage::Hello && local.on_decision_failure == FailurePosture::Proceed
            {
                codes.push("guardian_requires_deny".to_string());
            }
            let message = if proceed {
                format!(
                    "no usable answer from the Guardian to {} ({received}: {error}); posture proceed: compacting WITHOUT a decision ({code}, recorded in the audit log)",
                    stage.method()
                )
            } else {
                format!(
                    "cannot ask the Guardian, so nothing was compacted: {error}{}",
                    if codes.is_empty() {
                        ""
                    } else {
                        " (on_decision_failure = proceed is set, but the Guardian announced deny)"
                    }
                )
            };
            (
                if proceed {
                    AppliedAs::ProceededUnguarded
                } else {
                    AppliedAs::Deny
                },
                if proceed { ok_event } else { fail_event },
                codes,
                message,
                stage.method(),
                (*received).to_string(),
                ("error", error.to_string()),
            )
        }
    };
    if let Value::Object(m) = &mut record {
        m.insert("method".into(), json!(method));
        m.insert("received".into(), json!(received));
        m.insert("applied".into(), json!(applied.as_str()));
        m.insert("event".into(), json!(event));
        m.insert("reason_codes".into(), json!(reason_codes));
        m.insert(detail.0.into(), json!(detail.1));
    }
    Applied {
        applied,
        event,
        reason_codes,
        message,
        record,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemo_acs::model::Verdict;

    fn failed(stage: Stage, announced: Option<&str>) -> Consultation {
        Consultation {
            session_id: "s".into(),
            time: "t".into(),
            request_ids: vec!["r1".into(), "r2".into()],
            announced_failure_posture: announced.map(str::to_string),
            outcome: Outcome::Failed {
                stage,
                received: "no_answer",
                error: ClientError::Protocol {
                    url: "u".into(),
                    message: "connection closed in headers".into(),
                },
            },
        }
    }

    const PROCEED: Postures = Postures {
        startup: StartupPosture::Proceed,
        on_decision_failure: FailurePosture::Proceed,
    };

    #[test]
    fn defaults_fail_closed() {
        for stage in [Stage::Hello, Stage::Retrieval, Stage::PreCompact] {
            let a = apply(&failed(stage, None), Postures::default());
            assert_eq!(a.applied, AppliedAs::Deny);
            assert!(!a.proceeds());
            assert_eq!(a.record()["applied"], "deny");
        }
    }

    #[test]
    fn proceed_needs_both_sides() {
        let a = apply(&failed(Stage::PreCompact, None), PROCEED);
        assert_eq!(a.applied, AppliedAs::ProceededUnguarded);
        assert_eq!(a.event, PROCEEDED_WITHOUT_DECISION);
        assert_eq!(a.record()["reason_codes"][0], PROCEEDED_WITHOUT_DECISION);
        assert_eq!(a.record()["request_id"], "r2");
        let a = apply(&failed(Stage::PreCompact, Some("proceed")), PROCEED);
        assert!(a.proceeds());
        for announced in ["deny", "Deny", "whatever"] {
            let a = apply(&failed(Stage::PreCompact, Some(announced)), PROCEED);
            assert_eq!(a.applied, AppliedAs::Deny, "{announced}");
            assert_eq!(a.reason_codes, ["guardian_requires_deny"]);
        }
        // The startup posture is the client's alone (no ServerHello).
        let a = apply(&failed(Stage::Hello, None), PROCEED);
        assert_eq!(a.event, STARTED_UNGUARDED);
        assert_eq!(a.record()["method"], "handshake/hello");
        let only_startup = Postures {
            startup: StartupPosture::Proceed,
            on_decision_failure: FailurePosture::Deny,
        };
        assert!(!apply(&failed(Stage::PreCompact, None), only_startup).proceeds());
    }

    #[test]
    fn a_decision_is_honoured_whatever_the_posture() {
        let c = Consultation {
            session_id: "s".into(),
            time: "t".into(),
            request_ids: vec!["r".into()],
            announced_failure_posture: None,
            outcome: Outcome::Decided {
                received: "modify".into(),
                decision: Decision {
                    verdict: Verdict::Deny,
                    reasoning: "why".into(),
                    reason_codes: vec!["modify_unsupported".into()],
                    cited_provenance_ids: vec![],
                    policy_data: Value::Null,
                    rule_id: "remote",
                },
            },
        };
        let a = apply(&c, PROCEED);
        assert_eq!(a.applied, AppliedAs::Deny);
        assert_eq!(a.record()["received"], "modify");
        assert_eq!(a.record()["applied"], "deny");
        assert_eq!(a.record()["reason_codes"][0], "modify_unsupported");
    }

    #[test]
    fn the_announced_posture_is_read_in_every_shape() {
        use crate::client::announced_failure_posture as announced;
        assert_eq!(
            announced(&json!({"on_decision_failure": "deny"})),
            Some("deny")
        );
        assert_eq!(announced(&json!({"on_timeout": "deny"})), Some("deny"));
        assert_eq!(
            announced(&json!({"payload": {"on_decision_failure": "proceed"}})),
            Some("proceed")
        );
        assert_eq!(announced(&json!({"negotiated_version": "0.1.0"})), None);
    }

    #[test]
    fn failures_are_named() {
        let io = |k| ClientError::Io {
            url: "u".into(),
            source: std::io::Error::from(k),
        };
        assert_eq!(
            failure_kind(&io(std::io::ErrorKind::ConnectionRefused)),
            "unreachable"
        );
        assert_eq!(
            failure_kind(&io(std::io::ErrorKind::WouldBlock)),
            "no_answer"
        );
        let p = |m: &str| ClientError::Protocol {
            url: "u".into(),
            message: m.into(),
        };
        assert_eq!(failure_kind(&p("invalid JSON: x")), "not_json");
        assert_eq!(failure_kind(&p("HTTP status HTTP/1.1 504")), "http_error");
        assert_eq!(failure_kind(&p("response signature: bad")), "bad_signature");
        assert_eq!(failure_kind(&p("no decision")), "malformed");
    }
}
