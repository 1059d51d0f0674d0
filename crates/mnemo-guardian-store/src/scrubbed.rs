//! The scrubber at the session store's edge: [`Scrubbed`] wraps any
//! [`SessionStore`] so that no string reaches it unscrubbed.
//!
//! Free text that the Guardian only keeps (a provenance node's `source_id`:
//! a tool name, a URL, a path) is scrubbed before it is handed on, so
//! `https://host/?access_token=ghp_…` is kept as
//! `https://host/?access_token=[REDACTED:github-pat]`. Identifiers that the
//! Guardian matches exactly later (session, request and step ids, nonces,
//! provenance ids and their lineage, compacted entries, method names, the
//! chain's canonical text) cannot be rewritten without breaking replay
//! checks and lineage, so a secret in one of them is refused: the write
//! fails with [`SecretRefused`] (a store error, which the Guardian answers
//! as an error) and nothing is kept. When the scrubber's rules cannot be
//! loaded every write that needs them is refused (fail closed).
//!
//! Most strings never need the scrubber: it finds a secret only where one
//! of its rules' keywords occurs, so a string without any (a UUID, a
//! method name, most chain entries) is checked by a keyword scan alone
//! ([`crate::keywords`]) and the scrubber is built, once per process, only
//! for a string that holds a keyword. Every string is still checked on its
//! own, exactly as before.

use crate::keywords::may_hold_secret;
use mnemo_guardian::chain::Hash;
use mnemo_guardian::model::{Origin, Provenance};
use mnemo_guardian::store::{
    CompactionRecord, SessionHandshake, SessionStore, StepRecord, StoreError,
};
use mnemo_scrub::Scrubber;

/// A string that looked like a secret and was not stored.
#[derive(Debug, thiserror::Error)]
#[error(
    "refused to store {field}: it looks like it contains a secret ({rules}); identifiers are kept verbatim, so send one without it"
)]
pub struct SecretRefused {
    /// What the string was (`session id`, `request id`, …).
    pub field: &'static str,
    /// The rules that fired, comma-separated.
    pub rules: String,
}

/// A [`SessionStore`] whose every write passes the scrubber first.
#[derive(Debug)]
pub struct Scrubbed<S> {
    inner: S,
    /// The last session id that passed [`refuse`]: a request names its
    /// session in three or four writes, and the check's answer for a string
    /// never changes within a process, so it is asked once per new id.
    clean_session: String,
}

impl<S> Scrubbed<S> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> Self {
        Scrubbed {
            inner,
            clean_session: String::new(),
        }
    }

    /// [`refuse`] for a session id, remembering the last one that passed.
    fn refuse_session(&mut self, session: &str) -> Result<(), StoreError> {
        if session == self.clean_session && !session.is_empty() {
            return Ok(());
        }
        refuse("a session id", session)?;
        session.clone_into(&mut self.clean_session);
        Ok(())
    }
    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.inner
    }
    /// The wrapped store, mutably (reads only: writes there bypass the scrubber).
    pub fn inner_mut(&mut self) -> &mut S {
        &mut self.inner
    }
}

/// The built-in rules that can find something in `text` (a URL source id
/// builds two rules, not the whole set; same findings).
fn scrubber(text: &str) -> Result<&'static Scrubber, StoreError> {
    Scrubber::default_rules_for(text).map_err(|e| StoreError::Backend(Box::new(e)))
}

/// Refuses `text` when the scrubber finds anything in it.
fn refuse(field: &'static str, text: &str) -> Result<(), StoreError> {
    if !may_hold_secret(text) {
        return Ok(());
    }
    let found = scrubber(text)?.find(text);
    if found.is_empty() {
        return Ok(());
    }
    let mut rules: Vec<String> = found.into_iter().map(|f| f.rule).collect();
    rules.sort();
    rules.dedup();
    Err(StoreError::Backend(Box::new(SecretRefused {
        field,
        rules: rules.join(", "),
    })))
}

