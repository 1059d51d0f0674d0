//! Trust resolution and the compaction decision (pure).
//!
//! This is the in-process API that mnemo's own bank compaction calls, and the
//! core of `steps/preCompact`: [`check_compaction`] / [`decide_compaction`].

use crate::model::{Origin, Provenance, Trigger, Verdict};
use crate::policy::{OnUntrusted, Policy, TriggerRule, Trust};
use serde_json::{Value, json};
/// Maps keyed by provenance ids, hashed with foldhash (random seed per process).
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// One context entry (a step) and the provenance of what it carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryProvenance {
    /// The step id (ACS `request_id` of the step, a transcript line id, a bank entry id…).
    pub step_id: String,
    /// Provenance of the data the step brought into context (may be empty).
    pub provenance: Vec<Provenance>,
}

impl EntryProvenance {
    /// An entry with a single provenance node.
    pub fn single(step_id: impl Into<String>, prov: Provenance) -> Self {
        EntryProvenance {
            step_id: step_id.into(),
            provenance: vec![prov],
        }
    }
}

/// Everything a compaction decision looks at.
#[derive(Debug, Clone, Copy)]
pub struct CompactionInput<'a> {
    /// The entries to be compacted, oldest first.
    pub entries: &'a [EntryProvenance],
    /// Entries recorded after them (only re-grounding is read from these).
    pub after: &'a [EntryProvenance],
    /// Further provenance nodes known in the session (to resolve lineage).
    pub known: &'a [Provenance],
    /// What triggered the compaction.
    pub trigger: Trigger,
    /// Size of the region, if known.
    pub estimated_input_tokens: Option<u64>,
    /// Size of the summary, if known.
    pub target_summary_tokens: Option<u64>,
}

/// A compaction decision, ready to be put in an ACS result.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// allow or deny.
    pub verdict: Verdict,
    /// Human-readable explanation; a deny always says what ends it.
    pub reasoning: String,
    /// Machine-readable codes.
    pub reason_codes: Vec<String>,
    /// Provenance ids that drove the verdict.
    pub cited_provenance_ids: Vec<String>,
    /// `{ "aarm": {...}, "exit": {...} }`.
    pub policy_data: Value,
    /// Rule id for `policy_references`.
    pub rule_id: &'static str,
}

impl Decision {
    /// Whether compaction may proceed.
    pub fn allowed(&self) -> bool {
        self.verdict != Verdict::Deny
    }
}

/// Resolves trust of provenance nodes under a policy, following lineage.
pub struct TrustResolver<'a> {
    policy: &'a Policy,
    pending: Vec<&'a Provenance>,
    nodes: Option<HashMap<&'a str, &'a Provenance>>,
    memo: HashMap<String, Trust>,
}

impl<'a> TrustResolver<'a> {
    /// A resolver over the given nodes (later nodes with the same id win).
    pub fn new(policy: &'a Policy, nodes: impl IntoIterator<Item = &'a Provenance>) -> Self {
        // The id index is built on the first lineage look-up only.
        TrustResolver {
            policy,
            pending: nodes.into_iter().collect(),
            nodes: None,
            memo: HashMap::default(),
        }
    }

    /// Effective trust of a node: fixed by origin (+ source), or the minimum of its lineage.
    pub fn trust(&mut self, p: &Provenance) -> Trust {
        self.resolve(p, 0)
    }

    /// Trust of a lineage id.
    pub fn trust_of_id(&mut self, id: &str) -> Trust {
        self.resolve_id(id, 0)
    }

    fn resolve(&mut self, p: &Provenance, depth: usize) -> Trust {
        if let Some(t) = self.policy.fixed_trust(p.origin, p.source_id.as_deref()) {
            return t;
        }
        let mut t = Trust::Trusted;
        for id in &p.derived_from {
            t = t.min(self.resolve_id(id, depth + 1));
            if t == Trust::Untrusted {
                break;
            }
        }
        t
    }

    fn resolve_id(&mut self, id: &str, depth: usize) -> Trust {
        if let Some(t) = self.memo.get(id) {
            return *t;
        }
        // Cycles and absurd depths resolve conservatively.
        if depth > 256 {
            return Trust::Untrusted;
        }
        self.memo.insert(id.to_string(), Trust::Untrusted);
        let pending = &self.pending;
        let nodes = self.nodes.get_or_insert_with(|| {
            pending
                .iter()
                .map(|p| (p.provenance_id.as_str(), *p))
                .collect()
        });
        let t = match nodes.get(id).copied() {
            Some(node) => self.resolve(node, depth),
            None => self.policy.unknown_lineage,
        };
        self.memo.insert(id.to_string(), t);
        t
    }
}

