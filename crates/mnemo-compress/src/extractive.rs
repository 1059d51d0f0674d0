//! Extractive compression of an agent's own words (SPEC §2: "entries are
//! extractive"). Pure text functions used by [`crate::summary`]:
//!
//! * [`sentences`]: sentences at `.`/`!`/`?` + whitespace and line breaks,
//!   never inside brackets, quotes or backticks, never after `e.g.`.
//! * [`clauses`]: a sentence's top-level clauses (at `; `, `, `, ` — `),
//!   again never inside brackets, quotes or backticks, so that
//!   `{customer_id, as_of}` or `(user_id, key)` stay whole.
//! * [`carries_fact`]: a clause names something concrete (a path, an
//!   identifier, a number, an upper-case name, a `key=value`, a URL) or a
//!   constraint (never, must, only, rather than, …).
//! * [`condense`]: a sentence with its filler clauses dropped and its
//!   leading label (`Gotcha:`, `Heads up:`) removed; the clauses that are
//!   kept are the agent's words, in order, with their own separators.
//!
//! Nothing here shortens a clause: a clause is kept whole or dropped, so a
//! fact is never cut off with `…`.

/// Words that make a clause a constraint worth keeping (the gotcha words).
const CONSTRAINT_WORDS: &[&str] = &[
    "never",
    "must",
    "only",
    "not",
    "no",
    "nothing",
    "without",
    "otherwise",
    "until",
    "unless",
    "instead",
    "rather",
    "cannot",
    "can't",
    "don't",
    "doesn't",
    "won't",
    "always",
    "every",
    "outside",
    "before",
    "after",
    "so",
    "because",
    "breaking",
    "required",
    "requires",
    "blocked",
    "unblocked",
    "unblocks",
    "blocks",
    "depends",
];

/// Labels an agent puts in front of a warning; the entry has its own label.
const LEAD_LABELS: &[&str] = &[
    "note that",
    "gotcha",
    "heads up",
    "heads-up",
    "watch out",
    "note",
    "nb",
    "caveat",
    "careful",
    "warning",
    "beware",
    "important",
    "fyi",
];

/// Openings that say nothing (`So this phase was`, `I also`).
const FILLER_OPENINGS: &[&str] = &[
    "so this phase was ",
    "so this phase ",
    "this phase was ",
    "in this phase ",
    "so ",
    "also, ",
    "i also ",
    "we also ",
    "basically ",
    "overall, ",
];

fn closing(c: char) -> Option<char> {
    match c {
        '(' => Some(')'),
        '[' => Some(']'),
        '{' => Some('}'),
        '<' => Some('>'),
        _ => None,
    }
}

/// Byte positions where `text` is at top level (outside brackets, quotes
/// and backticks); `true` at index i means the char starting at i is.
fn top_level(text: &str) -> Vec<(usize, char, bool)> {
    let mut out = Vec::with_capacity(text.len());
    let mut stack: Vec<char> = Vec::new();
    let mut tick = false;
    let mut prev = ' ';
    for (i, c) in text.char_indices() {
        let top = stack.is_empty() && !tick;
        out.push((i, c, top));
        if c == '`' {
            tick = !tick;
        } else if tick {
        } else if let Some(close) = closing(c) {
            // `<` only opens a placeholder like `<id>`, not `a < b`.
            if c != '<' || !prev.is_whitespace() {
                stack.push(close);
            }
        } else if stack.last() == Some(&c) {
            stack.pop();
        } else if (c == '\'' || c == '"') && !prev.is_alphanumeric() {
            // A quoted literal ('EUR'); an apostrophe (don't) is not.
            stack.push(c);
        }
        prev = c;
        // Never let an unbalanced bracket swallow the rest of the text.
        if stack.len() > 8 {
            stack.clear();
        }
    }
    out
}

/// Splits text into sentences (see the module doc).
pub fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars = top_level(text);
    let mut start = 0;
    for (k, &(i, c, top)) in chars.iter().enumerate() {
        let next = chars.get(k + 1).map(|x| x.1);
        let end = match c {
            '\n' => Some(i),
            '.' | '!' | '?' if top && next.is_none_or(char::is_whitespace) => {
                let head = text[start..=i].to_ascii_lowercase();
                let abbrev = ["e.g.", "i.e.", "etc.", "vs.", "approx.", "cf."]
                    .iter()
                    .any(|a| head.ends_with(a));
                (!abbrev).then_some(i + 1)
            }
            _ => None,
        };
        if let Some(e) = end {
            push_piece(&mut out, &text[start..e]);
            start = e;
        }
    }
    push_piece(&mut out, &text[start..]);
    out
}

