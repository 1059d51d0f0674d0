//! The `steps/preCompact` decision over a session's recorded steps, read
//! through the store's indexes instead of every step (pure: the store is
//! behind [`SessionStore`]).
//!
//! A decision needs, of the session: the recorded steps of the region (by
//! step id), the newest re-grounding step after the region (only
//! re-grounding is read from later steps), and the node that each lineage
//! id reachable from those resolves to. [`decide_pre_compact`] reads just
//! these with [`SessionStore::steps_by_id`], [`SessionStore::steps_with_origin`]
//! and [`SessionStore::latest_nodes`], so its cost grows with the region and
//! its lineage, not with the session. [`decide_pre_compact_full_scan`] is
//! the same decision over every step (the reference the property tests
//! compare it with, and what the Guardian did before the indexes).
//!
//! Why the two agree: the full scan resolves a lineage id against the
//! nodes of every step, then the region's entries, then the steps after
//! the region, a later node winning. So an id resolves to its latest node
//! when that node is after the region; otherwise to its last occurrence in
//! the region's entries; otherwise to its latest node. And the steps after
//! the region only matter through the newest one that re-grounds: each
//! re-grounding closes the taint window, the last one names
//! `last_regrounding_step_id`, and the others change nothing. (Lineage
//! deeper than the resolver's depth bound of 256 can resolve differently
//! depending on which node is asked first; both paths then answer
//! untrusted or not in the same conservative way only for shallower
//! graphs.)

use crate::decide::{
    CompactionInput, Decision, EntryProvenance, TrustResolver, decide_compaction,
    decide_compaction_with, entry_regrounds,
};
use crate::model::{Origin, PreCompact, Provenance};
use crate::policy::Policy;
use crate::store::{SessionStore, StepRecord, StoreError};
/// Maps and sets keyed by step and provenance ids, hashed with foldhash
/// (random seed per process).
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
type HashSet<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;

/// How many re-grounding candidates are read per look-up.
const CANDIDATES: usize = 16;

/// A decision and the entries to compact that no recorded step has.
#[derive(Debug, Clone, PartialEq)]
pub struct PreCompactDecision {
    /// The decision.
    pub decision: Decision,
    /// Entry ids never recorded in the session, in request order.
    pub unrecorded: Vec<String>,
}

/// The region (recorded steps, ordered by step number) and the entries the
/// decision looks at: the region's, then the summary's or unrecorded ones.
fn region_entries(
    policy: &Policy,
    pc: &PreCompact,
    by_id: &HashMap<&str, &StepRecord>,
) -> (Option<u64>, Vec<EntryProvenance>, Vec<String>) {
    let mut region: Vec<&StepRecord> = Vec::new();
    let mut unrecorded = Vec::new();
    for id in &pc.entries_to_compact {
        match by_id.get(id.as_str()) {
            Some(s) if !region.iter().any(|r| r.seq == s.seq) => region.push(s),
            Some(_) => {}
            None => unrecorded.push(id.clone()),
        }
    }
    region.sort_by_key(|s| s.seq);
    let last_seq = region.last().map(|s| s.seq);
    let mut entries: Vec<EntryProvenance> = region
        .iter()
        .map(|s| EntryProvenance {
            step_id: s.step_id.clone(),
            provenance: s.provenance.clone(),
        })
        .collect();
    if let Some(summary) = &pc.pre_compact_provenance_summary {
        // The summary's origin facts, placed last so that a re-grounding
        // can only come from a recorded step after the region.
        for o in summary.origins_seen.iter().flatten() {
            let step = summary
                .earliest_step_id_by_origin
                .as_ref()
                .and_then(|m| m.get(o.as_str()).cloned())
                .unwrap_or_else(|| format!("summary:{}", o.as_str()));
            if *o != Origin::AgentGenerated && policy.regrounding.contains(o) {
                continue; // cannot know whether it came after the untrusted entries
            }
            entries.push(EntryProvenance::single(
                step,
                Provenance::new(format!("summary:{}", o.as_str()), *o, None),
            ));
        }
    } else if !unrecorded.is_empty() {
        for id in &unrecorded {
            entries.push(EntryProvenance::single(
                id.clone(),
                Provenance::new(
                    format!("unrecorded:{id}"),
                    Origin::External,
                    Some("unrecorded-step"),
                ),
            ));
        }
    }
    (last_seq, entries, unrecorded)
}

fn input<'a>(
    pc: &PreCompact,
    entries: &'a [EntryProvenance],
    after: &'a [EntryProvenance],
    known: &'a [Provenance],
) -> CompactionInput<'a> {
    CompactionInput {
        entries,
        after,
        known,
        trigger: pc.triggered_by,
        estimated_input_tokens: pc.estimated_input_tokens,
        target_summary_tokens: pc.target_summary_tokens,
    }
}

