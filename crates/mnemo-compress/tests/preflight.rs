#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The safety preflight, exhaustively over every input combination.

use mnemo_compress::preflight::{
    ArtifactType, Audience, Decision, DiscDecision, Preflight, can_compress,
};
use mnemo_model::{Status, Verdict};

fn all_inputs() -> Vec<Preflight> {
    let statuses = [None].into_iter().chain(Status::ALL.map(Some));
    let mut out = Vec::new();
    for status in statuses {
        for verdict in [
            None,
            Some(Verdict::Approved),
            Some(Verdict::NeedsRevision),
            Some(Verdict::Failed),
        ] {
            for disc in [
                None,
                Some(DiscDecision::Approved),
                Some(DiscDecision::RequestChanges),
                Some(DiscDecision::Discard),
            ] {
                for bits in 0u8..16 {
                    out.push(Preflight {
                        status,
                        verdict,
                        disc,
                        all_phases_complete: bits & 1 != 0,
                        active_plan: bits & 2 != 0,
                        active_blockers: bits & 4 != 0,
                        under_notes_or_adr: bits & 8 != 0,
                    });
                }
            }
        }
    }
    out
}

#[test]
fn exhaustive_rules() {
    let inputs = all_inputs();
    let mut count = 0;
    for t in ArtifactType::ALL {
        for p in &inputs {
            count += 1;
            let d = can_compress(t, p);
            // Never-compress list.
            if t == ArtifactType::Adr || p.under_notes_or_adr {
                assert!(matches!(d, Decision::Never { .. }), "{t:?} {p:?} → {d:?}");
                continue;
            }
            if t == ArtifactType::Unrecognized {
                assert_eq!(
                    d,
                    Decision::Skip {
                        reason: "unrecognised .tmp/ artifact: left in place".into(),
                        flag: Some(Audience::User)
                    }
                );
                continue;
            }
            if p.active_blockers || p.status == Some(Status::Blocked) {
                assert!(
                    matches!(
                        d,
                        Decision::Skip {
                            flag: Some(Audience::Zeus),
                            ..
                        }
                    ),
                    "{t:?} {p:?} → {d:?}"
                );
                continue;
            }
            // Every non-compress decision has a reason.
            assert_eq!(d.reason().is_none(), d == Decision::Compress);
            match t {
                ArtifactType::SubtaskSummary => match p.status {
                    Some(Status::Complete) => assert_eq!(d, Decision::Compress),
                    Some(Status::Partial) => {
                        assert!(matches!(d, Decision::CompressWithWarning { .. }))
                    }
                    _ => assert!(
                        matches!(
                            d,
                            Decision::Skip {
                                flag: Some(Audience::Zeus),
                                ..
                            }
                        ),
                        "{p:?} → {d:?}"
                    ),
                },
                ArtifactType::Impl => assert_eq!(d, Decision::Compress),
                ArtifactType::Review => {
                    assert_eq!(
                        d.compresses(),
                        p.verdict == Some(Verdict::Approved),
                        "{p:?}"
                    );
                    if !d.compresses() {
                        assert!(d.reason().unwrap().contains(".tmp/"));
                    }
                }
                ArtifactType::Plan => assert_eq!(d.compresses(), p.all_phases_complete),
                ArtifactType::Disc => match p.disc {
                    Some(DiscDecision::Approved) => assert_eq!(d, Decision::Compress),
                    Some(DiscDecision::RequestChanges) => assert!(matches!(
                        d,
                        Decision::Skip {
                            flag: Some(Audience::User),
                            ..
                        }
                    )),
                    Some(DiscDecision::Discard) => assert!(matches!(d, Decision::Delete { .. })),
                    None => assert!(!d.compresses()),
                },
                ArtifactType::Adr | ArtifactType::Unrecognized => unreachable!(),
            }
        }
    }
    assert_eq!(count, 7 * 6 * 4 * 4 * 16);
}

#[test]
fn reasons_name_the_cause() {
    let p = Preflight {
        status: Some(Status::InProgress),
        ..Preflight::default()
    };
    let d = can_compress(ArtifactType::SubtaskSummary, &p);
    assert_eq!(
        d.reason(),
        Some("subtask_summary with status in_progress is never compressed")
    );
    let p = Preflight {
        verdict: Some(Verdict::NeedsRevision),
        ..Preflight::default()
    };
    assert_eq!(
        can_compress(ArtifactType::Review, &p).reason(),
        Some("REVIEW with verdict NEEDS_REVISION: left in .tmp/")
    );
    let p = Preflight {
        active_plan: true,
        ..Preflight::default()
    };
    assert!(
        can_compress(ArtifactType::Plan, &p)
            .reason()
            .unwrap()
            .contains("active PLAN")
    );
}

#[test]
fn classify_file_names() {
    assert_eq!(
        ArtifactType::from_file_name(".tmp/IMPL-auth-phase1.md"),
        Some(ArtifactType::Impl)
    );
    assert_eq!(
        ArtifactType::from_file_name("REVIEW-auth.md"),
        Some(ArtifactType::Review)
    );
    assert_eq!(
        ArtifactType::from_file_name("plan-auth.md"),
        Some(ArtifactType::Plan)
    );
    assert_eq!(
        ArtifactType::from_file_name("DISC-x.md"),
        Some(ArtifactType::Disc)
    );
    assert_eq!(
        ArtifactType::from_file_name("_notes/ADR-0001-agent-rename.md"),
        Some(ArtifactType::Adr)
    );
    assert_eq!(
        ArtifactType::from_file_name("hermes-subtask_summary.md"),
        Some(ArtifactType::SubtaskSummary)
    );
    assert_eq!(ArtifactType::from_file_name("ZZ-phase1-context.md"), None);
    assert_eq!(ArtifactType::from_file_name("compress.lock"), None);
    assert_eq!(
        ArtifactType::from_file_name("notes.txt"),
        Some(ArtifactType::Unrecognized)
    );
    assert_eq!(
        DiscDecision::parse("request changes"),
        Some(DiscDecision::RequestChanges)
    );
    assert_eq!(DiscDecision::parse("DISCARD"), Some(DiscDecision::Discard));
    assert_eq!(DiscDecision::parse("maybe"), None);
}
