//! The safety preflight (seed §9 `can_compress`, §10 never-compress list and
//! warnlist), as a typed decision with its reason.
//!
//! | artifact / condition | decision |
//! |---|---|
//! | subtask_summary `complete` | compress |
//! | subtask_summary `partial` | compress with ⚠️, at least MEDIUM |
//! | subtask_summary `in_progress` / `escalated` / `blocked`, or no status | skip, flag to Zeus |
//! | any artifact with active blockers | skip, flag to Zeus |
//! | IMPL | compress (Themis APPROVED already verified by the gate) |
//! | REVIEW `APPROVED` | compress; `NEEDS_REVISION` / `FAILED` / no verdict: skip, leave in `.tmp/` |
//! | PLAN | compress only when all phases are complete and it is not the active plan |
//! | DISC approved by the user | compress; `REQUEST CHANGES`: flag to user, do not archive; `DISCARD`: delete, do not archive; otherwise skip |
//! | ADR, or anything under `_notes/` or `adr/` | never touch |
//! | unrecognised `.tmp/` artifact | flag to user, leave in place |

use mnemo_model::{Status, Verdict};
use serde::Serialize;

/// The kinds of artifacts the preflight knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ArtifactType {
    /// An agent's `subtask_summary`.
    SubtaskSummary,
    /// An implementation artifact.
    Impl,
    /// A review artifact.
    Review,
    /// A plan.
    Plan,
    /// A discussion artifact.
    Disc,
    /// An architecture decision record.
    Adr,
    /// A file in `.tmp/` that is none of the above.
    Unrecognized,
}

impl ArtifactType {
    /// Every type.
    pub const ALL: [ArtifactType; 7] = [
        ArtifactType::SubtaskSummary,
        ArtifactType::Impl,
        ArtifactType::Review,
        ArtifactType::Plan,
        ArtifactType::Disc,
        ArtifactType::Adr,
        ArtifactType::Unrecognized,
    ];

    /// Classifies an artifact by file name (`IMPL-…`, `REVIEW-…`,
    /// `PLAN-…`, `DISC-…`, `ADR-…`, `…subtask_summary…`); the mnemo ZZ
    /// artifacts and the lock are not artifacts (`None`).
    pub fn from_file_name(name: &str) -> Option<ArtifactType> {
        let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
        let upper = base.to_ascii_uppercase();
        if upper.starts_with("ZZ-PHASE") || upper == "COMPRESS.LOCK" {
            return None;
        }
        let t = if upper.starts_with("ADR") {
            ArtifactType::Adr
        } else if upper.starts_with("IMPL") {
            ArtifactType::Impl
        } else if upper.starts_with("REVIEW") {
            ArtifactType::Review
        } else if upper.starts_with("PLAN") {
            ArtifactType::Plan
        } else if upper.starts_with("DISC") {
            ArtifactType::Disc
        } else if upper.contains("SUBTASK") {
            ArtifactType::SubtaskSummary
        } else {
            ArtifactType::Unrecognized
        };
        Some(t)
    }
}

/// What a user decided on a DISC artifact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DiscDecision {
    /// Approved: may be archived.
    Approved,
    /// `REQUEST CHANGES`: flag to the user, do not archive.
    RequestChanges,
    /// `DISCARD`: delete, do not archive.
    Discard,
}

impl DiscDecision {
    /// Parses `APPROVED`, `REQUEST CHANGES`, `request-changes`, `DISCARD`.
    pub fn parse(s: &str) -> Option<DiscDecision> {
        let n: String = s
            .trim()
            .chars()
            .filter(|c| c.is_alphanumeric())
            .collect::<String>()
            .to_ascii_uppercase();
        match n.as_str() {
            "APPROVED" | "APPROVE" => Some(DiscDecision::Approved),
            "REQUESTCHANGES" | "CHANGESREQUESTED" => Some(DiscDecision::RequestChanges),
            "DISCARD" | "DISCARDED" => Some(DiscDecision::Discard),
            _ => None,
        }
    }
}

/// Everything the preflight looks at.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Preflight {
    /// Reported status (subtask summaries).
    pub status: Option<Status>,
    /// Review verdict (REVIEW).
    pub verdict: Option<Verdict>,
    /// The user's decision (DISC).
    pub disc: Option<DiscDecision>,
    /// Every phase of the feature is complete (PLAN).
    pub all_phases_complete: bool,
    /// The plan is the current active plan (PLAN).
    pub active_plan: bool,
    /// The artifact has active blockers.
    pub active_blockers: bool,
    /// The artifact lives under `_notes/` or `adr/` (never touched).
    pub under_notes_or_adr: bool,
}

