//! The preCompact decision read through the store's indexes equals the
//! decision over every step, on random sessions, requests and policies.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_guardian::chain::Hash;
use mnemo_guardian::decide::{CompactionInput, EntryProvenance, decide_compaction};
use mnemo_guardian::model::{PreCompact, Provenance, ProvenanceSummary, summarize};
use mnemo_guardian::precompact::{
    decide_pre_compact, decide_pre_compact_full_scan, recorded_lineage, recorded_lineage_of,
};
use mnemo_guardian::store::{CompactionRecord, SessionHandshake, StepRecord, StoreError};
use mnemo_guardian::{MemoryStore, Origin, Policy, SessionStore, Trigger};
use proptest::prelude::*;

/// A store with only the required methods: the trait's default look-ups
/// (full reads) stand in for the indexes.
#[derive(Default)]
struct Plain(Vec<StepRecord>);

impl SessionStore for Plain {
    fn handshake(&mut self, _: &str) -> Result<Option<SessionHandshake>, StoreError> {
        Ok(None)
    }
    fn set_handshake(&mut self, _: &str, _: &SessionHandshake) -> Result<(), StoreError> {
        Ok(())
    }
    fn mark_request(&mut self, _: &str, _: &str, _: i64) -> Result<bool, StoreError> {
        Ok(true)
    }
    fn mark_nonce(&mut self, _: &str, _: &str, _: i64) -> Result<bool, StoreError> {
        Ok(true)
    }
    fn record_step(&mut self, _: &str, step: &StepRecord) -> Result<(), StoreError> {
        self.0.push(step.clone());
        Ok(())
    }
    fn steps(&mut self, _: &str) -> Result<Vec<StepRecord>, StoreError> {
        Ok(self.0.clone())
    }
    fn chain_head(&mut self, _: &str) -> Result<Option<(u64, Hash)>, StoreError> {
        Ok(None)
    }
    fn append_chain(&mut self, _: &str, _: u64, _: &str, _: &Hash) -> Result<(), StoreError> {
        Ok(())
    }
    fn record_compaction(&mut self, _: &str, _: &CompactionRecord) -> Result<(), StoreError> {
        Ok(())
    }
    fn last_compaction(&mut self, _: &str) -> Result<Option<CompactionRecord>, StoreError> {
        Ok(None)
    }
}

const POLICIES: &[&str] = &[
    "",
    "[compaction]\nregrounding = [\"user_input\", \"system\"]\n",
    "[trust]\nunknown_lineage = \"trusted\"\n[[trust.source]]\norigin = \"tool_output\"\nsource_id = \"safe*\"\ntrust = \"trusted\"\n",
    "[compaction]\non_untrusted = \"allow\"\n",
    "[compaction]\nregrounding = []\n",
    "[compaction]\nallow_untrusted_below_tokens = 50\nmax_compression_ratio = 10\n",
];

fn origin() -> impl Strategy<Value = Origin> {
    (0..Origin::ALL.len()).prop_map(|i| Origin::ALL[i])
}

fn node() -> impl Strategy<Value = Provenance> {
    (
        0..10u8,
        origin(),
        prop::option::of(prop::sample::select(vec!["safe-1", "bad"])),
        prop::collection::vec(0..12u8, 0..3),
    )
        .prop_map(|(id, o, src, from)| {
            let mut p = Provenance::new(format!("p{id}"), o, src);
            p.derived_from = from.into_iter().map(|i| format!("p{i}")).collect();
            p
        })
}

fn steps() -> impl Strategy<Value = Vec<StepRecord>> {
    prop::collection::vec((0..12u8, prop::collection::vec(node(), 0..4)), 0..40).prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(|(i, (id, provenance))| StepRecord {
                seq: i as u64 + 1,
                step_id: format!("s{id}"),
                method: "steps/toolCallResult".into(),
                provenance,
            })
            .collect()
    })
}

