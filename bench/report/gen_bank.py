#!/usr/bin/env python3
"""Writes a synthetic bank of N entries (default 10,000) for `mnemo report`'s
size and speed figures: 100 phases, the Pantheon roster in turn, 5 %
CRITICAL, 20 % HIGH, 50 % MEDIUM, 25 % LOW, one progress-log section per
entry, 3 entity ids per 10 entries, a Decision Links row per 50, one ZZ
artifact per phase and an archive of 5 % of the entries.

usage: gen_bank.py DIR [N]
"""
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
    for p, (half, _) in used.items():
        with open(os.path.join(root, f".tmp/ZZ-phase{p}-context.md"), "w") as f:
            f.write(f"# Phase {p} → Phase {p + 1} Context\n**From:** @hermes (Phase {p})\n**To:** @themis (Phase {p + 1})\n\n"
                    f"## Budget\n- Allocated: 13 lines\n- Used: {half // 2}{'.5' if half % 2 else ''} lines\n- Carried: 0 lines\n\n## Priority Entries\n")


if __name__ == "__main__":
    main()
