#!/usr/bin/env python3
"""Turns the scripted sessions of bench/trail/sessions/*/*.json into host
transcripts (JSONL in Claude Code's or Codex CLI's format, SPEC §6).

A session spec: {"host": "claude" | "codex", "turns": [...], "planted": [...]}.
Turns: {"user": text}, {"say": text}, {"read": path}, {"write": path},
{"edit": path}, {"bash": command, "exit": n, "out": text},
{"fetch": url, "out": text}, {"noise": n} (n filler exchanges: reads of
scratch files, listings, chatter), {"manyfiles": n} (n distinct file reads and
n/4 distinct commands, to overflow the budget), {"compact": summary} (a previous
compaction). Planted facts are what the trail must keep: a string, or a
list of strings that must all appear in one line of the trail.

usage: build.py OUT_DIR SPEC.json...   (writes OUT_DIR/<name>.jsonl)
"""
import json
import os
import sys

FILLER_FILES = ["README.md", "docs/notes.md", "Cargo.toml", "package.json",
                "src/lib.rs", "src/util.rs", "tests/smoke.rs", "Makefile",
                "docs/design.md", "scripts/dev.sh", "src/config.rs", "src/log.rs"]
FILLER_SAY = ["Let me look around first.", "Reading more of the code.",
              "That looks fine.", "Checking the layout of the project.",
              "Nothing unusual here.", "Continuing."]


def expand(turns):
    out = []
    for t in turns:
        if "noise" in t:
            for i in range(t["noise"]):
                out.append({"say": FILLER_SAY[i % len(FILLER_SAY)]})
                if i % 3 == 2:
                    out.append({"bash": "ls -la", "exit": 0, "out": "total 0\n" * 20})
                else:
                    out.append({"read": FILLER_FILES[i % len(FILLER_FILES)],
                                "out": "\n".join(f"{n}\tline {n} of filler" for n in range(1, 60))})
        elif "manyfiles" in t:
            for i in range(t["manyfiles"]):
                out.append({"read": f"src/area{i % 17}/module_{i}.rs", "out": "1\tpub fn f() {}"})
                if i % 4 == 0:
                    out.append({"bash": f"cargo check -p area{i % 17} --features f{i}", "exit": 0, "out": "Finished"})
        else:
            out.append(t)
    return out


class Claude:
    def __init__(self, sid):
        self.sid, self.n, self.parent, self.lines = sid, 0, None, []

    def _line(self, kind, message, **extra):
        self.n += 1
        uid = f"{kind[0]}{self.n:04d}-0000-4000-8000-000000000000"
        d = {"parentUuid": self.parent, "isSidechain": False, "userType": "external",
             "cwd": "/home/dev/repo", "sessionId": self.sid, "version": "2.1.197",
             "gitBranch": "main", "type": kind, "uuid": uid,
             "timestamp": f"2026-11-30T10:{self.n // 60 % 60:02d}:{self.n % 60:02d}.000Z",
             "message": message}
        d.update(extra)
        self.parent = uid
        self.lines.append(d)

    def user(self, text):
        self._line("user", {"role": "user", "content": text})

    def say(self, text):
        self._line("assistant", {"id": f"msg_{self.n}", "type": "message", "role": "assistant",
                                 "model": "claude-sonnet-4-5",
                                 "content": [{"type": "text", "text": text}],
                                 "stop_reason": "end_turn"})

    def tool(self, name, inp, result, is_error=False):
        tid = f"toolu_{self.n:05d}"
        self._line("assistant", {"id": f"msg_{self.n}", "type": "message", "role": "assistant",
                                 "model": "claude-sonnet-4-5",
                                 "content": [{"type": "tool_use", "id": tid, "name": name, "input": inp}],
                                 "stop_reason": "tool_use"})
        block = {"tool_use_id": tid, "type": "tool_result", "content": result}
        if is_error:
            block["is_error"] = True
        self._line("user", {"role": "user", "content": [block]},
                   toolUseResult={"stdout": result[:200], "stderr": "", "interrupted": False})

    def turn(self, t):
        if "user" in t:
            self.user(t["user"])
        elif "say" in t:
            self.say(t["say"])
        elif "read" in t:
            body = t.get("out", "1\tfn main() {}")
            self.tool("Read", {"file_path": abspath(t["read"])}, body)
        elif "write" in t:
            self.tool("Write", {"file_path": abspath(t["write"]), "content": t.get("content", "// new\n")},
                      f"File created successfully at: {abspath(t['write'])}")
        elif "edit" in t:
            self.tool("Edit", {"file_path": abspath(t["edit"]), "old_string": t.get("old", "a"),
                               "new_string": t.get("new", "b"), "replace_all": False},
                      f"The file {abspath(t['edit'])} has been updated.")
        elif "bash" in t:
            code = t.get("exit", 0)
            out = t.get("out", "")
            if code:
                self.tool("Bash", {"command": t["bash"], "description": "run"}, f"Exit code {code}\n{out}", True)
            else:
                self.tool("Bash", {"command": t["bash"], "description": "run"}, out or "(no output)")
        elif "fetch" in t:
            self.tool("WebFetch", {"url": t["fetch"], "prompt": "summarise"}, t.get("out", ""))
        elif "compact" in t:
            self.n += 1
            self.lines.append({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted",
                               "uuid": f"s{self.n:04d}", "compactMetadata": {"trigger": "auto", "preTokens": 150000}})
            self._line("user", {"role": "user", "content": t["compact"]}, isCompactSummary=True)
        else:
            raise SystemExit(f"unknown turn {t}")


