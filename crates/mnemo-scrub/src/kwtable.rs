//! The keyword automaton as a flat transition table: the states of
//! aho-corasick's DFA over the keywords (ASCII case-insensitive, standard
//! overlapping semantics), all those reachable from its unanchored start,
//! match states numbered first, ids premultiplied by the stride, bytes mapped
//! to classes (a class per keyword byte, ASCII case folded, one for all other
//! bytes), and per match state the keywords it reports, in the DFA's order.
//!
//! Pure construction, shared by the crate (a user's rules) and `build.rs`
//! (the built-in rules: the table is built at compile time and included in
//! the binary, so a process using them builds no automaton).

use aho_corasick::automaton::{Automaton, StateID};
use aho_corasick::{Anchored, MatchKind, StartKind, dfa::DFA};

/// Entries of the transition table: a power of two, so that a masked index
/// needs no bounds check (the built-in keywords need ~180 K).
pub(crate) const TABLE_LEN: usize = 1 << 18;

/// A built table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Parts {
    /// The unanchored start state (premultiplied id).
    pub(crate) start: u32,
    /// `TABLE_LEN` entries: state id + class -> next state id.
    pub(crate) trans: Vec<u32>,
    /// byte -> class
    pub(crate) classes: [u8; 256],
    /// ids below this are match states
    pub(crate) match_lim: u32,
    /// log2 of the stride
    pub(crate) shift: u32,
    /// match state number `i` reports `pids[match_at[i]..match_at[i + 1]]`
    pub(crate) match_at: Vec<u32>,
    /// keyword ids reported by the match states, in the DFA's order
    pub(crate) pids: Vec<u32>,
    /// keyword id -> its length in bytes
    pub(crate) lens: Vec<u32>,
    /// the longest keyword's length
    pub(crate) max_len: usize,
}

/// The table of `keywords`; `None` when the DFA cannot be built or its
/// states do not fit [`TABLE_LEN`].
pub(crate) fn build(keywords: &[String]) -> Option<Parts> {
    let dfa = DFA::builder()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::Standard)
        .start_kind(StartKind::Unanchored)
        .prefilter(false)
        .build(keywords)
        .ok()?;
    let mut classes = [0u8; 256];
    let mut reps: Vec<u8> = Vec::new();
    let mut n = 1usize;
    for k in keywords {
        for b in k.bytes().map(|b| b.to_ascii_lowercase()) {
            if classes[usize::from(b)] == 0 {
                let c = u8::try_from(n).ok()?;
                classes[usize::from(b)] = c;
                classes[usize::from(b.to_ascii_uppercase())] = c;
                reps.push(b);
                n += 1;
            }
        }
    }
    // class 0: a byte of no keyword (if there is one)
    let other = (0..=255u8).find(|&b| classes[usize::from(b)] == 0);
    let stride = n.next_power_of_two();
    let shift = stride.trailing_zeros();
    let start = dfa.start_state(Anchored::No).ok()?;
    // the DFA's state ids are small integers (offsets into its table):
    // a flat map from them, `UNSEEN` where not reached
    const UNSEEN: u32 = u32::MAX;
    let mut slot: Vec<u32> = Vec::new();
    let mark = |slot: &mut Vec<u32>, s: StateID| -> bool {
        let i = s.as_usize();
        if slot.len() <= i {
            slot.resize(i + 1, UNSEEN);
        }
        let fresh = slot.get(i) == Some(&UNSEEN);
        if let Some(v) = slot.get_mut(i) {
            *v = 0;
        }
        fresh
    };
    let mut order = vec![start];
    mark(&mut slot, start);
    let mut i = 0;
    while let Some(&s) = order.get(i) {
        i += 1;
        for b in other.into_iter().chain(reps.iter().copied()) {
            let t = dfa.next_state(Anchored::No, s, b);
            if mark(&mut slot, t) {
                order.push(t);
            }
        }
        if order.len().saturating_mul(stride) > TABLE_LEN {
            return None;
        }
    }
    let is_match = |s: StateID| dfa.is_special(s) && dfa.is_match(s);
    let theirs: Vec<StateID> = order
        .iter()
        .copied()
        .filter(|&s| is_match(s))
        .chain(order.iter().copied().filter(|&s| !is_match(s)))
        .collect();
    let n_match = theirs.iter().filter(|&&s| is_match(s)).count();
    for (i, &s) in theirs.iter().enumerate() {
        *slot.get_mut(s.as_usize())? = u32::try_from(i << shift).ok()?;
    }
    let id = |s: StateID| slot.get(s.as_usize()).copied().filter(|&v| v != UNSEEN);
    let mut trans = vec![0u32; TABLE_LEN];
    for (i, &s) in theirs.iter().enumerate() {
        let row = i << shift;
        for (c, b) in other
            .map(|b| (0usize, b))
            .into_iter()
            .chain(reps.iter().enumerate().map(|(c, &b)| (c + 1, b)))
        {
            let t = dfa.next_state(Anchored::No, s, b);
            *trans.get_mut(row + c)? = id(t)?;
        }
    }
    let mut match_at = vec![0u32];
    let mut pids = Vec::new();
    for &s in theirs.iter().take(n_match) {
        for m in 0..dfa.match_len(s) {
            pids.push(u32::try_from(dfa.match_pattern(s, m).as_usize()).ok()?);
        }
        match_at.push(u32::try_from(pids.len()).ok()?);
    }
    let lens = keywords
        .iter()
        .map(|k| u32::try_from(k.len()).ok())
        .collect::<Option<Vec<u32>>>()?;
    Some(Parts {
        start: id(start)?,
        trans,
        classes,
        match_lim: u32::try_from(n_match << shift).ok()?,
        shift,
        match_at,
        pids,
        lens,
        max_len: dfa.max_pattern_len(),
    })
}
