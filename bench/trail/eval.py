#!/usr/bin/env python3
"""Evaluates `mnemo trail` on the scripted sessions (SPEC §7, issue #12).

For each session of a set (sessions/heldout: written before any tuning and
never changed; sessions/tuning: what the extractor was tuned on) it builds the
host transcript (build.py), runs `mnemo trail --json`, and reports:
  * recall: planted facts found in the trail (a fact that is a list needs all
    its parts in one line of the trail), within the trail's token budget;
  * tokens: the trail's size (o200k, as mnemo counts it) and the budget;
  * secrets: planted secrets that leaked into the trail (must be 0);
  * after a stand-in compaction whose summary keeps every other planted fact,
    the share of planted facts in the model's context (summary + what
    `mnemo trail --summary` re-injects), and of the trail's own facts.

usage: eval.py [--mnemo BIN] [--budget N] SET_DIR...
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import build  # noqa: E402


def found(fact, text):
    lines = text.lower().splitlines()
    parts = [fact] if isinstance(fact, str) else fact
    parts = [p.lower() for p in parts]
    return any(all(p in line for p in parts) for line in lines)


def fact_words(fact):
    return fact if isinstance(fact, str) else " ".join(fact)


def run(mnemo, path, budget, summary=None):
    cmd = [mnemo, "trail", path, "--json", "--budget", str(budget)]
    if summary is not None:
        cmd += ["--summary", summary]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr}")
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mnemo", default=os.environ.get("MNEMO", "target/release/mnemo"))
    ap.add_argument("--budget", type=int, default=1500)
    ap.add_argument("sets", nargs="+")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="trail-eval-")
    for set_dir in a.sets:
        specs = sorted(f for f in os.listdir(set_dir) if f.endswith(".json"))
        tot = dict(planted=0, kept=0, ctx=0, trail_facts=0, trail_ctx=0, leaks=0, tokens=[], sessions=0)
        print(f"== {set_dir}")
        print(f"{'session':32} {'host':6} {'kept':>7} {'tokens':>7} {'omit':>5} {'ctx':>7} {'trailctx':>9}")
        for name in specs:
            with open(os.path.join(set_dir, name)) as f:
                spec = json.load(f)
            stem = name[:-5]
            jl = os.path.join(tmp, stem + ".jsonl")
            with open(jl, "w") as f:
                f.write(build.build(spec, stem))
            out = run(a.mnemo, jl, a.budget)
            text = out["text"]
            planted = spec["planted"]
            kept = [p for p in planted if found(p, text)]
            leaks = [s for s in spec.get("secrets", []) if s in json.dumps(out)]
            # Stand-in compaction: the summary keeps every other planted fact.
            summary = "Summary of the session so far.\n" + "\n".join(
                f"- {fact_words(p)}" for p in planted[::2]) + "\n"
            sp = os.path.join(tmp, stem + ".summary.txt")
            with open(sp, "w") as f:
                f.write(summary)
            chk = run(a.mnemo, jl, a.budget, summary=sp)
            context = summary + "\n" + chk["check"]["reinject"]
            in_ctx = [p for p in planted if found(p, context) or found(p, summary.replace("\n- ", "\n"))
                      or all(q.lower() in summary.lower() for q in ([p] if isinstance(p, str) else p))]
            shown = [f for f in out["facts"] if f["shown"]]
            trail_in_ctx = [f for f in shown
                            if f["text"].lower() in context.lower()
                            or f["id"] in chk["check"]["survived"]]
            tot["planted"] += len(planted)
            tot["kept"] += len(kept)
            tot["ctx"] += len(in_ctx)
            tot["trail_facts"] += len(shown)
            tot["trail_ctx"] += len(trail_in_ctx)
            tot["leaks"] += len(leaks)
            tot["tokens"].append(out["tokens"])
            tot["sessions"] += 1
            print(f"{stem:32} {spec['host']:6} {len(kept):>3}/{len(planted):<3} {out['tokens']:>7} "
                  f"{out['omitted']:>5} {len(in_ctx):>3}/{len(planted):<3} {len(trail_in_ctx):>4}/{len(shown):<4}")
            for p in planted:
                if p not in kept:
                    print(f"    missed: {p}")
            for s in leaks:
                print(f"    LEAKED SECRET: {s[:8]}…")
        toks = sorted(tot["tokens"])
        med = toks[len(toks) // 2] if toks else 0
        print(f"-- {set_dir}: sessions {tot['sessions']}, recall {tot['kept']}/{tot['planted']} = "
              f"{tot['kept'] / max(1, tot['planted']):.3f}; tokens median {med}, max {max(toks or [0])} "
              f"(budget {a.budget}); after compaction planted in context {tot['ctx']}/{tot['planted']} = "
              f"{tot['ctx'] / max(1, tot['planted']):.3f}, trail facts in context {tot['trail_ctx']}/{tot['trail_facts']}; "
              f"secrets leaked {tot['leaks']}")


if __name__ == "__main__":
    main()