fn push_piece(out: &mut Vec<String>, s: &str) {
    let s = s.trim().trim_start_matches(['-', '*', '•']).trim();
    if !s.is_empty() {
        out.push(s.split_whitespace().collect::<Vec<_>>().join(" "));
    }
}

/// One clause and the separator that came before it (empty for the first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clause {
    /// `", "`, `"; "`, `" — "`, or empty.
    pub sep: String,
    /// The clause's words.
    pub text: String,
}

/// Splits a sentence into top-level clauses.
pub fn clauses(sentence: &str) -> Vec<Clause> {
    let mut out = Vec::new();
    let chars = top_level(sentence);
    let mut start = 0;
    let mut sep = String::new();
    let mut k = 0;
    while k < chars.len() {
        let (i, c, top) = chars[k];
        let next = chars.get(k + 1).map(|x| x.1);
        let cut = if !top {
            None
        } else if (c == ';' || c == ',') && next == Some(' ') {
            // Not inside a number (`1,000`): a space follows here anyway.
            Some((i, i + 2, format!("{c} ")))
        } else if c == ' ' && next == Some('—') && chars.get(k + 2).map(|x| x.1) == Some(' ') {
            Some((
                i,
                i + ' '.len_utf8() + '—'.len_utf8() + 1,
                " — ".to_string(),
            ))
        } else {
            None
        };
        if let Some((end, resume, s)) = cut {
            let piece = sentence[start..end].trim();
            if !piece.is_empty() {
                out.push(Clause {
                    sep: std::mem::take(&mut sep),
                    text: piece.to_string(),
                });
            }
            sep = s;
            start = resume;
            while k + 1 < chars.len() && chars[k + 1].0 < resume {
                k += 1;
            }
        }
        k += 1;
    }
    let piece = sentence.get(start..).unwrap_or_default().trim();
    if !piece.is_empty() {
        out.push(Clause {
            sep,
            text: piece.to_string(),
        });
    }
    if let Some(first) = out.first_mut() {
        first.sep.clear();
    }
    out
}

fn is_fact_token(raw: &str) -> bool {
    let t = raw.trim_matches(|c: char| matches!(c, ',' | ';' | '.' | ':' | '!' | '?' | '"'));
    if t.is_empty() {
        return false;
    }
    if t.contains(|c: char| c.is_ascii_digit()) {
        return true;
    }
    if t.contains([
        '/', '_', '=', '@', '{', '}', '(', ')', '<', '>', '`', '\'', '#', '$', '%',
    ]) || t.contains("://")
    {
        return true;
    }
    let inner = &t[t.char_indices().nth(1).map_or(t.len(), |(i, _)| i)..];
    // A dotted or hyphenated name (`analytics.fct_orders`, `infer-t4`, `pt-BR`).
    if inner.contains('.') && !t.ends_with('.') {
        return true;
    }
    // A hyphenated identifier (`inventory-sweeper`, `letsencrypt-prod`).
    if let Some((a, b)) = t.split_once('-')
        && a.len() >= 3
        && b.len() >= 3
    {
        return true;
    }
    let letters: Vec<char> = t.chars().filter(|c| c.is_alphabetic()).collect();
    // An upper-case name (`GIN`, `POST`, `TLS`) or CamelCase (`SearchBox`).
    let upper = letters.iter().filter(|c| c.is_uppercase()).count();
    if letters.len() >= 2 && upper == letters.len() {
        return true;
    }
    if upper >= 2 && t.chars().next().is_some_and(char::is_uppercase) {
        return true;
    }
    if inner.chars().any(char::is_uppercase) && t.chars().next().is_some_and(char::is_lowercase) {
        return true;
    }
    false
}

fn has_constraint(text: &str) -> bool {
    let lower = text.to_lowercase();
    lower
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .any(|w| CONSTRAINT_WORDS.contains(&w))
}

/// True when a clause names something concrete or states a constraint.
pub fn carries_fact(clause: &str) -> bool {
    clause.split_whitespace().any(is_fact_token) || has_constraint(clause)
}

/// True when a sentence opens with a warning label (`Gotcha:`, `Heads up:`).
pub fn is_warning(sentence: &str) -> bool {
    strip_label(sentence).len() != sentence.len()
}