/// The step with its free text scrubbed and its identifiers checked;
/// `None` when nothing in it needed rewriting (the step is kept as given).
/// A source id repeats across a step's nodes (a tool name, a URL fetched
/// many times, the host's own source): each distinct one is scrubbed and
/// checked once, with the same answer.
fn clean_step(step: &StepRecord) -> Result<Option<StepRecord>, StoreError> {
    refuse("a step id", &step.step_id)?;
    refuse("a method name", &step.method)?;
    let mut seen: std::collections::HashMap<&str, Option<String>> =
        std::collections::HashMap::new();
    let mut out: Option<StepRecord> = None;
    for (i, p) in step.provenance.iter().enumerate() {
        refuse("a provenance id", &p.provenance_id)?;
        for d in &p.derived_from {
            refuse("a provenance id in derived_from", d)?;
        }
        let Some(src) = p.source_id.as_deref() else {
            continue;
        };
        let scrubbed = match seen.get(src) {
            Some(s) => s.clone(),
            None => {
                let s = clean_source(src)?;
                seen.insert(src, s.clone());
                s
            }
        };
        if let Some(text) = scrubbed {
            let o = out.get_or_insert_with(|| step.clone());
            o.provenance[i].source_id = Some(text);
        }
    }
    Ok(out)
}

/// A source id scrubbed (`Some`: rewritten) and then checked: refused when
/// the scrubber still finds something in it.
fn clean_source(src: &str) -> Result<Option<String>, StoreError> {
    let mut text = None;
    if may_hold_secret(src) {
        let s = scrubber(src)?.scrub(src);
        if !s.redactions.is_empty() {
            text = Some(s.text);
        }
    }
    refuse(
        "a source_id (after scrubbing)",
        text.as_deref().unwrap_or(src),
    )?;
    Ok(text)
}

/// A chain entry's canonical text split around its `request_hash` value,
/// the 64 hex digits of a SHA-256 the Guardian computed: what is on either
/// side is checked, each part on its own; the digits are not. They are no
/// client's text, and random hex holds a rule keyword in about one entry in
/// fifty (`eaa`, `acca`), which then built the scrubber (~150 k
/// instructions) to find nothing, or could have refused the entry on a hash
/// that happened to look like a key. The member is found by its
/// `,"request_hash":"` prefix: in canonical JSON every `"` inside a string
/// is escaped (`\"`), so that prefix, a comma directly before a quote,
/// only occurs between members. A text without it is checked whole.
fn without_request_hash(canonical: &str) -> (&str, &str) {
    const MEMBER: &str = ",\"request_hash\":\"";
    if let Some(i) = canonical.find(MEMBER) {
        let start = i + MEMBER.len();
        let end = start + 64;
        if let (Some(hex), Some(rest)) = (canonical.get(start..end), canonical.get(end..))
            && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
            && rest.starts_with('"')
            && let Some(head) = canonical.get(..start)
        {
            return (head, rest);
        }
    }
    (canonical, "")
}

