#!/usr/bin/env python3
"""Writes a Claude Code transcript of N entries (default 1,000) and a hook input.
Usage: make-transcript.py OUTDIR [N]"""
import json, os, sys

out = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
os.makedirs(out, exist_ok=True)
path = os.path.join(out, "transcript.jsonl")
with open(path, "w") as f:
    prev = None
    for i in range(n):
        uid = f"00000000-0000-4000-8000-{i:012d}"
        k = i % 4
        if k == 0:
            line = {"type": "user", "uuid": uid, "parentUuid": prev, "message": {"role": "user", "content": f"step {i}: please continue"}}
        elif k == 1:
            line = {"type": "assistant", "uuid": uid, "parentUuid": prev, "message": {"role": "assistant", "content": [
                {"type": "text", "text": "Running the tests."},
                {"type": "tool_use", "id": f"toolu_{i}", "name": "WebFetch" if i % 40 == 1 else "Bash", "input": {"command": "cargo test", "url": "https://example.com"}}]}}
        elif k == 2:
            line = {"type": "user", "uuid": uid, "parentUuid": prev, "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_{i-1}", "content": "test result: ok. " + "x" * 200}]}}
        else:
            line = {"type": "assistant", "uuid": uid, "parentUuid": prev, "message": {"role": "assistant", "content": [{"type": "text", "text": "All green. " + "y" * 200}]}}
        f.write(json.dumps(line) + "\n")
        prev = uid
with open(os.path.join(out, "hook-input.json"), "w") as f:
    json.dump({"session_id": "s", "transcript_path": path, "cwd": out, "hook_event_name": "PreCompact", "trigger": "auto", "custom_instructions": ""}, f)
print(path)
