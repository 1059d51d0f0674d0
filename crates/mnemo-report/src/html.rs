//! The report as one self-contained HTML page: inline CSS and SVG, no
//! script, no network (a Content-Security-Policy of `default-src 'none'`
//! says so to the browser). Every chart has a table with a caption that
//! holds the same data; every text is HTML-escaped here (it was scrubbed
//! when the report was built). The layout depends on the report alone, so
//! the same bank gives the same bytes.

use std::fmt::Write as _;

use mnemo_compress::gatelog::{EntryLog, SkipLog, TrimLog};

use crate::model::{BandCounts, EntryReport, GateReport, Lines, Report, SessionReport};

/// Charts draw at most this many bars or nodes; the tables list everything.
pub const CHART_CAP: usize = 200;

/// Tables of entries, archived entries and ids list at most this many rows
/// (the most recent ones); `mnemo report --json` has them all. A page of a
/// 10,000-entry bank stays small enough to open quickly.
pub const TABLE_CAP: usize = 1_000;

/// A table of more than this many rows is folded into a `<details>`
/// element, closed: the browser then lays out none of its rows until the
/// reader opens it (a 10,000-entry bank's page renders in a fraction of the
/// time). Smaller tables are shown open as before.
pub const FOLD_ROWS: usize = 50;

/// Opens the fold of a table of `rows` rows, when it needs one; returns
/// whether it did (pass it to `fold_close`).
fn fold_open(o: &mut String, rows: usize, what: &str) -> bool {
    if rows <= FOLD_ROWS {
        return false;
    }
    let _ = writeln!(
        o,
        "<details class=\"fold\" data-rows=\"{rows}\"><summary>Table of {rows} {what} (folded; open to read it)</summary>"
    );
    true
}

fn fold_close(o: &mut String, folded: bool) {
    if folded {
        o.push_str("</details>\n");
    }
}

/// The last `TABLE_CAP` items, and a note saying how many were left out.
fn capped<'a, T>(items: &'a [T], what: &str) -> (&'a [T], Option<String>) {
    if items.len() <= TABLE_CAP {
        (items, None)
    } else {
        let left = items.len() - TABLE_CAP;
        (
            &items[left..],
            Some(format!(
                "<p class=\"capped\">The table lists the last {TABLE_CAP} of {} {what}; the {left} before them are in <code>mnemo report --json</code>.</p>\n",
                items.len()
            )),
        )
    }
}

/// Escapes `& < > " '` for text and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + s.len() / 8);
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// Escapes `& < >` for text between tags (quotes need no escape there).
pub fn esc_text(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + s.len() / 16);
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            c => o.push(c),
        }
    }
    o
}

/// An entry's text without the head that its row already shows
/// (`- **date · Pphase · Agent** — BAND score — `).
fn entry_body(text: &str) -> &str {
    let Some((_, rest)) = text.split_once("** — ") else {
        return text;
    };
    match rest.split_once(" — ") {
        Some((head, body)) if !head.contains('\n') => body,
        _ => rest,
    }
}

