//! Bounded memory for long transcript regions (issue #11, pure).
//!
//! A region (everything since the last compaction) can be gigabytes: a
//! session that never compacted, or hours of autonomous work after one.
//! Holding one [`EntryProvenance`] per line costs about 300 bytes a line
//! (1.77 GB of peak memory for a 2 GB transcript), so once the mapper holds
//! [`Limits::collapse_at`] entries, the [`Collapser`] folds runs of them
//! into single *collapsed* entries, keeping intact every entry the decision
//! reads:
//!
//! * the last re-grounding entry (it ends the taint window and is named in
//!   the decision),
//! * the first untrusted entry after it (it opens the window: the earliest
//!   untrusted step a deny names),
//! * entries whose trust follows lineage (`derived_from`, a previous
//!   compaction's summary), whose trust the session store may resolve,
//! * the last [`Limits::keep_tail`] entries.
//!
//! Everything between them folds: a run before the last re-grounding,
//! a run of trusted entries between it and the first untrusted one, a run
//! after that. A collapsed entry carries the distinct provenance nodes of
//! what it folds (by origin and source id, keeping the first node's id; over
//! [`MAX_NODES`], one node per origin and trust), so it is untrusted exactly
//! when one of its entries was, it re-grounds only when all of them were
//! trusted and one re-grounded, and the lineage a summary derives from keeps
//! every origin and source. So the verdict, the earliest untrusted step,
//! the last re-grounding step and the way out are those of the whole region;
//! what changes are the counts (a collapsed entry counts once) and the cited
//! provenance ids (one per source). The hook says on stderr how many
//! entries were folded.

use mnemo_acs::model::{Origin, Provenance};
use mnemo_guardian::decide::{EntryProvenance, TrustResolver};
use mnemo_guardian::policy::{Policy, Trust};
use std::collections::HashMap;

/// Step ids of collapsed entries start with this.
pub const COLLAPSED: &str = "mnemo:collapsed:";
/// Most distinct provenance nodes one collapsed entry carries.
pub const MAX_NODES: usize = 256;

/// When and how much to collapse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Collapse once the mapper holds this many entries.
    pub collapse_at: usize,
    /// The most recent entries never folded.
    pub keep_tail: usize,
}

impl Default for Limits {
    /// 100,000 entries (about 30 MB) before the first collapse; the last
    /// 1,000 stay as they are. Transcripts of ordinary length never collapse.
    fn default() -> Self {
        Limits {
            collapse_at: 100_000,
            keep_tail: 1_000,
        }
    }
}

#[derive(Debug, Clone)]
struct Folded {
    count: usize,
    first: String,
    last: String,
}

/// What the collapser did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Transcript entries folded into collapsed entries.
    pub folded: usize,
    /// Collapses run.
    pub runs: usize,
}

/// Folds runs of entries that the decision does not read one by one.
pub struct Collapser<'p> {
    policy: &'p Policy,
    resolver: TrustResolver<'p>,
    limits: Limits,
    folded: HashMap<String, Folded>,
    stats: Stats,
}

#[derive(Clone, Copy, PartialEq, Eq)]
struct Class {
    untrusted: bool,
    regrounds: bool,
    lineage: bool,
}

impl<'p> Collapser<'p> {
    /// A collapser deciding trust by `policy` (lineage ids resolve as the
    /// policy's `unknown_lineage`; such entries are never folded).
    pub fn new(policy: &'p Policy, limits: Limits) -> Self {
        Collapser {
            policy,
            resolver: TrustResolver::new(policy, std::iter::empty()),
            limits,
            folded: HashMap::new(),
            stats: Stats::default(),
        }
    }

    /// What was folded so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Entries of the transcript that `entries` stand for (a collapsed
    /// entry for all it folded).
    pub fn represented(&self, entries: &[EntryProvenance]) -> usize {
        entries
            .iter()
            .map(|e| self.folded.get(&e.step_id).map_or(1, |f| f.count))
            .sum()
    }

    fn class(&mut self, e: &EntryProvenance) -> Class {
        let mut untrusted = false;
        let mut lineage = false;
        let mut reground_origin = false;
        for p in &e.provenance {
            if !p.derived_from.is_empty() {
                lineage = true;
            }
            if self.resolver.trust(p) != Trust::Trusted {
                untrusted = true;
            }
            if self.policy.regrounding.contains(&p.origin) {
                reground_origin = true;
            }
        }
        Class {
            untrusted,
            regrounds: !e.provenance.is_empty() && !untrusted && reground_origin,
            lineage,
        }
    }

    /// Collapses `entries` (oldest first) when they reach the limit.
    pub fn maybe_collapse(&mut self, entries: &mut Vec<EntryProvenance>) {
        if entries.len() >= self.limits.collapse_at.max(1) {
            self.collapse(entries);
        }
    }