fn request() -> impl Strategy<Value = PreCompact> {
    (
        prop::collection::vec(0..14u8, 0..8),
        prop::option::of(prop::collection::vec(node(), 0..4)),
        (0..Trigger::ALL.len()).prop_map(|i| Trigger::ALL[i]),
        prop::option::of(0..2000u64),
        prop::option::of(0..200u64),
    )
        .prop_map(|(ids, summary, trigger, inp, target)| PreCompact {
            entries_to_compact: ids.into_iter().map(|i| format!("s{i}")).collect(),
            pre_compact_provenance_summary: summary.map(|nodes| {
                let mut s: ProvenanceSummary = summarize(&nodes);
                let earliest = s
                    .origins_seen
                    .iter()
                    .flatten()
                    .take(1)
                    .map(|o| (o.as_str().to_string(), "s3".to_string()))
                    .collect();
                s.earliest_step_id_by_origin = Some(earliest);
                s
            }),
            triggered_by: trigger,
            estimated_input_tokens: inp,
            target_summary_tokens: target,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn indexed_decision_equals_full_scan(
        steps in steps(),
        pc in request(),
        pol in 0..POLICIES.len(),
    ) {
        let policy = Policy::from_toml(POLICIES[pol]).expect("test policy parses");
        let want = decide_pre_compact_full_scan(&policy, &steps, &pc);
        let mut mem = MemoryStore::new();
        let mut plain = Plain::default();
        for s in &steps {
            mem.record_step("sess", s).unwrap();
            plain.record_step("sess", s).unwrap();
            // Another session's steps never leak in.
            mem.record_step("other", &StepRecord { step_id: "s1".into(), ..s.clone() }).unwrap();
        }
        let got = decide_pre_compact(&mut mem, &policy, "sess", &pc).unwrap();
        prop_assert_eq!(&got, &want);
        let got = decide_pre_compact(&mut plain, &policy, "sess", &pc).unwrap();
        prop_assert_eq!(&got, &want);
    }
}

fn host_entries() -> impl Strategy<Value = Vec<EntryProvenance>> {
    prop::collection::vec(prop::collection::vec(node(), 0..3), 0..6).prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(|(i, provenance)| EntryProvenance {
                step_id: format!("line-{i}"),
                provenance,
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// A host's compaction (entries from its transcript) decided with only
    /// the recorded nodes its lineage reaches, looked up through the
    /// index, equals the decision with every recorded node known.
    #[test]
    fn host_lineage_through_the_index_equals_every_node_known(
        steps in steps(),
        entries in host_entries(),
        after in host_entries(),
        manual in any::<bool>(),
        pol in 0..POLICIES.len(),
    ) {
        let policy = Policy::from_toml(POLICIES[pol]).expect("test policy parses");
        let trigger = if manual { Trigger::Manual } else { Trigger::SizeThreshold };
        let all: Vec<Provenance> = steps.iter().flat_map(|s| s.provenance.clone()).collect();
        let input = |known: &[Provenance]| -> mnemo_guardian::decide::Decision {
            decide_compaction(&policy, &CompactionInput {
                entries: &entries,
                after: &after,
                known,
                trigger,
                estimated_input_tokens: None,
                target_summary_tokens: None,
            })
        };
        let want = input(&all);
        let mut mem = MemoryStore::new();
        let mut plain = Plain::default();
        for s in &steps {
            mem.record_step("sess", s).unwrap();
            plain.record_step("sess", s).unwrap();
            mem.record_step("other", &StepRecord { step_id: "s1".into(), ..s.clone() }).unwrap();
        }
        let known = recorded_lineage(&mut mem, &policy, "sess", entries.iter().chain(&after)).unwrap();
        prop_assert!(known.len() <= all.len());
        prop_assert_eq!(&input(&known), &want);
        let known = recorded_lineage(&mut plain, &policy, "sess", entries.iter().chain(&after)).unwrap();
        prop_assert_eq!(&input(&known), &want);
    }

    /// A summary's trust from only the recorded nodes its lineage reaches
    /// equals its trust with every recorded node known (PostCompact).
    #[test]
    fn summary_trust_through_the_index_equals_every_node_known(
        steps in steps(),
        summary in node(),
        pol in 0..POLICIES.len(),
    ) {
        use mnemo_guardian::decide::TrustResolver;
        let policy = Policy::from_toml(POLICIES[pol]).expect("test policy parses");
        let all: Vec<Provenance> = steps.iter().flat_map(|s| s.provenance.clone()).collect();
        let want = TrustResolver::new(&policy, all.iter()).trust(&summary);
        let mut mem = MemoryStore::new();
        for s in &steps {
            mem.record_step("sess", s).unwrap();
        }
        let known = recorded_lineage_of(&mut mem, &policy, "sess", std::iter::once(&summary)).unwrap();
        prop_assert_eq!(TrustResolver::new(&policy, known.iter()).trust(&summary), want);
    }
}

/// A re-grounding after the region closes the window even when older
/// candidates do not re-ground (the search pages past them).
#[test]
fn the_newest_regrounding_after_the_region_is_found_past_many_candidates() {
    let policy = Policy::default();
    let mut steps = vec![StepRecord {
        seq: 1,
        step_id: "t".into(),
        method: "steps/toolCallResult".into(),
        provenance: vec![Provenance::new("pt", Origin::ToolOutput, None)],
    }];
    steps.push(StepRecord {
        seq: 2,
        step_id: "u".into(),
        method: "steps/userMessage".into(),
        provenance: vec![Provenance::new("pu", Origin::UserInput, None)],
    });
    // 40 user messages that also carry tool output: candidates that do not re-ground.
    for i in 0..40u64 {
        steps.push(StepRecord {
            seq: 3 + i,
            step_id: format!("m{i}"),
            method: "steps/userMessage".into(),
            provenance: vec![
                Provenance::new(format!("pm{i}"), Origin::UserInput, None),
                Provenance::new(format!("tm{i}"), Origin::ToolOutput, None),
            ],
        });
    }
    let pc = PreCompact {
        entries_to_compact: vec!["t".into()],
        pre_compact_provenance_summary: None,
        triggered_by: Trigger::SizeThreshold,
        estimated_input_tokens: None,
        target_summary_tokens: None,
    };
    let mut mem = MemoryStore::new();
    for s in &steps {
        mem.record_step("sess", s).unwrap();
    }
    let got = decide_pre_compact(&mut mem, &policy, "sess", &pc).unwrap();
    assert_eq!(got, decide_pre_compact_full_scan(&policy, &steps, &pc));
    assert!(got.decision.allowed(), "{:?}", got.decision);
    assert_eq!(
        got.decision.policy_data["aarm"]["last_regrounding_step_id"],
        "u"
    );
}
