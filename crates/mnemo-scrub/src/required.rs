//! A byte that every match of a rule's pattern holds, found from its
//! syntax tree: a byte of a literal that is an item of the pattern's
//! top-level concatenation (a concatenation matches only where each of its
//! items matches, one after the other, so a literal item is in every
//! match). Bytes of the rule's keywords (the keyword hit has them
//! already), letters, digits and white space (too common to tell
//! anything) are not chosen. `build.rs` computes it for the built-in rules
//! (shared through `#[path]`); at a keyword hit the engine skips a rule
//! whose byte is not in the rest of the text, without compiling its
//! pattern (a URL without `@` compiled two URL-password rules in every
//! hook run).

use regex_syntax::hir::{Hir, HirKind};

/// The byte, or `None` when the pattern has no such literal item.
pub(crate) fn required_byte(hir: &Hir, keywords: &[String]) -> Option<u8> {
    let items: &[Hir] = match hir.kind() {
        HirKind::Concat(items) => items,
        _ => std::slice::from_ref(hir),
    };
    for item in items {
        let lit = match item.kind() {
            HirKind::Literal(l) => &l.0,
            HirKind::Capture(c) => match c.sub.kind() {
                HirKind::Literal(l) => &l.0,
                _ => continue,
            },
            _ => continue,
        };
        for &b in lit.iter() {
            if b.is_ascii_alphanumeric()
                || b.is_ascii_whitespace()
                || keywords
                    .iter()
                    .any(|k| k.bytes().any(|c| c.eq_ignore_ascii_case(&b)))
            {
                continue;
            }
            return Some(b);
        }
    }
    None
}