    /// Collapses `entries` now (see the module documentation).
    pub fn collapse(&mut self, entries: &mut Vec<EntryProvenance>) {
        let n = entries.len();
        let classes: Vec<Class> = entries.iter().map(|e| self.class(e)).collect();
        let mut last_reground = None;
        let mut first_untrusted = None;
        for (i, c) in classes.iter().enumerate() {
            if c.regrounds {
                last_reground = Some(i);
                first_untrusted = None;
            } else if c.untrusted && first_untrusted.is_none() {
                first_untrusted = Some(i);
            }
        }
        let tail_from = n.saturating_sub(self.limits.keep_tail);
        let keep = |i: usize| {
            i >= tail_from
                || Some(i) == last_reground
                || Some(i) == first_untrusted
                || classes[i].lineage
                || entries[i].provenance.is_empty()
        };
        let keep: Vec<bool> = (0..n).map(keep).collect();
        let old = std::mem::take(entries);
        let mut run: Vec<EntryProvenance> = Vec::new();
        for (i, e) in old.into_iter().enumerate() {
            if keep[i] {
                self.flush(&mut run, entries);
                entries.push(e);
            } else {
                run.push(e);
            }
        }
        self.flush(&mut run, entries);
        self.stats.runs += 1;
    }

    fn flush(&mut self, run: &mut Vec<EntryProvenance>, out: &mut Vec<EntryProvenance>) {
        match run.len() {
            0 => return,
            1 => {
                out.append(run);
                return;
            }
            _ => {}
        }
        let mut count = 0usize;
        // Transcript entries folded for the first time (an already
        // collapsed entry folded again is counted once, when it was made).
        let mut fresh = 0usize;
        let mut first = String::new();
        let mut last = String::new();
        // Distinct (origin, source) nodes, then one per (origin, trust).
        let mut nodes: Vec<Provenance> = Vec::new();
        let mut by_source: HashMap<(Origin, Option<String>), ()> = HashMap::new();
        let mut by_trust: HashMap<(Origin, Trust), ()> = HashMap::new();
        for e in run.drain(..) {
            let (c, f, l) = match self.folded.remove(&e.step_id) {
                Some(f) => (f.count, f.first, f.last),
                None => {
                    fresh += 1;
                    (1, e.step_id.clone(), e.step_id.clone())
                }
            };
            if count == 0 {
                first = f;
            }
            count += c;
            last = l;
            for p in e.provenance {
                let key = (p.origin, p.source_id.clone());
                if by_source.contains_key(&key) {
                    continue;
                }
                let trust = self.resolver.trust(&p);
                if by_source.len() < MAX_NODES {
                    by_source.insert(key, ());
                    by_trust.insert((p.origin, trust), ());
                    nodes.push(p);
                } else if by_trust.insert((p.origin, trust), ()).is_none() {
                    nodes.push(p);
                }
            }
        }
        let step_id = format!("{COLLAPSED}{count}:{first}..{last}");
        self.stats.folded += fresh;
        self.folded
            .insert(step_id.clone(), Folded { count, first, last });
        out.push(EntryProvenance {
            step_id,
            provenance: nodes,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemo_acs::model::{Trigger, Verdict};
    use mnemo_guardian::decide::check_compaction;

    fn e(step: &str, o: Origin, src: &str) -> EntryProvenance {
        EntryProvenance::single(
            step,
            Provenance {
                provenance_id: format!("{step}#0"),
                origin: o,
                source_id: Some(src.to_string()),
                derived_from: Vec::new(),
            },
        )
    }

    /// A small deterministic generator (no dev-dependency needed).
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    fn random_region(rng: &mut Rng, n: usize) -> Vec<EntryProvenance> {
        (0..n)
            .map(|i| {
                let step = format!("s{i}");
                match rng.below(10) {
                    0 => e(
                        &step,
                        Origin::Retrieved,
                        &format!("https://x{}/", rng.below(5)),
                    ),
                    1 => e(&step, Origin::ToolOutput, "Bash"),
                    2 => e(&step, Origin::UserInput, "claude-code:user"),
                    3 => e(&step, Origin::System, "claude-code:host"),
                    4 => {
                        let mut x = e(&step, Origin::UserInput, "claude-code:user");
                        x.provenance.push(Provenance {
                            provenance_id: format!("{step}#1"),
                            origin: Origin::ToolOutput,
                            source_id: Some("mcp".into()),
                            derived_from: Vec::new(),
                        });
                        x
                    }
                    _ => e(&step, Origin::AgentGenerated, "a"),
                }
            })
            .collect()
    }

    #[test]
    fn collapsing_keeps_verdict_earliest_step_and_regrounding() {
        let policies = [
            Policy::default(),
            Policy::from_toml("[compaction]\nmanual_override = false\n").unwrap(),
        ];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for round in 0..400 {
            let policy = &policies[round % 2];
            let n = 1 + rng.below(300) as usize;
            let region = random_region(&mut rng, n);
            let mut small = region.clone();
            let limits = Limits {
                collapse_at: 4,
                keep_tail: rng.below(4) as usize,
            };
            let mut c = Collapser::new(policy, limits);
            // Collapse as the mapper does: while entries arrive.
            let mut fed = Vec::new();
            for x in small.drain(..) {
                fed.push(x);
                c.maybe_collapse(&mut fed);
            }
            assert_eq!(c.represented(&fed), n, "round {round}");
            assert!(c.stats().folded <= n, "round {round}");
            assert!(fed.len() <= n);
            for trigger in [Trigger::SizeThreshold, Trigger::Manual] {
                let whole = check_compaction(policy, &region, trigger);
                let folded = check_compaction(policy, &fed, trigger);
                assert_eq!(whole.verdict, folded.verdict, "round {round}");
                assert_eq!(whole.rule_id, folded.rule_id, "round {round}");
                assert_eq!(whole.reason_codes, folded.reason_codes, "round {round}");
                for key in ["earliest_untrusted_step_id", "last_regrounding_step_id"] {
                    assert_eq!(
                        whole.policy_data["aarm"][key], folded.policy_data["aarm"][key],
                        "round {round} {key}"
                    );
                }
                if whole.verdict == Verdict::Deny {
                    assert_eq!(whole.policy_data["exit"], folded.policy_data["exit"]);
                    for id in &folded.cited_provenance_ids {
                        assert!(whole.cited_provenance_ids.contains(id), "round {round}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_long_region_stays_small_and_keeps_its_sources() {
        let policy = Policy::default();
        let mut c = Collapser::new(
            &policy,
            Limits {
                collapse_at: 100,
                keep_tail: 10,
            },
        );
        let mut fed = Vec::new();
        for i in 0..100_000 {
            let x = match i % 4 {
                0 => e(&format!("u{i}"), Origin::UserInput, "claude-code:user"),
                1 => e(&format!("t{i}"), Origin::ToolOutput, "Bash"),
                2 => e(
                    &format!("w{i}"),
                    Origin::Retrieved,
                    &format!("https://h{}/", i % 3),
                ),
                _ => e(&format!("a{i}"), Origin::AgentGenerated, "a"),
            };
            fed.push(x);
            c.maybe_collapse(&mut fed);
        }
        assert!(fed.len() < 100, "{}", fed.len());
        assert_eq!(c.represented(&fed), 100_000);
        // Each transcript entry counts once as folded, however often the
        // collapsed entry holding it is folded again; the unfolded ones
        // are what is left as plain entries.
        let plain = fed
            .iter()
            .filter(|e| !e.step_id.starts_with(COLLAPSED))
            .count();
        assert_eq!(c.stats().folded, 100_000 - plain);
        let sources: std::collections::BTreeSet<String> = fed
            .iter()
            .flat_map(|e| e.provenance.iter())
            .filter_map(|p| p.source_id.clone())
            .collect();
        for s in ["Bash", "https://h0/", "https://h1/", "https://h2/"] {
            assert!(sources.contains(s), "{sources:?}");
        }
        // The last re-grounding (u99996) stays, and what follows it.
        let steps: Vec<&str> = fed.iter().map(|e| e.step_id.as_str()).collect();
        assert!(steps.contains(&"u99996"), "{steps:?}");
        assert!(steps.contains(&"t99997"), "{steps:?}");
        assert!(steps[0].starts_with(COLLAPSED), "{steps:?}");
        let d = check_compaction(&policy, &fed, Trigger::SizeThreshold);
        assert_eq!(d.verdict, Verdict::Deny);
        assert_eq!(
            d.policy_data["aarm"]["earliest_untrusted_step_id"],
            "t99997"
        );
    }

    #[test]
    fn node_cap_keeps_one_node_per_origin_and_trust() {
        let policy = Policy::from_toml(
            "[[trust.source]]\norigin = \"retrieved\"\nsource_id = \"https://docs.internal/*\"\ntrust = \"trusted\"\n",
        )
        .unwrap();
        let mut c = Collapser::new(
            &policy,
            Limits {
                collapse_at: 2,
                keep_tail: 0,
            },
        );
        let mut run: Vec<EntryProvenance> = (0..1000)
            .map(|i| {
                let src = if i % 2 == 0 {
                    format!("https://docs.internal/{i}")
                } else {
                    format!("https://evil.example/{i}")
                };
                e(&format!("f{i}"), Origin::Retrieved, &src)
            })
            .collect();
        run.push(e("last", Origin::AgentGenerated, "a"));
        c.collapse(&mut run);
        assert_eq!(run.len(), 3, "folded, first untrusted kept, folded");
        let nodes: usize = run.iter().map(|e| e.provenance.len()).sum();
        assert!(nodes <= MAX_NODES + 4, "{nodes}");
        let mut r = TrustResolver::new(&policy, std::iter::empty());
        let trusts: std::collections::BTreeSet<Trust> = run
            .iter()
            .flat_map(|e| e.provenance.iter())
            .map(|p| r.trust(p))
            .collect();
        assert_eq!(trusts.len(), 2, "both trust classes survive the cap");
    }
}