/// The explain with dimensions that share a reason on one line; dimensions
/// that nothing set (`no keyword`, `no blocker mentioned`) are left out.
fn explain_text(lines: &[crate::model::ExplainLine]) -> String {
    let mut groups: Vec<(Vec<&str>, &str)> = Vec::new();
    for l in lines {
        match groups.iter_mut().find(|(_, why)| *why == l.why.as_str()) {
            Some((dims, _)) => dims.push(&l.dimension),
            None => groups.push((vec![&l.dimension], &l.why)),
        }
    }
    groups
        .iter()
        .filter(|(_, why)| !why.starts_with("no "))
        .map(|(dims, why)| format!("{}: {why}", dims.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// `files: a`, `files: b`, `env: X` → `files a, b; env X`.
fn group_facts(facts: &[String]) -> String {
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    for f in facts {
        let (kind, text) = f.split_once(": ").unwrap_or(("", f));
        match groups.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, v)) => v.push(text),
            None => groups.push((kind, vec![text])),
        }
    }
    groups
        .iter()
        .map(|(k, v)| format!("{k} {}", v.join(", ")).trim().to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

const CSS: &str = "
:root{color-scheme:light dark;--bg:#ffffff;--fg:#1a1a1a;--muted:#595959;--line:#8c8c8c;--grid:#d9d9d9;
--critical:#4d0a1f;--high:#a8431a;--medium:#d9a43a;--low:#ece6d6;--alloc:#ffffff;--used:#3d3d3d;--carried:#9a9a9a;--deny:#000000;--allow:#ffffff}
@media (prefers-color-scheme:dark){:root{--bg:#121212;--fg:#ececec;--muted:#b0b0b0;--line:#8c8c8c;--grid:#3a3a3a;
--critical:#f4c7d2;--high:#e08a5f;--medium:#a67a1f;--low:#4a3f2a;--alloc:#121212;--used:#d0d0d0;--carried:#707070;--deny:#ffffff;--allow:#121212}}
body{background:var(--bg);color:var(--fg);font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:72rem;padding:1rem 1.5rem}
h1{font-size:1.6rem}h2{font-size:1.3rem;border-bottom:1px solid var(--grid);padding-bottom:.2rem;margin-top:2rem}h3{font-size:1.1rem}
table{border-collapse:collapse;margin:.5rem 0 1rem;width:100%}caption{text-align:left;font-weight:600;padding:.3rem 0}
th,td{border:1px solid var(--grid);padding:.2rem .4rem;text-align:left;vertical-align:top}th{background:color-mix(in srgb,var(--grid) 40%,transparent)}
td.n,th.n,#entries-table td:nth-child(n+3):nth-child(-n+7){text-align:right;font-variant-numeric:tabular-nums}
dl.totals{display:grid;grid-template-columns:repeat(auto-fill,minmax(10rem,1fr));gap:.4rem}
dl.totals div{border:1px solid var(--grid);padding:.3rem .5rem}dt{color:var(--muted);font-size:.85rem}dd{margin:0;font-size:1.3rem;font-weight:600}
.b-CRITICAL{background:var(--critical);color:var(--bg);font-weight:600}.b-HIGH{background:var(--high);color:var(--bg);font-weight:600}.b-MEDIUM{background:var(--medium);color:#000;font-weight:600}.b-LOW{background:var(--low);color:var(--fg);font-weight:600}
.flag{font-weight:700}td.entry{white-space:pre-wrap;font:13px/1.35 ui-monospace,monospace}
main>section{content-visibility:auto;contain-intrinsic-size:auto 60rem}details.fold>summary{cursor:pointer;font-weight:600;padding:.3rem 0}
svg{max-width:100%;height:auto;display:block}svg.key{display:inline}svg text{fill:var(--fg);font:12px system-ui,sans-serif}
.f-critical{fill:var(--critical)}.f-high{fill:var(--high)}.f-medium{fill:var(--medium)}.f-low{fill:var(--low);stroke:var(--line)}
.f-alloc{fill:var(--alloc);stroke:var(--fg);stroke-width:1.5}.f-used{fill:var(--used)}.f-carried{fill:var(--carried)}
.edge{stroke:var(--line);stroke-width:1;fill:none}.node{fill:var(--bg);stroke:var(--fg);stroke-width:1.5}
.deny{fill:var(--deny);stroke:var(--fg)}.allow{fill:var(--allow);stroke:var(--fg);stroke-width:2}.axis{stroke:var(--grid)}
.legend span{margin-right:1rem}.sw{display:inline-block;width:.9rem;height:.9rem;border:1px solid var(--line);vertical-align:middle;margin-right:.25rem}
";

/// Renders the page.
pub fn to_html(r: &Report) -> String {
    let mut o = String::with_capacity(16_384 + r.entries.len() * 1_200);
    o.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    o.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n");
    o.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    o.push_str("<title>mnemo report</title>\n<style>");
    o.push_str(CSS);
    o.push_str("</style>\n</head>\n<body>\n<header>\n<h1>Memory bank report</h1>\n");
    totals(&mut o, r);
    o.push_str("</header>\n<main>\n");
    budget(&mut o, r);
    entries(&mut o, r);
    gates(&mut o, r);
    skipped(&mut o, r);
    archive(&mut o, r);
    xref(&mut o, r);
    guardian(&mut o, r);
    o.push_str("<section id=\"not-recorded\" aria-labelledby=\"not-recorded-h\">\n<h2 id=\"not-recorded-h\">Not recorded yet</h2>\n<ul>\n");
    for n in &r.not_recorded {
        let _ = writeln!(o, "<li>{}</li>", esc(n));
    }
    o.push_str("</ul>\n</section>\n</main>\n</body>\n</html>\n");
    o
}

fn opt_num(v: Option<usize>) -> String {
    v.map_or_else(|| "—".to_string(), |n| n.to_string())
}

fn opt_lines(v: Option<Lines>) -> String {
    v.map_or_else(|| "—".to_string(), Lines::display)
}

fn totals(o: &mut String, r: &Report) {
    let t = &r.totals;
    let items: [(&str, &str, String); 13] = [
        ("phases", "Phases", t.phases.to_string()),
        ("entries", "Entries", t.entries.to_string()),
        ("critical", "CRITICAL", t.by_band.critical.to_string()),
        ("high", "HIGH", t.by_band.high.to_string()),
        ("medium", "MEDIUM", t.by_band.medium.to_string()),
        ("low", "LOW", t.by_band.low.to_string()),
        (
            "over-budget",
            "Phases over budget",
            t.over_budget.to_string(),
        ),
        ("flags", "Guardrail flags", t.flags.to_string()),
        ("skipped", "Skipped inputs", t.skipped.to_string()),
        ("archived", "Archived by C7", t.archived.to_string()),
        ("xref-ids", "Cross-reference ids", t.xref_ids.to_string()),
        ("sessions", "Guardian sessions", t.sessions.to_string()),
        ("gates", "Gates logged", t.gates.to_string()),
    ];
    o.push_str("<dl class=\"totals\">\n");
    for (id, label, v) in items {
        let _ = writeln!(
            o,
            "<div><dt>{label}</dt><dd data-total=\"{id}\">{v}</dd></div>"
        );
    }
    let _ = writeln!(
        o,
        "<div><dt>Characters, progress log → entries</dt><dd data-total=\"chars\">{} → {}</dd></div>",
        t.input_chars, t.entry_chars
    );
    let _ = writeln!(
        o,
        "<div><dt>Tokens (o200k), progress log → entries</dt><dd data-total=\"tokens\">{} → {}</dd></div>",
        opt_num(t.input_tokens),
        opt_num(t.entry_tokens)
    );
    o.push_str("</dl>\n");
}

fn section_open(o: &mut String, id: &str, title: &str, count: usize) {
    let _ = writeln!(
        o,
        "<section id=\"{id}\" aria-labelledby=\"{id}-h\" data-count=\"{count}\">\n<h2 id=\"{id}-h\">{title}</h2>"
    );
}

fn legend(o: &mut String, items: &[(&str, &str)]) {
    o.push_str("<p class=\"legend\" aria-hidden=\"true\">");
    for (class, label) in items {
        let _ = write!(
            o,
            "<span><svg class=\"key\" width=\"14\" height=\"14\"><rect class=\"{class}\" x=\"1\" y=\"1\" width=\"12\" height=\"12\"/></svg> {label}</span>"
        );
    }
    o.push_str("</p>\n");
}

fn band_counts_cells(o: &mut String, b: &BandCounts) {
    let _ = write!(
        o,
        "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>",
        b.critical, b.high, b.medium, b.low
    );
}

fn budget(o: &mut String, r: &Report) {
    section_open(o, "budget", "Budget per phase", r.phases.len());
    if r.phases.is_empty() {
        o.push_str("<p>No phase has been gated yet.</p>\n</section>\n");
        return;
    }
    // Bars: allocated (outline), used (filled), carried (grey); scale to the
    // largest amount; then the phase's entries as squares by band.
    let shown = &r.phases[..r.phases.len().min(CHART_CAP)];
    let max = shown
        .iter()
        .flat_map(|p| [p.allocated, p.used, p.carried])
        .flatten()
        .map(|l| l.half_lines)
        .max()
        .unwrap_or(1)
        .max(1);
    let row = 46u64;
    let h = 20 + row * shown.len() as u64;
    let _ = writeln!(
        o,
        "<svg role=\"img\" aria-labelledby=\"budget-chart-t\" viewBox=\"0 0 720 {h}\" width=\"720\" height=\"{h}\"><title id=\"budget-chart-t\">Allocated, used and carried lines per phase; the table below has the same data</title>"
    );
    for (i, p) in shown.iter().enumerate() {
        let y = 10 + row * i as u64;
        let _ = write!(
            o,
            "<text x=\"0\" y=\"{}\">P{}{}</text>",
            y + 16,
            esc(&p.phase),
            if p.flags.is_empty() { "" } else { " ⚑" }
        );
        let bar = |half: u32| u64::from(half) * 400 / u64::from(max);
        if let Some(a) = p.allocated {
            let _ = write!(
                o,
                "<rect class=\"f-alloc\" x=\"60\" y=\"{y}\" width=\"{}\" height=\"12\"/>",
                bar(a.half_lines)
            );
        }
        if let Some(u) = p.used {
            let _ = write!(
                o,
                "<rect class=\"f-used\" x=\"60\" y=\"{}\" width=\"{}\" height=\"8\"/>",
                y + 2,
                bar(u.half_lines)
            );
        }
        if let Some(c) = p.carried {
            let _ = write!(
                o,
                "<rect class=\"f-carried\" x=\"60\" y=\"{}\" width=\"{}\" height=\"8\"/>",
                y + 16,
                bar(c.half_lines)
            );
        }
        let _ = write!(
            o,
            "<text x=\"470\" y=\"{}\">{} / {} lines</text>",
            y + 11,
            opt_lines(p.used),
            opt_lines(p.allocated)
        );
        // The phase's entries by band: a stacked bar, 4 px an entry (at
        // most 400 px; the table has the counts).
        let mut x = 60u64;
        let b = &p.by_band;
        let unit = 400 / (b.total() as u64).max(100);
        for (class, n) in [
            ("f-critical", b.critical),
            ("f-high", b.high),
            ("f-medium", b.medium),
            ("f-low", b.low),
        ] {
            if n > 0 {
                let w = (n as u64 * unit.max(1)).max(2);
                let _ = write!(
                    o,
                    "<rect class=\"{class}\" x=\"{x}\" y=\"{}\" width=\"{w}\" height=\"8\"/>",
                    y + 28
                );
                x += w;
            }
        }
    }
    o.push_str("</svg>\n");
    legend(
        o,
        &[
            ("f-alloc", "allocated"),
            ("f-used", "used"),
            ("f-carried", "carried"),
            ("f-critical", "CRITICAL"),
            ("f-high", "HIGH"),
            ("f-medium", "MEDIUM"),
            ("f-low", "LOW"),
        ],
    );
    let folded = fold_open(o, r.phases.len(), "phases");
    o.push_str("<table id=\"budget-table\">\n<caption>Budget per phase, in lines (from each phase's ZZ artifact; flags recomputed)</caption>\n");
    o.push_str("<thead><tr><th scope=\"col\">Phase</th><th scope=\"col\">From</th><th scope=\"col\">To</th><th scope=\"col\" class=\"n\">Allocated</th><th scope=\"col\" class=\"n\">Used</th><th scope=\"col\" class=\"n\">Carried</th><th scope=\"col\" class=\"n\">CRITICAL</th><th scope=\"col\" class=\"n\">HIGH</th><th scope=\"col\" class=\"n\">MEDIUM</th><th scope=\"col\" class=\"n\">LOW</th><th scope=\"col\">Flags</th></tr></thead>\n<tbody>\n");
    for p in &r.phases {
        let _ = write!(
            o,
            "<tr data-phase=\"{}\" data-over-budget=\"{}\"><th scope=\"row\">P{}</th><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>",
            esc(&p.phase),
            p.over_budget,
            esc(&p.phase),
            esc(p.from.as_deref().unwrap_or("—")),
            esc(p.to.as_deref().unwrap_or("—")),
            opt_lines(p.allocated),
            opt_lines(p.used),
            opt_lines(p.carried)
        );
        band_counts_cells(o, &p.by_band);
        o.push_str("<td>");
        if p.flags.is_empty() {
            o.push_str("none");
        }
        for f in &p.flags {
            let _ = write!(
                o,
                "<span class=\"flag\" data-flag=\"{}\">{}{}</span> ",
                esc(&f.kind),
                if f.escalation { "Escalation: " } else { "⚑ " },
                esc(&f.message)
            );
        }
        o.push_str("</td></tr>\n");
    }
    o.push_str("</tbody>\n</table>\n");
    fold_close(o, folded);
    o.push_str("</section>\n");
}

fn entry_chart(o: &mut String, shown: &[EntryReport]) {
    let max = shown
        .iter()
        .map(|e| e.input.as_ref().map_or(0, |i| i.chars).max(e.entry_chars))
        .max()
        .unwrap_or(1)
        .max(1) as u64;
    let row = 22u64;
    let h = 10 + row * shown.len() as u64;
    let _ = writeln!(
        o,
        "<svg role=\"img\" aria-labelledby=\"entries-chart-t\" viewBox=\"0 0 720 {h}\" width=\"720\" height=\"{h}\"><title id=\"entries-chart-t\">Characters of each entry's input and of the entry; the table below has the same data</title>"
    );
    for (i, e) in shown.iter().enumerate() {
        let y = 5 + row * i as u64;
        let class = format!("f-{}", e.band.to_lowercase());
        let _ = write!(
            o,
            "<text x=\"0\" y=\"{}\">P{} {}</text>",
            y + 12,
            esc(&e.phase),
            esc(&e.agent)
        );
        if let Some(inp) = &e.input {
            let _ = write!(
                o,
                "<rect class=\"f-alloc\" x=\"180\" y=\"{y}\" width=\"{}\" height=\"14\"/>",
                inp.chars as u64 * 420 / max
            );
        }
        let _ = write!(
            o,
            "<rect class=\"{class}\" x=\"180\" y=\"{}\" width=\"{}\" height=\"8\"/>",
            y + 3,
            e.entry_chars as u64 * 420 / max
        );
    }
    o.push_str("</svg>\n");
}

fn entries(o: &mut String, r: &Report) {
    section_open(
        o,
        "entries",
        "What each gate kept and dropped",
        r.entries.len(),
    );
    if r.entries.is_empty() {
        o.push_str("<p>No entries in <code>## Completed Phases</code>.</p>\n</section>\n");
        return;
    }
    let shown = &r.entries[..r.entries.len().min(CHART_CAP)];
    if shown.len() < r.entries.len() {
        let _ = writeln!(
            o,
            "<p>The chart shows the first {} of {} entries; the table lists all.</p>",
            shown.len(),
            r.entries.len()
        );
    }
    entry_chart(o, shown);
    legend(
        o,
        &[
            (
                "f-alloc",
                "input as the progress log keeps it (summary + files)",
            ),
            ("f-critical", "entry, CRITICAL"),
            ("f-high", "HIGH"),
            ("f-medium", "MEDIUM"),
            ("f-low", "LOW"),
        ],
    );
    let (rows, note) = capped(&r.entries, "entries");
    let folded = fold_open(o, rows.len(), "entries");
    o.push_str("<table id=\"entries-table\">\n<caption>Entries of Completed Phases: band and score as recorded, explain recomputed from the progress log, sizes of input and entry</caption>\n");
    o.push_str("<thead><tr><th scope=\"col\">Entry</th><th scope=\"col\">Band</th><th scope=\"col\" class=\"n\">Score</th><th scope=\"col\" class=\"n\">Lines</th><th scope=\"col\" class=\"n\">Input chars / tokens</th><th scope=\"col\" class=\"n\">Entry chars / tokens</th><th scope=\"col\" class=\"n\">Facts kept</th><th scope=\"col\">Explain; facts not kept</th><th scope=\"col\">Entry text (after its head)</th></tr></thead>\n<tbody>\n");
    for e in rows {
        let _ = write!(
            o,
            "<tr><th scope=\"row\">{} · P{} · {}</th><td class=\"b-{}\">{}{}</td><td>{}</td><td>{}</td>",
            esc_text(&e.date),
            esc_text(&e.phase),
            esc_text(&e.agent),
            esc(&e.band),
            esc_text(&e.band),
            if e.trimmed { " (trimmed)" } else { "" },
            esc_text(&e.score),
            e.lines.display()
        );
        match &e.input {
            Some(i) => {
                let _ = write!(o, "<td>{} / {}</td>", i.chars, opt_num(i.tokens));
            }
            None => o.push_str("<td>—</td>"),
        }
        let _ = write!(
            o,
            "<td>{} / {}</td>",
            e.entry_chars,
            opt_num(e.entry_tokens)
        );
        match &e.input {
            Some(i) => {
                let _ = write!(o, "<td>{} of {}</td><td>", i.facts_kept, i.facts_total);
                if !i.rescored_matches {
                    let _ = write!(
                        o,
                        "Recomputed {} {} (recorded {}). ",
                        esc_text(&i.rescored),
                        esc_text(&i.rescored_band),
                        esc_text(&e.score)
                    );
                }
                o.push_str(&esc_text(&explain_text(&i.explain)));
                if !i.facts_dropped.is_empty() {
                    o.push_str(". Not kept: ");
                    o.push_str(&esc_text(&group_facts(&i.facts_dropped)));
                }
                o.push_str("</td>");
            }
            None => o.push_str("<td>—</td><td>input not in the progress log</td>"),
        }
        let _ = writeln!(
            o,
            "<td class=\"entry\">{}</td></tr>",
            esc_text(entry_body(&e.text))
        );
    }
    o.push_str("</tbody>\n</table>\n");
    fold_close(o, folded);
    if let Some(n) = note {
        o.push_str(&n);
    }
    o.push_str("</section>\n");
}

/// Half-line units as lines (`13` → `6.5`).
fn half(n: u32) -> String {
    Lines { half_lines: n }.display()
}

/// The explain with each dimension's value; dimensions nothing set are
/// left out.
fn explain_log(e: &EntryLog) -> String {
    e.explain
        .iter()
        .filter(|x| !x.why.starts_with("no "))
        .map(|x| {
            if x.value.is_empty() {
                format!("{}: {}", x.dimension, x.why)
            } else {
                format!("{} {}: {}", x.dimension, x.value, x.why)
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn gates(o: &mut String, r: &Report) {
    let g = &r.gates.gates;
    section_open(o, "gates", "The gate log: what each gate decided", g.len());
    if !r.gates.unreadable_lines.is_empty() {
        let lines: Vec<String> = r
            .gates
            .unreadable_lines
            .iter()
            .map(ToString::to_string)
            .collect();
        let _ = writeln!(
            o,
            "<p class=\"flag\" data-unreadable=\"{}\">Lines of the gate log that could not be read: {}.</p>",
            lines.len(),
            lines.join(", ")
        );
    }
    if g.is_empty() {
        if r.gates.trims.is_empty() {
            o.push_str("<p>No gate log (<code>_xref/gate-log.jsonl</code>): no gate has changed this bank since mnemo started keeping it.</p>\n</section>\n");
        } else {
            o.push_str("<p>No gate in the gate log (<code>_xref/gate-log.jsonl</code>) yet, only C7 run on its own.</p>\n");
            trims_alone(o, r);
            o.push_str("</section>\n");
        }
        return;
    }
    // One row per gate.
    let (rows, note) = capped(g, "gates");
    let folded = fold_open(o, rows.len(), "gates");
    o.push_str("<table id=\"gates-table\">\n<caption>Gates in the order they ran: budget used of allocated (lines), entries by band, skipped inputs, guardrail flags, C7, and whether a later gate of the phase replaced its ZZ artifact</caption>\n");
    o.push_str("<thead><tr><th scope=\"col\" class=\"n\">Gate</th><th scope=\"col\">Date</th><th scope=\"col\">Phase</th><th scope=\"col\" class=\"n\">Used / allocated (carried)</th><th scope=\"col\" class=\"n\">CRITICAL</th><th scope=\"col\" class=\"n\">HIGH</th><th scope=\"col\" class=\"n\">MEDIUM</th><th scope=\"col\" class=\"n\">LOW</th><th scope=\"col\" class=\"n\">Skipped</th><th scope=\"col\">Guardrail flags</th><th scope=\"col\">C7</th><th scope=\"col\">Replaced by</th></tr></thead>\n<tbody>\n");
    for gr in rows {
        gate_row(o, gr);
    }
    o.push_str("</tbody>\n</table>\n");
    fold_close(o, folded);
    if let Some(n) = note {
        o.push_str(&n);
    }

    // Entries of every gate (the last TABLE_CAP).
    let all: Vec<(u64, &EntryLog)> = g
        .iter()
        .flat_map(|gr| gr.record.entries.iter().map(move |e| (gr.record.seq, e)))
        .collect();
    let (rows, note) = capped(&all, "entries of the gates");
    let folded = fold_open(o, rows.len(), "gate entries");
    o.push_str("<table id=\"gate-entries-table\">\n<caption>Each gate's entries: band and score with the explain (which keyword or rule set each dimension), lines given, sizes of the input (text fields and files) and of the entry in characters and o200k tokens, and the facts of the input the entry kept and dropped</caption>\n");
    o.push_str("<thead><tr><th scope=\"col\" class=\"n\">Gate</th><th scope=\"col\">Entry</th><th scope=\"col\">Band</th><th scope=\"col\" class=\"n\">Score</th><th scope=\"col\" class=\"n\">Lines</th><th scope=\"col\">Action</th><th scope=\"col\" class=\"n\">Input chars / tokens</th><th scope=\"col\" class=\"n\">Entry chars / tokens</th><th scope=\"col\" class=\"n\">Facts kept</th><th scope=\"col\">Explain</th><th scope=\"col\">Facts kept; dropped</th></tr></thead>\n<tbody>\n");
    for (seq, e) in rows {
        let _ = write!(
            o,
            "<tr><td class=\"n\">{seq}</td><th scope=\"row\">{}</th><td class=\"b-{}\">{}{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{} / {}</td><td class=\"n\">{} / {}</td><td class=\"n\">{} of {}</td><td>{}</td><td>",
            esc_text(&e.key),
            esc(&e.band),
            esc_text(&e.band),
            if e.band == e.scored_band {
                String::new()
            } else {
                format!(" (scored {})", esc_text(&e.scored_band))
            },
            esc_text(&e.score),
            half(e.lines_half),
            esc_text(&e.action),
            e.input_chars,
            e.input_tokens,
            e.entry_chars,
            e.entry_tokens,
            e.facts_kept.len(),
            e.facts_total,
            esc_text(&explain_log(e)),
        );
        if !e.facts_kept.is_empty() {
            o.push_str("Kept: ");
            o.push_str(&esc_text(&group_facts(&e.facts_kept)));
            o.push('.');
        }
        if !e.facts_dropped.is_empty() {
            if !e.facts_kept.is_empty() {
                o.push(' ');
            }
            o.push_str("Dropped: ");
            o.push_str(&esc_text(&group_facts(&e.facts_dropped)));
            o.push('.');
        }
        o.push_str("</td></tr>\n");
    }
    o.push_str("</tbody>\n</table>\n");
    fold_close(o, folded);
    if let Some(n) = note {
        o.push_str(&n);
    }

    // Skipped inputs and C7 runs, when any gate had them.
    let skips: Vec<(u64, &SkipLog)> = g
        .iter()
        .flat_map(|gr| gr.record.skipped.iter().map(move |s| (gr.record.seq, s)))
        .collect();
    if !skips.is_empty() {
        let (rows, note) = capped(&skips, "skipped inputs of the gates");
        let folded = fold_open(o, rows.len(), "skipped inputs");
        o.push_str("<table id=\"gate-skipped-table\">\n<caption>Inputs each gate's preflight skipped, with the reason</caption>\n");
        o.push_str("<thead><tr><th scope=\"col\" class=\"n\">Gate</th><th scope=\"col\">Input</th><th scope=\"col\">Agent</th><th scope=\"col\">Phase</th><th scope=\"col\">Reason</th></tr></thead>\n<tbody>\n");
        for (seq, sk) in rows {
            let _ = writeln!(
                o,
                "<tr><td class=\"n\">{seq}</td><th scope=\"row\">{}</th><td>{}</td><td>P{}</td><td>{}</td></tr>",
                esc_text(&sk.source),
                esc_text(&sk.agent),
                esc_text(&sk.phase),
                esc_text(&sk.reason)
            );
        }
        o.push_str("</tbody>\n</table>\n");
        fold_close(o, folded);
        if let Some(n) = note {
            o.push_str(&n);
        }
    }
    let trims: Vec<&GateReport> = g.iter().filter(|gr| gr.record.c7.is_some()).collect();
    if !trims.is_empty() {
        let (rows, note) = capped(&trims, "C7 runs");
        let folded = fold_open(o, rows.len(), "C7 runs");
        o.push_str("<table id=\"gate-c7-table\">\n<caption>C7 runs within gates: the section's cap and its size before and after (lines), the entries moved to the archive and those shortened to one line</caption>\n");
        o.push_str("<thead><tr><th scope=\"col\" class=\"n\">Gate</th><th scope=\"col\" class=\"n\">Cap</th><th scope=\"col\" class=\"n\">Before</th><th scope=\"col\" class=\"n\">After</th><th scope=\"col\">Removed</th><th scope=\"col\">Shortened</th><th scope=\"col\">Archive</th></tr></thead>\n<tbody>\n");
        for gr in rows {
            let Some(c) = &gr.record.c7 else { continue };
            let _ = write!(o, "<tr><td class=\"n\">{}</td>", gr.record.seq);
            c7_cells(o, c);
        }
        o.push_str("</tbody>\n</table>\n");
        fold_close(o, folded);
        if let Some(n) = note {
            o.push_str(&n);
        }
    }
    trims_alone(o, r);
    o.push_str("</section>\n");
}

/// The cells of one C7 run that the gate table and the trim table share
/// (cap, size before and after, removed, shortened, archive), and the row's end.
fn c7_cells(o: &mut String, c: &TrimLog) {
    let _ = writeln!(
        o,
        "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        half(c.cap_half_lines),
        half(c.before_half_lines),
        half(c.after_half_lines),
        esc_text(&c.removed.join(", ")),
        esc_text(&c.shortened.join(", ")),
        esc_text(&c.archive)
    );
}

/// The table of C7 runs on their own (`mnemo trim`), when there are any.
fn trims_alone(o: &mut String, r: &Report) {
    let t = &r.gates.trims;
    if t.is_empty() {
        return;
    }
    let (rows, note) = capped(t, "C7 runs on their own");
    let folded = fold_open(o, rows.len(), "C7 runs on their own");
    o.push_str("<table id=\"trim-table\">\n<caption>C7 run on its own (<code>mnemo trim</code>), in the order of the log: the section's cap and its size before and after (lines), the entries moved to the archive and those shortened to one line</caption>\n");
    o.push_str("<thead><tr><th scope=\"col\" class=\"n\">Line</th><th scope=\"col\">Date</th><th scope=\"col\" class=\"n\">Cap</th><th scope=\"col\" class=\"n\">Before</th><th scope=\"col\" class=\"n\">After</th><th scope=\"col\">Removed</th><th scope=\"col\">Shortened</th><th scope=\"col\">Archive</th></tr></thead>\n<tbody>\n");
    for tr in rows {
        let c = &tr.c7;
        let _ = write!(
            o,
            "<tr data-trim-seq=\"{}\"><th scope=\"row\" class=\"n\">{}</th><td>{}</td>",
            tr.seq,
            tr.seq,
            esc_text(&tr.date)
        );
        c7_cells(o, c);
    }
    o.push_str("</tbody>\n</table>\n");
    fold_close(o, folded);
    if let Some(n) = note {
        o.push_str(&n);
    }
}

fn gate_row(o: &mut String, gr: &GateReport) {
    let r = &gr.record;
    let mut b = BandCounts::default();
    for e in &r.entries {
        match e.band.as_str() {
            "CRITICAL" => b.critical += 1,
            "HIGH" => b.high += 1,
            "MEDIUM" => b.medium += 1,
            _ => b.low += 1,
        }
    }
    let _ = write!(
        o,
        "<tr data-seq=\"{}\"><th scope=\"row\" class=\"n\">{}</th><td>{}</td><td>P{}</td><td class=\"n\">{} / {} ({}){}</td>",
        r.seq,
        r.seq,
        esc_text(&r.date),
        esc_text(&r.phase),
        half(r.budget.used_half_lines),
        half(r.budget.allocated_half_lines),
        half(r.budget.carried_half_lines),
        if r.budget.over_budget {
            " <span class=\"flag\">over budget</span>"
        } else {
            ""
        }
    );
    band_counts_cells(o, &b);
    let flags: Vec<String> = r
        .flags
        .iter()
        .map(|f| {
            if f.escalation {
                format!("escalation: {}", f.message)
            } else {
                f.message.clone()
            }
        })
        .collect();
    let _ = writeln!(
        o,
        "<td class=\"n\">{}</td><td{}>{}</td><td>{}</td><td>{}</td></tr>",
        r.skipped.len(),
        if flags.is_empty() {
            ""
        } else {
            " class=\"flag\""
        },
        if flags.is_empty() {
            "none".to_string()
        } else {
            esc_text(&flags.join(" "))
        },
        r.c7.as_ref().map_or("—".to_string(), |c| esc_text(&c.log)),
        gr.replaced_by
            .map_or("— (last gate of the phase)".to_string(), |n| format!(
                "gate {n}"
            ))
    );
}

fn skipped(o: &mut String, r: &Report) {
    section_open(o, "skipped", "Skipped inputs", r.skipped.len());
    let folded = fold_open(o, r.skipped.len(), "skipped inputs");
    o.push_str("<table id=\"skipped-table\">\n<caption>Inputs the gate skipped because they were blocked (Decision Links)</caption>\n");
    o.push_str("<thead><tr><th scope=\"col\">Id</th><th scope=\"col\">Phase</th><th scope=\"col\">What</th><th scope=\"col\">Reason</th><th scope=\"col\">Unblocked by</th></tr></thead>\n<tbody>\n");
    for s in &r.skipped {
        let _ = writeln!(
            o,
            "<tr><th scope=\"row\">{}</th><td>P{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&s.id),
            esc(&s.phase),
            esc(&s.summary),
            esc(&s.reason),
            esc(s.unblocked_by.as_deref().unwrap_or("still blocked"))
        );
    }
    o.push_str("</tbody>\n</table>\n");
    fold_close(o, folded);
    o.push_str("</section>\n");
}

fn archive(o: &mut String, r: &Report) {
    section_open(
        o,
        "archive",
        "What C7 trimmed into the archive",
        r.archive.len(),
    );
    let (rows, note) = capped(&r.archive, "archived entries");
    let folded = fold_open(o, rows.len(), "archived entries");
    o.push_str("<table id=\"archive-table\">\n<caption>Entries archived by C7: removed from Completed Phases, or shortened to their files</caption>\n");
    o.push_str("<thead><tr><th scope=\"col\">Entry</th><th scope=\"col\">Band</th><th scope=\"col\" class=\"n\">Score</th><th scope=\"col\">Action</th><th scope=\"col\" class=\"n\">Lines</th><th scope=\"col\">Archive</th><th scope=\"col\">Text</th></tr></thead>\n<tbody>\n");
    for a in rows {
        let _ = writeln!(
            o,
            "<tr data-action=\"{}\"><th scope=\"row\">{}</th><td class=\"b-{}\">{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"entry\">{}</td></tr>",
            esc(&a.action),
            esc(&a.key),
            esc(&a.band),
            esc(&a.band),
            esc(&a.score),
            esc(&a.action),
            a.lines,
            esc(&a.file),
            esc(&a.text)
        );
    }
    o.push_str("</tbody>\n</table>\n");
    fold_close(o, folded);
    if let Some(n) = note {
        o.push_str(&n);
    }
    o.push_str("</section>\n");
}

fn xref(o: &mut String, r: &Report) {
    let g = &r.xref;
    section_open(o, "xref", "Cross-reference graph", g.nodes.len());
    if !g.nodes.is_empty() {
        // Three columns: phases | ids | agents, each in a fixed order.
        let nodes = &g.nodes[..g.nodes.len().min(CHART_CAP)];
        if nodes.len() < g.nodes.len() {
            let _ = writeln!(
                o,
                "<p>The graph shows the first {} of {} ids; the table lists all.</p>",
                nodes.len(),
                g.nodes.len()
            );
        }
        let row = 24u64;
        let rows = nodes.len().max(g.phases.len()).max(g.agents.len()) as u64;
        let h = 20 + row * rows;
        let y_of = |i: usize| 20 + row * i as u64;
        let _ = writeln!(
            o,
            "<svg role=\"img\" aria-labelledby=\"xref-chart-t\" viewBox=\"0 0 720 {h}\" width=\"720\" height=\"{h}\"><title id=\"xref-chart-t\">Cross-reference ids linked to the phases and agents that touched them; the table below has the same data</title>"
        );
        for (i, n) in nodes.iter().enumerate() {
            let y = y_of(i);
            for p in &n.phases {
                if let Some(j) = g.phases.iter().position(|x| x == p) {
                    let _ = write!(
                        o,
                        "<line class=\"edge\" x1=\"110\" y1=\"{}\" x2=\"300\" y2=\"{y}\"/>",
                        y_of(j)
                    );
                }
            }
            for a in &n.agents {
                if let Some(j) = g.agents.iter().position(|x| x == a) {
                    let _ = write!(
                        o,
                        "<line class=\"edge\" x1=\"420\" y1=\"{y}\" x2=\"590\" y2=\"{}\"/>",
                        y_of(j)
                    );
                }
            }
        }
        for (j, p) in g.phases.iter().enumerate() {
            let y = y_of(j);
            let _ = write!(
                o,
                "<circle class=\"node\" cx=\"110\" cy=\"{y}\" r=\"5\"/><text x=\"10\" y=\"{}\">P{}</text>",
                y + 4,
                esc(p)
            );
        }
        for (i, n) in nodes.iter().enumerate() {
            let y = y_of(i);
            let _ = write!(
                o,
                "<rect class=\"node\" x=\"300\" y=\"{}\" width=\"120\" height=\"16\"/><text x=\"306\" y=\"{}\">{} {}</text>",
                y - 8,
                y + 4,
                esc(&n.id),
                esc(&short(&n.kind, 9))
            );
        }
        for (j, a) in g.agents.iter().enumerate() {
            let y = y_of(j);
            let _ = write!(
                o,
                "<circle class=\"node\" cx=\"590\" cy=\"{y}\" r=\"5\"/><text x=\"602\" y=\"{}\">{}</text>",
                y + 4,
                esc(a)
            );
        }
        o.push_str("</svg>\n");
    }
    let prefixes: Vec<String> = g
        .by_prefix
        .iter()
        .map(|(k, v)| format!("{} {}", esc(k), v))
        .collect();
    let _ = writeln!(
        o,
        "<p>Ids by prefix: {}; {} links to {} phases and {} agents.</p>",
        if prefixes.is_empty() {
            "none".to_string()
        } else {
            prefixes.join(", ")
        },
        g.links,
        g.phases.len(),
        g.agents.len()
    );
    let (rows, note) = capped(&g.nodes, "ids");
    let folded = fold_open(o, rows.len(), "ids");
    o.push_str("<table id=\"xref-table\">\n<caption>Cross-reference ids (By Entity and Decision Links) with their phases and agents</caption>\n");
    o.push_str("<thead><tr><th scope=\"col\">Id</th><th scope=\"col\">Type</th><th scope=\"col\">Name</th><th scope=\"col\">Location / links to</th><th scope=\"col\">Phases</th><th scope=\"col\">Agents</th></tr></thead>\n<tbody>\n");
    for n in rows {
        let phases: Vec<String> = n.phases.iter().map(|p| format!("P{}", esc(p))).collect();
        let agents: Vec<String> = n.agents.iter().map(|a| esc(a)).collect();
        let _ = writeln!(
            o,
            "<tr><th scope=\"row\">{}</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&n.id),
            esc(&n.kind),
            esc(&n.name),
            esc(&n.location),
            phases.join(", "),
            agents.join(", ")
        );
    }
    o.push_str("</tbody>\n</table>\n");
    fold_close(o, folded);
    if let Some(n) = note {
        o.push_str(&n);
    }
    o.push_str("</section>\n");
}

fn short(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

fn guardian(o: &mut String, r: &Report) {
    let sessions = r.guardian.as_ref().map_or(&[][..], |g| &g.sessions[..]);
    section_open(o, "guardian", "The Guardian's timeline", sessions.len());
    if r.guardian.is_none() {
        o.push_str("<p>No Guardian session store was found.</p>\n");
    }
    for (k, s) in sessions.iter().enumerate() {
        session(o, k, s);
    }
    o.push_str("</section>\n");
}

fn session(o: &mut String, k: usize, s: &SessionReport) {
    let _ = writeln!(
        o,
        "<article class=\"session\" data-session=\"{}\" data-steps=\"{}\" data-allowed=\"{}\" data-denied=\"{}\" data-regroundings=\"{}\">\n<h3>Session {}</h3>",
        esc(&s.session_id),
        s.steps.len(),
        s.allowed,
        s.denied,
        s.regroundings,
        esc(&s.session_id)
    );
    let origins: Vec<String> = s
        .by_origin
        .iter()
        .map(|(o, n)| format!("{} {n}", esc(o)))
        .collect();
    let _ = writeln!(
        o,
        "<p>{} steps ({}); {} re-groundings; compactions: {} allowed, {} denied.</p>",
        s.steps.len(),
        if origins.is_empty() {
            "no origins recorded".to_string()
        } else {
            origins.join(", ")
        },
        s.regroundings,
        s.allowed,
        s.denied
    );
    // Timeline: one mark per step, left to right; untrusted steps low,
    // trusted high; preCompact decisions as squares (filled = deny).
    let steps = &s.steps[..s.steps.len().min(CHART_CAP)];
    if !steps.is_empty() {
        let w = 40 + 18 * steps.len() as u64;
        let _ = writeln!(
            o,
            "<svg role=\"img\" aria-labelledby=\"tl-{k}-t\" viewBox=\"0 0 {w} 90\" width=\"{w}\" height=\"90\"><title id=\"tl-{k}-t\">Steps of session {} in order; the table below has the same data</title><line class=\"axis\" x1=\"20\" y1=\"45\" x2=\"{}\" y2=\"45\"/><text x=\"0\" y=\"24\">T</text><text x=\"0\" y=\"74\">U</text>",
            esc(&s.session_id),
            w - 10
        );
        for (i, st) in steps.iter().enumerate() {
            let x = 30 + 18 * i as u64;
            let decision = s.compactions.iter().rev().find(|c| c.step_id == st.step_id);
            let y = match st.trust.as_deref() {
                Some("trusted") => 20,
                Some("untrusted") => 70,
                _ => 45,
            };
            match decision {
                Some(c) => {
                    let class = if c.verdict == "deny" { "deny" } else { "allow" };
                    let _ = write!(
                        o,
                        "<rect class=\"{class}\" x=\"{}\" y=\"37\" width=\"16\" height=\"16\"/>",
                        x - 8
                    );
                }
                None if st.regrounding => {
                    let _ = write!(
                        o,
                        "<path class=\"node\" d=\"M{x} {} l6 10 h-12 z\"/>",
                        y - 6
                    );
                }
                None => {
                    let _ = write!(o, "<circle class=\"node\" cx=\"{x}\" cy=\"{y}\" r=\"5\"/>");
                }
            }
        }
        o.push_str("</svg>\n");
        o.push_str("<p class=\"legend\">T trusted (top), U untrusted (bottom), ▲ re-grounding, □ compaction allowed, ■ compaction denied.</p>\n");
    }
    let folded = fold_open(o, s.steps.len(), "steps");
    let _ = writeln!(
        o,
        "<table class=\"steps-table\">\n<caption>Steps of session {}</caption>",
        esc(&s.session_id)
    );
    o.push_str("<thead><tr><th scope=\"col\" class=\"n\">#</th><th scope=\"col\">Step</th><th scope=\"col\">Method</th><th scope=\"col\">Time</th><th scope=\"col\">Origins</th><th scope=\"col\">Trust</th><th scope=\"col\">Re-grounding</th><th scope=\"col\">Decision</th></tr></thead>\n<tbody>\n");
    for st in &s.steps {
        let decision = s
            .compactions
            .iter()
            .rev()
            .find(|c| c.step_id == st.step_id)
            .map_or(String::new(), |c| esc(&c.verdict));
        let origins: Vec<String> = st.origins.iter().map(|x| esc(x)).collect();
        let _ = writeln!(
            o,
            "<tr><td class=\"n\">{}</td><th scope=\"row\">{}</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            st.seq,
            esc(&st.step_id),
            esc(&st.method),
            esc(st.timestamp.as_deref().unwrap_or("—")),
            origins.join(", "),
            esc(st.trust.as_deref().unwrap_or("—")),
            if st.regrounding { "yes" } else { "" },
            decision
        );
    }
    o.push_str("</tbody>\n</table>\n");
    fold_close(o, folded);
    let folded = fold_open(o, s.compactions.len(), "compaction decisions");
    let _ = writeln!(
        o,
        "<table class=\"compactions-table\">\n<caption>Compaction decisions of session {} with the Guardian's reasoning and way out</caption>",
        esc(&s.session_id)
    );
    o.push_str("<thead><tr><th scope=\"col\">Step</th><th scope=\"col\">Verdict</th><th scope=\"col\" class=\"n\">Entries</th><th scope=\"col\">Entry ids</th><th scope=\"col\">Reasoning and way out</th><th scope=\"col\">Reason codes</th></tr></thead>\n<tbody>\n");
    for c in &s.compactions {
        let ids: Vec<String> = c.entries.iter().map(|x| esc(x)).collect();
        let _ = writeln!(
            o,
            "<tr data-verdict=\"{}\"><th scope=\"row\">{}</th><td>{}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&c.verdict),
            esc(&c.step_id),
            esc(&c.verdict),
            c.entries.len(),
            ids.join(", "),
            esc(c
                .reasoning
                .as_deref()
                .unwrap_or("not recorded (older store)")),
            esc(&c.reason_codes.join(", "))
        );
    }
    o.push_str("</tbody>\n</table>\n");
    fold_close(o, folded);
    o.push_str("</article>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_everything_html_cares_about() {
        assert_eq!(
            esc("<script>alert('x') & \"y\"</script>"),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;"
        );
    }
}