/// Removes a leading warning label (`Gotcha: `, `Heads up: `, `Note — `).
pub fn strip_label(sentence: &str) -> &str {
    let lower = sentence.to_lowercase();
    if lower.starts_with("note that ") {
        return &sentence["note that ".len()..];
    }
    for l in LEAD_LABELS {
        if let Some(rest) = lower.strip_prefix(l) {
            let rest_trim = rest.trim_start_matches([' ', '*']);
            if let Some(after) = rest_trim
                .strip_prefix(':')
                .or_else(|| rest_trim.strip_prefix('—'))
                .or_else(|| rest_trim.strip_prefix(" -"))
            {
                let cut = sentence.len() - after.len();
                return sentence[cut..].trim_start_matches(['*', ' ']);
            }
        }
    }
    sentence
}

fn strip_filler(sentence: &str) -> &str {
    let lower = sentence.to_lowercase();
    for f in FILLER_OPENINGS {
        if lower.starts_with(f) && sentence.len() > f.len() + 12 {
            return &sentence[f.len()..];
        }
    }
    sentence
}

/// A sentence with its label and filler opening removed and only the
/// clauses that carry facts (see the module doc). `None` when nothing in
/// it carries a fact.
pub fn condense(sentence: &str) -> Option<String> {
    let s = strip_filler(strip_label(sentence.trim()));
    // A warning is the gotcha: kept whole.
    if is_warning(sentence.trim()) {
        return Some(s.trim().to_string());
    }
    let cl = clauses(s);
    let keep: Vec<bool> = cl.iter().map(|c| carries_fact(&c.text)).collect();
    if !keep.iter().any(|k| *k) {
        return None;
    }
    let mut out = String::new();
    let mut prev_kept = false;
    for (i, c) in cl.iter().enumerate() {
        // A short item of a list whose neighbour is kept stays with it
        // (`HttpOnly; Secure; SameSite=Lax`).
        let short = c.text.split_whitespace().count() <= 2;
        let next_kept = keep.get(i + 1).copied().unwrap_or(false);
        if keep[i] || (short && (prev_kept || next_kept)) {
            if !out.is_empty() {
                out.push_str(if c.sep.is_empty() { "; " } else { &c.sep });
            }
            out.push_str(&c.text);
            prev_kept = true;
        } else {
            prev_kept = false;
        }
    }
    // The agent's words as written (no re-capitalising: facts stay exact).
    let mut out = out.trim().to_string();
    if !out.ends_with(['.', '!', '?', ')', '`']) {
        out.push('.');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_keep_brackets_and_decimals_whole() {
        let s = sentences(
            "AUC 0.871 on holdout (vs. 0.842). Takes {customer_id, as_of}. See e.g. the docs.",
        );
        assert_eq!(
            s,
            [
                "AUC 0.871 on holdout (vs. 0.842).",
                "Takes {customer_id, as_of}.",
                "See e.g. the docs."
            ]
        );
    }

    #[test]
    fn clauses_split_at_top_level_only() {
        let c = clauses("returns {score, top_factors}, cached 60 s; old route — gone");
        let texts: Vec<&str> = c.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "returns {score, top_factors}",
                "cached 60 s",
                "old route",
                "gone"
            ]
        );
        assert_eq!(c[1].sep, ", ");
        assert_eq!(c[3].sep, " — ");
    }

    #[test]
    fn condense_drops_filler_clauses_and_labels() {
        assert_eq!(
            condense("Heads up: the webhook route must stay outside the CSRF middleware, otherwise every callback fails with 403.").as_deref(),
            Some("the webhook route must stay outside the CSRF middleware, otherwise every callback fails with 403.")
        );
        assert_eq!(
            condense(
                "POST /v2/intents creates an intent, which is nice, and returns 202 Accepted."
            )
            .as_deref(),
            Some("POST /v2/intents creates an intent, and returns 202 Accepted.")
        );
        assert_eq!(condense("Thanks for reading this."), None);
        assert_eq!(
            condense("The cookie is set with HttpOnly; Secure; SameSite=Lax; Path=/.").as_deref(),
            Some("The cookie is set with HttpOnly; Secure; SameSite=Lax; Path=/.")
        );
    }

    #[test]
    fn fact_tokens() {
        for t in [
            "POST",
            "/a/b",
            "ix_x",
            "0.35",
            "SearchBox",
            "pt-BR",
            "a.b",
            "'EUR'",
            "rediss://x",
        ] {
            assert!(is_fact_token(t), "{t}");
        }
        for t in ["the", "Added", "nice,", "page."] {
            assert!(!is_fact_token(t), "{t}");
        }
    }
}