class Codex:
    def __init__(self, sid):
        self.sid, self.n, self.lines = sid, 0, []
        self.item({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<environment_context>\n  <cwd>/home/dev/repo</cwd>\n</environment_context>"}]})

    def _ts(self):
        self.n += 1
        return f"2026-11-30T10:{self.n // 60 % 60:02d}:{self.n % 60:02d}.000Z"

    def item(self, payload):
        self.lines.append({"timestamp": self._ts(), "type": "response_item", "payload": payload})

    def user(self, text):
        self.item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})

    def say(self, text):
        self.item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})

    def shell(self, cmd, code, out):
        cid = f"call_{self.n:05d}"
        style = self.n % 3
        if style == 0:
            self.item({"type": "function_call", "name": "shell", "call_id": cid,
                       "arguments": json.dumps({"command": ["bash", "-lc", cmd], "workdir": "/home/dev/repo"})})
            self.item({"type": "function_call_output", "call_id": cid,
                       "output": json.dumps({"output": out, "metadata": {"exit_code": code, "duration_seconds": 0.4}})})
        elif style == 1:
            self.item({"type": "function_call", "name": "shell_command", "call_id": cid,
                       "arguments": json.dumps({"command": cmd, "workdir": "/home/dev/repo"})})
            self.item({"type": "function_call_output", "call_id": cid,
                       "output": f"Exit code: {code}\nWall time: 0.4 seconds\nOutput:\n{out}"})
        else:
            self.item({"type": "function_call", "name": "exec_command", "call_id": cid,
                       "arguments": json.dumps({"cmd": cmd, "workdir": "/home/dev/repo", "yield_time_ms": 10000})})
            self.item({"type": "function_call_output", "call_id": cid,
                       "output": f"Chunk ID: a1b2c3\nWall time: 0.4 seconds\nProcess exited with code {code}\nOriginal token count: 12\nOutput:\n{out}"})

    def patch(self, verb, path):
        cid = f"call_{self.n:05d}"
        body = f"*** Begin Patch\n*** {verb} File: {path}\n@@\n-old\n+new\n*** End Patch\n"
        self.item({"type": "custom_tool_call", "status": "completed", "call_id": cid, "name": "apply_patch", "input": body})
        letter = {"Update": "M", "Add": "A", "Delete": "D"}[verb]
        self.item({"type": "custom_tool_call_output", "call_id": cid,
                   "output": json.dumps({"output": f"Success. Updated the following files:\n{letter} {path}\n",
                                         "metadata": {"exit_code": 0, "duration_seconds": 0.0}})})

    def turn(self, t):
        if "user" in t:
            self.user(t["user"])
        elif "say" in t:
            self.say(t["say"])
        elif "read" in t:
            self.shell(f"sed -n '1,200p' {t['read']}", 0, t.get("out", "fn main() {}"))
        elif "write" in t:
            self.patch("Add", t["write"])
        elif "edit" in t:
            self.patch("Update", t["edit"])
        elif "bash" in t:
            self.shell(t["bash"], t.get("exit", 0), t.get("out", ""))
        elif "fetch" in t:
            self.lines.append({"timestamp": self._ts(), "type": "response_item",
                               "payload": {"type": "web_search_call", "status": "completed",
                                           "action": {"type": "search", "query": t["fetch"]}}})
        elif "compact" in t:
            self.lines.append({"timestamp": self._ts(), "type": "compacted",
                               "payload": {"message": t["compact"], "replacement_history": []}})
        else:
            raise SystemExit(f"unknown turn {t}")


def abspath(p):
    return p if p.startswith("/") else "/home/dev/repo/" + p


def build(spec, name):
    host = {"claude": Claude, "codex": Codex}[spec["host"]](f"sess-{name}")
    for t in expand(spec["turns"]):
        host.turn(t)
    return "".join(json.dumps(l) + "\n" for l in host.lines)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for path in sys.argv[2:]:
        with open(path) as f:
            spec = json.load(f)
        name = os.path.splitext(os.path.basename(path))[0]
        with open(os.path.join(out, name + ".jsonl"), "w") as f:
            f.write(build(spec, name))


if __name__ == "__main__":
    main()