/// The decision over every recorded step of the session (`steps`, in
/// order): the reference for [`decide_pre_compact`].
pub fn decide_pre_compact_full_scan(
    policy: &Policy,
    steps: &[StepRecord],
    pc: &PreCompact,
) -> PreCompactDecision {
    let by_id: HashMap<&str, &StepRecord> = steps.iter().map(|s| (s.step_id.as_str(), s)).collect();
    let (last_seq, entries, unrecorded) = region_entries(policy, pc, &by_id);
    let after: Vec<EntryProvenance> = match last_seq {
        Some(seq) => steps
            .iter()
            .filter(|s| s.seq > seq)
            .map(|s| EntryProvenance {
                step_id: s.step_id.clone(),
                provenance: s.provenance.clone(),
            })
            .collect(),
        None => Vec::new(),
    };
    let known: Vec<Provenance> = steps
        .iter()
        .flat_map(|s| s.provenance.iter().cloned())
        .collect();
    PreCompactDecision {
        decision: decide_compaction(policy, &input(pc, &entries, &after, &known)),
        unrecorded,
    }
}

/// The nodes lineage ids resolve to, looked up as they are reached.
struct Lineage<'p> {
    policy: &'p Policy,
    /// The region's last step number (`None`: no recorded region).
    last_seq: Option<u64>,
    /// Last occurrence of each id in the region's entries.
    in_entries: HashMap<String, Provenance>,
    /// Resolved ids and their nodes; `None`: never recorded.
    resolved: HashMap<String, Option<Provenance>>,
}

impl<'p> Lineage<'p> {
    fn new(policy: &'p Policy, last_seq: Option<u64>, entries: &[EntryProvenance]) -> Self {
        let mut in_entries = HashMap::default();
        for p in entries.iter().flat_map(|e| e.provenance.iter()) {
            in_entries.insert(p.provenance_id.clone(), p.clone());
        }
        Lineage {
            policy,
            last_seq,
            in_entries,
            resolved: HashMap::default(),
        }
    }

    /// Resolves every lineage id reachable from `roots` (through nodes
    /// whose trust is not fixed by origin), one store look-up per level.
    fn reach<'r, S: SessionStore + ?Sized>(
        &mut self,
        store: &mut S,
        session: &str,
        roots: impl IntoIterator<Item = &'r Provenance>,
    ) -> Result<(), StoreError> {
        let mut frontier: Vec<String> = Vec::new();
        let mut queued: HashSet<String> = HashSet::default();
        let policy = self.policy;
        let mut push = |p: &Provenance,
                        frontier: &mut Vec<String>,
                        resolved: &HashMap<String, Option<Provenance>>| {
            if policy
                .fixed_trust(p.origin, p.source_id.as_deref())
                .is_some()
            {
                return;
            }
            for id in &p.derived_from {
                if !resolved.contains_key(id) && queued.insert(id.clone()) {
                    frontier.push(id.clone());
                }
            }
        };
        for p in roots {
            push(p, &mut frontier, &self.resolved);
        }
        while !frontier.is_empty() {
            let ids: Vec<&str> = frontier.iter().map(String::as_str).collect();
            let latest: HashMap<String, (u64, Provenance)> = store
                .latest_nodes(session, &ids)?
                .into_iter()
                .map(|(seq, p)| (p.provenance_id.clone(), (seq, p)))
                .collect();
            let mut next = Vec::new();
            for id in std::mem::take(&mut frontier) {
                let l = latest.get(&id);
                let node = match l {
                    Some((seq, p)) if self.last_seq.is_some_and(|last| *seq > last) => {
                        Some(p.clone())
                    }
                    _ => match self.in_entries.get(&id) {
                        Some(p) => Some(p.clone()),
                        None => l.map(|(_, p)| p.clone()),
                    },
                };
                if let Some(n) = &node {
                    push(n, &mut next, &self.resolved);
                }
                self.resolved.insert(id, node);
            }
            frontier = next;
        }
        Ok(())
    }

    fn resolver(&self) -> TrustResolver<'_> {
        TrustResolver::new(self.policy, self.resolved.values().flatten())
    }
}

/// The recorded nodes that the lineage of `entries` reaches, for a
/// decision whose region comes from a host's transcript
/// ([`crate::decide::decide_compaction`] with these as `known`): the
/// same decision as with every recorded node as `known`, reading only
/// these. An id resolves to the entries' own node when they carry one
/// (they win over recorded nodes), else to the latest recorded node
/// ([`SessionStore::latest_nodes`], one look-up per lineage level); a node
/// whose trust is fixed by its origin is not followed.
pub fn recorded_lineage<'e, S: SessionStore + ?Sized>(
    store: &mut S,
    policy: &Policy,
    session: &str,
    entries: impl Iterator<Item = &'e EntryProvenance> + Clone,
) -> Result<Vec<Provenance>, StoreError> {
    // Most regions hold no lineage at all: nothing to look up, no index of
    // the entries' nodes to build.
    let follows = |p: &Provenance| {
        !p.derived_from.is_empty()
            && policy
                .fixed_trust(p.origin, p.source_id.as_deref())
                .is_none()
    };
    if !entries
        .clone()
        .flat_map(|e| e.provenance.iter())
        .any(follows)
    {
        return Ok(Vec::new());
    }
    // Sized ahead: a flattened iterator gives no size hint, and growing
    // the map rehashed it a dozen times on a 1,000-entry region.
    let n = entries.clone().map(|e| e.provenance.len()).sum();
    let mut local: HashMap<&str, &Provenance> =
        HashMap::with_capacity_and_hasher(n, Default::default());
    local.extend(
        entries
            .clone()
            .flat_map(|e| e.provenance.iter())
            .map(|p| (p.provenance_id.as_str(), p)),
    );
    reach_recorded(
        store,
        policy,
        session,
        entries.flat_map(|e| e.provenance.iter()),
        &local,
    )
}

