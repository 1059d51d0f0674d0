#!/usr/bin/env python3
"""A reference model of Pantheon's compress-inline.py, written for mnemo's
differential test from the facts that define the script's behaviour (the
seed's §3 tables and the rules listed in mnemo's issue 14), with Python's own
argparse, `re`, `str.splitlines` and `str.strip` supplying Python's
semantics. It does not scrub: the test compares rules, not redactions.

Reads a JSON list of cases on stdin, each {"argv": [...], "cwd": "..."},
and writes a JSON list of {"code", "stdout", "stderr"}.

With `--script PATH` it runs a real compress-inline.py instead (imported
once, its `main()` called per case), to measure the model and mnemo against
the outside world; `--no-scrub` replaces that script's scrubber with the
identity, so that only the rules are compared. Nothing of that script is
part of this repository.
"""

import argparse
import io
import json
import os
import re
import sys

# (name, impact, risk, novelty) in hundredths, in output order.
TABLE = [
    ("schema", 100, 100, 60), ("migration", 100, 100, 40),
    ("new table", 100, 80, 90), ("new column", 70, 80, 60),
    ("auth", 100, 100, 50), ("login", 100, 100, 40),
    ("permission", 80, 100, 50), ("role", 80, 80, 40),
    ("JWT", 80, 100, 40), ("OAuth", 80, 100, 50),
    ("password", 70, 100, 30), ("encrypt", 70, 100, 50),
    ("token", 70, 80, 30), ("security", 80, 100, 40),
    ("index", 50, 60, 30), ("foreign key", 80, 90, 50),
    ("constraint", 60, 70, 30), ("endpoint", 90, 60, 50),
    ("route", 80, 50, 40), ("API", 80, 50, 40),
    ("service", 70, 40, 40), ("new file", 60, 30, 80),
    ("refactor", 50, 70, 60), ("rename", 40, 60, 30),
    ("delete", 50, 70, 20), ("deprecat", 40, 40, 30),
    ("config", 50, 60, 30), ("Docker", 70, 60, 30),
    ("deploy", 80, 80, 20), ("CSS", 20, 10, 20),
    ("style", 20, 10, 20), ("typo", 0, 0, 0),
    ("comment", 10, 0, 0), ("README", 20, 0, 10),
    ("docstring", 20, 0, 10),
]
WHOLE_WORDS = {"API", "CSS"}

ROSTER = ["hermes", "aphrodite", "demeter", "themis", "mnemosyne", "hephaestus", "prometheus"]
RELEVANCE = [
    [100, 90, 80, 70, 30, 60, 50],
    [90, 100, 30, 70, 30, 50, 30],
    [90, 30, 100, 70, 30, 60, 60],
    [80, 80, 80, 100, 50, 80, 80],
    [30, 30, 30, 50, 100, 30, 30],
    [60, 50, 60, 70, 30, 100, 40],
    [60, 40, 60, 70, 30, 40, 100],
]


def keyword_regex(name):
    if name in WHOLE_WORDS:
        body = r"\b" + re.escape(name) + r"\b"
    else:
        body = r"\s+".join(re.escape(w) for w in name.split(" "))
    return re.compile(body, re.IGNORECASE)


KEYWORDS = [(name, keyword_regex(name), i, r, n) for name, i, r, n in TABLE]
BLOCKED = re.compile("blocked|blocker|depend", re.IGNORECASE)
UNBLOCK = re.compile("unblock", re.IGNORECASE)


class Score:
    def __init__(self, text, sender, receiver, files, hint):
        found = [k for k in KEYWORDS if k[1].search(text)]
        self.keywords = [k[0] for k in found]
        self.impact = max([k[2] for k in found], default=0) / 100
        self.risk = max([k[3] for k in found], default=0) / 100
        novelty = max([k[4] for k in found], default=0)
        if files >= 10:
            novelty = max(novelty, 100)
        elif files >= 5:
            novelty = max(novelty, 80)
        self.novelty = novelty / 100
        blockers = 0.0
        if BLOCKED.search(text):
            blockers = 0.8 if UNBLOCK.search(text) else 0.5
        if hint:
            blockers = max(blockers, 0.8)
        self.blockers = blockers
        self.downstream = relevance(sender, receiver)
        self.total = (self.impact * 0.30 + self.risk * 0.25 + self.novelty * 0.20
                      + self.blockers * 0.15 + self.downstream * 0.10)

    def band(self):
        for limit, name in ((0.75, "CRITICAL"), (0.50, "HIGH"), (0.25, "MEDIUM")):
            if self.total >= limit:
                return name
        return "LOW"

    def as_json(self):
        return json.dumps({
            "score": round(self.total, 2), "band": self.band(),
            "impact": self.impact, "risk": self.risk, "novelty": self.novelty,
            "blockers": self.blockers, "downstream": self.downstream,
            "keywords_found": self.keywords,
        })

    def priority(self):
        return "- Priority: %s (score: %.2f)" % (self.band(), round(self.total, 2))