/// Provenance and step ids of [`worst_pending_entry`] start with this.
pub const PENDING: &str = "mnemo:pending";

/// The most restrictive entry a host could still append to a region that
/// was read while the host was writing it (Claude Code queues transcript
/// lines and appends them on a timer): one entry carrying, for every
/// origin, a node without a source id whose lineage is unknown, a node of
/// every lineage-classified origin whose lineage cannot be followed (a
/// cycle, which resolves untrusted like a chain too deep to follow), and,
/// for every untrusted `[[trust.source]]` rule, a node with a source id
/// the rule matches. An entry is untrusted when one of its nodes is, so
/// this one is untrusted under `policy` whenever any entry could be; and a
/// later entry can only add taint or re-ground. So when a decision with
/// this entry appended last is still an allow, no line still to come can
/// turn the allow into a deny.
///
/// `None` when some untrusted source rule matches none of the source ids
/// tried (it is shadowed by an earlier rule for those): then nothing is
/// proven and the caller must wait for the lines instead.
pub fn worst_pending_entry(policy: &Policy) -> Option<EntryProvenance> {
    let unknown = format!("{PENDING}:unknown-lineage");
    let mut nodes = Vec::new();
    for o in Origin::ALL {
        nodes.push(Provenance {
            provenance_id: format!("{PENDING}:{}", o.as_str()),
            origin: o,
            source_id: None,
            derived_from: vec![unknown.clone()],
        });
        if policy.fixed_trust(o, None).is_none() {
            let id = format!("{PENDING}:{}:cycle", o.as_str());
            nodes.push(Provenance {
                provenance_id: id.clone(),
                origin: o,
                source_id: None,
                derived_from: vec![id],
            });
        }
    }
    for (i, rule) in policy.sources.iter().enumerate() {
        if rule.trust != Trust::Untrusted {
            continue;
        }
        // The glob's shortest instance, and one with a run no other rule
        // is likely to name.
        let sid = ["", "mnemo-pending"]
            .into_iter()
            .map(|run| rule.source_id.replace('*', run).replace('?', "x"))
            .find(|sid| policy.fixed_trust(rule.origin, Some(sid)) == Some(Trust::Untrusted))?;
        nodes.push(Provenance {
            provenance_id: format!("{PENDING}:source:{i}"),
            origin: rule.origin,
            source_id: Some(sid),
            derived_from: vec![unknown.clone()],
        });
    }
    Some(EntryProvenance {
        step_id: format!("{PENDING}:entry"),
        provenance: nodes,
    })
}

/// Decides whether `entries` (oldest first) may be compacted, with nothing
/// recorded after them and no extra lineage: the simple in-process API.
pub fn check_compaction(
    policy: &Policy,
    entries: &[EntryProvenance],
    trigger: Trigger,
) -> Decision {
    decide_compaction(
        policy,
        &CompactionInput {
            entries,
            after: &[],
            known: &[],
            trigger,
            estimated_input_tokens: None,
            target_summary_tokens: None,
        },
    )
}

fn origins_list(o: &[Origin]) -> String {
    o.iter().map(|o| o.as_str()).collect::<Vec<_>>().join(", ")
}

fn exit_text(policy: &Policy) -> String {
    let mut ways = Vec::new();
    if !policy.regrounding.is_empty() {
        ways.push(format!(
            "a re-grounding from a trusted origin ({})",
            origins_list(&policy.regrounding)
        ));
    }
    if policy.manual_override {
        ways.push("a compaction the user asks for (trigger manual: operator override)".to_string());
    }
    ways.join(", or ")
}

fn exit_data(policy: &Policy) -> Value {
    json!({
        "regrounding_origins": policy.regrounding.iter().map(|o| o.as_str()).collect::<Vec<_>>(),
        "manual_override": policy.manual_override,
        "how": exit_text(policy),
    })
}

/// Whether an entry re-grounds the session: it carries provenance, all of
/// it trusted, and at least one node of a re-grounding origin.
pub fn entry_regrounds(
    policy: &Policy,
    resolver: &mut TrustResolver<'_>,
    entry: &EntryProvenance,
) -> bool {
    !entry.provenance.is_empty()
        && entry
            .provenance
            .iter()
            .all(|p| resolver.trust(p) == Trust::Trusted)
        && entry
            .provenance
            .iter()
            .any(|p| policy.regrounding.contains(&p.origin))
}