/// The recorded nodes that the lineage of `roots` reaches, every lineage
/// id resolving to its latest recorded node: the same trust for `roots` as
/// with every recorded node known ([`TrustResolver`] over all steps).
pub fn recorded_lineage_of<'r, S: SessionStore + ?Sized>(
    store: &mut S,
    policy: &Policy,
    session: &str,
    roots: impl Iterator<Item = &'r Provenance>,
) -> Result<Vec<Provenance>, StoreError> {
    reach_recorded(store, policy, session, roots, &HashMap::default())
}

/// [`recorded_lineage_of`] with `local` nodes (not recorded yet) followed
/// before the store is asked.
pub fn recorded_lineage_with<'r, S: SessionStore + ?Sized>(
    store: &mut S,
    policy: &Policy,
    session: &str,
    roots: impl Iterator<Item = &'r Provenance>,
    local: impl Iterator<Item = &'r Provenance>,
) -> Result<Vec<Provenance>, StoreError> {
    let local: HashMap<&str, &Provenance> = local.map(|p| (p.provenance_id.as_str(), p)).collect();
    reach_recorded(store, policy, session, roots, &local)
}

fn reach_recorded<'r, S: SessionStore + ?Sized>(
    store: &mut S,
    policy: &Policy,
    session: &str,
    roots: impl Iterator<Item = &'r Provenance>,
    local: &HashMap<&str, &Provenance>,
) -> Result<Vec<Provenance>, StoreError> {
    let mut queued: HashSet<String> = HashSet::default();
    let mut frontier: Vec<String> = Vec::new();
    let push = |p: &Provenance, frontier: &mut Vec<String>, queued: &mut HashSet<String>| {
        if policy
            .fixed_trust(p.origin, p.source_id.as_deref())
            .is_some()
        {
            return;
        }
        for id in &p.derived_from {
            if queued.insert(id.clone()) {
                frontier.push(id.clone());
            }
        }
    };
    for p in roots {
        push(p, &mut frontier, &mut queued);
    }
    let mut known = Vec::new();
    while !frontier.is_empty() {
        let mut ask: Vec<String> = Vec::new();
        while let Some(id) = frontier.pop() {
            match local.get(id.as_str()) {
                Some(p) => push(p, &mut frontier, &mut queued),
                None => ask.push(id),
            }
        }
        if ask.is_empty() {
            break;
        }
        let ids: Vec<&str> = ask.iter().map(String::as_str).collect();
        for (_, p) in store.latest_nodes(session, &ids)? {
            push(&p, &mut frontier, &mut queued);
            known.push(p);
        }
    }
    Ok(known)
}

/// The decision of [`decide_pre_compact_full_scan`], reading only what it
/// needs through the store's indexes.
pub fn decide_pre_compact<S: SessionStore + ?Sized>(
    store: &mut S,
    policy: &Policy,
    session: &str,
    pc: &PreCompact,
) -> Result<PreCompactDecision, StoreError> {
    let mut ids: Vec<&str> = pc.entries_to_compact.iter().map(String::as_str).collect();
    ids.sort_unstable();
    ids.dedup();
    let found = store.steps_by_id(session, &ids)?;
    let by_id: HashMap<&str, &StepRecord> = found.iter().map(|s| (s.step_id.as_str(), s)).collect();
    let (last_seq, entries, unrecorded) = region_entries(policy, pc, &by_id);
    let mut lineage = Lineage::new(policy, last_seq, &entries);
    // The newest step after the region that re-grounds, if any.
    let mut after: Vec<EntryProvenance> = Vec::new();
    if let Some(last) = last_seq
        && !policy.regrounding.is_empty()
    {
        let mut before: Option<u64> = None;
        'search: loop {
            let candidates =
                store.steps_with_origin(session, &policy.regrounding, last, before, CANDIDATES)?;
            for c in &candidates {
                lineage.reach(store, session, c.provenance.iter())?;
                let entry = EntryProvenance {
                    step_id: c.step_id.clone(),
                    provenance: c.provenance.clone(),
                };
                if entry_regrounds(policy, &mut lineage.resolver(), &entry) {
                    after.push(entry);
                    break 'search;
                }
            }
            match candidates.last() {
                Some(oldest) if candidates.len() == CANDIDATES => before = Some(oldest.seq),
                _ => break,
            }
        }
    }
    lineage.reach(
        store,
        session,
        entries.iter().flat_map(|e| e.provenance.iter()),
    )?;
    let decision = decide_compaction_with(
        policy,
        &input(pc, &entries, &after, &[]),
        lineage.resolver(),
    );
    Ok(PreCompactDecision {
        decision,
        unrecorded,
    })
}