impl<S: SessionStore> SessionStore for Scrubbed<S> {
    fn begin(&mut self) -> Result<(), StoreError> {
        self.inner.begin()
    }
    fn commit(&mut self) -> Result<(), StoreError> {
        self.inner.commit()
    }
    fn rollback(&mut self) -> Result<(), StoreError> {
        self.inner.rollback()
    }
    fn lock_sessions(&mut self, sessions: &[&str]) -> Result<(), StoreError> {
        self.inner.lock_sessions(sessions)
    }
    fn expect_marks(
        &mut self,
        session: &str,
        request_ids: &[&str],
        nonces: &[&str],
    ) -> Result<(), StoreError> {
        // A look-up writes nothing; the marks themselves are checked.
        self.inner.expect_marks(session, request_ids, nonces)
    }
    fn wants_marks_ahead(&self) -> bool {
        self.inner.wants_marks_ahead()
    }
    fn another(&self) -> Option<Result<Box<dyn SessionStore + Send>, StoreError>> {
        // The other handle is scrubbed too.
        let other = self.inner.another()?;
        Some(other.map(|s| Box::new(Scrubbed::new(s)) as Box<dyn SessionStore + Send>))
    }
    fn take_stale(&mut self) -> bool {
        self.inner.take_stale()
    }
    fn handshake(&mut self, session: &str) -> Result<Option<SessionHandshake>, StoreError> {
        self.inner.handshake(session)
    }
    fn set_handshake(&mut self, session: &str, hs: &SessionHandshake) -> Result<(), StoreError> {
        self.refuse_session(session)?;
        refuse("an ACS version", &hs.version)?;
        for m in hs.methods.iter().flatten() {
            refuse("a method name", m)?;
        }
        self.inner.set_handshake(session, hs)
    }
    fn mark_request(
        &mut self,
        session: &str,
        request_id: &str,
        at_ms: i64,
    ) -> Result<bool, StoreError> {
        self.refuse_session(session)?;
        refuse("a request id", request_id)?;
        self.inner.mark_request(session, request_id, at_ms)
    }
    fn mark_nonce(&mut self, session: &str, nonce: &str, at_ms: i64) -> Result<bool, StoreError> {
        self.refuse_session(session)?;
        refuse("a nonce", nonce)?;
        self.inner.mark_nonce(session, nonce, at_ms)
    }
    fn prune_requests(&mut self, before_ms: i64) -> Result<(), StoreError> {
        self.inner.prune_requests(before_ms)
    }
    fn record_step(&mut self, session: &str, step: &StepRecord) -> Result<(), StoreError> {
        self.refuse_session(session)?;
        match clean_step(step)? {
            Some(clean) => self.inner.record_step(session, &clean),
            None => self.inner.record_step(session, step),
        }
    }
    fn count_turn_call(
        &mut self,
        session: &str,
        turn: &str,
        budget: &str,
    ) -> Result<Option<u64>, StoreError> {
        self.refuse_session(session)?;
        refuse("a turn id", turn)?;
        self.inner.count_turn_call(session, turn, budget)
    }
    fn steps(&mut self, session: &str) -> Result<Vec<StepRecord>, StoreError> {
        self.inner.steps(session)
    }
    fn steps_by_id(&mut self, session: &str, ids: &[&str]) -> Result<Vec<StepRecord>, StoreError> {
        self.inner.steps_by_id(session, ids)
    }
    fn steps_with_origin(
        &mut self,
        session: &str,
        origins: &[Origin],
        after: u64,
        before: Option<u64>,
        limit: usize,
    ) -> Result<Vec<StepRecord>, StoreError> {
        self.inner
            .steps_with_origin(session, origins, after, before, limit)
    }
    fn latest_nodes(
        &mut self,
        session: &str,
        ids: &[&str],
    ) -> Result<Vec<(u64, Provenance)>, StoreError> {
        self.inner.latest_nodes(session, ids)
    }
    fn has_step(&mut self, session: &str, step_id: &str, method: &str) -> Result<bool, StoreError> {
        self.inner.has_step(session, step_id, method)
    }
    fn chain_head(&mut self, session: &str) -> Result<Option<(u64, Hash)>, StoreError> {
        self.inner.chain_head(session)
    }
    fn append_chain(
        &mut self,
        session: &str,
        seq: u64,
        canonical: &str,
        hash: &Hash,
    ) -> Result<(), StoreError> {
        self.refuse_session(session)?;
        let (head, tail) = without_request_hash(canonical);
        refuse("a chain entry", head)?;
        refuse("a chain entry", tail)?;
        self.inner.append_chain(session, seq, canonical, hash)
    }
    fn record_compaction(
        &mut self,
        session: &str,
        rec: &CompactionRecord,
    ) -> Result<(), StoreError> {
        self.refuse_session(session)?;
        refuse("a step id", &rec.step_id)?;
        for e in &rec.entries {
            refuse("an entry id in entries_to_compact", e)?;
        }
        self.inner.record_compaction(session, rec)
    }
    fn last_compaction(&mut self, session: &str) -> Result<Option<CompactionRecord>, StoreError> {
        self.inner.last_compaction(session)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemo_guardian::store::MemoryStore;

    const PAT: &str = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8";

    #[test]
    fn source_ids_are_scrubbed_and_ids_with_secrets_refused() {
        let mut s = Scrubbed::new(MemoryStore::new());
        let url = format!("https://api.example.com/repos?access_token={PAT}");
        let step = StepRecord {
            seq: 1,
            step_id: "req-1".into(),
            method: "steps/toolResult".into(),
            provenance: vec![Provenance::new("p1", Origin::ToolOutput, Some(&url))],
        };
        s.record_step("sess-1", &step)
            .unwrap_or_else(|e| panic!("{e}"));
        let kept = s.steps("sess-1").unwrap_or_else(|e| panic!("{e}"));
        let src = kept[0].provenance[0].source_id.clone().unwrap_or_default();
        assert!(!src.contains(PAT), "{src}");
        assert!(
            src.starts_with("https://api.example.com/repos?access_token=[REDACTED"),
            "{src}"
        );

        let err = s
            .mark_request("sess-1", PAT, 0)
            .err()
            .map(|e| e.to_string());
        assert!(
            err.as_deref().is_some_and(|e| e.contains("request id")),
            "{err:?}"
        );
        let err = s.mark_request(PAT, "r", 0).err().map(|e| e.to_string());
        assert!(
            err.as_deref().is_some_and(|e| e.contains("session id")),
            "{err:?}"
        );
        // Ordinary ids pass.
        assert!(
            s.mark_request("0b6e3c1e-4a59-4c1f-9e57-2f4a8d7c9b10", "req-2", 0)
                .is_ok()
        );
    }

    /// A chain entry's own request hash is not scanned; everything around
    /// it is, and a text not shaped like an entry is scanned whole.
    #[test]
    fn chain_entries_are_checked_around_their_request_hash() {
        let entry = |hash: &str, step: &str| {
            format!(
                "{{\"entry_id\":\"1\",\"request_hash\":\"{hash}\",\"step_id\":\"{step}\",\"step_type\":\"steps/userMessage\",\"timestamp\":\"2026-09-19T10:00:00Z\"}}"
            )
        };
        // "eaa" and "acca" are rule keywords; random hex holds them.
        let hex = format!("eaa{}acca", "0".repeat(57));
        let text = entry(&hex, "r-1");
        let (head, tail) = without_request_hash(&text);
        assert!(head.ends_with("\"request_hash\":\""), "{head}");
        assert!(tail.starts_with("\",\"step_id\""), "{tail}");
        assert_eq!(format!("{head}{hex}{tail}"), text);
        assert!(!may_hold_secret(head) && !may_hold_secret(tail));
        let mut s = Scrubbed::new(MemoryStore::new());
        assert!(s.append_chain("sess-1", 1, &text, &[0; 32]).is_ok());
        // A secret anywhere else is still refused.
        let secret = entry(&"0".repeat(64), PAT);
        let err = s.append_chain("sess-1", 2, &secret, &[0; 32]).err();
        assert!(err.is_some_and(|e| e.to_string().contains("chain entry")));
        // Not 64 hex digits, or no such member: scanned whole.
        for odd in [entry(PAT, "r-2"), format!("{{\"x\":\"{PAT}\"}}")] {
            assert_eq!(without_request_hash(&odd), (odd.as_str(), ""));
            assert!(
                s.append_chain("sess-1", 2, &odd, &[0; 32]).is_err(),
                "{odd}"
            );
        }
        // The member spelled inside a client string is escaped there, so
        // it is not taken for the real one.
        let spelled = format!(
            "{{\"entry_id\":\"1\",\"step_id\":\"\\\",\\\"request_hash\\\":\\\"{} {PAT}\"}}",
            "0".repeat(64)
        );
        assert_eq!(without_request_hash(&spelled), (spelled.as_str(), ""));
        assert!(s.append_chain("sess-1", 2, &spelled, &[0; 32]).is_err());
        assert_eq!(s.inner().chain_entries("sess-1").len(), 1);
    }

    /// A source id that repeats across a step's nodes is scrubbed on every
    /// node it names, and a clean one is kept as given on every node.
    #[test]
    fn repeated_source_ids_are_scrubbed_on_every_node() {
        let mut s = Scrubbed::new(MemoryStore::new());
        let url = format!("https://api.example.com/repos?access_token={PAT}");
        let plain = "https://example.com/page";
        let provenance: Vec<Provenance> = (0..12)
            .map(|i| {
                let src = match i % 3 {
                    0 => url.as_str(),
                    1 => plain,
                    _ => "Bash",
                };
                Provenance::new(format!("p{i}"), Origin::ToolOutput, Some(src))
            })
            .collect();
        let step = StepRecord {
            seq: 1,
            step_id: "req-1".into(),
            method: "steps/preCompact".into(),
            provenance,
        };
        s.record_step("sess-1", &step)
            .unwrap_or_else(|e| panic!("{e}"));
        let kept = s.steps("sess-1").unwrap_or_else(|e| panic!("{e}"));
        for (i, p) in kept[0].provenance.iter().enumerate() {
            let src = p.source_id.as_deref().unwrap_or_default();
            match i % 3 {
                0 => assert!(
                    src.starts_with("https://api.example.com/repos?access_token=[REDACTED")
                        && !src.contains(PAT),
                    "{i}: {src}"
                ),
                1 => assert_eq!(src, plain),
                _ => assert_eq!(src, "Bash"),
            }
            assert_eq!(p.provenance_id, format!("p{i}"));
        }
        // only clean sources: kept exactly as given
        let clean = StepRecord {
            seq: 2,
            step_id: "req-2".into(),
            method: "steps/preCompact".into(),
            provenance: (0..4)
                .map(|i| Provenance::new(format!("q{i}"), Origin::ToolOutput, Some(plain)))
                .collect(),
        };
        s.record_step("sess-1", &clean)
            .unwrap_or_else(|e| panic!("{e}"));
        let kept = s.steps("sess-1").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(kept[1], clean);
    }

    /// The remembered clean session id skips nothing else: a session id
    /// with a secret is refused by every write, before and after a clean
    /// one passed, and a clean one is not refused after a secret one.
    #[test]
    fn the_remembered_session_skips_only_itself() {
        let mut s = Scrubbed::new(MemoryStore::new());
        let clean = "0b6e3c1e-4a59-4c1f-9e57-2f4a8d7c9b10";
        let step = |seq| StepRecord {
            seq,
            step_id: format!("req-{seq}"),
            method: "steps/userMessage".into(),
            provenance: Vec::new(),
        };
        for round in 0..2 {
            assert!(s.mark_request(clean, &format!("r{round}"), 0).is_ok());
            assert!(s.record_step(clean, &step(round + 1)).is_ok());
            for err in [
                s.mark_request(PAT, "r", 0).err(),
                s.record_step(PAT, &step(1)).err(),
                s.append_chain(PAT, 1, "{}", &[0u8; 32]).err(),
                s.mark_nonce(PAT, "n", 0).err(),
            ] {
                let err = err.map(|e| e.to_string());
                assert!(
                    err.as_deref().is_some_and(|e| e.contains("session id")),
                    "{err:?}"
                );
            }
        }
        assert!(
            s.inner_mut()
                .steps(PAT)
                .unwrap_or_else(|e| panic!("{e}"))
                .is_empty()
        );
        assert_eq!(s.inner_mut().steps(clean).map(|v| v.len()).ok(), Some(2));
    }

    /// The keyword pre-check lets no secret through: a secret-looking id
    /// among a thousand clean ones is refused wherever it comes, and an id
    /// that only holds a keyword goes to the scrubber and passes.
    #[test]
    fn a_secret_looking_id_is_still_refused_after_the_pre_check() {
        use mnemo_acs::model::Verdict;
        let mut s = Scrubbed::new(MemoryStore::new());
        let clean: Vec<String> = (0..1000)
            .map(|i| format!("00000000-0000-4000-8000-{i:012}"))
            .collect();
        let mut entries = clean.clone();
        entries.insert(500, format!("tool-{PAT}"));
        let rec = |entries: Vec<String>| CompactionRecord {
            step_id: "req-1".into(),
            entries,
            verdict: Verdict::Deny,
            reasoning: None,
            reason_codes: Vec::new(),
        };
        let err = s
            .record_compaction("sess-1", &rec(entries))
            .err()
            .map(|e| e.to_string());
        assert!(
            err.as_deref()
                .is_some_and(|e| e.contains("entries_to_compact") && e.contains("github-pat")),
            "{err:?}"
        );
        assert!(
            s.last_compaction("sess-1")
                .unwrap_or_else(|e| panic!("{e}"))
                .is_none()
        );
        // a hex id holding a keyword ("eaa") is checked by the scrubber, and passes
        let mut ok = clean.clone();
        ok.push("0b6e3c1e-4eaa-4c1f-9e57-2f4a8d7c9b10".into());
        assert!(s.record_compaction("sess-1", &rec(ok)).is_ok());

        let secret_step = |step_id: &str, method: &str, pid: &str, from: &str| StepRecord {
            seq: 2,
            step_id: step_id.into(),
            method: method.into(),
            provenance: vec![Provenance {
                provenance_id: pid.into(),
                origin: Origin::ToolOutput,
                source_id: Some("Bash".into()),
                derived_from: vec![from.into()],
            }],
        };
        for (step, field) in [
            (secret_step(PAT, "steps/toolResult", "p", "q"), "step id"),
            (secret_step("r", PAT, "p", "q"), "method name"),
            (
                secret_step("r", "steps/toolResult", PAT, "q"),
                "provenance id",
            ),
            (
                secret_step("r", "steps/toolResult", "p", PAT),
                "derived_from",
            ),
        ] {
            let err = s.record_step("sess-1", &step).err().map(|e| e.to_string());
            assert!(
                err.as_deref().is_some_and(|e| e.contains(field)),
                "{field}: {err:?}"
            );
        }
        let err = s
            .append_chain("sess-1", 1, &format!("{{\"nonce\":\"{PAT}\"}}"), &[0u8; 32])
            .err()
            .map(|e| e.to_string());
        assert!(
            err.as_deref().is_some_and(|e| e.contains("chain entry")),
            "{err:?}"
        );
        assert!(
            s.chain_head("sess-1")
                .unwrap_or_else(|e| panic!("{e}"))
                .is_none()
        );
        let err = s.mark_nonce("sess-1", PAT, 0).err().map(|e| e.to_string());
        assert!(
            err.as_deref().is_some_and(|e| e.contains("nonce")),
            "{err:?}"
        );
        let err = s
            .count_turn_call("sess-1", &format!("turn-{PAT}"), "b")
            .err()
            .map(|e| e.to_string());
        assert!(
            err.as_deref().is_some_and(|e| e.contains("turn id")),
            "{err:?}"
        );
        assert!(
            s.steps("sess-1")
                .unwrap_or_else(|e| panic!("{e}"))
                .is_empty()
        );
    }
}
