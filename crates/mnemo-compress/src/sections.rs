//! Section-preserving edits of hand-written markdown.
//!
//! mnemo owns a few sections (`## Completed Phases`, `## Completed Plans`)
//! and appends progress-log sections; everything else is kept byte for byte.
//! Headings are found outside fenced code blocks; a section ends at the next
//! heading of level 1 or 2.

use crate::completed::{self, NewEntry, UpsertReport, Upserted};

/// Byte ranges of a `## Title` section: `(heading_start, body_start, end)`.
pub fn find_section(text: &str, title: &str) -> Option<(usize, usize, usize)> {
    let bytes = text.as_bytes();
    if memchr::memmem::find(bytes, b"```").is_none()
        && memchr::memmem::find(bytes, b"~~~").is_none()
    {
        return find_section_unfenced(text, title);
    }
    find_section_scan(text, title)
}

/// [`find_section`], line by line, fences tracked.
fn find_section_scan(text: &str, title: &str) -> Option<(usize, usize, usize)> {
    let mut pos = 0;
    let mut fence = false;
    let mut found: Option<(usize, usize)> = None;
    for line in text.split_inclusive('\n') {
        let start = pos;
        pos += line.len();
        let t = line.trim_end();
        if t.trim_start().starts_with("```") || t.trim_start().starts_with("~~~") {
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        let level1 = t.starts_with("# ") || t == "#";
        let level2 = t.starts_with("## ") || t == "##";
        if let Some((h, b)) = found {
            if level1 || level2 {
                return Some((h, b, start));
            }
            continue;
        }
        if level2 && t[2..].trim().eq_ignore_ascii_case(title) {
            found = Some((start, pos));
        }
    }
    found.map(|(h, b)| (h, b, text.len()))
}

/// [`find_section`] on a text without a code fence: only the lines that
/// start with `#` (found by `memchr`) can be headings.
fn find_section_unfenced(text: &str, title: &str) -> Option<(usize, usize, usize)> {
    let bytes = text.as_bytes();
    let mut found: Option<(usize, usize)> = None;
    let starts = memchr::memchr_iter(b'#', bytes).filter(|&i| i == 0 || bytes[i - 1] == b'\n');
    for start in starts {
        let pos = memchr::memchr(b'\n', &bytes[start..]).map_or(text.len(), |i| start + i + 1);
        let t = text[start..pos].trim_end();
        let level1 = t.starts_with("# ") || t == "#";
        let level2 = t.starts_with("## ") || t == "##";
        if found.is_some() {
            if level1 || level2 {
                return found.map(|(h, b)| (h, b, start));
            }
            continue;
        }
        if level2 && t[2..].trim().eq_ignore_ascii_case(title) {
            found = Some((start, pos));
        }
    }
    found.map(|(h, b)| (h, b, text.len()))
}

/// Appends a new `## Title` section with `body` at the end of `text`, with
/// one blank line before it.
pub fn append_section(text: &str, title: &str, body: &str) -> String {
    let mut out = text.to_string();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    if !out.is_empty() && !out.ends_with("\n\n") {
        out.push('\n');
    }
    out.push_str("## ");
    out.push_str(title);
    out.push_str("\n\n");
    out.push_str(body);
    out
}

/// Upserts entries into the `## Title` section of `text` (§17 semantics of
/// [`completed::upsert`]), creating the section at the end when absent and
/// there is something to add. Every byte outside the section's entries is
/// kept.
pub fn upsert_section(text: &str, title: &str, entries: &[NewEntry]) -> (String, UpsertReport) {
    let (t, r, _) = upsert_section_each(text, title, entries);
    (t, r)
}

/// [`upsert_section`], also saying what happened to each entry.
pub fn upsert_section_each(
    text: &str,
    title: &str,
    entries: &[NewEntry],
) -> (String, UpsertReport, Vec<Upserted>) {
    match find_section(text, title) {
        Some((_, b, e)) => {
            let body = &text[b..e];
            // An empty section gets a blank line after its heading.
            let (mut new_body, report, each) = if body.trim().is_empty() && !entries.is_empty() {
                let (t, r, each) = completed::upsert_each("", entries);
                (format!("\n{t}"), r, each)
            } else {
                completed::upsert_each(body, entries)
            };
            // Keep a blank line between the entries and the next heading.
            if e < text.len() && report.added > 0 && !new_body.ends_with("\n\n") {
                new_body.push('\n');
            }
            let mut out = String::with_capacity(text.len() + new_body.len());
            out.push_str(&text[..b]);
            out.push_str(&new_body);
            out.push_str(&text[e..]);
            (out, report, each)
        }
        None if entries.is_empty() => (text.to_string(), UpsertReport::default(), Vec::new()),
        None => {
            let (body, report, each) = completed::upsert_each("", entries);
            (append_section(text, title, &body), report, each)
        }
    }
}

/// Whether a progress-log heading line exists (outside code fences).
pub fn has_heading(text: &str, heading: &str) -> bool {
    let want = heading.trim();
    let bytes = text.as_bytes();
    if !want.is_empty() && memchr::memmem::find(bytes, b"```").is_none() {
        // No fence: a line that starts with the heading and has only
        // white space after it (a progress log of 10,000 sections is
        // searched once per entry of a gate).
        return memchr::memmem::find_iter(bytes, want.as_bytes()).any(|at| {
            let line_start = at == 0 || bytes[at - 1] == b'\n';
            let end = at + want.len();
            let eol = memchr::memchr(b'\n', &bytes[end..]).map_or(text.len(), |i| end + i);
            line_start && text[end..eol].trim_end().is_empty()
        });
    }
    has_heading_scan(text, want)
}

/// [`has_heading`], line by line, fences tracked.
fn has_heading_scan(text: &str, want: &str) -> bool {
    let mut fence = false;
    for line in text.lines() {
        let t = line.trim_end();
        if t.trim_start().starts_with("```") {
            fence = !fence;
            continue;
        }
        if !fence && t == want {
            return true;
        }
    }
    false
}

/// Appends a progress-log section (`### …`) unless its heading exists; when
/// it exists and `review` is given and the section has no `**Review:**`
/// line, the review line is added at the end of that section. Returns the
/// new text and whether anything changed.
pub fn append_progress(text: &str, section: &str, review: Option<&str>) -> (String, bool) {
    let heading = section.lines().next().unwrap_or_default();
    if !has_heading(text, heading) {
        let mut out = text.to_string();
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        if !out.is_empty() && !out.ends_with("\n\n") {
            out.push('\n');
        }
        out.push_str(section);
        if !out.ends_with('\n') {
            out.push('\n');
        }
        return (out, true);
    }
    let Some(review) = review else {
        return (text.to_string(), false);
    };
    // Find the section's extent: heading line to the next heading of level ≤ 3.
    let mut pos = 0;
    let mut start = None;
    let mut end = text.len();
    for line in text.split_inclusive('\n') {
        let t = line.trim_end();
        if start.is_none() {
            if t == heading.trim() {
                start = Some(pos + line.len());
            }
        } else if t.starts_with("# ") || t.starts_with("## ") || t.starts_with("### ") {
            end = pos;
            break;
        }
        pos += line.len();
    }
    let Some(s) = start else {
        return (text.to_string(), false);
    };
    if text[s..end]
        .lines()
        .any(|l| l.trim_start().starts_with("**Review:**"))
    {
        return (text.to_string(), false);
    }
    // Insert after the section's last non-blank line.
    let body = &text[s..end];
    let trimmed = body.trim_end_matches(['\n', '\r', ' ']);
    let at = s + trimmed.len();
    let mut out = String::with_capacity(text.len() + review.len() + 2);
    out.push_str(&text[..at]);
    out.push('\n');
    out.push_str(review.trim_end());
    out.push_str(&text[at..]);
    if at == text.len() {
        out.push('\n');
    }
    (out, true)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn finds_sections_outside_fences() {
        let t = "# A\n\n```\n## Completed Phases\n```\n## Completed phases\nx\n\n## Next\ny\n";
        let (h, b, e) = find_section(t, "Completed Phases").unwrap();
        assert_eq!(&t[h..b], "## Completed phases\n");
        assert_eq!(&t[b..e], "x\n\n");
        assert!(find_section("# A\n", "Completed Phases").is_none());
    }

    proptest::proptest! {
        /// The memchr paths give what the line-by-line scans give.
        #[test]
        fn unfenced_paths_agree_with_the_scan(
            lines in proptest::collection::vec(
                "(#|##|###|# |## |  ## |x|##x)?[ a-zA-Z]{0,6}(\r)?", 0..12),
            title in "(Completed Phases|a|A b| x)",
            last_newline: bool,
        ) {
            let mut text = lines.join("\n");
            if last_newline {
                text.push('\n');
            }
            proptest::prop_assert_eq!(
                find_section_unfenced(&text, &title),
                find_section_scan(&text, &title)
            );
            for l in &lines {
                proptest::prop_assert_eq!(
                    has_heading(&text, l),
                    has_heading_scan(&text, l.trim())
                );
            }
            proptest::prop_assert_eq!(
                has_heading(&text, &title),
                has_heading_scan(&text, title.trim())
            );
        }
    }

    #[test]
    fn progress_append_is_idempotent() {
        let s = "### 2026-06-20 — Phase 1: Hermes\n\n**Status:** ✅ complete\n";
        let (a, c1) = append_progress("# Progress Log\n", s, None);
        assert!(c1);
        let (b, c2) = append_progress(&a, s, None);
        assert!(!c2);
        assert_eq!(a, b);
        let (c, c3) = append_progress(&b, s, Some("**Review:** APPROVED"));
        assert!(c3);
        assert!(c.ends_with("complete\n**Review:** APPROVED\n"));
        let (d, c4) = append_progress(&c, s, Some("**Review:** APPROVED"));
        assert!(!c4);
        assert_eq!(c, d);
    }
}
