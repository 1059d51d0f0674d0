#!/usr/bin/env python3
"""Writes a synthetic bank of N entries (default 10,000) for `mnemo report`'s
size and speed figures: 100 phases, the Pantheon roster in turn, 5 %
CRITICAL, 20 % HIGH, 50 % MEDIUM, 25 % LOW, one progress-log section per
entry, 3 entity ids per 10 entries, a Decision Links row per 50, one ZZ
artifact per phase, an archive of 5 % of the entries, and a gate log
(`_xref/gate-log.jsonl`) of one gate per phase plus an earlier gate of every
tenth phase, each line with its entries' explain, sizes and facts.

usage: gen_bank.py DIR [N]
"""
import json
import os
import sys

AGENTS = ["Zeus", "Hermes", "Aphrodite", "Demeter", "Themis", "Mnemosyne", "Hephaestus", "Prometheus"]


def main():
    root = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    phases = 100
    for d in (".tmp", "_xref", "_notes/archive"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    active = ["# Active Context\n\n## Completed Phases\n\n"]
    progress = ["# Progress Log\n\n"]
    entities, links, archive = [], [], ["# Compressed entries — 2026-06\n\n"]
    used = {}
    gates = {}
    for i in range(n):
        p = 1 + i * phases // n
        agent = AGENTS[i % len(AGENTS)]
        date = f"2026-06-{1 + (i // len(AGENTS)) % 28:02d}"
        sub = chr(ord("a") + (i // len(AGENTS)) % 26)
        phase = f"{p}{sub}"
        r = i % 20
        band, score, lines = (("CRITICAL", "0.81", 3) if r == 0 else
                              ("HIGH", "0.62", 2) if r < 5 else
                              ("MEDIUM", "0.45", 1) if r < 15 else ("LOW", "0.15", 0))
        files = f"src/module_{i}/handler.py, src/module_{i}/model.py"
        what = (f"Added GET /api/v1/items/{i} backed by table items_{i} with column owner_id; "
                f"returns 200 or 404 and reads ITEMS_{i}_LIMIT (default 50).")
        key = f"<!-- mnemo:key={date}|{phase}|{agent.lower()}-{i} hash={i:016x} -->"
        head = f"- **{date} · P{phase} · {agent}** — {band} {score} — "
        if lines == 3:
            active.append(f"{head}What changed: {what} — files {files} {key}\n"
                          f"  - To next agent: builds on GET /api/v1/items/{i}.\n"
                          f"  - Gotcha: ITEMS_{i}_LIMIT must be set in production.\n")
        elif lines == 2:
            active.append(f"{head}What changed: {what} — files {files} {key}\n"
                          f"  - To next agent: builds on GET /api/v1/items/{i}.\n")
        elif lines == 1:
            active.append(f"{head}{what[:90]} {key}\n")
        else:
            active.append(f"{head}{files} {key}\n")
        progress.append(f"### {date} — Phase {phase}: {agent}\n\n"
                        f"**Status:** complete · **Priority:** {band} ({score})\n"
                        f"**Files:** {files}\n**Summary:** {what} The handler validates input.\n\n")
        used.setdefault(p, [0, 0])[0] += max(lines * 2, 1)
        kept = [f"endpoint: GET /api/v1/items/{i}", f"table: items_{i}", "status_code: 200"]
        dropped = ["status_code: 404", f"env: ITEMS_{i}_LIMIT"] if lines < 2 else []
        gates.setdefault(p, []).append({
            "source": f".tmp/subtask-summary-{agent.lower()}-{i}.md", "key": f"{date}|{phase}|{agent.lower()}-{i}",
            "agent": agent, "phase": phase, "band": band, "scored_band": band, "score": score,
            "score_exact": int(float(score) * 10000), "lines_half": max(lines * 2, 1),
            "mode": ["aggressive", "standard", "compact", "expanded"][lines], "action": "new",
            "explain": [
                {"dimension": "impact", "value": "0.90", "why": 'keyword "endpoint" (api)'},
                {"dimension": "risk", "value": "0.60", "why": 'keyword "table" (database)'},
                {"dimension": "novelty", "value": "0.50", "why": "2 files changed (at least 1)"},
                {"dimension": "blockers", "value": "0.00", "why": "no blocker mentioned"},
                {"dimension": "downstream", "value": "0.70", "why": f"relevance table {agent.lower()} -> themis"}],
            "input_chars": len(what) + len(files) + 1, "input_tokens": 60, "entry_chars": 40 + 60 * lines,
            "entry_tokens": 12 + 18 * lines, "facts_total": len(kept) + len(dropped),
            "facts_kept": kept, "facts_dropped": dropped})
        if i % 10 < 3:
            kind, prefix = [("endpoint", "E"), ("migration", "M"), ("component", "C")][i % 10]
            entities.append(f"| {prefix}{len(entities) + 1:04d} | {kind} | item {i} | src/module_{i}/handler.py | P{phase} | {agent} |\n")
        if i % 50 == 7:
            links.append(f"| D{len(links) + 1:04d} | blocked | P{phase} {agent} blocked | waiting on review {i} | P{phase} |\n")
        if i % 20 == 19:
            archive.append(f"{head}{files} {key}\n")
    with open(os.path.join(root, "01-active-context.md"), "w") as f:
        f.write("".join(active))
    with open(os.path.join(root, "02-progress-log.md"), "w") as f:
        f.write("".join(progress))
    with open(os.path.join(root, "_xref/index.md"), "w") as f:
        f.write("# Cross-Reference Index\n\n## By Feature\n\n| Feature | Phase(s) | Agent(s) | Priority | Summary |\n|---|---|---|---|---|\n\n"
                "## By Entity\n\n| Entity ID | Type | Name | Location | Phase | Agent |\n|---|---|---|---|---|---|\n"
                + "".join(entities) + "\n## Decision Links\n\n| Ref ID | Type | Summary | Links To | Phase |\n|---|---|---|---|---|\n" + "".join(links))
    with open(os.path.join(root, "_notes/archive/2026-06-compressed-entries.md"), "w") as f:
        f.write("".join(archive))
    log, seq = [], 0

    def gate(p, entries):
        nonlocal_seq[0] += 1
        half = sum(e["lines_half"] for e in entries)
        return json.dumps({
            "version": 1, "seq": nonlocal_seq[0], "date": entries[0]["key"][:10], "phase": str(p),
            "from": ["hermes"], "to": ["themis"], "feature": None,
            "confirmation": f"Compression complete: {len(entries)} entries compressed", "xrefs_added": 3,
            "budget": {"base_half_lines": 26, "carry_in_half_lines": 0, "allocated_half_lines": 26,
                       "used_half_lines": half, "carried_half_lines": 0, "over_budget": half > 26},
            "flags": [{"kind": "overrun", "escalation": False,
                       "message": f"Phase {p} uses {half / 2} lines of a 13-line budget (nothing dropped)."}] if half > 26 else [],
            "entries": entries, "skipped": [], "c7": None}, ensure_ascii=False, separators=(",", ":"))

    nonlocal_seq = [seq]
    for p in sorted(gates):
        if p % 10 == 0:
            log.append(gate(p, gates[p][: len(gates[p]) // 2]))
        log.append(gate(p, gates[p]))
    with open(os.path.join(root, "_xref/gate-log.jsonl"), "w") as f:
        f.write("".join(line + "\n" for line in log))
    for p, (half, _) in used.items():
        with open(os.path.join(root, f".tmp/ZZ-phase{p}-context.md"), "w") as f:
            f.write(f"# Phase {p} → Phase {p + 1} Context\n**From:** @hermes (Phase {p})\n**To:** @themis (Phase {p + 1})\n\n"
                    f"## Budget\n- Allocated: 13 lines\n- Used: {half // 2}{'.5' if half % 2 else ''} lines\n- Carried: 0 lines\n\n## Priority Entries\n")


if __name__ == "__main__":
    main()