/// Decides a compaction: trigger rule, magnitude rule, then cumulative taint
/// since the last re-grounding (AARM). A deny always names what ends it.
/// Lineage ids resolve against `known`, then the entries, then `after`
/// (a later node with the same id wins).
pub fn decide_compaction(policy: &Policy, input: &CompactionInput<'_>) -> Decision {
    let resolver = TrustResolver::new(
        policy,
        input
            .known
            .iter()
            .chain(input.entries.iter().flat_map(|e| e.provenance.iter()))
            .chain(input.after.iter().flat_map(|e| e.provenance.iter())),
    );
    decide_compaction_with(policy, input, resolver)
}

/// [`decide_compaction`] with lineage resolved by `resolver` instead of
/// the input's nodes: for a caller that has looked up, from an index, the
/// node each lineage id resolves to (`input.known` is then unused).
pub fn decide_compaction_with<'a>(
    policy: &'a Policy,
    input: &CompactionInput<'_>,
    mut resolver: TrustResolver<'a>,
) -> Decision {
    let manual_ok = input.trigger == Trigger::Manual && policy.manual_override;
    let trigger_rule = policy
        .triggers
        .get(&input.trigger)
        .copied()
        .unwrap_or(TriggerRule::Policy);
    if trigger_rule == TriggerRule::Deny {
        let others: Vec<&str> = policy
            .triggers
            .iter()
            .filter(|(_, r)| **r != TriggerRule::Deny)
            .map(|(t, _)| t.as_str())
            .collect();
        return Decision {
            verdict: Verdict::Deny,
            reasoning: format!(
                "Policy denies compaction triggered by {}. This ends when compaction is triggered another way ({}).",
                input.trigger.as_str(),
                others.join(", ")
            ),
            reason_codes: vec!["trigger_denied".into()],
            cited_provenance_ids: Vec::new(),
            policy_data: json!({"trigger": input.trigger.as_str(), "exit": {"triggers": others}}),
            rule_id: "compaction.triggers",
        };
    }
    if trigger_rule == TriggerRule::Allow {
        return Decision {
            verdict: Verdict::Allow,
            reasoning: format!(
                "Policy allows every compaction triggered by {}.",
                input.trigger.as_str()
            ),
            reason_codes: vec!["trigger_allowed".into()],
            cited_provenance_ids: Vec::new(),
            policy_data: json!({"trigger": input.trigger.as_str()}),
            rule_id: "compaction.triggers",
        };
    }

    // Magnitude.
    if let (Some(max), Some(inp), Some(target)) = (
        policy.max_compression_ratio,
        input.estimated_input_tokens,
        input.target_summary_tokens,
    ) {
        let exceeded = inp > target.saturating_mul(max);
        if exceeded && !manual_ok {
            let needed = inp.div_ceil(max);
            let mut how = format!("a target_summary_tokens of at least {needed}");
            if policy.manual_override {
                how.push_str(", or a compaction the user asks for (trigger manual)");
            }
            return Decision {
                verdict: Verdict::Deny,
                reasoning: format!(
                    "Compaction of {inp} tokens into {target} exceeds the policy's maximum ratio of {max}:1. This ends with {how}."
                ),
                reason_codes: vec!["compaction_ratio_exceeded".into()],
                cited_provenance_ids: Vec::new(),
                policy_data: json!({
                    "magnitude": {"estimated_input_tokens": inp, "target_summary_tokens": target, "max_ratio": max},
                    "exit": {"min_target_summary_tokens": needed, "manual_override": policy.manual_override, "how": how},
                }),
                rule_id: "compaction.max_compression_ratio",
            };
        }
    }

    // Cumulative taint since the last re-grounding.
    let mut window_start: Option<usize> = None; // index into entries
    let mut window_ids: Vec<&str> = Vec::new();
    let mut window_seen: std::collections::HashSet<&str, foldhash::fast::RandomState> =
        std::collections::HashSet::default();
    let mut untrusted_total = 0usize;
    // Untrusted entries since the last re-grounding (the open window).
    let mut untrusted_open = 0usize;
    let mut last_reground: Option<&str> = None;
    let mut regrounded_after_taint = false;
    let all = input
        .entries
        .iter()
        .map(|e| (e, true))
        .chain(input.after.iter().map(|e| (e, false)));
    for (idx, (entry, in_region)) in all.enumerate() {
        if entry.provenance.is_empty() {
            continue;
        }
        let regrounds = entry_regrounds(policy, &mut resolver, entry);
        let all_trusted = regrounds
            || entry
                .provenance
                .iter()
                .all(|p| resolver.trust(p) == Trust::Trusted);
        if regrounds {
            if window_start.is_some() {
                regrounded_after_taint = true;
            }
            last_reground = Some(entry.step_id.as_str());
            window_start = None;
            untrusted_open = 0;
            window_ids.clear();
            window_seen.clear();
            continue;
        }
        if in_region && !all_trusted {
            untrusted_total += 1;
            untrusted_open += 1;
            if window_start.is_none() {
                window_start = Some(idx);
            }
            for p in &entry.provenance {
                if resolver.trust(p) == Trust::Untrusted
                    && window_seen.insert(p.provenance_id.as_str())
                {
                    window_ids.push(p.provenance_id.as_str());
                }
            }
        }
    }

    let region_len = input.entries.len();
    let mut aarm = json!({
        "untrusted_entries": untrusted_total,
        "untrusted_since_regrounding": untrusted_open,
        "regrounding_since": window_start.is_none(),
        "last_regrounding_step_id": last_reground,
        "entries": region_len,
    });
    let Some(start) = window_start else {
        let reasoning = if untrusted_total == 0 {
            "No policy-untrusted content in the entries to compact.".to_string()
        } else {
            format!(
                "Untrusted content in the entries to compact was followed by a re-grounding (step {}); the summary carries its lineage.",
                last_reground.unwrap_or("?")
            )
        };
        let mut codes = vec!["aarm_no_open_taint".to_string()];
        if regrounded_after_taint || untrusted_total > 0 {
            codes.push("aarm_regrounded".into());
        }
        return Decision {
            verdict: Verdict::Allow,
            reasoning,
            reason_codes: codes,
            cited_provenance_ids: Vec::new(),
            policy_data: json!({ "aarm": aarm }),
            rule_id: "compaction.on_untrusted",
        };
    };
    let earliest = &input.entries[start];
    let earliest_prov = window_ids.first().map(|s| s.to_string());
    if let Value::Object(m) = &mut aarm {
        m.insert("earliest_untrusted_step_id".into(), json!(earliest.step_id));
        m.insert(
            "earliest_untrusted_provenance_id".into(),
            json!(earliest_prov),
        );
        m.insert("lookback_distance".into(), json!(region_len - start));
    }
    let small = matches!(
        (policy.allow_untrusted_below_tokens, input.estimated_input_tokens),
        (Some(limit), Some(n)) if n <= limit
    );
    let (verdict, codes, reasoning, rule) = if policy.on_untrusted == OnUntrusted::Allow {
        (
            Verdict::Allow,
            vec![
                "aarm_cumulative_taint".to_string(),
                "policy_allows_untrusted".into(),
            ],
            format!(
                "Untrusted content entered at step {} after the last re-grounding; policy allows compaction and the summary carries the taint in its lineage.",
                earliest.step_id
            ),
            "compaction.on_untrusted",
        )
    } else if manual_ok {
        (
            Verdict::Allow,
            vec![
                "aarm_cumulative_taint".to_string(),
                "manual_override".into(),
            ],
            format!(
                "Untrusted content entered at step {}, but the user asked for this compaction (manual override); the summary carries the taint in its lineage.",
                earliest.step_id
            ),
            "compaction.manual_override",
        )
    } else if small {
        (
            Verdict::Allow,
            vec![
                "aarm_cumulative_taint".to_string(),
                "below_token_threshold".into(),
            ],
            format!(
                "Untrusted content entered at step {}, but the compaction is below the policy's token threshold.",
                earliest.step_id
            ),
            "compaction.allow_untrusted_below_tokens",
        )
    } else {
        (
            Verdict::Deny,
            vec!["aarm_cumulative_taint".to_string()],
            format!(
                "Compaction would fold policy-untrusted content (earliest at step {}, {} untrusted entr{} since the last re-grounding) into an agent_generated summary. This ends with {}.",
                earliest.step_id,
                untrusted_open,
                if untrusted_open == 1 { "y" } else { "ies" },
                exit_text(policy)
            ),
            "compaction.on_untrusted",
        )
    };
    let mut data = json!({ "aarm": aarm });
    if verdict == Verdict::Deny
        && let Value::Object(m) = &mut data
    {
        m.insert("exit".into(), exit_data(policy));
    }
    Decision {
        verdict,
        reasoning,
        reason_codes: codes,
        cited_provenance_ids: window_ids.into_iter().map(str::to_string).collect(),
        policy_data: data,
        rule_id: rule,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(step: &str, id: &str, o: Origin) -> EntryProvenance {
        EntryProvenance::single(step, Provenance::new(id, o, None))
    }

    #[test]
    fn trusted_only_is_allowed() {
        let p = Policy::default();
        let d = check_compaction(
            &p,
            &[
                e("s1", "p1", Origin::UserInput),
                e("s2", "p2", Origin::System),
            ],
            Trigger::SizeThreshold,
        );
        assert_eq!(d.verdict, Verdict::Allow);
    }

    #[test]
    fn untrusted_denies_and_names_the_exit() {
        let p = Policy::default();
        let entries = [
            e("s1", "p1", Origin::UserInput),
            e("s2", "p2", Origin::ToolOutput),
            e("s3", "p3", Origin::Retrieved),
        ];
        let d = check_compaction(&p, &entries, Trigger::SizeThreshold);
        assert_eq!(d.verdict, Verdict::Deny);
        assert_eq!(d.cited_provenance_ids, vec!["p2", "p3"]);
        assert!(d.reasoning.contains("re-grounding"));
        assert!(d.reasoning.contains("manual"));
        assert_eq!(d.policy_data["aarm"]["earliest_untrusted_step_id"], "s2");
        assert_eq!(d.policy_data["aarm"]["lookback_distance"], 2);
        // Way out 1: manual override.
        assert_eq!(
            check_compaction(&p, &entries, Trigger::Manual).verdict,
            Verdict::Allow
        );
        // Way out 2: re-grounding.
        let mut more = entries.to_vec();
        more.push(e("s4", "p4", Origin::UserInput));
        assert_eq!(
            check_compaction(&p, &more, Trigger::SizeThreshold).verdict,
            Verdict::Allow
        );
    }

    #[test]
    fn the_deny_counts_untrusted_entries_since_the_last_regrounding() {
        let p = Policy::default();
        let entries = [
            e("s1", "p1", Origin::ToolOutput),
            e("s2", "p2", Origin::Retrieved),
            e("s3", "p3", Origin::UserInput),
            e("s4", "p4", Origin::ToolOutput),
        ];
        let d = check_compaction(&p, &entries, Trigger::SizeThreshold);
        assert_eq!(d.verdict, Verdict::Deny);
        assert!(
            d.reasoning
                .contains("1 untrusted entry since the last re-grounding"),
            "{}",
            d.reasoning
        );
        assert_eq!(d.policy_data["aarm"]["untrusted_entries"], 3);
        assert_eq!(d.policy_data["aarm"]["untrusted_since_regrounding"], 1);
        assert_eq!(d.cited_provenance_ids, ["p4"]);
    }

    #[test]
    fn agent_generated_takes_min_of_lineage() {
        let p = Policy::default();
        let mut a = Provenance::new("a1", Origin::AgentGenerated, None);
        a.derived_from = vec!["t1".into()];
        let known = [Provenance::new("t1", Origin::ToolOutput, None)];
        let entries = [EntryProvenance::single("s1", a.clone())];
        let input = CompactionInput {
            entries: &entries,
            after: &[],
            known: &known,
            trigger: Trigger::SizeThreshold,
            estimated_input_tokens: None,
            target_summary_tokens: None,
        };
        assert_eq!(decide_compaction(&p, &input).verdict, Verdict::Deny);
        a.derived_from.clear();
        assert_eq!(
            check_compaction(
                &p,
                &[EntryProvenance::single("s1", a)],
                Trigger::SizeThreshold
            )
            .verdict,
            Verdict::Allow
        );
    }

    #[test]
    fn magnitude_and_triggers() {
        let p = Policy::from_toml("[compaction]\nmax_compression_ratio = 10\n[compaction.triggers]\nagent_initiated = \"deny\"\n")
            .unwrap_or_default();
        let entries = [e("s1", "p1", Origin::UserInput)];
        let mut input = CompactionInput {
            entries: &entries,
            after: &[],
            known: &[],
            trigger: Trigger::SizeThreshold,
            estimated_input_tokens: Some(1000),
            target_summary_tokens: Some(50),
        };
        let d = decide_compaction(&p, &input);
        assert_eq!(d.verdict, Verdict::Deny);
        assert_eq!(d.policy_data["exit"]["min_target_summary_tokens"], 100);
        input.target_summary_tokens = Some(100);
        assert_eq!(decide_compaction(&p, &input).verdict, Verdict::Allow);
        input.trigger = Trigger::AgentInitiated;
        assert_eq!(
            decide_compaction(&p, &input).reason_codes,
            vec!["trigger_denied"]
        );
    }

    fn untrusted_under(p: &Policy, e: &EntryProvenance) -> bool {
        let mut r = TrustResolver::new(p, e.provenance.iter());
        e.provenance.iter().any(|n| r.trust(n) == Trust::Untrusted)
    }

    fn with_worst(p: &Policy, trigger: Trigger) -> Verdict {
        let w = worst_pending_entry(p).unwrap_or_else(|| panic!("a worst case"));
        check_compaction(p, &[e("s1", "p1", Origin::UserInput), w], trigger).verdict
    }

    #[test]
    fn the_worst_pending_entry_flips_what_a_pending_line_could_flip() {
        // default policy: a manual compaction stands whatever comes (manual
        // override), an auto one does not
        let p = Policy::default();
        assert!(untrusted_under(
            &p,
            &worst_pending_entry(&p).unwrap_or_else(|| panic!())
        ));
        assert_eq!(with_worst(&p, Trigger::Manual), Verdict::Allow);
        assert_eq!(with_worst(&p, Trigger::SizeThreshold), Verdict::Deny);
        let no_override = Policy::from_toml("[compaction]\nmanual_override = false\n")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(with_worst(&no_override, Trigger::Manual), Verdict::Deny);
        let allow = Policy::from_toml("[compaction]\non_untrusted = \"allow\"\n")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(with_worst(&allow, Trigger::SizeThreshold), Verdict::Allow);
        let auto_allowed = Policy::from_toml("[compaction.triggers]\nsize_threshold = \"allow\"\n")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            with_worst(&auto_allowed, Trigger::SizeThreshold),
            Verdict::Allow
        );
    }

    #[test]
    fn the_worst_pending_entry_is_untrusted_when_only_a_source_rule_is() {
        // every origin trusted, the lineage fixed too: only the source rule
        // can make a pending line untrusted
        let mut toml = String::from("[trust]\nunknown_lineage = \"trusted\"\n");
        for o in Origin::ALL {
            toml.push_str(&format!("{} = \"trusted\"\n", o.as_str()));
        }
        let all_trusted = Policy::from_toml(&toml).unwrap_or_else(|e| panic!("{e}"));
        let w = worst_pending_entry(&all_trusted).unwrap_or_else(|| panic!());
        assert!(!untrusted_under(&all_trusted, &w));
        assert_eq!(
            with_worst(&all_trusted, Trigger::SizeThreshold),
            Verdict::Allow
        );
        toml.push_str(
            "[[trust.source]]\norigin = \"tool_output\"\nsource_id = \"https://*.example/?\"\ntrust = \"untrusted\"\n",
        );
        let one_rule = Policy::from_toml(&toml).unwrap_or_else(|e| panic!("{e}"));
        let w = worst_pending_entry(&one_rule).unwrap_or_else(|| panic!());
        assert!(untrusted_under(&one_rule, &w));
        assert_eq!(with_worst(&one_rule, Trigger::SizeThreshold), Verdict::Deny);
    }

    #[test]
    fn a_shadowed_untrusted_source_rule_proves_nothing() {
        // `b*` trusted first: of the instances of `*b` tried, "b" matches
        // `b*` (trusted), "mnemo-pendingb" does not (untrusted)
        let found = Policy::from_toml(
            "[[trust.source]]\norigin = \"tool_output\"\nsource_id = \"b*\"\ntrust = \"trusted\"\n[[trust.source]]\norigin = \"tool_output\"\nsource_id = \"*b\"\ntrust = \"untrusted\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let w = worst_pending_entry(&found).unwrap_or_else(|| panic!());
        assert!(
            w.provenance
                .iter()
                .any(|n| n.source_id.as_deref() == Some("mnemo-pendingb"))
        );
        // `*` trusted first hides every instance: no proof
        let hidden = Policy::from_toml(
            "[[trust.source]]\norigin = \"tool_output\"\nsource_id = \"*\"\ntrust = \"trusted\"\n[[trust.source]]\norigin = \"tool_output\"\nsource_id = \"*b\"\ntrust = \"untrusted\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(worst_pending_entry(&hidden).is_none());
    }
}