/// Who must hear about a skip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Audience {
    /// The orchestrator.
    Zeus,
    /// The user.
    User,
}

/// The preflight's decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Decision {
    /// Compress.
    Compress,
    /// Compress, marked ⚠️ and scored at least MEDIUM (`partial`).
    CompressWithWarning {
        /// Why.
        reason: String,
    },
    /// Do not compress; leave the artifact where it is.
    Skip {
        /// Why.
        reason: String,
        /// Who to tell, if anyone.
        flag: Option<Audience>,
    },
    /// Delete the artifact without archiving it (DISC `DISCARD`).
    Delete {
        /// Why.
        reason: String,
    },
    /// Never touch (ADRs, `_notes/`, `adr/`).
    Never {
        /// Why.
        reason: String,
    },
}

impl Decision {
    /// True when the artifact is compressed (with or without a warning).
    pub fn compresses(&self) -> bool {
        matches!(
            self,
            Decision::Compress | Decision::CompressWithWarning { .. }
        )
    }

    /// The reason of a non-plain decision.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Decision::Compress => None,
            Decision::CompressWithWarning { reason }
            | Decision::Skip { reason, .. }
            | Decision::Delete { reason }
            | Decision::Never { reason } => Some(reason),
        }
    }
}

fn skip(reason: impl Into<String>, flag: Option<Audience>) -> Decision {
    Decision::Skip {
        reason: reason.into(),
        flag,
    }
}

/// Decides whether an artifact may be compressed (seed §9, §10).
pub fn can_compress(artifact: ArtifactType, p: &Preflight) -> Decision {
    if artifact == ArtifactType::Adr || p.under_notes_or_adr {
        return Decision::Never {
            reason: "ADRs and notes under _notes/ or adr/ are permanent and immutable".into(),
        };
    }
    if artifact == ArtifactType::Unrecognized {
        return skip(
            "unrecognised .tmp/ artifact: left in place",
            Some(Audience::User),
        );
    }
    if p.active_blockers || p.status == Some(Status::Blocked) {
        return skip("the artifact has active blockers", Some(Audience::Zeus));
    }
    match artifact {
        ArtifactType::SubtaskSummary => match p.status {
            Some(Status::Complete) => Decision::Compress,
            Some(Status::Partial) => Decision::CompressWithWarning {
                reason: "status partial: marked ⚠️ and scored at least MEDIUM".into(),
            },
            Some(s @ (Status::InProgress | Status::Escalated | Status::Blocked)) => skip(
                format!("subtask_summary with status {s} is never compressed"),
                Some(Audience::Zeus),
            ),
            None => skip(
                "subtask_summary without a status is never compressed",
                Some(Audience::Zeus),
            ),
        },
        ArtifactType::Impl => Decision::Compress,
        ArtifactType::Review => match p.verdict {
            Some(Verdict::Approved) => Decision::Compress,
            Some(v) => skip(format!("REVIEW with verdict {v}: left in .tmp/"), None),
            None => skip("REVIEW without a verdict: left in .tmp/", None),
        },
        ArtifactType::Plan => {
            if p.active_plan && !p.all_phases_complete {
                skip(
                    "current active PLAN: archived only at feature completion",
                    None,
                )
            } else if p.all_phases_complete {
                Decision::Compress
            } else {
                skip("PLAN with phases still open", None)
            }
        }
        ArtifactType::Disc => match p.disc {
            Some(DiscDecision::Approved) => Decision::Compress,
            Some(DiscDecision::RequestChanges) => skip(
                "DISC with REQUEST CHANGES: not archived",
                Some(Audience::User),
            ),
            Some(DiscDecision::Discard) => Decision::Delete {
                reason: "DISC with DISCARD: deleted, not archived".into(),
            },
            None => skip("DISC not approved by the user", None),
        },
        // Handled above; restated so that the match stays exhaustive.
        ArtifactType::Adr => Decision::Never {
            reason: "ADRs are permanent and immutable".into(),
        },
        ArtifactType::Unrecognized => skip(
            "unrecognised .tmp/ artifact: left in place",
            Some(Audience::User),
        ),
    }
}
