#!/usr/bin/env python3
"""Writes a large Claude Code transcript (JSONL, SPEC §6 line shapes) of about
SIZE_MB megabytes, deterministically: cycles of a user request, assistant
prose (decisions, facts with numbers, a blocker now and then), Read / Edit /
Write tool calls and Bash calls whose results are long outputs (test logs,
file contents), as a long real session has. Distinct files and commands grow
with the size (a few thousand at 100 MB), so the extractor's tables fill.

usage: make-large.py OUT.jsonl [SIZE_MB]   (default 100)
"""
import json
import sys

out = sys.argv[1]
size = int(float(sys.argv[2]) * 1_000_000) if len(sys.argv) > 2 else 100_000_000

LOG = "".join(f"test area::module_{k}::case_{k % 7} ... ok\n" for k in range(60))
SRC = "".join(f"{k}\tpub fn helper_{k}(x: u32) -> u32 {{ x.wrapping_mul({k}) }}\n" for k in range(1, 80))
SAYS = [
    "We chose to keep the cache in process instead of Redis, because the hit rate is 94 percent.",
    "The endpoint is GET /api/v1/items/{id} and it reads ITEMS_PAGE_SIZE (default 50).",
    "Running the tests again.",
    "That looks fine; continuing with the next module.",
    "The migration adds column archived_at to table items with an index on (owner_id, archived_at).",
    "Clippy still fails on an unused import in src/area3/mod.rs; I will fix it next.",
]
USERS = [
    "Please continue with the refactor.",
    "Never push to main directly. Always run cargo fmt before a commit.",
    "Don't touch vendor/, it is generated.",
    "Make the pagination default 50 and keep the old cursor format.",
]


class W:
    def __init__(self, f):
        self.f, self.n, self.parent, self.bytes = f, 0, None, 0

    def line(self, kind, message, **extra):
        self.n += 1
        uid = f"{self.n:08x}-0000-4000-8000-000000000000"
        d = {"parentUuid": self.parent, "isSidechain": False, "userType": "external",
             "cwd": "/home/dev/repo", "sessionId": "large-session", "version": "2.1.197",
             "gitBranch": "main", "type": kind, "uuid": uid,
             "timestamp": f"2026-11-30T10:{self.n // 60 % 60:02d}:{self.n % 60:02d}.000Z",
             "message": message}
        d.update(extra)
        self.parent = uid
        s = json.dumps(d) + "\n"
        self.f.write(s)
        self.bytes += len(s)

    def user(self, text):
        self.line("user", {"role": "user", "content": text})

    def say(self, text):
        self.line("assistant", {"role": "assistant", "model": "claude-sonnet-4-5",
                                "content": [{"type": "text", "text": text}]})

    def tool(self, name, inp, result, is_error=False):
        tid = f"toolu_{self.n:08d}"
        self.line("assistant", {"role": "assistant", "model": "claude-sonnet-4-5",
                                "content": [{"type": "tool_use", "id": tid, "name": name, "input": inp}]})
        block = {"tool_use_id": tid, "type": "tool_result", "content": result}
        if is_error:
            block["is_error"] = True
        self.line("user", {"role": "user", "content": [block]},
                  toolUseResult={"stdout": result[:200], "stderr": "", "interrupted": False})


with open(out, "w") as f:
    w = W(f)
    i = 0
    while w.bytes < size:
        w.user(USERS[i % len(USERS)] + f" (step {i})")
        w.say(SAYS[i % len(SAYS)])
        path = f"/home/dev/repo/src/area{i % 23}/module_{i % 2500}.rs"
        w.tool("Read", {"file_path": path}, SRC)
        if i % 3 == 0:
            w.tool("Edit", {"file_path": path, "old_string": "x", "new_string": "y"}, "The file has been updated.")
        if i % 11 == 0:
            w.tool("Write", {"file_path": f"/home/dev/repo/docs/note_{i % 400}.md", "content": "notes\n" * 40}, "File created.")
        cmd = f"cargo test -p area{i % 23} --features f{i % 900}"
        fail = i % 17 == 0
        w.tool("Bash", {"command": cmd, "description": "run tests"},
               ("Exit code 101\n" if fail else "") + LOG + ("test result: FAILED. 59 passed; 1 failed\n" if fail else "test result: ok. 60 passed\n"),
               is_error=fail)
        w.say(SAYS[(i + 3) % len(SAYS)] + f" Step {i} used port {3000 + i % 50}.")
        i += 1
print(f"{out}: {w.n} lines, {w.bytes} bytes")