def relevance(sender, receiver):
    if not sender or not receiver:
        return 0.5
    a, b = sender.lower().strip(), receiver.lower().strip()
    if a in ROSTER and b in ROSTER:
        return RELEVANCE[ROSTER.index(a)][ROSTER.index(b)] / 100
    return 0.5


def first_line(text):
    for line in text.splitlines():
        if line.strip():
            line = line.strip()
            return line[:80] + ("…" if len(line) > 80 else "")
    return None


def count_files(files):
    return sum(1 for f in files.split(",") if f.strip()) if files else 0


class Exit(Exception):
    def __init__(self, code, out="", err=""):
        self.code, self.out, self.err = code, out, err


class Parser(argparse.ArgumentParser):
    def exit(self, status=0, message=None):
        raise Exit(status, err=message or "")

    def print_help(self, file=None):
        raise Exit(0, out=self.format_help())

    def error(self, message):
        raise Exit(2, err=self.format_usage() + "%s: error: %s\n" % (self.prog, message))


def parser():
    p = Parser(prog="mnemo inline", description=(
        "A drop-in for Pantheon's compress-inline.py: the same modes, options, output "
        "bytes and exit statuses (`mnemo inline scrub` is scrub-secrets.py)."))
    p.add_argument("mode", choices=["score", "compress", "stats", "batch"], help="Operation mode")
    p.add_argument("--text", type=str, default="", help="Input text to process")
    p.add_argument("--files", type=str, default="",
                   help="Comma-separated file paths (batch mode, or for file count in scoring)")
    p.add_argument("--from-agent", type=str, default=None, help="Source agent for downstream relevance")
    p.add_argument("--to-agent", type=str, default=None, help="Target agent for downstream relevance")
    p.add_argument("--blocker", action="store_true", default=False, help="Hint that entry was a blocker")
    return p


def batch(files, sender, receiver):
    out = []
    for path in (f.strip() for f in files.split(",")):
        if not path:
            continue
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        except OSError as e:
            out.append("- %s: ERROR — %s" % (path, e))
            continue
        s = Score(text, sender, receiver, 1, False)
        summary = first_line(text)
        out += ["### " + os.path.basename(path),
                "- What changed: " + (summary if summary is not None else "(empty)"),
                s.priority(), ""]
    return "\n".join(out).rstrip() + "\n"


def run(argv):
    try:
        a = parser().parse_args(argv)
    except Exit as e:
        return e.code, e.out, e.err
    if a.mode == "batch":
        if not a.files:
            return 1, "", "Error: --files is required for batch mode\n"
        try:
            return 0, batch(a.files, a.from_agent, a.to_agent), ""
        except UnicodeDecodeError:
            return 1, "", None
    if not a.text:
        return 0, {
            "score": '{"score": 0.0, "band": "LOW", "impact": 0.0, "risk": 0.0, "novelty": 0.0, '
                     '"blockers": 0.0, "downstream": 0.5, "keywords_found": []}\n',
            "compress": "- What changed: (empty)\n- Priority: LOW (score: 0.00)\n",
            "stats": '{"tokens": 0, "lines": 0, "chars": 0}\n',
        }[a.mode], ""
    if a.mode == "score":
        return 0, Score(a.text, a.from_agent, a.to_agent, count_files(a.files), a.blocker).as_json() + "\n", ""
    if a.mode == "compress":
        s = Score(a.text, a.from_agent, a.to_agent, count_files(a.files), False)
        lines = ["- What changed: " + (first_line(a.text) or ""), s.priority()]
        if a.files:
            lines.append("- Files: " + a.files)
        return 0, "\n".join(lines) + "\n", ""
    t = a.text
    return 0, json.dumps({"tokens": max(1, len(t) // 4), "lines": len(t.splitlines()), "chars": len(t)}) + "\n", ""


def script_runner(path, scrub):
    import contextlib
    import importlib.util
    spec = importlib.util.spec_from_file_location("compress_inline_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not scrub:
        module.scrub = lambda text: (text, [])

    def run_real(argv):
        out, err = io.StringIO(), io.StringIO()
        saved = sys.argv
        sys.argv = ["mnemo inline"] + list(argv)
        code = 0
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                module.main()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except UnicodeDecodeError:
            return 1, out.getvalue() if False else "", None
        finally:
            sys.argv = saved
        return code, out.getvalue(), err.getvalue()

    return run_real


def main():
    os.environ["COLUMNS"] = "80"
    runner = run
    if "--script" in sys.argv:
        path = sys.argv[sys.argv.index("--script") + 1]
        runner = script_runner(path, "--no-scrub" not in sys.argv)
    cases = json.load(sys.stdin)
    results = []
    for c in cases:
        os.chdir(c.get("cwd") or ".")
        code, out, err = runner(c["argv"])
        results.append({"code": code, "stdout": out, "stderr": err})
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
